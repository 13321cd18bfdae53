#!/bin/sh
# options.sh - XPFO_OPTIONS parsing: good values take effect (seen in the
# stats header), unknown keys and bad values give one "xpfo: warning:" line
# and keep the default, and nothing breaks the program.  Also xpfo-run
# --help and --stats.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog perl perl-base
# A program that allocates (xpfo starts at the first allocation) and ends
# through exit() (the stats report is written by a destructor): perl.
PROG="perl -e my@a=(1)x1000;print(scalar(@a),qq(\\n))"
run() { # OPTIONS: runs $PROG on xpfo; stderr in $tmp/err, exit code in $rc
	XPFO_OPTIONS=$1 LD_PRELOAD=$XPFO_LIB $PROG >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$(cat "$tmp/out")" = 1000 ] || fail "XPFO_OPTIONS=$1: wrong output: $(cat "$tmp/out")"
}
header() { grep '^xpfo: stats (pid ' "$tmp/err" | head -1; }

# The defaults, from xpfo's own option table (XPFO_OPTIONS=help).
XPFO_OPTIONS=help LD_PRELOAD=$XPFO_LIB $PROG >/dev/null 2>"$tmp/help"
def_revoke=$(sed -n 's/^  revoke=.*(default \([a-z]*\)).*/\1/p' "$tmp/help")
def_batch=$(sed -n 's/^  batch=.*(default \([0-9]*\)).*/\1/p' "$tmp/help")
[ -n "$def_revoke" ] && [ -n "$def_batch" ] ||
	hard_error "XPFO_OPTIONS=help does not give the revoke and batch defaults: $(cat "$tmp/help")"
[ "$def_revoke" = batched ] || fail "the default revoke mode is $def_revoke, not batched"
defaults="revoke=$def_revoke, batch=$def_batch)"
say "defaults from XPFO_OPTIONS=help: $defaults"

run "stats=1"
[ $rc -eq 0 ] || fail "stats=1: exit $rc"
header | grep -qF "$defaults" ||
	fail "stats=1: the report does not show the defaults ($defaults): $(header)"
grep -q '^xpfo: warning' "$tmp/err" && fail "stats=1 warned: $(cat "$tmp/err")"

run "revoke=eager,batch=16,stats=1"
header | grep -q 'revoke=eager, batch=16)' || fail "revoke=eager,batch=16 not applied: $(header)"

run "revoke=off,stats=1"
header | grep -q 'revoke=off' || fail "revoke=off not applied: $(header)"
grep -q '^xpfo: warning' "$tmp/err" || fail "revoke=off is not warned about"

# release: auto by default; uffd arms the userfaultfd (or says in one
# warning that it cannot), mprotect never does; a bad value keeps the default
def_release=$(sed -n 's/^  release=.*(default \([a-z]*\)).*/\1/p' "$tmp/help")
[ -n "$def_release" ] || fail "XPFO_OPTIONS=help does not give the release default"
run "release=uffd,stats=1"
grep -q '^xpfo:   uffd         armed' "$tmp/err" ||
	[ "$(grep -c '^xpfo: warning: userfaultfd unavailable' "$tmp/err")" -eq 1 ] ||
	fail "release=uffd: neither armed nor one warning: $(cat "$tmp/err")"
run "release=mprotect,stats=1"
grep -q '^xpfo:   uffd' "$tmp/err" && fail "release=mprotect armed the userfaultfd"
grep -q '^xpfo: warning' "$tmp/err" && fail "release=mprotect warned: $(cat "$tmp/err")"
run "release=sometimes,stats=1"
grep -q '^xpfo: warning: option release: unknown value "sometimes", keeping the default' \
	"$tmp/err" || fail "release=sometimes: no warning: $(cat "$tmp/err")"
run "stats=1"
grep '^xpfo:   uffd' "$tmp/err" >"$tmp/uffd-default"
run "release=sometimes,stats=1"
[ "$(grep '^xpfo:   uffd' "$tmp/err" | sed 's/[0-9]* userfaultfd calls//')" = \
  "$(sed 's/[0-9]* userfaultfd calls//' "$tmp/uffd-default")" ] ||
	fail "release=sometimes did not keep the default ($def_release)"

# reserve=65536: 2^46 aligned to itself does not fit in a 47-bit address space
for bad in "nosuchkey=1" "revoke=sometimes" "release=sometimes" "batch=abc" "batch=" "stats=maybe" "revoke" ",,," \
	"reserve=65536" "reserve=3" "keep_empty=65537" "keep_empty=lots"; do
	run "$bad,stats=1"
	[ $rc -eq 0 ] || fail "XPFO_OPTIONS=$bad: exit $rc"
	n=$(grep -c '^xpfo: warning:' "$tmp/err")
	case $bad in
	",,,") [ "$n" -eq 0 ] || fail "XPFO_OPTIONS=$bad: $n warnings for empty items" ;;
	*) [ "$n" -ge 1 ] || fail "XPFO_OPTIONS=$bad: no 'xpfo: warning:' line" ;;
	esac
	header | grep -qF "$defaults" ||
		fail "XPFO_OPTIONS=$bad: defaults not kept: $(header)"
	grep -v '^xpfo: ' "$tmp/err" | grep . && fail "XPFO_OPTIONS=$bad: unexpected output"
done

# xpfo-run
if [ -x "$XPFO_RUN" ]; then
	"$XPFO_RUN" --help >"$tmp/help" 2>&1 || fail "xpfo-run --help: exit $?"
	grep -q 'revoke' "$tmp/help" || fail "xpfo-run --help does not document revoke"
	grep -q 'batch' "$tmp/help" || fail "xpfo-run --help does not document batch"
	"$XPFO_RUN" --stats -- $PROG >/dev/null 2>"$tmp/err" || fail "xpfo-run --stats -- perl: exit $?"
	header | grep -q . || fail "xpfo-run --stats printed no report"
	"$XPFO_RUN" --no-such-flag -- $PROG >/dev/null 2>&1 && fail "xpfo-run accepted an unknown flag"
else
	hard_error "xpfo-run not built: $XPFO_RUN"
fi
finish
