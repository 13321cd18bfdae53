#!/bin/sh
# kernel/test.sh: boot kernels from kernel/build.sh in QEMU and run
# kernel/ktest.c inside: the memfd_secret functional checks, the flush
# measurement with several faulting threads, the direct-map absence check,
# small-file churn, the RLIMIT_MEMLOCK=0 loop, the direct-map split
# counters and the TLB flushes of a process_madvise(MADV_DONTNEED) vector;
# then print the configurations side by side and judge the claims.
#
# Usage: kernel/test.sh [--configs "base patched"] [--boots N] [--smp N]
#                       [--threads "1 4"] [--mib M] [--churn N]
#                       [--memlock0 N] [--dmap-mib M] [--madv N] [--mem SIZE]
#                       [--extra DIR] [--keep-logs DIR] [--no-check]
#
#   --configs    kernels to boot: base, patched, noflush (the series with the
#                block flush deleted), debug, debug-base (its reference: the
#                stock kernel, same configuration), or patched:ARGS (the patched
#                kernel with extra boot arguments, e.g.
#                patched:secretmem.block_order=5)
#   --boots N    boots per configuration (default 1), interleaved
#   --smp N      virtual CPUs (default 4)
#   --threads L  faulting-thread counts, one measurement each (default "1 4")
#   --mib M      secret region per measurement (default 32)
#   --churn N    small-file churn iterations (default 2000; 0 = none)
#   --memlock0 N RLIMIT_MEMLOCK=0 iterations (default 500; 0 = none)
#   --dmap-mib M secret churn before the split counters are read (default
#                128, in 64 MiB files; 0 = none)
#   --madv N     process_madvise(MADV_DONTNEED) calls over 64 populated
#                ranges per layout (64 VMAs, one VMA), a thread spinning on
#                every other CPU (default 20; 0 = none)
#   --extra DIR  every executable in DIR (static) is run in the first boot of
#                each configuration; exit 0 = PASS, 77 = SKIP, else FAIL
#   --no-check   skip the functional checks
#
# Time claims (fault time, churn time) are judged only with --boots 5 or more
# (make bench-kernel); below that the times are printed, not judged.
# Output: "PASS: name" / "FAIL: name" lines, the table, exit 1 on any FAIL.
# Each boot is limited to $XPFO_KERNEL_BOOT_TIMEOUT seconds (default 600);
# XPFO_KERNEL_QEMU_ARGS adds QEMU options.
set -eu

die() { echo "kernel/test.sh: error: $*" >&2; exit 99; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
kdir=$(kernel_dir)
configs="base patched"
boots=1 smp=4 threads="1 4" mib=32 churn=2000 memlock0=500 dmapmib=128 madv=20
mem=512M extra= keep= check=1

while [ $# -gt 0 ]; do
	case $1 in
	--no-check) check=0; shift; continue ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	esac
	[ $# -ge 2 ] || die "$1 needs an argument (see --help)"
	case $1 in
	--configs) configs=$2 ;; --boots) boots=$2 ;; --smp) smp=$2 ;;
	--threads) threads=$2 ;; --mib) mib=$2 ;; --churn) churn=$2 ;;
	--memlock0) memlock0=$2 ;; --dmap-mib) dmapmib=$2 ;; --mem) mem=$2 ;;
	--madv) madv=$2 ;;
	--extra) extra=$2 ;; --keep-logs) keep=$2 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift 2
done
for v in "$boots" "$smp" "$mib" $threads; do
	case $v in ''|*[!0-9]*|0) die "bad number: '$v'" ;; esac
done
for v in "$churn" "$memlock0" "$dmapmib" "$madv"; do
	case $v in ''|*[!0-9]*) die "bad number: '$v'" ;; esac
done
[ -z "$extra" ] || [ -d "$extra" ] || die "--extra: no directory $extra"

