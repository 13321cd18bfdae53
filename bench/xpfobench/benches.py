"""The benchmarks: xb-work workloads and real programs, at three scales."""

import os
import re
import shutil
import subprocess

from .allocators import base_env

# xb-micro-xpfo's runs (name, XPFO_OPTIONS), in the report's order: the
# revocation ablation over batch sizes, and the compartment API per mode.
# The ablation's blocks of one and four pages are slots of root's slabs: a
# heap that keeps its empty slabs (keep_empty, 16 MiB by default) revokes
# none of them, so every ablation mode keeps none (keep_empty=0).
ABLATION_BATCHES = [1, 4, 16, 64, 256, 1024]
ABLATION_MODES = [("off", ["revoke=off", "keep_empty=0"]),
                  ("eager", ["revoke=eager", "keep_empty=0"])] + \
    [("batch=%d" % n, ["revoke=batched", "batch=%d" % n, "keep_empty=0"])
     for n in ABLATION_BATCHES]
COMPARTMENT_MODES = [("batched", []), ("eager", ["revoke=eager"]), ("off", ["revoke=off"])]

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
    # prodcons and threadchurn: xpfo-eager and xpfo-strict take 10-15x
    # glibc's time on them (a protection change per 1-64 KiB block freed),
    # so they stay near the other workloads' sizes
    "prodcons": {"smoke": "-n 20000", "quick": "-n 750000", "full": "-n 2000000"},
    "threadchurn": {"smoke": "-r 50", "quick": "-r 1000", "full": "-r 2000"},
    # issue 37's five patterns (the rows an independent suite found 2-9x
    # glibc); quick: about 0.4-0.8 s under glibc on a loaded 2-CPU machine.
    # 1. short-lived threads, 4 a generation, 1,000 live objects each, half
    #    handed to the next generation
    "shortlived": {"smoke": "-t 4 -w 100 -n 500 -r 5 -b 4096",
                   "quick": "-t 4 -w 1000 -n 5000 -r 40 -b 4096",
                   "full": "-t 4 -w 1000 -n 5000 -r 100 -b 4096"},
    # 2. server: larson with 4 workers (more threads than CPUs), slots
    #    passed on every round; glthread: the same in one round, a tight
    #    replace loop per thread
    "server": {"smoke": "-t 4 -n 2000 -r 2", "quick": "-t 4 -n 100000 -r 5",
               "full": "-t 4 -n 250000 -r 10"},
    "glthread": {"smoke": "-t 4 -n 5000 -r 1", "quick": "-t 4 -n 400000 -r 1",
                 "full": "-t 4 -n 1000000 -r 1"},
    # 3. repeated large blocks: 2-8 MiB, every page written, replaced in a loop
    "bigblock": {"smoke": "-n 20", "quick": "-n 400", "full": "-n 1000"},
    # 4. short-lived threads handing blocks across generations, one object
    #    in 50 of 16-256 KiB
    "genchurn": {"smoke": "-t 4 -w 128 -n 200 -r 5 -l 50 -c 16384 -d 262144",
                 "quick": "-t 4 -w 512 -n 2000 -r 60 -l 50 -c 16384 -d 262144",
                 "full": "-t 4 -w 512 -n 2000 -r 150 -l 50 -c 16384 -d 262144"},
    # 5. two threads mail batches of 1,000 objects to each other, one in 16
    #    of 4-64 KiB
    "mixed2": {"smoke": "-t 2 -n 20 -r 1000 -l 16 -c 4096 -d 65536",
               "quick": "-t 2 -n 500 -r 1000 -l 16 -c 4096 -d 65536",
               "full": "-t 2 -n 1500 -r 1000 -l 16 -c 4096 -d 65536"},
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
    def __init__(self, name, desc, work=None):
        super().__init__(name, desc)
        self.work = work or name  # the xb-work workload it runs

    def setup(self, ctx):
        self.exe = os.path.join(ctx.builddir, "bench", "xb-work")
        if not os.access(self.exe, os.X_OK):
            self.skip = "bench/xb-work not built"

    def argv(self, ctx):
        return [self.exe, self.work] + SCALES[self.name][ctx.mode].split()

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
        Workload("prodcons", "producer/consumer: small objects freed by the "
                 "other thread (through a ring), 1-64 KiB blocks churned on both"),
        Workload("threadchurn", "many short-lived threads (2 at a time) "
                 "allocating and exiting, half their objects freed by the next"),
        Workload("shortlived", "issue 37 pattern 1: short-lived threads, 4 a "
                 "generation with 1,000 live objects (16 B-4 KiB) each, half "
                 "handed to the next generation", work="threadchurn"),
        Workload("server", "issue 37 pattern 2: larson with 4 workers, slots "
                 "passed to new threads every round", work="larson"),
        Workload("glthread", "issue 37 pattern 2: 4 threads in a tight "
                 "replace loop over 1,000 slots each (one round)", work="larson"),
        Workload("bigblock", "issue 37 pattern 3: blocks of 2-8 MiB, every "
                 "page written, freed and replaced in a loop"),
        Workload("genchurn", "issue 37 pattern 4: short-lived threads, 4 a "
                 "generation, one object in 50 of 16-256 KiB, half of each "
                 "generation's objects freed by the next", work="threadchurn"),
        Workload("mixed2", "issue 37 pattern 5: 2 threads mail batches of "
                 "1,000 objects to each other, one in 16 of 4-64 KiB",
                 work="xmalloc"),
        Sqlite("sqlite", "sqlite3 CLI: sorts, group-bys, a join and an index "
               "build over a generated database (in-memory temp store)"),
        Python("python", "python3 with PYTHONMALLOC=malloc: objects, dicts, "
               "strings, json round trip, sort"),
        Redis("redis", "redis-server on 127.0.0.1 driven by redis-benchmark "
              "(fixed request count); time = client wall time, RSS = server"),
        Git("git", "git repack -adf with pack.threads=2 on a generated "
            "history (multi-threaded delta search)"),
    ]
