# Sourced by the rate limit service benches (bench-rls-peer.sh,
# bench-rls-ab.sh): one throttled config for them both.
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
