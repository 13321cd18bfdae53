"""bench-check: the xpfo/glibc ratios of a quick run against a baseline."""

import json
import os

from . import log
from .summary import geomean, ratio

# system time is compared only where glibc's is at least this (seconds):
# below it the clock's ticks (10 ms) and the machine's load are most of the
# figure (glibc's 0.086 s on genchurn moved by +-25% at load 17)
SYS_FLOOR = 0.1
# flush rounds (a count, not a ratio, from one profile run): warn when more
# than ROUNDS_WORSE times and more than ROUNDS_SLACK rounds above the
# baseline.  Thread timing moves them: shortlived made 1,576 to 2,640
# rounds in eight runs of two builds that differ in nothing it uses, genchurn
# 10,321 to 11,739
ROUNDS_WORSE = 1.5
ROUNDS_SLACK = 50

def ratios_for_baseline(data, benches=None):
    """xpfo/glibc ratios that bench-check guards: time, peak RSS, minor page
    faults and system time (where glibc's is at least SYS_FLOOR) of every
    workload and program, the single-threaded micro benchmarks (the
    multi-threaded ones hand off between spinning threads and move too much
    on a shared machine), and the geometric means (of time and RSS over
    `benches` only when given: a benchmark added to the suite since the
    baseline must not move the geomean it is compared with)."""
    out = {}
    s = data["summary"]
    for kind in ("time", "rss", "micro", "faults", "sys"):
        for b, row in s.get(kind, {}).items():
            if kind == "micro" and "/real_time" in b:
                continue
            if kind == "sys" and (row.get("glibc") or 0) < SYS_FLOOR:
                continue
            for a in row:
                if a.startswith("xpfo"):
                    r = ratio(row.get(a), row.get("glibc"))
                    if r:
                        out["%s:%s:%s" % (kind, b, a)] = round(r, 4)
    for k, v in s["geomean"].items():
        kind, a, ref = k.split("/")
        if benches is not None and kind in ("time", "rss", "faults"):
            v = geomean([ratio(row.get(a), row.get(ref))
                         for b, row in s[kind].items() if b in benches.get(kind, ())])
        if a.startswith("xpfo") and ref == "glibc" and v:
            out["geomean:%s:%s" % (kind, a)] = round(v, 4)
    return out


def counts_for_baseline(data):
    """xpfo's flush rounds per benchmark and xpfo mode (profile runs)."""
    out = {}
    for b, row in data["summary"].get("flush_rounds", {}).items():
        for a, v in row.items():
            if a.startswith("xpfo") and v is not None:
                out["flush_rounds:%s:%s" % (b, a)] = v
    return out


def write_baseline(data, path):
    base = {"what": "xpfo/glibc ratios from one `make bench-quick`-sized run; "
                    "compared by `make bench-check` (warns when > 25% worse)",
            "date": data["machine"]["date"], "load_start": data["load_start"],
            "load_end": data["load_end"], "xpfo": data["machine"]["versions"]["xpfo"],
            "mode": data["mode"], "ratios": ratios_for_baseline(data),
            "counts": counts_for_baseline(data)}
    with open(path, "w") as f:
        json.dump(base, f, indent=1, sort_keys=True)
        f.write("\n")


def baseline_benches(ratios):
    """Per kind (time, rss, faults), the workloads and programs a baseline
    has ratios of: the geometric mean of a kind is compared over those."""
    out = {}
    for k in ratios:
        kind, b = k.split(":")[:2]
        if kind in ("time", "rss", "faults"):
            out.setdefault(kind, set()).add(b)
    return out


def log_new(now, old_ratios):
    """Ratios of this run the baseline lacks (benchmarks or allocators added
    since) are listed, not compared: not an error."""
    new = sorted(k for k in now if k not in old_ratios)
    if new:
        log("bench-check: %d ratios not in the baseline, not compared (refresh it "
            "with `make bench-baseline`): %s" % (len(new), ", ".join(new)))


def check_counts(data, base):
    """Flush rounds against the baseline's: the keys more than ROUNDS_WORSE
    times (and ROUNDS_SLACK) above it, each with a WARNING line."""
    old_counts, now = base.get("counts", {}), counts_for_baseline(data)
    new = sorted(k for k in now if k not in old_counts)
    if new:
        log("bench-check: %d counts not in the baseline, not compared: %s" % (
            len(new), ", ".join(new)))
    worse = []
    for k, old in sorted(old_counts.items()):
        v = now.get(k)
        if v is not None and v > old * ROUNDS_WORSE and v - old > ROUNDS_SLACK:
            worse.append(k)
            log("bench-check: WARNING %s: %d, baseline %d (%+.0f%%)" % (
                k, v, old, 100 * (v / old - 1) if old else 100))
    return worse


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
    worse += check_counts(data, base)
    log("bench-check: %d ratios compared with %s (baseline %s, load then %s; now %s): "
        "%d more than 25%% worse" % (compared, os.path.basename(path), base.get("date"),
                                      base.get("load_start"), data["load_start"], len(worse)))
    if compared == 0:
        log("bench-check: nothing compared (is xpfo built?)")
    return 1 if strict and worse else 0
