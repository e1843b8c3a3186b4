#!/usr/bin/env bash
# Runs every scripts/setup.d/NN-name.sh. Each is idempotent and caches under .deps/, so a second
# run is quick. SETUP_ONLY="10 11" limits the run to scripts with those numbers.
#
# Two lanes run side by side, each in number order: the steps that mostly download (libtorch's
# wheels, the Python virtual environments) and the steps that mostly compile Go (MinIO, the
# control plane, the node). On a cold machine the downloads then cost no wall time of their own.
# gotch (11) needs libtorch (10), so it is in the first lane; every apt-get is in the second, so
# two never wait on dpkg's lock.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.d"
download_lane=" 10 11 30 35 "

# lane runs the scripts of one lane in order and stops at the first that fails.
lane() {
	local which="$1" script name number start in_download
	for script in "$dir"/[0-9]*.sh; do
		name="$(basename "$script")"
		number="${name%%-*}"
		if [[ -n "${SETUP_ONLY:-}" && " $SETUP_ONLY " != *" $number "* ]]; then
			continue
		fi
		in_download=build
		[[ "$download_lane" == *" $number "* ]] && in_download=download
		[[ "$which" == "$in_download" ]] || continue
		start=$SECONDS
		if ! bash "$script"; then
			echo "setup: $name failed" >&2
			return 1
		fi
		echo "setup: $name ok ($((SECONDS - start))s)" >&2
	done
}

# The download lane gets a process group of its own (set -m), so that an interrupt, which the shell
# would otherwise not pass to a background job, ends it and everything it started.
set -m
lane download &
download=$!
set +m
trap 'kill -TERM -- "-$download" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
status=0
lane build || status=1
wait "$download" || status=1
exit "$status"
