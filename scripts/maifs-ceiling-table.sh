#!/usr/bin/env bash
# The MAIFS headroom table (issue 37; docs/maifs.md, docs/results/2026-12-06-maifs-ceiling.md):
# on the five workloads (300 multi-GPU jobs at lam 1500, 1200, 600, 300 s; 1,000 at lam
# 150 s), 36:36:36 in 8-GPU servers, held-out seeds 101-105: every baseline but
# integrated-greedy (+78% to +141% avg JCT against the best in part 3, and minutes a run) with the
# clairvoyant ceiling oracle-srtf in one eval, the ceiling oracle-lrtf in another, and
# fungible.LowerBound (scripts/maifs-ceiling-bound) with and without sharing; then, per workload
# and metric, the best baseline, how far below it each ceiling runs (paired per seed, 95% t
# interval) and the most any schedule could cut (the bound). An eval already in OUTDIR is kept;
# SEEDS and CLUSTER narrow or change them.
# Usage: scripts/maifs-ceiling-table.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/maifs-ceiling}
seeds=${SEEDS:-101-105}
cluster=${CLUSTER:-36:36:36}
workloads=(jobs=300,lam=1500,multigpu jobs=300,lam=1200,multigpu jobs=300,lam=600,multigpu
  jobs=300,lam=300,multigpu jobs=1000,lam=150,multigpu)
policies=synergy-tune/srtf,synergy-tune/fifo,synergy-tune/tiresias-las,tune-scale/srtf,tune-scale/fifo,tune-scale/tiresias-las
policies+=,max_min_fairness_perf,max_min_fairness,gandiva/fifo,sia,oracle-srtf
generate=()
for w in "${workloads[@]}"; do generate+=(--generate "$w"); done
mkdir -p "$out"
evaluate() { # policies, folder
  if [[ ! -f $out/$2/metrics.json ]]; then
    nice "$bin" eval --timed fungible --servers-gpus 8 --cluster "$cluster" --set device.name=cpu --set device.threads=1 \
      --policies "$1" --baseline "${1%%,*}" "${generate[@]}" --seeds "$seeds" --parallelism 1 --out "$out/$2" >&2
  fi
}
evaluate "$policies" eval
evaluate oracle-lrtf eval-lrtf
CGO_ENABLED=0 go run ./scripts/maifs-ceiling-bound --cluster "$cluster" --seeds "$seeds" "${workloads[@]}" > "$out/bound.jsonl.tmp"
mv "$out/bound.jsonl.tmp" "$out/bound.jsonl"
CGO_ENABLED=0 go run ./scripts/maifs-ceiling-bound --no-sharing --cluster "$cluster" --seeds "$seeds" "${workloads[@]}" > "$out/bound-no-sharing.jsonl.tmp"
mv "$out/bound-no-sharing.jsonl.tmp" "$out/bound-no-sharing.jsonl"
python3 scripts/maifs-ceiling-table.py "$out"
