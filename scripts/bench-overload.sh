#!/usr/bin/env bash
# Runs `throttled bench overload --mode $MODE` (default all) RUNS times per
# scenario and front (FRONTS: proxy, middleware, echo; default proxy; the
# instances scenario on a fresh redis-server) and signal path (PATHS:
# inprocess, prometheus — a prometheus the bench starts, scraping every
# instance each second; default inprocess), interleaved, and prints the
# median of each figure per scenario, mode and front, as in BENCHMARKS.md;
# with several paths each cell reads "inprocess / prometheus". Raw JSON
# lines, each with its "path", go to $OUT (default bench-overload.jsonl).
# Both paths: PATHS="inprocess prometheus" MODE=controller scripts/bench-overload.sh
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
runs=${RUNS:-3}; dur=${DURATION:-30s}; port=${PORT:-16398}; out=${OUT:-bench-overload.jsonl}
scenarios=${SCENARIOS:-surge crowd slowdown instances starved}
fronts=${FRONTS:-proxy}; mode=${MODE:-all}; paths=${PATHS:-inprocess}
dir=$(mktemp -d)
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes --logfile "$dir/log"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
go build -o "$dir/throttled" ./cmd/throttled
: > "$out"
for i in $(seq "$runs"); do
  for sc in $scenarios; do
    for front in $fronts; do
      for path in $paths; do
        extra=()
        if [ "$sc" = instances ]; then extra=(--redis-url "redis://127.0.0.1:$port/0"); fi
        case "$path" in
          inprocess) ;;
          prometheus) extra+=(--prometheus) ;;
          *) echo "PATHS: unknown path $path (inprocess, prometheus)" >&2; exit 2 ;;
        esac
        redis-cli -p "$port" flushall >/dev/null
        echo "# $(uptime)" >&2
        "$dir/throttled" bench overload --scenario "$sc" --front "$front" --duration "$dur" --mode "$mode" --json "${extra[@]}" |
          sed "s/^{/{\"path\":\"$path\",/" | tee -a "$out"
      done
    done
  done
done
python3 - "$out" $paths <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
paths = sys.argv[2:]
keys = {}
for r in rows:
    keys.setdefault((r["scenario"], r["mode"], r.get("front", "proxy")), {}).setdefault(r.get("path", "inprocess"), []).append(r)
if len(paths) > 1:
    print("paths: " + " / ".join(paths))
print("| scenario | mode | front | premium % | free % | goodput ÷ C | lowest 1 s ÷ C | p99 ms | settle s | recovery s | flips/min | backend 503 | shed | after shed | after shed from 2 s | CPU s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
med = lambda xs: st.median(xs)
figures = [  # (format, of the overload phase or of the run)
    ("{:.1f}", lambda r: r["phases"]["overload"]["premium_admitted_pct"]),
    ("{:.1f}", lambda r: r["phases"]["overload"]["free_admitted_pct"]),
    ("{:.2f}", lambda r: r["phases"]["overload"]["goodput_ratio"]),
    ("{:.2f}", lambda r: r["lowest_goodput_ratio"]),
    ("{:.0f}", lambda r: r["phases"]["overload"]["p99_ms"]),
    ("{:g}", lambda r: r["settle_s"]),
    ("{:g}", lambda r: r["recovery_s"]),
    ("{:g}", lambda r: r["flips_per_min"]),
    ("{:g}", lambda r: r["phases"]["overload"]["status"]["backend_503"]),
    ("{:g}", lambda r: r["phases"]["overload"]["status"]["shed"]),
    ("{:g}", lambda r: r["phases"]["after"]["status"]["shed"]),
    ("{:g}", lambda r: r.get("after_shed_late", 0)),
    ("{:.1f}", lambda r: r["cpu_seconds"]),
]
for (sc, mode, front), by in keys.items():
    cells = [" / ".join(fmt.format(med([f(r) for r in by[p]])) if p in by else "-" for p in paths) for fmt, f in figures]
    print(f"| {sc} | {mode} | {front} | " + " | ".join(cells) + " |")
PY
