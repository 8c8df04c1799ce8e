#!/usr/bin/env bash
# Runs `throttled bench overload --mode $MODE` (default all) RUNS times per
# scenario and front (FRONTS: proxy, middleware, echo; default proxy; the
# instances scenario on a fresh redis-server) and prints the median of each
# figure per scenario, mode and front, as in BENCHMARKS.md. Raw JSON lines go
# to $OUT (default bench-overload.jsonl).
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
runs=${RUNS:-3}; dur=${DURATION:-30s}; port=${PORT:-16398}; out=${OUT:-bench-overload.jsonl}
scenarios=${SCENARIOS:-surge crowd slowdown instances}
fronts=${FRONTS:-proxy}; mode=${MODE:-all}
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
go build -o "$dir/throttled" ./cmd/throttled
: > "$out"
for i in $(seq "$runs"); do
  for sc in $scenarios; do
    for front in $fronts; do
      extra=()
      if [ "$sc" = instances ]; then extra=(--redis-url "redis://127.0.0.1:$port/0"); fi
      redis-cli -p "$port" flushall >/dev/null
      "$dir/throttled" bench overload --scenario "$sc" --front "$front" --duration "$dur" --mode "$mode" --json "${extra[@]}" | tee -a "$out"
    done
  done
done
python3 - "$out" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = {}
for r in rows:
    keys.setdefault((r["scenario"], r["mode"], r.get("front", "proxy")), []).append(r)
print("| scenario | mode | front | premium % | free % | goodput ÷ C | lowest 1 s ÷ C | p99 ms | settle s | recovery s | flips/min | backend 503 | shed | CPU s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
med = lambda xs: st.median(xs)
for (sc, mode, front), rs in keys.items():
    o = [r["phases"]["overload"] for r in rs]
    print(f"| {sc} | {mode} | {front} | {med([x['premium_admitted_pct'] for x in o]):.1f} | {med([x['free_admitted_pct'] for x in o]):.1f} | "
          f"{med([x['goodput_ratio'] for x in o]):.2f} | {med([r['lowest_goodput_ratio'] for r in rs]):.2f} | "
          f"{med([x['p99_ms'] for x in o]):.0f} | {med([r['settle_s'] for r in rs]):g} | {med([r['recovery_s'] for r in rs]):g} | "
          f"{med([r['flips_per_min'] for r in rs]):g} | {med([x['status']['backend_503'] for x in o]):g} | "
          f"{med([x['status']['shed'] for x in o]):g} | {med([r['cpu_seconds'] for r in rs]):.1f} |")
PY
