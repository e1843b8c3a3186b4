#!/usr/bin/env bash
# Installs libtorch 2.1 into .deps/libtorch from the torch==2.1.2 PyPI wheel (the only place a
# libtorch build can be had here). LIBTORCH=/path uses an existing libtorch 2.1.x instead.
#
# That wheel is a CUDA build: even libtorch_cpu.so needs libcudart.so.12 and libcupti.so.12
# (the profiler links them), so the two small nvidia wheels that carry them are fetched too.
# Without a GPU driver libcudart simply reports no device, and gotch runs on CPU.
#
# Idempotent: a marker records what was extracted; a verified install is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="$root/.deps"
wheels="$deps/wheels"
torch_wheel="torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl"
# Pinned to the versions torch 2.1.2 itself requires.
cudart_wheel="nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"
cupti_wheel="nvidia_cuda_cupti_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"

log() { printf '[10-libtorch] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# check_libtorch DIR: prints the version; DIR must hold libtorch 2.1.x headers and the CPU
# libraries gotch links, all loadable.
check_libtorch() {
	local dir="$1" header version missing
	header="$dir/include/torch/csrc/api/include/torch/version.h"
	[[ -f "$header" ]] || die "$dir: missing $header (not a libtorch tree)"
	for so in libc10.so libtorch_cpu.so; do
		[[ -f "$dir/lib/$so" ]] || die "$dir: missing lib/$so"
	done
	missing="$(ldd "$dir/lib/libtorch_cpu.so" | grep 'not found' || true)"
	[[ -z "$missing" ]] || die "$dir/lib/libtorch_cpu.so: unresolved libraries: $missing"
	version="$(sed -n 's/^#define TORCH_VERSION "\(.*\)"$/\1/p' "$header")"
	[[ -n "$version" ]] || version="$(awk '/define TORCH_VERSION_(MAJOR|MINOR|PATCH) /{v=v (v?".":"") $3} END{print v}' "$header")"
	[[ "$version" == 2.1.* ]] || die "$dir: libtorch $version found, need 2.1.x"
	printf '%s' "$version"
}

# fetch WHEEL SPEC: download WHEEL (pip requirement SPEC) into .deps/wheels unless cached.
fetch() {
	[[ -f "$wheels/$1" ]] && return
	log "downloading $2 from PyPI"
	mkdir -p "$wheels"
	python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
		--implementation cp --abi cp311 --platform manylinux1_x86_64 --dest "$wheels" "$2"
	[[ -f "$wheels/$1" ]] || die "pip did not produce $wheels/$1"
}

if [[ -n "${LIBTORCH:-}" ]]; then
	v="$(check_libtorch "$LIBTORCH")"
	log "using LIBTORCH=$LIBTORCH (libtorch $v)"
	exit 0
fi

dest="$deps/libtorch"
marker="$dest/.installed"
want="$torch_wheel $cudart_wheel $cupti_wheel"
if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
	check_libtorch "$dest" >/dev/null
	log "libtorch $(cat "$dest/build-version") already installed in $dest"
	exit 0
fi

fetch "$torch_wheel" "torch==2.1.2"
fetch "$cudart_wheel" "nvidia-cuda-runtime-cu12==12.1.105"
fetch "$cupti_wheel" "nvidia-cuda-cupti-cu12==12.1.105"

# Extract beside the destination and rename into place, so an interrupted run leaves nothing
# that looks installed.
tmp="$(mktemp -d "$deps/libtorch.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
log "extracting torch/lib and torch/include from $torch_wheel"
unzip -q "$wheels/$torch_wheel" 'torch/lib/*' 'torch/include/*' 'torch/version.py' \
	-x 'torch/lib/libtorch_python.so' -d "$tmp"
unzip -q -j "$wheels/$cudart_wheel" 'nvidia/cuda_runtime/lib/libcudart.so.12' -d "$tmp/torch/lib"
unzip -q -j "$wheels/$cupti_wheel" 'nvidia/cuda_cupti/lib/libcupti.so.12' -d "$tmp/torch/lib"
mkdir "$tmp/libtorch"
mv "$tmp/torch/lib" "$tmp/torch/include" "$tmp/libtorch/"
# Same file the official libtorch archives ship; `schedrl doctor` reads it.
sed -n "s/^__version__ = '\(.*\)'$/\1/p" "$tmp/torch/version.py" >"$tmp/libtorch/build-version"
v="$(check_libtorch "$tmp/libtorch")"
printf '%s' "$want" >"$tmp/libtorch/.installed"
rm -rf "$dest"
mv "$tmp/libtorch" "$dest"
log "installed libtorch $v ($(cat "$dest/build-version")) in $dest"
