# tests/qemu: the QEMU rig.  This machine's CPU has no protection keys, so
# pkey code is tested in a guest whose emulated CPU has them (QEMU TCG,
# -cpu max).  tests/qemu/run.sh boots Debian's kernel once with an
# initramfs of busybox-static and statically linked test programs; see
# tests/qemu/README.
#
# To run a test program in the guest: build it statically (LDFLAGS
# -all-static, libtool's spelling of -static that also takes libxpfo.la's
# .libs/libxpfo.a), list it in check_PROGRAMS, and append it to
# QEMU_TEST_BINARIES (after this file is included, or here):
#
#   check_PROGRAMS += tests/foo-static
#   tests_foo_static_SOURCES = tests/foo.c $(tests_common)
#   tests_foo_static_LDADD = libxpfo.la -lpthread
#   tests_foo_static_LDFLAGS = -all-static
#   QEMU_TEST_BINARIES += tests/foo-static$(EXEEXT)
#
# Every program listed runs in the same single boot of
# tests/qemu/pkeys-rig.sh (exit 0 pass, 77 skip, else fail).

# The arch/ unit test (pure PKRU/POR_EL0 encodings, siginfo layout, probe,
# arch_fault_is_write): on the host, and in the guest where keys work.
check_PROGRAMS += tests/qemu/arch-unit
tests_qemu_arch_unit_SOURCES = tests/qemu/arch-unit.c
tests_qemu_arch_unit_LDFLAGS = -all-static

# The pkeys facts test: SKIP (77) on a host without keys, PASS in the guest.
check_PROGRAMS += tests/qemu/pkeys-fault
tests_qemu_pkeys_fault_SOURCES = tests/qemu/pkeys-fault.c
tests_qemu_pkeys_fault_LDADD = -lpthread
tests_qemu_pkeys_fault_LDFLAGS = -all-static

# An allocator test linked statically with libxpfo (.libs/libxpfo.a).
check_PROGRAMS += tests/qemu/alloc-smoke
tests_qemu_alloc_smoke_SOURCES = tests/qemu/alloc-smoke.c
tests_qemu_alloc_smoke_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_qemu_alloc_smoke_LDADD = libxpfo.la -lpthread
tests_qemu_alloc_smoke_LDFLAGS = -all-static

# The programs of the one boot, relative to the build directory.
QEMU_TEST_BINARIES = tests/qemu/arch-unit$(EXEEXT) \
	tests/qemu/pkeys-fault$(EXEEXT) tests/qemu/alloc-smoke$(EXEEXT)
AM_TESTS_ENVIRONMENT += \
	QEMU_TEST_BINARIES='$(QEMU_TEST_BINARIES)'; export QEMU_TEST_BINARIES;

TESTS += tests/qemu/arch-unit tests/qemu/pkeys-fault tests/qemu/arch-arm64.sh \
	tests/qemu/pkeys-rig.sh
EXTRA_DIST += tests/qemu/README tests/qemu/run.sh tests/qemu/pkeys-rig.sh \
	tests/qemu/arch-arm64.sh

# make check-qemu: only the boot, as make check runs it (QEMU_FLAGS go to
# run.sh, e.g. QEMU_FLAGS='--keep-log /tmp/log').
.PHONY: check-qemu
check-qemu: $(QEMU_TEST_BINARIES)
	cd $(top_builddir) && QEMU_TEST_BINARIES='$(QEMU_TEST_BINARIES)' \
		XPFO_QEMU_FLAGS='$(QEMU_FLAGS)' top_srcdir='$(abs_top_srcdir)' \
		top_builddir=. $(SHELL) $(abs_top_srcdir)/tests/qemu/pkeys-rig.sh

# The same suites in the guest, on both backends: static builds of the
# allocator tests (TU_STATIC: the API by direct reference, not dlsym),
# each run once per backend in the one boot; their guest scale and
# variants are in tests/qemu/pkeys-rig.sh.
qemu_static_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1 -DTU_STATIC=1
qemu_static_cflags = $(AM_CFLAGS) -fno-builtin
qemu_static_ldadd = libxpfo.la -lpthread
qemu_static_ldflags = -all-static
qemu_static_tests = tests/qemu/api-static tests/qemu/misuse-static \
	tests/qemu/stress-static tests/qemu/isolation-static \
	tests/qemu/vmsplice-static tests/qemu/contention-static \
	tests/qemu/vmabudget-static tests/qemu/apimisuse-static \
	tests/qemu/pkeys-backend
