#!/usr/bin/env bash
# Runs every scripts/setup.d/NN-name.sh in order. Each is idempotent and caches under .deps/,
# so a second run is quick. SETUP_ONLY="10 11" limits the run to scripts with those numbers.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.d"
for script in "$dir"/[0-9]*.sh; do
	name="$(basename "$script")"
	if [[ -n "${SETUP_ONLY:-}" && " $SETUP_ONLY " != *" ${name%%-*} "* ]]; then
		continue
	fi
	start=$SECONDS
	if ! bash "$script"; then
		echo "setup: $name failed" >&2
		exit 1
	fi
	echo "setup: $name ok ($((SECONDS - start))s)" >&2
done
