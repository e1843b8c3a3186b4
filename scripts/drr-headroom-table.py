"""Aggregates the JSON runs of scripts/drr-headroom-table.sh into the tables of docs/drr.md: per
setting (pods, load) and placer x method the seed means of the time-averaged fragmentation rate,
QoS and readiness; then the paired (seed by seed) difference of the fragmentation rate against
FGD without rescheduling, with its 95% t interval, and the share of the gap between FGD-none and
the oracle (repack at each check) that each method closes."""
import sys

from drr_runs import interval, load, mean

ORDER = ["none", "greedy", "cos-sim", "frag-one-pod", "frag-multi-pod", "high-node-utilization", "make-room", "oracle", "oracle60"]
runs = load(sys.argv[1])

def kind(r, k): return r["queue_delay_by_kind"].get(k, {}).get("mean_s", 0.0)

def key(pm):
    placer, m = pm
    return (placer != "fgd", placer, ORDER.index(m) if m in ORDER else len(ORDER))

cols = [("frag %", lambda r: r["frag_ratio_mean_pct"], 2), ("frag GPUs", lambda r: r["frag_gpu_mean"], 2), ("alloc %", lambda r: r["alloc_gpu_mean_pct"], 2),
        ("share s", lambda r: kind(r, "share"), 1), ("1-GPU s", lambda r: kind(r, "one-gpu"), 1),
        ("multi s", lambda r: kind(r, "multi-gpu"), 1), ("GPU p95 s", lambda r: r["gpu_queue_delay_p95_s"], 1),
        ("JCT s", lambda r: r["completion_mean_s"], 0), ("migr.", lambda r: r["migrations"], 1),
        ("free GPUs", lambda r: r["free_gpus_mean"], 1), ("free 8-GPU nodes", lambda r: r["free_8gpu_nodes_mean"], 2),
        ("burst wait s", lambda r: (r.get("burst_queue_delay") or {}).get("mean_s", 0.0), 0)]
print("| pods | load | placer | method | seeds | " + " | ".join(c[0] for c in cols) + " |")
print("|" + "---|" * (5 + len(cols)))
for (pods, load), by in sorted(runs.items()):
    for pm in sorted(by, key=key):
        rs = list(by[pm].values())
        print(f"| {pods} | {load} | {pm[0]} | {pm[1]} | {len(rs)} | " + " | ".join(f"{mean([f(r) for r in rs]):.{d}f}" for _, f, d in cols) + " |")
print()
print("Paired against FGD without rescheduling (seed by seed; mean ± 95% half-width): the fragmentation rate's difference (percentage points) and ratio, the share of the FGD-none to oracle gap closed (–: the oracle's own gain has an interval that includes zero, so there is no gap to share), the fragment's difference in GPUs, allocation, whole-GPU queueing and JCT mean differences:")
print()
print("| pods | load | placer | method | frag Δ pp | frag / FGD-none | gap closed | frag GPUs Δ | alloc Δ pp | whole-GPU Δ s | JCT Δ s |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    ref, orc = by.get(("fgd", "none")), by.get(("fgd", "oracle"))
    if not ref: continue
    for pm in sorted(by, key=key):
        if pm == ("fgd", "none"): continue
        seeds = sorted(set(by[pm]) & set(ref))
        if not seeds: continue
        def diff(f): return interval([f(by[pm][s]) - f(ref[s]) for s in seeds])
        fr = diff(lambda r: r["frag_ratio_mean_pct"])
        ratio = mean([by[pm][s]["frag_ratio_mean_pct"] for s in seeds]) / mean([ref[s]["frag_ratio_mean_pct"] for s in seeds])
        gap = "–"
        if orc:
            g = interval([ref[s]["frag_ratio_mean_pct"] - orc[s]["frag_ratio_mean_pct"] for s in seeds if s in orc])
            if g[0] - g[1] > 0: gap = f"{100 * -fr[0] / g[0]:.0f}%"  # only where the oracle's gain excludes zero
        fg = diff(lambda r: r["frag_gpu_mean"])
        al = diff(lambda r: r["alloc_gpu_mean_pct"])
        w = diff(lambda r: r["whole_gpu_queue_delay_mean_s"])
        j = diff(lambda r: r["completion_mean_s"])
        print(f"| {pods} | {load} | {pm[0]} | {pm[1]} | {fr[0]:+.2f} ± {fr[1]:.2f} | {ratio:.3f} | {gap} | {fg[0]:+.2f} ± {fg[1]:.2f} | {al[0]:+.2f} ± {al[1]:.2f} | {w[0]:+.1f} ± {w[1]:.1f} | {j[0]:+.1f} ± {j[1]:.1f} |")

print()
print("Summary per setting (FGD placer; seed means over the seeds every run of the setting has): the fragmentation rate of FGD without rescheduling, of the best baseline method under the periodic trigger and budget, of the oracle at each check and every minute, and the share of FGD-none's rate each removes:")
print()
print("| pods | load | seeds | FGD-none % | best baseline | its % | oracle % | oracle60 % | best / none | oracle / none | oracle60 / none |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (pods, load), by in sorted(runs.items()):
    fg = {m: v for (pl, m), v in by.items() if pl == "fgd"}
    if "none" not in fg: continue
    seeds = sorted(set.intersection(*[set(v) for v in fg.values()]))
    if not seeds: continue
    fr = {m: mean([v[s]["frag_ratio_mean_pct"] for s in seeds]) for m, v in fg.items()}
    base = [m for m in fr if m not in ("none", "oracle", "oracle60")]
    best = min(base, key=fr.get) if base else None
    def pct(m): return f"{fr[m]:.2f}" if m in fr else "–"
    def rel(m): return f"{fr[m] / fr['none']:.3f}" if m in fr else "–"
    print(f"| {pods} | {load} | {len(seeds)} | {fr['none']:.2f} | {best or '–'} | {pct(best)} | {pct('oracle')} | {pct('oracle60')} | {rel(best)} | {rel('oracle')} | {rel('oracle60')} |")
