#!/bin/sh
# privileged.sh - XPFO_OPTIONS is ignored in a privileged program.
#
# Whoever runs a set-user-ID program controls its environment; if xpfo read
# XPFO_OPTIONS there, a user could turn the program's hardening off
# (revoke=off, profile=light).  The kernel marks such a process with
# AT_SECURE; xpfo then ignores the variable and says so on one line.
# Control first: the same binary, not set-group-ID, honours the option (so
# the check below can fail).  Needs root, to make a set-group-ID copy of
# nobody's group: then the real group is root's, the effective one nobody's
# (AT_SECURE), while the effective user stays root and can still load
# libxpfo from a build tree only root may enter (mktemp -d makes 0700).
set -u
prog=tests/privileged
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make a set-group-ID copy"; exit 77; }
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

grp=$(id -g nobody) || exit 99
[ "$grp" != "$(id -g)" ] || { echo "SKIP: nobody's group is ours"; exit 77; }
chgrp "$grp" "$dir/prog" && chmod 2755 "$dir/prog" || exit 99
out=$(XPFO_OPTIONS=help,revoke=off "$dir/prog" 2>&1)
if mount | grep -q " $(df --output=target "$dir" | tail -1) .*nosuid"; then
	echo "SKIP: $dir is on a nosuid file system"; exit 77
fi
case $out in
*"XPFO_OPTIONS=key=value"*|*"revoke=off"*)
	echo "FAIL: set-group-ID: XPFO_OPTIONS was read: $out"; fail=1 ;;
*"xpfo: warning: XPFO_OPTIONS ignored: privileged"*"privileged: ran"*)
	echo "ok: set-group-ID: XPFO_OPTIONS ignored, one warning line" ;;
*) echo "FAIL: set-group-ID: unexpected output: $out"; fail=1 ;;
esac
n=$(printf '%s\n' "$out" | grep -c '^xpfo:')
[ "$n" = 1 ] || { echo "FAIL: $n xpfo lines, expected 1"; fail=1; }
exit $fail
