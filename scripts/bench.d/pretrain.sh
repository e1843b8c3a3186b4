#!/usr/bin/env bash
# Pretrain benchmarks (issue 5): training samples/s of one behaviour-cloning step on 32
# decisions of the 1213-node cluster, gotch (BenchmarkTrainStep) against the same network in
# PyTorch (scripts/bench/torch_reference.py), alternated ROUNDS times for each libtorch thread
# count in THREADS; then checkpoint decision latency p50/p99 over one episode on CPU
# (BenchmarkPlacerDecision, 1 libtorch thread as eval runs it): wall time, and the deciding
# thread's CPU time, which leaves out waiting for a core on a shared machine.
#
# The PyTorch venv (.deps/venv-torch) is installed here, not by `make setup`: the torch 2.1.2
# wheel from .deps/wheels plus, because `import torch` loads libtorch_cuda even on CPU, the
# nvidia-* wheels that torch 2.1.2 pins (cached under .deps/wheels, fetched from PyPI if absent).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
root="$PWD"
eval "$(bash scripts/goenv.sh)"
THREADS="${THREADS:-1 2}"
ROUNDS="${ROUNDS:-3}"
venv="$root/.deps/venv-torch"
wheels="$root/.deps/wheels"
log() { printf '[bench pretrain] %s\n' "$*" >&2; }

# Pinned to what torch 2.1.2 requires (its METADATA), pure-Python deps included.
nvidia=(nvidia-cuda-runtime-cu12==12.1.105 nvidia-cuda-cupti-cu12==12.1.105 nvidia-cuda-nvrtc-cu12==12.1.105
	nvidia-cudnn-cu12==8.9.2.26 nvidia-cublas-cu12==12.1.3.1 nvidia-cufft-cu12==11.0.2.54
	nvidia-curand-cu12==10.3.2.106 nvidia-cusolver-cu12==11.4.5.107 nvidia-cusparse-cu12==12.1.0.106
	nvidia-nccl-cu12==2.18.1 nvidia-nvtx-cu12==12.1.105 nvidia-nvjitlink-cu12==12.1.105)
pure=(filelock==3.13.1 typing-extensions==4.9.0 sympy==1.12 mpmath==1.3.0 networkx==3.2.1 jinja2==3.1.3
	MarkupSafe==2.1.5 fsspec==2023.12.2 numpy==1.26.3)

have_torch() { [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c 'import torch, sys; sys.exit(torch.__version__ != "2.1.2+cu121")' 2>/dev/null; }
if ! have_torch; then
	log "installing torch 2.1.2 into $venv"
	rm -rf "$venv"
	python3 -m venv "$venv"
	torch_wheel="$wheels/torch-2.1.2-cp311-cp311-manylinux1_x86_64.whl"
	[[ -f "$torch_wheel" ]] || python3 -m pip download --no-deps --dest "$wheels" torch==2.1.2
	files=("$torch_wheel")
	for spec in "${nvidia[@]}"; do
		name="${spec%%==*}" version="${spec##*==}"
		f="$(ls "$wheels"/"${name//-/_}-$version"-*.whl "$wheels"/cuda/"${name//-/_}-$version"-*.whl 2>/dev/null | head -n1 || true)"
		if [[ -z "$f" ]]; then
			mkdir -p "$wheels/cuda"
			python3 -m pip download --no-deps --only-binary=:all: --dest "$wheels/cuda" "$spec" >&2
			f="$(ls "$wheels"/cuda/"${name//-/_}-$version"-*.whl | head -n1)"
		fi
		files+=("$f")
	done
	"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "${files[@]}" "${pure[@]}"
	have_torch || { log "error: torch does not import from $venv"; exit 1; }
fi

for threads in $THREADS; do
	for round in $(seq "$ROUNDS"); do
		go test -run '^$' -bench '^BenchmarkTrainStep$' -benchtime 30x ./pretrain/ -args -threads "$threads" |
			awk -v r="$round" -v t="$threads" '/^BenchmarkTrainStep/ { for (i = 1; i <= NF; i++) if ($(i+1) == "samples/s") printf "threads %s round %s gotch   train step: %s samples/s\n", t, r, $i }'
		"$venv/bin/python" -W ignore scripts/bench/torch_reference.py --threads "$threads" --steps 30 2>/dev/null |
			python3 -c 'import json, sys; r = json.load(sys.stdin); print("threads %s round %s pytorch train step: %s samples/s" % (sys.argv[1], sys.argv[2], r["samples_per_s"]))' "$threads" "$round"
	done
done
go test -run '^$' -bench '^BenchmarkPlacerDecision$' -benchtime 1x ./nn/ | grep '^BenchmarkPlacerDecision'
