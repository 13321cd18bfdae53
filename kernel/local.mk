# kernel: the companion kernel series (memfd_secret pages leave the direct map
# in 2 MiB blocks), its build and its QEMU tests.  Not part of `make check`:
# it needs linux-source-6.12, qemu-system-x86, busybox-static, ccache, and
# builds two kernels on a cold cache.  See kernel/README.md.
EXTRA_DIST += kernel/README.md kernel/config.fragment kernel/config-debug.fragment \
	kernel/build.sh kernel/test.sh kernel/check.sh kernel/bench.sh kernel/lib.sh \
	kernel/ktest.c kernel/extra/pkey_smoke.c kernel/patches kernel/testing

# One boot per configuration at -smp 4 (see kernel/check.sh); the README's
# numbers come from make bench-kernel.
KERNEL_TEST_FLAGS =

.PHONY: check-kernel bench-kernel
check-kernel:
	$(SHELL) $(top_srcdir)/kernel/check.sh $(KERNEL_TEST_FLAGS)

# The measurements of kernel/README.md (long: many boots, -smp 8, 1 GiB of
# churn, the flush-deleted and debug kernels when built).
bench-kernel:
	$(SHELL) $(top_srcdir)/kernel/bench.sh
