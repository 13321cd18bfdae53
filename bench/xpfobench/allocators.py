"""The allocators under test, and the environment that runs a process
under one of them (LD_PRELOAD, XPFO_OPTIONS)."""

import os
import subprocess

LIBDIR = "/usr/lib/x86_64-linux-gnu"
# allocators built from source for the comparison (bench/baselines/)
BASELINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "baselines")


class Alloc:
    def __init__(self, name, preload, env=None, xpfo=False, note="", only=None, missing=None):
        self.name = name
        self.preload = preload  # path, or None for glibc
        self.env = env or {}
        self.xpfo = xpfo
        self.note = note
        self.only = only  # the benchmarks it applies to (None: all)
        self.missing = missing  # why it cannot run, known before trying it
        self.ok = True
        self.why = ""


def find_libc():
    for d in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/lib"):
        p = os.path.join(d, "libc.so.6")
        if os.path.exists(p):
            return p
    return None


def baseline_lib(script):
    """A library bench/baselines/SCRIPT builds: (path, None) when it is in
    its cache, else (the path it would have, why not).  Builds nothing
    (`make bench-baselines` does)."""
    argv = ["sh", os.path.join(BASELINES, script), "--cached"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, "%s --cached: %s" % (script, e)
    path = p.stdout.strip() or None
    if p.returncode == 0 and path:
        return path, None
    why = [line.split(": ", 1)[-1] for line in p.stderr.strip().splitlines()] or \
        ["%s --cached exited with %d" % (script, p.returncode)]
    return path, why[-1]


PROFILE_BENCHES = {"larson", "xmalloc", "scratch", "tree", "hash", "frag",
                   "prodcons", "threadchurn", "shortlived", "server", "glthread",
                   "bigblock", "genchurn", "mixed2", "sqlite", "python", "redis", "git"}


def make_allocators(builddir):
    xpfo_so = os.path.join(builddir, ".libs", "libxpfo.so")
    misec, misec_why = baseline_lib("mimalloc-secure.sh")
    return [
        Alloc("glibc", None, note="no preload"),
        Alloc("jemalloc", os.path.join(LIBDIR, "libjemalloc.so.2")),
        Alloc("mimalloc", os.path.join(LIBDIR, "libmimalloc.so.2")),
        # the same mimalloc built with MI_SECURE (guard pages, encoded free
        # lists, randomized allocation), from Debian's source package
        Alloc("mimalloc-secure", misec or "libmimalloc-secure.so",
              note="libmimalloc2.0's source with MI_SECURE=ON", missing=misec_why),
        Alloc("xpfo", xpfo_so, {}, True, "default (revoke=batched)"),
        Alloc("xpfo-eager", xpfo_so, {"XPFO_OPTIONS": "revoke=eager"}, True),
        Alloc("xpfo-off", xpfo_so, {"XPFO_OPTIONS": "revoke=off"}, True),
        # the hardening profiles (default is the "xpfo" column)
        # (workloads and programs only: the micro benchmarks would double the run)
        Alloc("xpfo-strict", xpfo_so, {"XPFO_OPTIONS": "profile=strict"}, True,
              "profile=strict (every mitigation)", only=PROFILE_BENCHES),
        Alloc("xpfo-light", xpfo_so, {"XPFO_OPTIONS": "profile=light"}, True,
              "profile=light (the fewest mitigations)", only=PROFILE_BENCHES),
        # how a revoked span is taken away (issue 14): PROT_NONE, or frames
        # released under a userfaultfd (section "Release" of the report)
        Alloc("xpfo-mprotect", xpfo_so, {"XPFO_OPTIONS": "release=mprotect"}, True,
              "release=mprotect (no userfaultfd)", only=PROFILE_BENCHES),
        Alloc("xpfo-uffd", xpfo_so, {"XPFO_OPTIONS": "release=uffd"}, True,
              "release=uffd (released pages watched by a userfaultfd)", only=PROFILE_BENCHES),
        # every thread but the first in a compartment of its own: only for
        # the share-nothing workloads (each thread builds its own structure)
        Alloc("xpfo-cthread", xpfo_so, {"XPFO_OPTIONS": "compartments=thread"}, True,
              "compartments=thread, share-nothing workloads only", only={"tree", "hash"}),
    ]


def applies(alloc, bench):
    return alloc.only is None or bench.name in alloc.only


def base_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "XPFO_OPTIONS", "MALLOC_CONF", "PYTHONMALLOC", "GIT_DIR"):
        env.pop(k, None)
    # mimalloc's options (MIMALLOC_VERBOSE, MIMALLOC_SHOW_STATS, ...): both
    # mimalloc columns run with its defaults
    for k in [k for k in env if k.startswith("MIMALLOC_")]:
        del env[k]
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
            opts.append("stats=json")
        if opts:
            env["XPFO_OPTIONS"] = ",".join(opts)
    return env
