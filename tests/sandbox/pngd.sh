#!/bin/sh
# pngd.sh - the PNG service (examples/pngd) on this machine's backend:
# 1,000 valid files (made by libpng's writer, the expected reply computed
# from the pixels written) all answered correctly, 1,000 malformed ones (cut
# short or 1-3 bits flipped) all refused with an "error:" line and no dead
# decoder, one file through the socket and through --stdin, and the injected
# overflow (pngd-bug) aimed at root's secret: each attempt is reported (the
# violation line), the decoder dies, the service answers the next request,
# and the secret appears in no output.  The same exploit against the
# baseline without xpfo (pngd-plain) returns the secret: the test would see
# a leak.  A request past the size limit gets its error line.  The thread
# mode on the mprotect backend must refuse cleanly
# (the lock needs pkeys there; the QEMU rig runs it on pkeys).  And the
# socket is there only once the server listens (a listen held up by
# strace), and as process 1 of a PID namespace the server reaps its locked
# children's executors.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
dir=$top_builddir/examples/pngd
for p in pngd pngd-bug pngd-plain pngd-send; do
	[ -x "$dir/$p" ] || hard_error "$dir/$p not built"
done
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
SECRET=PNGD-SECRET-f00dface7e11
export PNGD_SECRET=$SECRET
srv=
mkdir "$tmp/out" # every output of every program, checked for the secret at the end

start() { # NAME PROGRAM ARGS...: a server on $tmp/sock, its stderr in $tmp/out/NAME.log
	log=$tmp/out/$1.log; shift
	rm -f "$tmp/sock"
	"$@" "$tmp/sock" 2>"$log" &
	srv=$!
	for i in $(seq 100); do [ -S "$tmp/sock" ] && return; sleep 0.05; done
	hard_error "$1 did not start: $(cat "$log")"
}
stop() { kill $srv; wait $srv 2>/dev/null; srv=; }
send() { "$dir/pngd-send" "$@"; }

# the files of the one-file checks: valid-1.png and its expected reply
send --write 1 valid "$tmp" || hard_error "pngd-send --write failed"

start service "$dir/pngd"
out=$(send --load 1000 valid "$tmp/sock" 2>>"$tmp/out/send.err")
echo "$out" >>"$tmp/out/send.out"
say "valid:     $out"
case $out in "1000 ok, 0 errors, 0 died, 0 failed, 0 wrong"*) ;; *) fail "valid files: $out" ;; esac
out=$(send --load 1000 malformed "$tmp/sock" 2>>"$tmp/out/send.err")
echo "$out" >>"$tmp/out/send.out"
say "malformed: $out"
case $out in "0 ok, 1000 errors, 0 died, 0 failed, 0 wrong"*) ;; *) fail "malformed files: $out" ;; esac
# a request past the size limit (8 MiB; 12 here) gets its error line: the
# rest is read before the reply (before: the connection closed on it, and
# the client died of SIGPIPE with no reply)
head -c $((12 << 20)) /dev/zero >"$tmp/big"
out=$(send "$tmp/sock" "$tmp/big" 2>&1)
say "12 MiB of zeros: $out"
case $out in "error: "*) ;; *) fail "a request past the limit: '$out'" ;; esac
rm -f "$tmp/big"
out=$(send "$tmp/sock" "$tmp/valid-1.png")
[ "$out" = "$(cat "$tmp/valid-1.txt")" ] || fail "one file: '$out', expected '$(cat "$tmp/valid-1.txt")'"
grep -v '^pngd: listening' "$tmp/out/service.log" >"$tmp/extra" && fail "server log: $(cat "$tmp/extra")"
stop

# the socket is there only once the server listens: its listen held up
# 300 ms (strace), a client that finds the socket is served
if command -v strace >/dev/null 2>&1; then
	start late strace -o "$tmp/strace" -e trace=listen -e inject=listen:delay_enter=300000 "$dir/pngd"
	out=$(send --load 20 valid "$tmp/sock" 2>>"$tmp/out/send.err")
	say "valid, listen delayed: $out"
	case $out in "20 ok, 0 errors, 0 died, 0 failed, 0 wrong"*) ;; *) fail "listen delayed: $out" ;; esac
	grep -q '^listen(' "$tmp/strace" || fail "strace saw no listen: $(cat "$tmp/strace")"
	kill $(cat /proc/"$srv"/task/*/children 2>/dev/null) 2>/dev/null # strace's child
	stop
else
	say "no strace: the listen-delay case is not run"
fi

# as process 1 of a PID namespace (no init), the server reaps its locked
# children's executors: at most the last request's is left
if unshare -fp true 2>/dev/null; then
	start pid1 unshare -fp "$dir/pngd"
	out=$(send --load 30 valid "$tmp/sock" 2>>"$tmp/out/send.err")
	pid1=$(cat /proc/"$srv"/task/*/children)
	z=$(zombie_children "$pid1")
	say "as process 1: $out; $z zombie children"
	case $out in "30 ok, 0 errors, 0 died, 0 failed, 0 wrong"*) ;; *) fail "as process 1: $out" ;; esac
	[ "$z" -le 1 ] || fail "as process 1: $z zombie children after 30 requests"
	kill -9 "$pid1" 2>/dev/null # process 1 of its namespace: SIGTERM is ignored
	stop
