#!/bin/sh
# options-mdoc.sh - turn the option table that XPFO_OPTIONS=help prints
# (src/options.c, options_print_help) into mdoc list items for xpfo(7), so
# the manual and the code have one source.  Reads the help text on stdin:
#   "  name=range (default value)" then "      help text" per option.
# Lines "xpfo: ..." (warnings) go to stderr.  Any other line is an error: a change of the help format must not leave
# the manual silently empty.
LC_ALL=C awk '
function esc(s) { gsub(/\\/, "\\e", s); return s }
NR == 1 && /^XPFO_OPTIONS=/ { next }
/^xpfo: / { print > "/dev/stderr"; next } # a warning at start is not the table
/^  [a-z_]+=[^ ]+ \(default [^)]*\)$/ {
	sub(/^  /, "")
	eq = index($0, "=")
	name = substr($0, 1, eq - 1)
	rest = substr($0, eq + 1)
	sp = index(rest, " (default ")
	range = substr(rest, 1, sp - 1)
	def = substr(rest, sp + 10)
	sub(/\)$/, "", def)
	printf ".It Cm %s Ns = Ns Ar %s\n", name, esc(range)
	printf "Default:\n.Cm %s .\n", esc(def)
	n++
	next
}
/^      [^ ]/ { sub(/^ +/, ""); printf "\\&%s\n", esc($0); next }
{ printf "options-mdoc.sh: unexpected line %d: %s\n", NR, $0 > "/dev/stderr"; bad = 1 }
END {
	if (bad || n == 0) {
		if (n == 0) print "options-mdoc.sh: no options read" > "/dev/stderr"
		exit 1
	}
}'
