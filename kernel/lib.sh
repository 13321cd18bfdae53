# kernel/lib.sh: sourced by build.sh, test.sh, check.sh and bench.sh.
#
# The kernel the series is for.  Trees and images live in
# $(kernel_cache)/$KERNEL_VERSION; the ccache directory is shared.
KERNEL_VERSION=6.12

# The cache directory: $XPFO_KERNEL_CACHE, else /var/cache/xpfo-kernel when
# it can be created and written, else ~/.cache/xpfo-kernel.
kernel_cache() {
	if [ -n "${XPFO_KERNEL_CACHE:-}" ]; then
		echo "$XPFO_KERNEL_CACHE"
	elif mkdir -p /var/cache/xpfo-kernel 2>/dev/null &&
	     [ -w /var/cache/xpfo-kernel ]; then
		echo /var/cache/xpfo-kernel
	else
		echo "${XDG_CACHE_HOME:-$HOME/.cache}/xpfo-kernel"
	fi
}

kernel_dir() { echo "$(kernel_cache)/$KERNEL_VERSION"; }

kernel_tarball() {
	echo "${XPFO_KERNEL_TARBALL:-/usr/src/linux-source-$KERNEL_VERSION.tar.xz}"
}
