#!/usr/bin/env bash
# throttled's rate limit service side by side with the reference service
# (envoyproxy/ratelimit) on one fresh redis-server, loaded by
# `throttled bench rls` (issue 27, item 1):
#   - two instances of each: throttled (`serve`, rls.listen on, Redis
#     database 1) and the reference (database 0), the same descriptor
#     rule=per_key,key={id} at 100 per second per key over KEYS ids;
#   - for CALLERS (16 and 64), RUNS rounds, each round both services in
#     turn (the order alternating), the load spread over both instances;
#     medians of the rounds: decisions/s, p50/p99, service CPU s per 10k
#     decisions (both instances' /proc stat), Redis CPU µs per decision;
#   - the exactness run: 3× the limit (300 calls) at one fresh key across
#     both instances within SPAN straddling a second boundary, EXACT times
#     each: throttled admits at most the limit + refill over the span, a
#     window of a second up to twice the limit.
# Env: DUR (10s), WARMUP (1s), RUNS (3), KEYS (10000), CALLERS ("16 64"),
# SPAN (200ms), EXACT (3), PORT (first of 11 ports, 16500), RATELIMIT_VERSION,
# FALLBACK_DEADLINE (1s): throttled's fallback.deadline. The reference
# waits for Redis however long; throttled's default of 50 ms hands a
# decision to its local fallback instead, which on a loaded 2-core host
# decides a large share locally (fallback_ok) and the two would no longer
# be measured on the same work.
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin
cd "$(dirname "$0")/.."
. scripts/rls-bench-config.sh
dur=${DUR:-10s}; warmup=${WARMUP:-1s}; runs=${RUNS:-3}; keys=${KEYS:-10000}
callers=${CALLERS:-16 64}; span=${SPAN:-200ms}; exact=${EXACT:-3}; port=${PORT:-16500}
deadline=${FALLBACK_DEADLINE:-1s}
version=${RATELIMIT_VERSION:-v1.4.1-0.20260122083618-3fb702589d36}
dir=$(mktemp -d)
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

GOBIN="$dir/bin" go install "github.com/envoyproxy/ratelimit/src/service_cmd@$version"
go build -o "$dir/bin/throttled" ./cmd/throttled

redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
  --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
redis="redis://127.0.0.1:$port"

# throttled: rule per_key, 100/s (burst 100) per key (scripts/rls-bench-config.sh).
# the reference: the same descriptor, 100 per second per value of "key"
mkdir -p "$dir/runtime/ratelimit/config"
cat >"$dir/runtime/ratelimit/config/bench.yaml" <<EOF
domain: bench
descriptors:
  - key: rule
    value: per_key
    descriptors:
      - key: key
        rate_limit: { unit: second, requests_per_unit: 100 }
EOF

thr=() ref=() thr_pids=() ref_pids=()
for i in 0 1; do
  a=$((port + 1 + i)); g=$((port + 3 + i))
  rls_bench_config "$redis/1" "127.0.0.1:$g" "$deadline" >"$dir/throttled$i.yaml"
  "$dir/bin/throttled" serve --config "$dir/throttled$i.yaml" --admin-listen "127.0.0.1:$a" \
    >"$dir/throttled$i.log" 2>&1 &
  pids+=($!) thr_pids+=($!) thr+=("127.0.0.1:$g")
  g=$((port + 5 + i))
  env USE_STATSD=false LOG_LEVEL=warn REDIS_SOCKET_TYPE=tcp REDIS_URL="127.0.0.1:$port" \
    RUNTIME_ROOT="$dir/runtime" RUNTIME_SUBDIRECTORY=ratelimit RUNTIME_WATCH_ROOT=false \
    HOST=127.0.0.1 PORT=$((port + 7 + i)) DEBUG_HOST=127.0.0.1 DEBUG_PORT=$((port + 9 + i)) \
    GRPC_HOST=127.0.0.1 GRPC_PORT="$g" "$dir/bin/service_cmd" >"$dir/ratelimit$i.log" 2>&1 &
  pids+=($!) ref_pids+=($!) ref+=("127.0.0.1:$g")
