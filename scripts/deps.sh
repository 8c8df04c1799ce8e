#!/usr/bin/env bash
# Installs what the tests need when it is missing: redis-server, redis-cli
# (redis-tools) and prometheus + promtool, from Debian's packages, and the
# pinned Go linters (staticcheck, govulncheck) with go install.
set -euo pipefail
# The approved Go toolchain, as in the Makefile (which may pass another).
export GOTOOLCHAIN="${GOTOOLCHAIN:-go1.27.3}"
STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOVULNCHECK=golang.org/x/vuln/cmd/govulncheck@v1.9.0
GOBIN="$(go env GOPATH)/bin"
GOVERSION="$(go env GOVERSION)"
# go_tool NAME PKG@VERSION: installs PKG@VERSION unless NAME of that version,
# built by this Go (a linter built by an older Go cannot read the export
# data of a newer one), is there.
go_tool() {
  local want="${2##*@}"
  if [ -x "$GOBIN/$1" ] && go version -m "$GOBIN/$1" 2>/dev/null |
    awk -v v="$want" -v g="$GOVERSION" 'NR == 1 && $2 == g {ok++} $1 == "mod" && $3 == v {ok++} END {exit ok != 2}'; then
    return 0
  fi
  echo "deps: go install $2" >&2
  go install "$2"
}
go_tool staticcheck "$STATICCHECK"
go_tool govulncheck "$GOVULNCHECK"
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli    >/dev/null 2>&1 || need+=(redis-tools)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
echo "deps: installing ${need[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
# The Debian packages start system services we do not use; the tests start
# their own servers on free ports.
for svc in redis-server prometheus; do
  $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
done
