#!/usr/bin/env bash
# `throttled bench http` on a fresh redis-server, in one of two layouts:
#   LAYOUT=shared (default): the bench process (load generator, server,
#     middleware) and Redis share every core, as on a laptop.
#   LAYOUT=split: Redis alone on the last core, the bench process on the
#     others (taskset), as in production, where Redis runs on its own
#     machine: the modes are compared on the same cores, and Redis's CPU
#     no longer competes with the server's.
# RUNS rounds of DUR per mode; MODES as bench http's --modes; extra
# arguments go to bench http (say, --json or --gather -1).
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
layout=${LAYOUT:-shared}; runs=${RUNS:-3}; dur=${DUR:-2s}; port=${PORT:-16404}
modes=${MODES:-none,memory,memory-noheaders,xrate,echo,wait,redis,naive-redis,lease}
case $layout in shared | split) ;; *) echo "LAYOUT=$layout: want shared or split" >&2; exit 1 ;; esac
dir=$(mktemp -d)
export PATH=$PATH:/usr/local/go/bin
go build -o "$dir/throttled" ./cmd/throttled
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
  --logfile "$dir/log" --pidfile "$dir/pid"
trap 'redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
run=()
case $layout in
shared) ;;
split)
  last=$(($(nproc) - 1))
  [ "$last" -ge 1 ] || { echo "LAYOUT=split needs 2 cores or more" >&2; exit 1; }
  until [ -s "$dir/pid" ]; do sleep 0.1; done
  taskset -pc "$last" "$(cat "$dir/pid")" >/dev/null
  run=(taskset -c "0-$((last - 1))")
  ;;
esac
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) layout $layout, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"${run[@]}" "$dir/throttled" bench http --modes "$modes" --redis-url "redis://127.0.0.1:$port/0" \
  --conns 64 --duration "$dur" --runs "$runs" "$@"
