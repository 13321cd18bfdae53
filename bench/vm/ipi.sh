#!/bin/sh
# bench/vm/ipi.sh: TLB-shootdown IPIs per allocator in the QEMU guest
# (issue 35; make bench-vm-ipi).  One boot of tests/qemu/run.sh per guest
# CPU count; in each boot bench/vm/ipi-guest.sh runs every workload of the
# plan under glibc, jemalloc, mimalloc, mimalloc-secure (when
# bench/baselines/mimalloc-secure.sh has built it) and xpfo (default,
# profile=light, revoke=eager), the same dynamic xb-work as on the host with the allocator
# in LD_PRELOAD (the libraries and what ldd says they need are copied into
# the initramfs), and xb-vm-ipi counts the TLB + CAL interrupts of
# /proc/interrupts, summed over the guest's CPUs, around each run.
#
# Usage: bench/vm/ipi.sh [--smp "2 4 8"] [--kernel PATH] [--runs N]
#                        [--allocs "glibc ..."] [--plan FILE]
#                        [--plan-eager FILE] [--out FILE.md]
#                        [--title TEXT] [--trace FILE.md]
#
#   --allocs  the allocators (default: every one above); xpfo:OPTIONS is
#             xpfo with XPFO_OPTIONS=OPTIONS (the table's rows are the
#             named ones)
#   --kernel  boot this image (default: Debian's kernel, cached by run.sh)
#   --runs    boots per CPU count (default 1); the table gives every run
#   --plan    lines "WORKLOAD ARGS" for xb-work (default: the plan below)
#   --plan-eager  the same for xpfo-eager (default: the plan, or with no
#             --plan the smaller default below)
#   --out     the Markdown table; FILE.dat (raw lines) and FILE.png (the
#             plot, by gnuplot) are written next to it
#             (default $top_builddir/bench/results/vm-ipi.md)
#   --trace   also trace every run (ipi-guest.sh TRACE=1): who sent the
#             function-call IPIs, by kernel path, and for a flush in a
#             page fault the instruction that wrote and where
#             (bench/vm/ipi-trace.py), one section per boot in FILE.md;
#             tracing adds its own cost, so the counts of a traced boot
#             are not comparable with an untraced one's
# Timings under TCG mean nothing, and the host's load does not change the
# counts; only the counts are reported.
set -eu
me=bench/vm/ipi.sh
die() { echo "$me: error: $*" >&2; exit 99; }
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
smps="2 4 8"
kernel=
runs=1
allocs="glibc jemalloc mimalloc mimalloc-secure xpfo xpfo-light xpfo-eager"
allocs_given=0
plan=
plan_eager=
out=$top_builddir/bench/results/vm-ipi.md
title=
trace=
while [ $# -gt 0 ]; do
	case $1 in
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	esac
	[ $# -ge 2 ] || die "$1 needs an argument (see --help)"
	case $1 in
	--smp) smps=$2 ;; --kernel) kernel=$2 ;; --runs) runs=$2 ;;
	--allocs) allocs=$2; allocs_given=1 ;; --plan) plan=$2 ;; --plan-eager) plan_eager=$2 ;;
	--out) out=$2 ;;
	--title) title=$2 ;;
	--trace) trace=$2 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
	shift 2
done
case $runs in ''|*[!0-9]*|0) die "--runs: bad number '$runs'" ;; esac

work=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-ipi.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 99' INT TERM

# The default plan: the multi-threaded workloads of make bench, four
# threads each, sized so that one boot with every allocator takes a few
# minutes at -smp 4 on a loaded 2-CPU host.
# revoke=eager gets a tenth of it (at the full size its larson alone ran
# over 4 minutes at -smp 4); the table gives each run's operations.
if [ -n "$plan" ]; then
	cp "$plan" "$work/ipi-plan"
else
	cat >"$work/ipi-plan" <<'EOF'
larson -t 4 -n 2000 -r 2
xmalloc -t 4 -n 100
hash -t 4 -n 5000 -r 1
prodcons -t 4 -n 20000
threadchurn -t 4 -r 30
crossmix -t 4 -n 40
EOF
fi
if [ -n "$plan_eager" ]; then
	cp "$plan_eager" "$work/ipi-plan-eager"
elif [ -z "$plan" ]; then
	cat >"$work/ipi-plan-eager" <<'EOF'
larson -t 4 -n 200 -r 2
xmalloc -t 4 -n 10
hash -t 4 -n 500 -r 1
prodcons -t 4 -n 2000
threadchurn -t 4 -r 3
crossmix -t 4 -n 4
EOF
fi

