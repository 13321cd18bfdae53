#!/bin/sh
# privileged.sh - XPFO_OPTIONS is ignored in a privileged program.
#
# Whoever runs a set-user-ID program controls its environment; if xpfo read
# XPFO_OPTIONS there, a user could turn the program's hardening off
# (revoke=off, profile=light).  The kernel marks such a process with
# AT_SECURE; xpfo then ignores the variable and says so on one line.
# Control first: the same binary, not set-user-ID, honours the option (so
# the check below can fail).  Needs root (to make a set-user-ID copy owned
# by nobody: then the real user is root, the effective one nobody).
set -u
prog=tests/privileged
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a set-user-ID copy"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "SKIP: no user nobody"; exit 77; }
dir=$(mktemp -d "$(pwd)/tests/privileged.XXXXXX") || exit 99
trap 'rm -rf "$dir"' EXIT
cp "$prog" "$dir/prog" || exit 99
chmod 755 "$dir" || exit 99

fail=0
out=$(XPFO_OPTIONS=help "$dir/prog" 2>&1)
case $out in
*"XPFO_OPTIONS=key=value"*"privileged: ran"*) echo "ok: not privileged: XPFO_OPTIONS=help honoured" ;;
*) echo "FAIL: not privileged: help not printed: $out"; fail=1 ;;
esac

chown nobody "$dir/prog" && chmod 4755 "$dir/prog" || exit 99
out=$(XPFO_OPTIONS=help,revoke=off "$dir/prog" 2>&1)
if mount | grep -q " $(df --output=target "$dir" | tail -1) .*nosuid"; then
	echo "SKIP: $dir is on a nosuid file system"; exit 77
fi
case $out in
*"XPFO_OPTIONS=key=value"*|*"revoke=off"*)
	echo "FAIL: set-user-ID: XPFO_OPTIONS was read: $out"; fail=1 ;;
*"xpfo: warning: XPFO_OPTIONS ignored: privileged"*"privileged: ran"*)
	echo "ok: set-user-ID: XPFO_OPTIONS ignored, one warning line" ;;
*) echo "FAIL: set-user-ID: unexpected output: $out"; fail=1 ;;
esac
n=$(printf '%s\n' "$out" | grep -c '^xpfo:')
[ "$n" = 1 ] || { echo "FAIL: $n xpfo lines, expected 1"; fail=1; }
exit $fail
