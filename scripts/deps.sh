#!/usr/bin/env bash
# Installs what the tests need when it is missing: redis-server, redis-cli
# (redis-tools) and prometheus + promtool, from Debian's packages.
set -euo pipefail
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
