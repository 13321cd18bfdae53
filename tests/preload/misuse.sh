#!/bin/sh
# tests/preload/misuse.sh - the misuse cases (tests/preload/misuse-plain, built without
# xpfo) under LD_PRELOAD=libxpfo.so: same fatal lines, same SIGABRT.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
LD_PRELOAD=$XPFO_LIB "$top_builddir/tests/preload/misuse-plain" --require-xpfo
