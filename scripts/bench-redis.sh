#!/usr/bin/env bash
# Compares throttled's Lua scripts with ../shared/bench/plain-token-bucket.lua
# on one fresh redis-server, same run, interleaved:
#   redis-benchmark -c 64 evalsha SHA 1 key ...
# Prints one line per run and the median requests/s per script.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}; n=${N:-200000}; port=${PORT:-16399}
plain=${PLAIN:-../shared/bench/plain-token-bucket.lua}
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
load() { redis-cli -p "$port" SCRIPT LOAD "$1"; }
declare -A sha args
sha[plain]=$(load "$(cat "$plain")"); args[plain]="1 key 100 100 1"
for alg in token_bucket gcra sliding_window_counter; do
  sha[$alg]=$(load "$(cat "limiter/redisstore/lua/$alg.lua")")
  # now="" (Redis TIME), limit 100/s, capacity 100, cost 1, multiplier 1
  args[$alg]="1 {key}:$alg '' 100 1000000 100 1 1"
done
declare -A results
for i in $(seq "$runs"); do
  for name in plain token_bucket gcra sliding_window_counter; do
    rps=$(eval redis-benchmark -p "$port" -c 64 -n "$n" -q evalsha "${sha[$name]}" ${args[$name]} | tr '\r' '\n' | grep -oE '[0-9.]+ requests per second' | cut -d' ' -f1)
    echo "run $i $name $rps"
    results[$name]="${results[$name]:-} $rps"
  done
done
for name in plain token_bucket gcra sliding_window_counter; do
  med=$(echo ${results[$name]} | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}')
  echo "median $name $med req/s"
done
