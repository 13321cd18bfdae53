"""One measured run of a benchmark under an allocator (timed, or profiled
with strace, the VMA sampler and xpfo's counters), and the micro
benchmarks (Google Benchmark JSON)."""

import json
import os
import socket
import time

from .allocators import alloc_env, base_env
from .counters import parse_xpfo_stats
from .procs import Proc, VmaSampler, parse_strace, strace_wrap, tail
from .summary import median


class Ctx:
    """The settings of a run: mode, directories, repetitions, timeouts."""


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
    allow 60 times its median (at least 15 s; 5 s in smoke mode), never more
    than ctx.timeout.  (30 times cut off revoke=eager's prodcons, 30 times
    glibc by design: each of its 2 million frees is a syscall; the full run
    of 2026-12-02 lost 2 of its 5 repetitions and exited 1.)"""
    g = median([r["wall"] for r in runs.get("glibc", []) if r])
    floor = 5.0 if ctx.mode == "smoke" else 15.0
    return ctx.timeout if g is None else min(ctx.timeout, max(floor, 60 * g))


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
    if alloc.missing:
        return alloc.missing
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