kernel_of() { echo "${1%%:*}"; }
args_of() { case $1 in *:*) echo "${1#*:}" ;; esac; }
for c in $configs; do
	k=$(kernel_of "$c")
	[ -r "$kdir/bzImage-$k" ] ||
		die "$kdir/bzImage-$k missing: run kernel/build.sh --variant $k"
done
for tool in qemu-system-x86_64 cpio gzip gcc readelf timeout; do
	command -v $tool >/dev/null 2>&1 || die "$tool not found"
done
is_static() {
	readelf -h "$1" >/dev/null 2>&1 && ! readelf -l "$1" 2>/dev/null | grep -q INTERP
}
busybox=${XPFO_BUSYBOX:-/bin/busybox}
is_static "$busybox" ||
	die "$busybox is not a static busybox: apt-get install busybox-static"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-ktest.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

gcc -O2 -Wall -Wextra -static -pthread -o "$work/ktest" "$here/ktest.c" ||
	die "cannot build kernel/ktest.c statically (libc6-dev has libc.a)"

root=$work/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/extra"
cp "$busybox" "$root/bin/busybox"
cp "$work/ktest" "$root/ktest"
if [ -n "$extra" ]; then
	for f in "$extra"/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		is_static "$f" || die "--extra: $f is not statically linked"
		cp "$f" "$root/extra/"
	done
fi
cat >"$root/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
arg() { sed -n "s/.*xpfo\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
T="XPFO-KTEST:"
echo "$T BOOT $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
dmesg | grep -i secretmem | sed "s/^/$T DMESG /"
# First, on the fresh boot: the direct map's splits after secret churn.
[ "$(arg dmap)" -gt 0 ] && /ktest dmap "$(arg dmap)" 64
if [ "$(arg check)" = 1 ]; then
	/ktest check
	echo "$T EXIT check $?"
fi
for t in $(arg threads | tr , ' '); do
	/ktest measure "$(arg mib)" "$t" || echo "$T EXIT measure $?"
done
[ "$(arg churn)" -gt 0 ] && /ktest churn "$(arg churn)"
[ "$(arg memlock0)" -gt 0 ] && /ktest memlock0 "$(arg memlock0)"
[ "$(arg madv)" -gt 0 ] && /ktest madv "$(arg madv)"
if [ "$(arg extra)" = 1 ]; then
	for f in /extra/*; do
		[ -x "$f" ] || continue
		"$f" >/tmp/out 2>&1
		rc=$?
		sed "s/^/$T OUT ${f##*/}: /" /tmp/out
		echo "$T EXTRA ${f##*/} $rc"
	done
fi
dmesg | grep -E 'BUG:|WARNING:|Oops|Call Trace|Bad page|INFO: possible' |
	sed "s/^/$T SPLAT /"
echo "$T DONE"
reboot -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# boot NAME KERNEL APPEND: one QEMU boot, console into $work/NAME.log.txt.
boot() {
	log=$work/$1.log
	# shellcheck disable=SC2086 # XPFO_KERNEL_QEMU_ARGS is a list
	timeout "${XPFO_KERNEL_BOOT_TIMEOUT:-600}" qemu-system-x86_64 -cpu max \
		-m "$mem" ${XPFO_KERNEL_QEMU_ARGS:-} \
		-smp "$smp,sockets=$smp,cores=1,threads=1" \
		-kernel "$kdir/bzImage-$2" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 secretmem.enable=1 $3" \
		-display none -monitor none -serial "file:$log" -no-reboot \
		</dev/null >"$log.qemu" 2>&1 ||
		echo "XPFO-KTEST: QEMU-STATUS $? $(cat "$log.qemu")" >>"$log"
	tr -d '\r' <"$log" >"$log.txt"
}
name_of() { echo "$1" | tr ':=,' '_.-'; }

