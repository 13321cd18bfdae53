#!/bin/sh
# fdlimit.sh - xpfo's own descriptors (the userfaultfd of release=uffd, the
# copy of stderr for stats=1, /proc/self/mem) never take the numbers a
# program's open gets: they live at the top of the table (src/os.c
# os_fd_high), and under a limit that leaves no room above the program's
# (ulimit -n 4) xpfo keeps none: release=uffd falls back to mprotect with
# one warning and the program runs as it does without xpfo.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || hard_error "python3 not installed (Debian package: python3)"

# N OPTIONS CMD...: CMD under ulimit -n N with descriptors 3-9 closed (make
# passes its jobserver's), on xpfo when OPTIONS is not "plain"
limited() {
	n=$1 o=$2
	shift 2
	if [ "$o" = plain ]; then
		sh -c 'exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-; ulimit -n "$1" && shift && exec "$@"' \
			sh "$n" "$@" >"$tmp/out" 2>"$tmp/err"
	else
		sh -c 'exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-; ulimit -n "$1" && shift && exec env "$@"' \
			sh "$n" XPFO_OPTIONS="$o" LD_PRELOAD="$XPFO_LIB" "$@" >"$tmp/out" 2>"$tmp/err"
	fi
	rc=$?
}

# 1. ulimit -n 4: ls opens the directory as descriptor 3, the only one free
limited 4 plain ls "$top_srcdir/src"
[ $rc -eq 0 ] || hard_error "ls under ulimit -n 4 fails without xpfo: $(cat "$tmp/err")"
cp "$tmp/out" "$tmp/want"
limited 4 release=uffd ls "$top_srcdir/src"
[ $rc -eq 0 ] || fail "ls under ulimit -n 4, release=uffd: exit $rc: $(cat "$tmp/err")"
cmp -s "$tmp/want" "$tmp/out" || fail "ls under ulimit -n 4, release=uffd: not its plain output"
[ "$(grep -c . "$tmp/err")" -eq 1 ] &&
	grep -qx "xpfo: warning: userfaultfd unavailable (errno 24: no descriptor free above the program's, ulimit -n): revoked pages are protected with mprotect" "$tmp/err" ||
	fail "ulimit -n 4, release=uffd: not the one fallback warning: $(cat "$tmp/err")"
# the default arms no userfaultfd at start: nothing to say
limited 4 "" ls "$top_srcdir/src"
[ $rc -eq 0 ] && cmp -s "$tmp/want" "$tmp/out" && [ ! -s "$tmp/err" ] ||
	fail "ls under ulimit -n 4, default options: exit $rc: $(cat "$tmp/err")"

# 2. Room above: the program's descriptors are the numbers it gets without
# xpfo (python3 opens 20 files: 3..22), xpfo's are in the top 32 below the
# limit (or 1024), and the program sees the userfaultfd there
OPENS='import os
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(20)]
print(fds)
for fd in fds: os.close(fd)
'
LIST='import os
for name in sorted(os.listdir("/proc/self/fd"), key=int):
    try: print(name, os.readlink("/proc/self/fd/" + name))
    except OSError: pass
'
for n in 64 1024; do
	top=$n
	[ "$top" -gt 1024 ] && top=1024
	limited "$n" plain "$PY" -c "$OPENS"
	[ $rc -eq 0 ] || hard_error "python3 under ulimit -n $n fails without xpfo: $(cat "$tmp/err")"
	cp "$tmp/out" "$tmp/want"
	limited "$n" release=uffd "$PY" -c "$OPENS"
	[ $rc -eq 0 ] && cmp -s "$tmp/want" "$tmp/out" && [ ! -s "$tmp/err" ] ||
		fail "ulimit -n $n, release=uffd: python3's descriptors are not its own: $(cat "$tmp/out" "$tmp/err")"
	limited "$n" release=uffd,stats=1 "$PY" -c "$LIST"
	uffd=$(awk '/anon_inode:\[userfaultfd\]/ { print $1 }' "$tmp/out")
	[ -n "$uffd" ] || fail "ulimit -n $n, release=uffd: no userfaultfd in /proc/self/fd: $(cat "$tmp/out")"
	for fd in $uffd; do
		[ "$fd" -ge $((top - 32)) ] && [ "$fd" -lt "$top" ] ||
			fail "ulimit -n $n: the userfaultfd is descriptor $fd, not in $((top - 32))..$((top - 1))"
	done
	# stats=1's copy of stderr: the other xpfo descriptor beside the userfaultfd
	high=$(awk -v lo=$((top - 32)) '$1 >= lo && $1 < lo + 32' "$tmp/out" | grep -c .)
	[ "$high" -eq 2 ] || fail "ulimit -n $n: $high descriptors in xpfo's range, not 2: $(cat "$tmp/out")"
	grep -q '^xpfo: stats (pid ' "$tmp/err" || fail "ulimit -n $n: no stats report"
	say "ulimit -n $n: userfaultfd at $uffd, python3's opens $(cat "$tmp/want")"
done
finish
