#!/bin/sh
# tests/preload/bash.sh - bash on xpfo: arrays, associative arrays, string
# manipulation, command substitution, functions, subshells.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog bash bash

bash_workload() {
	$RUN bash -c '
		declare -A h
		a=()
		for ((i = 0; i < 30000; i++)); do
			h["k$i"]=$((i * 3))
			a+=("item-$i")
		done
		echo "assoc ${#h[@]} array ${#a[@]} ${a[12345]} ${h[k29999]}"
		s=""
		for ((i = 0; i < 5000; i++)); do s+="word$i "; done
		echo "string ${#s} ${s:100:20} ${s//word/W}" | cut -c1-80
		f() { local x=$1; echo $((x * x)); }
		t=0
		for ((i = 0; i < 2000; i++)); do t=$((t + $(f $i))); done
		echo "subst $t"
		unset h a
		printf "%s\n" {1..20000} | ( sum=0; while read -r n; do sum=$((sum + n)); done; echo "pipe $sum" )
		x=$(printf "%0.s-" {1..100000}); echo "long ${#x}"
	'
}
compare_run bash bash_workload
finish
