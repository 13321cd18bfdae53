"""Allocation-heavy Python workload for the allocator benchmarks.

Run as: PYTHONMALLOC=malloc python3 -S -E alloc_heavy.py N
PYTHONMALLOC=malloc sends every object through malloc/free (instead of
Python's own small-object arenas), so the allocator under test serves all
of them.  N scales the work; the result line is checked by the runner.
"""
import json
import sys


class Record:
    def __init__(self, i, name, tags):
        self.i = i
        self.name = name
        self.tags = tags
        self.attrs = {"len": len(name), "odd": i & 1}


def run(n):
    # many small objects with mixed lifetimes
    recs = [Record(i, "name-%d-%s" % (i, "x" * (i % 17)), [i % 7, i % 11, str(i)])
            for i in range(n)]
    index = {r.name: r for r in recs}
    groups = {}
    for r in recs:
        groups.setdefault(r.i % 97, []).append(r.name.upper())
    # string building and splitting
    text = "\n".join("%d,%s,%s" % (r.i, r.name, ";".join(map(str, r.tags))) for r in recs)
    rows = [line.split(",") for line in text.splitlines()]
    # json round trip of nested structures
    doc = [{"id": r.i, "name": r.name, "tags": r.tags, "attrs": r.attrs} for r in recs[: n // 2]]
    back = json.loads(json.dumps(doc))
    # sort, filter, drop half of everything
    rows.sort(key=lambda row: (row[1][::-1], int(row[0])))
    keep = [r for r in recs if r.i % 3]
    for r in recs[::2]:
        del index[r.name]
    words = set()
    for row in rows:
        words.update(row[2].split(";"))
    total = len(index) + len(groups) + len(back) + len(keep) + len(words)
    return total


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: alloc_heavy.py N")
    n = int(sys.argv[1])
    t = 0
    for _ in range(3):
        t += run(n)
    print("alloc_heavy: n=%d result=%d" % (n, t))
