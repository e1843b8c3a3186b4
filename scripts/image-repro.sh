#!/usr/bin/env bash
# Checks that `make image` gives the same digest from two checkouts at paths of different
# lengths (issue 38): clones this checkout's HEAD (committed work only) into DIR_A and DIR_B,
# links this checkout's libtorch into each clone's .deps (the other dependencies are not needed
# by the image), runs `make image` in each, which generates the clone's own gotch as
# `make setup` would (scripts/setup.d/11-gotch.sh), and compares the last lines. It also fails
# if either image binary holds any of the three checkouts' paths: with -trimpath the Go build
# cache is shared between paths, so a path baked into a cached object would give equal digests
# and still be wrong.
#
#   scripts/image-repro.sh [DIR_A DIR_B]
#
# DIR_A and DIR_B must not exist; by default two folders under a new temporary folder, removed
# at the end unless IMAGE_REPRO_KEEP=1. Prints the two digests, then `same`.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { printf '[image-repro] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

case $# in
0)
	base="$(mktemp -d /tmp/schedrl-image-repro.XXXXXX)"
	a="$base/a/schedrl"
	b="$base/b-a-longer-folder/x/schedrl"
	if [[ "${IMAGE_REPRO_KEEP:-0}" != 1 ]]; then
		trap 'rm -rf "$base"' EXIT
	fi
	;;
2) a="$1" b="$2" ;;
*) die "usage: scripts/image-repro.sh [DIR_A DIR_B]" ;;
esac
rev="$(git -C "$root" rev-parse HEAD)"
libtorch="${LIBTORCH:-$root/.deps/libtorch}"
[[ -f "$libtorch/lib/libtorch_cpu.so" ]] || die "$libtorch/lib/libtorch_cpu.so missing: run make setup first"
libtorch="$(cd "$libtorch" && pwd -P)"

# image DIR: clone HEAD into DIR, run make image there, print its last line.
image() {
	local dir="$1" out start
	[[ ! -e "$dir" ]] || die "$dir exists"
	mkdir -p "$(dirname "$dir")"
	git clone --quiet --no-checkout "$root" "$dir"
	git -C "$dir" checkout --quiet --detach "$rev"
	mkdir "$dir/.deps"
	if [[ -z "${LIBTORCH:-}" ]]; then
		ln -s "$libtorch" "$dir/.deps/libtorch"
	fi
	start=$SECONDS
	if ! out="$(make -C "$dir" --no-print-directory image 2>"$dir.make-image.log")"; then
		tail -20 "$dir.make-image.log" >&2
		die "make image failed in $dir (log: $dir.make-image.log)"
	fi
	log "$dir: make image took $((SECONDS - start)) s"
	tail -1 <<<"$out"
}

da="$(image "$a")"
db="$(image "$b")"
echo "$a $da"
echo "$b $db"
for bin in "$a/dist/image/schedrl" "$b/dist/image/schedrl"; do
	for p in "$a" "$b" "$root"; do
		if grep -qF "$p" "$bin"; then
			die "$bin holds the checkout path $p"
		fi
	done
done
[[ "$da" == sha256:* ]] || die "make image in $a printed $da last, not a digest"
[[ "$da" == "$db" ]] || die "different digests: $a $da, $b $db"
echo same
