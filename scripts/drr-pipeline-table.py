#!/usr/bin/env python3
"""The drr pipeline's eval table (docs/results/2026-12-06-drr-pipeline.md): each policy's
time-averaged fragmentation rate, GPU and whole-GPU queueing delay, mean JCT and migrations per
held-out timeline, and its paired difference from FGD (95% interval, Student's t over the seeds),
from the eval stage's metrics.json and the roles in pipeline-policies.json.
Usage: scripts/drr-pipeline-table.py EVAL_STAGE_OUT_DIR"""
import json
import math
import os
import statistics
import sys

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 19: 2.093, 29: 2.045}


def paired(xs, ys):
    d = [x - y for x, y in zip(xs, ys)]
    if len(d) < 2:
        return f"{d[0]:+.2f}" if d else "–"
    hw = T975.get(len(d) - 1, 1.96) * statistics.stdev(d) / math.sqrt(len(d))
    return f"{statistics.mean(d):+.2f} ± {hw:.2f}"


def main(out):
    m = json.load(open(os.path.join(out, "metrics.json")))
    roles = json.load(open(os.path.join(out, "pipeline-policies.json")))
    names = {roles["candidate"]: "ppo (candidate)", roles["pretrained"]: "bc (clone)"}
    if roles.get("champion"):
        names[roles["champion"]] = "champion"
    measures = [
        ("rate %", lambda s: s["frag_ratio_mean_pct"]),
        ("GPU delay s", lambda s: s["queue_delay_mean_s"]["gpu"]),
        ("whole-GPU delay s", lambda s: s["queue_delay_mean_s"]["whole-gpu"]),
        ("mean JCT s", lambda s: s["avg_jct_s"]),
    ]
    base = m["baseline"]
    head = ["pods", "policy"]
    for label, _ in measures:
        head += [label, f"− {base} (95%)"]
    print("| " + " | ".join(head + ["migrations / run"]) + " |")
    print("|" + "---|" * (len(head) + 1))
    for r in m["results"]:
        b = next(x for x in m["results"] if x["policy"] == base and x["workload"] == r["workload"])
        row = [r["workload"], names.get(r["policy"], r["policy"])]
        for _, get in measures:
            xs, ys = [get(s) for s in r["per_seed"]], [get(s) for s in b["per_seed"]]
            row += [f"{statistics.mean(xs):.2f}", "–" if r is b else paired(xs, ys)]
        row.append(f"{statistics.mean(s.get('migrations', 0) for s in r['per_seed']):.1f}")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
