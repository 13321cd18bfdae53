"""The whole run: choose allocators and benchmarks, run them interleaved,
then the profile runs and the micro benchmarks; write latest.json, the
report and the plots; compare with a baseline."""

import argparse
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from . import __doc__ as package_doc
from . import log
from .allocators import alloc_env, applies, base_env, make_allocators
from .baseline import check_baseline, write_baseline
from .benches import ABLATION_MODES, COMPARTMENT_MODES, Workload, make_benches
from .machine import loadavg, machine_info
from .measure import Ctx, bench_timeout, check_alloc, run_bench, run_micro
from .plots import plots
from .procs import Proc
from .report import ratio_table_of, report, section_summary, targets
from .summary import summarize


def parse_args():
    ap = argparse.ArgumentParser(description=package_doc.split("\n\n")[0])
    ap.add_argument("--mode", choices=["smoke", "quick", "full"], default="quick")
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--srcdir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--allocators", default=None,
                    help="comma-separated subset of glibc,jemalloc,mimalloc,mimalloc-secure,"
                    "xpfo,xpfo-eager,xpfo-off,xpfo-strict,xpfo-light,xpfo-mprotect,xpfo-uffd,"
                    "xpfo-cthread (default: all)")
    ap.add_argument("--only", default=None, help="regex on benchmark names")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--no-profile", action="store_true", help="skip strace/VMA/xpfo-stats runs")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--check", default=None, help="baseline JSON to compare with")
    ap.add_argument("--strict", action="store_true", help="with --check: exit 1 on a regression")
    ap.add_argument("--write-baseline", default=None)
    return ap, ap.parse_args()


def make_ctx(ap, args):
    ctx = Ctx()
    ctx.mode = args.mode
    ctx.builddir = os.path.abspath(args.builddir)
    # the source tree: two levels above this package (bench/xpfobench)
    here = os.path.dirname(os.path.abspath(__file__))
    ctx.srcdir = os.path.abspath(args.srcdir or os.path.join(here, "..", ".."))
    ctx.out = os.path.abspath(args.out or os.path.join(ctx.builddir, "bench", "results", args.mode))
    ctx.workdir = os.path.join(ctx.builddir, "bench", "work")
    ctx.repeat = args.repeat or {"smoke": 1, "quick": 3, "full": 5}[args.mode]
    ctx.timeout = {"smoke": 20, "quick": 60, "full": 300}[args.mode]
    # the micro suite is long (about 150 benchmarks per allocator): the full
    # run gives it the quick run's time per benchmark (a full run: about 23 min).
    # 0.05 s, not 0.01: at 0.01 s bench-check's micro ratios moved by 25%
    # between runs of the same build (2026-11-30); 0.05 s adds about a
    # minute to a quick run
    ctx.micro_min_time = {"smoke": 0.002, "quick": 0.05, "full": 0.05}[args.mode]
    Proc.spawn = os.path.join(ctx.builddir, "bench", "xb-spawn")
    if not os.access(Proc.spawn, os.X_OK):
        ap.error("%s not built (make bench/xb-spawn)" % Proc.spawn)
    ctx.profile = not args.no_profile
    ctx.strace = bool(shutil.which("strace")) and ctx.profile
    ctx.no_plots = args.no_plots
    return ctx


def main():
    ap, args = parse_args()
    ctx = make_ctx(ap, args)
    os.makedirs(ctx.out, exist_ok=True)
    os.makedirs(ctx.workdir, exist_ok=True)
    ctx.tmpdir = tempfile.mkdtemp(prefix="xb-", dir=ctx.workdir)
    if args.repeat is not None and args.repeat < 1:
        ap.error("--repeat must be at least 1")
    try:
        return run_suite(ctx, args)
    finally:
        shutil.rmtree(ctx.tmpdir, ignore_errors=True)


