"""Running one measured process: xb-spawn for rusage, a VMA sampler, strace
for syscall counts."""

import os
import signal
import subprocess
import tempfile
import threading
import time

SYSCALLS = ["mmap", "munmap", "mprotect", "pkey_mprotect", "madvise", "mremap",
            "brk", "futex", "ioctl", "mincore"]


class Run:
    """What one process (or a server plus its client) measured."""

    def __init__(self):
        self.wall = None
        self.user = self.sys = 0.0
        self.maxrss_kb = 0
        self.nvcsw = self.nivcsw = 0
        self.minflt = self.majflt = 0  # page faults (getrusage)
        self.load1 = None  # 1-minute load average at the start (timed runs)
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
                    nivcsw=self.nivcsw, minflt=self.minflt, majflt=self.majflt,
                    load1=self.load1,
                    rc=self.rc, error=self.error,
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
            r.minflt, r.majflt = int(rep["minflt"]), int(rep["majflt"])
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
