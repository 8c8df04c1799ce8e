#!/usr/bin/env bash
# The fleet (`bench overload --scenario fleet --mode controller`, N
# instances, BACKEND shared by default) at BASE (a git revision, default
# a13f58a: before the gates' unused-limit decay) and at the working tree,
# RUNS rounds interleaved (base, then this tree), DURATION each; prints
# every run with the load average before it, then the medians of issue
# 28's targets: premium %, goodput ·C, lowest 1 s ·C, recovery s,
# flips/min, free admitted ÷ cap. NS="10 30" runs both sizes.
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
base=${BASE:-a13f58a}; runs=${RUNS:-3}; dur=${DURATION:-30s}; ns=${NS:-10}; backend=${BACKEND:-shared}
out=$(mktemp -d)
git archive "$base" | tar -x -C "$out" --one-top-level=base
(cd "$out/base" && go build -o "$out/throttled-base" ./cmd/throttled)
go build -o "$out/throttled-head" ./cmd/throttled
q='[.phases.overload.premium_admitted_pct, .phases.overload.goodput_ratio, .lowest_goodput_ratio, .recovery_s, .flips_per_min, ([.fleet.caps[]? | select(.tier=="free") | .median_ratio] | first // "-")] | @tsv'
for r in $(seq 1 "$runs"); do for n in $ns; do for b in base head; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$out/throttled-$b" bench overload --scenario fleet --instances "$n" --backend "$backend" --mode controller \
    --duration "$dur" --json >"$out/$b-$n-$r.json" 2>/dev/null || echo "# $b n=$n #$r failed" >&2
  echo "$b n=$n #$r (load $load): $(jq -r "$q" "$out/$b-$n-$r.json")"
done; done; done
median() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
echo "| N | build | premium % | goodput ·C | lowest 1 s ·C | recovery s | flips/min | free admitted ÷ cap |"
echo "|---|---|---|---|---|---|---|---|"
for n in $ns; do for b in base head; do
  row="| $n | $b ($([ $b = base ] && echo "$base" || git rev-parse --short HEAD))"
  for i in 1 2 3 4 5 6; do
    # recovery -1 (not within the run) counts as the longest
    row="$row | $(for f in "$out/$b-$n"-*.json; do if [ -s "$f" ]; then jq -r "$q" "$f" | cut -f$i; fi; done |
      awk -v i=$i '{ print (i == 4 && $1 < 0) ? 1e9 : $1 }' | median | sed 's/^1000000000$/not within the run/')"
  done
  echo "$row |"
done; done
rm -rf "$out"