check_PROGRAMS += $(qemu_static_tests)
tests_qemu_api_static_SOURCES = tests/api.c $(tests_common)
tests_qemu_misuse_static_SOURCES = tests/misuse.c $(tests_common)
tests_qemu_stress_static_SOURCES = tests/stress.c $(tests_common)
tests_qemu_isolation_static_SOURCES = tests/isolation/isolation.c $(iso_sources)
tests_qemu_vmsplice_static_SOURCES = tests/isolation/vmsplice.c $(iso_sources)
tests_qemu_contention_static_SOURCES = tests/isolation/contention.c $(iso_sources)
tests_qemu_vmabudget_static_SOURCES = tests/isolation/vmabudget.c $(iso_sources)
tests_qemu_apimisuse_static_SOURCES = tests/isolation/apimisuse.c $(iso_sources)
tests_qemu_pkeys_backend_SOURCES = tests/qemu/pkeys-backend.c
tests_qemu_api_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_misuse_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_stress_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_isolation_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_vmsplice_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_contention_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_vmabudget_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_apimisuse_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_api_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_misuse_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_stress_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_isolation_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_vmsplice_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_contention_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_vmabudget_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_apimisuse_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_pkeys_backend_CFLAGS = $(qemu_static_cflags)
tests_qemu_api_static_LDADD = $(qemu_static_ldadd)
tests_qemu_misuse_static_LDADD = $(qemu_static_ldadd)
tests_qemu_stress_static_LDADD = $(qemu_static_ldadd)
tests_qemu_isolation_static_LDADD = $(qemu_static_ldadd)
tests_qemu_vmsplice_static_LDADD = $(qemu_static_ldadd)
tests_qemu_contention_static_LDADD = $(qemu_static_ldadd)
tests_qemu_vmabudget_static_LDADD = $(qemu_static_ldadd)
tests_qemu_apimisuse_static_LDADD = $(qemu_static_ldadd)
tests_qemu_pkeys_backend_LDADD = $(qemu_static_ldadd)
tests_qemu_api_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_misuse_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_stress_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_isolation_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_vmsplice_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_contention_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_vmabudget_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_apimisuse_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_pkeys_backend_LDFLAGS = $(qemu_static_ldflags)
# tests/secret and tests/alias in the guest (tests/qemu/pkeys-rig.sh boots
# with secretmem.enable=1, which Debian's 6.1 kernel needs for memfd_secret).
check_PROGRAMS += tests/qemu/secret-static tests/qemu/alias-static
tests_qemu_secret_static_SOURCES = tests/secret/secret.c $(tests_common)
tests_qemu_alias_static_SOURCES = tests/alias/alias.c $(tests_common)
tests_qemu_secret_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_alias_static_CPPFLAGS = $(qemu_static_cppflags)
tests_qemu_secret_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_alias_static_CFLAGS = $(qemu_static_cflags)
tests_qemu_secret_static_LDADD = $(qemu_static_ldadd)
tests_qemu_alias_static_LDADD = $(qemu_static_ldadd)
tests_qemu_secret_static_LDFLAGS = $(qemu_static_ldflags)
tests_qemu_alias_static_LDFLAGS = $(qemu_static_ldflags)
QEMU_TEST_BINARIES += tests/qemu/secret-static$(EXEEXT) tests/qemu/alias-static$(EXEEXT)
QEMU_TEST_BINARIES += tests/qemu/pkeys-backend$(EXEEXT) \
	tests/qemu/isolation-static$(EXEEXT) tests/qemu/misuse-static$(EXEEXT) \
	tests/qemu/apimisuse-static$(EXEEXT) tests/qemu/vmsplice-static$(EXEEXT) \
	tests/qemu/contention-static$(EXEEXT) tests/qemu/stress-static$(EXEEXT) \
	tests/qemu/api-static$(EXEEXT) tests/qemu/vmabudget-static$(EXEEXT)

# The secret-memory interrupt measurement (not a test: kernel/README.md,
# "Secret compartments through the allocator"); built statically for
# kernel/test.sh --extra and tests/qemu/run.sh.
check_PROGRAMS += tests/qemu/secret-cal
tests_qemu_secret_cal_SOURCES = tests/qemu/secret-cal.c
tests_qemu_secret_cal_LDADD = libxpfo.la -lpthread
tests_qemu_secret_cal_LDFLAGS = -all-static
# What a SECRET create does on the running kernel (ENOSYS and one warning
# without memfd_secret): a check by hand, tests/secret/README.
check_PROGRAMS += tests/qemu/secret-probe
tests_qemu_secret_probe_SOURCES = tests/qemu/secret-probe.c
tests_qemu_secret_probe_LDADD = libxpfo.la -lpthread
tests_qemu_secret_probe_LDFLAGS = -all-static
