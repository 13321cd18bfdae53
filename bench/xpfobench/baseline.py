"""bench-check: the xpfo/glibc ratios of a quick run against a baseline."""

import json
import os

from . import log
from .summary import geomean, ratio

def ratios_for_baseline(data, benches=None):
    """xpfo/glibc ratios that bench-check guards: time and peak RSS of every
    workload and program, the single-threaded micro benchmarks (the
    multi-threaded ones hand off between spinning threads and move too much
    on a shared machine), and the geometric means (of time and RSS over
    `benches` only when given: a benchmark added to the suite since the
    baseline must not move the geomean it is compared with)."""
    out = {}
    s = data["summary"]
    for kind in ("time", "rss", "micro"):
        for b, row in s[kind].items():
            if kind == "micro" and "/real_time" in b:
                continue
            for a in row:
                if a.startswith("xpfo"):
                    r = ratio(row.get(a), row.get("glibc"))
                    if r:
                        out["%s:%s:%s" % (kind, b, a)] = round(r, 4)
    for k, v in s["geomean"].items():
        kind, a, ref = k.split("/")
        if benches is not None and kind in ("time", "rss"):
            v = geomean([ratio(row.get(a), row.get(ref))
                         for b, row in s[kind].items() if b in benches])
        if a.startswith("xpfo") and ref == "glibc" and v:
            out["geomean:%s:%s" % (kind, a)] = round(v, 4)
    return out


def write_baseline(data, path):
    base = {"what": "xpfo/glibc ratios from one `make bench-quick`-sized run; "
                    "compared by `make bench-check` (warns when > 25% worse)",
            "date": data["machine"]["date"], "load_start": data["load_start"],
            "load_end": data["load_end"], "xpfo": data["machine"]["versions"]["xpfo"],
            "mode": data["mode"], "ratios": ratios_for_baseline(data)}
    with open(path, "w") as f:
        json.dump(base, f, indent=1, sort_keys=True)
        f.write("\n")


def baseline_benches(ratios):
    """The workloads and programs a baseline has time or RSS ratios of."""
    return {k.split(":")[1] for k in ratios if k.split(":")[0] in ("time", "rss")}


def log_new(now, old_ratios):
    """Ratios of this run the baseline lacks (benchmarks or allocators added
    since) are listed, not compared: not an error."""
    new = sorted(k for k in now if k not in old_ratios)
    if new:
        log("bench-check: %d ratios not in the baseline, not compared (refresh it "
            "with `make bench-baseline`): %s" % (len(new), ", ".join(new)))


def check_baseline(data, path, strict):
    try:
        with open(path) as f:
            base = json.load(f)
    except (OSError, ValueError) as e:
        log("bench-check: cannot read baseline %s: %s" % (path, e))
        log("bench-check: create one with `make bench-baseline` and commit it")
        return 2
    old_ratios = base.get("ratios", {})
    now = ratios_for_baseline(data, baseline_benches(old_ratios))
    log_new(now, old_ratios)
    worse, compared = [], 0
    for k, old in sorted(base.get("ratios", {}).items()):
        new = now.get(k)
        if new is None:
            log("bench-check: %s: no value in this run (baseline %.3f)" % (k, old))
            continue
        compared += 1
        if new > old * 1.25:
            worse.append(k)
            log("bench-check: WARNING %s: xpfo/glibc %.3f, baseline %.3f (%+.0f%%)" % (
                k, new, old, 100 * (new / old - 1)))
    log("bench-check: %d ratios compared with %s (baseline %s, load then %s; now %s): "
        "%d more than 25%% worse" % (compared, os.path.basename(path), base.get("date"),
                                      base.get("load_start"), data["load_start"], len(worse)))
    if compared == 0:
        log("bench-check: nothing compared (is xpfo built?)")
    return 1 if strict and worse else 0
