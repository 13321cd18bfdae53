#!/bin/sh
# tests/preload/gcc.sh - gcc compiling and linking a generated C file on xpfo
# (cc1, as, collect2 and ld all preloaded); the assembly, the program's
# output and the object's symbols must match the run without xpfo.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
skip_if_slow
need_prog gcc gcc

awk 'BEGIN {
	print "#include <stdio.h>\n#include <string.h>\n#include <stdlib.h>"
	for (f = 0; f < 250; f++) {
		printf "struct s%d { int a[%d]; double d; char name[%d]; };\n", f, 1 + f % 9, 8 + f % 17
		printf "static int f%d(int x) {\n  struct s%d v; memset(&v, 0, sizeof v);\n", f, f
		printf "  for (int i = 0; i < %d; i++) v.a[i %% %d] += x * i + %d;\n", 10 + f % 13, 1 + f % 9, f
		printf "  v.d = x / %d.0; snprintf(v.name, sizeof v.name, \"f%d-%%d\", x);\n", 1 + f % 5, f
		printf "  return v.a[0] + (int)v.d + (int)strlen(v.name) + (x > %d ? f%d(x - 1) : 0);\n}\n", f % 3, (f > 0 ? f - 1 : 0)
	}
	print "int main(void) {\n  long t = 0;"
	for (f = 0; f < 250; f += 7) printf "  t += f%d(%d);\n", f, f % 11
	print "  printf(\"%ld\\n\", t);\n  return 0;\n}"
}' >"$tmp/prog.c" || hard_error "cannot generate the C file"

gcc_workload() {
	cp "$tmp/prog.c" prog.c
	$RUN gcc -O2 -S -o prog.s prog.c || return 1
	$RUN gcc -O2 -Wall -o prog prog.c || return 1
	./prog
	cksum <prog.s
	$RUN gcc -O1 -g -c -o prog.o prog.c || return 1
	nm prog.o | awk '{ print $NF }' | sort | cksum
}
compare_run gcc gcc_workload
finish
