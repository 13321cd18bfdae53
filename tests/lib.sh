# lib.sh - shared helpers for xpfo's shell tests (sourced, POSIX sh).
#
# Environment (set by tests/local.mk through AM_TESTS_ENVIRONMENT):
#   XPFO_LIB   absolute path of the built libxpfo.so
#   XPFO_RUN   absolute path of the built xpfo-run wrapper
#   top_srcdir, top_builddir
# Exit codes follow automake: 0 pass, 77 skip, 99 hard error, 1 fail.

set -u
LC_ALL=C
export LC_ALL
: "${top_srcdir:=.}" "${top_builddir:=.}"
: "${XPFO_LIB:=$top_builddir/.libs/libxpfo.so}"
: "${XPFO_RUN:=$top_builddir/LD_PRELOAD/xpfo-run}"
me=$(basename "$0" .sh)
case $0 in */preload/*) me=preload-$me ;; esac # its messages and temporary directory
failures=0

say() { printf '%s: %s\n' "$me" "$*" >&2; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
hard_error() { say "ERROR: $*"; exit 99; }
skip() { say "SKIP: $*"; exit 77; }
finish() {
	if [ "$failures" -eq 0 ]; then say "PASS"; exit 0; fi
	say "$failures failure(s)"; exit 1
}

need_xpfo() {
	[ -f "$XPFO_LIB" ] || hard_error "libxpfo.so not built: $XPFO_LIB"
}

# The slowest real-program tests are skipped when CI asks (make check
# XPFO_SKIP_SLOW=1, used for the second, debug-build run of the suite).
skip_if_slow() {
	[ -z "${XPFO_SKIP_SLOW:-}" ] ||
		skip "XPFO_SKIP_SLOW is set (this test runs in the release build's make check)"
}

# need_prog PROG [DEBIAN-PACKAGE]: a missing program is a hard error (CI
# must install it), not a skip: these are the programs issue 2 names.
need_prog() {
	command -v "$1" >/dev/null 2>&1 ||
		hard_error "$1 not installed (Debian package: ${2:-$1})"
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/xpfo-$me.XXXXXX") || hard_error "mktemp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 99' HUP INT TERM

# The per-process stats xpfo prints at exit (XPFO_OPTIONS=stats=1) go to
# stderr, one report per process:
#   xpfo: stats (pid 123, backend mprotect, revoke=batched, batch=64)
#   xpfo:   allocations  N (small N, page runs N), frees N, live N bytes
#   xpfo:   revocation   queued N runs / N pages, cancelled N pages, revoked N pages
# zombie_children PID: how many zombies PID is the parent of (state and
# parent follow the name's closing parenthesis in /proc/N/stat; the
# orphans a process took in are not in its task/*/children).
zombie_children() {
	cat /proc/[0-9]*/stat 2>/dev/null | sed 's/^.*) //' | awk -v p="$1" '$1 == "Z" && $2 == p' | wc -l
}

# stat_reports FILE: how many reports FILE holds; stat_max KEY FILE: the
# largest value of allocs, frees or pages_revoked in one report (a forked
# child's report includes what its parent counted before the fork, so sums
# over processes would count twice).
stat_reports() {
	grep -c '^xpfo: stats (pid ' "$1"
}
stat_max() {
	awk -v k="$1" '
		function see(v) { v += 0; if (v > m) m = v }
		k == "allocs" && /^xpfo: +allocations +[0-9]/ { see($3) }
		k == "frees" && /^xpfo: +allocations / {
			if (match($0, /frees [0-9]+/)) see(substr($0, RSTART + 6, RLENGTH - 6))
		}
		k == "pages_revoked" && /^xpfo: +revocation / {
			if (match($0, /revoked [0-9]+ pages/)) see(substr($0, RSTART + 8, RLENGTH - 14))
		}
		END { printf "%.0f\n", m }' "$2"
}

# compare_run NAME WORKLOAD [ARGS...]
#   Runs the shell function WORKLOAD twice in a fresh directory $tmp/work
#   (same path both times, so outputs that name paths match): once with
#   RUN="" (the system malloc), once with RUN set to a command prefix that
#   runs the target program on xpfo with stats.  The workload prefixes the
#   programs under test with $RUN and writes what it wants compared to
#   stdout.  Checks: same exit status, identical stdout, no xpfo fatal or
#   warning line, and xpfo's stats show allocations (> 0) in the xpfo run.
#   PRELOAD_MODE=xpfo-run uses the wrapper instead of LD_PRELOAD=.
compare_run() {
	name=$1; shift
	work=$tmp/work
	rm -rf "$work"; mkdir -p "$work"
	t0=$(date +%s)
	(cd "$work" && RUN= && "$@") >"$tmp/$name.plain.out" 2>"$tmp/$name.plain.err"
	prc=$?
	t1=$(date +%s)
	rm -rf "$work"; mkdir -p "$work"
	if [ "${PRELOAD_MODE:-ld_preload}" = xpfo-run ]; then
		[ -x "$XPFO_RUN" ] || hard_error "xpfo-run not built: $XPFO_RUN"
		xrun="$XPFO_RUN --stats --"
	else
		xrun="env LD_PRELOAD=$XPFO_LIB XPFO_OPTIONS=stats=1${XPFO_EXTRA_OPTIONS:+,$XPFO_EXTRA_OPTIONS}"
	fi
	(cd "$work" && RUN=$xrun && "$@") >"$tmp/$name.xpfo.out" 2>"$tmp/$name.xpfo.err"
	xrc=$?
	t2=$(date +%s)
	say "$name: plain run $((t1 - t0)) s (exit $prc), xpfo run $((t2 - t1)) s (exit $xrc)"
	[ "$prc" -eq 0 ] || { fail "$name: the plain run failed (exit $prc)"; sed 's/^/  plain stderr: /' "$tmp/$name.plain.err" | tail -20 >&2; }
	[ "$prc" -eq "$xrc" ] || fail "$name: exit $xrc with xpfo, $prc without"
	if ! cmp -s "$tmp/$name.plain.out" "$tmp/$name.xpfo.out"; then
		fail "$name: stdout differs with xpfo"
		diff "$tmp/$name.plain.out" "$tmp/$name.xpfo.out" | head -20 >&2
	fi
	if grep -E 'xpfo: (fatal|warning)' "$tmp/$name.xpfo.err" >&2; then
		fail "$name: xpfo reported a problem (above)"
	fi
	allocs=$(stat_max allocs "$tmp/$name.xpfo.err")
	reports=$(stat_reports "$tmp/$name.xpfo.err")
	frees=$(stat_max frees "$tmp/$name.xpfo.err")
	revoked=$(stat_max pages_revoked "$tmp/$name.xpfo.err")
	say "$name: xpfo stats: $reports process report(s); largest: allocs $allocs, frees $frees, pages revoked $revoked"
	if [ "$reports" -eq 0 ]; then
		fail "$name: no xpfo stats report at all (did the program close stderr before exiting? XPFO_OPTIONS=stats=1 reports from a destructor on fd 2)"
		tail -20 "$tmp/$name.xpfo.err" >&2
	elif [ "$allocs" = 0 ]; then
		fail "$name: xpfo's stats show no allocations"
		grep '^xpfo: ' "$tmp/$name.xpfo.err" | head -20 >&2
	fi
	if [ "$xrc" -ne 0 ] || [ "$failures" -gt 0 ]; then
		sed 's/^/  xpfo stderr: /' "$tmp/$name.xpfo.err" | grep -v '^  xpfo stderr: xpfo' | tail -20 >&2
	fi
	return 0
}