def select_allocators(ctx, args):
    """The allocators asked for, each checked; None for an unknown name."""
    allocs = make_allocators(ctx.builddir)
    if args.allocators:
        want = args.allocators.split(",")
        bad = [w for w in want if w not in [a.name for a in allocs]]
        if bad:
            log("run.py: unknown allocator(s): %s" % ", ".join(bad))
            return None
        allocs = [a for a in allocs if a.name in want]
    for a in allocs:
        why = check_alloc(ctx, a)
        if why:
            a.ok, a.why = False, why
            log("run.py: %s unavailable: %s" % (a.name, why))
    return allocs


def select_benches(ctx, args, pctx):
    """The benchmarks asked for, set up (for the profile inputs too)."""
    benches = make_benches()
    if args.mode == "smoke":
        benches = [b for b in benches if b.name not in ("redis", "git", "python")]
    if args.only:
        benches = [b for b in benches if re.search(args.only, b.name)]
    for b in benches:
        try:
            b.setup(ctx)
            if ctx.profile and pctx.mode != ctx.mode:
                b.setup(pctx)
        except (OSError, subprocess.SubprocessError, RuntimeError) as e:
            b.skip = "setup failed: %s" % e
        if b.skip:
            log("run.py: skipping %s: %s" % (b.name, b.skip))
    return benches


class Plan:
    """Which micro benchmark runs this run makes, with which filters."""

    def __init__(self, ctx, args, allocs):
        smoke = ctx.mode == "smoke"
        self.micro_exe = os.path.join(ctx.builddir, "bench", "xb-micro")
        self.xmicro_exe = os.path.join(ctx.builddir, "bench", "xb-micro-xpfo")
        self.do_micro = not args.no_micro and os.access(self.micro_exe, os.X_OK)
        xpfo_ok = any(a.xpfo and a.ok for a in allocs)
        self.do_ablation = (not args.no_micro and os.access(self.xmicro_exe, os.X_OK)
                            and xpfo_ok)
        self.ablation_modes = ABLATION_MODES
        self.micro_filter = "malloc_free/(64|4096)$|batch1024_random/256" if smoke else None
        self.ablation_filter = ("revoke_pages/4/|revoke_pages_busy_peer/4/|revoke_small/64/"
                                if smoke else "^revoke_")
        self.comp_modes = COMPARTMENT_MODES
        self.comp_filter = ("^compartment_(enter_leave/16|malloc_in/64|transfer/8)/"
                            if smoke else "^compartment_")


class Progress:
    """One "[n/N] mm:ss  what  (k left)" line per step."""

    def __init__(self, start, steps):
        self.start, self.steps, self.done = start, steps, 0

    def __call__(self, what):
        self.done += 1
        el = time.time() - self.start
        log("[%3d/%d] %02d:%02d  %s  (%d left)" % (self.done, self.steps, el // 60, el % 60,
                                                   what, self.steps - self.done))


def count_steps(ctx, plan, runnable, live):
    pairs = len([1 for b in runnable for a in live if applies(a, b)])
    steps = ctx.repeat * pairs
    if ctx.profile:
        steps += pairs  # profile runs
    if plan.do_micro:
        steps += ctx.repeat * len([a for a in live if a.only is None])
    if plan.do_ablation:
        steps += ctx.repeat * (len(plan.ablation_modes) + len(plan.comp_modes))
    return steps


class State:
    """What the run collects (becomes latest.json)."""

    def __init__(self, runnable, live):
        self.results = {b.name: {a.name: [] for a in live} for b in runnable}
        self.profiles = {b.name: {} for b in runnable}
        self.keys = {b.name: {} for b in runnable}
        self.metrics = {b.name: {a.name: [] for a in live} for b in runnable}
        self.errors = []
        self.dropped = set()
        self.micro, self.micro_ctx = {}, {}
        self.ablation, self.compartments = {}, {}


