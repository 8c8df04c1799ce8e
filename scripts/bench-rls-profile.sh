#!/usr/bin/env bash
# Where throttled's rate limit service spends its CPU under the load of
# scripts/bench-rls-peer.sh: a fresh redis-server, two `throttled serve`
# instances (scripts/rls-bench-config.sh, admin.pprof on), `throttled bench
# rls` at CALLERS for DUR, and a CPU profile of the first instance over
# SECS in the middle of it; prints the bench's JSON, pprof's top and the
# samples' flat time split by owner.
#   CALLERS=64 DUR=12s SECS=8 OUT=/tmp/rls.prof [KIND=allocs] scripts/bench-rls-profile.sh [throttled binary]
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin
cd "$(dirname "$0")/.."
. scripts/rls-bench-config.sh
callers=${CALLERS:-64}; keys=${KEYS:-10000}; dur=${DUR:-12s}; secs=${SECS:-8}; port=${PORT:-16950}
kind=${KIND:-profile} # or allocs: the allocations over SECS (then only pprof's top is printed)
dir=$(mktemp -d)
out=${OUT:-$dir/rls.prof}
pids=()
stop() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
}
trap 'stop; rm -rf "$dir"' EXIT
bin=${1:-$dir/throttled}
[ -n "${1:-}" ] || go build -o "$bin" ./cmd/throttled

redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
  --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
for i in 0 1; do
  { rls_bench_config "redis://127.0.0.1:$port/1" "127.0.0.1:$((port + 3 + i))" 1s
    echo "admin: { pprof: true }"; } >"$dir/t$i.yaml"
  "$bin" serve --config "$dir/t$i.yaml" --admin-listen "127.0.0.1:$((port + 1 + i))" >"$dir/t$i.log" 2>&1 &
  pids+=($!)
done
addrs=127.0.0.1:$((port + 3)),127.0.0.1:$((port + 4))
for _ in $(seq 100); do
  "$bin" bench rls --addr "$addrs" --domain bench --descriptor 'rule=per_key,key={id}' --exactness 1 \
    --span 1ms --json 2>/dev/null | jq -e '.errors == 0' >/dev/null && break
  sleep 0.2
done
echo "# $(date -u +%FT%TZ) $(git rev-parse --short HEAD) $bin, $callers callers, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" bench rls --addr "$addrs" --domain bench --descriptor 'rule=per_key,key={id}' --concurrency "$callers" \
  --keys "$keys" --duration "$dur" --warmup 1s --pids "${pids[0]},${pids[1]}" \
  --redis-url "redis://127.0.0.1:$port/0" --json >"$dir/bench.json" &
b=$!
sleep 2
gcs() { curl -sf "http://127.0.0.1:$((port + 1))/metrics" | awk '/^go_gc_duration_seconds_count/ {print $2}'; }
g0=$(gcs)
curl -sf -o "$out" "http://127.0.0.1:$((port + 1))/debug/pprof/$kind?seconds=$secs"
g1=$(gcs)
wait "$b"
jq -c . "$dir/bench.json"
echo "# GC cycles of the profiled instance: $((g1 - g0)) in ${secs}s"
if [ "$kind" != profile ]; then
  go tool pprof -sample_index=alloc_space -top -nodecount=40 "$bin" "$out" 2>/dev/null | sed -n '4,50p'
  exit 0
fi
go tool pprof -top -nodecount=40 "$bin" "$out" 2>/dev/null | sed -n '4,50p'
go tool pprof -top -nodecount=100000 "$bin" "$out" 2>/dev/null |
  awk '
    function sec(v) { if (v ~ /ms$/) { sub("ms", "", v); return v / 1000 } sub("s", "", v); return v }
    NR > 6 && NF >= 6 {
      f = $6; o = "runtime, other"
      if (f ~ /google.golang.org\/grpc|golang.org\/x\/net\/http2/) o = "grpc, http2"
      else if (f ~ /google.golang.org\/protobuf|envoyproxy/) o = "protobuf"
      else if (f ~ /limiter\/rls/) o = "limiter/rls"
      else if (f ~ /limiter\/enforce/) o = "limiter/enforce"
      else if (f ~ /redisstore|fallback|instrument|throttled\/limiter/) o = "limiter (stores)"
      else if (f ~ /prometheus/) o = "prometheus"
      else if (f ~ /morestack|newstack|copystack|adjustframe|adjustpointers|stackalloc|stackfree/) o = "stack growth"
      else if (f ~ /syscall|internal\/poll|^net\.|epoll|netpoll/) o = "syscalls, net"
      else if (f ~ /findRunnable|schedule|park_m|ready|runqget|runqsteal|futex|notesleep|notewakeup|wakep|stealWork|mcall|gopark|goready|casgstatus|execute|newproc|gfget|gfput|goexit|lock2|unlock2|chansend|chanrecv|selectgo|sellock|selunlock|waitq/) o = "scheduler, channels"
      else if (f ~ /malloc|^runtime\.gc|scanobject|scanSpan|bulkBarrier|WriteBarrier|gcWrite|memclr|memmove|greyobject|findObject|markBits|sweep/) o = "allocation, GC, copies"
      else if (f ~ /^sync\.|internal\/sync|procPin|procUnpin/) o = "sync"
      s[o] += sec($1); t += sec($1) }
    END { printf "\nflat samples by owner (%% of %.2fs)\n", t
          for (o in s) printf "  %5.1f%%  %s\n", s[o] * 100 / t, o | "sort -rn"
          close("sort -rn") }'
echo "# load after $(cut -d' ' -f1-3 /proc/loadavg)"
