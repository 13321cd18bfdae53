#!/bin/sh
# bench/baselines/mimalloc-secure.sh: mimalloc in secure mode (MI_SECURE=ON:
# guard pages, encoded free lists, randomized allocation, double-free
# checks), the hardened allocator the benchmarks' "mimalloc-secure" column
# preloads.  Debian packages no secure build, so this one is built from
# Debian's own source package of the libmimalloc2.0 installed here (the
# "mimalloc" column), configured as its debian/rules does, plus MI_SECURE.
#
# Usage: bench/baselines/mimalloc-secure.sh [--cached] [--version V] [--jobs N]
#
#   (none)     print the library's path, building it first unless the cache
#              has it (a cached build uses no network)
#   --cached   build nothing: print the path where the library is or would
#              be; exit 1 with the reason on stderr when it is not there
#              (bench/run.py asks this way)
#   --version  the source version (default: the installed libmimalloc2.0's)
#   --jobs     make -jN (default 2)
#
# Only the path goes to stdout; what it does goes to stderr.
#
# Source: `apt-get source --download-only mimalloc=V` with a sources file
# and lists of its own (deb.debian.org and security.debian.org, the
# release's codename; the machine's apt configuration is not changed):
# apt checks the Release file's signature with debian-archive-keyring and
# the .dsc's and tarballs' hashes against the signed index.  `dpkg-source
# -x` checks the tarballs against the .dsc and applies Debian's patches; it
# checks the .dsc's own signature only where debian-keyring is installed
# (then a bad one stops the build).
# Build: Debian's flags (dpkg-buildflags with debian/rules' hardening=+all
# and -Wall -pedantic), cmake with debian/rules' options (RelWithDebInfo,
# shared library only, MI_OVERRIDE on, so that LD_PRELOAD replaces malloc)
# and -DMI_SECURE=ON, stripped as dh_strip does.  The result must print
# "secure level: 4" under MIMALLOC_VERBOSE=1 and export malloc.  When the
# version is the one installed, the same sources are also built without
# MI_SECURE and their .text held against the installed libmimalloc.so.2.0
# (build-info.txt says whether it is the same; a difference, e.g. from a
# newer compiler than the package's, is a warning).
#
# Cache: $XPFO_BENCH_CACHE, else /var/cache/xpfo-bench when it can be
# created and written, else ${XDG_CACHE_HOME:-~/.cache}/xpfo-bench.  The
# library is DIR/mimalloc-secure-V/libmimalloc-secure.so, build-info.txt
# beside it (hashes, options, flags); a failed build leaves its reason in
# DIR/mimalloc-secure-V/failed, which --cached repeats.
#
# Exit: 0, the path printed; 1 it cannot (no network, a tool missing, the
# version not in Debian's index, the build failed), with the reason; 2 usage.
set -eu
me=mimalloc-secure.sh
log() { echo "$me: $*" >&2; }
fail_file=
die() {
	echo "$me: error: $*" >&2
	[ -z "$fail_file" ] || echo "$*" >"$fail_file" 2>/dev/null || :
	exit 1
}
usage() { echo "$me: $*" >&2; exit 2; }

# the options debian/rules gives cmake (amd64), then the secure build's;
# a cached library built with other options is built again
DEBIAN_OPTIONS="-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMI_BUILD_STATIC=OFF -DMI_BUILD_OBJECT=OFF \
-DMI_BUILD_TESTS=OFF -DMI_INSTALL_TOPLEVEL=ON -DMI_USE_LIBATOMIC=OFF"
RECIPE="$DEBIAN_OPTIONS -DMI_OVERRIDE=ON -DMI_SECURE=ON"

cached=0
version=
jobs=2
while [ $# -gt 0 ]; do
	case $1 in
	--cached) cached=1; shift ;;
	--version|--jobs)
		[ $# -ge 2 ] || usage "$1 needs an argument"
		case $1 in --version) version=$2 ;; --jobs) jobs=$2 ;; esac
		shift 2 ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) usage "unknown argument: $1 (see --help)" ;;
	esac
done
case $jobs in ''|*[!0-9]*|0) usage "--jobs: bad number '$jobs'" ;; esac

if [ -z "$version" ]; then
	version=$(dpkg-query -W -f '${db:Status-Abbrev}${Version}' libmimalloc2.0 2>/dev/null |
		sed -n 's/^ii *//p')
	[ -n "$version" ] || die "libmimalloc2.0 is not installed, and the secure build is of its version (apt-get install libmimalloc2.0, or --version V)"
fi
case $version in *[!A-Za-z0-9.+~:-]*|'') usage "--version: bad version '$version'" ;; esac

if [ -n "${XPFO_BENCH_CACHE:-}" ]; then
	cache=$XPFO_BENCH_CACHE
elif mkdir -p /var/cache/xpfo-bench 2>/dev/null && [ -w /var/cache/xpfo-bench ]; then
	cache=/var/cache/xpfo-bench
else
	cache=${XDG_CACHE_HOME:-$HOME/.cache}/xpfo-bench
