#!/bin/sh
# reserve.sh - the heap reservation under an address-space limit (ulimit -v):
# a smaller power of two is reserved when the asked size does not fit (said
# with verbose=1; a warning when reserve= was given), programs run, and the
# fatal line remains for when not even the smallest (1 GiB) fits.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog perl perl-base
# allocates small and large blocks (a 64 MiB string) and prints 1000
PROG='perl -e my@a=(1)x1000;my$s=q(x)x(64<<20);print(scalar(@a),qq(\n))'
limited() { # KIB OPTIONS CMD...: CMD under ulimit -v KIB; stderr in $tmp/err
	kib=$1 o=$2
	shift 2
	# only CMD runs on xpfo (env sets it up after the limit)
	sh -c 'ulimit -v "$1" && shift && exec env "$@"' sh "$kib" XPFO_OPTIONS="$o" \
		LD_PRELOAD="$XPFO_LIB" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

# without xpfo the limit is no problem for these programs
sh -c "ulimit -v 4000000 && exec /bin/true" || hard_error "ulimit -v 4000000 is refused here"

limited 4000000 "" /bin/true
[ $rc -eq 0 ] || fail "/bin/true under ulimit -v 4000000: exit $rc: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "/bin/true under ulimit -v 4000000 said: $(cat "$tmp/err")"

limited 4000000 "" $PROG
[ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = 1000 ] ||
	fail "perl under ulimit -v 4000000: exit $rc, output $(cat "$tmp/out"): $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "perl under ulimit -v 4000000 said: $(cat "$tmp/err")"

limited 4000000 "verbose=1" /bin/true
grep -q '^xpfo: .*64 GiB did not fit' "$tmp/err" ||
	fail "verbose=1 does not say the heap was made smaller: $(cat "$tmp/err")"
grep -q '^xpfo: warning' "$tmp/err" && fail "the default reserve warned: $(cat "$tmp/err")"

limited 4000000 "reserve=16" /bin/true
[ $rc -eq 0 ] || fail "reserve=16 under ulimit -v 4000000: exit $rc"
grep -q '^xpfo: warning: .*16 GiB' "$tmp/err" ||
	fail "reserve=16 made smaller without a warning: $(cat "$tmp/err")"

# not even 1 GiB (whose aligned reservation maps 2 GiB for a moment)
limited 1000000 "" /bin/true
[ $rc -ne 0 ] || fail "/bin/true under ulimit -v 1000000 ran without a heap"
grep -qx 'xpfo: fatal: cannot reserve 64 GiB for the heap, nor any power of two down to 1 GiB (errno 12)' \
	"$tmp/err" || fail "ulimit -v 1000000: not the reserve fatal: $(cat "$tmp/err")"

# the largest value the option takes (bad ones: tests/options.sh)
XPFO_OPTIONS=reserve=32768,verbose=1 LD_PRELOAD=$XPFO_LIB $PROG >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "reserve=32768: $(cat "$tmp/err")"
grep -q 'warning' "$tmp/err" && fail "reserve=32768 warned: $(cat "$tmp/err")"
finish
