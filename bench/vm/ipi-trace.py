#!/usr/bin/env python3
"""ipi-trace.py - who sent the function-call IPIs of a traced guest run.

    python3 bench/vm/ipi-trace.py [--lib LIBXPFO] [--title TEXT] RUN.txt...

Reads the output of tests/qemu/run.sh running bench/vm/ipi-guest.sh with
TRACE=1 (bench/vm/ipi.sh --trace): its "TRACE" lines (the calls of
senders of function-call IPIs with their kernel stacks, and the write
faults on present pages) and its "MAPS" lines.  For each allocator and workload,
a Markdown table of the calls the workload's process made, grouped by
what sent them: the sender (smp_call_function_many_cond: to several
CPUs, TLB shootdowns among them; generic_exec_single: to one;
__smp_call_single_queue: a remote wakeup or other single-CPU call, an IPI
when the queue was empty), the kernel path below it and the system call
it served, and
for a flush in a page fault, the instruction that wrote (a function of
libxpfo's, resolved with addr2line from LIB, or a library and offset) and
the mapping it wrote to.  A call interrupts every other CPU the process
ran on; the count is of calls, not of interrupts."""

import argparse
import collections
import re
import subprocess
import sys

LINE = re.compile(r"^# [^:]*\]: (TRACE|MAPS) alloc=(\S+) work=(\S+) (.*)$")
EVENT = re.compile(r"^\s*(.+?)-(\d+)\s+\[\d+\]\s+\S+\s+[\d.]+: (.*)$")
FAULT = re.compile(r"page_fault_user: address=(0x[0-9a-f]+) ip=(0x[0-9a-f]+) error_code=(0x[0-9a-f]+)")
# frames that say nothing about the cause
SENDERS = ("smp_call_function_many_cond", "generic_exec_single", "__smp_call_single_queue")
GENERIC = {"smp_call_function_many_cond", "on_each_cpu_cond_mask", "flush_tlb_mm_range",
           "generic_exec_single", "__smp_call_single_queue", "smp_call_function_single",
           "native_flush_tlb_multi", "flush_tlb_multi", "do_syscall_64",
           "entry_SYSCALL_64_after_hwframe", "asm_exc_page_fault", "exc_page_fault",
           "handle_mm_fault", "__handle_mm_fault"}


class Run:
    def __init__(self):
        self.lines = []
        self.maps = []


def parse(paths):
    runs = collections.OrderedDict()
    for path in paths:
        with open(path, errors="replace") as f:
            for raw in f:
                m = LINE.match(raw.rstrip("\n"))
                if not m:
                    continue
                kind, alloc, work, rest = m.groups()
                r = runs.setdefault((alloc, work), Run())
                (r.lines if kind == "TRACE" else r.maps).append(rest)
    return runs


def regions(maps):
    out = []
    for m in maps:
        p = m.split()
        if len(p) < 5 or "-" not in p[0]:
            continue
        a, b = (int(x, 16) for x in p[0].split("-"))
        out.append((a, b, int(p[2], 16), p[5] if len(p) > 5 else "[anon]"))
    return out


def locate(regs, x):
    for a, b, off, name in regs:
        if a <= x < b:
            return name, x - a + off
    return "?", x


def symbolize(lib, name, off, cache):
    base = name.rsplit("/", 1)[-1]
    if lib and base.startswith("libxpfo"):
        key = (lib, off)
        if key not in cache:
            try:
                out = subprocess.run(["addr2line", "-f", "-i", "-s", "-e", lib, hex(off)],
                                     capture_output=True, text=True, check=True).stdout.split("\n")
                cache[key] = "libxpfo %s (%s) +%#x" % (out[0], out[1], off) if len(out) > 1 else hex(off)
            except (OSError, subprocess.CalledProcessError):
                cache[key] = "libxpfo+%#x" % off
        return cache[key]
    return "%s+%#x" % (base, off)


def cause(stack):
    """The kernel path of one call: its frames past the generic ones, up
    to the system call or fault that led to it."""
    frames = [f for f in stack if f not in GENERIC and not f.startswith("0x")]
    path = []
    for f in frames:
        if f.startswith("__x64_sys_"):
            path.append(f[len("__x64_sys_"):] + "()")
            break
        if f in ("do_user_addr_fault", "do_exit", "do_group_exit"):
            path.append(f)
            break
        path.append(f)
    return " < ".join(path[:5])


def analyse(run, lib, cache):
    regs = regions(run.maps)
    last_fault = {}
    groups = collections.Counter()
    lost = 0
    i = 0
    lines = run.lines
    while i < len(lines):
        line = lines[i]
        if "LOST" in line and "EVENTS" in line:
            lost += 1
        m = EVENT.match(line)
        i += 1
        if not m:
            continue
        comm, pid, what = m.groups()
        f = FAULT.search(what)
        if f:
            last_fault[pid] = (int(f.group(1), 16), int(f.group(2), 16))
            continue
        if not what.startswith(SENDERS):
            continue
        sender = what.split()[0]
        stack = []
        while i < len(lines) and ("<stack trace>" in lines[i] or lines[i].lstrip().startswith("=>")):
            if "=>" in lines[i]:
                stack.append(lines[i].split("=>", 1)[1].strip())
            i += 1
        if not comm.startswith("ld-linux"):  # not the workload's process
            continue
        c = "%s: %s" % (sender, cause(stack))
        where = ""
        if "do_user_addr_fault" in stack and pid in last_fault:
            addr, ip = last_fault[pid]
            iname, ioff = locate(regs, ip)
            aname, _ = locate(regs, addr)
            where = "write by %s to %s" % (symbolize(lib, iname, ioff, cache), aname)
        groups[(c, where)] += 1
    return groups, lost


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", help="libxpfo.so built with -g, for addr2line")
    ap.add_argument("--title", default="Who sent the function-call IPIs")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    cache = {}
    print("## %s\n" % a.title)
    for (alloc, work), run in parse(a.runs).items():
        groups, lost = analyse(run, a.lib, cache)
        total = sum(groups.values())
        print("### %s, %s: %d calls%s\n" % (work, alloc, total,
                                            " (%d lost-event marks: undercounted)" % lost
                                            if lost else ""))
        if not total:
            continue
        print("| calls | kernel path | what wrote |")
        print("|---:|---|---|")
        for (c, where), n in groups.most_common():
            print("| %d | %s | %s |" % (n, c or "?", where or ""))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