fi
dir=$cache/mimalloc-secure-$version
lib=$dir/libmimalloc-secure.so
info=$dir/build-info.txt

is_cached() {
	[ -r "$lib" ] && [ -r "$info" ] && grep -qxF "recipe: $RECIPE" "$info"
}

if [ $cached = 1 ]; then
	echo "$lib"
	is_cached && exit 0
	if [ -r "$lib" ]; then
		log "$lib was built with other options: make bench-baselines builds it again"
	elif [ -s "$dir/failed" ]; then
		log "not built: $(head -n 1 "$dir/failed") (make bench-baselines tries again)"
	else
		log "not built: make bench-baselines (or bench/baselines/$me) builds it"
	fi
	exit 1
fi

mkdir -p "$dir" 2>/dev/null || die "cannot create $dir (set XPFO_BENCH_CACHE)"
[ -w "$dir" ] || die "$dir is not writable (set XPFO_BENCH_CACHE)"
fail_file=$dir/failed
# one build at a time (make -j runs the bench targets' prerequisites at once)
if command -v flock >/dev/null 2>&1; then
	exec 9>"$dir/.lock"
	flock 9
fi
if is_cached; then
	echo "$lib"
	exit 0
fi

for tool in apt-get dpkg-source dpkg-buildflags dpkg-architecture cmake make cc strip nm objdump objcopy sha256sum; do
	command -v $tool >/dev/null 2>&1 && continue
	case $tool in
	dpkg-source|dpkg-buildflags|dpkg-architecture) die "$tool not found: apt-get install dpkg-dev" ;;
	cmake) die "cmake not found: apt-get install cmake" ;;
	cc|make) die "$tool not found: apt-get install build-essential" ;;
	strip|nm|objdump|objcopy) die "$tool not found: apt-get install binutils" ;;
	*) die "$tool not found" ;;
	esac
done
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -r "$keyring" ] || die "$keyring not found: apt-get install debian-archive-keyring"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || die "no VERSION_CODENAME in /etc/os-release: not a Debian release this script knows"

tmp=$(mktemp -d "$dir/build.XXXXXX") || die "cannot create a directory in $dir"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
# apt as root downloads as the user _apt: it must be able to write there
chmod 755 "$tmp"
mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/apt/sources" "$tmp/dl"
cat >"$tmp/apt/sources/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: $keyring

Types: deb-src
URIs: http://security.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: $keyring
EOF
if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
	chown _apt "$tmp/dl"
fi
apt() {
	apt-get -q -o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$tmp/apt/sources" \
		-o Dir::State::Lists="$tmp/apt/lists" -o Dir::Cache="$tmp/apt/cache" \
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= "$@"
}

log "fetching Debian's source index ($codename)..."
apt update >"$tmp/update.log" 2>&1 || {
	sed 's/^/  /' "$tmp/update.log" >&2
	die "apt-get update of Debian's source index failed (no network?)"
}
if grep -q '^Err:' "$tmp/update.log"; then
	grep -E '^(Err|W|E):|^ ' "$tmp/update.log" | sed 's/^/  /' >&2
	set -- "$tmp/apt/lists/"*"_${codename}_main_source_Sources"*
	[ -e "$1" ] ||
		die "cannot fetch Debian's source index from deb.debian.org (no network?)"
	log "(some indexes could not be fetched; going on with the others)"
fi
log "downloading mimalloc $version..."
(cd "$tmp/dl" && apt source --download-only "mimalloc=$version") >"$tmp/source.log" 2>&1 || {
	sed 's/^/  /' "$tmp/source.log" >&2
	die "apt-get source mimalloc=$version failed (not in $codename's index, or no network)"
}
set -- "$tmp"/dl/mimalloc_*.dsc
dsc=$1
[ -r "$dsc" ] || die "apt-get source left no .dsc"

# dpkg-source checks the tarballs against the .dsc; the .dsc's signature
# only with the keyring of Debian's developers
sigopt=
if [ -r /usr/share/keyrings/debian-keyring.gpg ]; then
	sigopt=--require-valid-signature
	sigwhat="checked by dpkg-source with debian-keyring"
else
	sigwhat="not checked (no debian-keyring); its hash is checked by apt against the signed index"
fi
log "unpacking (dpkg-source -x)..."
dpkg-source $sigopt -x "$dsc" "$tmp/src" >"$tmp/unpack.log" 2>&1 || {
	sed 's/^/  /' "$tmp/unpack.log" >&2
	die "dpkg-source -x $(basename "$dsc") failed"
}

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
# The installed libmimalloc2.0 of this version: the same sources built
# without MI_SECURE as debian/rules builds them are held against it, which
# shows that the recipe is Debian's (the same code in .text, when the
# compiler is the one the package was built with)
installed=/usr/lib/$multiarch/libmimalloc.so.2.0
plain=0
[ "$(dpkg-query -W -f '${db:Status-Abbrev}${Version}' libmimalloc2.0 2>/dev/null)" != "ii $version" ] ||
	[ ! -r "$installed" ] || plain=1
