#!/usr/bin/env bash
# Creates .deps/venv-pyarrow: a small Python venv with pinned pyarrow, used by the datasets
# interoperability test to read our Parquet shards with a reader that shares no code with
# parquet-go. PYTHON=/path/to/python3 picks the interpreter (3.10 or newer).
#
# Idempotent: a venv whose pyarrow already imports at the pinned version is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/.deps/venv-pyarrow"
pyarrow_version="26.0.1"

log() { printf '[35-pyarrow] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

have() {
	[[ -x "$venv/bin/python" ]] &&
		"$venv/bin/python" -c "import pyarrow.parquet, pyarrow, sys; sys.exit(pyarrow.__version__ != '$pyarrow_version')" 2>/dev/null
}

if have; then
	log "pyarrow $pyarrow_version already in $venv"
	exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || die "$python not found (install python3 or set PYTHON=)"
rm -rf "$venv"
if ! "$python" -m venv "$venv" 2>/dev/null; then
	# Debian ships venv separately; fetch it when we may.
	rm -rf "$venv"
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		log "installing python3-venv"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
		"$python" -m venv "$venv"
	else
		die "$python -m venv failed (install python3-venv)"
	fi
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pyarrow==$pyarrow_version"
have || die "pyarrow $pyarrow_version does not import from $venv"
log "installed pyarrow $pyarrow_version into $venv"
