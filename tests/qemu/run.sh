#!/bin/sh
# tests/qemu/run.sh: boot a Linux kernel once in QEMU (TCG, -cpu max, whose
# emulated CPU has protection keys) and run test programs inside it.
#
# Usage: tests/qemu/run.sh [OPTION]... TEST...
#
#   TEST   a statically linked executable, or a script starting with
#          #!/bin/sh (busybox sh in the guest).  The tests run in the order
#          given, one after the other, each in its own process with stdin
#          /dev/null and cwd /tmp; exit 0 = PASS, 77 = SKIP, else FAIL.
#
#   --kernel PATH      boot this bzImage instead of Debian's linux-image-amd64
#                      (downloaded once into the cache, see below)
#   --append ARGS      add ARGS to the kernel command line
#   --env VAR=VALUE    set VAR in the guest for every test (repeatable)
#   --variant VAR=VALUE  run every test once per variant, with VAR=VALUE
#                      set; the test is named NAME[VALUE] (repeatable)
#   --test-variant NAME:VAR=VALUE  the variants of test NAME (its file
#                      name), instead of the --variant list (repeatable);
#                      NAME:- runs NAME once, with no variant
#   --test-args NAME:ARGS  run test NAME with these arguments (split at
#                      spaces), e.g. a smaller scale than on the host
#   --file PATH        copy PATH to /tests/files/ in the guest, not run
#                      (helpers for script tests; repeatable)
#   --prefix P         prefix of the test names (default "qemu/")
#   --timeout SEC      limit for the whole boot (default 300, or
#                      $XPFO_QEMU_TIMEOUT)
#   --test-timeout SEC limit for each test inside the guest (default 120)
#   --keep-log PATH    keep the guest's console log at PATH
#   --smp N            guest CPUs (default 2)
#   --cpu MODEL        QEMU's -cpu (default max; a model without PKU, e.g.
#                      qemu64, shows that the rig then fails)
#   --fetch            only make sure the kernel is cached, then exit
#
# Output: "PASS: qemu/NAME", "FAIL: qemu/NAME (...)", "SKIP: qemu/NAME"
# lines (automake style), each test's own output as "# NAME: ..." lines,
# each test's time in the guest ("# NAME: took S s"), the boot's wall time, and the exit status: 0 when nothing failed (77 when
# every test skipped), 1 when a test failed, 99 when the rig itself failed
# (no boot, timeout, a test that never reported, or a guest CPU without
# pku/ospke in /proc/cpuinfo: the rig never passes vacuously), 77 when a
# tool is missing (qemu-system-x86_64, busybox-static, cpio, ...).
#
# The kernel: with no --kernel, Debian's current linux-image-amd64 (the
# package it depends on, e.g. linux-image-6.1.0-57-amd64) is fetched with
# `apt-get download`, unpacked with `dpkg -x` (never installed), and only
# its vmlinuz is kept in $XPFO_QEMU_CACHE (default /var/cache/xpfo-qemu,
# or ~/.cache/xpfo-qemu when that is not writable).  Delete the cache
# directory to fetch a newer one.
#
# Other environment: XPFO_BUSYBOX (default /bin/busybox), QEMU (default
# qemu-system-x86_64).
set -eu

me=tests/qemu/run.sh
die() { echo "$me: error: $*" >&2; exit 99; }
missing() { echo "$me: skipped: $*" >&2; exit 77; }

kernel=
append=
envs=
variants=
tvariants=
targs=
files=
prefix=qemu/
timeout_s=${XPFO_QEMU_TIMEOUT:-300}
test_timeout=120
keep=
cpu=max
smp=2
fetch_only=0
tests=

