#!/bin/sh
# tests/preload/api.sh - the API conformance suite (tests/preload/api-plain, built without
# xpfo) run under LD_PRELOAD=libxpfo.so: the interposition path.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
LD_PRELOAD=$XPFO_LIB "$top_builddir/tests/preload/api-plain" --require-xpfo
