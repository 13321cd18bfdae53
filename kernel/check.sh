#!/bin/sh
# kernel/check.sh: what `make check-kernel` runs.
#
#   1. the series applies with `git apply --check` to a pristine
#      linux-source-6.12 tree, and scripts/checkpatch.pl --strict is clean;
#   2. kernel/build.sh builds the base and patched kernels (cached in
#      $XPFO_KERNEL_CACHE, default /var/cache/xpfo-kernel) and checks that
#      the series adds no W=1 warning;
#   3. kernel/test.sh boots both in QEMU (-smp 4, one boot each): functional
#      checks, the direct-map absence check, the flush measurement on 32 MiB
#      with 1 and 4 faulting threads (lower and upper bounds, flat in the
#      thread count), small-file churn, the RLIMIT_MEMLOCK=0 loop, the split
#      counters after 128 MiB of secret churn, 20 process_madvise(
#      MADV_DONTNEED) releases of 64 ranges per layout (one TLB flush round
#      a call patched, one a range on base), and the extra static test
#      binaries (kernel/extra/*.c, built here, plus every executable in
#      $XPFO_KERNEL_EXTRA if set).  Times are judged by make bench-kernel.
#
# One "PASS: name" / "FAIL: name" / "SKIP: name" line per check; exit 1 if
# any check failed.  Extra arguments go to kernel/test.sh (e.g. --boots 5).
set -u

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cache=$(kernel_cache)
export XPFO_KERNEL_CACHE="$cache"
kdir=$(kernel_dir)
status=0
pass() { echo "PASS: $1"; }
fail() { echo "FAIL: $1${2:+ ($2)}"; status=1; }
stamp() { date +%s; }

t0=$(stamp)
patches=$(ls "$here"/patches/*.patch 2>/dev/null | grep -v '/0000-')
if [ -z "$patches" ]; then
	fail kernel/series "no patches in $here/patches"
	exit 1
fi

# 2 first: it also provides the pristine tree for 1.
if sh "$here/build.sh" --w1; then
	pass kernel/build
	pass kernel/w1-no-new-warnings
else
	fail kernel/build "kernel/build.sh --w1 failed; see its messages above"
	exit 1
fi
t_build=$(stamp)

pristine=$kdir/src/base
if ! command -v git >/dev/null 2>&1; then
	fail kernel/git-apply-check "git not found"
else
	# A copy of the files the series touches, from the pristine tree
	# (which is built in place but never patched).
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-apply.XXXXXX")
	for f in $(sed -n 's|^--- a/||p' $patches | sort -u); do
		mkdir -p "$tmp/$(dirname "$f")"
		cp "$pristine/$f" "$tmp/$f" 2>/dev/null || true
	done
	# Each patch is checked against the tree as the previous ones left it.
	if (cd "$tmp" && git init -q . &&
	    for p in $patches; do
		git apply --check "$p" && git apply "$p" || exit 1
	    done) 2>&1; then
		pass kernel/git-apply-check
	else
		fail kernel/git-apply-check
	fi
	rm -rf "$tmp"
fi

if (cd "$pristine" && perl scripts/checkpatch.pl --strict -q $patches); then
	pass kernel/checkpatch-strict
else
	fail kernel/checkpatch-strict
fi

# The extra tests: ours, then the lead's.
extra=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-extra.XXXXXX")
trap 'rm -rf "$extra"' EXIT INT TERM
for c in "$here"/extra/*.c; do
	[ -f "$c" ] || continue
	n=$(basename "$c" .c)
	gcc -O2 -Wall -Wextra -static -o "$extra/$n" "$c" ||
		fail "kernel/extra-build/$n"
done
if [ -n "${XPFO_KERNEL_EXTRA:-}" ]; then
	[ -d "$XPFO_KERNEL_EXTRA" ] || fail kernel/extra-dir "no directory $XPFO_KERNEL_EXTRA"
	for f in "$XPFO_KERNEL_EXTRA"/*; do
		[ -f "$f" ] && [ -x "$f" ] && cp "$f" "$extra/"
	done
fi

sh "$here/test.sh" --extra "$extra" "$@" || status=1
t_test=$(stamp)
echo "kernel/check.sh: build $((t_build - t0)) s, checks and boots $((t_test - t_build)) s" >&2
exit $status