# Lists are newline-separated, so paths and values may hold spaces.
nl='
'
add() { eval "$1=\${$1}\${$1:+\"\$nl\"}\$2"; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel|--append|--env|--variant|--test-variant|--test-args|--file|--prefix|--timeout|--test-timeout|--keep-log|--cpu|--smp)
		[ $# -ge 2 ] || die "$1 needs an argument"
		case $1 in
		--kernel) kernel=$2 ;;
		--append) append="$append $2" ;;
		--env|--variant)
			case $2 in
			[A-Za-z_]*=*) ;;
			*) die "$1 wants VAR=VALUE, not '$2'" ;;
			esac
			case ${2%%=*} in *[!A-Za-z0-9_]*) die "$1: bad variable name in '$2'" ;; esac
			case $2 in *"'"*|*'|'*) die "$1: no ' or | in '$2'" ;; esac
			if [ "$1" = --env ]; then add envs "$2"; else add variants "$2"; fi ;;
		--test-variant)
			case $2 in
			[A-Za-z0-9_.+-]*:-) ;;
			[A-Za-z0-9_.+-]*:[A-Za-z_]*=*)
				v=${2#*:}
				case ${v%%=*} in *[!A-Za-z0-9_]*) die "$1: bad variable name in '$2'" ;; esac
				case $v in *"'"*|*'|'*) die "$1: no ' or | in '$2'" ;; esac ;;
			*) die "$1 wants NAME:VAR=VALUE or NAME:-, not '$2'" ;;
			esac
			add tvariants "$2" ;;
		--test-args)
			case $2 in
			[A-Za-z0-9_.+-]*:*) ;;
			*) die "$1 wants NAME:ARGS, not '$2'" ;;
			esac
			case ${2#*:} in *[!A-Za-z0-9_.,=+/\ -]*) die "$1: arguments may hold letters, digits, spaces and _.,=+/- only: '$2'" ;; esac
			add targs "$2" ;;
		--file) add files "$2" ;;
		--prefix) prefix=$2 ;;
		--timeout) timeout_s=$2 ;;
		--test-timeout) test_timeout=$2 ;;
		--keep-log) keep=$2 ;;
		--cpu) cpu=$2 ;;
		--smp) smp=$2 ;;
		esac
		shift 2 ;;
	--fetch) fetch_only=1; shift ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option: $1 (see --help)" ;;
	*) break ;;
	esac
done
for t in "$@"; do add tests "$t"; done
for v in "$timeout_s" "$test_timeout"; do
	case $v in ''|*[!0-9]*|0) die "bad number of seconds: '$v'" ;; esac
done
case $smp in ''|*[!0-9]*|0) die "--smp: bad number of CPUs: '$smp'" ;; esac
[ $fetch_only = 1 ] || [ -n "$tests" ] || die "no TEST given (see --help)"

qemu=${QEMU:-qemu-system-x86_64}
busybox=${XPFO_BUSYBOX:-/bin/busybox}
for tool in "$qemu" cpio gzip readelf timeout; do
	command -v "$tool" >/dev/null 2>&1 ||
		missing "$tool not found (apt-get install qemu-system-x86 cpio binutils)"
done

# is_static FILE: an ELF file without a program interpreter.
is_static() {
	readelf -h "$1" >/dev/null 2>&1 && ! readelf -l "$1" 2>/dev/null | grep -q INTERP
}
is_script() { head -c 11 "$1" 2>/dev/null | grep -q '^#!/bin/sh'; }

