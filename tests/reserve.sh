#!/bin/sh
# reserve.sh - the heap reservation under an address-space limit (ulimit -v):
# a smaller power of two is reserved when the asked size does not fit (said
# with verbose=1; a warning when reserve= was given or the heap is under
# 1 GiB), real programs (ls, python3, sort) run with 64 MiB of address space
# more than they need without xpfo, and the fatal line remains for when not
# even the smallest heap (16 MiB) fits.
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

# Real programs, each under limits of 40 MiB to 1.1 GB more than it needs
# without xpfo (found here: the smallest multiple of 4 MiB it runs in):
# the output of an unlimited run, and on stderr nothing or the one warning
# that says the heap's size.  Before the heap could go below 1 GiB (whose
# reservation mapped 2 GiB for a moment) all of them aborted.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || hard_error "python3 not installed (Debian package: python3)"
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "%d %x\n", (i * 7919) % 100003, i }' >"$tmp/lines"
run_ls() { ls -l /usr/bin /usr/lib; }
run_py() { "$PY" -c 'import json, zlib; d = json.dumps([{"k%d" % i: list(range(i % 50))} for i in range(20000)]); print(len(d), zlib.crc32(d.encode()))'; }
run_sort() { sort -k2 "$tmp/lines"; }
plain_need() { # CMD: the smallest multiple of 4 MiB (KiB) that CMD runs in, plain
	for mib in 4 8 12 16 20 24 28 32 40 48 64 96 128 256; do
		if (ulimit -v $((mib * 1024)) && "$@") >/dev/null 2>&1; then
			echo $((mib * 1024))
			return
		fi
	done
	hard_error "$* does not run under ulimit -v 256 MiB without xpfo"
}
export TMPDIR="$tmp" # sort's temporary files
for prog in run_ls run_py run_sort; do
	$prog >"$tmp/want" 2>&1 || hard_error "$prog failed without xpfo"
	need=$(plain_need $prog)
	for extra in 40 64 96 256 1100; do
		kib=$((need + extra * 1024))
		(ulimit -v $kib && XPFO_OPTIONS= LD_PRELOAD=$XPFO_LIB $prog) >"$tmp/out" 2>"$tmp/err"
		rc=$?
		what="$prog under ulimit -v $kib ($extra MiB over the $need KiB it needs)"
		[ $rc -eq 0 ] || fail "$what: exit $rc: $(head -3 "$tmp/err")"
		cmp -s "$tmp/want" "$tmp/out" || fail "$what: not the output it gives without xpfo"
		if [ -s "$tmp/err" ]; then
			[ "$(grep -c . "$tmp/err")" -eq 1 ] &&
				grep -Eqx 'xpfo: warning: heap: 64 GiB did not fit in the address space \(ulimit -v\?\), the heap is [0-9]+ MiB' "$tmp/err" ||
				fail "$what: stderr is not the one warning saying the heap's size: $(head -5 "$tmp/err")"
		elif [ "$extra" -lt 1024 ]; then
			fail "$what: no warning that the heap is small"
		fi
		say "$what: exit $rc, $(cat "$tmp/err")"
	done
done

# a heap placed without mapping twice its size is still aligned to its size
# (the seccomp rules of xpfo_lock_thread match it with one masked compare)
for mib in 36 52 84; do # 16, 32 and 64 MiB heaps (the tight path: 2x does not fit)
	limited $((mib * 1024)) verbose=1 /bin/true
	line=$(grep '^xpfo: heap 0x' "$tmp/err")
	base=$(echo "$line" | sed -n 's/^xpfo: heap \(0x[0-9a-f]*\)\.\..*/\1/p')
	size=$(echo "$line" | sed -n 's/.* (\([0-9]*\) MiB).*/\1/p')
	[ $rc -eq 0 ] && [ -n "$base" ] && [ -n "$size" ] ||
		{ fail "ulimit -v $((mib * 1024)): no heap line: $(cat "$tmp/err")"; continue; }
	[ $((base % (size << 20))) -eq 0 ] ||
		fail "ulimit -v $((mib * 1024)): heap at $base is not aligned to its $size MiB"
	say "ulimit -v $((mib * 1024)): heap of $size MiB at $base"
done

# not even the smallest heap (16 MiB) with its metadata
limited 16000 "" /bin/true
[ $rc -ne 0 ] || fail "/bin/true under ulimit -v 16000 ran without a heap"
grep -qx 'xpfo: fatal: cannot reserve 64 GiB for the heap, nor any power of two down to 16 MiB (errno 12)' \
	"$tmp/err" || fail "ulimit -v 16000: not the reserve fatal: $(cat "$tmp/err")"

# the largest value the option takes (bad ones: tests/options.sh)
XPFO_OPTIONS=reserve=32768,verbose=1 LD_PRELOAD=$XPFO_LIB $PROG >"$tmp/out" 2>"$tmp/err"
[ $? -eq 0 ] || fail "reserve=32768: $(cat "$tmp/err")"
grep -q 'warning' "$tmp/err" && fail "reserve=32768 warned: $(cat "$tmp/err")"
finish
