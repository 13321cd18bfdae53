#!/bin/sh
# tests/prefix.sh - README's "Building from source" and "Using it" from a
# prefix the dynamic linker does not search (issue 34): a copy of the
# source tree is configured with --prefix into a temporary directory, built
# and installed; a program is built with README's own rpath line (taken
# from README.md, PKG_CONFIG_PATH pointing at the prefix) and runs without
# LD_LIBRARY_PATH, on the installed library; the same program built without
# the run path does not start, and starts with README's LD_LIBRARY_PATH.
. "${top_srcdir:-.}/tests/lib.sh"
need_xpfo
need_prog pkg-config
skip_if_slow

line=$(grep -- '-Wl,-rpath,' "$top_srcdir/README.md" | sed 's/^ *//' | head -1)
case $line in
cc\ prog.c\ *) ;;
*) fail "README.md has no 'cc prog.c ... -Wl,-rpath,...' line"; finish ;;
esac

# The source tree (a configured one is configured again in the copy).
mkdir "$tmp/src" "$tmp/prefix"
(cd "$top_srcdir" && tar --exclude=./.git -cf - .) | (cd "$tmp/src" && tar xf -) ||
	hard_error "cannot copy the source tree"
(cd "$tmp/src" && { [ -x configure ] || autoreconf -fi; } &&
	./configure -q --prefix="$tmp/prefix" &&
	make -j2 && make install) > "$tmp/build.log" 2>&1 ||
	{ tail -20 "$tmp/build.log" >&2; hard_error "configure, make or make install failed"; }
[ -f "$tmp/prefix/lib/pkgconfig/xpfo.pc" ] || fail "no xpfo.pc in the prefix"

cat > "$tmp/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <xpfo.h>

int main(void)
{
	char *p = malloc(100);
	xpfo_compartment_t *owner = xpfo_owner(p);
	printf("%s %s\n", xpfo_backend(), owner ? xpfo_compartment_name(owner) : "none");
	free(p);
	return 0;
}
EOF

PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
export PKG_CONFIG_PATH
unset LD_LIBRARY_PATH || true
# README's line, as written, in the program's directory
(cd "$tmp" && eval "$line") > "$tmp/cc.log" 2>&1 ||
	{ cat "$tmp/cc.log" >&2; fail "README's line failed: $line"; finish; }
out=$("$tmp/a.out" 2> "$tmp/run.err") ||
	{ cat "$tmp/run.err" >&2; fail "the program built with README's line does not run"; }
case $out in
mprotect\ root|pkeys\ root) ;;
*) fail "the program printed '$out'" ;;
esac
# the library it loaded is the installed one
ldd "$tmp/a.out" | grep -q "libxpfo.so.0 => $tmp/prefix/lib/libxpfo.so.0" ||
	fail "a.out does not load the prefix's library: $(ldd "$tmp/a.out" | grep xpfo)"

# without the run path it does not start; with LD_LIBRARY_PATH it does
(cd "$tmp" && cc -o b.out prog.c $(pkg-config --cflags --libs xpfo)) > "$tmp/cc2.log" 2>&1 ||
	{ cat "$tmp/cc2.log" >&2; fail "pkg-config --cflags --libs alone does not build"; }
if ldconfig -p 2>/dev/null | grep -q 'libxpfo\.so\.0'; then
	say "a libxpfo.so.0 is installed system-wide: the failure without a run path is not checked"
elif "$tmp/b.out" > /dev/null 2> "$tmp/b.err"; then
	fail "b.out ran without a run path"
else
	grep -q 'libxpfo.so.0' "$tmp/b.err" || fail "b.out failed otherwise: $(cat "$tmp/b.err")"
fi
out=$(LD_LIBRARY_PATH="$(pkg-config --variable=libdir xpfo)" "$tmp/b.out") ||
	fail "b.out does not run with LD_LIBRARY_PATH"
[ "$out" = "${out% root} root" ] || fail "b.out with LD_LIBRARY_PATH printed '$out'"
say "built in $tmp/prefix; '$line' runs: $out"
finish
