#!/bin/sh
# service.sh - the example service (examples/parsed) on this machine's
# backend: 1,000 valid requests answered, 1,000 malformed ones refused with
# the service going on, and the injected overflow (parsed-bug) aimed at
# root's API key: the attempt is reported (the violation line), the secret
# is not returned, and the service answers the next request.  The same
# exploit against the baseline without xpfo (parsed-plain) returns the key:
# the test would see a leak.  And the plumbing: the socket is there only
# once the server listens (a listen held up by strace); out of descriptors
# each request gets an error line, and a failing accept is retried every
# 100 ms, not in a loop; a refused lock (fork mode) and the thread mode on
# the mprotect backend answer with their error lines; as process 1 of a
# PID namespace the server reaps its locked children's executors.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
dir=$top_builddir/examples/parsed
for p in parsed parsed-bug parsed-plain parsed-send; do
	[ -x "$dir/$p" ] || hard_error "$dir/$p not built"
done
trap 'kill $srv 2>/dev/null; rm -rf "$tmp"' EXIT
KEY=API-KEY-c0ffee5ecret42
export PARSED_API_KEY=$KEY
srv=

start() { # PROGRAM ARGS...: a server on $tmp/sock, its stderr in $tmp/log
	rm -f "$tmp/sock"
	"$@" "$tmp/sock" 2>"$tmp/log" &
	srv=$!
	for i in $(seq 100); do [ -S "$tmp/sock" ] && return; sleep 0.05; done
	hard_error "$1 did not start: $(cat "$tmp/log")"
}
stop() { kill $srv; wait $srv 2>/dev/null; srv=; }
send() { "$dir/parsed-send" "$@"; }

start "$dir/parsed"
out=$(send --load 1000 valid "$tmp/sock")
say "valid:     $out"
case $out in "1000 ok, 0 errors, 0 died, 0 failed"*) ;; *) fail "valid requests: $out" ;; esac
out=$(send --load 1000 malformed "$tmp/sock")
say "malformed: $out"
case $out in "0 ok, 1000 errors, 0 died, 0 failed"*) ;; *) fail "malformed requests: $out" ;; esac
echo '<a x="1"><b>hi</b><b/></a>' >"$tmp/req"
out=$(send "$tmp/sock" "$tmp/req")
[ "$out" = "ok root=a elements=3 attributes=1 depth=2 text=2 echo=a" ] || fail "one request: $out"
grep -v '^parsed: listening' "$tmp/log" >"$tmp/extra" && fail "server log: $(cat "$tmp/extra")"
stop