log "building (cmake, make -j$jobs)..."
obj=obj-$multiarch
(
	cd "$tmp/src"
	# debian/rules' flags; debhelper's cmake build adds CPPFLAGS to CFLAGS
	DEB_BUILD_MAINT_OPTIONS=hardening=+all DEB_CFLAGS_MAINT_APPEND="-Wall -pedantic"
	export DEB_BUILD_MAINT_OPTIONS DEB_CFLAGS_MAINT_APPEND
	CFLAGS="$(dpkg-buildflags --get CFLAGS) $(dpkg-buildflags --get CPPFLAGS)"
	LDFLAGS=$(dpkg-buildflags --get LDFLAGS)
	export CFLAGS LDFLAGS
	echo "CFLAGS=$CFLAGS" >"$tmp/flags"
	echo "LDFLAGS=$LDFLAGS" >>"$tmp/flags"
	# $RECIPE, $DEBIAN_OPTIONS: split at spaces on purpose
	cmake -S . -B "$obj" -G "Unix Makefiles" -DCMAKE_INSTALL_PREFIX=/usr \
		-DCMAKE_INSTALL_LIBDIR="lib/$multiarch" $RECIPE &&
		make -C "$obj" -j"$jobs" VERBOSE=1 &&
		if [ "$plain" = 1 ]; then
			# Debian's own build, to hold against the installed library
			cmake -S . -B "$obj-plain" -G "Unix Makefiles" -DCMAKE_INSTALL_PREFIX=/usr \
				-DCMAKE_INSTALL_LIBDIR="lib/$multiarch" $DEBIAN_OPTIONS &&
				make -C "$obj-plain" -j"$jobs" VERBOSE=1
		fi
) >"$tmp/build.log" 2>&1 || {
	tail -n 30 "$tmp/build.log" | sed 's/^/  /' >&2
	die "the build failed (the lines above are the end of its log)"
}
# the real file, not the soname's link: libmimalloc-secure.so.2.0
built=$tmp/src/$obj/libmimalloc-secure.so.2.0
for f in "$tmp/src/$obj"/libmimalloc-secure.so.*; do
	[ -L "$f" ] || built=$f
done
[ -r "$built" ] || die "the build made no libmimalloc-secure.so.*"
cp "$built" "$tmp/lib.so"
# as dh_strip does for the package's library
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$tmp/lib.so"

# the result: a malloc to preload, in secure mode
nm -D --defined-only "$tmp/lib.so" | grep -qw malloc ||
	die "the library exports no malloc (MI_OVERRIDE off?)"
level=$(MIMALLOC_VERBOSE=1 LD_PRELOAD="$tmp/lib.so" /bin/true 2>&1 |
	sed -n 's/.*secure level: \([0-9]*\).*/\1/p' | head -n 1)
[ "$level" = 4 ] || die "the library does not say 'secure level: 4' under MIMALLOC_VERBOSE=1 (got '${level:-nothing}')"

text_sha() { # the sha256 of a library's .text
	objcopy -O binary --only-section=.text "$1" "$tmp/text" && sha256sum <"$tmp/text" | cut -d' ' -f1
}
same="not made (libmimalloc2.0 $version is not installed)"
if [ $plain = 1 ]; then
	cp "$tmp/src/$obj-plain/libmimalloc.so.2.0" "$tmp/plain.so"
	strip --remove-section=.comment --remove-section=.note --strip-unneeded "$tmp/plain.so"
	a=$(text_sha "$tmp/plain.so" || :)
	b=$(text_sha "$installed" || :)
	if [ -n "$a" ] && [ "$a" = "$b" ]; then
		same="the same .text as $installed (sha256 $a)"
	else
		same="a .text other than $installed's (sha256 ${a:-?} against ${b:-?}): another compiler than the package's?"
		log "warning: Debian's recipe built here gives $same"
	fi
fi

{
	echo "mimalloc $version from Debian's source package, secure build (bench/baselines/$me)"
	echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -srm), $(cc --version | head -n 1)"
	echo "recipe: $RECIPE"
	cat "$tmp/flags"
	echo "secure level: $level (MIMALLOC_VERBOSE=1)"
	echo "the same sources without MI_SECURE, as debian/rules builds them: $same"
	echo ".dsc signature: $sigwhat"
	echo "sources (sha256):"
	(cd "$tmp/dl" && sha256sum -- *) | sed 's/^/  /'
	echo "library: $(basename "$built"), soname $(objdump -p "$tmp/lib.so" 2>/dev/null | sed -n 's/^ *SONAME *//p')"
	echo "sha256: $(sha256sum <"$tmp/lib.so" | cut -d' ' -f1)"
} >"$tmp/build-info.txt"
mv -f "$tmp/lib.so" "$lib"
mv -f "$tmp/build-info.txt" "$info"
rm -f "$dir/failed"
log "built $lib (secure level $level)"
echo "$lib"
