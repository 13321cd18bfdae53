#!/bin/sh
# tests/qemu/arch-arm64.sh: arch/ on arm64 without arm64 hardware.  Builds
# tests/qemu/arch-unit.c and pkeys-fault.c with Debian's aarch64 cross
# compiler (static) and runs them under qemu-aarch64-static: the POE
# encodings and the siginfo layout must check out, and since QEMU's user
# mode offers no POE, the probe must give a clean "no keys" (arch-unit
# passes, pkeys-fault skips with the reason).
# Needs gcc-aarch64-linux-gnu and qemu-user-static; skips without them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
cc=${XPFO_AARCH64_CC:-aarch64-linux-gnu-gcc}
qemu=${XPFO_QEMU_AARCH64:-qemu-aarch64-static}
for tool in "$cc" "$qemu"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "arch-arm64: skipped: $tool not found (apt-get install gcc-aarch64-linux-gnu qemu-user-static)"
		exit 77
	fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-arm64.XXXXXX")
trap 'rm -rf "$work"' EXIT
status=0
for t in arch-unit pkeys-fault; do
	if ! "$cc" -std=gnu11 -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -I"$top_srcdir/arch" \
		-static -pthread -o "$work/$t" "$top_srcdir/tests/qemu/$t.c"; then
		echo "FAIL: arch-arm64/$t (does not compile for aarch64)"
		status=1
		continue
	fi
	file=$(readelf -h "$work/$t" | sed -n 's/^ *Machine: *//p')
	echo "# $t: $file"
	"$qemu" "$work/$t" >"$work/$t.out" 2>&1 && rc=0 || rc=$?
	sed 's/^/# /' "$work/$t.out"
	case $t:$rc in
	arch-unit:0|pkeys-fault:77) echo "PASS: arch-arm64/$t (exit $rc)" ;;
	*) echo "FAIL: arch-arm64/$t (exit $rc)"; status=1 ;;
	esac
done
exit $status
