#!/usr/bin/env bash
# The fleet's targets table (scripts/bench-fleet.sh) at two revisions, runs
# interleaved: round r runs every cell at BASE, then at HEAD (this tree),
# RUNS rounds; then each revision's table of medians. NS, BACKENDS and
# DURATION as bench-fleet.sh; BASE defaults to a13f58a (before
# controller.scope); OUT keeps the runs (default a temp dir).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
base=${BASE:-a13f58a}; runs=${RUNS:-3}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out/base" "$out/head" "$out/base-src"
git archive "$base" | tar -x -C "$out/base-src"
(cd "$out/base-src" && go build -o "$out/base/throttled" ./cmd/throttled)
go build -o "$out/head/throttled" ./cmd/throttled
echo "# base $base, head $(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty'); runs in $out" >&2
for r in $(seq 1 "$runs"); do
  for rev in base head; do
    OUT=$out/$rev BIN=$out/$rev/throttled FIRST=$r RUNS=1 TABLES=targets ./scripts/bench-fleet.sh >/dev/null
  done
done
for rev in base head; do
  echo; echo "$rev:"
  OUT=$out/$rev BIN=$out/$rev/throttled RUNS=0 TABLES=targets ./scripts/bench-fleet.sh 2>/dev/null
done
