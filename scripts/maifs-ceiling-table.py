"""The MAIFS headroom table (docs/results/2026-12-06-maifs-ceiling.md): from the eval and the bounds
scripts/maifs-ceiling-table.sh writes in OUTDIR, per workload and metric (avg JCT, makespan): the
best baseline (lowest seed mean), the issue's goal (20% below it), the clairvoyant ceiling
oracle-srtf and the lower bound (with sharing: no schedule goes below it; without: none that keeps
one job per GPU), each paired with the best baseline seed by seed (mean Δ in % of the baseline's
mean, 95% Student's t interval), and the verdict: whether the ceiling reaches the goal, or the
bound shows that no schedule can. Then every policy's seed means, for reference."""
import json, math, os, sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
CEILING = "oracle-srtf"
METRICS = [("avg JCT", "avg_jct_s"), ("makespan", "makespan_s")]
out = sys.argv[1]


def mean(x): return sum(x) / len(x)


def interval(d):
    m = mean(d)
    if len(d) < 2: return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1))
    return m, T975[len(d) - 1] * sd / math.sqrt(len(d))


runs = defaultdict(dict)  # workload -> policy -> seed -> per-seed metrics
ev = json.load(open(os.path.join(out, "eval", "metrics.json")))
for r in ev["results"]:
    runs[r["workload"]][r["policy"]] = {s["seed"]: s for s in r["per_seed"]}
for name, label in [("bound.jsonl", "bound"), ("bound-no-sharing.jsonl", "bound, no sharing")]:
    for line in open(os.path.join(out, name)):
        b = json.loads(line)
        runs[b["workload"]].setdefault(label, {})[b["seed"]] = b


def delta(wl, pol, ref, key):
    """Δ of pol against ref in % of ref's mean, paired seed by seed, and the seeds."""
    seeds = sorted(set(runs[wl][pol]) & set(runs[wl][ref]))
    base = mean([runs[wl][ref][s][key] for s in seeds])
    m, h = interval([100 * (runs[wl][pol][s][key] - runs[wl][ref][s][key]) / base for s in seeds])
    return m, h, seeds


def fmt(m, h): return f"{m:+.1f}% [{m - h:+.1f}, {m + h:+.1f}]"


workloads = sorted(runs, key=lambda w: (int(w.split(",")[0][5:]), -float(w.split(",")[1][4:])))
print("| workload | metric | best baseline | its mean (h) | goal −20% (h) | oracle-srtf (h) | oracle-srtf vs best | bound (h) | bound vs best | bound, no sharing (h) | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for wl in workloads:
    baselines = [p for p in runs[wl] if p != CEILING and not p.startswith("bound")]
    for label, key in METRICS:
        best = min(baselines, key=lambda p: mean([r[key] for r in runs[wl][p].values()]))
        bm = mean([r[key] for r in runs[wl][best].values()]) / 3600
        om = mean([r[key] for r in runs[wl][CEILING].values()]) / 3600
        lm = mean([r[key] for r in runs[wl]["bound"].values()]) / 3600
        nm = mean([r[key] for r in runs[wl]["bound, no sharing"].values()]) / 3600
        od, oh, _ = delta(wl, CEILING, best, key)
        ld, lh, _ = delta(wl, "bound", best, key)
        if lm > 0.8 * bm:
            verdict = f"no schedule can: at most {100 * (1 - lm / bm):.1f}% below"
        elif om <= 0.8 * bm:
            verdict = "the ceiling reaches it"
        else:
            verdict = "open: neither the ceiling reaches it nor the bound excludes it"
        print(f"| {wl} | {label} | {best} | {bm:.2f} | {0.8 * bm:.2f} | {om:.2f} | {fmt(od, oh)} | {lm:.2f} | {fmt(ld, lh)} | {nm:.2f} | {verdict} |")
print()
print("Every policy's seed means (h), avg JCT / makespan:")
print()
pols = [p for p in runs[workloads[0]] if not p.startswith("bound")]
pols.sort(key=lambda p: (p == CEILING, p))
print("| policy | " + " | ".join(workloads) + " |")
print("|---|" + "---|" * len(workloads))
for p in pols + ["bound", "bound, no sharing"]:
    cells = []
    for wl in workloads:
        rs = list(runs[wl][p].values())
        cells.append(f"{mean([r['avg_jct_s'] for r in rs]) / 3600:.2f} / {mean([r['makespan_s'] for r in rs]) / 3600:.1f}")
    print(f"| {p} | " + " | ".join(cells) + " |")
