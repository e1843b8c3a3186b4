#!/usr/bin/env bash
# Installs Debian's chromium, which the registry web page test drives headless. Needs root
# (apt-get), as on the developer and CI machines.
#
# Idempotent: an installed chromium that reports its version is kept.
set -euo pipefail

log() { printf '[40-chromium] %s\n' "$*" >&2; }

if command -v chromium >/dev/null && chromium --version >/dev/null 2>&1; then
	log "$(chromium --version 2>/dev/null | head -1) already installed"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	log "error: chromium is missing and installing it needs root: apt-get install chromium"
	exit 1
fi
log "installing chromium from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q chromium >/dev/null
chromium --version >/dev/null 2>&1 || { log "error: chromium does not run"; exit 1; }
log "installed $(chromium --version 2>/dev/null | head -1)"
