#!/bin/sh
# kernel/bench.sh: what `make bench-kernel` runs: the measurements behind
# kernel/README.md, too long for make check-kernel.
#
#   1. -smp 4, 1/2/4 faulting threads, functional checks, 10,000-file churn,
#      2,000 RLIMIT_MEMLOCK=0 touches, split counters after 1 GiB of churn,
#      100 process_madvise(MADV_DONTNEED) releases of 64 ranges per layout;
#   2. -smp 8, 1/2/4 faulting threads and the releases (counts only);
#   3. five interleaved boots of base and patched: fault time and churn time
#      (ratio of medians);
#   4. the "noflush" kernel (the series with the block flush deleted): its
#      lower-bound check must FAIL, which this script turns into
#      PASS: kernel/noflush-rejected;
#   5. the "debug" kernel (LOCKDEP, KASAN, DEBUG_PAGEALLOC, DEBUG_VM, MEMCG):
#      functional checks and the concurrent fault + drop_caches stress, no
#      splat; its interrupt counts beside "debug-base" (the stock kernel with
#      the same configuration), whose own interrupts are not the series'.
#
# Usage: kernel/bench.sh [--only N]...   (default: all five)
# Every step builds what it needs with kernel/build.sh (cached).  The whole
# output is also kept in $(kernel_dir)/bench-latest.txt.
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
kdir=$(kernel_dir)
only=
while [ $# -gt 0 ]; do
	case $1 in
	--only) only="$only $2"; shift 2 ;;
	*) echo "kernel/bench.sh: unknown argument $1" >&2; exit 99 ;;
	esac
done
[ -n "$only" ] || only="1 2 3 4 5"
status=0
out=$kdir/bench-latest.txt
mkdir -p "$kdir"
: >"$out"

step() {	# N TITLE VARIANTS -- TEST.SH ARGS
	n=$1 title=$2 variants=$3
	shift 4
	case " $only " in *" $n "*) ;; *) return 0 ;; esac
	echo "== $n. $title" | tee -a "$out"
	for v in $variants; do
		sh "$here/build.sh" --variant "$v" || { status=1; return 1; }
	done
	echo "kernel/test.sh $*" | tee -a "$out"
	sh "$here/test.sh" "$@" >"$kdir/bench-step$n.txt" 2>&1
	rc=$?
	tee -a "$out" <"$kdir/bench-step$n.txt"
	return $rc
}

step 1 "-smp 4: threads, checks, churn, RLIMIT_MEMLOCK=0, 1 GiB split counters" \
	"base patched" -- --smp 4 --mib 64 --threads "1 2 4" --churn 10000 \
	--memlock0 2000 --dmap-mib 1024 --madv 100 || status=1
step 2 "-smp 8: threads" "base patched" -- --smp 8 --mib 64 --threads "1 2 4" \
	--no-check --churn 0 --memlock0 0 --dmap-mib 0 --madv 100 || status=1
step 3 "five interleaved boots: fault and churn time" "base patched" -- \
	--boots 5 --smp 4 --mib 64 --threads 1 --no-check --churn 10000 --memlock0 0 \
	--dmap-mib 0 --madv 0 || status=1
if step 4 "the flush deleted: the lower bound must reject it" noflush -- \
	--configs noflush --smp 4 --mib 64 --threads "1 4" --no-check --churn 0 \
	--memlock0 0 --dmap-mib 0 --madv 0; then
	case " $only " in *" 4 "*)
		echo "FAIL: kernel/noflush-rejected (every check passed)" | tee -a "$out"
		status=1 ;;
	esac
elif grep -q '^FAIL: kernel/noflush/lower-bound' "$kdir/bench-step4.txt"; then
	echo "PASS: kernel/noflush-rejected" | tee -a "$out"
else
	echo "FAIL: kernel/noflush-rejected (failed, but not the lower bound)" | tee -a "$out"
	status=1
fi
step 5 "debug kernel: checks and concurrent stress" "debug debug-base" -- \
	--configs "debug-base debug" --smp 4 --mem 1G --threads "1 4" --churn 500 \
	--memlock0 500 --dmap-mib 64 || status=1
exit $status
