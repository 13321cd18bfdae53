#!/bin/sh
# sandbox.sh - requests per second of the example service (examples/parsed):
# locked (xpfo_lock_thread in a forked child per request), the same without
# the lock (the child enters the compartment, STRICT), and the baseline
# without xpfo (glibc's malloc, fork per request).  A benchmark, not a
# test: `make bench-sandbox` writes bench/results/sandbox.md.
#   sh bench/sandbox.sh [REQUESTS [ROUNDS]]   (default 1000 requests, 5 rounds)
# SANDBOX_BEFORE=BUILDDIR adds that build's locked and unlocked service to
# every round (a before/after comparison in one run); SANDBOX_OUT=FILE
# writes the table elsewhere.
set -eu
n=${1:-1000}
rounds=${2:-5}
dir=${top_builddir:-.}/examples/parsed
out=${SANDBOX_OUT:-${top_srcdir:-.}/bench/results/sandbox.md}
before=${SANDBOX_BEFORE:-}
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill $srv; rm -rf "$tmp"' EXIT

rate() { # SERVER ARGS...: one round, prints req/s
	rm -f "$tmp/sock"
	"$@" "$tmp/sock" 2>/dev/null &
	srv=$!
	while [ ! -S "$tmp/sock" ]; do sleep 0.05; done
	r=$("$dir/parsed-send" --load "$n" valid "$tmp/sock")
	kill $srv
	wait $srv 2>/dev/null || true
	srv=
	case $r in "$n ok,"*) ;; *) echo "sandbox.sh: $*: $r" >&2; exit 1 ;; esac
	echo "$r" | sed 's/.* \([0-9]*\) req\/s$/\1/'
}
median() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

row() { # LABEL SERVER ARGS...: rounds interleaved by the caller
	label=$1
	shift
	eval "v=\${res_$label:-}"
	eval "res_$label=\"$v $(rate "$@")\""
}
for i in $(seq "$rounds"); do
	row locked "$dir/parsed"
	row nolock "$dir/parsed" --no-lock
	row plain "$dir/parsed-plain"
	if [ -n "$before" ]; then
		row blocked "$before/examples/parsed/parsed"
		row bnolock "$before/examples/parsed/parsed" --no-lock
	fi
done
load=$(cut -d' ' -f1 /proc/loadavg)
{
	echo "# The example service: requests per second"
	echo
	echo "$(date -u +%Y-%m-%d), $(nproc) CPUs, load $load, $n valid requests per round, $rounds rounds"
	echo "interleaved, median (all rounds in brackets). \`sh bench/sandbox.sh $n $rounds\`."
	echo
	echo "| service | req/s | rounds |"
	echo "|---|---|---|"
	echo "| parsed, locked child (xpfo_lock_thread) | $(echo $res_locked | median) | $res_locked |"
	echo "| parsed, child in the compartment, no lock | $(echo $res_nolock | median) | $res_nolock |"
	echo "| parsed-plain, fork per request, no xpfo | $(echo $res_plain | median) | $res_plain |"
	if [ -n "$before" ]; then
		echo "| before ($before): locked child | $(echo $res_blocked | median) | $res_blocked |"
		echo "| before ($before): no lock | $(echo $res_bnolock | median) | $res_bnolock |"
	fi
	echo
	echo "Commit $(git -C "${top_srcdir:-.}" rev-parse --short HEAD 2>/dev/null || echo unknown), backend $(XPFO_OPTIONS=${XPFO_OPTIONS:+$XPFO_OPTIONS,}verbose=1 "${top_builddir:-.}/LD_PRELOAD/xpfo-run" -- true 2>&1 | sed -n 's/.*backend \([a-z]*\).*/\1/p' | head -1)${XPFO_OPTIONS:+, XPFO_OPTIONS=$XPFO_OPTIONS}."
} >"$out"
cat "$out"