xbwork=$top_builddir/bench/xb-work
ipi=$top_builddir/bench/xb-vm-ipi
xlib=$top_builddir/.libs/libxpfo.so.0
for f in "$xbwork" "$ipi" "$xlib"; do
	[ -x "$f" ] || [ -r "$f" ] || die "$f is not built (make bench-vm-ipi builds it)"
done
readelf -l "$ipi" | grep -q INTERP && die "$ipi must be static"
# The libraries: each allocator's, and what ldd says it and xb-work need.
libs="$xlib"
run_allocs=
for a in $allocs; do
	case $a in
	jemalloc|mimalloc)
		l=$(ldconfig -p | sed -n "s/.*lib$a\.so\.2 (libc6,x86-64) => //p" | head -n 1)
		[ -n "$l" ] || die "lib$a.so.2 not found (apt-get install lib$a-dev)"
		libs="$libs $l" ;;
	mimalloc-secure)
		# built from Debian's source (make bench-baselines); left out of
		# the default list when it is not built, an error when asked for
		if l=$(sh "$top_srcdir/bench/baselines/mimalloc-secure.sh" --cached 2>"$work/why"); then
			libs="$libs $l"
		elif [ $allocs_given = 1 ]; then
			die "mimalloc-secure: $(sed 's/^[^:]*: //' "$work/why")"
		else
			echo "$me: mimalloc-secure left out: $(sed 's/^[^:]*: //' "$work/why")" >&2
			continue
		fi ;;
	glibc|xpfo|xpfo-light|xpfo-eager|xpfo:*) ;;
	*) die "unknown allocator '$a'" ;;
	esac
	run_allocs="$run_allocs $a"
done
allocs=$run_allocs
deps=
for f in "$xbwork" $libs; do
	deps="$deps $(ldd "$f" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p')"
done
files=
for f in $libs $deps; do
	case " $files " in *" ${f##*/} "*) continue ;; esac
	cp -L "$f" "$work/${f##*/}" || die "cannot copy $f"
	files="$files ${f##*/}"
done
[ -r "$work/ld-linux-x86-64.so.2" ] || die "no ld-linux-x86-64.so.2 among the dependencies"
cp "$xbwork" "$work/xb-work"
cp "$ipi" "$work/xb-vm-ipi"
set --
[ ! -r "$work/ipi-plan-eager" ] || files="$files ipi-plan-eager"
for f in $files xb-work xb-vm-ipi ipi-plan; do set -- "$@" --file "$work/$f"; done
for a in $allocs; do set -- "$@" --variant "ALLOC=$a"; done
[ -z "$kernel" ] || set -- "$@" --kernel "$kernel"
[ -z "$trace" ] || { set -- "$@" --env TRACE=1; : >"$trace"; }

mkdir -p "$(dirname "$out")"
dat=${out%.md}.dat
: >"$dat.tmp"
status=0
for n in $smps; do
	r=1
	while [ $r -le "$runs" ]; do
		echo "$me: booting with $n CPUs (run $r of $runs)..." >&2
		rc=0
		sh "$top_srcdir/tests/qemu/run.sh" --smp "$n" --timeout 3600 \
			--test-timeout 3000 "$@" "$top_srcdir/bench/vm/ipi-guest.sh" \
			>"$work/run.txt" 2>&1 || rc=$?
		guest=$(sed -n 's/^# guest: //p' "$work/run.txt" | head -n 1)
		echo "$me: $(tail -n 1 "$work/run.txt")" >&2
		if [ $rc != 0 ]; then
			status=1
			grep -v ': IPI alloc=' "$work/run.txt" | tail -n 40 >&2
		fi
		sed -n "s/^# ipi-guest\.sh\[[^]]*\]: IPI /smp=$n run=$r /p" "$work/run.txt" >>"$dat.tmp"
		echo "# smp=$n run=$r guest: $guest" >>"$dat.tmp"
		[ -z "$trace" ] || python3 "$top_srcdir/bench/vm/ipi-trace.py" --lib "$xlib" \
			--title "$n CPUs, run $r ($guest)" "$work/run.txt" >>"$trace"
		r=$((r + 1))
	done
done
{
	echo "# bench/vm/ipi.sh $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$top_srcdir" rev-parse --short HEAD 2>/dev/null || echo '?')"
	echo "# plan:"
	sed 's/^/#   /' "$work/ipi-plan"
	if [ -r "$work/ipi-plan-eager" ]; then
		echo "# plan for xpfo-eager:"
		sed 's/^/#   eager: /' "$work/ipi-plan-eager"
	fi
	cat "$dat.tmp"
} >"$dat"
rm -f "$dat.tmp"
python3 "$top_srcdir/bench/vm/ipi-report.py" --title "${title:-TLB-shootdown IPIs in the QEMU guest}" \
	"$dat" "$out" "${out%.md}.png"
cat "$out"
exit $status