status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+ ($2)}"; status=1; }
# NAME BASE VALUE MIN WHAT: pass when BASE / VALUE >= MIN; the ratio in $r
ratio_at_least() {
	r=$(awk -v b="$2" -v p="$3" 'BEGIN { printf "%.1f", (p > 0 ? b / p : 1e9) }')
	if awk -v r="$r" -v m="$4" 'BEGIN { exit !(r >= m) }'; then
		pass "$1"
	else
		fail "$1" "$5 ${r}x < ${4}x"
	fi
}

start=$(date +%s)
tlist=$(echo $threads | tr ' ' ,)
i=1
while [ $i -le "$boots" ]; do
	first=0
	[ $i = 1 ] && first=1
	for c in $configs; do
		boot "$(name_of "$c")-$i" "$(kernel_of "$c")" \
			"$(args_of "$c") xpfo.check=$((first * check)) xpfo.extra=$first xpfo.mib=$mib xpfo.threads=$tlist xpfo.churn=$churn xpfo.memlock0=$memlock0 xpfo.dmap=$dmapmib xpfo.madv=$madv"
	done
	i=$((i + 1))
done
elapsed=$(($(date +%s) - start))
[ -z "$keep" ] || { mkdir -p "$keep" && cp "$work"/*.log.txt "$keep"/; }

# Per configuration: boot, functional checks, extras, splats.
for c in $configs; do
	n=$(name_of "$c")
	for log in "$work/$n"-[0-9]*.log.txt; do
		b=${log##*-}; b=${b%.log.txt}
		if ! grep -q '^XPFO-KTEST: DONE' "$log"; then
			fail "kernel/$n/boot$b" "no DONE marker; console tail:"
			tail -20 "$log" | sed 's/^/    /'
			continue
		fi
		if grep -q '^XPFO-KTEST: SPLAT ' "$log"; then
			fail "kernel/$n/no-splat$b" "the kernel log has:"
			grep '^XPFO-KTEST: SPLAT ' "$log" | head -20 | sed 's/^/    /'
		fi
	done
	log=$work/$n-1.log.txt
	grep -q '^XPFO-KTEST: DONE' "$log" || continue
	pass "kernel/$n/boot"
	grep -q '^XPFO-KTEST: SPLAT ' "$log" || pass "kernel/$n/no-splat"
	case $(kernel_of "$c") in
	base|*-base) ;;	# the references: stock kernels
	*)	if grep -q 'secretmem: removing pages from the direct map in blocks' "$log"; then
			pass "kernel/$n/patch-active"
		else
			fail "kernel/$n/patch-active" "the kernel did not announce its block size"
		fi ;;
	esac
	[ $check = 1 ] || continue
	cnt=$(grep -c '^XPFO-KTEST: \(PASS\|FAIL\) ' "$log" || true)
	[ "$cnt" -ge 14 ] || fail "kernel/$n/check-count" "only $cnt functional checks reported"
	grep '^XPFO-KTEST: \(PASS\|FAIL\) ' "$log" |
	while read -r _ verdict name rest; do
		echo "$verdict: kernel/$n/${name%:}${rest:+ ($rest)}"
	done
	grep -q '^XPFO-KTEST: FAIL ' "$log" && status=1
	grep -q '^XPFO-KTEST: EXIT check 0' "$log" ||
		fail "kernel/$n/check-exit" "ktest check did not exit 0"
	grep '^XPFO-KTEST: EXTRA ' "$log" | while read -r _ _ name rc; do
		case $rc in
		0) echo "PASS: kernel/$n/extra/$name" ;;
		77) echo "SKIP: kernel/$n/extra/$name" ;;
		*) echo "FAIL: kernel/$n/extra/$name (exit $rc)"
		   grep "^XPFO-KTEST: OUT $name: " "$log" | tail -20 |
			sed 's/^XPFO-KTEST: OUT /    /' ;;
		esac
	done
	grep '^XPFO-KTEST: EXTRA ' "$log" | grep -qv ' \(0\|77\)$' && status=1
	if [ -n "$extra" ]; then
		want=$(find "$root/extra" -type f | wc -l)
		got=$(grep -c '^XPFO-KTEST: EXTRA ' "$log" || true)
		[ "$want" = "$got" ] ||
			fail "kernel/$n/extra-count" "$got of $want extra tests reported"
	fi
done

# Rows: "config kind key values..." from every boot.
rows=$work/rows
: >"$rows"
for c in $configs; do
	n=$(name_of "$c")
	for log in "$work/$n"-[0-9]*.log.txt; do
		sed -n 's/^XPFO-KTEST: MEASURE pages=\([0-9]*\) threads=\([0-9]*\) cpus=\([0-9]*\) cal=\([0-9-]*\) ns_per_fault=\([0-9.]*\) dmap_mapped=\([0-9-]*\) dmap_missing=\([0-9-]*\) order=\([0-9-]*\).*/measure t\2 \1 \3 \4 \5 \6 \7 \8/p;
			s/^XPFO-KTEST: CHURN n=\([0-9]*\) ns_per_file=\([0-9.]*\) cal=\([0-9-]*\).*/churn - \1 \2 \3/p;
			s/^XPFO-KTEST: MEMLOCK0 n=\([0-9]*\) cal=\([0-9-]*\) all_sigbus=\([0-9]*\).*/memlock0 - \1 \2 \3/p;
			s/^XPFO-KTEST: DMAP \([a-z]*\) 4k=\([0-9-]*\) 2M=\([0-9-]*\) 1G=\([0-9-]*\) l2_splits=\([0-9-]*\) l3_splits=\([0-9-]*\).*/dmap \1 \2 \3 \4 \5 \6/p' \
			"$log" | sed "s/^/$n /"
		# process_madvise: per call (CAL, TLB, us), then ranges, cpus, bad
		awk '/^XPFO-KTEST: MADV / {
			for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
			r = v["rounds"]
			printf "madv %s-%s %.2f %.2f %.1f %d %d %d\n", v["layout"], v["mode"],
				v["cal"] / r, v["tlb"] / r, v["ns_per_call"] / 1000,
				v["ranges"], v["cpus"], v["bad"]
		}' "$log" | sed "s/^/$n /"
		sed -n 's/^XPFO-KTEST: MADVVEC accepted=\([0-9]*\) errno=\([0-9]*\).*/madvvec - \1 \2/p' \
			"$log" | sed "s/^/$n /"
	done >>"$rows"
