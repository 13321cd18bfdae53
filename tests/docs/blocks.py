#!/usr/bin/env python3
"""blocks.py - compile, run or check every code block of the documentation.

    blocks.py [--list] FILE...

Blocks are taken from
  * Markdown (README.md, docs/tutorial.md, examples/*/README.md): fenced
    blocks (``` with an info string) and indented blocks (four spaces after
    a blank line);
  * man pages (man/*.3, man/*.1, man/xpfo.7.in): .Bd -literal ... .Ed and
    .Dl lines, roff escapes undone (\\e, \\-, \\&).
Each block gets a kind from its content (or, in the tutorial, its info
string); a block of no known kind fails the test, so a new block must be
one of these:

  c-program   C with main(): compiled (-Wall -Werror, against the built
              libxpfo) and run; it must exit 0 and xpfo must print no
              violation, fatal, error or warning line.
  c-fragment  C without main(): wrapped, then compiled and run like a
              program.  The wrapping: tests/docs/prelude.h first (it
              defines the names fragments use without defining them, such
              as parse() and untrusted_input in README's compartment
              example), then the fragment's #include lines, then its other
              lines as the body of main(); a line that is only "..." (an
              elision) is dropped.
  file        tutorial only (```c file=NAME): written to NAME in the
              tutorial's directory, for the commands that follow.
  console     lines "$ COMMAND" and the output shown after each: every
              command runs (bash -c, in one scratch directory per file, with
              the built xpfo-run first in PATH and XPFO the build
              directory); its stdout and stderr, merged, must equal the
              lines shown, where "..." stands for any text within a line
              and a last line ending in "..." for any further lines.  In
              man pages numbers stand for any number too (pids, counts).
  message     xpfo's message lines ("xpfo: ..."): each must match a line
              that tests/docs/messages makes xpfo print (every case of it
              is run once), placeholders in capitals (ADDRESS, TID, NAME,
              KIND, WHAT, OWNER), "...", the example's numbers and quoted
              compartment names standing for any value.
  quickstart  README's "./setup.sh / make check-all": the script exists
              and is executable, each make target exists (not run: they
              install packages and run every test, this one included).
  synopsis    README's usage lines of xpfo-run and LD_PRELOAD: instances
              run (xpfo-run --stats -- true, xpfo-run --stats=json
              --options verbose=1 -- true, LD_PRELOAD=libxpfo.so true):
              exit 0, no warning.
  systemd     README's unit snippet: the LD_PRELOAD path ends with the
              library's soname and the Debian package installs it in that
              directory; the options given run without a warning.
  layout      README's layout: every path in the left column exists.
  output      a ```text block after "It prints:": exactly the standard
              output of the C program just before it (README.md).
  build       README's "Building from source": every package of the
              apt-get line is installed and in .ci/setup's PKGS; the build
              lines (autoreconf, ./configure --prefix, make, make install)
              are run by tests/prefix.sh into a temporary prefix, so here
              only tests/prefix.sh's doing so is checked.
  prefix      README's PKG_CONFIG_PATH and cc ... -Wl,-rpath line:
              tests/prefix.sh builds and runs a program with exactly that
              cc line (it takes it from README.md); checked here: it is
              the line tests/prefix.sh takes.
  commands    examples/*/README.md: shell lines that start a service and
              send it a request, run as one script from the build
              directory (sh -e), with /tmp/NAME.sock replaced by a socket in
              a scratch directory, picture.png by a file made by
              pngd-send --write, a wait for the socket after a line that
              starts a server with "&", and the server killed at the end;
              it must exit 0, and each line it prints must be a reply
              that starts with "ok ".

Environment: top_srcdir, top_builddir, XPFO_LIB, XPFO_RUN (tests/local.mk),
DOCS_CC (the compiler make used), DOCS_MESSAGES (tests/docs/messages).
Exit 0 when every block passed, 1 otherwise (each failure on stderr).
"""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("top_srcdir", ".")
BUILD = os.environ.get("top_builddir", ".")
LIB = os.path.abspath(os.environ.get("XPFO_LIB", os.path.join(BUILD, ".libs/libxpfo.so")))
RUN = os.path.abspath(os.environ.get("XPFO_RUN", os.path.join(BUILD, "LD_PRELOAD/xpfo-run")))
# the compiler make used, maybe with a wrapper ("ccache gcc"): a list of words
CC = shlex.split(os.environ.get("DOCS_CC", "cc")) or ["cc"]
MESSAGES = os.environ.get("DOCS_MESSAGES", os.path.join(BUILD, "tests/docs/messages"))
BAD_XPFO = re.compile(r"^xpfo: (violation|fatal|error|warning)", re.M)

