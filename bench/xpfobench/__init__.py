"""xpfobench - xpfo's benchmark runner (python3 standard library only).

Runs every benchmark under every allocator, interleaved (A B C A B C ...),
repeats, and writes a Markdown report with medians, spreads, ratios to
glibc and to mimalloc, geometric means, syscalls by kind, xpfo's counters,
VMA counts and context switches, plus gnuplot PNG plots.

    run.py --mode quick|full|smoke --builddir DIR --out DIR
           [--allocators glibc,jemalloc,...] [--only REGEX] [--repeat N]
           [--no-profile] [--no-micro] [--no-plots]
           [--check BASELINE.json [--strict]] [--write-baseline FILE.json]

See bench/README.md for what each benchmark does and how to read the
output.  Timed runs measure wall time with the child's rusage (wait4); a
separate untimed "profile" run per benchmark and allocator counts syscalls
with strace -c -f, samples the VMA count and collects xpfo's counters
(XPFO_OPTIONS=...,stats=json, one JSON object per process on stderr).

Modules: allocators (who is measured), procs (one measured process),
counters (xpfo's JSON statistics), benches (what is measured), suite (the
run, and main), summary (medians and ratios), report (Markdown), plots
(gnuplot), baseline (bench-check).  The run's raw data is latest.json; the
report and plots are made from that data alone.
"""

import sys


def log(msg):
    print(msg, file=sys.stderr, flush=True)
