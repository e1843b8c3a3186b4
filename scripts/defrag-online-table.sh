#!/usr/bin/env bash
# Runs every online defragmentation method on the held-out timelines (offered loads 0.9 and 1.1,
# pod lists default and gpushare60, seeds 101-103) and prints the table of docs/defrag-online.md.
# With MODEL=CKPT|MODEL@ALIAS the trained agent runs too, as method "agent" (--model).
# METHODS="..." runs only those (the others' runs already in OUTDIR are kept and tabled);
# LOADS="1.0 1.05" runs other offered loads (default "0.9 1.1", the acceptance's).
# Usage: [MODEL=runs/defrag-online-ppo] [METHODS="make-room agent"] [LOADS="0.9 1.1"] scripts/defrag-online-table.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/defrag-online}
mkdir -p "$out"
methods=${METHODS:-"none greedy cos-sim frag-one-pod frag-multi-pod high-node-utilization make-room${MODEL:+ agent}"}
export MODEL=${MODEL:-}
loads=${LOADS:-"0.9 1.1"}
for pods in default gpushare60; do for load in $loads; do for seed in 101 102 103; do for m in $methods; do
  echo "$pods $load $seed $m"
done; done; done; done | xargs -P 2 -L 1 bash -c '
  f="'"$out"'/$0-$1-$2-$3.json"
  if [ "$3" = agent ]; then how="--model $MODEL"; else how="--method $3"; fi
  [ -s "$f" ] || { nice "'"$bin"'" defrag online --pods "data/openb/openb_pod_list_$0.csv" --load "$1" --seed "$2" \
    $how --duration 28800 --warmup 14400 --json > "$f.tmp" && mv "$f.tmp" "$f"; }'
python3 scripts/defrag-online-table.py "$out"
