#!/bin/sh
# tests/preload/forkalloc.sh - fork while threads allocate, under LD_PRELOAD, and
# the stress program under LD_PRELOAD with revoke=eager (every free of a
# page run is an immediate revocation while other threads run).
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
LD_PRELOAD=$XPFO_LIB "$top_builddir/tests/preload/forkalloc-plain" --require-xpfo --forks 50 ||
	fail "forkalloc-plain under LD_PRELOAD"
XPFO_OPTIONS=revoke=eager LD_PRELOAD=$XPFO_LIB "$top_builddir/tests/preload/stress-plain" \
	--require-xpfo --threads 3 --seconds 2 --generations 2 ||
	fail "stress-plain under LD_PRELOAD with revoke=eager"
finish
