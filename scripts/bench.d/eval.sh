#!/usr/bin/env bash
# Times the evaluation acceptance run: the six heuristics (plus any EXTRA_POLICIES, e.g.
# "ckpt:runs/bc,ckpt:runs/ppo") on the four openb traces x held-out seeds 49..53, tune 1.3,
# and prints the wall time and the FGD/BestFit fidelity against the paper from metrics.json.
#   bash scripts/bench.d/eval.sh            OUT=dir to keep the report (default: a temp dir)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
make --no-print-directory build >&2
bin=bin/schedrl
out="${OUT:-$(mktemp -d)/eval}"
policies="random,dotprod,clustering,packing,bestfit,fgd${EXTRA_POLICIES:+,$EXTRA_POLICIES}"
start=$(date +%s.%N)
"$bin" eval --policies "$policies" --traces default,gpushare40,multigpu20,cpu050 --seeds 49-53 \
	--tune 1.3 --out "$out" --force 2>"$out.log" || { cat "$out.log" >&2; exit 1; }
end=$(date +%s.%N)
printf 'eval: %s on 4 traces x 5 seeds: %.1f s wall on %s CPUs (report: %s/report.html)\n' \
	"$policies" "$(echo "$end - $start" | bc)" "$(nproc)" "$out"
python3 - "$out/metrics.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(f"{'policy':<12} {'trace':<11} {'@100':>7} {'paper':>7} {'@130':>7} {'paper':>7} {'d@130':>6}")
for r in m["results"]:
    p = r.get("paper") or {}
    a100, a130 = r["alloc_gpu_pct_100"]["mean"], r["alloc_gpu_pct_130"]["mean"]
    line = f"{r['policy']:<12} {r['trace']:<11} {a100:7.2f} {p.get('alloc_gpu_pct_100', float('nan')):7.2f} {a130:7.2f} {p.get('alloc_gpu_pct_130', float('nan')):7.2f}"
    if p:
        line += f" {a130 - p['alloc_gpu_pct_130']:+6.2f}"
    print(line)
PY
