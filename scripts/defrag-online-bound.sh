#!/usr/bin/env bash
# The bound of docs/results/2026-12-04-defrag-online-bound.md: on the held-out timelines (seeds
# 101-103, pod lists default and gpushare60) at offered loads 0.9-1.1, the whole-GPU queueing
# delay without defragmentation (none), with make-room idealised (no downtime, checked every
# minute whatever the head waited, budget and hourly cap unbounded; at load 0.9, and at 0.95 and
# 1.0 on default only: a run takes 5-7 minutes there, and at 1.0 it queued longer than none) and on the pooled cluster
# (--pooled: a task starts whenever the cluster's free GPUs suffice), 8 h with 4 h unmeasured.
# Usage: scripts/defrag-online-bound.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/defrag-online-bound}
mkdir -p "$out"
for pods in default gpushare60; do for load in 0.9 0.95 1.0 1.05 1.1; do for seed in 101 102 103; do
  for m in pooled none; do echo "$pods $load $seed $m"; done
  case $pods-$load in *-0.9|default-0.95|default-1.0) echo "$pods $load $seed make-room-ideal" ;; esac
done; done; done | xargs -P 2 -L 1 bash -c '
  f="'"$out"'/$0-$1-$2-$3.json"
  case $3 in
    pooled) args="--pooled" ;;
    none) args="--method none" ;;
    make-room-ideal) args="--method make-room --every 60 --head-wait 0 --budget 1000 --cap-per-hour 1000000 --downtime-base 0 --downtime-per-gpu 0" ;;
  esac
  [ -s "$f" ] || nice "'"$bin"'" defrag online --pods "data/openb/openb_pod_list_$0.csv" --load "$1" --seed "$2" \
    $args --duration 28800 --warmup 14400 --json > "$f.tmp" && mv "$f.tmp" "$f"'
python3 scripts/defrag-online-bound.py "$out"
