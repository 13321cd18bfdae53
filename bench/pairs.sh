#!/bin/sh
# pairs.sh - instructions per small malloc/free pair (bench/micro/pairs.c)
# under each allocator, counted by callgrind (repeatable on a loaded
# machine, unlike seconds).  Usage, from the build tree:
#
#   make bench/xb-pairs && sh bench/pairs.sh [pairs] [configs...]
#
# configs: glibc mimalloc jemalloc xpfo xpfo-nowaf xpfo-light xpfo-off
# xpfo-light-off (default: all; xpfo-nowaf: the default without the
# write-after-free check, waf_check=0).  Prints one row per configuration: instructions per pair
# for the one-thread window (local) and the two-thread producer/consumer
# (remote), counting only the measure_* functions and what they call.
# The one-thread count repeats exactly; the two-thread one varies by a few
# instructions with how the threads interleave under valgrind.
set -u
n=${1:-200000}
[ $# -gt 0 ] && shift
configs=${*:-glibc mimalloc jemalloc xpfo xpfo-nowaf xpfo-light xpfo-off xpfo-light-off}
lib=/usr/lib/x86_64-linux-gnu
xpfo=${XPFO_LIB:-$(pwd)/.libs/libxpfo.so}   # XPFO_LIB: another build's
# valgrind refuses the default 64 GiB reservation (EINVAL, not ENOMEM);
# the reservation's size does not change the fast path
vg=reserve=16
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
count() { # config mode
	pre= opts=
	case $1 in
	glibc) ;;
	mimalloc) pre=$lib/libmimalloc.so.2 ;;
	jemalloc) pre=$lib/libjemalloc.so.2 ;;
	xpfo) pre=$xpfo opts=$vg ;;
	xpfo-nowaf) pre=$xpfo opts=$vg,waf_check=0 ;;
	xpfo-light) pre=$xpfo opts=$vg,profile=light ;;
	xpfo-off) pre=$xpfo opts=$vg,revoke=off ;;
	xpfo-light-off) pre=$xpfo opts=$vg,profile=light,revoke=off ;;
	*) echo "pairs.sh: unknown config $1" >&2; exit 2 ;;
	esac
	f=$out/$1.$2
	env ${pre:+LD_PRELOAD=$pre} ${opts:+XPFO_OPTIONS=$opts} \
		valgrind -q --tool=callgrind --toggle-collect='measure_*' \
		--callgrind-out-file="$f" ./bench/xb-pairs "$2" "$n" 2>&1 >/dev/null |
		grep -v "revoke=off: freed pages stay reachable" >&2
	[ -s "$f" ] || return 1
	ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$f")
	awk -v ir="$ir" -v n="$n" -v m="$2" 'BEGIN {
		if (m == "remote") n -= n % 1024; printf "%.1f", ir / n }'
}
printf '| allocator | local (1 thread) | remote (2 threads) |\n|---|---|---|\n'
for c in $configs; do
	printf '| %s | %s | %s |\n' "$c" "$(count "$c" local)" "$(count "$c" remote)"
done
