#!/usr/bin/env python3
"""issue37.py - the per-pattern table of issue 37 from a run's latest.json.

    python3 bench/issue37.py bench/results/issue37-before.json

For each of the six benchmarks of the issue's five patterns and each
allocator: wall time and system time (median of the timed runs, with the
range), minor page faults (median), peak RSS (median), xpfo's flush rounds
(its own counter, untimed profile run) and, for every allocator, the calls
strace saw that can flush TLBs (munmap, mprotect, pkey_mprotect, madvise,
mremap: an upper bound of the others' rounds), then the ratios of time,
faults and RSS to glibc and to mimalloc.  Markdown on stdout."""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xpfobench.summary import in_bench_order  # noqa: E402

PATTERNS = {"shortlived": "1. short-lived threads", "server": "2. server (larson, 4 workers)",
            "glthread": "2. tight loop in 4 threads", "bigblock": "3. repeated large blocks",
            "genchurn": "4. generations handing blocks on", "mixed2": "5. two threads, mixed sizes"}
FLUSHING = ("munmap", "mprotect", "pkey_mprotect", "madvise", "mremap")


def med(runs, k):
    v = [r[k] for r in runs if r and r.get(k) is not None]
    return (statistics.median(v), min(v), max(v)) if v else (None, None, None)


def f(v, unit=""):
    if v is None:
        return "–"
    if v >= 100:
        return "{:,.0f}{}".format(v, unit)
    return "{:.3g}{}".format(v, unit)


def rat(a, b):
    return "–" if a is None or not b else "%.2f" % (a / b)


def main(path):
    d = json.load(open(path))
    allocs = [a["name"] for a in d["allocators"] if a["ok"]]
    benches = [b for b in in_bench_order(d, d["results"]) if b in PATTERNS]
    out = []
    for b in benches:
        res, prof = d["results"][b], d["profiles"].get(b, {})
        out.append("\n### %s: `%s`\n" % (PATTERNS[b], b))
        out.append("| allocator | time s (range) | sys s (range) | minor faults | peak RSS MiB "
                   "| flush rounds (shared) | flushing syscalls | time / glibc | time / mimalloc "
                   "| faults / glibc | faults / mimalloc | RSS / glibc |")
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        m = {a: {k: med(res.get(a, []), k)[0] for k in ("wall", "sys", "minflt", "maxrss_kb")}
             for a in allocs}
        for a in allocs:
            w, wlo, whi = med(res.get(a, []), "wall")
            s, slo, shi = med(res.get(a, []), "sys")
            p = prof.get(a) or {}
            x = p.get("xpfo") or {}
            sc = p.get("syscalls") or {}
            rounds = "%s (%s)" % (f(x["flush_rounds"]), f(x.get("flush_rounds_shared"))) \
                if "flush_rounds" in x else "–"
            fl = sum(sc.get(k, 0) for k in FLUSHING) if sc else None
            g, mi = m.get("glibc", {}), m.get("mimalloc", {})
            out.append("| %s | %s (%s–%s) | %s (%s–%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                a, f(w), f(wlo), f(whi), f(s), f(slo), f(shi), f(m[a]["minflt"]),
                f(m[a]["maxrss_kb"] / 1024.0 if m[a]["maxrss_kb"] else None), rounds, f(fl),
                rat(w, g.get("wall")), rat(w, mi.get("wall")), rat(m[a]["minflt"], g.get("minflt")),
                rat(m[a]["minflt"], mi.get("minflt")), rat(m[a]["maxrss_kb"], g.get("maxrss_kb"))))
    loads = [r["load1"] for b in benches for a in allocs for r in d["results"][b].get(a, [])
             if r and r.get("load1") is not None]
    head = ["Run: `%s`, %d interleaved repetitions, xpfo %s; %s inputs." % (
        d["command"], d["repeat"], d["machine"]["versions"].get("xpfo", "?"), d["mode"])]
    if loads:
        head.append("1-minute load average at the start of the timed runs: %.1f to %.1f "
                    "(median %.1f) on %s." % (min(loads), max(loads), statistics.median(loads),
                                              d["machine"].get("cpu", "?")))
    print("\n".join(head + out))


if __name__ == "__main__":
    main(sys.argv[1])
