#!/usr/bin/env bash
# Installs Debian's skopeo, which internal/ociimage's test uses to read the image archive as a
# third-party tool would. Needs root (apt-get), as on the developer and CI machines.
#
# Idempotent: an installed skopeo that reports its version is kept.
set -euo pipefail

log() { printf '[41-skopeo] %s\n' "$*" >&2; }

if command -v skopeo >/dev/null && skopeo --version >/dev/null 2>&1; then
	log "$(skopeo --version 2>/dev/null | head -1) already installed"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	log "error: skopeo is missing and installing it needs root: apt-get install skopeo"
	exit 1
fi
log "installing skopeo from Debian packages"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q skopeo >/dev/null
skopeo --version >/dev/null 2>&1 || { log "error: skopeo does not run"; exit 1; }
log "installed $(skopeo --version 2>/dev/null | head -1)"
