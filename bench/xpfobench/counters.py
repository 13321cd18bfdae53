"""xpfo's counters, from the JSON objects XPFO_OPTIONS=stats=json prints to
stderr at exit (one per process; include/xpfo.h, struct xpfo_stats)."""

import json
import re

# xpfo counters shown in the report (names of struct xpfo_stats fields)
XPFO_COUNTERS = ["revoke_syscalls", "grant_syscalls", "pages_revoked",
                 "pages_queued", "pages_cancelled", "flushes", "flush_rounds", "purges",
                 "mmap_syscalls", "munmap_syscalls", "madvise_syscalls",
                 "vmas", "peak_resident_kib", "revoke_failures"]
# counters that are a level ("now" or "peak"), not a running total
XPFO_LEVELS = {"vmas", "peak_resident_kib", "pages_quarantined"}
# the fields kept per run: XPFO_COUNTERS and these (peak_resident_kib is
# derived from peak_resident_bytes)
XPFO_KEPT = ["revoke_queued", "pages_purged", "pages_quarantined", "allocs",
             "regrants_soon", "uffd_faults", "uffd_fills", "spans_released_uffd",
             "uffd_syscalls", "spans_guarded", "flush_rounds_shared",
             "flush_thread_exit", "spans_remapped"]

# the start of an object; the first key is the format's version
_START = re.compile(r'\{"xpfo_stats": ')


def xpfo_objects(text):
    """The stats objects in stderr text (a line may start with the
    program's own output when it did not end its last line)."""
    dec = json.JSONDecoder()
    for line in text.splitlines():
        m = _START.search(line)
        if not m:
            continue
        try:
            obj, _ = dec.raw_decode(line, m.start())
        except ValueError:
            continue
        if obj.get("xpfo_stats") == 1:
            yield obj


def counters_of(obj):
    """The counters the runner keeps from one process's object."""
    out = {}
    for name in XPFO_COUNTERS + XPFO_KEPT:
        if name == "peak_resident_kib":
            out[name] = obj["peak_resident_bytes"] >> 10
        elif name not in obj:  # an older libxpfo without the field
            out[name] = 0
        else:
            out[name] = obj[name]
    return out


def parse_xpfo_stats(text):
    """Sum xpfo's stats objects (one per process) from stderr text; levels
    (vmas, peaks, quarantined pages) take the largest value."""
    out = {}
    for obj in xpfo_objects(text):
        out["processes"] = out.get("processes", 0) + 1
        out["backend"], out["revoke"], out["batch"] = obj["backend"], obj["revoke"], obj["batch"]
        for name, v in counters_of(obj).items():
            if name in XPFO_LEVELS:
                out[name] = max(out.get(name, 0), v)
            else:
                out[name] = out.get(name, 0) + v
    return out
