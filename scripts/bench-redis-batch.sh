#!/usr/bin/env bash
# Redis's cost per decision of the batch scripts (issue 27, item 3): runs
# BenchmarkRedisBatchCost (limiter/redisstore/cost_bench_test.go: 64
# callers, 10,000 keys, batches of ~64, a fresh redis-server per script)
# RUNS times and prints, per script, each run's figure and their median:
# INFO commandstats' EVALSHA usec per decision (each run's own figure is
# the median of its windows), the server's CPU per decision, and the
# least window's usec per decision (usec is wall time: a script preempted
# on a loaded host reads long, and the least window is the least
# disturbed). The benchmark is built from the working tree, or from
# AFTER=<rev>; with
# BEFORE=<rev> that commit's is built too and the two run in turn (the
# order alternating each round), so that both see the same load.
# Usage: [BEFORE=rev] [AFTER=rev] [RUNS=5] [N=200000] scripts/bench-redis-batch.sh
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin
cd "$(dirname "$0")/.."
runs=${RUNS:-5}; n=${N:-200000}
dir=$(mktemp -d /tmp/bench-redis-batch.XXXXXX)
trap 'rm -rf "$dir"' EXIT

build() { # rev or "", output binary
  if [[ -z $1 ]]; then
    go test -c -o "$2" ./limiter/redisstore
  else
    mkdir -p "$dir/src-$1"
    git archive "$1" | tar -x -C "$dir/src-$1"
    (cd "$dir/src-$1" && go test -c -o "$2" ./limiter/redisstore)
  fi
}
builds=(after)
build "${AFTER:-}" "$dir/after.test"
if [[ -n ${BEFORE:-} ]]; then
  build "$BEFORE" "$dir/before.test"
  builds=(before after)
fi

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); before ${BEFORE:--}, after ${AFTER:-working tree}" >&2
for r in $(seq "$runs"); do
  order=("${builds[@]}")
  if (( r % 2 == 0 )) && (( ${#builds[@]} == 2 )); then order=(after before); fi
  for b in "${order[@]}"; do
    load=$(cut -d' ' -f1 /proc/loadavg)
    (cd "$dir" && "./$b.test" -test.run '^$' -test.bench BenchmarkRedisBatchCost -test.benchtime "${n}x") |
      awk -v b="$b" -v load="$load" '/^BenchmarkRedisBatchCost\// {
        split($1, p, "/"); sub(/-[0-9]+$/, "", p[2]); us = cpu = least = ""
        for (i = 3; i < NF; i++) {
          if ($(i+1) == "redis-us/decision") us = $i
          if ($(i+1) == "redis-cpu-us/decision") cpu = $i
          if ($(i+1) == "redis-us/decision-least") least = $i
        }
        print b, p[2], us, cpu, load, least }' >>"$dir/runs.txt"
  done
  echo "# round $r done, load $(cut -d' ' -f1 /proc/loadavg)" >&2
done

echo "| script | figure | build | per run (load) | median |"
echo "|---|---|---|---|---|"
for s in token_bucket gcra; do
  for f in 3:"commandstats µs per decision" 4:"Redis CPU µs per decision" 6:"least window's commandstats µs"; do
    col=${f%%:*}; name=${f#*:}
    for b in "${builds[@]}"; do
      awk -v b="$b" -v s="$s" -v c="$col" -v name="$name" '$1 == b && $2 == s {
          v[++k] = $c; runs = runs (runs == "" ? "" : ", ") $c " (" $5 ")" }
        END { if (k == 0) exit
          for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
          med = (k % 2) ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
          printf "| %s | %s | %s | %s | %.2f |\n", s, name, b, runs, med }' "$dir/runs.txt"
    done
  done
done
