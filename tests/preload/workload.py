# workload.py - a Python workload for tests/preload/python.sh: builds and
# drops large dicts, lists and strings, round-trips JSON, runs threads.
# Deterministic output (run with PYTHONHASHSEED=0).
import hashlib
import json
import queue
import sys
import threading


def digest(obj):
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:16]


def big_dict(n, salt):
    return {("k%d-%s" % (i, salt)): [i, str(i) * (i % 7), {"v": i * 3}]
            for i in range(n)}


def main():
    out = []
    # large dicts, built and dropped
    for round_ in range(2):
        d = big_dict(150000, round_)
        out.append(("dict", round_, len(d), sum(v[0] for v in d.values())))
        del d
    # large lists, sorted, sliced, dropped
    lst = [(i * 7919) % 1000003 for i in range(500000)]
    lst.sort()
    out.append(("list", lst[0], lst[-1], lst[250000], len(lst)))
    lst2 = [str(x) for x in lst[::3]]
    out.append(("strlist", digest(lst2[:1000]), len(lst2)))
    del lst, lst2
    # large strings: join, replace, split, slices
    s = "".join("line %d of text, %s\n" % (i, "x" * (i % 50)) for i in range(200000))
    s2 = s.replace("text", "TEXT").upper()
    parts = s2.split("\n")
    out.append(("str", len(s), len(s2), len(parts), hashlib.sha256(s2.encode()).hexdigest()[:16]))
    big = "y" * (64 << 20)
    out.append(("bigstr", len(big), big.count("y")))
    del s, s2, parts, big
    # bytes growing by concatenation (realloc chains)
    b = bytearray()
    for i in range(100000):
        b += (b"%d," % i)
    out.append(("bytearray", len(b), hashlib.sha256(b).hexdigest()[:16]))
    del b
    # JSON round-trips
    doc = {"items": [{"id": i, "name": "item-%d" % i, "tags": ["t%d" % (i % 13)] * (i % 5),
                      "price": i / 7.0, "nested": {"a": [i, i + 1], "b": None}}
                     for i in range(40000)]}
    for _ in range(3):
        text = json.dumps(doc, sort_keys=True)
        doc = json.loads(text)
    out.append(("json", len(text), hashlib.sha256(text.encode()).hexdigest()[:16]))
    del doc, text

    # threads: producers build objects, consumers JSON-encode them
    q = queue.Queue(maxsize=1000)
    results = [None] * 4
    lock = threading.Lock()
    total = [0]

    def producer(tid):
        for i in range(20000):
            q.put({"t": tid, "i": i, "payload": "p" * (i % 300), "list": list(range(i % 40))})

    def consumer(idx):
        h = hashlib.sha256()
        n = 0
        while True:
            item = q.get()
            if item is None:
                break
            enc = json.dumps(item, sort_keys=True).encode()
            h.update(b"%d" % len(enc))
            n += 1
        with lock:
            total[0] += n
        results[idx] = n

    cons = [threading.Thread(target=consumer, args=(k,)) for k in range(4)]
    prods = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
    for t in cons + prods:
        t.start()
    for t in prods:
        t.join()
    for _ in cons:
        q.put(None)
    for t in cons:
        t.join()
    out.append(("threads", total[0], sum(results)))

    for row in out:
        print(*row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
