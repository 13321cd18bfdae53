# The main job of the Quick start: an ordinary Python program, run under
# xpfo-run --stats.  `make demo` sets PYTHONMALLOC=malloc so that Python asks
# malloc for every object instead of carving its own arenas.  It builds and
# drops dicts, lists and strings, round-trips JSON, runs threads and makes
# large buffers: every allocation comes from xpfo.
import json
import threading

def churn(seed, out):
    table = {f"key-{seed}-{i}": [i] * (i % 40) for i in range(20000)}
    text = json.dumps(table)
    back = json.loads(text)
    blobs = [bytes(64 * 1024 + i) for i in range(64)]
    out[seed] = (len(back), len(text), sum(len(b) for b in blobs))

results = {}
threads = [threading.Thread(target=churn, args=(s, results)) for s in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for seed in sorted(results):
    print(f"thread {seed}: {results[seed][0]} keys, {results[seed][1]} bytes of JSON, "
          f"{results[seed][2]} bytes of buffers")
