#!/usr/bin/env bash
# Runs every scripts/setup.d/NN-name.sh. Each is idempotent and caches under .deps/, so a second
# run is quick. SETUP_ONLY="10 11" limits the run to scripts with those numbers.
#
# Two lanes run side by side, each in number order: libtorch, gotch, MinIO, MLflow and pyarrow;
# then the control plane, the node and the Debian packages (every apt-get in one lane, so two
# never wait on dpkg's lock). On a cold machine the downloads cost no wall time of their own and
# two Go builds keep both cores busy where one leaves them idle while it links. gotch (11) needs
# libtorch (10), so both are in the first lane.
set -euo pipefail

dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/setup.d"
first_lane=" 10 11 20 30 35 "

# lane runs the scripts of one lane in order and stops at the first that fails.
lane() {
	local which="$1" script name number start in_lane
	for script in "$dir"/[0-9]*.sh; do
		name="$(basename "$script")"
		number="${name%%-*}"
		if [[ -n "${SETUP_ONLY:-}" && " $SETUP_ONLY " != *" $number "* ]]; then
			continue
		fi
		in_lane=second
		[[ "$first_lane" == *" $number "* ]] && in_lane=first
		[[ "$which" == "$in_lane" ]] || continue
		start=$SECONDS
		if ! bash "$script"; then
			echo "setup: $name failed" >&2
			return 1
		fi
		echo "setup: $name ok ($((SECONDS - start))s)" >&2
	done
}

# The first lane gets a process group of its own (set -m), so that an interrupt, which the shell
# would otherwise not pass to a background job, ends it and everything it started.
set -m
lane first &
first=$!
set +m
trap 'kill -TERM -- "-$first" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
status=0
lane second || status=1
wait "$first" || status=1
exit "$status"
