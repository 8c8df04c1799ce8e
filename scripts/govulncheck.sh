#!/usr/bin/env bash
# Runs govulncheck on ./... against the database of scripts/vulndb.sh and
# fails on every vulnerability the code reaches, except those listed in
# .govulncheck-allow (one ID a line, then why it does not apply or what it
# waits for; # comments).
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
cd "$(dirname "$0")/.."
db="$(./scripts/vulndb.sh)"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
rc=0
govulncheck -db "file://$db" ./... >"$out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 3 ]; then # 3: vulnerabilities found
  cat "$out"
  exit "$rc"
fi
allowed="$(sed -e 's/#.*//' .govulncheck-allow | awk 'NF {print $1}')"
found="$(grep -o '^Vulnerability #[0-9]*: GO-[0-9]*-[0-9]*' "$out" | awk '{print $3}' | sort -u || true)"
bad=""
for id in $found; do
  if ! grep -qx "$id" <<<"$allowed"; then bad="$bad $id"; fi
done
if [ -n "$bad" ]; then
  cat "$out"
  echo "govulncheck: reached and not in .govulncheck-allow:$bad" >&2
  exit 1
fi
echo "govulncheck: $(wc -w <<<"$found") reached, all in .govulncheck-allow"
