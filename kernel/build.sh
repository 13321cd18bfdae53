#!/bin/sh
# kernel/build.sh: build a minimal x86-64 Linux 6.12 kernel from Debian's
# linux-source-6.12, once as shipped ("base") and once with the patch series
# in kernel/patches/ applied ("patched").
#
# Usage: kernel/build.sh [--variant base|patched|both|noflush|debug|debug-base]
#                        [--w1]
#                        [--jobs N]
#
#   noflush  the series plus kernel/testing/noflush.patch, which deletes the
#            block flush: the kernel the lower-bound check must reject
#   debug    the series with config.fragment plus config-debug.fragment
#            (LOCKDEP, KASAN, DEBUG_PAGEALLOC, DEBUG_VM, MEMCG)
#   debug-base  the kernel as shipped with the debug configuration: the
#            reference the debug kernel's interrupt counts are judged against
#            (the debug options make flushes of their own)
#
# Everything is kept outside the clone, in $XPFO_KERNEL_CACHE
# (default /var/cache/xpfo-kernel), under a directory per kernel version:
#   6.12/src/base/      pristine tree, built in place (never modified)
#   6.12/src/patched/   the same tree with the series applied, built in place
#   6.12/src/noflush/, 6.12/src/debug/   the two test-only variants
#   ccache/             compiler cache shared by all trees
#   6.12/bzImage-VARIANT   the results
# In-tree builds use relative paths only, so both trees hit the same ccache
# entries for every file the series does not touch: the second tree costs
# little on a cold cache, and a repeated run rebuilds nothing.
#
# --w1 rebuilds every object the series changes with W=1, in both trees,
# and fails if the patched one has a warning the base one does not.
set -eu

die() { echo "kernel/build.sh: error: $*" >&2; exit 1; }
log() { echo "kernel/build.sh: $*" >&2; }

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cache=$(kernel_cache)
kdir=$(kernel_dir)
tarball=$(kernel_tarball)
variant=both
jobs=2
w1=0

while [ $# -gt 0 ]; do
	case $1 in
	--variant) [ $# -ge 2 ] || die "--variant needs an argument"
		variant=$2; shift 2 ;;
	--jobs) [ $# -ge 2 ] || die "--jobs needs an argument"
		jobs=$2; shift 2 ;;
	--w1) w1=1; shift ;;
	-h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done
case $variant in base|patched|both|noflush|debug|debug-base) ;; *) die "bad --variant: $variant" ;; esac
case $jobs in ''|*[!0-9]*) die "bad --jobs: $jobs" ;; esac

[ -r "$tarball" ] || die "$tarball not found: apt-get install linux-source-$KERNEL_VERSION"
for tool in gcc make flex bison bc xz tar patch sha256sum; do
	command -v $tool >/dev/null 2>&1 || die "$tool not found"
done
[ -r /usr/include/libelf.h ] || die "libelf.h not found: apt-get install libelf-dev"
[ -r /usr/include/openssl/ssl.h ] || die "openssl headers not found: apt-get install libssl-dev"

if command -v ccache >/dev/null 2>&1; then
	cc="ccache gcc"
	export CCACHE_DIR="$cache/ccache"
	export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
	export CCACHE_NOHASHDIR=1
	export CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime
else
	log "warning: ccache not found (apt-get install ccache); builds will be slow"
	cc=gcc
fi

# Fixed build identity, so that repeated builds produce the same objects.
export KBUILD_BUILD_TIMESTAMP='Thu Jan  1 00:00:00 UTC 2026'
export KBUILD_BUILD_USER=xpfo KBUILD_BUILD_HOST=xpfo KBUILD_BUILD_VERSION=1

