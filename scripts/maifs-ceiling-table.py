"""The MAIFS headroom table (docs/results/2026-12-06-maifs-ceiling.md): from the evals and the
bounds scripts/maifs-ceiling-table.sh writes in OUTDIR, per workload and metric (avg JCT,
makespan): the best baseline (lowest seed mean), the issue's goal (20% below it), the clairvoyant
ceilings oracle-srtf and oracle-lrtf and the lower bound (with sharing: no schedule goes below it;
without: none that keeps one job per GPU), each paired with the best baseline seed by seed (mean
Δ in % of the baseline's mean, 95% Student's t interval), and the verdict: whether a ceiling
reaches the goal, or the bound shows that no schedule can. Then each ceiling on both metrics at
once (the issue's goal asks one policy for both), and every policy's seed means."""
import glob, json, math, os, sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
CEILINGS = ["oracle-srtf", "oracle-lrtf"]
METRICS = [("avg JCT", "avg_jct_s"), ("makespan", "makespan_s")]
out = sys.argv[1]


def mean(x): return sum(x) / len(x)


def interval(d):
    m = mean(d)
    if len(d) < 2: return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1))
    return m, T975[len(d) - 1] * sd / math.sqrt(len(d))


runs = defaultdict(dict)  # workload -> policy -> seed -> per-seed metrics
for f in sorted(glob.glob(os.path.join(out, "eval*", "metrics.json"))):
    for r in json.load(open(f))["results"]:
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


def seedmean(wl, pol, key): return mean([r[key] for r in runs[wl][pol].values()]) / 3600


workloads = sorted(runs, key=lambda w: (int(w.split(",")[0][5:]), -float(w.split(",")[1][4:])))
best = {}
print("| workload | metric | best baseline | its mean (h) | goal −20% (h) | oracle-srtf (h) | vs best | oracle-lrtf (h) | vs best | bound (h) | vs best | bound, no sharing (h) | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for wl in workloads:
    baselines = [p for p in runs[wl] if p not in CEILINGS and not p.startswith("bound")]
    for label, key in METRICS:
        b = best[wl, key] = min(baselines, key=lambda p: seedmean(wl, p, key))
        bm, lm = seedmean(wl, b, key), seedmean(wl, "bound", key)
        cells = []
        for c in CEILINGS + ["bound"]:
            d, h, _ = delta(wl, c, b, key)
            cells.append(f"{seedmean(wl, c, key):.2f} | {fmt(d, h)}")
        if lm > 0.8 * bm:
            verdict = f"no schedule can: at most {100 * (1 - lm / bm):.1f}% below"
        elif min(seedmean(wl, c, key) for c in CEILINGS) <= 0.8 * bm:
            verdict = "a ceiling reaches it"
        else:
            verdict = "open: no ceiling reaches it, the bound does not exclude it"
        print(f"| {wl} | {label} | {b} | {bm:.2f} | {0.8 * bm:.2f} | " + " | ".join(cells) + f" | {seedmean(wl, 'bound, no sharing', key):.2f} | {verdict} |")
print()
print("Each ceiling on both metrics against the best baseline of each (Δ avg JCT, Δ makespan):")
print()
print("| workload | " + " | ".join(CEILINGS) + " |")
print("|---|" + "---|" * len(CEILINGS))
for wl in workloads:
    cells = []
    for c in CEILINGS:
        dj, hj, _ = delta(wl, c, best[wl, "avg_jct_s"], "avg_jct_s")
        dm, hm, _ = delta(wl, c, best[wl, "makespan_s"], "makespan_s")
        cells.append(f"{fmt(dj, hj)}, {fmt(dm, hm)}")
    print(f"| {wl} | " + " | ".join(cells) + " |")
print()
print("Every policy's seed means (h), avg JCT / makespan:")
print()
pols = [p for p in runs[workloads[0]] if not p.startswith("bound")]
pols.sort(key=lambda p: (p in CEILINGS, p))
print("| policy | " + " | ".join(workloads) + " |")
print("|---|" + "---|" * len(workloads))
for p in pols + ["bound", "bound, no sharing"]:
    cells = [f"{seedmean(wl, p, 'avg_jct_s'):.2f} / {seedmean(wl, p, 'makespan_s'):.1f}" for wl in workloads]
    print(f"| {p} | " + " | ".join(cells) + " |")
print()
print("The bound against the best baseline seed by seed (the most any schedule could cut there):")
print()
print("| workload | metric | best baseline | " + " | ".join(f"seed {s}" for s in sorted(runs[workloads[0]]["bound"])) + " |")
print("|---|---|---|" + "---|" * len(runs[workloads[0]]["bound"]))
for wl in workloads:
    for label, key in METRICS:
        b = best[wl, key]
        cells = [f"{100 * (runs[wl]['bound'][s][key] / runs[wl][b][s][key] - 1):+.1f}%" for s in sorted(runs[wl]["bound"])]
        print(f"| {wl} | {label} | {b} | " + " | ".join(cells) + " |")
