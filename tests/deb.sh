#!/bin/sh
# deb.sh - the Debian packages (make check-deb; not in make check: it builds
# the whole package).  From the release tree (make distdir, so the tarball
# is enough to build them) dpkg-buildpackage -us -uc -b makes libxpfo0,
# libxpfo-dev and xpfo-tools; lintian finds no error; the packages,
# extracted with dpkg -x into a temporary root, work from there: xpfo-run
# (finding the root's library by itself) runs python3 with statistics, a
# program builds against the -dev files, the man pages render, and the
# version is the one of configure.ac everywhere.
# Environment: top_srcdir, top_builddir, VERSION, MAKE (from the make target);
# DEB_BUILD_OPTIONS as for any package build (default: the package's own
# fast tests run).
. "$top_srcdir/tests/lib.sh"
: "${MAKE:=make}" "${VERSION:?VERSION is not set (run make check-deb)}"
for p in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian python3:python3 man:man-db; do
	need_prog "${p%%:*}" "${p#*:}"
done

src=$tmp/xpfo-$VERSION
"$MAKE" -s -C "$top_builddir" distdir distdir="$src" >"$tmp/distdir.log" 2>&1 ||
	{ cat "$tmp/distdir.log" >&2; hard_error "make distdir failed"; }
(cd "$src" && nice -n 10 dpkg-buildpackage -us -uc -b) >"$tmp/build.log" 2>&1 ||
	{ tail -40 "$tmp/build.log" >&2; fail "dpkg-buildpackage failed"; finish; }
for p in libxpfo0 libxpfo-dev xpfo-tools; do
	set -- "$tmp/${p}_${VERSION}_"*.deb
	[ -f "$1" ] || { fail "no $p package"; continue; }
	dpkg -x "$1" "$tmp/root" || fail "dpkg -x $1"
done
say "built: $(cd "$tmp" && ls *.deb | tr '\n' ' ')"

lintian --fail-on error "$tmp"/xpfo_"$VERSION"_*.changes >"$tmp/lintian" 2>&1 ||
	fail "lintian reports errors"
grep -v 'running with root privileges' "$tmp/lintian" >&2
say "lintian: $(grep -c '^E:' "$tmp/lintian") errors, $(grep -c '^W:' "$tmp/lintian") warnings"

root=$tmp/root
run=$root/usr/bin/xpfo-run
[ -x "$run" ] || { fail "no usr/bin/xpfo-run in the packages"; finish; }
[ "$("$run" --version)" = "xpfo-run (xpfo) $VERSION" ] || fail "xpfo-run --version: $("$run" --version)"
changelog=$(cd "$src" && dpkg-parsechangelog -S Version)
[ "$changelog" = "$VERSION" ] || fail "debian/changelog is $changelog, configure.ac $VERSION"

# The brief's command, with nothing from the build tree in the environment.
unset XPFO_OPTIONS LD_PRELOAD
out=$(PYTHONMALLOC=malloc "$run" --stats -- python3 -c 'print(1)' 2>"$tmp/err") ||
	fail "xpfo-run --stats -- python3 exited $?"
[ "$out" = 1 ] || fail "python3 printed \"$out\", not 1"
grep -q '^xpfo: stats (pid ' "$tmp/err" || fail "no statistics from xpfo: $(cat "$tmp/err")"
allocs=$(sed -n 's/^xpfo:   allocations  \([0-9]*\) .*/\1/p' "$tmp/err" | head -1)
[ "${allocs:-0}" -gt 0 ] || fail "no allocations counted: $(cat "$tmp/err")"
# ... and the library xpfo-run preloaded is the extracted one.
"$run" -- cat /proc/self/maps >"$tmp/maps" || fail "xpfo-run -- cat failed"
grep -q " $root/usr/lib/.*/libxpfo\.so\.0" "$tmp/maps" ||
	fail "xpfo-run did not preload $root's library: $(grep xpfo "$tmp/maps")"
say "xpfo-run from the extracted root: python3 printed $out, $allocs allocations counted"

# libxpfo-dev: the header (with its version) and the library link a program.
libdir=$(dirname "$(find "$root/usr/lib" -name libxpfo.so | head -1)")
cat >"$tmp/v.c" <<'C'
#include <stdio.h>
#include <xpfo.h>
int main(void)
{
	printf("%s %d.%d.%d %s\n", XPFO_VERSION_STRING, XPFO_VERSION_MAJOR,
	       XPFO_VERSION_MINOR, XPFO_VERSION_PATCH, xpfo_backend());
	return 0;
}
C
${CC:-cc} -I"$root/usr/include" -o "$tmp/v" "$tmp/v.c" -L"$libdir" -lxpfo -lpthread ||
	fail "a program does not build against libxpfo-dev"
v=$(LD_LIBRARY_PATH=$libdir "$tmp/v") || fail "the libxpfo-dev program failed"
case "$v" in
"$VERSION $VERSION "*) say "libxpfo-dev: $v" ;;
*) fail "libxpfo-dev program printed \"$v\", version $VERSION" ;;
esac
grep -q "^Version: $VERSION\$" "$libdir/pkgconfig/xpfo.pc" || fail "xpfo.pc has not Version: $VERSION"

for m in man1/xpfo-run.1 man3/xpfo.3 man7/xpfo.7 man3/xpfo_enter.3; do
	f=$root/usr/share/man/$m.gz
	MANPAGER=cat man -l "$f" 2>&1 | grep -q '^NAME' || fail "$m does not render"
done
finish
