#!/usr/bin/env bash
# BenchmarkModes (internal/bench: bench http's handlers in process, without
# sockets, 1,000 keys) at each git revision of REVS, the runs interleaved
# (revision by revision, mode by mode, RUNS times), then a table of the
# medians: ns/op and cpu-ns/op (the process's CPU per request, which other
# load disturbs less), allocations and bytes per request.
#   REVS="a021323 HEAD" RUNS=5 scripts/bench-modes.sh
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
revs=${REVS:-HEAD}; runs=${RUNS:-5}; bt=${BENCHTIME:-200ms}
modes=${MODES:-none memory memory-ietf memory-legacy memory-none xrate echo}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for rev in $revs; do
  mkdir -p "$dir/src-$rev"
  git archive "$rev" | tar -x -C "$dir/src-$rev"
  # Every revision runs this checkout's BenchmarkModes, so that all report
  # the same metrics (cpu-ns/op came after the first header sets).
  cp internal/bench/http_bench_test.go "$dir/src-$rev/internal/bench/"
  (cd "$dir/src-$rev" && go test -c -o "$dir/$rev.test" ./internal/bench/)
done
echo "# $(date -u +%FT%TZ) revs $revs, $runs runs of $bt, load before $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$runs"); do
  for rev in $revs; do
    for m in $modes; do
      (cd "$dir" && "./$rev.test" -test.run '^$' -test.bench "Modes/^$m\$" -test.benchtime "$bt") |
        awk -v rev="$rev" -v m="$m" '/^BenchmarkModes/ {
          ns = ""; cpu = "-"; b = ""; a = ""
          for (i = 3; i < NF; i++) {
            if ($(i+1) == "ns/op") ns = $i; if ($(i+1) == "cpu-ns/op") cpu = $i
            if ($(i+1) == "B/op") b = $i; if ($(i+1) == "allocs/op") a = $i
          }
          print rev, m, ns, cpu, b, a }' >>"$dir/results"
    done
  done
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| mode | rev | ns/op (median) | cpu-ns/op (median) | B/op | allocs/op |"
echo "|---|---|---|---|---|---|"
for m in $modes; do
  for rev in $revs; do
    awk -v rev="$rev" -v m="$m" '$1 == rev && $2 == m' "$dir/results" | python3 -c '
import sys, statistics
rows = [l.split() for l in sys.stdin]
if rows:
    med = lambda k: statistics.median(float(r[k]) for r in rows) if rows[0][k] != "-" else "-"
    f = lambda v: v if v == "-" else f"{v:,.0f}"
    print(f"| {rows[0][1]} | {rows[0][0]} | {f(med(2))} | {f(med(3))} | {rows[0][4]} | {rows[0][5]} |")'
  done
done
