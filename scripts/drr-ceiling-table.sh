#!/usr/bin/env bash
# The DRR placement-ceiling table (docs/drr.md, docs/results/2026-12-06-drr-placement-ceiling.md):
# on 64-node seeded sub-clusters of the openb cluster under DRR's periodic trigger, 8 h of
# arrivals with the first 4 h unmeasured, held-out seeds 101-103, loads 0.7 and 0.9: FGD, bestfit
# and the clairvoyant lookahead placer without rescheduling, and FGD with the zero-cost repack
# oracle. The runs are scripts/drr-headroom-table.sh's (runs already in OUTDIR are kept);
# PODS, LOADS, SEEDS and LOOKAHEAD (the lookahead:K,H placers) narrow or widen it.
# Usage: scripts/drr-ceiling-table.sh [BIN] [OUTDIR]
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-runs/drr-ceiling}
export PODS=${PODS:-default} LOADS=${LOADS:-"0.7 0.9"} SEEDS=${SEEDS:-"101 102 103"}
PLACERS="fgd bestfit ${LOOKAHEAD:-lookahead:4,900 lookahead:8,1800}" METHODS=none scripts/drr-headroom-table.sh "$bin" "$out" > /dev/null
PLACERS=fgd METHODS=oracle scripts/drr-headroom-table.sh "$bin" "$out" > /dev/null
python3 scripts/drr-ceiling-table.py "$out"