done

# kstat CONFIG KIND KEY COLUMN: "median min max n" of a column (1-based,
# counting from the first value after KEY).
kstat() {
	awk -v c="$1" -v k="$2" -v key="$3" -v col="$4" '
		$1 == c && $2 == k && $3 == key { v[n++] = $(3 + col) }
		END {
			if (!n) { print "- - - 0"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
				if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
			m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
			print m, v[0], v[n - 1], n
		}' "$rows"
}
med() { set -- $(kstat "$@"); echo "$1"; }
cell() { set -- $(kstat "$@"); [ "$1" = - ] && echo - || echo "$1 [$2-$3]"; }

names=
for c in $configs; do names="$names $(name_of "$c")"; done
echo
echo "QEMU TCG, -smp $smp, $mem; median [min-max] over $boots boot(s) per configuration; $elapsed s of boots"
printf '%-28s' ""; for n in $names; do printf ' %-26s' "$n"; done; echo
row() {	# LABEL KIND KEY COLUMN
	printf '%-28s' "$1"
	for n in $names; do printf ' %-26s' "$(cell "$n" "$2" "$3" "$4")"; done
	echo
}
for t in $threads; do
	row "CAL, $mib MiB, $t thread(s)" measure "t$t" 3
	row "ns/fault, $t thread(s)" measure "t$t" 4
	row "pages in direct map, t=$t" measure "t$t" 5
done
if [ "$churn" -gt 0 ]; then
	row "churn: ns per file" churn - 2
	row "churn: CAL per $churn files" churn - 3
fi
if [ "$memlock0" -gt 0 ]; then
	row "memlock0: CAL per $memlock0" memlock0 - 2
fi
if [ "$dmapmib" -gt 0 ]; then
	row "DirectMap4k kB, before" dmap before 1
	row "DirectMap4k kB, after ${dmapmib}M" dmap after 1
	row "DirectMap2M kB, after" dmap after 2
	row "level2 splits, before" dmap before 4
	row "level2 splits, after" dmap after 4
	row "level3 splits, after" dmap after 5
fi
if [ "$madv" -gt 0 ]; then
	for l in vmas onevma; do
		for md in vector loop; do
			row "madv $l $md: CAL/call" madv "$l-$md" 1
			row "madv $l $md: TLB/call" madv "$l-$md" 2
			row "madv $l $md: us/call" madv "$l-$md" 3
		done
	done
fi
echo

# The claims.  Every config: pages of a touched region are out of the direct
# map.  Patched kernels: a lower bound (at least one flush per block) and,
# against base, an upper bound and flat flushes per page in the thread count.
awk '$2 == "measure" && ($8 != 0 || $9 != 0) { print $1, $3, $8, $9 }' "$rows" >"$work/dm-bad"
for n in $names; do
	if grep -q "^$n " "$work/dm-bad"; then
		fail "kernel/$n/measure-dmap-absent" "$(grep "^$n " "$work/dm-bad" | head -3 | tr '\n' ';')"
	elif grep -q "^$n measure " "$rows"; then
		pass "kernel/$n/measure-dmap-absent"
	fi
done
want=$(($(echo $configs | wc -w) * boots * $(echo $threads | wc -w)))
got=$(grep -c ' measure ' "$rows" || true)
if [ "$got" = "$want" ]; then pass kernel/measure-complete
else fail kernel/measure-complete "$got of $want measurements reported"; fi

pages=$((mib * 256))
has_base=0
case " $names " in *" base "*) has_base=1 ;; esac
if [ $has_base = 1 ] && [ "$smp" -ge 2 ]; then
	b1=$(med base measure "t$(echo $threads | cut -d' ' -f1)" 3)
	if [ "$b1" != - ] && awk -v b="$b1" -v n=$pages 'BEGIN { exit !(b >= n) }'; then
		pass kernel/base/one-ipi-per-page
	else
		fail kernel/base/one-ipi-per-page "base CAL $b1 < $pages pages: nothing was measured"
	fi