failures = []

# Blocks known to fail, by a line they hold, with the reason; such a block
# must fail (a pass is reported, so that the entry goes).
KNOWN_BROKEN = {}


def fail(block, why):
    failures.append(f"{block['where']}: {block['kind']}: {why}")


# ---- extraction -------------------------------------------------------------


def markdown_blocks(path, text):
    lines = text.split("\n")
    blocks, i, prev_blank = [], 0, True
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^```(.*)$", line)
        if m:
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            blocks.append({"where": f"{path}:{start}", "info": m.group(1).strip(), "text": "\n".join(body)})
            i += 1
            prev_blank = False
            continue
        if line.startswith("    ") and prev_blank:
            start, body = i + 1, []
            while i < len(lines) and (lines[i].startswith("    ") or lines[i].strip() == ""):
                body.append(lines[i][4:])
                i += 1
            blocks.append({"where": f"{path}:{start}", "info": "", "text": "\n".join(body).rstrip("\n")})
            prev_blank = True
            continue
        prev_blank = line.strip() == ""
        i += 1
    return blocks


def unroff(s):
    return s.replace("\\e", "\\").replace("\\-", "-").replace("\\&", "").replace("\\(mu", "x")


def man_blocks(path, text):
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].startswith(".Bd -literal"):
            start, body = i + 2, []
            i += 1
            while i < len(lines) and not lines[i].startswith(".Ed"):
                body.append(unroff(lines[i]))
                i += 1
            blocks.append({"where": f"{path}:{start}", "info": "", "text": "\n".join(body), "man": True})
        elif lines[i].startswith(".Dl "):
            blocks.append({"where": f"{path}:{i + 1}", "info": "", "text": unroff(lines[i][4:]), "man": True,
                           "dl": True})
        i += 1
    return blocks


# ---- classification ---------------------------------------------------------


def joined(text):
    """Lines, with continuation lines (leading blanks) joined to the one before."""
    out = []
    for line in text.split("\n"):
        if line.startswith((" ", "\t")) and out:
            out[-1] += " " + line.strip()
        elif line.strip():
            out.append(line)
    return out


def classify(b):
    t, info = b["text"], b["info"]
    first = t.lstrip("\n").split("\n")[0]
    if info.startswith("c file="):
        return "file"
    if info in ("console", "sh") or first.startswith("$ "):
        return "console"
    if all(line.startswith("xpfo: ") for line in joined(t)):
        return "message"
    if info == "text":
        return "output"
    if first.startswith("sudo apt-get install "):
        return "build"
    if first.startswith("export PKG_CONFIG_PATH="):
        return "prefix"
    if sum(bool(re.match(r"^\S+/\s{2,}\S", line)) for line in t.split("\n")) >= 3:
        return "layout"
    if re.search(r"^#include|;\s*(/\*.*\*/)?\s*$", t, re.M):
        return "c-program" if re.search(r"^(\w.*\b)?main\s*\(", t, re.M) else "c-fragment"
    if first == "./setup.sh":
        return "quickstart"
    if all(line.startswith(("examples/", "echo ")) for line in t.split("\n") if line.strip()):
        return "commands"
    if first.startswith("xpfo-run ["):
        return "synopsis"
    if first == "[Service]":
        return "systemd"
    return "unknown"


# ---- checks -------------------------------------------------------------------


def run(cmd, cwd=None, env=None, timeout=120, stdin=None):
    p = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str), stdin=stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace")


def compile_and_run(b, source, work, cflags=()):
    c = os.path.join(work, "block.c")
    exe = os.path.join(work, "block")
    with open(c, "w") as f:
        f.write(source)
    libdir = os.path.dirname(LIB)
    cmd = [*CC, "-std=gnu11", "-Wall", "-Werror", *cflags, "-I", os.path.join(SRC, "include"),
           "-I", os.path.join(BUILD, "include"), "-I", os.path.join(SRC, "tests/docs"), c,
           "-o", exe, "-L", libdir, "-lxpfo", "-lpthread", "-Wl,-rpath," + libdir]
    rc, out = run(cmd)
    if rc != 0:
        fail(b, "does not compile:\n" + out)
        return
    env = dict(os.environ)
    env.pop("XPFO_OPTIONS", None)
    p = subprocess.run([exe], cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    if p.returncode != 0 or BAD_XPFO.search(out + err):
        fail(b, f"exit {p.returncode}:\n{out}{err}")
    global last_stdout
    last_stdout = out


last_stdout = None


def check_c_program(b, work):
    compile_and_run(b, b["text"] + "\n", work)


def check_output(b, work):
    if last_stdout is None:
        fail(b, "no C program before it")
    elif last_stdout.rstrip("\n") != b["text"].rstrip("\n"):
        fail(b, f"the program before it printed:\n{last_stdout}")


def check_build(b, work):
    lines = [line for line in b["text"].split("\n") if line.strip()]
    with open(os.path.join(SRC, ".ci/setup")) as f:
        setup = f.read()
    pkgs = set(re.search(r'PKGS="([^"]*)"', setup).group(1).split())
    for p in lines[0].split()[3:]:
        rc, out = run(["dpkg-query", "-W", "-f=${Status}", p])
        if p not in pkgs or "install ok installed" not in out:
            fail(b, f"package {p}: not in .ci/setup's PKGS or not installed")
    with open(os.path.join(SRC, "tests/prefix.sh")) as f:
        prefix = f.read()
    for step in ("autoreconf -fi", "./configure", "--prefix=", "make -j", "make install"):
        if not any(step in line for line in lines[1:]) or step not in prefix:
            fail(b, f"'{step}': not in the block, or not run by tests/prefix.sh")


def check_prefix(b, work):
    cc = [line.strip() for line in b["text"].split("\n") if "-Wl,-rpath," in line]
    with open(os.path.join(SRC, "README.md")) as f:
        first = [line.strip() for line in f if "-Wl,-rpath," in line][:1]
    if not cc or cc[:1] != first:
        fail(b, "its cc line is not the one tests/prefix.sh runs (the first README line with -Wl,-rpath,)")


def check_c_fragment(b, work):
    includes = [line for line in b["text"].split("\n") if line.startswith("#include")]
    body = [line for line in b["text"].split("\n") if not line.startswith("#include") and line.strip() != "..."]
    src = "#include \"prelude.h\"\n" + "\n".join(includes) + "\n\nint main(void)\n{\n" + \
        "\n".join("\t" + line for line in body) + "\n\treturn 0;\n}\n"
    compile_and_run(b, src, work, ("-Wno-unused-variable", "-Wno-unused-result", "-Wno-unused-function"))


def pattern(expected, numbers):
    """A regex for one expected line: "..." any text; in man pages any number."""
    parts = re.split(r"(\.\.\.|\d+)", expected)
    rx = ""
    for p in parts:
        if p == "...":
            rx += ".*"
        elif p.isdigit():
            rx += r"\d+" if numbers else re.escape(p)
        else:
            rx += re.escape(p)
    return re.compile(rx + r"\Z")


def console_steps(text):
    steps = []
    for line in text.split("\n"):
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps and steps[-1][0].endswith("\\") and not steps[-1][1]:
            steps[-1][0] = steps[-1][0][:-1] + "\n" + line
        elif steps:
            steps[-1][1].append(line)
    for s in steps:
        while s[1] and s[1][-1] == "":
            s[1].pop()
    return steps


def check_console(b, work, env):
    for cmd, expected in console_steps(b["text"]):
        try:
            rc, out = run(["bash", "-c", cmd], cwd=work, env=env, timeout=300)
        except subprocess.TimeoutExpired:
            fail(b, f"$ {cmd}: timed out")
            continue
        if b.get("dl"):  # a one-line display shows no output: its exit status
            if rc != 0:
                fail(b, f"$ {cmd}: exit {rc}:\n{out[-2000:]}")
            continue
        got = out.rstrip("\n").split("\n") if out.strip("\n") else []
        more = bool(expected) and expected[-1].endswith("...")
        ok = len(got) >= len(expected) if more else len(got) == len(expected)
        for e, g in zip(expected, got):
            ok = ok and bool(pattern(e, b.get("man", False)).match(g))
        if not ok:
            fail(b, f"$ {cmd}\n--- shown:\n" + "\n".join(expected) + "\n--- got:\n" + "\n".join(got))


_corpus = None


def corpus():
    global _corpus
    if _corpus is None:
        rc, out = run([MESSAGES])
        cases = re.findall(r"\b[a-z][a-z-]+\b", out.split("cases:", 1)[-1])
        if not cases:
            sys.exit(f"blocks.py: {MESSAGES}: no cases: {out}")
        env = dict(os.environ)
        env.pop("XPFO_OPTIONS", None)
        _corpus = []
        for c in cases:
            _corpus += run([MESSAGES, c], env=env)[1].split("\n")
    return _corpus


PLACEHOLDERS = {"ADDRESS": r"0x[0-9a-f]+", "TID": r"\d+", "NAME": r"[^\"]*", "KIND": r"\w+",
                "WHAT": r".+", "OWNER": r".+"}


def message_pattern(line):
    rx = ""
    for p in re.split(r"(0x[0-9a-f]*\.\.\.|0x\.\.\.|0x[0-9a-f]+|\.\.\.|\d+|\b[A-Z]{3,}\b|\"[^\"]*\")", line):
        if p in PLACEHOLDERS:
            rx += PLACEHOLDERS[p]
        elif p.startswith('"'):  # a compartment's name: the example's own
            rx += r'"[^"]*"'
        elif p.startswith("0x"):
            rx += r"0x[0-9a-f]+"
        elif p == "...":
            rx += ".*"
        elif p.isdigit():
            rx += r"\d+"
        else:
            rx += re.escape(p)
    return re.compile(rx + r"\Z")


def check_message(b, work):
    for line in joined(b["text"]):
        rx = message_pattern(line)
        if not any(rx.match(g) for g in corpus()):
            fail(b, f"no run of tests/docs/messages prints a line like: {line}")


def makefile_targets():
    with open(os.path.join(BUILD, "Makefile")) as f:
        return set(re.findall(r"^([A-Za-z0-9_.-]+):", f.read(), re.M))


def check_quickstart(b, work):
    lines = [line for line in b["text"].split("\n") if line.strip()]
    script = os.path.join(SRC, lines[0])
    if not os.access(script, os.X_OK):
        fail(b, f"{lines[0]} is not an executable file")
    targets = makefile_targets()
    for line in lines[1:]:
        m = re.match(r"^make (\S+)$", line)
        if not m or m.group(1) not in targets:
            fail(b, f"not a make target of this tree: {line}")


def check_synopsis(b, work):
    env = dict(os.environ)
    env.pop("XPFO_OPTIONS", None)
    if "xpfo-run" not in b["text"] or "LD_PRELOAD=" not in b["text"]:
        fail(b, "the synopsis changed: tests/docs/blocks.py's instances need a look")
    for cmd in ([RUN, "--stats", "--", "true"], [RUN, "--stats=json", "--options", "verbose=1", "--", "true"],
                ["env", "LD_PRELOAD=" + LIB, "true"]):
        rc, out = run(cmd, env=env)
        if rc != 0 or BAD_XPFO.search(out):
            fail(b, f"{' '.join(cmd)}: exit {rc}: {out}")


def check_systemd(b, work):
    env = {}
    for line in b["text"].split("\n")[1:]:
        m = re.match(r"^Environment=(\w+)=(\S+)$", line)
        if not m:
            fail(b, f"not an Environment= line: {line}")
            continue
        env[m.group(1)] = m.group(2)
    pre = env.pop("LD_PRELOAD", "")
    rc, dyn = run(["readelf", "-d", LIB])
    soname = re.search(r"Library soname: \[(.*)\]", dyn)
    if not soname or os.path.basename(pre) != soname.group(1):
        fail(b, f"LD_PRELOAD={pre}: the library's soname is {soname.group(1) if soname else '?'}")
    with open(os.path.join(SRC, "debian/libxpfo0.install")) as f:
        installed = f.read()
    libdir = os.path.dirname(pre).lstrip("/").replace("x86_64-linux-gnu", "*")
    if libdir not in installed:
        fail(b, f"debian/libxpfo0.install does not install into {os.path.dirname(pre)}: {installed}")
    run_env = dict(os.environ)
    run_env.update(env)
    run_env["LD_PRELOAD"] = LIB
    rc, out = run(["true"], env=run_env)
    if rc != 0 or BAD_XPFO.search(out):
        fail(b, f"{env}: exit {rc}: {out}")


def check_layout(b, work):
    for line in b["text"].split("\n"):
        m = re.match(r"^(\S+)\s{2,}", line)
        if m and not os.path.exists(os.path.join(SRC, m.group(1))):
            fail(b, f"{m.group(1)} does not exist")


def check_commands(b, work):
    sock = os.path.join(work, "service.sock")
    script = ["set -e"]
    for line in b["text"].split("\n"):
        if not line.strip():
            continue
        line = re.sub(r"/tmp/\w+\.sock", sock, line).replace("picture.png", os.path.join(work, "picture.png"))
        script.append(line)
        if line.rstrip().endswith("&"):
            script.append("srv=$!")
            script.append(f"i=0; while [ ! -S {sock} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done")
    script.append('[ -z "${srv:-}" ] || kill $srv')
    if "picture.png" in b["text"]:
        rc, out = run([os.path.join(BUILD, "examples/pngd/pngd-send"), "--write", "1", "valid", work])
        os.rename(os.path.join(work, "valid-1.png"), os.path.join(work, "picture.png"))
    if os.path.exists(sock):
        os.unlink(sock)
    rc, out = run(["sh", "-c", "\n".join(script)], cwd=BUILD, env=console_env(work))
    replies = [line for line in out.split("\n") if line.strip() and not re.match(r"^\w+: listening on ", line)]
    if rc != 0 or not replies or not all(line.startswith("ok ") for line in replies):
        fail(b, f"exit {rc}:\n{out}")


def check_file(b, work):
    name = b["info"].split("=", 1)[1]
    with open(os.path.join(work, name), "w") as f:
        f.write(b["text"] + "\n")


CHECKS = {"c-program": check_c_program, "c-fragment": check_c_fragment, "message": check_message,
          "quickstart": check_quickstart, "synopsis": check_synopsis, "systemd": check_systemd,
          "layout": check_layout, "file": check_file, "commands": check_commands,
          "output": check_output, "build": check_build, "prefix": check_prefix}


def console_env(work):
    env = dict(os.environ)
    env.pop("XPFO_OPTIONS", None)
    env["PATH"] = os.path.dirname(os.path.abspath(RUN)) + os.pathsep + env["PATH"]
    env["XPFO"] = os.path.abspath(BUILD)
    if os.path.abspath(SRC) != os.path.abspath(BUILD):  # a VPATH build: the headers are in both
        env["CPATH"] = os.path.join(os.path.abspath(SRC), "include")
    # the man pages' example input (xpfo-run(1): sort big.txt)
    with open(os.path.join(work, "big.txt"), "w") as f:
        f.write("".join(f"{(i * 7919) % 10007}\n" for i in range(10000)))
    return env


def main(argv):
    listing = argv[:1] == ["--list"]
    files = argv[1:] if listing else argv
    for path in files:
        with open(os.path.join(SRC, path)) as f:
            text = f.read()
        blocks = man_blocks(path, text) if re.search(r"\.\d$|\.\d\.in$", path) else markdown_blocks(path, text)
        work = tempfile.mkdtemp(prefix="xpfo-docs-")
        env = console_env(work)
        for b in blocks:
            b["kind"] = classify(b)
            if listing:
                print(f"{b['where']}\t{b['kind']}\t{b['text'].strip().splitlines()[0][:60]}")
                continue
            before = len(failures)
            if b["kind"] == "console":
                check_console(b, work, env)
            elif b["kind"] in CHECKS:
                sub = tempfile.mkdtemp(dir=work) if b["kind"].startswith("c-") else work
                CHECKS[b["kind"]](b, sub)
            else:
                fail(b, "a block of no known kind (tests/docs/blocks.py says how each kind is checked):\n"
                     + b["text"])
            known = [why for mark, why in KNOWN_BROKEN.items() if mark in b["text"]]
            if known and len(failures) > before:
                del failures[before:]
                print(f"known failure\t{b['where']}\t{b['kind']}: {known[0]}", flush=True)
                continue
            if known:
                fail(b, "passes: take it out of KNOWN_BROKEN in tests/docs/blocks.py")
            status = "ok" if len(failures) == before else "FAIL"
            print(f"{status}\t{b['where']}\t{b['kind']}", flush=True)
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
