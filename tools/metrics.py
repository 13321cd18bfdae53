#!/usr/bin/env python3
"""metrics.py - how the C code is shaped: function lengths and the call graph.

    tools/metrics.py [--root DIR] [--max-lines N] [--json]

Reads the library's sources (src/, alloc/, api/, arch/, LD_PRELOAD/) as text; it
compiles nothing.  Reports:

* function lengths (lines from the signature to the closing brace, both
  included, as the structure issue counted them): median,
  90th percentile, maximum, and every function over --max-lines;
* the file-level reference graph (file A refers to file B when A names a
  function or global defined in B, or includes B's header), its strongly
  connected components of more than one file (circles), and how many
  references cross between directories in each direction.

It is a reading aid, not a parser: definitions are recognised by the
project's style (return type and name on a line at column 0, the opening
brace alone at column 0 on a later line, the closing brace alone at column
0), which clang-format keeps.  Exit status 0 always; --check-max makes it 1
when a function is over --max-lines; --check (tests/metrics.sh) also when a
file refers to a higher layer (LAYERS: src and arch at the bottom, alloc,
api, LD_PRELOAD on top), a circle spans directories, the median is over
--max-median, or a file of alloc/, api/ or LD_PRELOAD/ calls a system call
itself (RAW_CALLS: every one goes through src/os.h, where a test can make
it fail).

In a header only inline function bodies and macros count as uses: a
prototype is not a use (the caller's .c file refers to the definer's).
"""

import argparse
import json
import os
import re
import statistics
import sys

DIRS = ["src", "alloc", "api", "arch", "LD_PRELOAD"]
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEF_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "defined", "__attribute__"}


def sources(root):
    out = []
    for d in DIRS:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(base, f), root))
    return sorted(out)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def functions(path, text):
    """(name, first line, body lines) of each definition in text."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            name, start = def_name(lines, i)
            j = i + 1
            while j < len(lines) and lines[j] != "}":
                j += 1
            if name:
                out.append((name, start, j - start + 1))
            i = j
        elif re.match(r"^(static |inline |XPFO_EXPORT |EXPORT )*[A-Za-z_].*\)\s*\{.*\}\s*$", lines[i]) \
                and "=" not in lines[i].split("(")[0]:
            m = DEF_NAME.search(lines[i])
            if m and m.group(1) not in KEYWORDS:
                out.append((m.group(1), i, 1))
        i += 1
    return out


def def_name(lines, i):
    """The name defined by the signature that ends just above line i, and
    the line the signature starts on."""
    sig = []
    k = i - 1
    while k >= 0 and lines[k] and not lines[k].startswith(("}", "#")) and len(sig) < 8:
        sig.insert(0, lines[k])
        if re.match(r"^[A-Za-z_]", lines[k]):
            break
        k -= 1
    names = [m.group(1) for m in DEF_NAME.finditer(" ".join(sig)) if m.group(1) not in KEYWORDS]
    if not names or "=" in " ".join(sig).split("(")[0]:
        return None, i
    return names[0], max(k, 0)


def globals_defined(text):
    """Names of file-scope variables defined (not declared extern); static
    ones are the file's own and cannot be referred to from elsewhere."""
    out = set()
    for line in text.split("\n"):
        # thread-locals and aligned or sectioned globals: the attribute
        # after the name is not part of it
        line = re.sub(r"^__thread ", "", re.sub(r"\s*__attribute__\(\(.*\)\)\s*(?=[=;])", "", line))
        m = re.match(r"^(?!extern|typedef|static|#|struct \w+ \{|enum|union)"
                     r"[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)(\[[^\]]*\])*\s*(=|;)", line)
        if m and "(" not in line.split("=")[0]:
            out.add(m.group(1))
    return out


def uses(f, text, fdefs):
    """The text of f whose names are uses: a .c file's whole text; in a
    header only the bodies of its inline functions and its macros (a
    prototype or an extern declaration is not a use: the file that calls
    the function refers to the file that defines it)."""
    if not f.endswith(".h"):
        return text
    lines = text.split("\n")
    out = [l for l in lines if l.startswith("#define")]
    for _, start, n in fdefs:
        out.extend(lines[start:start + n])
    return "\n".join(out)


LAYERS = {"src": 0, "arch": 0, "alloc": 1, "api": 2, "LD_PRELOAD": 3}

# The layers inside alloc/, bottom to top (docs/design.md draws them).  A
# file refers only to its own layer and those below; every file of alloc/
# is placed here (a new one too, or the check fails).
ALLOC_LAYERS = [
    ("base", ["alloc.h", "owner.h", "owner.c", "meta.c", "policy.h", "policy.c", "pkeys.c",
              "gate.h", "gate.c", "sizeclass.c"]),
    ("backing", ["backing.h", "backing.c", "secret.c", "alias.c"]),
    ("pages", ["pages.c"]),
    ("uffd", ["uffd.c"]),
    ("revoke", ["revoke.h", "gather.c", "revoke.c", "grant.c"]),
    ("heap", ["heap.h", "heap.c", "slab.c", "run.c", "harden.c"]),
    ("compartment", ["compartment.c", "move.c"]),
    ("sandbox", ["sandbox.h", "sandbox.c", "executor.c"]),
]
# Upward references allowed inside alloc/, each with its reason:
# (from, to): reason.  None today.
ALLOC_EXCEPTIONS = {}


