#!/usr/bin/env python3
"""bench/vm/ipi-report.py DATA OUT.md OUT.png [--title T]: the table and
plot of bench/vm/ipi.sh from its raw lines (DATA, FILE.dat).

Per workload, allocator and guest CPU count: TLB + CAL interrupts per 1,000
operations (xb-work's ops), the TLB row alone (the shootdowns received),
xpfo's revoking and granting syscalls and the minor faults per 1,000
operations.  With several runs a cell shows the
lowest and highest run.  The plot: IPIs per 1,000 operations against guest
CPUs, one line per allocator (the mean of the runs), one panel per
workload, log scale."""
import argparse
import collections
import os
import re
import subprocess
import sys

ALLOCS = ["glibc", "jemalloc", "mimalloc", "mimalloc-secure", "xpfo", "xpfo-light",
          "xpfo-eager"]
NAMES = {"xpfo": "xpfo default", "xpfo-light": "xpfo profile=light",
         "xpfo-eager": "xpfo revoke=eager"}


def parse(path):
    runs, guests, plan, head = [], {}, [], ""
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("# bench/vm/ipi.sh"):
                head = (head + "; " if head else "") + line[2:]
            elif line.startswith("#   "):
                if line[4:] not in plan:
                    plan.append(line[4:])
            elif line.startswith("# smp="):
                k, _, g = line[2:].partition(" guest: ")
                guests[k] = re.sub(r" uptime=\S+", "", g)
            elif line and not line.startswith("#"):
                d = dict(kv.split("=", 1) for kv in line.split())
                runs.append(d)
    return runs, guests, plan, head


def per_k(d, key):
    try:
        return 1000.0 * float(d[key]) / float(d["ops"])
    except (ValueError, KeyError, ZeroDivisionError):
        return None


def ipis(d):
    try:
        return int(d["tlb"]) + int(d["cal"])
    except (ValueError, KeyError):
        return None


