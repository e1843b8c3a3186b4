#!/usr/bin/env bash
# Creates .deps/venv-pyarrow: a small Python venv with pinned pyarrow, used by the datasets
# interoperability test to read our Parquet shards with a reader that is not parquet-go.
# PYTHON=/path/to/python3 picks the interpreter (3.9 or newer).
#
# Idempotent: a venv whose pyarrow already imports at the pinned version is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/.deps/venv-pyarrow"
pyarrow_version="26.0.1"
numpy_version="2.3.5"

log() { printf '[35-pyarrow] %s\n' "$*" >&2; }

have() {
	[[ -x "$venv/bin/python" ]] &&
		"$venv/bin/python" -c "import pyarrow, sys; sys.exit(pyarrow.__version__ != '$pyarrow_version')" 2>/dev/null
}

if have; then
	log "pyarrow $pyarrow_version already in $venv"
	exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { log "error: $python not found (set PYTHON=)"; exit 1; }
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
	"pyarrow==$pyarrow_version" "numpy==$numpy_version"
have || { log "error: pyarrow $pyarrow_version does not import from $venv"; exit 1; }
log "installed pyarrow $pyarrow_version into $venv"