mkdir -p "$kdir/src"
tar_id=$(stat -c '%s %Y' "$tarball")
main_series=$(ls "$here"/patches/*.patch 2>/dev/null | grep -v '/0000-' || true)
[ -n "$main_series" ] || die "no patches in $here/patches"

# series_of VARIANT, fragments_of VARIANT: what each tree is made of.
series_of() {
	case $1 in
	base|debug-base) ;;
	noflush) echo "$main_series $here/testing/noflush.patch" ;;
	*) echo "$main_series" ;;
	esac
}
fragments_of() {
	case $1 in
	debug|debug-base) echo "$here/config.fragment $here/config-debug.fragment" ;;
	*) echo "$here/config.fragment" ;;
	esac
}

# extract_tree DIR: a fresh pristine tree in DIR.
extract_tree() {
	log "extracting $tarball into $1"
	rm -rf "$1" "$1.tmp"
	mkdir -p "$1.tmp"
	tar -xJf "$tarball" -C "$1.tmp" --strip-components=1
	echo "$tar_id" >"$1.tmp/.xpfo-tarball"
	mv "$1.tmp" "$1"
}

# seed_tree DIR [FROM]: a copy of the built tree FROM (default base; a real
# copy: the build rewrites objects in place).  Patching it then rebuilds only
# what the series touches, which is much faster than a ccache-assisted full
# build (debug-base is seeded from debug: same configuration, series reversed).
seed_tree() {
	from=${2:-base}
	log "copying the built $from tree into $1"
	rm -rf "$1" "$1.tmp"
	cp -a "$kdir/src/$from" "$1.tmp"
	mv "$1.tmp" "$1"
}

# apply_series DIR: make DIR carry exactly the current series.  The applied
# patches are kept in DIR/.xpfo-series/ so that a changed series is first
# reversed (touching only the files it changed), then the new one applied.
# A tree that does not take a patch cleanly is extracted afresh.
apply_series() {
	tree=$1
	series=$2
	series_id=$(cat $series /dev/null | sha256sum | cut -d' ' -f1)
	if [ -d "$tree/.xpfo-series" ]; then
		if [ "$(cat "$tree/.xpfo-series-id" 2>/dev/null)" = "$series_id" ]; then
			return 0
		fi
		log "reversing the previously applied series in $tree"
		for p in $(ls "$tree/.xpfo-series" | sort -r); do
			if ! patch -d "$tree" -p1 -R -s --no-backup-if-mismatch \
				<"$tree/.xpfo-series/$p"; then
				log "reversal failed; re-extracting $tree"
				extract_tree "$tree"
				break
			fi
		done
		rm -rf "$tree/.xpfo-series" "$tree/.xpfo-series-id"
	fi
	log "applying $(echo "$series" | wc -l) patch(es) to $tree"
	mkdir -p "$tree/.xpfo-series"
	for p in $series; do
		if ! patch -d "$tree" -p1 -s --no-backup-if-mismatch <"$p"; then
			rm -f "$tree/.xpfo-tarball"	# dirty: extract next time
			die "$(basename "$p") does not apply to linux-source-$KERNEL_VERSION"
		fi
		cp "$p" "$tree/.xpfo-series/"
	done
	echo "$series_id" >"$tree/.xpfo-series-id"
}

# configure_tree DIR FRAGMENTS: tinyconfig + fragments, checked line by line.
configure_tree() {
	tree=$1
	frags=$2
	frag_id=$(cat $frags | sha256sum | cut -d' ' -f1)
	if [ -f "$tree/.config" ] &&
	   [ "$(cat "$tree/.xpfo-config-id" 2>/dev/null)" = "$frag_id" ]; then
		return 0
	fi
	log "configuring $tree"
	make -s -C "$tree" ARCH=x86_64 CC="$cc" tinyconfig >/dev/null
	(cd "$tree" && ARCH=x86_64 scripts/kconfig/merge_config.sh -m \
		.config $frags >/dev/null)
	make -s -C "$tree" ARCH=x86_64 CC="$cc" olddefconfig >/dev/null
	bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) want=$line ;;
		"# CONFIG_"*" is not set") want=$line ;;
		*) continue ;;
		esac
		if ! grep -qxF "$want" "$tree/.config"; then
			log "config mismatch: wanted '$want'"
			bad=1
		fi
	done <<EOF
$(cat $frags)
EOF
	[ $bad = 0 ] || die "the config fragment did not survive olddefconfig"
	echo "$frag_id" >"$tree/.xpfo-config-id"
}

build_tree() {
	name=$1
	tree="$kdir/src/$name"
	if [ ! -f "$tree/.xpfo-tarball" ] ||
	   [ "$(cat "$tree/.xpfo-tarball")" != "$tar_id" ]; then
		from=base
		[ "$name" = debug-base ] && from=debug
		if [ "$name" != base ] && [ -f "$kdir/src/$from/vmlinux" ] &&
		   [ "$(cat "$kdir/src/$from/.xpfo-tarball" 2>/dev/null)" = "$tar_id" ]; then
			seed_tree "$tree" "$from"
		else
			extract_tree "$tree"
		fi
	fi
	[ "$name" = base ] || apply_series "$tree" "$(series_of "$name")"
	configure_tree "$tree" "$(fragments_of "$name")"
	log "building $name ($jobs jobs)"
	start=$(date +%s)
	make -s -C "$tree" ARCH=x86_64 CC="$cc" -j"$jobs" bzImage ||
		die "$name kernel build failed"
	cp "$tree/arch/x86/boot/bzImage" "$kdir/bzImage-$name.tmp"
	mv "$kdir/bzImage-$name.tmp" "$kdir/bzImage-$name"
	log "$name: $kdir/bzImage-$name ($(($(date +%s) - start)) s)"
}

# w1_check: rebuild every object the series touches with W=1 in both trees
# and compare the warnings: the series may add none.
w1_check() {
	files=$(grep -h '^+++ b/.*\.c$' $main_series | sed 's|^+++ b/||' | sort -u)
	[ -n "$files" ] || { log "W=1: series touches no .c file"; return 0; }
	status=0
	for f in $files; do
		obj=${f%.c}.o
		cmd=$(dirname "$obj")/.$(basename "$obj").cmd
		for name in base patched; do
			tree="$kdir/src/$name"
			: >"$kdir/w1-$name.txt"
			[ -f "$tree/$f" ] || continue
			# Keep the normal object, so that the next build
			# does not see changed flags and relink.
			for x in "$obj" "$cmd"; do
				[ -f "$tree/$x" ] && cp -p "$tree/$x" "$tree/$x.xpfo-keep"
			done
			rm -f "$tree/$obj"
			make -s -C "$tree" ARCH=x86_64 CC=gcc W=1 "$obj" \
				2>"$kdir/w1-$name.log" >/dev/null ||
				die "W=1 build of $obj failed in $name"
			for x in "$obj" "$cmd"; do
				[ -f "$tree/$x.xpfo-keep" ] && mv "$tree/$x.xpfo-keep" "$tree/$x"
			done
			# Line numbers move with the patch; compare the messages.
			sed -n 's/^[^:]*:[0-9]*:[0-9]*: warning: //p' \
				"$kdir/w1-$name.log" | sort >"$kdir/w1-$name.txt"
		done
		new=$(comm -13 "$kdir/w1-base.txt" "$kdir/w1-patched.txt")
		if [ -n "$new" ]; then
			log "W=1: new warnings in $f:"
			cat "$kdir/w1-patched.log" >&2
			status=1
		else
			log "W=1: $f: no new warnings ($(wc -l <"$kdir/w1-patched.txt") in total)"
		fi
	done
	return $status
}

case $variant in
base) build_tree base ;;
patched) build_tree patched ;;
both) build_tree base; build_tree patched ;;
*) build_tree "$variant" ;;
esac
if [ $w1 = 1 ]; then
	w1_check || die "W=1 found new warnings"
fi
if [ -n "${CCACHE_DIR:-}" ]; then
	ccache -s 2>/dev/null | grep -Ei '^ *(hits|misses)|cache hit' >&2 || true
fi