fi
for n in $names; do
	# base and debug-base are the references, not judged themselves
	case $n in base|*-base) continue ;; esac
	t1=$(echo $threads | cut -d' ' -f1)
	c1=$(med "$n" measure "t$t1" 3)
	for t in $threads; do
		ct=$(med "$n" measure "t$t" 3)
		order=$(med "$n" measure "t$t" 7)
		[ "$ct" != - ] || continue
		# Lower bound: one flush per block at least, each interrupting
		# every other CPU (the block flushes are serialised).
		lb=$(awk -v p=$pages -v o="$order" -v s="$smp" \
			'BEGIN { printf "%d", p / 2 ^ o * (s - 1) }')
		if [ "$ct" -ge "$lb" ]; then
			pass "kernel/$n/lower-bound-t$t"
		else
			fail "kernel/$n/lower-bound-t$t" "CAL $ct < $lb = pages / block x (cpus - 1): a block flush is missing"
		fi
		# Upper bound, against base with one thread: base flushes once
		# per page whatever the thread count (its interrupt count falls
		# with more threads only because concurrent IPIs to a CPU
		# coalesce), so its one-thread count is its flush cost.
		if [ $has_base = 1 ] && [ "$order" -ge 9 ]; then
			bt=$(med base measure "t$t1" 3)
			ratio_at_least "kernel/$n/cal-ratio-t$t" "$bt" "$ct" 256 "base (1 thread)/patched"
			echo "CAL ratio base (1 thread)/$n ($t thread(s)): ${r}x"
		fi
		[ "$t" = "$t1" ] && continue
		# Flushes per page must not grow with the faulting threads.
		# Slack: 25 %, plus the wake-ups of sleeping threads (a remote
		# wake-up is a function-call interrupt too), 4 per thread.
		if awk -v a="$c1" -v b="$ct" -v t="$t" \
			'BEGIN { exit !(b <= 1.25 * a + 4 * t) }'; then
			pass "kernel/$n/flat-in-threads-t$t"
		else
			fail "kernel/$n/flat-in-threads-t$t" "CAL $ct with $t threads vs $c1 with $t1"
		fi
	done
	# RLIMIT_MEMLOCK=0: every touch refused before any page is taken.
	# The store is emptied before each touch, so a kernel that took a
	# page before charging would flush once per touch (cpus - 1
	# interrupts each); allow one interrupt per four touches of noise.
	# A debug kernel makes interrupts of its own in that loop (the same
	# count on debug-base, the stock kernel with the debug configuration):
	# with its reference booted, only the excess over it is judged.
	if [ "$memlock0" -gt 0 ]; then
		m=$(med "$n" memlock0 - 2)
		sb=$(med "$n" memlock0 - 3)
		r=0
		case " $names " in *" $n-base "*) r=$(med "$n-base" memlock0 - 2) ;; esac
		if [ "$sb" = 1 ] && [ "$m" != - ] && [ "$r" != - ] &&
		   [ $(((m - r) * 4)) -lt "$memlock0" ]; then
			pass "kernel/$n/memlock0-no-flush"
		else
			fail "kernel/$n/memlock0-no-flush" "CAL $m (reference $r) over $memlock0 refused touches (all SIGBUS: $sb)"
		fi
	fi
	if [ $has_base = 1 ] && [ "$dmapmib" -gt 0 ]; then
		pb=$(med "$n" dmap before 4); pa=$(med "$n" dmap after 4)
		bb=$(med base dmap before 4); ba=$(med base dmap after 4)
		p4=$(med "$n" dmap after 1); b4=$(med base dmap after 1)
		if [ "$pa" != - ] && [ "$ba" != - ] &&
		   [ $((pa - pb)) -le $((ba - bb)) ] && [ "$p4" -le "$b4" ]; then
			pass "kernel/$n/splits-at-most-base"
		else
			fail "kernel/$n/splits-at-most-base" "level2 splits +$((pa - pb)) vs base +$((ba - bb)); DirectMap4k $p4 vs $b4 kB"
		fi
	fi
	# Times: judged only over 5 boots or more.
	if [ $has_base = 1 ] && [ "$boots" -ge 5 ]; then
		for t in $threads; do
			bt=$(med base measure "t$t" 4); pt=$(med "$n" measure "t$t" 4)
			r=$(awk -v b="$bt" -v p="$pt" 'BEGIN { printf "%.2f", p ? b / p : 0 }')
			echo "fault time ratio base/$n, $t thread(s): ${r}x"
			if awk -v r="$r" 'BEGIN { exit !(r > 1) }'; then pass "kernel/$n/fault-time-t$t"
			else fail "kernel/$n/fault-time-t$t" "${r}x"; fi
		done
		if [ "$churn" -gt 0 ]; then
			bt=$(med base churn - 2); pt=$(med "$n" churn - 2)
			r=$(awk -v b="$bt" -v p="$pt" 'BEGIN { printf "%.2f", p ? b / p : 0 }')
			echo "churn time ratio base/$n: ${r}x"
			if awk -v r="$r" 'BEGIN { exit !(r >= 1) }'; then pass "kernel/$n/churn-no-slower"
			else fail "kernel/$n/churn-no-slower" "${r}x"; fi
		fi
	fi
