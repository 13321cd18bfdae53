#!/bin/sh
# tests/preload/python.sh - python3 (dicts, lists, strings, JSON, threads) on xpfo,
# once through LD_PRELOAD= and once through xpfo-run --stats: same output as
# without xpfo, and xpfo's stats show it served the interpreter.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
skip_if_slow
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || hard_error "python3 not installed (Debian package: python3)"
script=$top_srcdir/tests/preload/workload.py

py_workload() {
	PYTHONHASHSEED=0 $RUN "$PY" "$script"
}
compare_run python py_workload
PRELOAD_MODE=xpfo-run compare_run python-xpfo-run py_workload
finish
