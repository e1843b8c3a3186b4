"""The DRR placement-ceiling table (docs/results/2026-12-06-drr-placement-ceiling.md): from the
JSON runs of scripts/drr-ceiling-table.sh, per setting (pods, load) and placer x method the seed
means of the time-averaged fragmentation rate and QoS, then each run paired (seed by seed) with
FGD without rescheduling: the rate's difference with its 95% t interval, the ratio of the seed
means, and how much of the issue's bar (half of FGD's rate) the cut reaches."""
import sys

from drr_runs import interval, load, mean

runs = load(sys.argv[1])

def order(pm):
    placer, method = pm
    return ({"fgd": 0, "bestfit": 1}.get(placer, 2), method != "none", placer)

cols = [("frag %", lambda r: r["frag_ratio_mean_pct"], 2), ("frag GPUs", lambda r: r["frag_gpu_mean"], 2),
        ("alloc %", lambda r: r["alloc_gpu_mean_pct"], 2), ("GPU delay mean s", lambda r: r["gpu_queue_delay_mean_s"], 1),
        ("GPU delay p95 s", lambda r: r["gpu_queue_delay_p95_s"], 1), ("whole-GPU mean s", lambda r: r["whole_gpu_queue_delay_mean_s"], 1),
        ("whole-GPU p95 s", lambda r: r["whole_gpu_queue_delay_p95_s"], 1),
        ("multi-GPU mean s", lambda r: r["queue_delay_by_kind"].get("multi-gpu", {}).get("mean_s", 0.0), 1), ("JCT s", lambda r: r["completion_mean_s"], 0),
        ("migr.", lambda r: r["migrations"], 1), ("free 8-GPU nodes", lambda r: r["free_8gpu_nodes_mean"], 2),
        ("burst wait s", lambda r: (r.get("burst_queue_delay") or {}).get("mean_s", 0.0), 0), ("s/run", lambda r: r["wall_seconds"], 1)]
print("| pods | load | placer | method | seeds | " + " | ".join(c[0] for c in cols) + " |")
print("|" + "---|" * (5 + len(cols)))
for (pods, load), by in sorted(runs.items()):
    for pm in sorted(by, key=order):
        rs = list(by[pm].values())
        print(f"| {pods} | {load} | {pm[0]} | {pm[1]} | {len(rs)} | " + " | ".join(f"{mean([f(r) for r in rs]):.{d}f}" for _, f, d in cols) + " |")
print()
print("Paired with FGD without rescheduling, seed by seed (mean ± 95% half-width): the rate's difference in percentage points, the ratio of the seed means, the share of the issue's bar (a cut of half FGD's rate) it reaches; the fragment in GPUs (the rate's numerator) likewise; the allocation's difference (a lower allocation is more idle capacity, the rate's denominator), the GPU queueing delay's and the burst's wait's:")
print()
print("| pods | load | placer | method | seeds | frag Δ pp | frag / FGD | share of the −50% bar | frag GPUs Δ | frag GPUs / FGD | alloc Δ pp | GPU delay Δ s | burst wait Δ s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    ref = by.get(("fgd", "none"))
    if not ref: continue
    for pm in sorted(by, key=order):
        if pm == ("fgd", "none"): continue
        seeds = sorted(set(by[pm]) & set(ref))
        if not seeds: continue
        fr = interval([by[pm][s]["frag_ratio_mean_pct"] - ref[s]["frag_ratio_mean_pct"] for s in seeds])
        base = mean([ref[s]["frag_ratio_mean_pct"] for s in seeds])
        ratio = mean([by[pm][s]["frag_ratio_mean_pct"] for s in seeds]) / base
        def diff(f): return interval([f(by[pm][s]) - f(ref[s]) for s in seeds])
        fg = diff(lambda r: r["frag_gpu_mean"])
        fg_ratio = mean([by[pm][s]["frag_gpu_mean"] for s in seeds]) / mean([ref[s]["frag_gpu_mean"] for s in seeds])
        al = diff(lambda r: r["alloc_gpu_mean_pct"])
        dl = diff(lambda r: r["gpu_queue_delay_mean_s"])
        bw = diff(lambda r: (r.get("burst_queue_delay") or {}).get("mean_s", 0.0))
        print(f"| {pods} | {load} | {pm[0]} | {pm[1]} | {len(seeds)} | {fr[0]:+.2f} ± {fr[1]:.2f} | {ratio:.3f} | {100 * -fr[0] / (base / 2):.0f}% | "
              f"{fg[0]:+.2f} ± {fg[1]:.2f} | {fg_ratio:.3f} | {al[0]:+.2f} ± {al[1]:.2f} | {dl[0]:+.1f} ± {dl[1]:.1f} | {bw[0]:+.0f} ± {bw[1]:.0f} |")