done

# process_madvise(MADV_DONTNEED) over 64 populated ranges, a thread spinning
# on every other CPU.  The stock kernel refuses the vector (6.12 takes only
# MADV_COLD, MADV_PAGEOUT, MADV_WILLNEED and MADV_COLLAPSE there), so a
# program releases the ranges with one madvise() each: one TLB flush each,
# ranges x (cpus - 1) function-call interrupts.  The series takes the vector
# and flushes once: at most 2 x (cpus - 1) a call (one round, and one of
# slack), and at least 16x fewer than base's.  The one-round bound is also
# applied to base's release, where it must fail: the claim can fail.  Debug
# kernels are not judged (DEBUG_PAGEALLOC flushes the direct map for every
# page freed).
madv_cal() {	# CONFIG LAYOUT: CAL a call of the vector, else of the loop
	v=$(med "$1" madv "$2-vector" 1)
	[ "$v" != - ] || v=$(med "$1" madv "$2-loop" 1)
	echo "$v"
}
if [ "$madv" -gt 0 ] && [ "$smp" -ge 2 ]; then
	oneround=$((2 * (smp - 1)))
	perrange=$((64 * (smp - 1)))
	for l in vmas onevma; do
		bl=-
		if [ $has_base = 1 ]; then
			bl=$(med base madv "$l-loop" 1)
			if [ "$bl" != - ] && awk -v b="$bl" -v w=$perrange 'BEGIN { exit !(b >= 0.9 * w) }'; then
				pass "kernel/base/madv-per-range-$l"
			else
				fail "kernel/base/madv-per-range-$l" "base CAL $bl a release < 0.9 x 64 ranges x (cpus - 1) = $perrange: nothing was measured"
			fi
			bv=$(madv_cal base $l)
			if [ "$bv" != - ] && awk -v b="$bv" -v w=$oneround 'BEGIN { exit !(b > w) }'; then
				pass "kernel/base/madv-one-round-fails-on-base-$l"
			else
				fail "kernel/base/madv-one-round-fails-on-base-$l" "base CAL $bv a release <= $oneround: the claim cannot tell the kernels apart"
			fi
		fi
		for n in $names; do
			case $n in base|*-base|debug*) continue ;; esac
			pv=$(med "$n" madv "$l-vector" 1)
			if [ "$pv" = - ]; then
				fail "kernel/$n/madv-one-round-$l" "no vector measured: the kernel refused process_madvise(MADV_DONTNEED)"
				continue
			fi
			bad=$(med "$n" madv "$l-vector" 6)
			if [ "$bad" = 0 ] && awk -v p="$pv" -v w=$oneround 'BEGIN { exit !(p <= w) }'; then
				pass "kernel/$n/madv-one-round-$l"
			else
				fail "kernel/$n/madv-one-round-$l" "CAL $pv a call > 2 x (cpus - 1) = $oneround, or $bad calls short"
			fi
			[ "$bl" != - ] || continue
			ratio_at_least "kernel/$n/madv-ratio-$l" "$bl" "$pv" 16 \
				"base (64 madvise calls) / $n (one process_madvise)"
			echo "madv CAL a release of 64 ranges, $l: base (64 madvise calls) $bl, $n (one process_madvise) $pv: ${r}x"
		done
	done
fi
if [ $check = 1 ]; then
	for n in $names; do
		a=$(med "$n" madvvec - 1)
		case $n in
		base|*-base) want=0 ;;	# 6.12 refuses the vector
		*) want=1 ;;
		esac
		if [ "$a" = "$want" ]; then
			pass "kernel/$n/madv-vector-accepted-$want"
		else
			fail "kernel/$n/madv-vector-accepted-$want" "process_madvise(MADV_DONTNEED) on its own pidfd: accepted=$a"
		fi
	done
fi
exit $status
