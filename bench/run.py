#!/usr/bin/env python3
"""run.py - xpfo's benchmark runner (python3 standard library only).

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
(XPFO_OPTIONS=...,stats=1).
"""

import argparse
import copy
import datetime
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

LIBDIR = "/usr/lib/x86_64-linux-gnu"
SYSCALLS = ["mmap", "munmap", "mprotect", "pkey_mprotect", "madvise", "mremap",
            "brk", "futex"]
# xpfo counters shown in the report (names of struct xpfo_stats fields)
XPFO_COUNTERS = ["revoke_syscalls", "grant_syscalls", "pages_revoked",
                 "pages_queued", "pages_cancelled", "flushes", "purges",
                 "mmap_syscalls", "munmap_syscalls", "madvise_syscalls",
                 "vmas", "peak_resident_kib", "revoke_failures"]
# counters that are a level ("now" or "peak"), not a running total
XPFO_LEVELS = {"vmas", "peak_resident_kib", "pages_quarantined"}
ABLATION_BATCHES = [1, 4, 16, 64, 256, 1024]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# allocators

class Alloc:
    def __init__(self, name, preload, env=None, xpfo=False, note="", only=None):
        self.name = name
        self.preload = preload  # path, or None for glibc
        self.env = env or {}
        self.xpfo = xpfo
        self.note = note
        self.only = only  # the benchmarks it applies to (None: all)
        self.ok = True
        self.why = ""


def find_libc():
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib"):
        p = os.path.join(d, "libc.so.6")
        if os.path.exists(p):
            return p
    return None


PROFILE_BENCHES = {"larson", "xmalloc", "scratch", "tree", "hash", "frag", "sqlite",
                   "python", "redis", "git"}


def make_allocators(builddir):
    xpfo_so = os.path.join(builddir, ".libs", "libxpfo.so")
    return [
        Alloc("glibc", None, note="no preload"),
        Alloc("jemalloc", os.path.join(LIBDIR, "libjemalloc.so.2")),
        Alloc("mimalloc", os.path.join(LIBDIR, "libmimalloc.so.2")),
        Alloc("xpfo", xpfo_so, {}, True, "default (revoke=batched)"),
        Alloc("xpfo-eager", xpfo_so, {"XPFO_OPTIONS": "revoke=eager"}, True),
        Alloc("xpfo-off", xpfo_so, {"XPFO_OPTIONS": "revoke=off"}, True),
        # the hardening profiles (default is the "xpfo" column)
        # (workloads and programs only: the micro benchmarks would double the run)
        Alloc("xpfo-strict", xpfo_so, {"XPFO_OPTIONS": "profile=strict"}, True,
              "profile=strict (every mitigation)", only=PROFILE_BENCHES),
        Alloc("xpfo-light", xpfo_so, {"XPFO_OPTIONS": "profile=light"}, True,
              "profile=light (the fewest mitigations)", only=PROFILE_BENCHES),
        # every thread but the first in a compartment of its own: only for
        # the share-nothing workloads (each thread builds its own structure)
        Alloc("xpfo-cthread", xpfo_so, {"XPFO_OPTIONS": "compartments=thread"}, True,
              "compartments=thread, share-nothing workloads only", only={"tree", "hash"}),
    ]


def applies(alloc, bench):
    return alloc.only is None or bench.name in alloc.only


def base_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "XPFO_OPTIONS", "MALLOC_CONF", "MIMALLOC_OPTIONS",
              "PYTHONMALLOC", "GIT_DIR"):
        env.pop(k, None)
    env["LC_ALL"] = "C"
    return env


def alloc_env(alloc, extra_options=None, stats=False, force_libc=False):
    """Environment for a process that should run under `alloc`."""
    env = base_env()
    env.update(alloc.env)
    if alloc.preload:
        env["LD_PRELOAD"] = alloc.preload
    elif force_libc:
        # the program links another malloc (redis links jemalloc): put
        # glibc first in the lookup order so malloc resolves to it
        libc = find_libc()
        if libc:
            env["LD_PRELOAD"] = libc
    if alloc.xpfo:
        opts = [o for o in env.get("XPFO_OPTIONS", "").split(",") if o]
        opts += extra_options or []
        if stats:
            opts.append("stats=1")
        if opts:
            env["XPFO_OPTIONS"] = ",".join(opts)
    return env


# --------------------------------------------------------------------------
# running one process

class Run:
    """What one process (or a server plus its client) measured."""

    def __init__(self):
        self.wall = None
        self.user = self.sys = 0.0
        self.maxrss_kb = 0
        self.nvcsw = self.nivcsw = 0
        self.rc = None
        self.stdout = ""
        self.stderr = ""
        self.error = None  # text when the run failed
        self.syscalls = {}
        self.xpfo = {}
        self.vmas_peak = None

    def as_dict(self):
        return dict(wall=self.wall, user=self.user, sys=self.sys,
                    maxrss_kb=self.maxrss_kb, nvcsw=self.nvcsw,
                    nivcsw=self.nivcsw, rc=self.rc, error=self.error,
                    syscalls=self.syscalls, xpfo=self.xpfo,
                    vmas_peak=self.vmas_peak)


