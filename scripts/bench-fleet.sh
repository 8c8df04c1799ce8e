#!/usr/bin/env bash
# `throttled bench overload --scenario fleet` (issue 28), two tables:
#   targets: N in $NS (10 30) × backend in $BACKENDS (shared per-instance),
#     RUNS runs each, interleaved (run 1 of every cell, then run 2, …),
#     medians of the runs;
#   costs: the Redis traffic per instance, idle and under the surge, for N in
#     $COST_NS (1 3 10 30), one run each (COST_RUNS), medians.
# Each run starts its own redis-server (REDIS_CLUSTER=1: a 3-master
# cluster). DURATION is each run's length (thirds: before, surge, after).
# The JSON of every run is kept in $OUT (default a temp dir, printed).
# TABLES=targets or TABLES=costs prints one table only. BIN runs that
# binary instead of building this tree's; FIRST numbers the runs from it
# (RUNS=0 prints the table of the runs already in $OUT).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
runs=${RUNS:-3}; dur=${DURATION:-30s}; cost_runs=${COST_RUNS:-1}
ns=${NS:-10 30}; backends=${BACKENDS:-shared per-instance}; cost_ns=${COST_NS:-1 3 10 30}
tables=${TABLES:-targets costs}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export PATH=$PATH:/usr/local/go/bin
bin=${BIN:-$out/throttled}; first=${FIRST:-1}
[ -n "${BIN:-}" ] || go build -o "$bin" ./cmd/throttled
cluster=(); [ "${REDIS_CLUSTER:-}" = 1 ] && cluster=(--redis-cluster)
echo "# runs in $out; load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

one() { # N backend run [tag, default the backend]
  local f="$out/fleet-n$1-${4:-$2}-$3.json"
  "$bin" bench overload --scenario fleet --instances "$1" --backend "$2" --duration "$dur" \
    "${cluster[@]}" --json >"$f" 2>"$f.err" || echo "# run n=$1 $2 #$3 failed: $(tail -1 "$f.err")" >&2
  echo "# n=$1 $2 #$3 done, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
}

# median of the numbers on stdin (one a line)
median() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
# field F (a jq path) of the runs of cell n=$1 backend=$2
col() { for f in "$out"/fleet-n"$1"-"$2"-*.json; do [ -s "$f" ] && jq -r "$3" "$f"; done | median; }
# recovery: a run that did not recover (-1) counts as the longest
# (FIELD: another field of the same kind, e.g. .fleet.excess_recovery_s)
recovery() {
  col "$1" "$2" "${3:-.recovery_s}"' | if . < 0 then 1e9 else . end' |
    awk '{ if ($1 + 0 >= 1e9) print "not within the run"; else print $1 }'
}
# a field whose -1 means "not for this shape" (the fine instances of a shared backend)
shape() { local v; v=$(col "$@"); if [ "$v" = "-1" ]; then echo "–"; else echo "$v"; fi; }

if [[ " $tables " == *" targets "* ]]; then
  for r in $(seq "$first" $((first + runs - 1))); do for n in $ns; do for b in $backends; do one "$n" "$b" "$r"; done; done; done
  echo
  echo "| N | backend | premium % (servable at most) | goodput ·C | lowest 1 s ·C | recovery s | refusing only the backends' excess after s | refused beyond the backends' excess in the overload % | flips/min | free cap: s within 10 % / s | free admitted ÷ cap | propagation p99 ms | new leader s | fine instances' requests shed by the fleet % / gated % | bench CPU cores |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for n in $ns; do for b in $backends; do
    echo "| $n | $b | $(col "$n" "$b" .phases.overload.premium_admitted_pct) ($(col "$n" "$b" .fleet.premium_ceiling_pct)) | $(col "$n" "$b" .phases.overload.goodput_ratio) \
| $(col "$n" "$b" .lowest_goodput_ratio) | $(recovery "$n" "$b") | $(recovery "$n" "$b" .fleet.excess_recovery_s) | $(col "$n" "$b" .fleet.beyond_excess_pct) | $(col "$n" "$b" .flips_per_min) \
| $(col "$n" "$b" '([.fleet.caps[]? | select(.tier=="free") | .within_10pct] | first // 0)') / $(col "$n" "$b" '([.fleet.caps[]? | select(.tier=="free") | .seconds] | first // 0)') \
| $(col "$n" "$b" '([.fleet.caps[]? | select(.tier=="free") | .median_ratio] | first // "-")') \
| $(col "$n" "$b" .fleet.propagation_p99_ms) | $(col "$n" "$b" .fleet.leader_gap_s) | $(shape "$n" "$b" .fleet.fine_shed_pct) / $(shape "$n" "$b" .fleet.fine_gated_pct) \
| $(col "$n" "$b" .fleet.cpu_core_share) |"
  done; done
fi

if [[ " $tables " == *" costs "* ]]; then
  for r in $(seq 1 "$cost_runs"); do for n in $cost_ns; do one "$n" shared "$r" cost; done; done
  echo
  echo "| N | Redis cmds/s per instance, idle | … under the surge | idle, by command (per instance) | Redis CPU % idle / surge | coordination keys, bytes | bench CPU cores idle / run |"
  echo "|---|---|---|---|---|---|---|"
  for n in $cost_ns; do
    echo "| $n | $(col "$n" cost .fleet.cost.idle_cmds_per_s_per_instance) | $(col "$n" cost .fleet.cost.surge_cmds_per_s_per_instance) \
| $(for f in "$out"/fleet-n"$n"-cost-1.json; do jq -r '.fleet.cost.idle_by_command | to_entries | map("\(.key) \(.value)") | join(", ")' "$f"; done) \
| $(col "$n" cost .fleet.cost.idle_redis_cpu_pct) / $(col "$n" cost .fleet.cost.surge_redis_cpu_pct) \
| $(col "$n" cost '[.fleet.cost.coord_key_bytes[]?] | add // 0') | $(col "$n" cost .fleet.cost.idle_bench_cpu_cores) / $(col "$n" cost .fleet.cpu_core_share) |"
  done
fi
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