# The C library's system-call wrappers, which only src/ and arch/ (the
# bottom layer, the OS boundary) may call: in alloc/, api/ and LD_PRELOAD/
# a call of one of these names (not a member: x->read(...) is a function
# pointer) fails --check.  Library functions that make system calls of
# their own are not listed: libseccomp (the lock builds its filter with
# it, in memory, before anything changes; its failures come back as its
# return values and refuse the lock with ENOSYS), the dynamic linker's
# dlopen and dlsym, pthread's mutexes, the stdio of api/'s printing.
# They are libraries with their own error returns, not one system call
# with an errno that os.h could inject.
RAW_CALLS = """
    mmap mmap64 munmap mprotect pkey_mprotect pkey_alloc pkey_free madvise process_madvise mremap
    mincore mlock mlock2 munlock mlockall msync brk sbrk remap_file_pages memfd_create memfd_secret
    ioctl fcntl open open64 openat openat2 creat read write pread pread64 pwrite pwrite64 readv
    writev preadv pwritev close close_range dup dup2 dup3 pipe pipe2 lseek ftruncate fallocate
    fstat stat lstat fstatat newfstatat statx access faccessat unlink unlinkat
    socket socketpair connect bind listen accept accept4 send recv sendto recvfrom sendmsg
    recvmsg shutdown poll ppoll select pselect epoll_wait epoll_create1 eventfd
    prctl seccomp syscall fork vfork clone clone3 execve execveat unshare setns kill tgkill
    tkill raise wait wait3 wait4 waitpid waitid getpid getppid gettid sched_yield getrandom
    clock_gettime nanosleep clock_nanosleep usleep sleep sigaction signal sigprocmask
    sigaltstack setrlimit getrlimit prlimit ptrace process_vm_readv process_vm_writev
    userfaultfd pidfd_open pidfd_getfd _exit _Exit exit_group
""".split()
RAW_DIRS = ("alloc/", "api/", "LD_PRELOAD/")
RAW_CALL = re.compile(r"(?<![\w.>])(" + "|".join(RAW_CALLS) + r")\s*\(")


def raw_calls(files, texts):
    """(file, line, name) of each call of a RAW_CALLS name in RAW_DIRS."""
    out = []
    for f in files:
        if f.startswith(RAW_DIRS):
            for i, line in enumerate(texts[f].split("\n")):
                out.extend((f, i + 1, m.group(1)) for m in RAW_CALL.finditer(line))
    return out


def alloc_layer(f):
    """The index of alloc/ file f in ALLOC_LAYERS, or None (not placed)."""
    name = f.split("/", 1)[1]
    for i, (_, names) in enumerate(ALLOC_LAYERS):
        if name in names:
            return i
    return None


def upward(edges):
    """References from a file to a file of a higher layer (LAYERS)."""
    out = []
    for f, outs in sorted(edges.items()):
        for g, n in sorted(outs.items()):
            if LAYERS[f.split("/")[0]] < LAYERS[g.split("/")[0]]:
                out.append((f, g, n))
    return out


def alloc_upward(edges):
    """References inside alloc/ from a file to a higher layer of
    ALLOC_LAYERS, but the listed exceptions; and the files not placed."""
    out, unplaced = [], []
    for f, outs in sorted(edges.items()):
        if not f.startswith("alloc/"):
            continue
        lf = alloc_layer(f)
        if lf is None:
            unplaced.append(f)
            continue
        for g, n in sorted(outs.items()):
            lg = alloc_layer(g) if g.startswith("alloc/") else None
            if lg is not None and lf < lg and (f, g) not in ALLOC_EXCEPTIONS:
                out.append((f, g, n))
    return out, unplaced


def interface_of(f):
    """The .c file a header f is the interface of (same directory and stem)."""
    return f[:-2] + ".c" if f.endswith(".h") else None


def graph(root, files, texts, defs):
    owner = {}
    for f in files:
        if f.endswith(".c"):
            lines = texts[f].split("\n")
            for name, start, _ in defs[f]:
                if not lines[start].startswith("static"):  # file-local otherwise
                    owner.setdefault(name, f)
            for g in globals_defined(texts[f]):
                owner.setdefault(g, f)
    for f in files:  # static inline helpers of headers belong to the header
        if f.endswith(".h"):
            for name, _, _ in defs[f]:
                owner.setdefault(name, f)
    edges = {f: {} for f in files}
    for f in files:
        local = {n for n, _, _ in defs[f]}
        for m in IDENT.finditer(uses(f, texts[f], defs[f])):
            o = owner.get(m.group(0))
            # a header declaring what its own .c defines is that file's
            # interface, not a reference to it
            if o and o != f and m.group(0) not in local and o != interface_of(f):
                edges[f][o] = edges[f].get(o, 0) + 1
        for inc in re.findall(r'#include "([^"]+)"', texts[f]):
            for g in files:
                if g.endswith("/" + inc) or g == inc:
                    edges[f][g] = edges[f].get(g, 0) + 1
    return edges


