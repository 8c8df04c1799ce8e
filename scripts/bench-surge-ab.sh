#!/usr/bin/env bash
# The single-instance surge (`bench overload --scenario surge --mode
# controller`) at BASE (a git revision, default 4d3e5e9: before issue 28's
# control fixes) and at the working tree, RUNS rounds interleaved (base,
# then this tree), DURATION each; prints every run and the medians:
# premium %, goodput ·C, lowest 1 s ·C, recovery s, flips/min, with the
# load average before each run. It must not get worse. SCENARIO runs
# another single-instance scenario the same way (crowd: the tier cap is
# its only shedder).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
base=${BASE:-4d3e5e9}; runs=${RUNS:-3}; dur=${DURATION:-30s}; scenario=${SCENARIO:-surge}
out=$(mktemp -d)
git archive "$base" | tar -x -C "$out" --one-top-level=base
(cd "$out/base" && go build -o "$out/throttled-base" ./cmd/throttled)
go build -o "$out/throttled-head" ./cmd/throttled
q='[.phases.overload.premium_admitted_pct, .phases.overload.goodput_ratio, .lowest_goodput_ratio, .recovery_s, .flips_per_min] | @tsv'
for r in $(seq 1 "$runs"); do for b in base head; do
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$out/throttled-$b" bench overload --scenario "$scenario" --mode controller --duration "$dur" --json >"$out/$b-$r.json" 2>/dev/null
  echo "$b #$r (load $load): $(jq -r "$q" "$out/$b-$r.json")"
done; done
# A recovery of -1 (not within the run) sorts as the longest, and a
# median that lands on it reads "not within the run".
median() { sed 's/^-1$/inf/' | sort -g | awk '{a[NR]=$1} END {m = NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2; print (m == "inf" || m+0 > 1e308) ? "not within the run" : m}'; }
echo "| build | premium % | goodput ·C | lowest 1 s ·C | recovery s | flips/min |"
echo "|---|---|---|---|---|---|"
for b in base head; do
  row="| $b ($([ $b = base ] && echo "$base" || git rev-parse --short HEAD))"
  for i in 1 2 3 4 5; do row="$row | $(for f in "$out/$b"-*.json; do jq -r "$q" "$f" | cut -f$i; done | median)"; done
  echo "$row |"
done
rm -rf "$out"
