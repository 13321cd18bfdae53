#!/bin/sh
# pngd.sh - requests per second of the PNG service (examples/pngd): locked
# (a forked child per request that moves the request in with xpfo_move,
# locks itself with xpfo_lock_thread and sends the reply with xpfo_send),
# the same without the lock (the child enters the STRICT compartment), and
# the baseline without xpfo (glibc's malloc, fork per request).  Each round
# sends the same REQUESTS valid files (libpng's writer, decode.c's
# generator, seeds 1..REQUESTS) through pngd-send --load, which checks every
# reply; the three services take turns, round after round.  A benchmark,
# not a test: `make bench-pngd` writes bench/results/pngd.md.
#   sh bench/pngd.sh [REQUESTS [ROUNDS]]   (default 1000 requests, 5 rounds)
# PNGD_BENCH_OUT=FILE writes the table elsewhere (a trial run).
set -eu
n=${1:-1000}
rounds=${2:-5}
dir=${top_builddir:-.}/examples/pngd
out=${PNGD_BENCH_OUT:-${top_srcdir:-.}/bench/results/pngd.md}
for p in pngd pngd-plain pngd-send; do
	[ -x "$dir/$p" ] || { echo "pngd.sh: $dir/$p not built (needs libpng-dev)" >&2; exit 1; }
done
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv; rm -rf "$tmp"' EXIT

rate() { # SERVER ARGS...: one round, prints req/s
	rm -f "$tmp/sock"
	"$@" "$tmp/sock" 2>"$tmp/log" &
	srv=$!
	i=0
	while [ ! -S "$tmp/sock" ]; do
		i=$((i + 1))
		[ $i -lt 200 ] || { echo "pngd.sh: $* did not start: $(cat "$tmp/log")" >&2; exit 1; }
		sleep 0.05
	done
	r=$("$dir/pngd-send" --load "$n" valid "$tmp/sock")
	kill $srv
	wait $srv 2>/dev/null || true
	srv=
	case $r in "$n ok, 0 errors, 0 died, 0 failed, 0 wrong,"*) ;; *) echo "pngd.sh: $*: $r" >&2; exit 1 ;; esac
	echo "$r" | sed 's/.* \([0-9]*\) req\/s$/\1/'
}
median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

row() { # LABEL SERVER ARGS...: rounds interleaved by the caller
	label=$1
	shift
	eval "v=\${res_$label:-}"
	eval "res_$label=\"$v $(rate "$@")\""
}
backend=$(XPFO_OPTIONS=verbose=1 "$dir/pngd" --stdin </dev/null 2>&1 | sed -n 's/.*backend \([a-z]*\).*/\1/p' | head -1)
load0=$(cut -d' ' -f1 /proc/loadavg)
for i in $(seq "$rounds"); do
	row locked "$dir/pngd" --mode=fork
	row nolock "$dir/pngd" --mode=fork --no-lock
	row plain "$dir/pngd-plain"
	[ "$backend" != pkeys ] || row thread "$dir/pngd" --mode=thread
done
load1=$(cut -d' ' -f1 /proc/loadavg)
commit=$(git -C "${top_srcdir:-.}" rev-parse --short HEAD 2>/dev/null || echo "?")
{
	echo "# The PNG service: requests per second"
	echo
	echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $load0 at start and $load1 at end,"
	echo "xpfo at $commit, backend $backend; $n valid files per round (every reply checked), $rounds rounds"
	echo "interleaved, median (all rounds in brackets). \`sh bench/pngd.sh $n $rounds\`"
	echo "(\`make bench-pngd\`)."
	echo
	echo "| service | req/s | rounds |"
	echo "|---|---|---|"
	echo "| pngd, locked child (xpfo_move in, xpfo_lock_thread, xpfo_send out) | $(echo $res_locked | median) | $res_locked |"
	echo "| pngd --no-lock, child in the STRICT compartment, no lock | $(echo $res_nolock | median) | $res_nolock |"
	echo "| pngd-plain, fork per request, no xpfo | $(echo $res_plain | median) | $res_plain |"
	if [ "$backend" = pkeys ]; then
		echo "| pngd --mode=thread, a locked thread per request (pkeys) | $(echo $res_thread | median) | $res_thread |"
	else
		echo
		echo "The thread mode (one locked thread per request, pkeys only) is not in"
		echo "the table on a machine without protection keys."
	fi
} >"$out"
cat "$out"
