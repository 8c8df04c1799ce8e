#!/usr/bin/env bash
# throttled's rate limit service, two builds side by side (before/after a
# change), on the load of scripts/bench-rls-peer.sh: per round, each build
# in turn (the order alternating) gets a fresh redis-server and two
# `throttled serve` instances (rls.listen, Redis database 1, rule per_key
# 100/s burst 100, fallback.deadline 1s), loaded by
#   throttled bench rls --addr A1,A2 --domain bench --descriptor 'rule=per_key,key={id}' \
#     --concurrency N --keys K --duration D --warmup 1s --pids P1,P2 --redis-url … --json
# and prints each round and the medians: decisions/s, p50/p99, service
# CPU s per 10k decisions, Redis CPU µs per decision, script calls per
# decision. The load generator is the after build's bench rls for both.
# Usage: BEFORE=path/to/throttled [AFTER=path/to/throttled] scripts/bench-rls-ab.sh
# AFTER defaults to a build of this tree. Env: RUNS (3), CALLERS (64),
# KEYS (10000), DUR (8s), PORT (16900, and the next 4).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin
cd "$(dirname "$0")/.."
. scripts/rls-bench-config.sh
: "${BEFORE:?set BEFORE to the throttled binary to compare with}"
runs=${RUNS:-3}; callers=${CALLERS:-64}; keys=${KEYS:-10000}; dur=${DUR:-8s}; port=${PORT:-16900}
rls_bench_init

round() { # binary, label
  local bin=$1
  rls_bench_up "$bin" "$after"
  local addrs=127.0.0.1:$((port + 3)),127.0.0.1:$((port + 4))
  "$after" bench rls --addr "$addrs" --domain bench --descriptor 'rule=per_key,key={id}' --concurrency "$callers" \
    --keys "$keys" --duration "$dur" --warmup 1s --pids "${pids[0]},${pids[1]}" \
    --redis-url "redis://127.0.0.1:$port/0" --json |
    jq -c --arg b "$2" --arg load "$(cut -d' ' -f1 /proc/loadavg)" '. + {build: $b, load: $load}'
  rls_bench_down
}

echo "# $(date -u +%FT%TZ) before $BEFORE, after $after, $callers callers, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
out="$dir/runs.jsonl"
for r in $(seq "$runs"); do
  order="before after"; [ $((r % 2)) -eq 0 ] && order="after before"
  for b in $order; do
    bin=$BEFORE; [ "$b" = after ] && bin=$after
    round "$bin" "$b" | tee -a "$out" >&2
  done
done
median() { jq -s "map($1) | sort | .[length/2|floor]"; }
printf '\n| figure (median of %s) | before | after |\n|---|---|---|\n' "$runs"
fig() { # name, jq expression, printf format
  printf "| %s | $3 | $3 |\n" "$1" "$(jq -c 'select(.build=="before")' "$out" | median "$2")" \
    "$(jq -c 'select(.build=="after")' "$out" | median "$2")"
}
fig "decisions/s" .decisions_per_sec "%.0f"
fig "p50 µs" .p50_us "%.0f"
fig "p99 µs" .p99_us "%.0f"
fig "service CPU s per 10k decisions" .service_cpu_s_per_10k "%.2f"
fig "Redis CPU µs per decision" .redis_cpu_us_per_decision "%.1f"
fig "script calls per decision" '(.script_calls_per_decision // 0)' "%.3f"
fig "errors" .errors "%.0f"
