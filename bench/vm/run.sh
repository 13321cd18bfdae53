#!/bin/sh
# bench/vm/run.sh: the compartment workloads' counts in the QEMU guest, on
# backend=pkeys and backend=mprotect, as a Markdown table (stdout and
# bench/results/vm-counts.md).  Needs the rig of tests/qemu (run.sh).
set -eu
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin="$top_builddir/bench/xb-vm-counts"
[ -x "$bin" ] || { echo "bench/vm/run.sh: $bin is not built (make bench-vm builds it)"; exit 2; }
log=$(mktemp)
res=$(mktemp)
sh "$top_srcdir/tests/qemu/run.sh" --variant XPFO_OPTIONS=backend=pkeys \
	--variant XPFO_OPTIONS=backend=mprotect --keep-log "$log" "$bin" >"$res" || true
out="$top_builddir/bench/results/vm-counts.md"
mkdir -p "$(dirname "$out")"
{
	echo "# Compartment workloads in the QEMU guest: counts per backend"
	echo
	echo "$(date -u +%Y-%m-%d), QEMU TCG -cpu max, $(grep -m1 '^# guest:' "$res" | sed 's/^# guest: //')"
	echo "Made by \`make bench-vm\` (bench/vm/counts.c). Timings under emulation mean nothing; these are xpfo's counters."
	echo
	echo "| backend | workload | operations | revoke syscalls | grant syscalls | pages revoked | mmap+madvise | protection syscalls per operation |"
	echo "|---|---|---|---|---|---|---|---|"
	grep -a 'XPFO-QEMU: OUT .*| ' "$log" | sed 's/^.*XPFO-QEMU: OUT [^:]*: //' | tr -d '\r'
} > "$out"
rm -f "$log" "$res"
cat "$out"
