#!/bin/sh
# kernel/test.sh: boot the base and the patched kernel (from kernel/build.sh)
# in QEMU and run kernel/ktest.c inside: the memfd_secret functional checks
# and the 64 MiB direct-map flush measurement, then print base vs patched.
#
# Usage: kernel/test.sh [--boots N] [--mib M] [--rounds R] [--extra DIR]
#                       [--also-batch B]... [--keep-logs DIR]
#
#   --boots N    boots per configuration for the measurement (default 3);
#                the configurations are base, patched (default batch) and
#                patched with secretmem.batch=1
#   --mib M      size of the secret region touched per round (default 64)
#   --rounds R   touches per boot (default 2: round 1 is the first touch
#                after boot, which also splits the direct map's large pages;
#                rounds >= 2 find it split)
#   --extra DIR  every executable file in DIR (statically linked) is copied
#                into the initramfs and run in the first boot of each
#                configuration; exit 0 = PASS, 77 = SKIP, else FAIL
#   --also-batch B   also measure the patched kernel with secretmem.batch=B
#                (a column of the table; no pass/fail claim)
#   --keep-logs DIR  keep the guests' console logs in DIR
#
# XPFO_KERNEL_QEMU_ARGS adds options to every QEMU command line.
#
# Output: one automake-style line per check ("PASS: name", "FAIL: name",
# "SKIP: name"), the side-by-side table, and exit status 1 if any check
# failed.  The kernels come from $XPFO_KERNEL_CACHE (default
# /var/cache/xpfo-kernel); run kernel/build.sh first.  Each boot is limited
# to $XPFO_KERNEL_BOOT_TIMEOUT seconds (default 300).
set -eu

die() { echo "kernel/test.sh: error: $*" >&2; exit 99; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cache=$(kernel_cache)
boots=3
mib=64
rounds=2
extra=
keep=
also=

while [ $# -gt 0 ]; do
	case $1 in
	--boots|--mib|--rounds|--extra|--keep-logs|--also-batch)
		[ $# -ge 2 ] || die "$1 needs an argument"
		case $1 in
		--boots) boots=$2 ;; --mib) mib=$2 ;; --rounds) rounds=$2 ;;
		--extra) extra=$2 ;; --keep-logs) keep=$2 ;;
		--also-batch)
			case $2 in ''|*[!0-9]*|0) die "bad batch: '$2'" ;; esac
			also="$also batch$2" ;;
		esac
		shift 2 ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done
for v in "$boots" "$mib" "$rounds"; do
	case $v in ''|*[!0-9]*|0) die "bad number: '$v'" ;; esac
done
[ -z "$extra" ] || [ -d "$extra" ] || die "--extra: no directory $extra"

for k in base patched; do
	[ -r "$cache/bzImage-$k" ] ||
		die "$cache/bzImage-$k missing: run kernel/build.sh first"
done
for tool in qemu-system-x86_64 cpio gzip gcc readelf timeout; do
	command -v $tool >/dev/null 2>&1 || die "$tool not found"
done
# is_static FILE: an ELF file without a program interpreter.
is_static() {
	readelf -h "$1" >/dev/null 2>&1 && ! readelf -l "$1" 2>/dev/null | grep -q INTERP
}
busybox=${XPFO_BUSYBOX:-/bin/busybox}
is_static "$busybox" ||
	die "$busybox is not a static busybox: apt-get install busybox-static"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-ktest.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

# The guest program.
gcc -O2 -Wall -Wextra -static -pthread -o "$work/ktest" "$here/ktest.c" ||
	die "cannot build kernel/ktest.c statically (libc6-dev has libc.a)"

# The initramfs: busybox, ktest, the extra tests, and /init.
root=$work/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/extra"
cp "$busybox" "$root/bin/busybox"
cp "$work/ktest" "$root/ktest"
if [ -n "$extra" ]; then
	for f in "$extra"/*; do
		[ -f "$f" ] && [ -x "$f" ] || continue
		if ! is_static "$f"; then
			die "--extra: $f is not statically linked"
		fi
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
arg() { sed -n "s/.*xpfo\.$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
T="XPFO-KTEST:"
echo "$T BOOT $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
dmesg | grep -i secretmem | sed "s/^/$T DMESG /"
if [ "$(arg check)" = 1 ]; then
	/ktest check
	echo "$T EXIT check $?"
fi
/ktest measure "$(arg mib)" "$(arg rounds)"
echo "$T EXIT measure $?"
if [ "$(arg extra)" = 1 ]; then
	for f in /extra/*; do
		[ -x "$f" ] || continue
		"$f" >/tmp/out 2>&1
		rc=$?
		sed "s/^/$T OUT ${f##*/}: /" /tmp/out
		echo "$T EXTRA ${f##*/} $rc"
	done
