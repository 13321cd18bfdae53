#!/bin/sh
# metrics.sh - the code's shape stays as the structure issue left it
# (tools/metrics.py --check): no function in src/, alloc/, api/, arch/ or
# LD_PRELOAD/ over 60 lines, no reference from a file to a higher layer
# (src arch | alloc | api | LD_PRELOAD, and inside alloc/ the layers of
# metrics.py's ALLOC_LAYERS), no circle of references across directories,
# no system call made in alloc/, api/ or LD_PRELOAD/ but through src/os.h
# (metrics.py's RAW_CALLS: there a test can make it fail).
# No history in the library's comments or docs/design.md (git has it): no
# "issue N", no commit hash, no date, no "before -> after" figures.  Then
# that each check fails on a copy of the sources given an upward reference
# inside alloc/, a file of alloc/ in no layer, a raw system call (in
# alloc/ and in api/), or a line of history.
# Every file of the library is named in design.md's layer picture.
# Skipped (77) without python3.
command -v python3 >/dev/null 2>&1 || exit 77
top=${top_srcdir:-$(dirname "$0")/..}
python3 "$top/tools/metrics.py" --root "$top" --check --max-lines 60 || {
	echo "metrics: see above (a function over 60 lines, an upward reference, a circle across directories or a raw system call)" >&2
	exit 1
}

# history DIR: the lines of history in DIR's library sources and design.md
history() {
	files=$(cd "$1" && find src alloc api arch LD_PRELOAD include -name '*.[ch]' | sort) || return 99
	(cd "$1" && {
		grep -nE '[Ii]ssues? #?[0-9]+|\bthe [a-z-]+ issue\b|\b20[0-9]{2}-[01][0-9]-[0-3][0-9]\b|\b(January|February|March|April|May|June|July|August|September|October|November|December) 20[0-9]{2}\b|[0-9] ?(->|→) ?[0-9]' \
			$files docs/design.md
		# a commit hash: 7 to 40 hex digits, letters and digits both
		grep -noE '\b[0-9a-f]{7,40}\b' $files docs/design.md |
			awk -F: '$3 ~ /[a-f]/ && $3 ~ /[0-9]/ && $3 != "0123456789abcdef"'
	})
}
if [ -n "$(history "$top")" ]; then
	history "$top" >&2
	echo "metrics: history in a library comment or docs/design.md (above): say the reason, not the story" >&2
	exit 1
fi

# unpictured DIR: the library's files (src/, alloc/, api/, LD_PRELOAD/)
# that the layer picture of DIR's docs/design.md does not name
unpictured() {
	sed -n '/^## Layers/,/^## /p' "$1/docs/design.md" >"$tmp/picture" || return 99
	(cd "$1" && find src alloc api LD_PRELOAD -name '*.[ch]' | sort) |
		while read -r f; do
			grep -qw "${f##*/}" "$tmp/picture" || echo "$f"
		done
}
tmp=$(mktemp -d) || exit 99
trap 'rm -rf "$tmp"' EXIT
if [ -n "$(unpictured "$top")" ]; then
	unpictured "$top" >&2
	echo "metrics: files above are in no row of docs/design.md's layer picture" >&2
	exit 1
fi
copy() {
	rm -rf "$tmp/tree" && mkdir "$tmp/tree" &&
	(cd "$top" && find src alloc api arch LD_PRELOAD include -name '*.[ch]' | tar cf - -T -) |
		(cd "$tmp/tree" && tar xf -) || exit 99
}
# must_fail WHAT PATTERN: the check on the copy fails and says PATTERN
must_fail() {
	if python3 "$top/tools/metrics.py" --root "$tmp/tree" --check >"$tmp/out" 2>&1; then
		echo "metrics: $1 passed the check" >&2
		exit 1
	fi
	grep -q "$2" "$tmp/out" || {
		echo "metrics: $1 failed the check without saying \"$2\":" >&2
		cat "$tmp/out" >&2
		exit 1
	}
}
# the bottom layer (owner.c) calls up into compartment.c
copy
printf 'void owner_probe(void);\nvoid owner_probe(void)\n{\n\tcomp_create("probe", 0);\n}\n' \
	>>"$tmp/tree/alloc/owner.c"
must_fail "owner.c calling comp_create" "upward in alloc/: alloc/owner.c -> alloc/compartment.c"
# pages.c reads a global of gather.c's
copy
printf 'unsigned pages_probe(void);\nunsigned pages_probe(void)\n{\n\treturn destroy_serial;\n}\n' \
	>>"$tmp/tree/alloc/pages.c"
must_fail "pages.c reading destroy_serial" "upward in alloc/: alloc/pages.c -> alloc/gather.c"
# a new file of alloc/ not placed in a layer
copy
printf 'int probe_new(void);\nint probe_new(void)\n{\n\treturn 0;\n}\n' >"$tmp/tree/alloc/probe.c"
must_fail "alloc/probe.c" "not placed in a layer of alloc/"
# a raw system call in alloc/ (the executor's kill, made directly again),
# and one in api/ (syscall(2) itself); a function pointer named like one
# (x->read) is not a call of it
copy
printf 'void exec_probe(long pid);\nvoid exec_probe(long pid)\n{\n\tkill(pid, 9);\n}\n' \
	>>"$tmp/tree/alloc/executor.c"
must_fail "executor.c calling kill" "raw system call: alloc/executor.c:[0-9]*: kill"
copy
printf 'long api_probe(void);\nlong api_probe(void)\n{\n\treturn syscall(39);\n}\n' \
	>>"$tmp/tree/api/api.c"
must_fail "api.c calling syscall" "raw system call: api/api.c:[0-9]*: syscall"
copy
printf 'struct probe_ops { long (*read)(int); };\nlong probe_ops_read(struct probe_ops *o);\nlong probe_ops_read(struct probe_ops *o)\n{\n\treturn o->read(0);\n}\n' \
	>>"$tmp/tree/alloc/executor.c"
python3 "$top/tools/metrics.py" --root "$tmp/tree" --check >"$tmp/out" 2>&1 || {
	echo "metrics: a function pointer named read was taken for a system call:" >&2
	cat "$tmp/out" >&2
	exit 1
}
# history put in, each kind once
for line in '/* counted here (issue 12) */' '/* since 4e1d94f */' '/* until 2026-11-30 */' \
	'/* hash 6 -> 8 */'; do
	copy
	mkdir -p "$tmp/tree/docs" && : >"$tmp/tree/docs/design.md"
	echo "$line" >>"$tmp/tree/alloc/pages.c"
	[ -n "$(history "$tmp/tree")" ] || {
		echo "metrics: the history check missed $line" >&2
		exit 1
	}
done
# a new file of alloc/ that the layer picture does not name
copy
mkdir -p "$tmp/tree/docs" && cp "$top/docs/design.md" "$tmp/tree/docs/" || exit 99
: >"$tmp/tree/alloc/probe.c"
[ "$(unpictured "$tmp/tree")" = alloc/probe.c ] || {
	echo "metrics: the picture check missed alloc/probe.c" >&2
	exit 1
}
exit 0