# fetch_kernel: print the path of the cached Debian kernel, fetching it
# first if needed.  Serialised with flock when two runs start at once.
fetch_kernel() {
	cache=${XPFO_QEMU_CACHE:-/var/cache/xpfo-qemu}
	if ! mkdir -p "$cache" 2>/dev/null || [ ! -w "$cache" ]; then
		[ -z "${XPFO_QEMU_CACHE:-}" ] || die "cache $cache is not writable"
		cache=${XDG_CACHE_HOME:-$HOME/.cache}/xpfo-qemu
		mkdir -p "$cache" || die "cannot create the cache $cache"
	fi
	if [ -r "$cache/current" ] && [ -r "$cache/$(cat "$cache/current")" ]; then
		echo "$cache/$(cat "$cache/current")"
		return
	fi
	command -v flock >/dev/null 2>&1 && exec 8>"$cache/.lock" && flock 8
	if [ -r "$cache/current" ] && [ -r "$cache/$(cat "$cache/current")" ]; then
		echo "$cache/$(cat "$cache/current")"
		return
	fi
	for tool in apt-cache apt-get dpkg; do
		command -v $tool >/dev/null 2>&1 ||
			die "no kernel cached in $cache and no $tool to fetch one (use --kernel)"
	done
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -n 1)
	[ -n "$pkg" ] ||
		die "apt-cache knows no linux-image-amd64 (apt-get update? a Debian system?)"
	dl=$(mktemp -d "$cache/fetch.XXXXXX")
	echo "$me: fetching $pkg into $cache (once)" >&2
	# apt runs downloads as _apt, who must be able to write there.
	chmod 0777 "$dl"
	if ! (cd "$dl" && apt-get download "$pkg") >"$dl/log" 2>&1; then
		cat "$dl/log" >&2
		rm -rf "$dl"
		die "apt-get download $pkg failed"
	fi
	mkdir "$dl/x"
	dpkg -x "$dl"/*.deb "$dl/x" || { rm -rf "$dl"; die "dpkg -x failed"; }
	set -- "$dl"/x/boot/vmlinuz-*
	[ -r "$1" ] || { rm -rf "$dl"; die "no boot/vmlinuz-* in $pkg"; }
	name=${1##*/}
	cp "$1" "$cache/$name.tmp" && mv "$cache/$name.tmp" "$cache/$name"
	cp "$dl"/x/boot/config-* "$cache/" 2>/dev/null || true
	echo "$name" >"$cache/current.tmp" && mv "$cache/current.tmp" "$cache/current"
	rm -rf "$dl"
	echo "$cache/$name"
}

# pvh_kernel VMLINUZ: print the uncompressed vmlinux next to a cached
# Debian kernel, making it once, or VMLINUZ itself when that cannot be
# done.  QEMU boots a vmlinux with a PVH entry note directly (no firmware
# handover, no decompression under emulation): measured here, 8-10 s to
# the guest's init instead of 16-19 s for the bzImage.
pvh_kernel() {
	v=${1%/*}/vmlinux-${1##*/vmlinuz-}
	if [ ! -r "$v" ] && [ ! -e "$v.none" ]; then
		# The payload is xz-compressed in Debian's kernels (CONFIG_KERNEL_XZ).
		if command -v python3 >/dev/null 2>&1 && python3 - "$1" "$v.tmp.$$" <<'PY' 2>/dev/null &&
import lzma, sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit(1)
out = lzma.LZMADecompressor().decompress(data[start:])
if out[:4] != b"\x7fELF":
    sys.exit(1)
open(sys.argv[2], "wb").write(out)
PY
		   readelf -n "$v.tmp.$$" 2>/dev/null | grep -q 'Xen.*(0x00000012)'; then
			mv "$v.tmp.$$" "$v"
		else
			rm -f "$v.tmp.$$"
			: >"$v.none" 2>/dev/null || true
		fi
	fi
	if [ -r "$v" ]; then echo "$v"; else echo "$1"; fi
}

if [ -n "$kernel" ]; then
	[ -r "$kernel" ] || die "--kernel: cannot read $kernel"
else
	kernel=$(fetch_kernel)
	kernel=$(pvh_kernel "$kernel")
fi
if [ $fetch_only = 1 ]; then
	echo "$kernel"
	exit 0
fi
[ -r "$busybox" ] && is_static "$busybox" ||
	missing "$busybox is not a static busybox (apt-get install busybox-static)"

work=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-qemu.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 99' INT TERM

# The initramfs: busybox, the tests, their plan, the environment, /init.
root=$work/root
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
	"$root/tests/files"
