#!/usr/bin/env bash
# The modes of `throttled bench http`, served by one process (bench http
# --serve) and loaded by wrk from outside it, on a fresh redis-server:
#   LAYOUT=server-alone (default): the serving process alone on the first
#     core, wrk and Redis on the others, as in production, where the load
#     and Redis come from other machines: the ratios are of the server's
#     own CPU per request.
#   LAYOUT=shared: all three share every core.
# ROUNDS rounds (default 5); in each, every mode is loaded for DUR (default
# 2s) by `wrk -t1 -c64`, 1,000 API keys in turn, the modes in an order that
# turns every round. Prints one line per mode and round, then the median
# ratio of each mode to none; JSON=1 prints JSON lines instead. MODES as
# bench http's --modes. Needs wrk (apt-get install -y wrk).
set -euo pipefail
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "bench-wrk: needs wrk (apt-get install -y wrk)" >&2; exit 1; }
layout=${LAYOUT:-server-alone}; rounds=${ROUNDS:-5}; dur=${DUR:-2s}; port=${PORT:-16405}
modes=${MODES:-none,memory,memory-noheaders,redis,lease}
case $layout in server-alone | shared) ;; *) echo "LAYOUT=$layout: want server-alone or shared" >&2; exit 1 ;; esac
dir=$(mktemp -d)
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null || true; redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
export PATH=$PATH:/usr/local/go/bin
go build -o "$dir/throttled" ./cmd/throttled
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" --daemonize yes \
  --logfile "$dir/log" --pidfile "$dir/pid"
srv=(); cli=()
if [ "$layout" = server-alone ]; then
  last=$(($(nproc) - 1))
  [ "$last" -ge 1 ] || { echo "LAYOUT=server-alone needs 2 cores or more" >&2; exit 1; }
  srv=(taskset -c 0); cli=(taskset -c "1-$last")
  until [ -s "$dir/pid" ]; do sleep 0.1; done
  taskset -pc "1-$last" "$(cat "$dir/pid")" >/dev/null
fi
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
"${srv[@]}" "$dir/throttled" bench http --serve 127.0.0.1:0 --modes "$modes" \
  --redis-url "redis://127.0.0.1:$port/0" >"$dir/urls" &
spid=$!
n=$(($(tr -cd , <<<"$modes" | wc -c) + 1)); [[ $modes == none* ]] || n=$((n + 1))
until [ "$(wc -l <"$dir/urls")" -ge "$n" ]; do kill -0 "$spid" || exit 1; sleep 0.1; done
mapfile -t names < <(sed 's/.*"mode":"\([^"]*\)".*/\1/' "$dir/urls")
mapfile -t urls < <(sed 's/.*"url":"\([^"]*\)".*/\1/' "$dir/urls")
cat >"$dir/keys.lua" <<'LUA'
local i = 0
request = function()
  i = (i + 1) % 1000
  return wrk.format("GET", nil, {["X-API-Key"] = "k" .. i})
end
LUA
load() { "${cli[@]}" wrk -t1 -c64 -d"$2" --latency -s "$dir/keys.lua" "${urls[$1]}"; }
# parse wrk's report: requests/s, p50 and p99 in µs, non-2xx answers and socket errors
parse() {
  awk 'function us(v) { if (v ~ /us$/) return v + 0; if (v ~ /ms$/) return v * 1000; if (v ~ /s$/) return v * 1e6; return v }
    /Requests\/sec/ { r = $2 } /^ +50%/ { p50 = us($2) } /^ +99%/ { p99 = us($2) }
    /Non-2xx/ { e += $NF } /Socket errors/ { gsub(/[^0-9 ]/, " "); e += $1 + $2 + $3 + $4 }
    END { printf "%s %.0f %.0f %d\n", r, p50, p99, e }'
}
echo "# $(date -u +%FT%TZ) commit $(git rev-parse --short HEAD) layout $layout, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for i in "${!names[@]}"; do load "$i" 1s >/dev/null; done # connections up, caches warm
declare -A ratios
for r in $(seq "$rounds"); do
  declare -A rps=()
  lines=()
  for j in "${!names[@]}"; do
    i=$(((r - 1 + j) % ${#names[@]}))
    read -r q p50 p99 errs < <(load "$i" "$dur" | parse)
    rps[$i]=$q
    lines[$i]="$p50 $p99 $errs"
  done
  for i in "${!names[@]}"; do
    ratio=$(awk -v a="${rps[$i]}" -v b="${rps[0]}" 'BEGIN { printf "%.3f", a / b }')
    ratios[${names[$i]}]+="$ratio "
    read -r p50 p99 errs <<<"${lines[$i]}"
    if [ "${JSON:-}" = 1 ]; then
      printf '{"round":%d,"mode":"%s","requests_per_sec":%s,"ratio":%s,"p50_us":%s,"p99_us":%s,"errors":%s}\n' \
        "$r" "${names[$i]}" "${rps[$i]}" "$ratio" "$p50" "$p99" "$errs"
    else
      printf 'round %d %-17s %9s req/s (%s of none) p50 %sµs p99 %sµs, %s errors\n' \
        "$r" "${names[$i]}" "${rps[$i]}" "$ratio" "$p50" "$p99" "$errs"
    fi
  done
done
if [ "${JSON:-}" != 1 ]; then
  printf 'median of none:'
  for m in "${names[@]:1}"; do
    printf ' %s %s' "$m" "$(tr ' ' '\n' <<<"${ratios[$m]}" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
  done
  echo
fi
