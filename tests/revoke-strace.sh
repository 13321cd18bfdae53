#!/bin/sh
# revoke-strace.sh - count, with strace, the protection syscalls of freeing
# 10,000 page-sized allocations and flushing (tests/revoke --free-loop),
# with the default options and with revoke=eager.  Checks: strace sees
# exactly as many protection calls in the measured window as xpfo's
# counters report (revoke_syscalls + grant_syscalls), and the default makes
# at least 20x fewer than eager.  A protection call is an mprotect or
# pkey_mprotect, or (release=guard, the default where the kernel has guard
# markers) an madvise that installs (0x66, a revocation) or removes (0x67,
# a grant) guard markers, or a process_madvise that installs them for up to
# 64 spans (one revocation call).
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
command -v strace >/dev/null 2>&1 || hard_error "strace not installed (Debian package: strace)"
strace -f -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace processes here (ptrace not permitted)"
prog=$top_builddir/tests/revoke
[ -x "$prog" ] || hard_error "$prog not built"

count_window() { # FILE PATTERN: calls matching PATTERN between the markers
	awk -v pat="$2" '
		/xpfo-test-begin/ { on = 1; next }
		/xpfo-test-end/ { on = 0 }
		on && /resumed>/ { next }
		on && $0 ~ pat { n++ }
		END { print n + 0 }' "$1"
}
field() { sed -n "s/^$1=//p" "$2"; }

for mode in default eager; do
	if [ $mode = default ]; then
		env -u XPFO_OPTIONS strace -f -qq -o "$tmp/trace.$mode" \
			-e trace=mprotect,pkey_mprotect,madvise,process_madvise,write \
			"$prog" --free-loop 10000 4096 >"$tmp/out.$mode" 2>"$tmp/err.$mode"
	else
		env XPFO_OPTIONS=revoke=eager strace -f -qq -o "$tmp/trace.$mode" \
			-e trace=mprotect,pkey_mprotect,madvise,process_madvise,write \
			"$prog" --free-loop 10000 4096 >"$tmp/out.$mode" 2>"$tmp/err.$mode"
	fi
	rc=$?
	[ $rc -eq 0 ] || { cat "$tmp/err.$mode" >&2; hard_error "$mode: revoke --free-loop under strace failed (exit $rc)"; }
	grep -q xpfo-test-end "$tmp/trace.$mode" || hard_error "$mode: no end marker in the trace"
	all=$(count_window "$tmp/trace.$mode" '(^|[ ])((pkey_)?mprotect\(|(process_)?madvise\(.*, 0x6[67] )')
	none=$(count_window "$tmp/trace.$mode" '(^|[ ])((pkey_)?mprotect\(.*PROT_NONE|(process_)?madvise\(.*, 0x66 )')
	rs=$(field revoke_syscalls "$tmp/out.$mode")
	gs=$(field grant_syscalls "$tmp/out.$mode")
	pr=$(field pages_revoked "$tmp/out.$mode")
	say "$mode: strace: $all protection calls in the window ($none to PROT_NONE); counters: revoke_syscalls $rs, grant_syscalls $gs, pages_revoked $pr"
	[ "$all" -eq $((rs + gs)) ] ||
		fail "$mode: strace saw $all protection calls, the counters say $((rs + gs))"
	[ "$none" -eq "$rs" ] ||
		fail "$mode: strace saw $none calls to PROT_NONE, revoke_syscalls says $rs (pkeys backend: $(grep -c pkey_mprotect "$tmp/trace.$mode") pkey_mprotect lines)"
	eval "n_$mode=\$all"
done
[ "$n_default" -ge 1 ] || fail "default: no protection call at all in the window"
[ "$n_eager" -ge $((20 * n_default)) ] ||
	fail "eager made $n_eager protection calls, default $n_default: less than 20x"
say "protection syscalls (strace) for 10000 frees of 4096 B + xpfo_flush: default $n_default, eager $n_eager"

# A full flush that keeps every run (a block freed and taken again at once:
# 40,000 x 512 KiB flush every 31 frees) changes no VMA, so it does not
# count the process's VMAs (open and read /proc/self/maps): 23 opens before.
env -u XPFO_OPTIONS strace -f -qq -o "$tmp/trace.reuse" -e trace=open,openat \
	"$prog" --reuse-loop 40000 524288 >"$tmp/out.reuse" 2>"$tmp/err.reuse" ||
	{ cat "$tmp/err.reuse" >&2; hard_error "revoke --reuse-loop under strace failed"; }
maps=$(grep -c '/proc/self/maps' "$tmp/trace.reuse")
say "reuse loop (40000 x 512 KiB): /proc/self/maps opened $maps times"
[ "$maps" -le 4 ] || fail "reuse loop: /proc/self/maps opened $maps times (flushes that kept every run counted VMAs)"
finish