def fmt_range(vals, digits=1):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "–"
    lo, hi = min(vals), max(vals)
    f = "{:,.%df}" % digits
    return f.format(lo) if lo == hi else f.format(lo) + "–" + f.format(hi)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("data")
    ap.add_argument("md")
    ap.add_argument("png")
    ap.add_argument("--title", default="TLB-shootdown IPIs in the QEMU guest")
    o = ap.parse_args()
    runs, guests, plan, head = parse(o.data)
    bad = [d for d in runs if d.get("status") != "0" or ipis(d) is None
           or d.get("ops") in (None, "?")]
    good = [d for d in runs if d not in bad]
    cell = collections.defaultdict(list)
    for d in good:
        d["ipi"] = ipis(d)
        d["ipik"] = 1000.0 * d["ipi"] / float(d["ops"])
        cell[(d["work"], d["alloc"], int(d["smp"]))].append(d)
    works = []
    for d in runs:
        if d["work"] not in works:
            works.append(d["work"])
    allocs = [a for a in ALLOCS if any(d["alloc"] == a for d in runs)]
    smps = sorted({int(d["smp"]) for d in runs})

    L = ["# " + o.title, ""]
    L.append("Made by `make bench-vm-ipi` (%s)." % head.replace(" 20", ", 20", 1))
    kernels = sorted(set(guests.values()))
    L.append("Guest: QEMU TCG, -cpu max, 1 GiB; " + "; ".join(kernels) + ".")
    L.append("")
    L.append("Each run is one xb-work process (the same dynamic binary as on "
             "the host, the allocator in LD_PRELOAD) started by xb-vm-ipi, "
             "which reads the TLB and CAL rows of /proc/interrupts, summed "
             "over every guest CPU, before and after it (so thread creation, "
             "exec and exit are in every count, the same for each "
             "allocator), and the child's minor faults from wait4's rusage. "
             "Revoking and granting syscalls: xpfo's `revoke_syscalls` and "
             "`grant_syscalls` (XPFO_OPTIONS=stats=json); xpfo's backend "
             "in the guest: %s (`-cpu max` has PKU, the build hosts do not). "
             "Operations: "
             "xb-work's `ops` (larson, crossmix), else its `objects` "
             "(+ `medium`: xmalloc, prodcons, threadchurn), for hash its "
             "entries per round x rounds x threads. TCG timings mean "
             "nothing and are not reported." % (", ".join(sorted(
                 {d["backend"] for d in runs if d.get("backend", "-") != "-"}))
                 or "not recorded"))
    L.append("")
    L.append("Workloads (xb-work arguments; the `eager:` lines are the "
             "smaller plan of xpfo revoke=eager):")
    L.append("")
    for p in plan:
        L.append("    " + p)
    L.append("")
    L.append("## TLB + CAL interrupts per 1,000 operations")
    L.append("")
    for d in good:
        d["tlbk"] = 1000.0 * float(d["tlb"]) / float(d["ops"])

    def mean(w, a, n, key="ipik"):
        c = cell.get((w, a, n))
        return sum(d[key] for d in c) / len(c) if c else None

    def ratio(x, y):
        return "%.2f" % (x / y) if x is not None and y else "–"

    def table(key, digits):
        """Per workload and allocator: key's range at each CPU count, then
        its mean over glibc's."""
        L.append("| workload | allocator | " + " | ".join("%d CPUs" % n for n in smps)
                 + " | " + " | ".join("x glibc, %d CPUs" % n for n in smps) + " |")
        L.append("|---|---|" + "---:|" * (2 * len(smps)))
        for w in works:
            for a in allocs:
                row = [fmt_range([d[key] for d in cell.get((w, a, n), [])], digits)
                       for n in smps]
                row += [ratio(mean(w, a, n, key), mean(w, "glibc", n, key)) for n in smps]
                name = NAMES.get(a, a)
                if a == "xpfo":
                    name = "**" + name + "**"
                L.append("| %s | %s | %s |" % (w, name, " | ".join(row)))

    L.append("x glibc: the mean of the runs over glibc's mean.")
    L.append("")
    table("ipik", 1)
    L.append("")
    L.append("## TLB shootdowns alone: the TLB row per 1,000 operations")
    L.append("")
    L.append("On x86 a shootdown is a function-call IPI: its handler counts "
             "it in CAL (arch/x86/kernel/smp.c, sysvec_call_function) and "
             "the flush it runs counts it in TLB when it runs on a CPU other "
             "than the sender's (arch/x86/mm/tlb.c, flush_tlb_func). So TLB "
             "counts the shootdowns received, and TLB + CAL counts each of "
             "them twice plus every other function-call IPI: wake-ups of "
             "sleeping threads, the scheduler's idle-balance kicks, RCU's "
             "(`--trace` names them).")
    L.append("")
    table("tlbk", 2)
    if "xpfo" in allocs and "xpfo-eager" in allocs:
        L.append("")
        L.append("xpfo revoke=eager over the default profile (IPIs per 1,000 "
                 "operations, means of the runs):")
        L.append("")
        L.append("| workload | " + " | ".join("%d CPUs" % n for n in smps) + " |")
        L.append("|---|" + "---:|" * len(smps))
        for w in works:
            L.append("| %s | %s |" % (w, " | ".join(
                ratio(mean(w, "xpfo-eager", n), mean(w, "xpfo", n)) for n in smps)))
    L.append("")
    L.append("## Every count")
    L.append("")
    L.append("TLB and CAL: totals of the run; the other columns per 1,000 "
             "operations (IPIs = TLB + CAL); a range is the lowest and "
             "highest run.")
    L.append("")
    L.append("| workload | allocator | CPUs | operations "
             "| TLB | CAL | IPIs | revoking syscalls | granting syscalls | minor faults |")
    L.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in works:
        for a in allocs:
            for n in smps:
                c = cell.get((w, a, n), [])
                if not c:
                    continue
                L.append("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s |" % (
                    w, NAMES.get(a, a), n,
                    fmt_range([float(d["ops"]) for d in c], 0),
                    fmt_range([float(d["tlb"]) for d in c], 0),
                    fmt_range([float(d["cal"]) for d in c], 0),
                    fmt_range([d["ipik"] for d in c]),
                    fmt_range([per_k(d, "revoke") for d in c]),
                    fmt_range([per_k(d, "grant") for d in c]),
                    fmt_range([per_k(d, "minflt") for d in c])))
    if bad:
        L.append("")
        L.append("Failed runs (left out above):")
        L.append("")
        for d in bad:
            L.append("    " + " ".join("%s=%s" % kv for kv in d.items()))
    L.append("")
    L.append("![IPIs per 1,000 operations](%s)" % os.path.basename(o.png))
    with open(o.md, "w") as f:
        f.write("\n".join(L) + "\n")

    # The plot: one panel per workload, one line per allocator.
    base = os.path.splitext(o.png)[0]
    dat = base + ".plot.tmp"
    with open(dat, "w") as f:
        for w in works:
            for a in allocs:
                for n in smps:
                    c = cell.get((w, a, n))
                    v = sum(d["ipik"] for d in c) / len(c) if c else float("nan")
                    f.write("%d %g\n" % (n, v))
                f.write("\n\n")
    cols = 3
    rows = (len(works) + cols - 1) // cols
    g = ["set terminal pngcairo size %d,%d font ',9'" % (560 * cols, 330 * rows + 40),
         "set output '%s'" % o.png,
         "set multiplot layout %d,%d title '%s'" % (rows, cols, o.title.replace("'", "")),
         "set logscale y", "set xtics (%s)" % ", ".join(str(n) for n in smps),
         "set xrange [%g:%g]" % (smps[0] - 0.5, smps[-1] + 0.5),
         "set xlabel 'guest CPUs'", "set ylabel 'IPIs per 1,000 operations'",
         "set key outside right top font ',8'", "set grid"]
    for i, w in enumerate(works):
        plots = []
        for j, a in enumerate(allocs):
            plots.append("'%s' index %d using 1:2 with linespoints lw 2 title '%s'"
                         % (dat, i * len(allocs) + j, NAMES.get(a, a)))
        g.append("set title '%s'" % w)
        g.append("plot " + ", ".join(plots))
    g.append("unset multiplot")
    try:
        subprocess.run(["gnuplot"], input="\n".join(g) + "\n", text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        print("ipi-report: gnuplot failed (%s); no plot" % e, file=sys.stderr)
    finally:
        os.unlink(dat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
