#!/usr/bin/env bash
# Prints the directory of a Go vulnerability database in the layout that
# `govulncheck -db file://DIR` reads, built once (and cached) from the
# golang.org/x/vulndb module with its own cmd/indexdb: the Go module proxy
# serves that module where vuln.go.dev may be unreachable.
# VULNDB=<module version> picks another snapshot of the database.
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
VULNDB="${VULNDB:-v0.0.0-20261105234957-e22db6528018}"
out="${XDG_CACHE_HOME:-$HOME/.cache}/throttled/vulndb-$VULNDB"
if [ ! -f "$out/index/db.json" ]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  src="$(cd "$work" && go mod download -json "golang.org/x/vulndb@$VULNDB" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  echo "vulndb: indexing $src/data/osv" >&2
  (cd "$work" && go run "golang.org/x/vulndb/cmd/indexdb@$VULNDB" -vulns "$src/data/osv" -out "$work/db") >&2
  mkdir -p "$(dirname "$out")"
  rm -rf "$out"
  mv "$work/db" "$out"
fi
echo "$out"
