#!/usr/bin/env bash
# The DRR acceptance table (docs/drr.md, docs/results/2026-12-06-drr-agent.md): on 64-node seeded
# sub-clusters under DRR's periodic trigger and budget, held-out seeds 101-110, loads 0.7, 0.9
# and 1.0, pod lists default, gpushare40 and gpushare80: FGD without rescheduling, every baseline method,
# the zero-cost repack oracle (scripts/drr-headroom-table.sh's runs), and the DRR agents run by
# `defrag online --model` (their placement checkpoint places, greedy reschedules): each MODELS
# entry LABEL=CHECKPOINT; the runs land as PODS_LOAD_SEED_LABEL_drr.json. Runs already in
# OUTDIR are kept. PODS, LOADS, SEEDS, METHODS narrow or widen it; NODES=0 runs the whole cluster.
# Usage: MODELS="bc=runs/drr/bc ppo=runs/drr/ppo" scripts/drr-agent-table.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/drr-agent}
export PODS=${PODS:-"default gpushare40 gpushare80"} LOADS=${LOADS:-"0.7 0.9 1.0"} SEEDS=${SEEDS:-"101 102 103 104 105 106 107 108 109 110"}
export NODES=${NODES:-64}
models=${MODELS:-"bc=runs/drr/bc ppo=runs/drr/ppo"}
PLACERS=fgd METHODS=${METHODS:-"none greedy cos-sim frag-one-pod frag-multi-pod high-node-utilization make-room oracle"} \
  scripts/drr-headroom-table.sh "$bin" "$out" > /dev/null
for p in $PODS; do for l in $LOADS; do for s in $SEEDS; do for m in $models; do
  echo "$p $l $s ${m%%=*} ${m#*=}"
done; done; done; done | xargs -P 2 -L 1 bash -c '
  f="'"$out"'/$0_$1_$2_$3_drr.json"
  [ -s "$f" ] || { nice -n 10 "'"$bin"'" defrag online --pods "data/openb/openb_pod_list_$0.csv" --load "$1" --seed "$2" \
    --model "$4" --trigger periodic --sample-nodes "$NODES" --burst $(( NODES > 0 ? 4 : 76 )) --duration 28800 --warmup 14400 --json 2>/dev/null > "$f.tmp" && mv "$f.tmp" "$f"; }'
python3 scripts/drr-agent-table.py "$out"
