"""Medians, spreads, ratios and geometric means of a run's data."""

import math
import re
import statistics


def natural(name):
    """Sort key: numbers inside names compare as numbers (malloc_free/8 < /16)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def in_bench_order(data, names):
    """Benchmark names in the suite's order (the JSON sorts its keys)."""
    order = [b["name"] for b in data["benches"]]
    return sorted(names, key=lambda b: (order.index(b) if b in order else len(order), b))


def in_mode_order(runs, modes):
    """The keys of runs (by xb-micro-xpfo mode) in the order of modes, a
    list of (name, options) as the suite ran them."""
    order = [m for m, _ in modes]
    return sorted(runs, key=lambda m: (order.index(m) if m in order else len(order), m))


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def spread(xs):
    """(max - min) / median, in percent."""
    xs = [x for x in xs if x is not None]
    if len(xs) < 2:
        return None
    m = statistics.median(xs)
    return 100.0 * (max(xs) - min(xs)) / m if m else None


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def ratio(a, b):
    return a / b if a is not None and b else None


def bench_stat(data, bench, alloc, field):
    runs = data["results"].get(bench, {}).get(alloc, [])
    vals = [r.get(field) for r in runs if r]  # (minflt: absent from older data)
    if field == "maxrss_kb":
        vals = [v / 1024.0 for v in vals]  # MiB
    return median(vals), spread(vals), len(vals), len(runs)


def micro_stat(data, bench, alloc):
    vals = [r.get(bench, {}).get("ns_per_item") for r in data["micro"].get(alloc, [])]
    return median(vals), spread(vals)


# per benchmark, the median of each allocator's timed runs: time, peak RSS,
# minor page faults and system time (issue 37: faults and system time show
# frames given back and taken again, which time alone hides on a loaded
# machine)
KINDS = (("time", "wall"), ("rss", "maxrss_kb"), ("faults", "minflt"), ("sys", "sys"))
# the kinds with geometric means (system time is often 0 under glibc)
GEOMEAN_KINDS = ("time", "rss", "micro", "faults")


def flush_rounds(data, bench, alloc):
    """xpfo's flush rounds (TLB shootdown rounds) in the profile run."""
    p = data.get("profiles", {}).get(bench, {}).get(alloc) or {}
    return (p.get("xpfo") or {}).get("flush_rounds")


def summarize(data):
    """Ratios per benchmark and their geometric means."""
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    s = {"time": {}, "rss": {}, "micro": {}, "faults": {}, "sys": {}, "flush_rounds": {},
         "geomean": {}, "geomean_n": {}}
    for b in data["results"]:
        s["flush_rounds"][b] = {a: flush_rounds(data, b, a) for a in allocs
                                if flush_rounds(data, b, a) is not None}
    for kind, field in KINDS:
        for b in data["results"]:
            row = {}
            for a in allocs:
                row[a] = bench_stat(data, b, a, field)[0]
            s[kind][b] = row
    micro_names = sorted({n for runs in data["micro"].values() for r in runs for n in r},
                         key=natural)
    for n in micro_names:
        s["micro"][n] = {a: micro_stat(data, n, a)[0] for a in allocs if a in data["micro"]}
    for kind in GEOMEAN_KINDS:
        for ref in ("glibc", "mimalloc"):
            for a in allocs:
                rs = [ratio(row.get(a), row.get(ref)) for row in s[kind].values()]
                key = "%s/%s/%s" % (kind, a, ref)
                s["geomean"][key] = geomean(rs)
                # how many benchmarks it covers (a failed one is left out)
                s["geomean_n"][key] = [len([r for r in rs if r]), len(rs)]
    return s
