#!/bin/sh
# tests/preload/threads.sh - multi-threaded programs on xpfo: xz with two threads
# (compress, test, decompress), and xpfo's own stress program built without
# xpfo, run under LD_PRELOAD.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog xz xz-utils

awk 'BEGIN { for (i = 0; i < 200000; i++) printf "%d,%d,%s\n", i, (i * 2654435761) % 4294967296, substr("abcdefghijklmnopqrstuvwxyz0123456789", 1 + i % 36) }' \
	>"$tmp/data.csv" || hard_error "cannot generate the input"

xz_workload() {
	$RUN xz -T2 -4 --block-size=512KiB -c "$tmp/data.csv" >data.xz || return 1
	$RUN xz -T2 -t data.xz || return 1
	$RUN xz -T2 -dc data.xz | cksum
	cksum <data.xz
	xz -l --robot data.xz | awk '$1 == "totals" { print $2, $3, $5 }'
}
compare_run xz xz_workload

stress=$top_builddir/tests/preload/stress-plain
[ -x "$stress" ] || hard_error "$stress not built"
stress_workload() {
	$RUN "$stress" --threads 4 --seconds 3 --quiet
}
compare_run stress stress_workload
finish
