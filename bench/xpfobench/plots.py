"""gnuplot PNG plots of a run's data: ratios to glibc, and the revocation
ablation's cost against the batch size."""

import os
import re
import shutil
import subprocess

from . import log
from .benches import ABLATION_BATCHES
from .summary import in_bench_order, median, natural, ratio

BARS_GP = """set terminal pngcairo noenhanced size %d,520 font "DejaVu Sans,10"
set output '%s'
set title "%s"
set ylabel "%s"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key outside right top vertical
set xtics rotate by -40 scale 0
%s
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2 lw 1.5 lc rgb "black"
plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)
"""

ABLATION_GP = """set terminal pngcairo noenhanced size 1000,1050 font "DejaVu Sans,10"
set output '%s'
set multiplot layout 3,1 title "Revocation cost vs batch size (xpfo, backend %s; medians of the repetitions)"
set grid
set key outside right
set xtics rotate by -30
set logscale y
set ylabel "ns per object (alloc+free)"
plot for [i=2:%d] '%s' index 0 using 0:i:xtic(1) with linespoints lw 2 pt 7 title columnheader(i)
unset logscale y
set yrange [0:*]
set ylabel "revoking syscalls per object"
plot for [i=2:%d] '%s' index 1 using 0:i:xtic(1) with linespoints lw 2 pt 7 title columnheader(i)
set ylabel "granting syscalls per object"
plot for [i=2:%d] '%s' index 2 using 0:i:xtic(1) with linespoints lw 2 pt 7 title columnheader(i)
unset multiplot
"""


def gnuplot(out, fname, gp):
    with open(os.path.join(out, fname + ".gp"), "w") as f:
        f.write(gp)
    subprocess.run(["gnuplot", os.path.join(out, fname + ".gp")], check=False)


def bars_data(data, kind, dat, names, cols):
    S = data["summary"]
    with open(dat, "w") as f:
        f.write("benchmark " + " ".join(cols) + "\n")
        for b in names + ["geomean"]:
            if b == "geomean":
                vals = [S["geomean"].get("%s/%s/glibc" % (kind, a)) for a in cols]
            else:
                row = S[kind][b]
                vals = [ratio(row.get(a), row.get("glibc")) for a in cols]
            f.write("%s %s\n" % (b.replace(" ", "_"),
                                 " ".join("%.4f" % v if v else "NaN" for v in vals)))


def bars(data, ctx, others, kind, fname, title, ylabel, logy=False):
    """Ratios to glibc of `kind`, one cluster of bars per benchmark."""
    S = data["summary"]
    names = in_bench_order(data, S[kind])
    # only the allocators with at least one number here (gnuplot fails
    # on an all-NaN column)
    cols = [a for a in others if any(ratio(S[kind][b].get(a), S[kind][b].get("glibc"))
                                     for b in names)]
    if not cols:
        return
    dat = os.path.join(ctx.out, fname + ".dat")
    bars_data(data, kind, dat, names, cols)
    width = max(900, 60 * (len(names) + 1) + 200)
    gnuplot(ctx.out, fname, BARS_GP % (
        width, os.path.join(ctx.out, fname + ".png"), title, ylabel,
        "set logscale y\nset yrange [*:*]" if logy else "set yrange [0:*]", len(cols) + 1, dat))


def ablation_data(data, dat, names):
    modes = list(data["ablation"].keys())
    order = ["eager"] + ["batch=%d" % n for n in ABLATION_BATCHES] + ["off"]
    order = [m for m in order if m in modes]
    header = "mode " + " ".join(n.replace("/real_time", "").replace("/", ":")
                                for n in names) + "\n"
    with open(dat, "w") as f:
        # index 0: ns per object; 1: revoking syscalls; 2: granting syscalls
        for field, form in (("ns_per_item", "%.2f"), ("revoke_sys_per_obj", "%.4f"),
                            ("grant_sys_per_obj", "%.4f")):
            f.write(header)
            for m_ in order:
                vals = [median([r.get(n, {}).get(field) for r in data["ablation"][m_]])
                        for n in names]
                f.write(m_ + " " + " ".join(form % v if v is not None else "NaN"
                                            for v in vals) + "\n")
            f.write("\n\n")


def ablation_plot(data, ctx):
    names = sorted({n for runs in data["ablation"].values() for r in runs for n in r},
                   key=natural)
    names = [n for n in names if re.search(r"revoke_pages/4/|revoke_pages_busy_peer/4/|"
                                           r"revoke_small/64/", n)] or names
    dat = os.path.join(ctx.out, "revoke_batch.dat")
    ablation_data(data, dat, names)
    n = len(names) + 1
    gnuplot(ctx.out, "revoke_batch", ABLATION_GP % (
        os.path.join(ctx.out, "revoke_batch.png"),
        data["micro_context"].get("xpfo_backend") or "?", n, dat, n, dat, n, dat))


def plots(data, ctx):
    if not shutil.which("gnuplot"):
        log("run.py: gnuplot not found, no plots")
        return
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    others = [a for a in allocs if a != "glibc"]
    S = data["summary"]
    if others and S["time"]:
        bars(data, ctx, others, "time", "time_ratio",
             "Wall time relative to glibc (median, %s run; lower is better)"
             % data["mode"], "time / glibc")
        bars(data, ctx, others, "rss", "rss_ratio",
             "Peak RSS relative to glibc (median, %s run; lower is better)"
             % data["mode"], "peak RSS / glibc")
    if others and S["micro"]:
        bars(data, ctx, others, "micro", "micro_ratio",
             "Micro benchmarks: time per object relative to glibc "
             "(median, log scale; lower is better)", "ns per object / glibc (log)", logy=True)
    if data["ablation"]:
        ablation_plot(data, ctx)