def timed_run(ctx, st, rep, b, a):
    """One timed run of b under a, its result recorded in st."""
    if a.name in st.dropped:
        st.results[b.name][a.name].append(None)
        return
    load = os.getloadavg()[0]
    r = run_bench(ctx, b, a, timeout=bench_timeout(ctx, st.results[b.name]))
    r.load1 = round(load, 2)  # the 1-minute load average as the run started
    if r.error:
        st.errors.append("%s under %s (rep %d): %s" % (b.name, a.name, rep + 1, r.error))
        st.results[b.name][a.name].append(None)
        if ctx.mode == "smoke" and "timed out" in r.error and a.name != "glibc":
            # the smoke test must stay short: no more runs for it
            st.dropped.add(a.name)
            st.errors.append("%s dropped from the rest of the smoke run" % a.name)
        return
    st.results[b.name][a.name].append(r.as_dict())
    st.keys[b.name].setdefault(a.name, b.key(r))
    if isinstance(b, Workload):
        st.metrics[b.name][a.name].append(b.metrics(r))


def run_timed(ctx, st, runnable, live, progress):
    for rep in range(ctx.repeat):
        for b in runnable:
            for a in [a for a in live if applies(a, b)]:
                progress("rep %d/%d  %-8s under %s" % (rep + 1, ctx.repeat, b.name, a.name))
                timed_run(ctx, st, rep, b, a)


def run_profiles(ctx, pctx, st, runnable, live, progress):
    for b in runnable if ctx.profile else []:
        for a in [a for a in live if applies(a, b)]:
            if a.name in st.dropped:
                progress.done += 1
                continue
            progress("profile %-8s under %s (strace -c -f, VMAs%s)" %
                     (b.name, a.name, ", xpfo stats" if a.xpfo else ""))
            r = run_bench(pctx, b, a, profile=True,
                          timeout=3 * bench_timeout(ctx, st.results[b.name]))
            if r.error:
                st.errors.append("%s under %s (profile run): %s" % (b.name, a.name, r.error))
            st.profiles[b.name][a.name] = r.as_dict()


def run_micros(ctx, plan, st, live, progress):
    """xb-micro under every allocator that runs every benchmark."""
    micro_allocs = [a for a in live if a.only is None]
    st.micro = {a.name: [] for a in micro_allocs}
    for rep in range(ctx.repeat):
        for a in micro_allocs:
            progress("rep %d/%d  micro benchmarks under %s" % (rep + 1, ctx.repeat, a.name))
            res, err, mctx = run_micro(ctx, plan.micro_exe, alloc_env(a), plan.micro_filter)
            st.micro_ctx = mctx or st.micro_ctx
            if err:
                st.errors.append("micro under %s (rep %d): %s" % (a.name, rep + 1, err))
            st.micro[a.name].append(res)


def xpfo_micro(ctx, plan, st, progress, title, modes, bfilter):
    """xb-micro-xpfo once per mode and repetition, interleaved."""
    out = {m: [] for m, _ in modes}
    for rep in range(ctx.repeat):
        for m, opts in modes:
            progress("rep %d/%d  %s, %s" % (rep + 1, ctx.repeat, title, m))
            env = base_env()
            if opts:
                env["XPFO_OPTIONS"] = ",".join(opts)
            res, err, actx = run_micro(ctx, plan.xmicro_exe, env, bfilter)
            if actx.get("xpfo_backend"):
                st.micro_ctx["xpfo_backend"] = actx["xpfo_backend"]
            if err:
                st.errors.append("%s %s (rep %d): %s" % (title, m, rep + 1, err))
            out[m].append(res)
    return out


def check_keys(st, runnable):
    """Checksums must agree across allocators."""
    for b in runnable:
        distinct = {}
        for a, k in st.keys[b.name].items():
            distinct.setdefault(k, []).append(a)
        if len(distinct) > 1:
            st.errors.append("%s: output differs between allocators: %s" % (
                b.name, " vs ".join(",".join(v) for v in distinct.values())))


