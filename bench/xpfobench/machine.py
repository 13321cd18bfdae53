"""What the run ran on: kernel, CPU, memory, package versions."""

import datetime
import os
import subprocess
import sys


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
