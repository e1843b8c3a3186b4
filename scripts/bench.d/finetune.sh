#!/usr/bin/env bash
# Throughput of PPO fine-tuning on the full 1213-node openb cluster: rollouts (8 env copies,
# batched forward) and updates together, held-out evaluation excluded, in environment
# steps per second. THREADS sets libtorch's intra-op threads (default 1: on two shared cores
# OpenMP's spinning threads cost more than they give; 2 is faster on a quiet machine); UPDATES
# the number of PPO updates (default 66: one whole episode per env copy; early updates see a
# nearly idle cluster and run 3x faster than the average); FROM the checkpoint PPO starts from
# (default runs/pretrain-fgd, the behaviour-cloned FGD of docs/pretrain.md, when it exists,
# else none: a fresh network, whose spread-out placements make every decision ~3x wider).
#   bash scripts/bench.d/finetune.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
make --no-print-directory torch >&2
from="${FROM:-}"
if [[ -z "$from" ]]; then
	from=none
	[[ -f runs/pretrain-fgd/manifest.json ]] && from="$PWD/runs/pretrain-fgd"
fi
echo "finetune: PPO on the 1213-node cluster from $from, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
FINETUNE_BENCH_FROM="$from" FINETUNE_BENCH_THREADS="${THREADS:-1}" GOWORK="$PWD/.deps/go.work" CGO_ENABLED=1 \
	go test ./finetune/ -run '^$' -bench '^BenchmarkPPOFullCluster$' -benchtime "${UPDATES:-66}x" 2>/dev/null |
	grep -E '^Benchmark|env-steps'
