#!/usr/bin/env bash
# `throttled bench http` (in-memory modes and peers, no Redis) at each git
# revision of REVS: CALLS calls per revision, the revisions' calls
# interleaved, each call RUNS rounds of DUR per mode; then, per mode and
# revision, the medians over every round: requests/s as a ratio of mode
# none in the same round, requests/s, and CPU µs per request (load
# generator, server and middleware; other load disturbs it less).
#   REVS="a021323 HEAD" CALLS=2 scripts/bench-http-revs.sh
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
revs=${REVS:-HEAD}; calls=${CALLS:-2}; runs=${RUNS:-3}; dur=${DUR:-1s}
modes=${MODES:-none,memory,memory-ietf,memory-legacy,memory-none,xrate,echo}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for rev in $revs; do
  mkdir -p "$dir/src-$rev"
  git archive "$rev" | tar -x -C "$dir/src-$rev"
  (cd "$dir/src-$rev" && go build -o "$dir/$rev.throttled" ./cmd/throttled)
done
for c in $(seq "$calls"); do
  for rev in $revs; do
    echo "# call $c rev $rev $(date -u +%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$dir/$rev.throttled" bench http --modes "$modes" --duration "$dur" --runs "$runs" --json |
      sed "s/^{/{\"rev\":\"$rev\",/" >>"$dir/results"
  done
done
echo "# done $(date -u +%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$dir/results" "$revs" "$modes" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
revs, modes = sys.argv[2].split(), sys.argv[3].split(",")
print()
print("| mode | rev | ratio of none (median) | req/s (median) | CPU µs/req (median) | rounds |")
print("|---|---|---|---|---|---|")
for m in modes:
    for rev in revs:
        rs = [r for r in rows if r["rev"] == rev and r["mode"] == m]
        if not rs:
            continue
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"| {m} | {rev} | {med('ratio'):.2f} | {med('requests_per_sec'):,.0f} | {med('cpu_us_per_request'):.1f} | {len(rs)} |")
PY
