#!/bin/sh
# man/manpages.sh - the manual pages: mandoc -Tlint finds nothing at warning
# level or above, man -l renders each, xpfo(7)'s OPTIONS list has the
# options and defaults the library prints (XPFO_OPTIONS=help), xpfo(3)
# names every function of include/xpfo.h, and its EXAMPLES program builds
# and runs.  (mandoc's style level is left out: it reports the pages'
# references to each other as missing until they are installed.)
. "$top_srcdir/tests/lib.sh"
command -v mandoc >/dev/null 2>&1 || skip "mandoc is not installed"
need_xpfo
need_prog man man-db
pages="$top_srcdir/man/xpfo.3 $top_srcdir/man/xpfo-run.1 $top_builddir/man/xpfo.7"
f0=0 # failures before this step: "ok" only for a step that had none
pass() { [ "$failures" -ne "$f0" ] || say "ok: $*"; f0=$failures; }

for p in $pages; do
	[ -f "$p" ] || { fail "$p: missing"; f0=$failures; continue; }
	mandoc -Tlint -W warning "$p" > "$tmp/lint" 2>&1 || true
	[ ! -s "$tmp/lint" ] || { cat "$tmp/lint" >&2; fail "$p: mandoc -Tlint"; }
	MANPAGER=cat MANWIDTH=80 man -l "$p" > "$tmp/out" 2> "$tmp/err" || fail "$p: man -l failed"
	[ ! -s "$tmp/err" ] || { cat "$tmp/err" >&2; fail "$p: man -l warned"; }
	grep -q '^NAME' "$tmp/out" || fail "$p: man -l rendered no NAME section"
	pass "$(basename "$p"): lint clean, renders ($(wc -l < "$tmp/out") lines)"
done

# The options: "name default" pairs from the library, and from the page as
# a reader sees it (rendered).
XPFO_OPTIONS=help LD_PRELOAD="$XPFO_LIB" /bin/true 2> "$tmp/help" >/dev/null
sed -n 's/^  \([a-z_]*\)=[^ ]* (default \(.*\))$/\1 \2/p' "$tmp/help" > "$tmp/lib"
[ -s "$tmp/lib" ] || fail "XPFO_OPTIONS=help printed no options"
mandoc -Tascii -O width=300 "$top_builddir/man/xpfo.7" | sed 's/.\x08//g' |
	awk '/^OPTIONS/ { on = 1; next } /^[A-Z]/ { on = 0 }
	     on && /^ +[a-z_]+=[^ ]+$/ { sub(/^ +/, ""); name = substr($0, 1, index($0, "=") - 1) }
	     on && name != "" && /Default: / { d = $0; sub(/.*Default: /, "", d); sub(/\. .*/, "", d);
		sub(/\.$/, "", d); print name, d; name = "" }' > "$tmp/man"
if ! diff -u "$tmp/lib" "$tmp/man"; then
	fail "xpfo(7) OPTIONS differ from XPFO_OPTIONS=help (- library, + page)"
fi
pass "xpfo(7) lists the $(wc -l < "$tmp/lib") options of XPFO_OPTIONS=help with their defaults"

# Every exported function of the header is documented in xpfo(3).
for f in $(sed -n 's/^XPFO_API .*[ *]\(xpfo_[a-z0-9_]*\)(.*/\1/p' "$top_srcdir/include/xpfo.h"); do
	grep -q "^\.Nm $f\( ,\)\{0,1\}$" "$top_srcdir/man/xpfo.3" || fail "xpfo(3): no .Nm $f"
	grep -q "^\.Fn $f " "$top_srcdir/man/xpfo.3" || fail "xpfo(3): no .Fn $f in the SYNOPSIS"
done
pass "xpfo(3) names every XPFO_API function of include/xpfo.h"

# xpfo(3) says one thing about threads and the lock (issue 34): BUGS once
# said the lock refuses other threads on pkeys too, while DESCRIPTION,
# ERRORS, xpfo.h and README (and the QEMU rig's tests) say pkeys with
# root_key allows them.
MANPAGER=cat MANWIDTH=200 man -l "$top_srcdir/man/xpfo.3" 2>/dev/null |
	sed -n '/^BUGS/,$p' > "$tmp/bugs"
grep -q 'pkeys backend too' "$tmp/bugs" && fail "xpfo(3) BUGS: the lock refuses other threads on pkeys too"
grep -q 'With that key, on pkeys, other threads may be alive' "$tmp/bugs" ||
	fail "xpfo(3) BUGS does not say that pkeys with root_key allows other threads"
grep -q 'the lock then needs one thread' "$top_srcdir/README.md" ||
	fail "README's root_key row no longer says when the lock needs one thread"
pass "xpfo(3) BUGS agrees with DESCRIPTION on threads and the lock"

# The EXAMPLES program, against the build tree's header and library.
sed -n '/^\.Sh EXAMPLES/,/^\.Sh /p' "$top_srcdir/man/xpfo.3" |
	sed -n '/^\.Bd -literal/,/^\.Ed/p' | sed '1d;$d' | sed 's/\\e/\\/g' > "$tmp/ex.c"
${CC:-cc} -I"$top_srcdir/include" -I"$top_builddir/include" -o "$tmp/ex" "$tmp/ex.c" \
	-L"$top_builddir/.libs" -lxpfo -Wl,-rpath,"$top_builddir/.libs" ||
	{ fail "xpfo(3) EXAMPLES does not build"; finish; }
out=$("$tmp/ex" 2> "$tmp/ex.err") || { cat "$tmp/ex.err" >&2; fail "xpfo(3) EXAMPLES failed"; }
[ "$out" = "parsed, owned by root" ] || fail "xpfo(3) EXAMPLES printed \"$out\""
grep -q '^xpfo:   compartments .* 1 transfers' "$tmp/ex.err" || fail "xpfo(3) EXAMPLES: no transfer counted"
pass "xpfo(3) EXAMPLES builds and runs: $out"
finish
