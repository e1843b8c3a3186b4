"""Aggregates scripts/defrag-online-bound.sh's runs: per setting the seed means of the whole-GPU
and sharing queueing delays of none, make-room-ideal and pooled, and the share of none's
whole-GPU delay that the pooled cluster removes (the most any defragmenter could gain), with the
paired (seed by seed) 95% interval of none minus pooled."""
import glob, json, math, os, sys
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776}
runs = defaultdict(dict)  # (pods, load) -> method -> seed -> json
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    pods, load, seed, method = os.path.basename(f)[:-5].split("-", 3)
    runs[(pods, float(load))].setdefault(method, {})[seed] = json.load(open(f))

def mean(x): return sum(x) / len(x)

def interval(d):
    m = mean(d)
    if len(d) < 2: return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1))
    return m, T975[len(d) - 1] * sd / math.sqrt(len(d))

W = lambda r: r["whole_gpu_queue_delay_mean_s"]
S = lambda r: r["queue_delay_by_kind"]["share"]["mean_s"]
print("| pods | load | seeds | none whole-GPU s | make-room-ideal whole-GPU s | pooled whole-GPU s | none − pooled s (95%) | pooled gain % of none | none sharing s | pooled sharing s | none alloc % | pooled alloc % |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    if "none" not in by or "pooled" not in by: continue
    seeds = sorted(set(by["none"]) & set(by["pooled"]))
    n = [by["none"][s] for s in seeds]; p = [by["pooled"][s] for s in seeds]
    ideal = by.get("make-room-ideal", {})
    mi = f"{mean([W(r) for r in ideal.values()]):.1f}" if ideal else "–"
    d = interval([W(a) - W(b) for a, b in zip(n, p)])
    nw, pw = mean([W(r) for r in n]), mean([W(r) for r in p])
    gain = 100 * (nw - pw) / nw if nw > 0 else 0
    print(f"| {pods} | {load:g} | {len(seeds)} | {nw:.1f} | {mi} | {pw:.1f} | "
          f"{d[0]:+.1f} ± {d[1]:.1f} | {gain:.0f} | {mean([S(r) for r in n]):.1f} | {mean([S(r) for r in p]):.1f} | "
          f"{mean([r['alloc_gpu_mean_pct'] for r in n]):.2f} | {mean([r['alloc_gpu_mean_pct'] for r in p]):.2f} |")