# The socket has its name only once the server listens: with a pause of
# 300 ms injected before its listen (strace), a client that finds the
# socket is served.  A server that binds the name itself refuses every
# request of that pause (two CI runs lost 191 and 302 of 1,000 requests,
# by their numbers refused at once: most likely the server held up there
# by the load).
if command -v strace >/dev/null 2>&1; then
	start strace -o "$tmp/strace" -e trace=listen -e inject=listen:delay_enter=300000 "$dir/parsed"
	out=$(send --load 20 valid "$tmp/sock")
	say "valid, listen delayed: $out"
	case $out in "20 ok, 0 errors, 0 died, 0 failed"*) ;; *) fail "listen delayed: $out" ;; esac
	grep -q '^listen(' "$tmp/strace" || fail "strace saw no listen: $(cat "$tmp/strace")"
	# the server is strace's child: it goes first (strace detaches from it)
	kill $(cat /proc/"$srv"/task/*/children 2>/dev/null) 2>/dev/null
	stop
else
	say "no strace: the listen-delay case is not run"
fi

# Out of descriptors (ulimit -n 6: the listening socket and a connection
# fit, a request's pipe does not): each request gets an error line, and
# the server says why.  Before, the request was dropped, or its reply lost
# to a reset (the request was never read).
start sh -c 'ulimit -n 6; exec "$0" "$@"' "$dir/parsed"
out=$(timeout 60 "$dir/parsed-send" --load 3 valid "$tmp/sock")
say "valid, no descriptor for a pipe: $out"
case $out in "0 ok, 3 errors, 0 died, 0 failed"*) ;; *) fail "no descriptor for a pipe: $out" ;; esac
n=$(grep -c '^parsed: pipe: Too many open files$' "$tmp/log")
[ "$n" = 3 ] || fail "$n of 3 pipe failures logged: $(cat "$tmp/log")"
stop
# With ulimit -n 4 accept itself fails: the server says so once and tries
# again every 100 ms, not in a loop (strace counts its accept4 calls over
# a second while a client waits: 10 here).
if command -v strace >/dev/null 2>&1; then
	start sh -c 'ulimit -n 4; exec "$0" "$@"' "$dir/parsed"
	(echo '<a/>' | timeout 5 "$dir/parsed-send" "$tmp/sock" >/dev/null 2>&1 &)
	sleep 0.3
	timeout -s INT 1 strace -c -e trace=accept4 -p "$srv" 2>"$tmp/strace-c"
	n=$(awk '$NF == "accept4" { print $4 }' "$tmp/strace-c")
	say "no descriptor for a connection: ${n:-no} accept4 calls in a second"
	[ -n "$n" ] && [ "$n" -le 50 ] || fail "accept4 calls in a second: ${n:-none}: $(cat "$tmp/strace-c")"
	n=$(grep -c '^parsed: accept: Too many open files (retrying every 100 ms)$' "$tmp/log")
	[ "$n" = 1 ] || fail "$n accept failures logged, expected 1: $(cat "$tmp/log")"
	stop
fi

# A lock that cannot be had (no room for its reserved segments): the child
# fails before it reads the request, and the client gets the error line
# (before: a reset).
start env XPFO_OPTIONS=lock_segments=65536 "$dir/parsed"
out=$(send "$tmp/sock" "$tmp/req" 2>&1)
case $out in "error: cannot lock the parser: "*) ;; *) fail "lock refused: '$out' ($(cat "$tmp/log"))" ;; esac
stop

# The thread mode needs pkeys: on mprotect the lock refuses (EPERM), and
# the client gets the error line (before: a reset, the worker had not read
# the request).
if ! XPFO_OPTIONS=verbose=1 "$dir/parsed" 2>&1 | grep -q 'backend pkeys'; then
	start "$dir/parsed" --mode=thread
	out=$(send "$tmp/sock" "$tmp/req" 2>&1)
	[ "$out" = "error: the parser failed: Operation not permitted" ] ||
		fail "thread mode on mprotect: '$out' ($(cat "$tmp/log"))"
	stop
fi

# As process 1 of a PID namespace (a container without an init), the
# server is where each locked child's executor goes when the child exits:
# it reaps them, at most the last request's is left (before: one zombie a
# request, 30 here).
if unshare -fp true 2>/dev/null; then
	start unshare -fp "$dir/parsed"
	out=$(send --load 30 valid "$tmp/sock")
	pid1=$(cat /proc/"$srv"/task/*/children)
	z=$(zombie_children "$pid1")
	say "as process 1: $out; $z zombie children"
	case $out in "30 ok, 0 errors, 0 died, 0 failed"*) ;; *) fail "as process 1: $out" ;; esac
	[ "$z" -le 1 ] || fail "as process 1: $z zombie children after 30 requests"
	kill -9 "$pid1" 2>/dev/null # process 1 of its namespace: SIGTERM is ignored
	stop
else
	say "no PID namespace here (unshare -p): the process-1 case is not run"
fi

# the overflow, aimed at the key's block and at its page run
exploit() { # SERVER: runs it, aims at both copies; stdout: the replies
	start "$@" --print-secrets
	addrs=$(sed -n 's/^parsed: secret at \(0x[0-9a-f]*\) and \(0x[0-9a-f]*\)$/\1 \2/p' "$tmp/log")
	[ -n "$addrs" ] || hard_error "no secret addresses: $(cat "$tmp/log")"
	for a in $addrs; do send --exploit "$a" "$tmp/sock"; done
	send "$tmp/sock" "$tmp/req"
	stop
}
exploit "$dir/parsed-plain" >"$tmp/plain"
grep -q "$KEY" "$tmp/plain" || fail "the exploit does not work without xpfo: $(cat "$tmp/plain")"
exploit "$dir/parsed-bug" >"$tmp/bug"
say "parsed-bug replies: $(tr '\n' '|' <"$tmp/bug")"
grep -q "$KEY" "$tmp/bug" "$tmp/log" && fail "the secret got out"
n=$(grep -c '^error: the parser died (Segmentation fault)$' "$tmp/bug")
[ "$n" = 2 ] || fail "$n of 2 exploit replies say the parser died"
tail -1 "$tmp/bug" | grep -q '^ok root=a ' || fail "no answer after the exploit"
n=$(grep -c '^xpfo: violation: read of 0x[0-9a-f]* owned by compartment "root" from thread [0-9]* in compartment "parser"$' "$tmp/log")
[ "$n" = 2 ] || fail "$n violation lines, expected 2: $(cat "$tmp/log")"
finish