done
join() { local IFS=,; echo "$*"; }
bench() { "$dir/bin/throttled" bench rls --domain bench --descriptor 'rule=per_key,key={id}' "$@"; }
# both services answer before any measure
for svc in thr ref; do
  declare -n a=$svc
  for _ in $(seq 100); do
    bench --addr "$(join "${a[@]}")" --exactness 1 --span 1ms --json 2>/dev/null | jq -e '.errors == 0' >/dev/null && break
    sleep 0.2
  done
done

echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD), reference $version, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
out="$dir/runs.jsonl"; : >"$out"
for c in $callers; do
  for r in $(seq "$runs"); do
    order="thr ref"; [ $((r % 2)) -eq 0 ] && order="ref thr"
    for svc in $order; do
      declare -n a=$svc svc_pids=${svc}_pids
      bench --addr "$(join "${a[@]}")" --concurrency "$c" --keys "$keys" --duration "$dur" --warmup "$warmup" \
        --pids "$(join "${svc_pids[@]}")" --redis-url "$redis/0" --json |
        jq -c --arg svc "$svc" --argjson round "$r" --arg load "$(cut -d' ' -f1 /proc/loadavg)" \
          '. + {svc: $svc, round: $round, load: $load}' | tee -a "$out" >&2
    done
  done
done

if [ -s "$out" ]; then # RUNS=0: the exactness run alone
  median() { jq -s "map($1) | sort | .[length/2|floor]"; }
  printf '\n| callers | figure | throttled | envoyproxy/ratelimit |\n|---|---|---|---|\n'
  for c in $callers; do
    fig() { # name, jq expression, printf format
      local t e
      t=$(jq -c "select(.svc==\"thr\" and .concurrency==$c)" "$out" | median "$2")
      e=$(jq -c "select(.svc==\"ref\" and .concurrency==$c)" "$out" | median "$2")
      printf "| %s | %s | $3 | $3 |\n" "$c" "$1" "$t" "$e"
    }
    fig "decisions/s" .decisions_per_sec "%'.0f"
    fig "p50 µs" .p50_us "%'.0f"
    fig "p99 µs" .p99_us "%'.0f"
    fig "service CPU s per 10k decisions" .service_cpu_s_per_10k "%.2f"
    fig "Redis CPU µs per decision" .redis_cpu_us_per_decision "%.1f"
    fig "Redis script calls (EVALSHA) per decision" .script_calls_per_decision "%.3f"
    fig "errors (median)" .errors "%.0f"
    fig "OK answers by the fallback (median)" .fallback_ok "%.0f"
    # throttled ÷ reference round by round (each round ran both in turn)
    printf '| %s | throttled ÷ reference per round: decisions/s, service CPU, Redis CPU | %s |  |\n' "$c" \
      "$(jq -s -r --argjson c "$c" 'map(select(.concurrency==$c)) | group_by(.round) | map(
        (map(select(.svc=="thr"))[0]) as $t | (map(select(.svc=="ref"))[0]) as $e |
        "\($t.decisions_per_sec/$e.decisions_per_sec*100|round/100)/\($t.service_cpu_s_per_10k/$e.service_cpu_s_per_10k*100|round/100)/\($t.redis_cpu_us_per_decision/$e.redis_cpu_us_per_decision*100|round/100)"
        ) | join(", ")' "$out")"
  done
fi

printf '\nexactness: 300 calls (3× the limit of 100/s) at one fresh key across both instances within %s straddling a second boundary: OK answers\n' "$span"
printf '| service | OK per run | limit + refill over the span |\n|---|---|---|\n'
for svc in thr ref; do
  declare -n a=$svc
  oks=()
  for _ in $(seq "$exact"); do
    oks+=("$(bench --addr "$(join "${a[@]}")" --exactness 300 --span "$span" --json | jq -r '"\(.ok) (\(.span_ms|floor) ms\(if .fallback_ok > 0 then ", \(.fallback_ok) of them fallback" else "" end))"')")
  done
  name=throttled; [ "$svc" = ref ] && name=envoyproxy/ratelimit
  printf '| %s | %s | 100 + 100/s × span |\n' "$name" "$(join "${oks[@]}")"
done
