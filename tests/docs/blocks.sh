#!/bin/sh
# blocks.sh - every code block of README.md, the man pages and the
# examples' READMEs compiled, run or checked (tests/docs/blocks.py: how
# blocks are extracted, and how each kind is checked).  The examples'
# READMEs are checked when their programs are built (they need libexpat
# and libpng).  docs/tutorial.md is tests/docs/tutorial.sh's.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog python3
[ -x "${DOCS_MESSAGES:-}" ] || hard_error "tests/docs/messages not built: ${DOCS_MESSAGES:-}"
files="README.md man/xpfo.3 man/xpfo-run.1 man/xpfo.7.in"
for e in parsed pngd; do
	if [ -x "$top_builddir/examples/$e/$e" ]; then
		files="$files examples/$e/README.md"
	else
		say "examples/$e is not built: its README's commands are not run"
	fi
done
# shellcheck disable=SC2086 # a list of files
python3 "$top_srcdir/tests/docs/blocks.py" $files >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out" >&2
[ "$rc" = 0 ] || fail "$(cat "$tmp/err")"
n=$(grep -c '^ok' "$tmp/out")
say "$n blocks passed"
finish