else
	say "no PID namespace here (unshare -p): the process-1 case is not run"
fi

# one-shot mode
out=$("$dir/pngd" --stdin <"$tmp/valid-1.png" 2>"$tmp/out/stdin.log")
[ "$out" = "$(cat "$tmp/valid-1.txt")" ] || fail "--stdin: '$out' ($(cat "$tmp/out/stdin.log"))"
[ -s "$tmp/out/stdin.log" ] && fail "--stdin wrote to stderr: $(cat "$tmp/out/stdin.log")"

# a lock that cannot be had fails the request, and says why (the warning
# on stderr, the reason in the reply): the decoder never runs unlocked
out=$(XPFO_OPTIONS=lock_segments=65536 "$dir/pngd" --mode=fork --stdin <"$tmp/valid-1.png" 2>"$tmp/out/nolock.log")
[ "$out" = "error: cannot lock the decoder: Cannot allocate memory" ] ||
	fail "a refused lock: '$out' ($(cat "$tmp/out/nolock.log"))"
grep -q '^xpfo: warning: sandbox: lock refused: ' "$tmp/out/nolock.log" ||
	fail "a refused lock, no warning: $(cat "$tmp/out/nolock.log")"

# the thread mode needs pkeys: on mprotect the lock refuses (EPERM: another
# thread is alive), and the service says so and goes on
if [ "$(XPFO_OPTIONS=verbose=1 "$dir/pngd" --stdin </dev/null 2>&1 | grep -c 'backend pkeys')" = 0 ]; then
	out=$("$dir/pngd" --mode=thread --stdin <"$tmp/valid-1.png" 2>"$tmp/out/thread.log")
	[ "$out" = "error: the decoder failed: Operation not permitted" ] ||
		fail "thread mode on mprotect: '$out' ($(cat "$tmp/out/thread.log"))"
fi

# the overflow, aimed at the secret's block and at its page run
exploit() { # NAME SERVER: runs it, aims at both copies; stdout: the replies
	start "$@" --print-secrets
	addrs=$(sed -n 's/^pngd: secret at \(0x[0-9a-f]*\) and \(0x[0-9a-f]*\)$/\1 \2/p' "$log")
	[ -n "$addrs" ] || hard_error "no secret addresses: $(cat "$log")"
	for a in $addrs; do send --exploit "$a" "$tmp/sock"; done
	send "$tmp/sock" "$tmp/valid-1.png"
	stop
}
# in fork mode, whatever the backend: a violation in a locked thread ends
# its whole process, so only a decoder in a child of its own can die and
# leave the service answering (the thread mode, pkeys' default, is the
# self-test's below)
exploit plain "$dir/pngd-plain" --mode=fork >"$tmp/plain"
grep -q "$SECRET" "$tmp/plain" || fail "the exploit does not work without xpfo: $(cat "$tmp/plain")"
exploit bug "$dir/pngd-bug" --mode=fork >"$tmp/out/bug.out"
say "pngd-bug replies: $(tr '\n' '|' <"$tmp/out/bug.out")"
n=$(grep -c '^error: the decoder died (Segmentation fault)$' "$tmp/out/bug.out")
[ "$n" = 2 ] || fail "$n of 2 exploit replies say the decoder died"
tail -1 "$tmp/out/bug.out" | cmp -s - "$tmp/valid-1.txt" || fail "no answer after the exploit"
n=$(grep -c '^xpfo: violation: read of 0x[0-9a-f]* owned by compartment "root" from thread [0-9]* in compartment "decoder"$' "$tmp/out/bug.log")
[ "$n" = 2 ] || fail "$n violation lines, expected 2: $(cat "$tmp/out/bug.log")"
# the same through the self-test in the backend's default mode (what the
# QEMU rig runs on pkeys: there the thread mode, each attempt in a serving
# process of its own)
"$dir/pngd-bug" --self-test-exploit >"$tmp/out/selftest.out" 2>"$tmp/out/selftest.log" ||
	fail "pngd-bug --self-test-exploit: $(cat "$tmp/out/selftest.out" "$tmp/out/selftest.log")"

# no output of any run above holds the secret
grep -l "$SECRET" "$tmp"/out/* >"$tmp/leaks" && fail "the secret got out: $(cat "$tmp/leaks")"
finish
