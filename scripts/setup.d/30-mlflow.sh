#!/usr/bin/env bash
# Creates .deps/venv-mlflow with a pinned MLflow tracking server (mlflow 2.22.1, boto3 for
# artifacts in MinIO), the exact set listed in 30-mlflow.requirements.txt. The registry tests
# start it as `mlflow server` with a SQLite backend. PYTHON=/path/to/python3 picks the
# interpreter (3.11 tested).
#
# Idempotent: a venv whose mlflow already imports at the pinned version is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="$root/.deps/venv-mlflow"
mlflow_version="2.22.1"

log() { printf '[30-mlflow] %s\n' "$*" >&2; }

have() {
	[[ -x "$venv/bin/mlflow" ]] &&
		"$venv/bin/python" -c "import mlflow, boto3, sys; sys.exit(mlflow.__version__ != '$mlflow_version')" 2>/dev/null
}

if have; then
	log "mlflow $mlflow_version already in $venv"
	exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null || { log "error: $python not found (set PYTHON=)"; exit 1; }
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/30-mlflow.requirements.txt"
have || { log "error: mlflow $mlflow_version does not import from $venv"; exit 1; }
log "installed mlflow $mlflow_version into $venv"
