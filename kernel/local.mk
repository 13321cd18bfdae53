# kernel: the companion kernel patch (memfd_secret pages leave the direct map
# in batches), its build and its QEMU test.  Not part of `make check`: it
# needs linux-source-6.1, qemu-system-x86, busybox-static, ccache and ~6 min
# on a cold cache.  See kernel/README.md.
EXTRA_DIST += kernel/README.md kernel/config.fragment kernel/build.sh \
	kernel/test.sh kernel/check.sh kernel/lib.sh kernel/ktest.c kernel/extra/pkey_smoke.c \
	kernel/patches

# Two boots per configuration keep the warm path near two minutes; the
# README's numbers use --boots 7 (make check-kernel KERNEL_TEST_FLAGS=...).
KERNEL_TEST_FLAGS = --boots 2

.PHONY: check-kernel
check-kernel:
	$(SHELL) $(top_srcdir)/kernel/check.sh $(KERNEL_TEST_FLAGS)
