#!/usr/bin/env bash
# Builds the MinIO server the registry tests run (as a separate program, never imported) into
# .deps/bin/minio, from the Go module proxy at a pinned version. About five minutes on 2 cores.
#
# Idempotent: an existing .deps/bin/minio that runs is kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$root/.deps/bin"
version="v0.0.0-20260212201848-7aac2a2c5b7c"

log() { printf '[20-minio] %s\n' "$*" >&2; }

if [[ -x "$bin/minio" ]] && "$bin/minio" --version >/dev/null 2>&1; then
	log "minio already in $bin"
	exit 0
fi
mkdir -p "$bin"
log "building github.com/minio/minio@$version (several minutes)"
# Outside the module: the server's dependencies must not touch this repository's go.mod.
(cd /tmp && GOBIN="$bin" GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 go install "github.com/minio/minio@$version")
"$bin/minio" --version >/dev/null || { log "error: $bin/minio does not run"; exit 1; }
log "installed $bin/minio"
