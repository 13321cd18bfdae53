#!/bin/sh
# tests/readme.sh - README.md's C programs build and run as written (issue
# 34): every fenced ```c block is a whole program; it is built against the
# build tree's header and library with -Wall -Werror, run with stdout a
# pipe, and must exit 0 with nothing on stderr; when the block is followed
# by "It prints:" and a fenced ```text block, its output must be exactly
# that text.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo

# Split README into $tmp/block-N.c and, where given, $tmp/block-N.out.
awk -v dir="$tmp" '
	/^```c$/ { n++; f = dir "/block-" n ".c"; inc = 1; next }
	/^```text$/ && want { f = dir "/block-" n ".out"; intext = 1; want = 0; next }
	/^```$/ { if (inc) want = 0; inc = 0; intext = 0; next }
	inc || intext { print > f; next }
	/^It prints:$/ { want = 1; next }
	/[^ ]/ { want = 0 }
' "$top_srcdir/README.md"
count=0
for src in "$tmp"/block-*.c; do
	[ -f "$src" ] || break
	count=$((count + 1))
	name=$(basename "$src" .c)
	${CC:-cc} -Wall -Werror -I"$top_srcdir/include" -I"$top_builddir/include" -o "$tmp/$name" \
		"$src" -L"$top_builddir/.libs" -lxpfo -Wl,-rpath,"$top_builddir/.libs" \
		> "$tmp/$name.cc" 2>&1 || { cat "$tmp/$name.cc" >&2; fail "README program $count does not build"; continue; }
	"$tmp/$name" > "$tmp/$name.got" 2> "$tmp/$name.err" < /dev/null
	rc=$?
	[ $rc -eq 0 ] || fail "README program $count exited with $rc: $(head -3 "$tmp/$name.err")"
	[ ! -s "$tmp/$name.err" ] || fail "README program $count wrote to stderr: $(head -3 "$tmp/$name.err")"
	if [ -f "$tmp/$name.out" ]; then
		diff -u "$tmp/$name.out" "$tmp/$name.got" >&2 ||
			fail "README program $count printed something else than README says"
	fi
	say "README program $count: exit $rc, $(wc -l < "$tmp/$name.got") lines as documented"
done
[ $count -ge 2 ] || fail "README.md has $count C programs (expected the compartment and fork examples)"
finish
