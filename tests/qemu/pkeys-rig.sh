#!/bin/sh
# tests/qemu/pkeys-rig.sh: make check's one QEMU boot.  Runs every program
# of QEMU_TEST_BINARIES (set by tests/qemu/local.mk; paths relative to the
# build directory) in a guest whose CPU has protection keys, through
# tests/qemu/run.sh.  Fails loudly (99) when the guest lacks pku/ospke or
# does not boot; skips (77) only when QEMU or busybox-static is missing.
# XPFO_QEMU_FLAGS adds options for run.sh (e.g. --keep-log FILE).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bins=${QEMU_TEST_BINARIES:-tests/qemu/arch-unit tests/qemu/pkeys-fault tests/qemu/alloc-smoke}

set --
for b in $bins; do
	if [ ! -x "$top_builddir/$b" ]; then
		echo "pkeys-rig: $top_builddir/$b is not built (make check builds it)"
		exit 99
	fi
	set -- "$@" "$top_builddir/$b"
done
# shellcheck disable=SC2086 # XPFO_QEMU_FLAGS is a list of options
exec sh "$top_srcdir/tests/qemu/run.sh" --timeout 240 ${XPFO_QEMU_FLAGS:-} "$@"
