#!/usr/bin/env bash
# Installs actionlint (a Go module) into .deps/bin so `make lint` checks the GitHub workflows.
# Idempotent: an installed binary of the pinned version is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version="v1.7.12"
bin="$root/.deps/bin/actionlint"

log() { printf '[50-actionlint] %s\n' "$*" >&2; }

if [[ -x "$bin" ]] && [[ "$("$bin" -version 2>/dev/null | head -n1)" == "$version" ]]; then
	log "actionlint $version already installed in $bin"
	exit 0
fi
mkdir -p "$root/.deps/bin"
log "building actionlint $version from the Go module proxy"
# A module-aware install outside the project, so the project's go.mod stays untouched.
(cd "$root/.deps" && GOBIN="$root/.deps/bin" CGO_ENABLED=0 go install "github.com/rhysd/actionlint/cmd/actionlint@$version")
log "installed $("$bin" -version | head -n1) in $bin"