fi
echo "$T DONE"
reboot -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz"

# boot NAME KERNEL APPEND: one QEMU boot, console into $work/NAME.log.
boot() {
	log=$work/$1.log
	# shellcheck disable=SC2086 # XPFO_KERNEL_QEMU_ARGS is a list
	timeout "${XPFO_KERNEL_BOOT_TIMEOUT:-300}" qemu-system-x86_64 -cpu max -m 512M \
		${XPFO_KERNEL_QEMU_ARGS:-} \
		-smp 2,sockets=2,cores=1,threads=1 \
		-kernel "$cache/bzImage-$2" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 secretmem.enable=1 $3" \
		-display none -monitor none -serial "file:$log" -no-reboot \
		</dev/null >"$log.qemu" 2>&1 ||
		echo "XPFO-KTEST: QEMU-STATUS $? $(cat "$log.qemu")" >>"$log"
	tr -d '\r' <"$log" >"$log.txt"
}

configs="base patched batch1$also"
kernel_of() { case $1 in base) echo base ;; *) echo patched ;; esac; }
cmdline_of() { case $1 in batch*) echo "secretmem.batch=${1#batch}" ;; esac; }

status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+ ($2)}"; status=1; }

# Boots are interleaved (base, patched, batch1, base, ...) so that a change
# in the host's load affects every configuration alike.
start=$(date +%s)
i=1
while [ $i -le "$boots" ]; do
	first=0
	[ $i = 1 ] && first=1
	for cfg in $configs; do
		boot "$cfg-$i" "$(kernel_of $cfg)" \
			"$(cmdline_of $cfg) xpfo.check=$first xpfo.extra=$first xpfo.mib=$mib xpfo.rounds=$rounds"
	done
	i=$((i + 1))
done
elapsed=$(($(date +%s) - start))

[ -z "$keep" ] || { mkdir -p "$keep" && cp "$work"/*.log.txt "$keep"/; }

# Functional checks: from the first boot of each configuration.
for cfg in $configs; do
	log=$work/$cfg-1.log.txt
	if ! grep -q '^XPFO-KTEST: DONE' "$log"; then
		fail "kernel/$cfg/boot" "no DONE marker; console tail:"
		tail -20 "$log" | sed 's/^/    /'
		continue
	fi
	pass "kernel/$cfg/boot"
	if [ "$cfg" != base ] &&
	   ! grep -q 'secretmem: removing pages from the direct map' "$log"; then
		fail "kernel/$cfg/patch-active" "the patched kernel did not announce its batch size"
	elif [ "$cfg" != base ]; then
		pass "kernel/$cfg/patch-active"
	fi
	n=$(grep -c '^XPFO-KTEST: \(PASS\|FAIL\) ' "$log" || true)
	[ "$n" -ge 10 ] || fail "kernel/$cfg/check-count" "only $n functional checks reported"
	grep '^XPFO-KTEST: \(PASS\|FAIL\) ' "$log" | grep -v ' measure' |
	while read -r _ verdict name rest; do
		name=${name%:}
		echo "$verdict: kernel/$cfg/$name${rest:+ ($rest)}"
	done
	grep -q '^XPFO-KTEST: FAIL ' "$log" && status=1
	grep -q '^XPFO-KTEST: EXIT check 0' "$log" ||
		fail "kernel/$cfg/check-exit" "ktest check did not exit 0"
	grep '^XPFO-KTEST: EXTRA ' "$log" | while read -r _ _ name rc; do
		case $rc in
		0) echo "PASS: kernel/$cfg/extra/$name" ;;
		77) echo "SKIP: kernel/$cfg/extra/$name" ;;
		*) echo "FAIL: kernel/$cfg/extra/$name (exit $rc)"
		   grep "^XPFO-KTEST: OUT $name: " "$log" | tail -20 |
			sed 's/^XPFO-KTEST: OUT /    /' ;;
		esac
	done
	grep '^XPFO-KTEST: EXTRA ' "$log" | grep -qv ' \(0\|77\)$' && status=1
	if [ -n "$extra" ]; then
		want=$(find "$root/extra" -type f | wc -l)
		got=$(grep -c '^XPFO-KTEST: EXTRA ' "$log" || true)
		[ "$want" = "$got" ] ||
			fail "kernel/$cfg/extra-count" "$got of $want extra tests reported"
	fi
done

# Measurements: one row per boot and round.
: >"$work/rows"
for cfg in $configs; do
	for log in "$work/$cfg"-*.log.txt; do
		sed -n 's/^XPFO-KTEST: MEASURE round=\([0-9]*\) pages=\([0-9]*\) cal=\([0-9-]*\) tlb=\([0-9-]*\) ns_per_fault=\([0-9.]*\).*/\1 \3 \4 \5/p' \
			"$log" | while read -r r cal tlb ns; do
			echo "$cfg $r $cal $tlb $ns"
		done >>"$work/rows"
	done
done
want=$(( $(echo $configs | wc -w) * boots * rounds ))
got=$(wc -l <"$work/rows")
if [ "$got" != "$want" ]; then
	fail "kernel/measure-complete" "$got of $want measurements reported"
else
	pass "kernel/measure-complete"
fi

# stats CFG PHASE COLUMN: "median min max n" of a column (3 cal, 4 tlb,
# 5 ns) over the rows of a configuration; PHASE "first" is round 1, "later"
# rounds >= 2.
stats() {
	awk -v c="$1" -v ph="$2" -v col="$3" '
		$1 == c && ((ph == "first") == ($2 == 1)) { v[n++] = $col }
		END {
			if (!n) { print "- - - 0"; exit }
			for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
				if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
			m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
			print m, v[0], v[n - 1], n
		}' "$work/rows"
}

echo
echo "memfd_secret: ${mib} MiB touched page by page, busy thread on the other CPU"
echo "QEMU TCG, -smp 2; median [min-max] over $boots boot(s); $elapsed s for all boots"
phases=first
[ "$rounds" -ge 2 ] && phases="first later"
for ph in $phases; do
	case $ph in
	first) echo "-- round 1 (first touch after boot, includes direct-map splits)" ;;
	later) echo "-- rounds 2..$rounds (direct map already split)" ;;
	esac
	printf '%-10s' ""
	for cfg in $configs; do
		case $cfg in
		patched) printf ' %-24s' "patched (default batch)" ;;
		batch*) printf ' %-24s' "patched batch=${cfg#batch}" ;;
		*) printf ' %-24s' "$cfg" ;;
		esac
	done
	echo
	for col in 3:CAL 4:TLB 5:ns/fault; do
		printf '%-10s' "${col#*:}"
		for cfg in $configs; do
			set -- $(stats $cfg $ph ${col%%:*})
			printf ' %-24s' "$1 [$2-$3]"
		done
		echo
	done
