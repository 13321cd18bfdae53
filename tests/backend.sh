#!/bin/sh
# tests/backend.sh: which backend xpfo picks, and what it says, on this
# machine.  Without protection keys (no "pku" in /proc/cpuinfo, as on this
# project's machines): backend=auto runs on mprotect and the statistics say
# why; backend=pkeys stops the program at start with one clear line, exit 2.
# With keys: both run on pkeys.
set -u
lib=${XPFO_LIB:?XPFO_LIB not set}
fail=0
prog=/bin/true

out=$(XPFO_OPTIONS=backend=auto,stats=1 LD_PRELOAD="$lib" $prog 2>&1)
st=$?
first=$(printf '%s\n' "$out" | grep -m1 '^xpfo: stats')
if grep -qw pku /proc/cpuinfo; then
	echo "this CPU has protection keys"
	case "$first" in *"backend pkeys"*) echo "ok: auto picks pkeys";;
	*) echo "FAIL: auto did not pick pkeys: $first"; fail=1;; esac
	out=$(XPFO_OPTIONS=backend=pkeys LD_PRELOAD="$lib" $prog 2>&1)
	[ $? -eq 0 ] && echo "ok: backend=pkeys runs" || { echo "FAIL: backend=pkeys: $out"; fail=1; }
else
	echo "this CPU has no protection keys"
	[ $st -eq 0 ] || { echo "FAIL: backend=auto exited $st"; fail=1; }
	case "$first" in
	*"backend mprotect (the CPU has no protection keys"*) echo "ok: $first";;
	*) echo "FAIL: the statistics do not say mprotect and why: $first"; fail=1;;
	esac
	out=$(XPFO_OPTIONS=backend=pkeys LD_PRELOAD="$lib" $prog 2>&1)
	st=$?
	want="xpfo: error: backend=pkeys: the CPU has no protection keys (CPUID OSPKE clear: no PKU, or the kernel did not enable it)"
	if [ $st -eq 2 ] && [ "$out" = "$want" ]; then
		echo "ok: backend=pkeys: exit 2, \"$out\""
	else
		echo "FAIL: backend=pkeys: exit $st, stderr \"$out\" (want exit 2, \"$want\")"
		fail=1
	fi
fi
out=$(XPFO_OPTIONS=backend=mprotect,stats=1 LD_PRELOAD="$lib" $prog 2>&1)
case "$(printf '%s\n' "$out" | grep -m1 '^xpfo: stats')" in
*"backend mprotect (chosen by backend=mprotect)"*) echo "ok: backend=mprotect";;
*) echo "FAIL: backend=mprotect: $out"; fail=1;;
esac
exit $fail
