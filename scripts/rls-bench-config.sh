# Sourced by the rate limit service benches (bench-rls-peer.sh,
# bench-rls-ab.sh, bench-redis-rls.sh): one throttled config for them all,
# and the two-instance setup of the A/B benches.
#
# rls_bench_config REDIS_URL LISTEN DEADLINE prints a throttled config
# answering Envoy's RLS on LISTEN in domain "bench": rule per_key, 100/s
# (burst 100) per value of the descriptor entry "key", on REDIS_URL,
# with fallback.deadline DEADLINE and the controller off.
rls_bench_config() {
  cat <<EOY
redis: { url: "$1" }
rls: { domain: bench, listen: $2 }
fallback: { deadline: $3 }
tiers:
  free: { rate: 100, period: 1s, burst: 100, priority: 1 }
rules:
  - name: per_key
    match: { path: / }
    key: header:X-Key
controller: { disabled: true }
log: { level: warn }
EOY
}

# rls_bench_init sets up the A/B benches: $dir (removed at exit, with
# everything rls_bench_up started), the pids array, and $after, the
# throttled binary that runs the load (AFTER, or a build of this tree).
rls_bench_init() {
  dir=$(mktemp -d)
  pids=()
  trap 'rls_bench_down; rm -rf "$dir"' EXIT
  after=${AFTER:-$dir/throttled}
  [ -n "${AFTER:-}" ] || go build -o "$after" ./cmd/throttled
}

# rls_bench_up BIN BENCH starts, with the caller's $port, $dir and pids
# array, a redis-server on $port and two `BIN serve` instances answering
# on $port+3 and $port+4 (admin on $port+1, $port+2), and waits until
# both answer BENCH's (a throttled binary) RLS calls. rls_bench_down stops
# them all.
rls_bench_up() {
  local bin=$1 bench=$2 i
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
    --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
  until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
  for i in 0 1; do
    rls_bench_config "redis://127.0.0.1:$port/1" "127.0.0.1:$((port + 3 + i))" 1s >"$dir/t$i.yaml"
    "$bin" serve --config "$dir/t$i.yaml" --admin-listen "127.0.0.1:$((port + 1 + i))" >"$dir/t$i.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 100); do # both instances answer
    "$bench" bench rls --addr "127.0.0.1:$((port + 3)),127.0.0.1:$((port + 4))" --domain bench \
      --descriptor 'rule=per_key,key={id}' --exactness 1 --span 1ms --json 2>/dev/null |
      jq -e '.errors == 0' >/dev/null && break
    sleep 0.2
  done
}

rls_bench_down() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
}
