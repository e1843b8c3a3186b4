#!/usr/bin/env bash
# Prints the environment that builds and tests the packages linking libtorch, for
#   eval "$(scripts/goenv.sh)"; go test ./nn/...
# (the Makefile sets the same itself). Binaries find libtorch through the runpath the generated
# gotch links (.deps/gotch/libtch/rpath.go: the linked .deps/gotch/libtorch/lib), so no
# LD_LIBRARY_PATH is needed; only `make image` links $ORIGIN/../lib instead (-tags libtorch_origin).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ ! -f "$root/.deps/go.work" ]]; then
	echo "goenv: $root/.deps/go.work missing: run 'make setup' first" >&2
	exit 1
fi
echo "export GOWORK=$root/.deps/go.work CGO_ENABLED=1"