cp "$busybox" "$root/bin/busybox"
: >"$root/tests/plan"
[ -n "$variants" ] || variants=-
ntests=0
names=
oldifs=$IFS
IFS=$nl
set -f
for t in $tests; do
	[ -f "$t" ] || die "no such test: $t"
	[ -x "$t" ] || die "not executable: $t"
	is_static "$t" || is_script "$t" ||
		die "$t is neither statically linked nor a #!/bin/sh script (link with -static, or libtool's -all-static)"
	name=${t##*/}
	case "$nl$names$nl" in *"$nl$name$nl"*) die "two tests named $name" ;; esac
	case $name in *[!A-Za-z0-9_.+-]*) die "test name '$name': letters, digits, _ . + - only" ;; esac
	add names "$name"
	cp "$t" "$root/tests/$name"
	vs=
	for tv in $tvariants; do
		[ "${tv%%:*}" != "$name" ] || add vs "${tv#*:}"
	done
	[ -n "$vs" ] || vs=$variants
	args=
	for ta in $targs; do
		[ "${ta%%:*}" != "$name" ] || args=${ta#*:}
	done
	for v in $vs; do
		if [ "$v" = - ]; then
			printf '%s||%s|%s\n' "$name" "$name" "$args" >>"$root/tests/plan"
		else
			printf '%s[%s]|%s|%s|%s\n' "$name" "${v#*=}" "$v" "$name" "$args" >>"$root/tests/plan"
		fi
		ntests=$((ntests + 1))
	done
done
for x in $tvariants $targs; do
	case "$nl$names$nl" in *"$nl${x%%:*}$nl"*) ;; *) die "--test-variant/--test-args: no test named ${x%%:*}" ;; esac
done
for f in $files; do
	[ -f "$f" ] || die "--file: no such file: $f"
	cp "$f" "$root/tests/files/"
done
: >"$root/tests/env"
for e in $envs; do
	printf "export '%s'\n" "$e" >>"$root/tests/env"
done
set +f
IFS=$oldifs
echo "TEST_TIMEOUT=$test_timeout" >>"$root/tests/env"

cat >"$root/init" <<'EOF'
#!/bin/busybox sh
# The guest side of tests/qemu/run.sh.  Every line for the host starts
# with the marker and goes to the second serial port, which carries
# nothing else (kernel messages stay on the console, ttyS0, and cannot
# break a result line); without a second port, to the console.
/bin/busybox --install -s /bin
export PATH=/bin:/tests/files
M=XPFO-QEMU:
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
stty -F /dev/ttyS1 raw -echo 2>/dev/null && echo "$M HELLO" 2>/dev/null >/dev/ttyS1 &&
	exec >/dev/ttyS1
echo "$M BOOT $(uname -r) cpus=$(grep -c '^processor' /proc/cpuinfo) uptime=$(cut -d' ' -f1 /proc/uptime)"
flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
for f in pku ospke; do
	case $flags in
	*" $f "*) echo "$M CPUFLAG $f yes" ;;
	*) echo "$M CPUFLAG $f no" ;;
	esac
done
. /tests/env
while IFS='|' read -r name assign file args; do
	t0=$(cut -d' ' -f1 /proc/uptime)
	(
		[ -z "$assign" ] || export "$assign"
		# $args: split at spaces on purpose
		cd /tmp && exec timeout "$TEST_TIMEOUT" "/tests/$file" $args </dev/null
	) >/tmp/out 2>&1
	rc=$?
	t1=$(cut -d' ' -f1 /proc/uptime)
	sed "s|^|$M OUT $name: |" /tmp/out
	echo "$M TIME $name $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }")"
	echo "$M RESULT $name $rc"
done </tests/plan
echo "$M DONE uptime=$(cut -d' ' -f1 /proc/uptime)"
sync
# With -no-reboot, a reboot ends QEMU; poweroff -f would only halt a
# kernel built without ACPI (kernel/'s) and leave QEMU running.
reboot -f
EOF
chmod +x "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initrd.gz" ||
	die "cannot build the initramfs"

