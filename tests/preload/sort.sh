#!/bin/sh
# tests/preload/sort.sh - sort(1) of a generated 1,000,000-line file on xpfo
# (numeric and text keys, two threads).
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog sort coreutils
need_prog awk mawk

awk 'BEGIN { for (i = 0; i < 1000000; i++)
	printf "%d %s-%d\n", (i * 7919) % 1000003, substr("qwertyuiopasdfghjklzxcvbnm", 1 + i % 26, 1 + i % 9), i }' \
	>"$tmp/input.txt" || hard_error "cannot generate the input"

sort_workload() {
	$RUN sort -n -k1,1 -k2 --parallel=2 -S 64M "$tmp/input.txt" >sorted1 || return 1
	$RUN sort -k2,2 -k1,1n --parallel=2 "$tmp/input.txt" >sorted2 || return 1
	$RUN sort -u -t- -k1,1 "$tmp/input.txt" | wc -l
	wc -l <sorted1
	cksum <sorted1
	cksum <sorted2
	head -3 sorted1; tail -3 sorted2
}
compare_run sort sort_workload
finish