done
echo

# The claims of the issue, on the rounds after the first when there are any.
ph=first
[ "$rounds" -ge 2 ] && ph=later
set -- $(stats base $ph 3); base_cal=$1
set -- $(stats patched $ph 3); pat_cal=$1
set -- $(stats batch1 $ph 3); b1_cal=$1
set -- $(stats base $ph 5); base_ns=$1
set -- $(stats patched $ph 5); pat_ns=$1
if [ "$base_cal" = - ] || [ "$pat_cal" = - ] || [ "$b1_cal" = - ]; then
	fail "kernel/cal-ratio" "missing measurements"
	fail "kernel/batch1-equals-base" "missing measurements"
	fail "kernel/fault-time" "missing measurements"
else
	pages=$((mib * 256))
	ratio=$(awk -v b="$base_cal" -v p="$pat_cal" 'BEGIN { printf "%.1f", p ? b / p : 1e9 }')
	echo "CAL median ratio base/patched: ${ratio}x"
	# The base kernel flushes once per page: it must show at least one
	# interrupt per page, or the measurement did not measure anything.
	if awk -v b="$base_cal" -v n="$pages" 'BEGIN { exit !(b >= n) }'; then
		pass "kernel/base-one-ipi-per-page"
	else
		fail "kernel/base-one-ipi-per-page" "base CAL $base_cal < $pages pages"
	fi
	if awk -v r="$ratio" 'BEGIN { exit !(r >= 30) }'; then
		pass "kernel/cal-ratio"
	else
		fail "kernel/cal-ratio" "${ratio}x < 30x"
	fi
	# batch=1 must flush like the base kernel: medians within 2 %.
	if awk -v b="$base_cal" -v o="$b1_cal" \
		'BEGIN { d = b - o; if (d < 0) d = -d; exit !(d <= 0.02 * b) }'; then
		pass "kernel/batch1-equals-base"
	else
		fail "kernel/batch1-equals-base" "base $base_cal vs batch=1 $b1_cal"
	fi
	tratio=$(awk -v b="$base_ns" -v p="$pat_ns" 'BEGIN { printf "%.2f", p ? b / p : 0 }')
	echo "fault time median ratio base/patched: ${tratio}x"
	# Emulated time is noisy (a 10x spread between boots on a loaded
	# host): only claim anything from a median over 5 boots or more.
	if [ "$boots" -lt 5 ]; then
		echo "SKIP: kernel/fault-time (needs --boots 5 or more)"
	elif awk -v r="$tratio" 'BEGIN { exit !(r > 1) }'; then
		pass "kernel/fault-time"
	else
		fail "kernel/fault-time" "patched faults not faster (${tratio}x)"
	fi
fi
exit $status
