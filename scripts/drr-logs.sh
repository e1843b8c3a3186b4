#!/usr/bin/env bash
# DRR's behaviour-cloning logs (docs/drr.md, "The agent"): FGD's decisions in the openb timed
# world (Poisson arrivals at offered loads 0.5-1.0, 8 h, backfill, 4 h run-time cap) on 64-node
# sub-clusters of the openb cluster, one version-2 decision log per pod list, load and training
# seed (1001-1999: never the held-out 101-110). A seed's sub-cluster is drawn by Python's
# random.Random(seed), not online.SubCluster's stream: training clusters need only differ from
# the held-out ones. PODS, LOADS, SEEDS narrow or widen it; logs already in OUTDIR are kept.
# Usage: scripts/drr-logs.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/drr/logs}
pods=${PODS:-"default gpushare40 gpushare80"}
loads=${LOADS:-"0.5 0.6 0.7 0.8 0.9 1.0"}
seeds=${SEEDS:-"1001 1002"}
mkdir -p "$out/nodes"
for s in $seeds; do
  case $s in 1[0-9][0-9][0-9]) ;; *) echo "schedrl: drr-logs: seed $s: training seeds are 1000-1999" >&2; exit 2;; esac
  [ -s "$out/nodes/nodes-$s.csv" ] || python3 - "$s" "$out/nodes/nodes-$s.csv" <<'PY'
import os, random, sys
seed, dst = int(sys.argv[1]), sys.argv[2]
rows = open('data/openb/openb_node_list_gpu_node.csv').read().splitlines()
idx = sorted(random.Random(seed).sample(range(1, len(rows)), 64))
with open(dst + '.tmp', 'w') as f:
    f.write('\n'.join([rows[0]] + [rows[i] for i in idx]) + '\n')
os.rename(dst + '.tmp', dst)
PY
done
for p in $pods; do for l in $loads; do for s in $seeds; do
  f="$out/$p-load$l-seed$s.jsonl"
  [ -s "$f" ] || nice -n 10 "$bin" jobs openb --trace "data/openb/openb_pod_list_$p.csv" --nodes "$out/nodes/nodes-$s.csv" \
    --load "$l" --seed "$s" --duration 28800 --warmup 14400 --placer fgd --log "$f" --json > /dev/null
done; done; done
ls "$out"/*.jsonl | wc -l
