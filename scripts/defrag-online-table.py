"""Aggregates the JSON runs of scripts/defrag-online-table.sh into the markdown tables of
docs/defrag-online.md: per setting and method the seed means, then the paired (seed by seed)
differences of the whole-GPU mean queueing delay against make-room and none, with 95% t intervals;
with an "agent" run, its paired differences against every baseline, the setting's best (lowest
whole-GPU mean) marked."""
import glob, json, math, os, sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
BASELINES = ["none", "greedy", "cos-sim", "frag-one-pod", "frag-multi-pod", "high-node-utilization", "make-room"]
METHODS = BASELINES + ["agent"]
runs = defaultdict(dict)  # (pods, load) -> method -> seed -> json
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    name = os.path.basename(f)[:-5]
    pods, load, seed, method = name.split("-", 3)
    runs[(pods, load)].setdefault(method, {})[seed] = json.load(open(f))

def mean(x): return sum(x) / len(x)

def interval(d):
    m = mean(d)
    if len(d) < 2: return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1))
    return m, T975[len(d) - 1] * sd / math.sqrt(len(d))

keys = [("gpu_queue_delay_mean_s", "GPU delay mean s"), ("gpu_queue_delay_p95_s", "GPU p95 s"),
        ("whole_gpu_queue_delay_mean_s", "whole-GPU mean s"), ("whole_gpu_queue_delay_p95_s", "whole-GPU p95 s"),
        ("alloc_gpu_mean_pct", "alloc %"), ("migrations", "migrations"), ("downtime_s", "downtime s")]
print("| pods | load | method | seeds | " + " | ".join(k[1] for k in keys) + " |")
print("|" + "---|" * (4 + len(keys)))
for (pods, load), by in sorted(runs.items()):
    for m in METHODS:
        if m not in by: continue
        rs = list(by[m].values())
        print(f"| {pods} | {load} | {m} | {len(rs)} | " + " | ".join(f"{mean([r[k] for r in rs]):.1f}" for k, _ in keys) + " |")
print()
print("Paired differences (method minus reference, seed by seed; mean ± 95% half-width) of the whole-GPU mean queueing delay (s) and of the GPU-sharing mean delay (s):")
print()
print("| pods | load | method | vs | whole-GPU Δ s | sharing Δ s | alloc Δ pp |")
print("|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    for ref in ["make-room", "none"]:
        for m in METHODS:
            if m == ref or m not in by or ref not in by: continue
            seeds = sorted(set(by[m]) & set(by[ref]))
            if not seeds: continue
            def diff(f): return interval([f(by[m][s]) - f(by[ref][s]) for s in seeds])
            w = diff(lambda r: r["whole_gpu_queue_delay_mean_s"])
            sh = diff(lambda r: r["queue_delay_by_kind"]["share"]["mean_s"])
            a = diff(lambda r: r["alloc_gpu_mean_pct"])
            print(f"| {pods} | {load} | {m} | {ref} | {w[0]:+.1f} ± {w[1]:.1f} | {sh[0]:+.1f} ± {sh[1]:.1f} | {a[0]:+.2f} ± {a[1]:.2f} |")

if not any("agent" in by for by in runs.values()):
    sys.exit(0)
print()
print("The agent's paired differences (agent minus baseline, seed by seed; mean ± 95% half-width); * the setting's best baseline (lowest whole-GPU mean):")
print()
print("| pods | load | vs | whole-GPU Δ s | whole-GPU Δ % | sharing Δ s | alloc Δ pp | migrations Δ |")
print("|---|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    if "agent" not in by: continue
    have = [m for m in BASELINES if m in by]
    best = min(have, key=lambda m: mean([r["whole_gpu_queue_delay_mean_s"] for r in by[m].values()]))
    for ref in have:
        seeds = sorted(set(by["agent"]) & set(by[ref]))
        def diff(f): return interval([f(by["agent"][s]) - f(by[ref][s]) for s in seeds])
        w = diff(lambda r: r["whole_gpu_queue_delay_mean_s"])
        base = mean([by[ref][s]["whole_gpu_queue_delay_mean_s"] for s in seeds])
        pct = 100 * w[0] / base if base > 0 else float("nan")
        sh = diff(lambda r: r["queue_delay_by_kind"]["share"]["mean_s"])
        a = diff(lambda r: r["alloc_gpu_mean_pct"])
        mg = diff(lambda r: r["migrations"])
        mark = "*" if ref == best else ""
        print(f"| {pods} | {load} | {ref}{mark} | {w[0]:+.1f} ± {w[1]:.1f} | {pct:+.1f} | {sh[0]:+.1f} ± {sh[1]:.1f} | {a[0]:+.2f} ± {a[1]:.2f} | {mg[0]:+.1f} ± {mg[1]:.1f} |")
