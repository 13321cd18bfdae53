#!/bin/sh
# tests/qemu/pkeys-rig.sh: make check's one QEMU boot.  Runs every program
# of QEMU_TEST_BINARIES (set by tests/qemu/local.mk; paths relative to the
# build directory) in a guest whose CPU has protection keys, through
# tests/qemu/run.sh.  Fails loudly (99) when the guest lacks pku/ospke or
# does not boot; skips (77) only when QEMU or busybox-static is missing.
# XPFO_QEMU_FLAGS adds options for run.sh (e.g. --keep-log FILE).
#
# Each program runs once per backend (XPFO_OPTIONS=backend=pkeys, then
# backend=mprotect), so both backends run the same suites, except where
# the table below says otherwise: the pkey facts tests run once (they do
# not use the allocator), pkeys-backend runs with and without sealed
# metadata.  The table also gives the guest's scale for the long suites:
# QEMU emulates the CPU (TCG), so the whole boot must stay within about
# four minutes on a 2-core machine.  With XPFO_SKIP_SLOW set (the debug
# build in CI, whose invariant walks are slow under emulation) the suites
# run on backend=pkeys only (the host runs them on mprotect) and smaller.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bins=${QEMU_TEST_BINARIES:-tests/qemu/arch-unit tests/qemu/pkeys-fault tests/qemu/alloc-smoke}
case ${XPFO_SKIP_SLOW:-} in ''|0) quick=0 ;; *) quick=1 ;; esac

pkeys=XPFO_OPTIONS=backend=pkeys
mprotect=XPFO_OPTIONS=backend=mprotect

# variants NAME: the variants of test NAME ("-": once, none), space-separated
variants() {
	case $1 in
	arch-unit|pkeys-fault) echo - ;;
	pkeys-backend) echo "$pkeys $pkeys,seal_metadata=0" ;;
	# the sandbox's descriptor, record and handler attacks: the host runs
	# them on mprotect; here pkeys (about 20 s under TCG together)
	fds-static|records-static|handlers-static) echo "$pkeys" ;;
	*-static) if [ $quick = 1 ]; then echo "$pkeys"; else echo "$pkeys $mprotect"; fi ;;
	*) echo "$pkeys $mprotect" ;;
	esac
}

# guest_args NAME: the test's arguments in the guest (a smaller scale than
# on the host where a suite is long; each still exercises what it checks)
guest_args() {
	case $1 in
	contention-static) echo "--seconds 3" ;;
	# the sandbox's allocator check: 2,000 mixed allocations locked and not
	alloc-static) echo "2000" ;;
	# 10,000 on the host; each cycle is several syscalls under TCG
	alias-static) echo "--cycles 2500" ;;
	stress-static) echo "--seconds 3" ;;
	# examples/pngd: 50 valid and 50 malformed files (1,000 of each on
	# the host, through the socket), thread mode on pkeys, fork on mprotect
	pngd-static) echo "--self-test 50" ;;
	pngd-bug-static) echo "--self-test-exploit" ;;
	# ids still run out (EMFILE) and are recycled; STRICT after join
	apimisuse-static)
		if [ $quick = 1 ]; then echo "--rounds 10 --joins 100"; else echo "--rounds 20 --joins 200"; fi ;;
	# 16 compartments (more than the keys: parked and re-keyed on pkeys)
	# and the 2,000-VMA limit as on the host; 2,500 runs and transfers,
	# more than the limit, so a VMA per object would still fail
	vmabudget-static)
		if [ $quick = 1 ]; then
			echo "--objects 50000 --rounds 2 --runs 2500 --transfers 2500 --degraded-runs 1000"
		else
			echo "--objects 100000 --rounds 4 --runs 2500 --transfers 2500 --degraded-runs 1000"
		fi ;;
	esac
}

set --
for b in $bins; do
	if [ ! -x "$top_builddir/$b" ]; then
		echo "pkeys-rig: $top_builddir/$b is not built (make check builds it)"
		exit 99
	fi
	name=${b##*/}
	for v in $(variants "$name"); do
		set -- "$@" --test-variant "$name:$v"
	done
	a=$(guest_args "$name")
	[ -z "$a" ] || set -- "$@" --test-args "$name:$a"
done
for b in $bins; do
	set -- "$@" "$top_builddir/$b"
done
# The limits catch a hung guest, they measure nothing: one boot takes about
# 150 s on an idle 2-CPU machine and about 260 s at a load of 12, so the
# whole boot may take 900 s and one test 300 s before it counts as hung.
# shellcheck disable=SC2086 # XPFO_QEMU_FLAGS is a list of options
# secretmem.enable=1: Debian's 6.1 kernel refuses memfd_secret without it
# (tests/secret checks ENOSYS and its warning on the host, by injection)
exec sh "$top_srcdir/tests/qemu/run.sh" --timeout 900 --test-timeout 300 \
	--append secretmem.enable=1 ${XPFO_QEMU_FLAGS:-} "$@"
