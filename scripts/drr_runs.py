"""The runs scripts/drr-*-table.sh make (one JSON each, named PODS_LOAD_SEED_PLACER_METHOD.json)
and the statistics their tables print: means and 95% Student's t half-widths over seeds."""
import glob, json, math, os
from collections import defaultdict

T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}


def load(folder):
    """(pods, load) -> (placer, method) -> seed -> the run's JSON."""
    runs = defaultdict(dict)
    for f in sorted(glob.glob(os.path.join(folder, "*.json"))):
        pods, load, seed, placer, method = os.path.basename(f)[:-5].split("_")
        runs[(pods, load)].setdefault((placer, method), {})[seed] = json.load(open(f))
    return runs


def mean(x): return sum(x) / len(x)


def interval(d):
    """The mean and its 95% half-width (nan for one value)."""
    m = mean(d)
    if len(d) < 2: return m, float("nan")
    sd = math.sqrt(sum((v - m) ** 2 for v in d) / (len(d) - 1))
    return m, T975[len(d) - 1] * sd / math.sqrt(len(d))
