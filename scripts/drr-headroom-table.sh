#!/usr/bin/env bash
# The DRR headroom table (docs/drr.md): on 64-node seeded sub-clusters (--sample-nodes 64) of the
# openb cluster, DRR's periodic trigger (every 3,600 s, 5 migrations an hour per 64 nodes, off
# nodes under 0.5 GPU allocation), every placer x rescheduling method, the zero-cost repack oracle
# at each check (oracle) and every minute (oracle60), held-out seeds 101-105, offered loads 0.7,
# 0.9, 1.0, 8 h of arrivals with the first 4 h unmeasured, a burst of 4 8-GPU jobs per run.
# PODS, LOADS, SEEDS, PLACERS, METHODS, NODES (sample size; 0 the whole cluster) narrow it; runs
# already in OUTDIR are kept.
# Usage: [PLACERS="fgd"] [METHODS="none oracle"] scripts/drr-headroom-table.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/drr-headroom}
mkdir -p "$out"
pods=${PODS:-"default gpushare40 gpushare80"}
loads=${LOADS:-"0.7 0.9 1.0"}
seeds=${SEEDS:-"101 102 103 104 105"}
placers=${PLACERS:-"fgd"}
methods=${METHODS:-"none greedy cos-sim frag-one-pod frag-multi-pod high-node-utilization make-room oracle oracle60"}
export NODES=${NODES:-64}
for p in $pods; do for l in $loads; do for s in $seeds; do for pl in $placers; do for m in $methods; do
  echo "$p $l $s $pl $m"
done; done; done; done; done | xargs -P 2 -L 1 bash -c '
  f="'"$out"'/$0_$1_$2_$3_$4.json"
  case "$4" in oracle60) how="--method oracle --every 60";; *) how="--method $4";; esac
  [ -s "$f" ] || { nice -n 10 "'"$bin"'" defrag online --pods "data/openb/openb_pod_list_$0.csv" --load "$1" --seed "$2" \
    --placer "$3" $how --trigger periodic --sample-nodes "$NODES" --burst $(( NODES > 0 ? 4 : 76 )) \
    --duration 28800 --warmup 14400 --json > "$f.tmp" && mv "$f.tmp" "$f"; }'
python3 scripts/drr-headroom-table.py "$out"
