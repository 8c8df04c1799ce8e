#!/usr/bin/env bash
# Where a mode's CPU goes in process: BenchmarkModes/<mode> (internal/bench)
# at this checkout under the CPU profiler, then its samples' flat time
# split by owner (the pipeline, the enforcer, identity, the in-memory
# store, the clock, maps, sync, net/http, the rest of the runtime) in ns
# per request. Each MODES entry is profiled for SECS seconds.
#   MODES="memory-none xrate" SECS=3 scripts/bench-modes-profile.sh
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}" PATH=$PATH:/usr/local/go/bin
cd "$(dirname "$0")/.."
modes=${MODES:-none memory-none xrate echo}; secs=${SECS:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go test -c -o "$dir/bench.test" ./internal/bench/
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD), load before $(cut -d' ' -f1-3 /proc/loadavg)"
for m in $modes; do
  (cd "$dir" && ./bench.test -test.run '^$' -test.bench "Modes/^$m\$" -test.benchtime "${secs}s" \
    -test.cpuprofile "$dir/$m.prof") | awk '/^BenchmarkModes/ {print $2}' >"$dir/$m.n"
  go tool pprof -top -nodecount=100000 "$dir/bench.test" "$dir/$m.prof" 2>/dev/null |
    awk -v n="$(cat "$dir/$m.n")" -v m="$m" '
      function sec(v) { if (v ~ /ms$/) { sub("ms", "", v); return v / 1000 } sub("s", "", v); return v }
      NR > 6 && NF >= 6 {
        f = $6; o = "runtime, other"
        if (f ~ /limiter\/pipeline/) o = "limiter/pipeline"
        else if (f ~ /limiter\/enforce/) o = "limiter/enforce"
        else if (f ~ /limiter\/identity/) o = "limiter/identity"
        else if (f ~ /throttled\/limiter\./) o = "limiter (store)"
        else if (f ~ /internal\/bench/) o = "bench: hello world, peers, loop"
        else if (f ~ /golang.org\/x\/time|labstack/) o = "peer library"
        else if (f ~ /nanotime|runtimeNow|walltime/) o = "clock"
        else if (f ~ /maps\.|mapaccess|mapassign|memHash|aeshash|maphash/) o = "maps, hashing"
        else if (f ~ /^sync\.|internal\/sync|procPin|procUnpin/) o = "sync (locks, pools)"
        else if (f ~ /net\/http|textproto|^io\./) o = "net/http"
        else if (f ~ /malloc|^runtime\.gc|scanobject|scanSpan|bulkBarrier|WriteBarrier|gcWrite|memclr|memmove/) o = "allocation, GC, copies"
        s[o] += sec($1); t += sec($1) }
      END { printf "\n%s (%d requests): ns per request by owner, flat\n", m, n
            for (o in s) printf "  %8.1f  %s\n", s[o] * 1e9 / n, o | "sort -rn"
            close("sort -rn"); printf "  %8.1f  total\n", t * 1e9 / n }'
done
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