def _children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
            ppid = int(s[s.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def _descendants(pid):
    kids = _children_map()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in kids.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _count_maps(pid):
    try:
        with open("/proc/%d/maps" % pid, "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def _comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return ""


class VmaSampler(threading.Thread):
    """Largest VMA count of any process under `pid` (not counting the
    measuring helpers xb-spawn and strace), every 20 ms."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for p in _descendants(self.pid):
                if _comm(p) not in ("xb-spawn", "strace"):
                    self.peak = max(self.peak, _count_maps(p))
            self.stop.wait(0.02)


class Proc:
    """A child in its own process group, with stdio to files, started
    through xb-spawn, which measures it (see bench/spawn.c for why)."""

    spawn = None  # path of xb-spawn, set in main

    def __init__(self, argv, env, cwd=None, stdin_path=None, tmpdir=None):
        self.out = tempfile.TemporaryFile(dir=tmpdir)
        self.err = tempfile.TemporaryFile(dir=tmpdir)
        fd, self.report = tempfile.mkstemp(dir=tmpdir, prefix="spawn-")
        os.close(fd)
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen([Proc.spawn, self.report] + argv, env=env, cwd=cwd,
                                  stdin=stdin, stdout=self.out, stderr=self.err,
                                  start_new_session=True)
        if stdin_path:
            stdin.close()
        self.pid = self.p.pid
        self.timed_out = False

    def wait(self, timeout):
        timer = threading.Timer(timeout, self.kill)
        timer.start()
        try:
            self.p.wait()
        finally:
            timer.cancel()
        t1 = time.perf_counter()
        self.kill_group()  # leftovers (daemons a program started)
        r = Run()
        r.rc = self.p.returncode
        r.wall = t1 - self.t0
        try:
            with open(self.report) as f:
                rep = dict(kv.split("=", 1) for kv in f.read().split())
            r.wall = float(rep["wall"])
            r.user, r.sys = float(rep["user"]), float(rep["sys"])
            r.maxrss_kb = int(rep["maxrss_kb"])
            r.nvcsw, r.nivcsw = int(rep["nvcsw"]), int(rep["nivcsw"])
            r.rc = int(rep["status"])
        except (OSError, ValueError, KeyError):
            if not self.timed_out and r.rc == 0:
                r.rc = -1  # xb-spawn wrote no report: count it as a failure
        os.unlink(self.report)
        self.out.seek(0)
        self.err.seek(0)
        r.stdout = self.out.read().decode("utf-8", "replace")
        r.stderr = self.err.read().decode("utf-8", "replace")
        self.out.close()
        self.err.close()
        if self.timed_out:
            r.error = "timed out after %.0f s" % timeout
        elif r.rc != 0:
            r.error = "exit status %d: %s" % (r.rc, tail(r.stderr))
        return r

    def kill(self):
        self.timed_out = True
        self.kill_group()

    def kill_group(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def tail(text, n=3):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return " | ".join(lines[-n:])[:400]


def strace_wrap(argv, env, sc_out):
    """Wrap argv in strace -c -f; preload variables go to the tracee only."""
    senv = dict(env)
    pre = []
    if "LD_PRELOAD" in senv:
        pre = ["-E", "LD_PRELOAD=" + senv.pop("LD_PRELOAD")]
    return (["strace", "-f", "-c", "-o", sc_out, "--seccomp-bpf",
             "-e", "trace=" + ",".join(SYSCALLS)] + pre + argv, senv)


def parse_strace(path):
    counts = {}
    try:
        with open(path) as f:
            for line in f:
                t = line.split()
                if len(t) >= 5 and t[-1] in SYSCALLS and t[3].isdigit():
                    counts[t[-1]] = counts.get(t[-1], 0) + int(t[3])
    except OSError:
        pass
    return counts


# xpfo's stats=1 report (stderr, one block per process), e.g.
#   xpfo:   revocation   queued 225 runs / 279 pages, cancelled 262 pages, revoked 22 pages
#   xpfo:   syscalls     revoke 2 (11.00 pages each), grant 21, madvise 0, mmap 2, munmap 3
_XPFO_PATTERNS = [
    (r"revocation\s+queued (\d+) runs / (\d+) pages, cancelled (\d+) pages, revoked (\d+) pages",
     ["revoke_queued", "pages_queued", "pages_cancelled", "pages_revoked"]),
    (r"syscalls\s+revoke (\d+)\b", ["revoke_syscalls"]),
    (r"syscalls\s.*\bgrant (\d+)", ["grant_syscalls"]),
    (r"syscalls\s.*\bmadvise (\d+)", ["madvise_syscalls"]),
    (r"syscalls\s.*\bmmap (\d+)", ["mmap_syscalls"]),
    (r"syscalls\s.*\bmunmap (\d+)", ["munmap_syscalls"]),
    (r"flushes\s+(\d+)", ["flushes"]),
    (r"failures\s+(\d+) revocations failed, (\d+) pages quarantined",
     ["revoke_failures", "pages_quarantined"]),
    (r"memory\s.*\bresident \d+ KiB \(peak (\d+)\)", ["peak_resident_kib"]),
    (r"memory\s.*\bpurged (\d+) pages in (\d+) calls", ["pages_purged", "purges"]),
    (r"address\s.*?(\d+) VMAs", ["vmas"]),
]
_XPFO_HEADER = re.compile(r"xpfo: stats \(pid \d+, backend (\w+), revoke=(\w+)(?:, batch=(\d+))?")


def parse_xpfo_stats(text):
    """Sum xpfo's stats=1 blocks (one per process) from stderr text; levels
    (vmas, peaks, quarantined pages) take the largest value."""
    out = {}
    for line in text.splitlines():
        if not line.startswith("xpfo:"):
            continue
        h = _XPFO_HEADER.search(line)
        if h:
            out["processes"] = out.get("processes", 0) + 1
            out["backend"], out["revoke"] = h.group(1), h.group(2)
            if h.group(3):
                out["batch"] = int(h.group(3))
            continue
        for pat, names in _XPFO_PATTERNS:
            m = re.search(pat, line)
            if not m:
                continue
            for name, val in zip(names, m.groups()):
                v = int(val)
                if name in XPFO_LEVELS:
                    out[name] = max(out.get(name, 0), v)
                else:
                    out[name] = out.get(name, 0) + v
    return out


# --------------------------------------------------------------------------
# benchmarks

SCALES = {
    # workload: xb-work arguments per mode (sized for ~0.2 s / ~1 s on glibc)
    "larson": {"smoke": "-n 5000 -r 2", "quick": "-n 200000 -r 5",
               "full": "-n 500000 -r 10"},
    "xmalloc": {"smoke": "-n 200", "quick": "-n 4000", "full": "-n 15000"},
    "scratch": {"smoke": "-n 5000", "quick": "-n 100000", "full": "-n 400000"},
    "tree": {"smoke": "-n 5000 -r 1 -t 2", "quick": "-n 40000 -r 2 -t 2",
             "full": "-n 100000 -r 3 -t 2"},
    "hash": {"smoke": "-n 5000 -r 1 -t 2", "quick": "-n 50000 -r 2 -t 2",
             "full": "-n 120000 -r 3 -t 2"},
    "frag": {"smoke": "-n 10000 -r 1", "quick": "-n 150000 -r 2",
             "full": "-n 300000 -r 4"},
    "sqlite": {"smoke": 2000, "quick": 30000, "full": 150000},
    "python": {"smoke": 2000, "quick": 15000, "full": 60000},
    "redis": {"smoke": 2000, "quick": 10000, "full": 50000},
    "git": {"smoke": (20, 4), "quick": (150, 15), "full": (300, 30)},
}


class Bench:
    kind = "workload"
    force_libc = False
    server = False

    def __init__(self, name, desc):
        self.name, self.desc = name, desc
        self.skip = None  # reason when it cannot run here

    def setup(self, ctx):
        pass

    def key(self, run):
        """What must be identical under every allocator (a checksum)."""
        return None

    def env(self, ctx):
        """Extra environment for the measured process."""
        return {}


class Workload(Bench):
    def __init__(self, name, desc):
        super().__init__(name, desc)

    def setup(self, ctx):
        self.exe = os.path.join(ctx.builddir, "bench", "xb-work")
        if not os.access(self.exe, os.X_OK):
            self.skip = "bench/xb-work not built"

    def argv(self, ctx):
        return [self.exe, self.name] + SCALES[self.name][ctx.mode].split()

    def key(self, run):
        lines = [l for l in run.stdout.splitlines() if l.startswith("xbw: ")
                 and not re.match(r"xbw: (seconds|rss|vmas|live_kb|rss_)", l)]
        return "\n".join(lines)

    def metrics(self, run):
        return dict(re.findall(r"^xbw: ([a-z_]+)=([0-9.]+)$", run.stdout, re.M))


class Sqlite(Bench):
    kind = "program"

    def setup(self, ctx):
        if not shutil.which("sqlite3"):
            self.skip = "sqlite3 not installed"
            return
        rows = SCALES["sqlite"][ctx.mode]
        db = self.db(ctx)
        self.query = os.path.join(ctx.srcdir, "bench", "programs", "sqlite-query.sql")
        if not os.path.exists(db):
            with open(os.path.join(ctx.srcdir, "bench", "programs", "sqlite-gen.sql")) as f:
                sql = f.read().replace("@ROWS@", str(rows))
            tmp = db + ".tmp"
            if os.path.exists(tmp):
                os.unlink(tmp)
            subprocess.run(["sqlite3", tmp], input=sql.encode(), check=True,
                           stdout=subprocess.DEVNULL, env=base_env())
            os.rename(tmp, db)

    @staticmethod
    def db(ctx):
        return os.path.join(ctx.workdir, "sqlite-%d.db" % SCALES["sqlite"][ctx.mode])

    def argv(self, ctx):
        return ["sqlite3", "-batch", "-readonly", self.db(ctx)]

    def stdin(self, ctx):
        return self.query

    def key(self, run):
        return run.stdout


class Python(Bench):
    kind = "program"
    exe = "/usr/bin/python3"

    def setup(self, ctx):
        if not os.access(self.exe, os.X_OK):
            self.skip = "/usr/bin/python3 not installed"
        self.script = os.path.join(ctx.srcdir, "bench", "programs", "alloc_heavy.py")

    def argv(self, ctx):
        return [self.exe, "-S", "-s", self.script, str(SCALES["python"][ctx.mode])]

    def env(self, ctx):
        return {"PYTHONMALLOC": "malloc"}

    def key(self, run):
        return run.stdout


class Redis(Bench):
    kind = "program"
    server = True
    force_libc = True  # Debian's redis-server links libjemalloc

    def setup(self, ctx):
        for p in ("redis-server", "redis-benchmark"):
            if not shutil.which(p):
                self.skip = p + " not installed"

    def server_argv(self, ctx, port):
        return ["redis-server", "--port", str(port), "--bind", "127.0.0.1",
                "--protected-mode", "yes", "--save", "", "--appendonly", "no",
                "--dir", ctx.workdir, "--loglevel", "warning",
                "--daemonize", "no", "--unixsocket", ""]

    def client_argv(self, ctx, port):
        n = SCALES["redis"][ctx.mode]
        return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(n),
                "-c", "16", "-P", "8", "-r", "100000", "-d", "128", "-q",
                "-t", "set,get,incr,lpush,rpop,sadd,hset,spop,zadd,lrange_100,mset"]

    def key(self, run):
        return " ".join(sorted(set(re.findall(r"^([A-Z_]+[A-Z0-9_ ()]*?):", run.stdout, re.M))))


class Git(Bench):
    kind = "program"

    def setup(self, ctx):
        if not shutil.which("git"):
            self.skip = "git not installed"
            return
        files, commits = SCALES["git"][ctx.mode]
        repo = self.repo(ctx)
        if os.path.isdir(repo):
            return
        tmp = repo + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        env = self.env_git(ctx)
        subprocess.run(["git", "init", "-q", "--bare", tmp], check=True, env=env)
        fi = subprocess.Popen(["git", "--git-dir", tmp, "fast-import", "--quiet"],
                              stdin=subprocess.PIPE, env=env)
        fi.stdin.write(self.history(files, commits))
        fi.stdin.close()
        if fi.wait() != 0:
            raise RuntimeError("git fast-import failed")
        os.rename(tmp, repo)

    @staticmethod
    def repo(ctx):
        return os.path.join(ctx.workdir, "git-%d-%d.git" % SCALES["git"][ctx.mode])

    @staticmethod
    def history(files, commits):
        """A deterministic history: `files` text files of ~200 lines, each
        commit rewriting a few lines in a tenth of them."""
        import random
        rnd = random.Random(1)
        words = ["alpha", "beta", "gamma", "delta", "malloc", "free", "page",
                 "owner", "revoke", "flush", "segment", "slab", "vma", "tlb"]
        content = [[" ".join(rnd.choice(words) for _ in range(8)) + " %d" % i
                    for i in range(200)] for _ in range(files)]
        out = []
        for c in range(commits):
            changed = range(files) if c == 0 else rnd.sample(range(files), max(1, files // 10))
            for f in changed:
                if c:
                    for _ in range(5):
                        content[f][rnd.randrange(200)] = " ".join(
                            rnd.choice(words) for _ in range(8)) + " c%d" % c
            msg = "commit %d\n" % c
            out.append("commit refs/heads/main\ncommitter b <b@example.invalid> %d +0000\n"
                       "data %d\n%s" % (1700000000 + c, len(msg), msg))
            for f in changed:
                data = "\n".join(content[f]) + "\n"
                out.append("M 100644 inline dir%d/file%d.txt\ndata %d\n%s\n" %
                           (f % 10, f, len(data.encode()), data))
        return "".join(out).encode()

    @staticmethod
    def env_git(ctx):
        return {"HOME": ctx.workdir, "GIT_CONFIG_NOSYSTEM": "1",
                "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@example.invalid",
                "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@example.invalid"}

    def argv(self, ctx):
        return ["git", "--git-dir", self.repo(ctx), "-c", "pack.threads=2",
                "-c", "pack.window=20", "-c", "gc.auto=0", "repack", "-a", "-d", "-f", "-q"]

    def env(self, ctx):
        return self.env_git(ctx)


def make_benches():
    return [
        Workload("larson", "larson-style server simulation, 2 threads, slots "
                 "inherited across threads (cross-thread frees)"),
        Workload("xmalloc", "xmalloc-style: 2 threads mail batches of objects "
                 "to each other, every free is remote"),
        Workload("scratch", "cache-scratch: false sharing if an allocator "
                 "reuses a remotely allocated neighbour"),
        Workload("tree", "many small objects: BST build, lookup, half delete, "
                 "reinsert, teardown; 2 threads, one tree each (share nothing)"),
        Workload("hash", "many small objects: chained hash map with string "
                 "keys/values, rehash growth, deletes, teardown; 2 threads, one "
                 "map each (share nothing)"),
        Workload("frag", "fragmentation: mixed sizes and lifetimes; peak RSS "
                 "and RSS per live byte"),
        Sqlite("sqlite", "sqlite3 CLI: sorts, group-bys, a join and an index "
               "build over a generated database (in-memory temp store)"),
        Python("python", "python3 with PYTHONMALLOC=malloc: objects, dicts, "
               "strings, json round trip, sort"),
        Redis("redis", "redis-server on 127.0.0.1 driven by redis-benchmark "
              "(fixed request count); time = client wall time, RSS = server"),
        Git("git", "git repack -adf with pack.threads=2 on a generated "
            "history (multi-threaded delta search)"),
    ]


# --------------------------------------------------------------------------
# the context of a run

class Ctx:
    pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def redis_cmd(port, *args, timeout=1.0):
    msg = "*%d\r\n" % len(args) + "".join("$%d\r\n%s\r\n" % (len(a), a) for a in args)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(msg.encode())
        try:
            return s.recv(64)
        except (socket.timeout, ConnectionResetError):
            return b""


def bench_timeout(ctx, runs):
    """A hang should not eat the time budget: once glibc has run a benchmark,
    allow 30 times its median (at least 15 s; 5 s in smoke mode), never more
    than ctx.timeout."""
    g = median([r["wall"] for r in runs.get("glibc", []) if r])
    floor = 5.0 if ctx.mode == "smoke" else 15.0
    return ctx.timeout if g is None else min(ctx.timeout, max(floor, 30 * g))


def run_bench(ctx, bench, alloc, profile=False, timeout=None):
    """One run of `bench` under `alloc`; profile: strace + VMAs + xpfo stats."""
    timeout = timeout or ctx.timeout
    env = alloc_env(alloc, stats=profile, force_libc=bench.force_libc)
    env.update(bench.env(ctx))
    sc_out = os.path.join(ctx.tmpdir, "strace.out")
    if bench.server:
        return run_server_bench(ctx, bench, alloc, env, profile, sc_out, timeout)
    argv = bench.argv(ctx)
    if profile and ctx.strace:
        argv, env = strace_wrap(argv, env, sc_out)
    stdin = bench.stdin(ctx) if hasattr(bench, "stdin") else None
    p = Proc(argv, env, cwd=ctx.workdir, stdin_path=stdin, tmpdir=ctx.tmpdir)
    sampler = None
    if profile:
        sampler = VmaSampler(p.pid)
        sampler.start()
    r = p.wait(timeout)
    if sampler:
        sampler.stop.set()
        sampler.join()
        r.vmas_peak = sampler.peak
        r.syscalls = parse_strace(sc_out) if ctx.strace else {}
        if alloc.xpfo:
            r.xpfo = parse_xpfo_stats(r.stderr)
    return r


def run_server_bench(ctx, bench, alloc, env, profile, sc_out, timeout):
    port = free_port()
    argv = bench.server_argv(ctx, port)
    if profile and ctx.strace:
        argv, env = strace_wrap(argv, env, sc_out)
    srv = Proc(argv, env, cwd=ctx.workdir, tmpdir=ctx.tmpdir)
    sampler = None
    deadline = time.time() + 15
    while True:
        try:
            if redis_cmd(port, "PING").startswith(b"+PONG"):
                break
        except OSError:
            pass
        if time.time() > deadline or srv.p.poll() is not None:
            srv.kill()
            r = srv.wait(5)
            r.error = "server did not start: " + (r.error or tail(r.stderr))
            return r
        time.sleep(0.02)
    if profile:
        sampler = VmaSampler(srv.pid)
        sampler.start()
    cli = Proc(bench.client_argv(ctx, port), base_env(), cwd=ctx.workdir, tmpdir=ctx.tmpdir)
    c = cli.wait(timeout)
    try:
        redis_cmd(port, "SHUTDOWN", "NOSAVE")
    except OSError:
        pass
    s = srv.wait(30)
    if sampler:
        sampler.stop.set()
        sampler.join()
        s.vmas_peak = sampler.peak
        s.syscalls = parse_strace(sc_out) if ctx.strace else {}
        if alloc.xpfo:
            s.xpfo = parse_xpfo_stats(s.stderr)
    # time is the client's; memory and context switches are the server's
    s.wall = c.wall
    s.stdout = c.stdout
    if c.error:
        s.error = "client: " + c.error
    elif s.error and "SIGKILL" not in s.error:
        s.error = "server: " + s.error
    return s


def check_alloc(ctx, alloc):
    """Can this allocator run a trivial program and a small workload?"""
    if alloc.preload and not os.path.exists(alloc.preload):
        return "%s not found" % alloc.preload
    exe = os.path.join(ctx.builddir, "bench", "xb-work")
    # larson frees across threads; a share-nothing variant gets tree instead
    work = ["larson", "-n", "1000", "-r", "1"] if alloc.only is None else \
        ["tree", "-n", "1000", "-r", "1", "-t", "2"]
    for argv in (["/bin/true"], [exe] + work):
        if not os.access(argv[0], os.X_OK):
            continue
        p = Proc(argv, alloc_env(alloc), tmpdir=ctx.tmpdir)
        r = p.wait(20)
        if r.error:
            return "%s failed under it: %s" % (os.path.basename(argv[0]), r.error)
    return None


# --------------------------------------------------------------------------
# micro benchmarks (Google Benchmark JSON)

def run_micro(ctx, exe, env, bfilter=None):
    out = os.path.join(ctx.tmpdir, "micro.json")
    if os.path.exists(out):
        os.unlink(out)
    argv = [exe, "--benchmark_out=" + out, "--benchmark_out_format=json",
            "--benchmark_min_time=%g" % ctx.micro_min_time]
    if bfilter:
        argv.append("--benchmark_filter=" + bfilter)
    p = Proc(argv, env, tmpdir=ctx.tmpdir)
    r = p.wait(ctx.timeout * 4)
    res = {}
    try:
        with open(out) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return res, r.error or "no JSON output", {}
    for b in data.get("benchmarks", []):
        if b.get("run_type", "iteration") != "iteration":
            continue
        if b.get("error_occurred"):
            res[b["name"]] = {"error": b.get("error_message", "error")}
            continue
        ips = b.get("items_per_second")
        entry = {"ns_per_item": 1e9 / ips if ips else None}
        for k, v in b.items():
            if k.endswith(("_per_obj", "_per_revoke_sys")) or k in ("pending_pages", "vmas"):
                entry[k] = v
        res[b["name"]] = entry
    return res, r.error, data.get("context", {})


# --------------------------------------------------------------------------
# statistics

def natural(name):
    """Sort key: numbers inside names compare as numbers (malloc_free/8 < /16)."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


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


# --------------------------------------------------------------------------
# machine description

def sh(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine_info(ctx):
    info = {}
    info["date"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    u = os.uname()
    info["kernel"] = "%s %s %s" % (u.sysname, u.release, u.machine)
    cpu, flags = "", ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and not cpu:
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                flags = line.split(":", 1)[1].strip()
    info["cpu"] = "%s, %d CPUs" % (cpu, os.cpu_count() or 0)
    info["cpu_flags"] = flags
    fl = flags.split()
    info["pku"] = "yes" if "pku" in fl and "ospke" in fl else "no"
    with open("/proc/meminfo") as f:
        info["memory"] = f.readline().split(":", 1)[1].strip()
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            info["max_map_count"] = f.read().strip()
    except OSError:
        pass
    versions = {}
    versions["gcc"] = sh(["gcc", "-dumpfullversion"])
    versions["glibc"] = os.confstr("CS_GNU_LIBC_VERSION") if hasattr(os, "confstr") else ""
    pk = sh(["dpkg-query", "-W", "-f", "${Package} ${Version}\\n", "libjemalloc2",
             "libmimalloc2.0", "libbenchmark-dev", "sqlite3", "redis-server",
             "python3.11", "git", "strace", "gnuplot-nox"])
    for line in pk.splitlines():
        if " " in line:
            k, v = line.split(" ", 1)
            versions[k] = v
    versions["python (runner)"] = sys.version.split()[0]
    rev = sh(["git", "-C", ctx.srcdir, "describe", "--always", "--dirty"])
    date = sh(["git", "-C", ctx.srcdir, "log", "-1", "--format=%cd", "--date=short"])
    versions["xpfo"] = ("%s (%s)" % (rev, date)) if rev else "unknown"
    so = os.path.join(ctx.builddir, ".libs", "libxpfo.so")
    if os.path.exists(so):
        versions["xpfo"] += ", libxpfo.so built %s" % datetime.datetime.fromtimestamp(
            os.path.getmtime(os.path.realpath(so)), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    info["versions"] = versions
    return info


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


# --------------------------------------------------------------------------
# main flow

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["smoke", "quick", "full"], default="quick")
    ap.add_argument("--builddir", default=".")
    ap.add_argument("--srcdir", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--allocators", default=None,
                    help="comma-separated subset of glibc,jemalloc,mimalloc,xpfo,xpfo-eager,xpfo-off")
    ap.add_argument("--only", default=None, help="regex on benchmark names")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--no-profile", action="store_true", help="skip strace/VMA/xpfo-stats runs")
    ap.add_argument("--no-micro", action="store_true")
    ap.add_argument("--no-plots", action="store_true")
    ap.add_argument("--check", default=None, help="baseline JSON to compare with")
    ap.add_argument("--strict", action="store_true", help="with --check: exit 1 on a regression")
    ap.add_argument("--write-baseline", default=None)
    args = ap.parse_args()

    ctx = Ctx()
    ctx.mode = args.mode
    ctx.builddir = os.path.abspath(args.builddir)
    ctx.srcdir = os.path.abspath(args.srcdir or os.path.join(os.path.dirname(__file__), ".."))
    ctx.out = os.path.abspath(args.out or os.path.join(ctx.builddir, "bench", "results", args.mode))
    ctx.workdir = os.path.join(ctx.builddir, "bench", "work")
    ctx.repeat = args.repeat or {"smoke": 1, "quick": 3, "full": 5}[args.mode]
    ctx.timeout = {"smoke": 20, "quick": 60, "full": 300}[args.mode]
    # the micro suite is long (about 150 benchmarks per allocator): the full
    # run gives it the quick run's time per benchmark, to stay under 20 min
    ctx.micro_min_time = {"smoke": 0.002, "quick": 0.01, "full": 0.01}[args.mode]
    Proc.spawn = os.path.join(ctx.builddir, "bench", "xb-spawn")
    if not os.access(Proc.spawn, os.X_OK):
        ap.error("%s not built (make bench/xb-spawn)" % Proc.spawn)
    ctx.profile = not args.no_profile
    ctx.strace = bool(shutil.which("strace")) and ctx.profile
    ctx.no_plots = args.no_plots
    os.makedirs(ctx.out, exist_ok=True)
    os.makedirs(ctx.workdir, exist_ok=True)
    ctx.tmpdir = tempfile.mkdtemp(prefix="xb-", dir=ctx.workdir)
    if args.repeat is not None and args.repeat < 1:
        ap.error("--repeat must be at least 1")
    try:
        return run_suite(ctx, args)
    finally:
        shutil.rmtree(ctx.tmpdir, ignore_errors=True)


def run_suite(ctx, args):
    start = time.time()
    load_start = loadavg()
    allocs = make_allocators(ctx.builddir)
    if args.allocators:
        want = args.allocators.split(",")
        bad = [w for w in want if w not in [a.name for a in allocs]]
        if bad:
            log("run.py: unknown allocator(s): %s" % ", ".join(bad))
            return 2
        allocs = [a for a in allocs if a.name in want]
    for a in allocs:
        why = check_alloc(ctx, a)
        if why:
            a.ok, a.why = False, why
            log("run.py: %s unavailable: %s" % (a.name, why))
    live = [a for a in allocs if a.ok]
    benches = make_benches()
    if args.mode == "smoke":
        benches = [b for b in benches if b.name not in ("redis", "git", "python")]
    if args.only:
        benches = [b for b in benches if re.search(args.only, b.name)]
    # Profile runs (strace stops the process at every traced syscall) use the
    # quick inputs in a full run, to keep within the time budget.
    pctx = copy.copy(ctx)
    if ctx.mode == "full":
        pctx.mode = "quick"
    for b in benches:
        try:
            b.setup(ctx)
            if ctx.profile and pctx.mode != ctx.mode:
                b.setup(pctx)
        except (OSError, subprocess.SubprocessError, RuntimeError) as e:
            b.skip = "setup failed: %s" % e
        if b.skip:
            log("run.py: skipping %s: %s" % (b.name, b.skip))
    runnable = [b for b in benches if not b.skip]

    micro_exe = os.path.join(ctx.builddir, "bench", "xb-micro")
    xmicro_exe = os.path.join(ctx.builddir, "bench", "xb-micro-xpfo")
    do_micro = not args.no_micro and os.access(micro_exe, os.X_OK)
    xpfo_ok = any(a.xpfo and a.ok for a in allocs)
    do_ablation = not args.no_micro and os.access(xmicro_exe, os.X_OK) and xpfo_ok
    ablation_modes = [("off", ["revoke=off"]), ("eager", ["revoke=eager"])] + \
        [("batch=%d" % n, ["revoke=batched", "batch=%d" % n]) for n in ABLATION_BATCHES]
    micro_filter = "malloc_free/(64|4096)$|batch1024_random/256" if ctx.mode == "smoke" else None
    ablation_filter = ("revoke_pages/4/|revoke_pages_busy_peer/4/|revoke_small/64/"
                       if ctx.mode == "smoke" else "^revoke_")
    comp_modes = [("batched", []), ("eager", ["revoke=eager"]), ("off", ["revoke=off"])]
    comp_filter = ("^compartment_(enter_leave/16|malloc_in/64|transfer/8)/"
                   if ctx.mode == "smoke" else "^compartment_")

    pairs = len([1 for b in runnable for a in live if applies(a, b)])
    micro_allocs = [a for a in live if a.only is None]
    steps = ctx.repeat * pairs
    if ctx.profile:
        steps += pairs  # profile runs
    if do_micro:
        steps += ctx.repeat * len(micro_allocs)
    if do_ablation:
        steps += ctx.repeat * (len(ablation_modes) + len(comp_modes))
    done = [0]

    def progress(what):
        done[0] += 1
        el = time.time() - start
        log("[%3d/%d] %02d:%02d  %s  (%d left)" % (done[0], steps, el // 60, el % 60,
                                                   what, steps - done[0]))

    results = {b.name: {a.name: [] for a in live} for b in runnable}
    profiles = {b.name: {} for b in runnable}
    keys = {b.name: {} for b in runnable}
    errors = []
    dropped = set()
    metrics = {b.name: {a.name: [] for a in live} for b in runnable}

    for rep in range(ctx.repeat):
        for b in runnable:
            for a in [a for a in live if applies(a, b)]:
                progress("rep %d/%d  %-8s under %s" % (rep + 1, ctx.repeat, b.name, a.name))
                if a.name in dropped:
                    results[b.name][a.name].append(None)
                    continue
                r = run_bench(ctx, b, a, timeout=bench_timeout(ctx, results[b.name]))
                if r.error:
                    errors.append("%s under %s (rep %d): %s" % (b.name, a.name, rep + 1, r.error))
                    results[b.name][a.name].append(None)
                    if ctx.mode == "smoke" and "timed out" in r.error and a.name != "glibc":
                        # the smoke test must stay short: no more runs for it
                        dropped.add(a.name)
                        errors.append("%s dropped from the rest of the smoke run" % a.name)
                    continue
                results[b.name][a.name].append(r.as_dict())
                keys[b.name].setdefault(a.name, b.key(r))
                if isinstance(b, Workload):
                    metrics[b.name][a.name].append(b.metrics(r))
    for b in runnable if ctx.profile else []:
        for a in [a for a in live if applies(a, b)]:
            if a.name in dropped:
                done[0] += 1
                continue
            progress("profile %-8s under %s (strace -c -f, VMAs%s)" %
                     (b.name, a.name, ", xpfo stats" if a.xpfo else ""))
            r = run_bench(pctx, b, a, profile=True,
                          timeout=3 * bench_timeout(ctx, results[b.name]))
            if r.error:
                errors.append("%s under %s (profile run): %s" % (b.name, a.name, r.error))
            profiles[b.name][a.name] = r.as_dict()

    micro = {}
    micro_ctx = {}
    if do_micro:
        micro = {a.name: [] for a in micro_allocs}
        for rep in range(ctx.repeat):
            for a in micro_allocs:
                progress("rep %d/%d  micro benchmarks under %s" % (rep + 1, ctx.repeat, a.name))
                res, err, mctx = run_micro(ctx, micro_exe, alloc_env(a), micro_filter)
                micro_ctx = mctx or micro_ctx
                if err:
                    errors.append("micro under %s (rep %d): %s" % (a.name, rep + 1, err))
                micro[a.name].append(res)
    def xpfo_micro(title, modes, bfilter):
        """xb-micro-xpfo once per mode and repetition, interleaved."""
        out = {m: [] for m, _ in modes}
        for rep in range(ctx.repeat):
            for m, opts in modes:
                progress("rep %d/%d  %s, %s" % (rep + 1, ctx.repeat, title, m))
                env = base_env()
                if opts:
                    env["XPFO_OPTIONS"] = ",".join(opts)
                res, err, actx = run_micro(ctx, xmicro_exe, env, bfilter)
                if actx.get("xpfo_backend"):
                    micro_ctx["xpfo_backend"] = actx["xpfo_backend"]
                if err:
                    errors.append("%s %s (rep %d): %s" % (title, m, rep + 1, err))
                out[m].append(res)
        return out

    ablation, compartments = {}, {}
    if do_ablation:
        ablation = xpfo_micro("revocation ablation", ablation_modes, ablation_filter)
        compartments = xpfo_micro("compartments", comp_modes, comp_filter)

    # checksums must agree across allocators
    for b in runnable:
        distinct = {}
        for a, k in keys[b.name].items():
            distinct.setdefault(k, []).append(a)
        if len(distinct) > 1:
            errors.append("%s: output differs between allocators: %s" % (
                b.name, " vs ".join(",".join(v) for v in distinct.values())))

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
        "results": results, "profiles": profiles, "metrics": metrics,
        "micro": micro, "micro_context": micro_ctx, "ablation": ablation,
        "compartments": compartments, "profile_mode": pctx.mode,
        "errors": errors,
    }
    data["summary"] = summarize(data)
    with open(os.path.join(ctx.out, "latest.json"), "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    md = report(data, ctx)
    with open(os.path.join(ctx.out, "latest.md"), "w") as f:
        f.write(md)
    if not args.no_plots:
        plots(data, ctx)
    log("run.py: wrote %s/latest.md (%.0f s, load %s -> %s)" % (
        ctx.out, time.time() - start, load_start, data["load_end"]))
    print("\nTime relative to glibc (median of %d runs; lower is better):\n" % ctx.repeat)
    print(ratio_table_of(data, "time", "glibc"))
    print("Peak RSS relative to glibc:\n")
    print(ratio_table_of(data, "rss", "glibc"))
    print(section_summary(data))
    print(targets(data))
    if data["errors"]:
        print("%d failed runs, see 'Failures' in %s/latest.md" % (len(data["errors"]), ctx.out))
    rc = 0
    if args.write_baseline:
        write_baseline(data, args.write_baseline)
        log("run.py: wrote baseline %s" % args.write_baseline)
    if args.check:
        rc = check_baseline(data, args.check, args.strict)
    return rc


# --------------------------------------------------------------------------
# summary numbers

def bench_stat(data, bench, alloc, field):
    runs = data["results"].get(bench, {}).get(alloc, [])
    vals = [r[field] for r in runs if r]
    if field == "maxrss_kb":
        vals = [v / 1024.0 for v in vals]  # MiB
    return median(vals), spread(vals), len(vals), len(runs)


def micro_stat(data, bench, alloc):
    vals = [r.get(bench, {}).get("ns_per_item") for r in data["micro"].get(alloc, [])]
    return median(vals), spread(vals)


def summarize(data):
    """Ratios per benchmark and their geometric means."""
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    s = {"time": {}, "rss": {}, "micro": {}, "geomean": {}, "geomean_n": {}}
    for kind, field in (("time", "wall"), ("rss", "maxrss_kb")):
        for b in data["results"]:
            row = {}
            for a in allocs:
                row[a] = bench_stat(data, b, a, field)[0]
            s[kind][b] = row
    micro_names = sorted({n for runs in data["micro"].values() for r in runs for n in r},
                         key=natural)
    for n in micro_names:
        s["micro"][n] = {a: micro_stat(data, n, a)[0] for a in allocs if a in data["micro"]}
    for kind in ("time", "rss", "micro"):
        for ref in ("glibc", "mimalloc"):
            for a in allocs:
                rs = [ratio(row.get(a), row.get(ref)) for row in s[kind].values()]
                key = "%s/%s/%s" % (kind, a, ref)
                s["geomean"][key] = geomean(rs)
                # how many benchmarks it covers (a failed one is left out)
                s["geomean_n"][key] = [len([r for r in rs if r]), len(rs)]
    return s


def ratios_for_baseline(data):
    """xpfo/glibc ratios that bench-check guards: time and peak RSS of every
    workload and program, the single-threaded micro benchmarks (the
    multi-threaded ones hand off between spinning threads and move too much
    on a shared machine), and the geometric means."""
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


def check_baseline(data, path, strict):
    try:
        with open(path) as f:
            base = json.load(f)
    except (OSError, ValueError) as e:
        log("bench-check: cannot read baseline %s: %s" % (path, e))
        log("bench-check: create one with `make bench-baseline` and commit it")
        return 2
    now = ratios_for_baseline(data)
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


# --------------------------------------------------------------------------
# Markdown

def fmt(v, digits=3):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return "%.0f" % v
    if abs(v) >= 100:
        return "%.1f" % v
    return ("%%.%dg" % digits) % v


def fmt_g(S, key):
    """A geometric mean, with (n/N) when it covers only some benchmarks."""
    v = S["geomean"].get(key)
    n = S.get("geomean_n", {}).get(key)
    if v is None or not n or n[0] == n[1]:
        return fmt(v)
    return "%s (%d/%d)" % (fmt(v), n[0], n[1])


def cell(data, bench, alloc, field):
    """median ± spread; n/a when the allocator does not apply; FAIL when
    every run failed."""
    m, sp, ok, n = bench_stat(data, bench, alloc, field)
    if n == 0:
        return "n/a"
    return fmt_sp(m, sp)


def fmt_sp(m, sp):
    if m is None:
        return "FAIL"
    return fmt(m) + ("" if sp is None else " ±%.0f%%" % (sp / 2))


def table(header, rows, text=False):
    """Markdown table; numbers right-aligned unless text=True."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 or text else "---:" for i in range(len(header))) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out) + "\n"


def ratio_table_of(data, kind, ref):
    """Per-benchmark ratios of `kind` (time, rss) to allocator `ref`."""
    S = data["summary"]
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    rows = []
    for b, row in S[kind].items():
        rows.append([b] + [fmt(ratio(row.get(a), row.get(ref))) for a in allocs])
    rows.append(["**geomean**"] + [fmt_g(S, "%s/%s/%s" % (kind, a, ref)) for a in allocs])
    return table(["benchmark"] + allocs, rows)


def section_summary(data):
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    S = data["summary"]
    n = len(S["time"])
    rows = []
    for a in allocs:
        rows.append([a] + [fmt_g(S, "%s/%s/%s" % (k, a, ref))
                           for k in ("time", "rss") for ref in ("glibc", "mimalloc")] +
                    [fmt_g(S, "micro/%s/glibc" % a)])
    return ("Geometric means over %d workloads and programs (median of %d runs each; "
            "lower is better; (n/N): only n of N benchmarks ran):\n\n" % (n, data["repeat"]) +
            table(["allocator", "time / glibc", "time / mimalloc", "peak RSS / glibc",
                   "peak RSS / mimalloc", "micro time / glibc"], rows))


def targets(data):
    g = data["summary"]["geomean"]
    out = []

    def line(what, key, limit):
        v = g.get(key)
        cnt = data["summary"].get("geomean_n", {}).get(key)
        if v is None:
            out.append("- %s: not measured (allocator unavailable)" % what)
        elif cnt and cnt[0] < cnt[1]:
            out.append("- %s: %.2f over only %d of %d benchmarks (target <= %.2f): "
                       "not comparable, see Failures" % (what, v, cnt[0], cnt[1], limit))
        else:
            out.append("- %s: **%.3f** (target <= %.2f): %s" % (
                what, v, limit, "met" if v <= limit else "missed"))
    line("xpfo (default) time / glibc", "time/xpfo/glibc", 1.2)
    line("xpfo (default) time / mimalloc", "time/xpfo/mimalloc", 1.5)
    line("xpfo (default) peak RSS / glibc", "rss/xpfo/glibc", 1.3)
    line("xpfo revoke=off time / mimalloc", "time/xpfo-off/mimalloc", 1.1)
    return "\n".join(out) + "\n"


def report(data, ctx):
    m = data["machine"]
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    S = data["summary"]
    o = []
    o.append("# xpfo benchmark results (%s run)\n" % data["mode"])
    o.append("Generated by `%s` on %s in %.0f s; %d interleaved repetitions per "
             "benchmark and allocator.  Load average (1/5/15 min) at start %s, at end %s"
             "%s.\n" % (data["command"], m["date"], data["elapsed_s"], data["repeat"],
                        data["load_start"], data["load_end"],
                        "" if float(data["load_start"].split()[0]) < 1.0 else
                        " — **the machine was busy: timings are noisy**"))
    o.append("## Machine\n")
    o.append(table(["what", "value"], [
        ["kernel", m["kernel"]], ["CPU", m["cpu"]], ["memory", m["memory"]],
        ["PKU (pku+ospke)", m["pku"]],
        ["xpfo backend", str(data["micro_context"].get("xpfo_backend") or "–")],
        ["vm.max_map_count", m.get("max_map_count", "?")]] +
        [[k, v] for k, v in sorted(m["versions"].items())], text=True))
    o.append("<details><summary>CPU flags</summary>\n\n`%s`\n\n</details>\n" % m["cpu_flags"])
    o.append("## Allocators\n")
    rows = []
    for a in data["allocators"]:
        how = ("LD_PRELOAD=" + a["preload"]) if a["preload"] else "no preload"
        if a["env"]:
            how += " " + " ".join("%s=%s" % kv for kv in a["env"].items())
        rows.append([a["name"], how, "yes" if a["ok"] else "no: " + a["why"]])
    o.append(table(["name", "how", "ran"], rows, text=True))
    o.append("## Summary\n")
    o.append(section_summary(data))
    o.append("\nTargets for xpfo's default (hardened) mode, from issue 5:\n\n" + targets(data))

    def ratio_table(kind, ref):
        return ratio_table_of(data, kind, ref)

    o.append("\n## Time\n")
    o.append("Wall time in seconds, median of the runs, ± half the range (max−min) "
             "as a percentage of the median.  redis: the client's wall time.\n\n")
    rows = []
    for b in S["time"]:
        rows.append([b] + [cell(data, b, a, "wall") for a in allocs])
    o.append(table(["benchmark"] + allocs, rows))
    o.append("\nTime ratio to glibc (lower is better):\n\n" + ratio_table("time", "glibc"))
    if "mimalloc" in allocs:
        o.append("\nTime ratio to mimalloc:\n\n" + ratio_table("time", "mimalloc"))
    o.append("\n## Peak RSS\n")
    o.append("Peak resident set in MiB (ru_maxrss of the process and its children; "
             "redis: the server), median ± half range.\n\n")
    rows = []
    for b in S["rss"]:
        rows.append([b] + [cell(data, b, a, "maxrss_kb") for a in allocs])
    o.append(table(["benchmark"] + allocs, rows))
    o.append("\nPeak RSS ratio to glibc:\n\n" + ratio_table("rss", "glibc"))
    if "mimalloc" in allocs:
        o.append("\nPeak RSS ratio to mimalloc:\n\n" + ratio_table("rss", "mimalloc"))
    frag = data["metrics"].get("frag")
    if frag:
        rows = []
        for a in allocs:
            vals = [float(x["rss_over_live"]) for x in frag.get(a, []) if "rss_over_live" in x]
            if vals:
                rows.append([a, fmt(median(vals))])
        o.append("\nfrag: resident bytes per live byte at the end of the last round "
                 "(lower is better):\n\n" + table(["allocator", "RSS / live"], rows))

    o.append("\n## Context switches and CPU time\n")
    o.append("Median voluntary / involuntary context switches and user+system "
             "CPU seconds per run.\n\n")
    rows = []
    for b in S["time"]:
        cells = []
        for a in allocs:
            runs = [r for r in data["results"][b][a] if r]
            if not data["results"][b][a]:
                cells.append("n/a")
                continue
            if not runs:
                cells.append("FAIL")
                continue
            cells.append("%s / %s, %s s" % (fmt(median([r["nvcsw"] for r in runs])),
                                            fmt(median([r["nivcsw"] for r in runs])),
                                            fmt(median([r["user"] + r["sys"] for r in runs]))))
        rows.append([b] + cells)
    o.append(table(["benchmark"] + allocs, rows))

    if any(p.get("syscalls") for pb in data["profiles"].values() for p in pb.values()):
        o.append("\n## Syscalls by kind\n")
        o.append("From one separate, untimed run per benchmark and allocator (%s inputs) "
                 "under `strace -f -c --seccomp-bpf` (all threads and child processes; redis: "
                 % data.get("profile_mode", data["mode"]) +
                 "the server).  VMAs: the largest /proc/PID/maps line count of any "
                 "process of the run, sampled every 20 ms.\n\n")
        rows = []
        for b, pb in data["profiles"].items():
            for a in allocs:
                p = pb.get(a)
                if not p:
                    continue
                sc = p.get("syscalls") or {}
                rows.append([b, a] + [str(sc.get(s, 0)) for s in SYSCALLS] +
                            [str(p.get("vmas_peak") or "–")])
        o.append(table(["benchmark", "allocator"] + SYSCALLS + ["peak VMAs"], rows))
    xrows = []
    for b, pb in data["profiles"].items():
        for a in allocs:
            p = pb.get(a) or {}
            x = p.get("xpfo")
            if not x:
                continue
            rs = x.get("revoke_syscalls", 0)
            xrows.append([b, a] + [str(x.get(k, "–")) for k in XPFO_COUNTERS] +
                         [fmt(x.get("pages_revoked", 0) / rs) if rs else "–"])
    if xrows:
        o.append("\n## xpfo counters\n")
        o.append("xpfo's own counters (XPFO_OPTIONS=...,stats=1) from the same untimed "
                 "run (%s inputs), summed over the processes of the run (levels: the "
                 "largest).\n\n" % data.get("profile_mode", data["mode"]))
        o.append(table(["benchmark", "mode"] + XPFO_COUNTERS + ["pages / revoke syscall"], xrows))

    if data["micro"]:
        o.append("\n## Micro benchmarks\n")
        o.append("Google Benchmark (`bench/xb-micro`, one process per allocator and "
                 "repetition, interleaved).  Nanoseconds per object (one allocation and "
                 "its free), from items/s; with 2 threads, the throughput of both.  "
                 "Median of the repetitions ± half range.\n\n")
        rows = []
        mallocs = [a for a in allocs if a in data["micro"]]
        xa = [a for a in mallocs if a.startswith("xpfo")]
        for n, row in data["summary"]["micro"].items():
            cells = [fmt_sp(*micro_stat(data, n, a)) for a in mallocs]
            rel = [fmt(ratio(row.get(a), row.get("glibc"))) for a in xa]
            rows.append([n] + cells + rel)
        o.append(table(["benchmark"] + mallocs + ["%s/glibc" % a for a in xa], rows))
        o.append("\nGeometric mean of the micro ratios to glibc: " + ", ".join(
            "%s %s" % (a, fmt_g(S, "micro/%s/glibc" % a)) for a in mallocs) + "\n")
    if data["ablation"]:
        o.append("\n## Revocation ablation\n")
        o.append("`bench/xb-micro-xpfo` (linked to libxpfo) run once per mode and "
                 "repetition: `XPFO_OPTIONS=revoke=off`, `revoke=eager`, "
                 "`revoke=batched,batch=N`.  ns/obj: nanoseconds per object allocated "
                 "and freed (median ± half range); revoke/grant sys/obj: protection "
                 "syscalls xpfo made to revoke / to grant, per object; pages/revoke sys: "
                 "pages per revoking syscall; cancelled pages/obj: queued pages taken back "
                 "before a flush (no syscall).  Counters are xpfo's, read around the "
                 "timed loop.\n\n")
        modes = list(data["ablation"].keys())
        names = sorted({n for runs in data["ablation"].values() for r in runs for n in r},
                       key=natural)
        rows = []
        for n in names:
            off = median([r.get(n, {}).get("ns_per_item") for r in data["ablation"].get("off", [])])
            for m_ in modes:
                runs = data["ablation"][m_]

                def med(k):
                    return median([r.get(n, {}).get(k) for r in runs])
                vals = [r.get(n, {}).get("ns_per_item") for r in runs]
                rows.append([n.replace("/real_time", ""), m_, fmt_sp(median(vals), spread(vals)),
                             fmt(med("revoke_sys_per_obj")), fmt(med("grant_sys_per_obj")),
                             fmt(med("pages_per_revoke_sys")), fmt(med("pages_cancelled_per_obj")),
                             fmt(ratio(median(vals), off))])
        o.append(table(["benchmark", "mode", "ns/obj", "revoke sys/obj", "grant sys/obj",
                        "pages/revoke sys", "cancelled pages/obj", "time vs off"], rows))
    if data.get("compartments"):
        o.append("\n## Compartments\n")
        o.append("`bench/xb-micro-xpfo`, compartment API, once per revocation mode and "
                 "repetition (backend: %s).  Every thread uses compartments of its own.  "
                 "ns/op: nanoseconds per operation (an enter+leave pair; one allocation "
                 "and its free; one transfer), median ± half range; syscalls and opens "
                 "are per operation, from xpfo's counters.  compartment_malloc_root is "
                 "plain malloc in the same process, for reference.\n\n"
                 % (data["micro_context"].get("xpfo_backend") or "?"))
        modes = list(data["compartments"].keys())
        names = sorted({n for runs in data["compartments"].values() for r in runs for n in r},
                       key=natural)
        rows = []
        for n in names:
            for m_ in modes:
                runs = data["compartments"][m_]

                def med(k):
                    return median([r.get(n, {}).get(k) for r in runs])
                vals = [r.get(n, {}).get("ns_per_item") for r in runs]
                err = [r.get(n, {}).get("error") for r in runs if r.get(n, {}).get("error")]
                rows.append([n.replace("/real_time", ""), m_,
                             ("FAIL: " + err[0]) if err else fmt_sp(median(vals), spread(vals)),
                             fmt(med("revoke_sys_per_obj")), fmt(med("grant_sys_per_obj")),
                             fmt(med("pages_per_revoke_sys")), fmt(med("opens_per_obj")),
                             fmt(med("switch_flushes_per_obj"))])
        o.append(table(["benchmark", "mode", "ns/op", "revoke sys/op", "grant sys/op",
                        "pages/revoke sys", "opens/op", "switch flushes/op"], rows))
    if not ctx.no_plots:
        o.append("\n## Plots\n")
        o.append("![time ratio](time_ratio.png)\n\n![peak RSS ratio](rss_ratio.png)\n")
        if data["micro"]:
            o.append("\n![micro ratio](micro_ratio.png)\n")
        if data["ablation"]:
            o.append("\n![revocation cost vs batch size](revoke_batch.png)\n")
    o.append("\n## Notes\n")
    notes = ["redis-server (Debian) links libjemalloc: its glibc row preloads libc.so.6 "
             "so that malloc resolves to glibc; the other rows preload their allocator "
             "ahead of both.",
             "python runs with PYTHONMALLOC=malloc, so every object goes through the "
             "allocator under test rather than Python's own arenas.",
             "Spread is ± half of (max − min) over the repetitions, relative to the median."]
    for b in data["benches"]:
        if b["skip"]:
            notes.append("%s skipped: %s" % (b["name"], b["skip"]))
    for a in data["allocators"]:
        if not a["ok"]:
            notes.append("%s not run: %s" % (a["name"], a["why"]))
    o.append("".join("- %s\n" % n for n in notes))
    if data["errors"]:
        o.append("\n## Failures\n\n" + "".join("- %s\n" % e for e in data["errors"]))
    o.append("\n## Benchmarks\n\n" + "".join(
        "- **%s** (%s): %s\n" % (b["name"], b["kind"], b["desc"]) for b in data["benches"]))
    return "\n".join(o)


# --------------------------------------------------------------------------
# plots

def plots(data, ctx):
    if not shutil.which("gnuplot"):
        log("run.py: gnuplot not found, no plots")
        return
    allocs = [a["name"] for a in data["allocators"] if a["ok"]]
    others = [a for a in allocs if a != "glibc"]
    S = data["summary"]
    out = ctx.out

    order = [b["name"] for b in data["benches"]]

    def bars(kind, fname, title, ylabel, names=None, logy=False):
        # benchmark order as in the suite (the JSON sorts its keys)
        names = names or sorted(S[kind].keys(),
                                key=lambda b: (order.index(b) if b in order else len(order), b))
        # only the allocators with at least one number here (gnuplot fails
        # on an all-NaN column)
        cols = [a for a in others if any(ratio(S[kind][b].get(a), S[kind][b].get("glibc"))
                                         for b in names)]
        if not cols:
            return
        dat = os.path.join(out, fname + ".dat")
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
        width = max(900, 60 * (len(names) + 1) + 200)
        gp = """set terminal pngcairo noenhanced size %d,520 font "DejaVu Sans,10"
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
""" % (width, os.path.join(out, fname + ".png"), title, ylabel,
       "set logscale y\nset yrange [*:*]" if logy else "set yrange [0:*]", len(cols) + 1, dat)
        with open(os.path.join(out, fname + ".gp"), "w") as f:
            f.write(gp)
        subprocess.run(["gnuplot", os.path.join(out, fname + ".gp")], check=False)

    if others and S["time"]:
        bars("time", "time_ratio", "Wall time relative to glibc (median, %s run; lower is better)"
             % data["mode"], "time / glibc")
        bars("rss", "rss_ratio", "Peak RSS relative to glibc (median, %s run; lower is better)"
             % data["mode"], "peak RSS / glibc")
    if others and S["micro"]:
        bars("micro", "micro_ratio", "Micro benchmarks: time per object relative to glibc "
             "(median, log scale; lower is better)", "ns per object / glibc (log)", logy=True)
    if data["ablation"]:
        modes = list(data["ablation"].keys())
        order = ["eager"] + ["batch=%d" % n for n in ABLATION_BATCHES] + ["off"]
        order = [m for m in order if m in modes]
        names = sorted({n for runs in data["ablation"].values() for r in runs for n in r},
                       key=natural)
        names = [n for n in names if re.search(r"revoke_pages/4/|revoke_pages_busy_peer/4/|"
                                               r"revoke_small/64/", n)] or names
        dat = os.path.join(out, "revoke_batch.dat")
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
        n = len(names) + 1
        gp = """set terminal pngcairo noenhanced size 1000,1050 font "DejaVu Sans,10"
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
""" % (os.path.join(out, "revoke_batch.png"), data["micro_context"].get("xpfo_backend") or "?",
            n, dat, n, dat, n, dat)
        with open(os.path.join(out, "revoke_batch.gp"), "w") as f:
            f.write(gp)
        subprocess.run(["gnuplot", os.path.join(out, "revoke_batch.gp")], check=False)


if __name__ == "__main__":
    sys.exit(main())
