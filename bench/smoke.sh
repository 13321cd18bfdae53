#!/bin/sh
# bench/smoke.sh - a seconds-long dry run of the benchmark runner (make check).
#
# Runs bench/run.py --mode smoke (tiny workloads, one repetition, every
# allocator that is installed; redis, git and python left out) into a
# temporary directory and checks what it wrote: the Markdown report with a
# time and a peak-RSS row for every workload, numbers in the glibc column,
# the JSON with positive times, syscall counts from the strace run, xpfo's
# counters (read from its stats=json output), and the PNG plots when gnuplot
# is installed.  No timing is asserted.
#
# Exit: 0 pass, 77 skip (no python3), 99 the harness is not built, 1 fail.

top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-.}
PY=${PYTHON3:-python3}

if ! command -v "$PY" >/dev/null 2>&1; then
	echo "SKIP: $PY not found"
	exit 77
fi
for p in xb-work xb-spawn; do
	if [ ! -x "$top_builddir/bench/$p" ]; then
		echo "ERROR: $top_builddir/bench/$p is not built"
		exit 99
	fi
done

out=$(mktemp -d "${TMPDIR:-/tmp}/xb-smoke.XXXXXX") || exit 99
trap 'rm -rf "$out"' EXIT INT TERM

"$PY" "$top_srcdir/bench/run.py" --mode smoke --builddir "$top_builddir" \
	--srcdir "$top_srcdir" --out "$out" >"$out/stdout" 2>"$out/stderr"
rc=$?
tail -n 3 "$out/stderr"
if [ "$rc" -ne 0 ]; then
	echo "FAIL: run.py --mode smoke exited with $rc"
	cat "$out/stderr"
	exit 1
fi

"$PY" - "$out" "$top_srcdir" <<'PYEOF'
import contextlib, io, json, os, re, shutil, sys

out = sys.argv[1]
sys.path.insert(0, os.path.join(sys.argv[2], "bench"))
from xpfobench.baseline import check_baseline, write_baseline
bad = []
md = open(os.path.join(out, "latest.md")).read()
data = json.load(open(os.path.join(out, "latest.json")))
workloads = ["larson", "xmalloc", "scratch", "tree", "hash", "frag", "prodcons",
             "threadchurn", "shortlived", "server", "glthread", "bigblock", "genchurn",
             "mixed2"]

for section in ("## Machine", "## Summary", "## Time", "## Peak RSS",
                "## Context switches", "## Page faults, system time and flush rounds"):
    if section not in md:
        bad.append("report lacks section %r" % section)
allocs = [a["name"] for a in data["allocators"] if a["ok"]]
if "glibc" not in allocs:
    bad.append("glibc did not run")
for part in ("## Time", "## Peak RSS"):
    text = md.split(part, 1)[-1]
    header = re.search(r"^\| benchmark \| (.*) \|$", text, re.M)
    if not header or header.group(1).split(" | ")[0] != "glibc":
        bad.append("%s: no table with a glibc column" % part)
        continue
    for w in workloads:
        row = re.search(r"^\| %s \| ([0-9.]+)" % w, text, re.M)
        if not row or float(row.group(1)) <= 0:
            bad.append("%s: no positive glibc number for %s" % (part, w))
for w in workloads:
    runs = [r for r in data["results"].get(w, {}).get("glibc", []) if r]
    if not runs or not runs[0]["wall"] > 0 or not runs[0]["maxrss_kb"] > 0:
        bad.append("latest.json: no glibc measurement for %s" % w)
if shutil.which("strace"):
    sc = data["profiles"].get("larson", {}).get("glibc", {}).get("syscalls", {})
    if not sc.get("mmap"):
        bad.append("strace profile of larson under glibc counted no mmap")
if "xpfo" in allocs:
    # xpfo's counters, from the stats=json object of each process
    xp = data["profiles"].get("larson", {}).get("xpfo", {}).get("xpfo") or {}
    if xp.get("processes", 0) < 1 or not xp.get("backend") or "revoke_syscalls" not in xp:
        bad.append("profile of larson under xpfo: xpfo's counters not read: %r" % xp)
    # bigblock frees blocks of MiBs: xpfo takes their pages away, a flush round each
    fr = (data["profiles"].get("bigblock", {}).get("xpfo", {}).get("xpfo") or {}).get("flush_rounds")
    if not fr:
        bad.append("profile of bigblock under xpfo: no flush rounds counted: %r" % fr)
for w in workloads:
    runs = [r for r in data["results"].get(w, {}).get("glibc", []) if r]
    if runs and not runs[0].get("minflt"):
        bad.append("latest.json: no minor page faults for %s under glibc" % w)
if shutil.which("gnuplot") and len(allocs) > 1:
    for png in ("time_ratio.png", "rss_ratio.png"):
        p = os.path.join(out, png)
        if not os.path.exists(p) or open(p, "rb").read(8) != b"\x89PNG\r\n\x1a\n":
            bad.append("%s missing or not a PNG" % png)
# The regression guard (make bench-check) on this run's own ratios: against
# a baseline of them it warns on none; against one where every ratio is 30%
# lower (this run 30% worse) it warns on every one it compares.
bpath = os.path.join(out, "baseline.json")
write_baseline(data, bpath)
base = json.load(open(bpath))
nratios = len(base["ratios"])
def guard(scale):
    b = dict(base, ratios={k: v * scale for k, v in base["ratios"].items()})
    json.dump(b, open(bpath, "w"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = check_baseline(data, bpath, True)
    return rc, err.getvalue().count("bench-check: WARNING")
if nratios < 10:
    bad.append("baseline of the smoke run has only %d ratios" % nratios)
else:
    rc, n = guard(1.0)
    if rc != 0 or n:
        bad.append("guard against its own ratios: exit %d, %d warnings" % (rc, n))
    rc, n = guard(1 / 1.3)
    if rc != 1 or n != nratios:
        bad.append("guard against a 30%% regression of all %d ratios: exit %d, %d warnings"
                   % (nratios, rc, n))
    else:
        print("guard: a 30%% regression warned on %d of %d ratios" % (n, nratios))
for e in data["errors"]:
    # an allocator too slow for the smoke run is a note; xpfo reporting a
    # violation or a fatal error in a benchmark is a failure
    if "xpfo: violation" in e or "xpfo: fatal" in e:
        bad.append(e[:300])
    else:
        print("note: " + e)
for b in bad:
    print("FAIL: " + b)
print("smoke: %d allocators (%s), %d problems" % (len(allocs), ", ".join(allocs), len(bad)))
sys.exit(1 if bad else 0)
PYEOF