# One boot.  -nic none: no network card, so no iPXE option ROM to wait
# for.  The console (ttyS0) is QEMU's stdout; the results come on a second
# ISA serial port (ttyS1) into a file of their own.
console=$work/console.log
results=$work/results.log
start=$(date +%s)
set +e
timeout "$timeout_s" "$qemu" -cpu "$cpu" -smp $smp,sockets=$smp,cores=1,threads=1 -m 1G \
	-nographic -no-reboot -nic none \
	-serial mon:stdio -serial file:"$results.raw" \
	-kernel "$kernel" -initrd "$work/initrd.gz" \
	-append "console=ttyS0 panic=-1 quiet loglevel=3 $append" \
	</dev/null >"$console.raw" 2>&1
qrc=$?
set -e
elapsed=$(($(date +%s) - start))
tr -d '\r' <"$console.raw" >"$console"
touch "$results.raw"
tr -d '\r' <"$results.raw" >"$results"
# Without a second port the guest wrote its lines to the console.
log=$results
grep -q '^XPFO-QEMU: HELLO' "$results" || log=$console
if [ -n "$keep" ]; then
	cat "$console" >"$keep"
	[ "$log" = "$console" ] || { echo "==== results (ttyS1)"; cat "$results"; } >>"$keep"
fi

tail_log() {
	echo "#   console:"
	tail -n 30 "$console" | sed 's/^/#   /'
	if [ "$log" != "$console" ]; then
		echo "#   results port:"
		tail -n 10 "$results" | sed 's/^/#   /'
	fi
}
echo "# guest: $(sed -n 's/.*XPFO-QEMU: BOOT //p' "$log" | head -n 1) image=${kernel##*/}"
if [ $qrc = 124 ]; then
	echo "ERROR: ${prefix}boot (timeout after $timeout_s s); console tail:"
	tail_log
	exit 99
fi
if ! grep -q '^XPFO-QEMU: DONE' "$log"; then
	echo "ERROR: ${prefix}boot (QEMU exit $qrc, no DONE marker); console tail:"
	tail_log
	exit 99
fi
for f in pku ospke; do
	if ! grep -q "^XPFO-QEMU: CPUFLAG $f yes" "$log"; then
		echo "ERROR: ${prefix}cpu-$f (the guest's /proc/cpuinfo lacks '$f': the pkey tests would pass vacuously)"
		exit 99
	fi
done

status=0
npass=0
nskip=0
nfail=0
seen=0
while IFS='|' read -r name _ _ args; do
	rc=$(awk -v p="XPFO-QEMU: RESULT $name " \
		'index($0, p) == 1 { print substr($0, length(p) + 1); exit }' "$log")
	grep -F "XPFO-QEMU: OUT $name: " "$log" | sed "s/^XPFO-QEMU: OUT /# /" || true
	took=$(awk -v p="XPFO-QEMU: TIME $name " \
		'index($0, p) == 1 { print substr($0, length(p) + 1); exit }' "$log")
	[ -z "$took" ] || echo "# $name: took $took s${args:+ (arguments: $args)}"
	case $rc in
	'') echo "ERROR: $prefix$name (never reported)"; status=99; continue ;;
	0) echo "PASS: $prefix$name"; npass=$((npass + 1)) ;;
	77) echo "SKIP: $prefix$name"; nskip=$((nskip + 1)) ;;
	124|143) echo "FAIL: $prefix$name (killed after ${test_timeout} s)"; nfail=$((nfail + 1)) ;;
	*) echo "FAIL: $prefix$name (exit $rc)"; nfail=$((nfail + 1)) ;;
	esac
	seen=$((seen + 1))
done <"$root/tests/plan"
up=$(sed -n 's/^XPFO-QEMU: DONE uptime=//p' "$log" | head -n 1)
echo "# $npass passed, $nskip skipped, $nfail failed of $ntests; QEMU ran $elapsed s (TCG), guest uptime at the end ${up:-?} s"
[ $status = 0 ] || exit $status
[ $nfail = 0 ] || exit 1
[ $nskip -lt "$ntests" ] || exit 77
exit 0