def sccs(edges):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    ap.add_argument("--max-lines", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check-max", action="store_true")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 on a function over --max-lines, a reference to a higher "
                         "layer, a circle across directories, or a median over --max-median "
                         "when that is given")
    ap.add_argument("--max-median", type=float, default=None)
    a = ap.parse_args()
    files = sources(a.root)
    texts = {f: strip_comments(open(os.path.join(a.root, f)).read()) for f in files}
    defs = {f: functions(f, texts[f]) for f in files}
    lens = sorted(((n, f, l + 1, ln) for f in files for n, l, ln in defs[f]), key=lambda x: -x[3])
    sizes = sorted(x[3] for x in lens)
    edges = graph(a.root, files, texts, defs)
    cross = {}
    for f, outs in edges.items():
        for g, n in outs.items():
            df, dg = f.split("/")[0], g.split("/")[0]
            if df != dg:
                cross[(df, dg)] = cross.get((df, dg), 0) + n
    res = {
        "functions": len(sizes),
        "median": statistics.median(sizes) if sizes else 0,
        "p90": sizes[int(0.9 * (len(sizes) - 1))] if sizes else 0,
        "max": sizes[-1] if sizes else 0,
        "over": [{"name": n, "file": f, "line": l, "lines": ln} for n, f, l, ln in lens
                 if ln > a.max_lines],
        "circles": sccs(edges),
        "cross_dir_refs": {f"{x}->{y}": n for (x, y), n in sorted(cross.items())},
        "upward": [{"from": f, "to": g, "refs": n} for f, g, n in upward(edges)],
    }
    up, unplaced = alloc_upward(edges)
    res["alloc_upward"] = [{"from": f, "to": g, "refs": n} for f, g, n in up]
    res["alloc_unplaced"] = unplaced
    res["cross_dir_circles"] = [c for c in res["circles"] if len({f.split("/")[0] for f in c}) > 1]
    res["raw_calls"] = [{"file": f, "line": l, "call": n} for f, l, n in raw_calls(files, texts)]
    if a.json:
        print(json.dumps(res, indent=1))
    else:
        print(f"functions {res['functions']}: median {res['median']} lines, "
              f"p90 {res['p90']}, max {res['max']}")
        for o in res["over"]:
            print(f"  over {a.max_lines}: {o['name']} ({o['file']}:{o['line']}) {o['lines']} lines")
        for c in res["circles"]:
            print(f"circle of {len(c)} files: {' '.join(c)}")
        if not res["circles"]:
            print("no circle between files")
        for k, n in res["cross_dir_refs"].items():
            print(f"  references {k}: {n}")
        for u in res["upward"]:
            print(f"  upward: {u['from']} -> {u['to']} ({u['refs']})")
        print(f"layers (bottom to top): src arch | alloc | api | LD_PRELOAD; "
              f"{len(res['upward'])} upward references, "
              f"{len(res['cross_dir_circles'])} circles across directories")
        for u in res["alloc_upward"]:
            print(f"  upward in alloc/: {u['from']} -> {u['to']} ({u['refs']})")
        for f in res["alloc_unplaced"]:
            print(f"  not placed in a layer of alloc/ (tools/metrics.py ALLOC_LAYERS): {f}")
        for (f, g), why in sorted(ALLOC_EXCEPTIONS.items()):
            print(f"  allowed upward in alloc/: {f} -> {g}: {why}")
        print(f"layers in alloc/ (bottom to top): "
              f"{' | '.join(n for n, _ in ALLOC_LAYERS)}; "
              f"{len(res['alloc_upward'])} upward references, "
              f"{len(ALLOC_EXCEPTIONS)} allowed, {len(res['alloc_unplaced'])} files not placed")
        for r in res["raw_calls"]:
            print(f"  raw system call: {r['file']}:{r['line']}: {r['call']} (through src/os.h)")
        print(f"system calls outside src/ and arch/ ({' '.join(RAW_DIRS)}): "
              f"{len(res['raw_calls'])} raw calls")
    if a.check and (res["over"] or res["upward"] or res["cross_dir_circles"]
                    or res["alloc_upward"] or res["alloc_unplaced"] or res["raw_calls"]
                    or (a.max_median is not None and res["median"] > a.max_median)):
        return 1
    return 1 if a.check_max and res["over"] else 0


if __name__ == "__main__":
    sys.exit(main())
