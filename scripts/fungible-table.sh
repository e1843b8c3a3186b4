#!/usr/bin/env bash
# The MAIFS part-1 acceptance table (docs/fungible.md): every baseline x three workloads on a
# 36:36:36 cluster of 8-GPU servers, five seeds, mean ± 95% t-interval of avg JCT, p95 JCT,
# makespan and utilization. Usage: scripts/fungible-table.sh [bin/schedrl] [out-dir]
# The Gavel trace has no seed (the fungible world draws nothing for it): it runs once.
set -euo pipefail
bin=${1:-bin/schedrl}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
seeds=(0 1 2 3 4)
trace=data/gavel/reference/gen-36x3-lam1200-seed0.trace
# name|flags: every baseline in the fungible world (8-GPU servers with 3 CPUs and 62.5 GB per GPU).
policies=(
  "fifo|--servers-gpus 8 --policy fifo"
  "sjf|--servers-gpus 8 --policy sjf"
  "srtf|--servers-gpus 8 --policy srtf"
  "tiresias-las|--servers-gpus 8 --policy tiresias-las"
  "max_min_fairness|--servers-gpus 8 --policy max_min_fairness"
  "max_min_fairness_perf|--servers-gpus 8 --policy max_min_fairness_perf"
  "max_min_fairness_packed|--servers-gpus 8 --policy max_min_fairness_packed"
  "synergy-tune (fifo)|--servers-gpus 8 --policy synergy-tune --order fifo"
  "synergy-tune (las)|--servers-gpus 8 --policy synergy-tune --order tiresias-las"
  "synergy-tune (srtf)|--servers-gpus 8 --policy synergy-tune --order srtf"
  "gandiva|--servers-gpus 8 --policy gandiva"
  "integrated-greedy|--servers-gpus 8 --policy integrated-greedy"
)
workloads=(
  "gavel gen-36x3-lam1200-seed0 (707 1-GPU jobs)|--trace $trace"
  "generated 1000 multi-GPU jobs, lam 3600 s (light)|--generate jobs=1000,lam=3600,multigpu"
  "generated 1000 multi-GPU jobs, lam 1200 s (near saturation)|--generate jobs=1000,lam=1200,multigpu"
)
raw=$out/runs.jsonl
: >"$raw"
for w in "${workloads[@]}"; do
  wname=${w%%|*} wflags=${w#*|}
  for p in "${policies[@]}"; do
    pname=${p%%|*} pflags=${p#*|}
    runs=("${seeds[@]}")
    if [[ $wflags == --trace* ]]; then runs=(0); fi
    for s in "${runs[@]}"; do
      # shellcheck disable=SC2086 # flags are word lists
      nice "$bin" jobs fungible --cluster 36:36:36 --round 360 --seed "$s" $wflags $pflags --json |
        jq -c --arg w "$wname" --arg p "$pname" --argjson s "$s" \
          '{workload: $w, policy: $p, seed: $s, avg: .avg_jct_s, p95: ([.jct_s[]] | sort | .[(length * 0.95 | ceil) - 1]), makespan: .makespan_s, util: .utilization, wall: .wall_seconds}' >>"$raw"
    done
  done
done
# p95 from each run's per-job JCTs (both worlds' summaries list them): the empirical quantile,
# the ceil(0.95 n)-th smallest. Mean ± t(0.975, n-1) * sd / sqrt(n).
jq -r '[.workload, .policy, .avg, .p95, .makespan, .util, .wall] | @tsv' "$raw" | awk -F'\t' '
BEGIN { split("12.706 4.303 3.182 2.776 2.571 2.447 2.365 2.306 2.262", t, " ") }
{ k = $1 "\t" $2; if (!(k in n)) order[++m] = k; n[k]++
  for (i = 3; i <= 7; i++) { s[k, i] += $i; q[k, i] += $i * $i } }
function ci(k, i, scale,   mu, v) {
  mu = s[k, i] / n[k]; v = n[k] > 1 ? (q[k, i] - n[k] * mu * mu) / (n[k] - 1) : 0
  if (v < 0) v = 0
  return sprintf("%.2f ± %.2f", mu / scale, (n[k] > 1 ? t[n[k] - 1] * sqrt(v / n[k]) : 0) / scale)
}
END {
  print "| workload | policy | runs | avg JCT (h) | p95 JCT (h) | makespan (h) | utilization | wall (s/run) |"
  print "|---|---|---|---|---|---|---|---|"
  for (j = 1; j <= m; j++) { k = order[j]; split(k, f, "\t")
    printf "| %s | %s | %d | %s | %s | %s | %s | %.2f |\n", f[1], f[2], n[k], ci(k, 3, 3600), ci(k, 4, 3600), ci(k, 5, 3600), ci(k, 6, 1), s[k, 7] / n[k] }
}'
echo "raw runs: $raw" >&2
