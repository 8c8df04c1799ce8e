#!/usr/bin/env bash
# Where Redis's CPU goes under throttled's rate limit service (issue 27,
# item 2): per round, a fresh redis-server and two `throttled serve`
# instances (the configuration of scripts/rls-bench-config.sh: rule
# per_key, 100/s per key, Redis database 1), loaded by `throttled bench rls`
# at CALLERS callers over KEYS keys for DUR; Redis's stats are reset just
# before the load, and read after it:
#   - Redis CPU µs per decision (INFO cpu, user + system, over the load),
#     of it inside EVALSHA (INFO commandstats' usec of the batch scripts,
#     the commands they run included) and outside it (reading, parsing,
#     replying, the event loop, expiry, other commands);
#   - decisions per EVALSHA; each command's calls and usec per decision;
#   - bytes read and written, read and write events per EVALSHA; clients.
# A decision is one HSET (every token bucket decision writes its field
# once). Medians of RUNS rounds; with BEFORE=binary each round also runs
# that build (the order alternating) and the table has both.
# Usage: [BEFORE=path/to/throttled] [AFTER=path/to/throttled] scripts/bench-redis-rls.sh
# Env: RUNS (3), CALLERS (64), KEYS (10000), DUR (8s), PORT (17100 and the next 4).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin
cd "$(dirname "$0")/.."
. scripts/rls-bench-config.sh
runs=${RUNS:-3}; callers=${CALLERS:-64}; keys=${KEYS:-10000}; dur=${DUR:-8s}; port=${PORT:-17100}
rls_bench_init

info() { redis-cli -p "$port" INFO "$1" | tr -d '\r'; }
cpu() { info cpu | awk -F: '/^used_cpu_(sys|user):/ {s += $2} END {printf "%.6f", s}'; }
round() { # binary, label: one JSON line
  local bin=$1
  rls_bench_up "$bin" "$after"
  local addrs=127.0.0.1:$((port + 3)),127.0.0.1:$((port + 4))
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  local cpu0 load
  cpu0=$(cpu); load=$(cut -d' ' -f1 /proc/loadavg)
  "$after" bench rls --addr "$addrs" --domain bench --descriptor 'rule=per_key,key={id}' --concurrency "$callers" \
    --keys "$keys" --duration "$dur" --warmup 1s --json >"$dir/bench.json"
  local cpus
  cpus=$(awk -v a="$cpu0" -v b="$(cpu)" 'BEGIN {printf "%.6f", b - a}')
  # cmdstat_hset:calls=N,usec=M,… → {"hset": {"calls": N, "usec": M}, …}
  info commandstats | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p' |
    jq -R -s 'split("\n") | map(select(length > 0) | split(" ") | {(.[0]): {calls: (.[1]|tonumber), usec: (.[2]|tonumber)}}) | add' >"$dir/cmd.json"
  info stats | awk -F: '/^total_(net_input_bytes|net_output_bytes|reads_processed|writes_processed):/ {printf "%s %s\n", $1, $2}' |
    jq -R -s 'split("\n") | map(select(length > 0) | split(" ") | {(.[0]): (.[1]|tonumber)}) | add' >"$dir/stats.json"
  local clients
  clients=$(info clients | awk -F: '/^connected_clients:/ {print $2}')
  jq -c -n --arg b "$2" --arg load "$load" --argjson cpu "$cpus" --argjson clients "$clients" \
    --slurpfile bench "$dir/bench.json" --slurpfile cmd "$dir/cmd.json" --slurpfile st "$dir/stats.json" '
    ($cmd[0]) as $c | ($st[0]) as $s | ($c.hset.calls) as $d | (($c.evalsha.calls // 0) + ($c.eval.calls // 0)) as $e |
    {build: $b, load: $load, decisions_per_sec: $bench[0].decisions_per_sec, p99_us: $bench[0].p99_us,
     redis_cpu_us: ($cpu * 1e6 / $d), in_script_us: ((($c.evalsha.usec // 0) + ($c.eval.usec // 0)) / $d),
     decisions_per_call: ($d / $e), clients: $clients,
     bytes_in: ($s.total_net_input_bytes / $d), bytes_out: ($s.total_net_output_bytes / $d),
     reads_per_call: ($s.total_reads_processed / $e), writes_per_call: ($s.total_writes_processed / $e),
     per_decision: ($c | with_entries(.value = {calls: (.value.calls / $d), usec: (.value.usec / $d)}))}'
  rls_bench_down
}

echo "# $(date -u +%FT%TZ) $callers callers, $keys keys, $dur, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
out="$dir/runs.jsonl"
builds="after"; [ -n "${BEFORE:-}" ] && builds="before after"
for r in $(seq "$runs"); do
  order=$builds; [ $((r % 2)) -eq 0 ] && [ -n "${BEFORE:-}" ] && order="after before"
  for b in $order; do
    bin=$after; [ "$b" = before ] && bin=$BEFORE
    round "$bin" "$b" | tee -a "$out" >&2
  done
done
median() { jq -s "map($1) | sort | .[length/2|floor]"; }
cols() { for b in $builds; do printf ' %s |' "$b"; done; }
printf '\n| figure (median of %s) |%s\n|---|%s\n' "$runs" "$(cols)" "$(for b in $builds; do printf -- '---|'; done)"
fig() { # name, jq expression, printf format
  local row="| $1 |" b
  for b in $builds; do row+=" $(printf "$3" "$(jq -c --arg b "$b" 'select(.build==$b)' "$out" | median "$2")") |"; done
  echo "$row"
}
fig2() { # name, two jq expressions, printf format: "a / b", each a median
  local row="| $1 |" b x y
  for b in $builds; do
    x=$(jq -c --arg b "$b" 'select(.build==$b)' "$out" | median "$2")
    y=$(jq -c --arg b "$b" 'select(.build==$b)' "$out" | median "$3")
    row+=" $(printf "$4 / $4" "$x" "$y") |"
  done
  echo "$row"
}
fig "decisions/s" .decisions_per_sec "%.0f"
fig "p99 µs" .p99_us "%.0f"
fig "Redis CPU µs per decision" .redis_cpu_us "%.2f"
fig "of it inside the scripts (EVALSHA usec)" .in_script_us "%.2f"
fig "outside the scripts" '(.redis_cpu_us - .in_script_us)' "%.2f"
fig "decisions per EVALSHA" .decisions_per_call "%.1f"
for cmd in hget hset pexpire hlen hgetall hdel time; do
  fig2 "$cmd: calls / usec per decision" "(.per_decision.$cmd.calls // 0)" "(.per_decision.$cmd.usec // 0)" "%.3f"
done
fig "other commands per decision" '[.per_decision | to_entries[] | select(.key | IN("evalsha","eval","hget","hset","pexpire","hlen","hgetall","hdel","time") | not) | .value.calls] | add // 0' "%.4f"
fig2 "bytes in / out per decision" .bytes_in .bytes_out "%.1f"
fig2 "reads / writes per EVALSHA" .reads_per_call .writes_per_call "%.2f"
fig "clients" .clients "%.0f"
