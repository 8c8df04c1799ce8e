#!/usr/bin/env bash
# What one round trip to Redis costs in CPU on this machine: redis-benchmark
# (one connection, PING, one at a time) pinned to core 0, with Redis on the
# same core and then on another one, ROUNDS times. Read it beside
# scripts/bench-http.sh: the HTTP hello world and every Redis decision are
# mostly system calls and wake-ups, whose cost depends on the machine (a
# virtual machine can make a wake-up of another core far dearer than on
# bare metal), so the mode ratios of bench http carry this figure with them.
set -euo pipefail
n=${N:-20000}; rounds=${ROUNDS:-3}; port=${PORT:-16499}
[ "$(nproc)" -ge 2 ] || { echo "needs 2 cores or more" >&2; exit 1; }
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
  --logfile "$dir/log" --pidfile "$dir/pid"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1 && [ -s "$dir/pid" ]; do sleep 0.1; done
rcpu() { redis-cli -p "$port" info cpu | awk -F: '/used_cpu_(sys|user):/ {s += $2} END {print s}'; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $n PINGs per line"
for _ in $(seq "$rounds"); do
  for core in 1 0; do
    taskset -pc "$core" "$(cat "$dir/pid")" >/dev/null
    r0=$(rcpu)
    t=$({ TIMEFORMAT='%U %S'; time taskset -c 0 redis-benchmark -p "$port" -c 1 -n "$n" -t ping_mbulk -q >/dev/null 2>&1; } 2>&1)
    r1=$(rcpu)
    where=$([ "$core" = 0 ] && echo "same core " || echo "other core")
    echo "redis on the $where: client $(echo "$t" | awk -v n="$n" '{printf "%.1f", ($1 + $2) / n * 1e6}') µs CPU per round trip, redis $(echo "$r0 $r1" | awk -v n="$n" '{printf "%.1f", ($2 - $1) / n * 1e6}') µs"
  done
done