def run_data(ctx, pctx, st, allocs, benches, start, load_start):
    """latest.json: everything the report and the plots are made from."""
    data = {
        "mode": ctx.mode, "repeat": ctx.repeat,
        "machine": machine_info(ctx),
        "load_start": load_start, "load_end": loadavg(),
        "elapsed_s": round(time.time() - start, 1),
        "command": " ".join(["bench/run.py"] + sys.argv[1:]),
        "allocators": [dict(name=a.name, preload=a.preload, env=a.env, ok=a.ok,
                            why=a.why, note=a.note,
                            only=sorted(a.only) if a.only else None) for a in allocs],
        "benches": [dict(name=b.name, kind=b.kind, desc=b.desc, skip=b.skip) for b in benches],
        "results": st.results, "profiles": st.profiles, "metrics": st.metrics,
        "micro": st.micro, "micro_context": st.micro_ctx, "ablation": st.ablation,
        "compartments": st.compartments, "profile_mode": pctx.mode,
        "errors": st.errors,
    }
    data["summary"] = summarize(data)
    return data


def write_outputs(ctx, args, data, start):
    """latest.json, then the report, plots and summary made from it."""
    path = os.path.join(ctx.out, "latest.json")
    with open(path, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    with open(path) as f:
        data = json.load(f)
    md = report(data, ctx)
    with open(os.path.join(ctx.out, "latest.md"), "w") as f:
        f.write(md)
    if not args.no_plots:
        plots(data, ctx)
    log("run.py: wrote %s/latest.md (%.0f s, load %s -> %s)" % (
        ctx.out, time.time() - start, data["load_start"], data["load_end"]))
    print("\nTime relative to glibc (median of %d runs; lower is better):\n" % ctx.repeat)
    print(ratio_table_of(data, "time", "glibc"))
    print("Peak RSS relative to glibc:\n")
    print(ratio_table_of(data, "rss", "glibc"))
    print(section_summary(data))
    print(targets(data))
    if data["errors"]:
        print("%d failed runs, see 'Failures' in %s/latest.md" % (len(data["errors"]), ctx.out))
    return data


def finish_baseline(data, args):
    """Exit status: 1 when a run failed (a crash under xpfo is a bug, and a
    ratio missing for it hid one: python and micro under xpfo-off died in
    three bench-check runs, 2026-11-30, seen only in the report), or when
    --check --strict found a regression.  No baseline is written from a run
    with failures."""
    rc = 0
    if args.write_baseline:
        if data["errors"]:
            log("run.py: baseline NOT written: %d failed runs" % len(data["errors"]))
        else:
            write_baseline(data, args.write_baseline)
            log("run.py: wrote baseline %s" % args.write_baseline)
    if args.check:
        rc = check_baseline(data, args.check, args.strict)
    if data["errors"] and data["mode"] != "smoke":  # smoke.sh judges its own
        log("run.py: FAILED: %d runs failed:" % len(data["errors"]))
        for e in data["errors"]:
            log("  " + e[:300])
        rc = 1
    return rc


def run_suite(ctx, args):
    start = time.time()
    load_start = loadavg()
    allocs = select_allocators(ctx, args)
    if allocs is None:
        return 2
    live = [a for a in allocs if a.ok]
    # Profile runs (strace stops the process at every traced syscall) use the
    # quick inputs in a full run, to keep within the time budget.
    pctx = copy.copy(ctx)
    if ctx.mode == "full":
        pctx.mode = "quick"
    benches = select_benches(ctx, args, pctx)
    runnable = [b for b in benches if not b.skip]
    plan = Plan(ctx, args, allocs)
    progress = Progress(start, count_steps(ctx, plan, runnable, live))
    st = State(runnable, live)
    run_timed(ctx, st, runnable, live, progress)
    run_profiles(ctx, pctx, st, runnable, live, progress)
    if plan.do_micro:
        run_micros(ctx, plan, st, live, progress)
    if plan.do_ablation:
        st.ablation = xpfo_micro(ctx, plan, st, progress, "revocation ablation",
                                 plan.ablation_modes, plan.ablation_filter)
        st.compartments = xpfo_micro(ctx, plan, st, progress, "compartments",
                                     plan.comp_modes, plan.comp_filter)
    check_keys(st, runnable)
    data = run_data(ctx, pctx, st, allocs, benches, start, load_start)
    data = write_outputs(ctx, args, data, start)
    return finish_baseline(data, args)
