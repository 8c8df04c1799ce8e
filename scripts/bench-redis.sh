#!/usr/bin/env bash
# Decisions against Redis, all in one run on one fresh redis-server,
# interleaved, RUNS rounds (medians printed at the end):
#   - plain:    redis-benchmark -c 64 -n N evalsha SHA 1 key 100 100 1
#               (../shared/bench/plain-token-bucket.lua, no pipelining)
#   - <alg>:    redis-benchmark -c 64 -n N evalsha on each of our whole
#               scripts (prelude + algorithm + store, as the store runs
#               them), with the Redis-side cost from INFO commandstats
#               (cmdstat_evalsha usec_per_call, stats reset before each)
#   - decisions: throttled bench decisions --store redis --concurrency 64
#               --keys 10000 --duration DUR (batched pipelines)
#   - unbatched: the same with --max-batch 1 (one EVALSHA per decision)
# and the bytes of Redis memory per live key for each algorithm.
# OLD_LUA=dir also runs the scripts in dir (say, an older lua/) as old_<alg>;
# BEFORE=binary also runs `BEFORE bench --store redis …` (an older throttled).
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
runs=${RUNS:-3}; n=${N:-200000}; port=${PORT:-16399}; dur=${DUR:-5s}
algs=${ALGS:-token_bucket gcra leaky_bucket fixed_window sliding_window_counter sliding_window_log}
# ../shared next to the main checkout (also from a git worktree)
plain=${PLAIN:-$(cd "$(git rev-parse --git-common-dir)/../.." && pwd)/shared/bench/plain-token-bucket.lua}
[ -f "$plain" ] || { echo "no $plain: set PLAIN" >&2; exit 1; }
dir=$(mktemp -d)
export PATH=$PATH:/usr/local/go/bin
go build -o "$dir/throttled" ./cmd/throttled
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
url=redis://127.0.0.1:$port/0
load() { redis-cli -p "$port" SCRIPT LOAD "$1"; }
declare -A sha args results usec
sha[plain]=$(load "$(cat "$plain")"); args[plain]="1 key 100 100 1"
names="plain"
for alg in $algs; do
  # now="" (Redis TIME), limit 100/s, capacity 100, cost 1, multiplier 1, no
  # refund; the client key (a field of the slot's hash; the second key is
  # where older versions kept the state). The sliding log keeps two keys.
  keys="2 {key}:$alg {key}:$alg:old"; argv="'' 100 1000000 100 1 1 '' client"
  [ "$alg" = sliding_window_log ] && keys="2 {key}:$alg {key}:$alg:a" && argv="'' 100 1000000 100 1 1 ''"
  # the whole script, its parts joined as limiter/redisstore/scripts.go joins them
  parts=(limiter/redisstore/lua/part/prelude.lua "limiter/redisstore/lua/$alg.lua")
  [ "$alg" = sliding_window_log ] || parts+=(limiter/redisstore/lua/part/store.lua)
  sha[$alg]=$(load "$(cat "${parts[@]}")"); args[$alg]="$keys $argv"
  names="$names $alg"
  if [ -n "${OLD_LUA:-}" ]; then
    keys="1 {old}:$alg"; [ "$alg" = sliding_window_log ] && keys="2 {old}:$alg {old}:$alg:a"
    sha[old_$alg]=$(load "$(cat "$OLD_LUA/$alg.lua")"); args[old_$alg]="$keys '' 100 1000000 100 1 1 ''"
    names="$names old_$alg"
  fi
done
rb() { # name: requests/s of redis-benchmark, and usec_per_call of EVALSHA
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  local rps us
  rps=$(eval redis-benchmark -p "$port" -c 64 -n "$n" -q evalsha "${sha[$1]}" ${args[$1]} | tr '\r' '\n' | grep -oE '[0-9.]+ requests per second' | cut -d' ' -f1)
  us=$(redis-cli -p "$port" INFO commandstats | tr -d '\r' | grep '^cmdstat_evalsha:' | grep -oE 'usec_per_call=[0-9.]+' | cut -d= -f2)
  echo "$rps $us"
}
for i in $(seq "$runs"); do
  for name in $names; do
    read -r rps us < <(rb "$name")
    echo "run $i $name $rps req/s, ${us} us/call in redis"
    results[$name]="${results[$name]:-} $rps"; usec[$name]="${usec[$name]:-} $us"
  done
  flush() { redis-cli -p "$port" FLUSHALL >/dev/null; } # older versions keep other key types
  flush
  out=$("$dir/throttled" bench decisions --store redis --redis-url "$url" --concurrency 64 --keys 10000 \
    --duration "$dur" --memory-keys 0 --json)
  echo "run $i decisions $out"
  dps=$(echo "$out" | grep -oE '"decisions_per_sec":[0-9.]+' | cut -d: -f2)
  results[decisions]="${results[decisions]:-} $dps"
  for f in p50_us p99_us p999_us cpu_seconds; do
    results[$f]="${results[$f]:-} $(echo "$out" | grep -oE "\"$f\":[0-9.]+" | cut -d: -f2)"
  done
  flush
  out=$("$dir/throttled" bench decisions --store redis --redis-url "$url" --concurrency 64 --keys 10000 \
    --duration "$dur" --memory-keys 0 --max-batch 1 --json)
  echo "run $i unbatched $out"
  results[unbatched]="${results[unbatched]:-} $(echo "$out" | grep -oE '"decisions_per_sec":[0-9.]+' | cut -d: -f2)"
  if [ -n "${BEFORE:-}" ]; then
    flush
    out=$("$BEFORE" bench decisions --store redis --redis-url "$url" --concurrency 64 --keys 10000 \
      --duration "$dur" --memory-keys 0 --json)
    echo "run $i before $out"
    results[before]="${results[before]:-} $(echo "$out" | grep -oE '"decisions_per_sec":[0-9.]+' | cut -d: -f2)"
  fi
done
med() { echo "$@" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
for name in $names; do
  echo "median $name $(med ${results[$name]}) req/s, $(med ${usec[$name]}) us/call in redis"
done
d=$(med ${results[decisions]}); p=$(med ${results[plain]})
echo "median decisions $d decisions/s (p50 $(med ${results[p50_us]}) us, p99 $(med ${results[p99_us]}) us," \
  "p99.9 $(med ${results[p999_us]}) us, cpu $(med ${results[cpu_seconds]}) s)"
echo "median unbatched $(med ${results[unbatched]}) decisions/s"
[ -n "${BEFORE:-}" ] && echo "median before $(med ${results[before]}) decisions/s"
echo "ratio decisions/plain $(awk -v d="$d" -v p="$p" 'BEGIN{printf "%.2f", d/p}')"
for alg in $algs; do
  out=$("$dir/throttled" bench decisions --store redis --redis-url "$url" --algorithm "$alg" --concurrency 64 \
    --duration 1s --memory-keys 100000 --json)
  echo "memory $alg $(echo "$out" | grep -oE '"redis_bytes_per_key":[0-9.]+' | cut -d: -f2) B/key"
done
