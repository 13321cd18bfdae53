# kernel/lib.sh: sourced by build.sh, test.sh and check.sh.
#
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
