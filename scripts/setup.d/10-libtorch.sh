#!/usr/bin/env bash
# Installs libtorch 2.1 into .deps/libtorch from the torch==2.1.2 PyPI wheel (the only place a
# libtorch build can be had here). LIBTORCH=/path uses an existing libtorch 2.1.x instead.
#
# That wheel is a CUDA build: even libtorch_cpu.so needs libcudart.so.12 and libcupti.so.12
# (the profiler links them), so the two small nvidia wheels that carry them are fetched too.
# Without a GPU driver libcudart simply reports no device, and gotch runs on CPU.
#
# With CUDA=1 (and no LIBTORCH) it also fetches the CUDA libraries torch 2.1.2 pins (cuBLAS,
# cuDNN, NCCL, ...: about 1.9 GB of nvidia-* wheels) into the same lib/ folder, so the wheel's
# libtorch_cuda.so loads on any machine with an NVIDIA driver.
#
# Idempotent: markers record what was extracted; a verified install is left alone.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps="$root/.deps"
wheels="$deps/wheels"
torch_wheel="torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl"
# Pinned to the versions torch 2.1.2 itself requires.
cudart_wheel="nvidia_cuda_runtime_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"
cupti_wheel="nvidia_cuda_cupti_cu12-12.1.105-py3-none-manylinux1_x86_64.whl"

# The CUDA 12.1 libraries torch 2.1.2 requires (its wheel metadata), plus nvJitLink for cuSPARSE.
cuda_pins=(
	nvidia-cuda-nvrtc-cu12==12.1.105 nvidia-cudnn-cu12==8.9.2.26 nvidia-cublas-cu12==12.1.3.1
	nvidia-cufft-cu12==11.0.2.54 nvidia-curand-cu12==10.3.2.106 nvidia-cusolver-cu12==11.4.5.107
	nvidia-cusparse-cu12==12.1.0.106 nvidia-nccl-cu12==2.18.1 nvidia-nvtx-cu12==12.1.105
	nvidia-nvjitlink-cu12==12.1.105
)

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

pip_download() {
	python3 -m pip download --no-deps --only-binary=:all: --python-version 3.11 \
		--implementation cp --abi cp311 --platform manylinux1_x86_64 --platform manylinux2014_x86_64 "$@"
}

# fetch WHEEL SPEC: download WHEEL (pip requirement SPEC) into .deps/wheels unless cached.
fetch() {
	[[ -f "$wheels/$1" ]] && return
	log "downloading $2 from PyPI"
	mkdir -p "$wheels"
	pip_download --dest "$wheels" "$2"
	[[ -f "$wheels/$1" ]] || die "pip did not produce $wheels/$1"
}

if [[ -n "${LIBTORCH:-}" ]]; then
	v="$(check_libtorch "$LIBTORCH")"
	log "using LIBTORCH=$LIBTORCH (libtorch $v)"
	exit 0
fi

dest="$deps/libtorch"

install_cpu() {
	local marker="$dest/.installed" want="$torch_wheel $cudart_wheel $cupti_wheel" tmp v
	if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
		check_libtorch "$dest" >/dev/null
		log "libtorch $(cat "$dest/build-version") already installed in $dest"
		return
	fi
	fetch "$torch_wheel" "torch==2.1.2"
	fetch "$cudart_wheel" "nvidia-cuda-runtime-cu12==12.1.105"
	fetch "$cupti_wheel" "nvidia-cuda-cupti-cu12==12.1.105"

	# Extract beside the destination and rename into place, so an interrupted run leaves
	# nothing that looks installed.
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
	rm -rf "$tmp"
	trap - EXIT
	log "installed libtorch $v ($(cat "$dest/build-version")) in $dest"
}

# install_cuda adds the CUDA libraries beside libtorch_cuda.so (its rpath includes $ORIGIN).
# The marker is written last: an interrupted run is redone.
install_cuda() {
	local marker="$dest/.cuda-installed" want="${cuda_pins[*]}" missing
	if [[ -f "$marker" && "$(cat "$marker")" == "$want" ]]; then
		log "CUDA libraries already installed in $dest/lib"
		return
	fi
	rm -f "$marker"
	log "downloading the CUDA 12.1 libraries torch 2.1.2 pins (~1.9 GB, cached in $wheels/cuda)"
	mkdir -p "$wheels/cuda"
	pip_download --dest "$wheels/cuda" "${cuda_pins[@]}" >/dev/null
	for pin in "${cuda_pins[@]}"; do
		local name="${pin%%==*}" version="${pin##*==}" w
		w="$(ls "$wheels/cuda/${name//-/_}-$version-"*.whl 2>/dev/null | head -1)"
		[[ -n "$w" ]] || die "pip did not produce a wheel for $pin in $wheels/cuda"
		unzip -q -o -j "$w" 'nvidia/*/lib/*.so*' -d "$dest/lib"
	done
	missing="$(ldd "$dest/lib/libtorch_cuda.so" | grep 'not found' || true)"
	[[ -z "$missing" ]] || die "$dest/lib/libtorch_cuda.so still has unresolved libraries: $missing"
	printf '%s' "$want" >"$marker"
	log "installed the CUDA libraries in $dest/lib"
}

install_cpu
if [[ "${CUDA:-0}" == 1 ]]; then
	install_cuda
fi
