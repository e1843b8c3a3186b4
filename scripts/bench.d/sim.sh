#!/usr/bin/env bash
# Times the whole `schedrl sim` command (FGD, default openb trace, tune 1.3, seed 42, curve and
# decision log written) three times; issue 3 asks for at most 5 s wall on 2 cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
eval "$(bash scripts/goenv.sh)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/schedrl" ./cmd/schedrl
traces=data/openb
for i in 1 2 3; do
	start=$(date +%s.%N)
	"$tmp/schedrl" sim --nodes "$traces/openb_node_list_gpu_node.csv" --pods "$traces/openb_pod_list_default.csv" \
		--policy fgd --tune 1.3 --seed 42 --out "$tmp/curve.csv" --log "$tmp/decisions.jsonl" --json >"$tmp/summary.json"
	end=$(date +%s.%N)
	printf 'sim fgd default seed 42: %.2f s wall (whole command), alloc_gpu_pct %s\n' "$(echo "$end - $start" | bc)" \
		"$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["alloc_gpu_pct"], 2))' "$tmp/summary.json")"
done
