#!/usr/bin/env python3
"""flushmech.py - xpfo's flush rounds (TLB shootdown rounds) per 1,000
operations of the multi-threaded workloads, by mechanism.

Runs bench/xb-work under LD_PRELOAD=libxpfo with XPFO_OPTIONS=stats=json
(plus each profile's options) and prints a Markdown table: per workload and
profile, the operations (xb-work's ops, else its objects plus medium
blocks, else hash's entries x rounds x threads, as bench/vm/ipi-guest.sh
counts them) and flush_rounds with its five mechanisms per 1,000 of them,
the range over --runs runs.

    python3 bench/flushmech.py [--build DIR] [--runs N] [--profiles a,b]
                               [--workloads a,b]
"""
import argparse
import json
import os
import re
import subprocess
import sys

# The quick arguments of bench/xpfobench/benches.py; crossmix (not in that
# suite) with bench/vm/ipi.sh's plan.
WORKLOADS = [
    ("larson", "-n 200000 -r 5"),
    ("prodcons", "-n 750000"),
    ("xmalloc", "-n 4000"),
    ("hash", "-n 50000 -r 2 -t 2"),
    ("threadchurn", "-r 1000"),
    ("crossmix", "-t 4 -n 40"),
]
PROFILES = {"default": "", "mprotect": "release=mprotect", "eager": "revoke=eager"}
MECHS = ["protect", "purge", "guard", "vector", "unmap"]


def operations(out, args):
    kv = dict(re.findall(r"^xbw: (\w+)=(\S+)", out, re.M))
    if "ops" in kv:
        return int(kv["ops"])
    if "objects" in kv:
        return int(kv["objects"]) + int(kv.get("medium", 0))
    if "entries_per_round" in kv:
        a = args.split()
        t = int(a[a.index("-t") + 1]) if "-t" in a else 1
        r = int(a[a.index("-r") + 1]) if "-r" in a else 1
        return int(kv["entries_per_round"]) * r * t
    raise SystemExit("no operation count in xb-work's output:\n" + out)


def run(build, name, args, opts):
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, ".libs", "libxpfo.so"),
               XPFO_OPTIONS=",".join(o for o in ("stats=json", opts) if o))
    p = subprocess.run([os.path.join(build, "bench", "xb-work"), name] + args.split(),
                       env=env, capture_output=True, text=True, check=True)
    stats = [json.loads(l) for l in p.stderr.splitlines() if l.startswith("{")]
    if not stats:
        raise SystemExit("%s: no stats=json line on stderr:\n%s" % (name, p.stderr))
    s = max(stats, key=lambda o: o["allocs"])  # the workload's process
    tot = {k: s["flush_rounds" + ("_" + k if k != "all" else "")] for k in ["all"] + MECHS}
    if tot["all"] != sum(tot[m] for m in MECHS):
        raise SystemExit("%s: mechanisms do not sum to flush_rounds: %r" % (name, tot))
    tot["shared"] = s["flush_rounds_shared"]
    return operations(p.stdout + p.stderr, args), tot, s["backend"]


def cell(vals):
    lo, hi = min(vals), max(vals)
    if all(isinstance(v, int) for v in vals):
        return "%d" % lo if lo == hi else "%d-%d" % (lo, hi)
    f = (lambda v: "%.3f" % v) if hi < 1 else (lambda v: "%.2f" % v) if hi < 10 else \
        (lambda v: "%.1f" % v) if hi < 1000 else (lambda v: "%d" % v)
    return f(lo) if f(lo) == f(hi) else "%s-%s" % (f(lo), f(hi))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=".")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--profiles", default="default,mprotect")
    ap.add_argument("--workloads", default=",".join(w for w, _ in WORKLOADS),
                    help="some of: " + ", ".join(w for w, _ in WORKLOADS))
    a = ap.parse_args()
    names = a.workloads.split(",")
    unknown = set(names) - {w for w, _ in WORKLOADS}
    if unknown:
        ap.error("unknown workload(s): " + ", ".join(sorted(unknown)))
    print("| workload | args | profile | ops | rounds | rounds /1k ops | shared | "
          + " | ".join(MECHS) + " |")
    print("|---|---|---|---:|---:|---:|---:|" + "---:|" * len(MECHS))
    for name, args in [w for w in WORKLOADS if w[0] in names]:
        for prof in a.profiles.split(","):
            per = {k: [] for k in ["all", "shared"] + MECHS}
            counts = []
            for _ in range(a.runs):
                ops, tot, backend = run(a.build, name, args, PROFILES[prof])
                counts.append(tot["all"])
                for k in per:
                    per[k].append(1000.0 * tot[k] / ops)
            print("| %s | `%s` | %s | %d | %s | %s | %s | %s |" % (
                name, args, prof, ops, cell(counts), cell(per["all"]), cell(per["shared"]),
                " | ".join(cell(per[m]) for m in MECHS)))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
