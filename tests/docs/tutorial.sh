#!/bin/sh
# tutorial.sh - docs/tutorial.md, run: its files written, each of its
# commands run in one scratch directory and its output compared with what
# the tutorial shows (tests/docs/blocks.py, kinds "file" and "console").
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog python3
python3 "$top_srcdir/tests/docs/blocks.py" docs/tutorial.md >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" >&2
[ "$rc" = 0 ] || fail "$(cat "$tmp/err")"
n=$(grep -c '^ok' "$tmp/out")
say "$n blocks passed"
finish
