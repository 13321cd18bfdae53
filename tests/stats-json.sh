#!/bin/sh
# stats-json.sh - statistics as JSON: python3 -c 'print(1)' under
# xpfo-run --stats=json and under XPFO_OPTIONS=stats=json prints one JSON
# object per process that python3 -m json.tool parses, with every field of
# struct xpfo_stats.  The field list is read from include/xpfo.h here, not
# written down, so a field added to the struct without JSON output fails.
# Also: the values agree with each other (class sums), --stats and a bare
# "stats" stay the text format, and a bad --stats= value is refused.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || hard_error "python3 not installed (Debian package: python3)"
hdr=$top_srcdir/include/xpfo.h

# struct xpfo_stats from the header: "name" or "name[]" per field, in order.
awk '/^struct xpfo_stats \{/ { on = 1; next }
     on && /^\};/ { exit }
     on {
	sub(/\/\*.*/, "")
	if (!match($0, /uint64_t[ \t]+[a-z_0-9]+(\[[A-Z_0-9]+\])?;/)) next
	f = substr($0, RSTART, RLENGTH); sub(/uint64_t[ \t]+/, "", f); sub(/;/, "", f)
	sub(/\[.*\]/, "[]", f); print f
     }' "$hdr" >"$tmp/fields"
nf=$(wc -l <"$tmp/fields")
nclass=$(sed -n 's/^#define XPFO_STATS_CLASSES \([0-9]*\).*/\1/p' "$hdr")
[ "$nf" -ge 40 ] && [ -n "$nclass" ] ||
	hard_error "could not read struct xpfo_stats from $hdr ($nf fields, classes '$nclass')"
say "struct xpfo_stats in $hdr: $nf fields, arrays of $nclass"

# check_json ERRFILE WHAT: the JSON lines of ERRFILE parse and hold every field
check_json() {
	grep '^{' "$1" >"$tmp/json"
	n=$(wc -l <"$tmp/json")
	[ "$n" -ge 1 ] || { fail "$2: no JSON object on stderr: $(head -5 "$1")"; return; }
	grep -q '^xpfo:   ' "$1" && fail "$2: the text report was printed too"
	head -1 "$tmp/json" | "$PY" -m json.tool >/dev/null 2>"$tmp/jerr" ||
		fail "$2: python3 -m json.tool rejects the output: $(cat "$tmp/jerr")"
	"$PY" - "$tmp/json" "$tmp/fields" "$nclass" >"$tmp/check" 2>&1 <<'PYEOF' ||
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
fields = open(sys.argv[2]).read().split()
ncls = int(sys.argv[3])
bad = []
for o in objs:
    for f in fields:
        name = f.rstrip("[]")
        v = o.get(name)
        if f.endswith("[]"):
            if not (isinstance(v, list) and len(v) == ncls and all(isinstance(x, int) for x in v)):
                bad.append("%s: not an array of %d integers: %r" % (name, ncls, v))
        elif not isinstance(v, int) or isinstance(v, bool):
            bad.append("%s: missing or not an integer: %r" % (name, v))
    for k in ("backend", "revoke"):
        if not isinstance(o.get(k), str) or not o[k]:
            bad.append("%s: missing" % k)
    if "backend_note" not in o:
        bad.append("backend_note: missing")
    if not bad and sum(o["class_allocs"]) != o["allocs_small"]:
        bad.append("class_allocs sum %d != allocs_small %d" % (sum(o["class_allocs"]), o["allocs_small"]))
    if not bad and o["allocs"] <= 0:
        bad.append("no allocations counted")
    if bad:
        break
for b in bad[:10]:
    print(b)
print("%d object(s), %d problem(s)" % (len(objs), len(bad)))
sys.exit(1 if bad else 0)
PYEOF
		{ fail "$2: $(cat "$tmp/check")"; return; }
	say "$2: $(tail -1 "$tmp/check")"
}

[ -x "$XPFO_RUN" ] || hard_error "xpfo-run not built: $XPFO_RUN"
out=$("$XPFO_RUN" --stats=json -- "$PY" -c 'print(1)' 2>"$tmp/err1")
[ "$out" = 1 ] || fail "xpfo-run --stats=json: python printed '$out'"
check_json "$tmp/err1" "xpfo-run --stats=json"

XPFO_OPTIONS=stats=json LD_PRELOAD=$XPFO_LIB "$PY" -c 'print(1)' >/dev/null 2>"$tmp/err2"
check_json "$tmp/err2" "XPFO_OPTIONS=stats=json"
grep -q '^xpfo: warning' "$tmp/err2" && fail "stats=json warned: $(cat "$tmp/err2")"

# the text format stays what --stats, stats=1 and a bare stats give
for how in "--stats" "--options=stats" "--options=stats=1"; do
	"$XPFO_RUN" $how -- "$PY" -c 'print(1)' >/dev/null 2>"$tmp/err3"
	grep -q '^xpfo: stats (pid ' "$tmp/err3" || fail "xpfo-run $how: no text report"
	grep -q '^{' "$tmp/err3" && fail "xpfo-run $how: printed JSON"
	grep -q '^xpfo: warning' "$tmp/err3" && fail "xpfo-run $how warned: $(cat "$tmp/err3")"
done
"$XPFO_RUN" --stats=yaml -- "$PY" -c 'print(1)' >/dev/null 2>&1 &&
	fail "xpfo-run accepted --stats=yaml"
finish
