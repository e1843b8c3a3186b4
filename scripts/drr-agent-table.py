"""The DRR acceptance table from scripts/drr-agent-table.sh's runs: per pod list and load, the
time-averaged fragmentation rate of FGD without rescheduling, of the best baseline method (FGD
placer, the lowest seed mean among the methods the folder has runs of), of the zero-cost oracle and of each DRR agent, the agent's paired
differences (95% Student's t half-widths over the seeds), the ratio to FGD-none (the bar: at most
0.5), the share of the FGD-to-oracle gap it closes, and its QoS beside FGD-none's."""
import sys
from drr_runs import load, mean, interval

METHODS = ["greedy", "cos-sim", "frag-one-pod", "frag-multi-pod", "high-node-utilization", "make-room"]


def paired(a, b, key, seeds):
    return interval([a[s][key] - b[s][key] for s in seeds])


def fmt(mh, d=2):
    m, h = mh
    return f"{m:+.{d}f} ± {h:.{d}f}"


def main(folder):
    runs = load(folder)
    rates, qos = [], []
    for (pods, ld) in sorted(runs):
        r = runs[(pods, ld)]
        none = r.get(("fgd", "none"))
        if not none:
            continue
        agents = sorted(p for (p, m) in r if m == "drr")
        for label in agents:
            ag = r[(label, "drr")]
            seeds = sorted(set(ag) & set(none) & set(r.get(("fgd", "oracle"), {})))
            methods = [m for m in METHODS if ("fgd", m) in r]  # the methods this folder ran
            seeds = [s for s in seeds if all(s in r[("fgd", m)] for m in methods)]
            if not seeds or not methods:
                continue
            rate = lambda runs_: mean([runs_[s]["frag_ratio_mean_pct"] for s in seeds])
            best = min(methods, key=lambda m: rate(r[("fgd", m)]))
            b, o = r[("fgd", best)], r[("fgd", "oracle")]
            n_rate, a_rate, o_rate = rate(none), rate(ag), rate(o)
            gap = n_rate - o_rate
            share = f"{(n_rate - a_rate) / gap:.2f}" if gap > 0.05 else "– (no gap)"
            rates.append(f"| {pods} | {ld} | {label} | {len(seeds)} | {n_rate:.2f} | {best} {rate(b):.2f} | {o_rate:.2f} | "
                         f"{a_rate:.2f} | {a_rate / n_rate:.3f} | {fmt(paired(ag, none, 'frag_ratio_mean_pct', seeds))} | "
                         f"{fmt(paired(ag, b, 'frag_ratio_mean_pct', seeds))} | {share} |")
            mig = lambda x: mean([x[s]["migrations"] for s in seeds])
            burst = lambda x: mean([x[s]["burst_queue_delay"]["mean_s"] for s in seeds])
            qos.append(f"| {pods} | {ld} | {label} | {fmt(paired(ag, none, 'gpu_queue_delay_mean_s', seeds), 1)} | "
                       f"{fmt(paired(ag, none, 'whole_gpu_queue_delay_mean_s', seeds), 1)} | "
                       f"{fmt(paired(ag, none, 'completion_mean_s', seeds), 1)} | "
                       f"{fmt(paired(ag, none, 'alloc_gpu_mean_pct', seeds))} | "
                       f"{mig(ag):.1f} vs {mig(b):.1f} | "
                       f"{mean([ag[s]['free_gpus_mean'] for s in seeds]):.1f} vs {mean([none[s]['free_gpus_mean'] for s in seeds]):.1f} | "
                       f"{burst(ag):.0f} vs {burst(none):.0f} |")
    print("Fragmentation rate (time average over the measured window, %); differences paired by seed, 95% intervals:\n")
    print("| pods | load | agent | seeds | FGD-none | best baseline | oracle | agent | agent / none | agent − none | agent − best | share of FGD→oracle gap |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rates))
    print("\nQoS and readiness, agent − FGD-none (paired, 95%); migrations agent vs the best baseline; free whole GPUs and the burst's mean wait (s), agent vs FGD-none:\n")
    print("| pods | load | agent | GPU delay s | whole-GPU delay s | JCT s | alloc pp | migrations | free GPUs | burst wait s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(qos))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/drr-agent")
