# tests/hardening: one program per bug class, under each profile (issue 6).
# Each program re-executes itself once per case and XPFO_OPTIONS value and
# checks the signal and the exact message; see tests/hardening/harness.h and
# tests/hardening/README.

hardening_common = tests/hardening/harness.c tests/hardening/harness.h \
	tests/testutil.c tests/testutil.h
# -fno-builtin: the compiler must not fold or drop the misuse on purpose.
hardening_cflags = $(AM_CFLAGS) -fno-builtin
hardening_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1
# -no-install: a real executable (the programs re-execute themselves).
hardening_ldflags = -no-install

hardening_tests = \
	tests/hardening/double-free \
	tests/hardening/invalid-free \
	tests/hardening/interior-free \
	tests/hardening/foreign-free \
	tests/hardening/sized-free \
	tests/hardening/canary \
	tests/hardening/guard-page \
	tests/hardening/write-after-free \
	tests/hardening/quarantine \
	tests/hardening/uaf-run \
	tests/hardening/fill \
	tests/hardening/random \
	tests/hardening/seal

check_PROGRAMS += $(hardening_tests)
TESTS += $(hardening_tests)
EXTRA_DIST += tests/hardening/README

tests_hardening_double_free_SOURCES = tests/hardening/double-free.c $(hardening_common)
tests_hardening_double_free_CFLAGS = $(hardening_cflags)
tests_hardening_double_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_double_free_LDADD = libxpfo.la
tests_hardening_double_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_invalid_free_SOURCES = tests/hardening/invalid-free.c $(hardening_common)
tests_hardening_invalid_free_CFLAGS = $(hardening_cflags)
tests_hardening_invalid_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_invalid_free_LDADD = libxpfo.la
tests_hardening_invalid_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_interior_free_SOURCES = tests/hardening/interior-free.c $(hardening_common)
tests_hardening_interior_free_CFLAGS = $(hardening_cflags)
tests_hardening_interior_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_interior_free_LDADD = libxpfo.la
tests_hardening_interior_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_foreign_free_SOURCES = tests/hardening/foreign-free.c $(hardening_common)
tests_hardening_foreign_free_CFLAGS = $(hardening_cflags)
tests_hardening_foreign_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_foreign_free_LDADD = libxpfo.la
tests_hardening_foreign_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_sized_free_SOURCES = tests/hardening/sized-free.c $(hardening_common)
tests_hardening_sized_free_CFLAGS = $(hardening_cflags)
tests_hardening_sized_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_sized_free_LDADD = libxpfo.la
tests_hardening_sized_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_canary_SOURCES = tests/hardening/canary.c $(hardening_common)
tests_hardening_canary_CFLAGS = $(hardening_cflags)
tests_hardening_canary_CPPFLAGS = $(hardening_cppflags)
tests_hardening_canary_LDADD = libxpfo.la
tests_hardening_canary_LDFLAGS = $(hardening_ldflags)

tests_hardening_guard_page_SOURCES = tests/hardening/guard-page.c $(hardening_common)
tests_hardening_guard_page_CFLAGS = $(hardening_cflags)
tests_hardening_guard_page_CPPFLAGS = $(hardening_cppflags)
tests_hardening_guard_page_LDADD = libxpfo.la
tests_hardening_guard_page_LDFLAGS = $(hardening_ldflags)

tests_hardening_write_after_free_SOURCES = tests/hardening/write-after-free.c $(hardening_common)
tests_hardening_write_after_free_CFLAGS = $(hardening_cflags)
tests_hardening_write_after_free_CPPFLAGS = $(hardening_cppflags)
tests_hardening_write_after_free_LDADD = libxpfo.la
tests_hardening_write_after_free_LDFLAGS = $(hardening_ldflags)

tests_hardening_quarantine_SOURCES = tests/hardening/quarantine.c $(hardening_common)
tests_hardening_quarantine_CFLAGS = $(hardening_cflags)
tests_hardening_quarantine_CPPFLAGS = $(hardening_cppflags)
tests_hardening_quarantine_LDADD = libxpfo.la
tests_hardening_quarantine_LDFLAGS = $(hardening_ldflags)

tests_hardening_uaf_run_SOURCES = tests/hardening/uaf-run.c $(hardening_common)
tests_hardening_uaf_run_CFLAGS = $(hardening_cflags)
tests_hardening_uaf_run_CPPFLAGS = $(hardening_cppflags)
tests_hardening_uaf_run_LDADD = libxpfo.la
tests_hardening_uaf_run_LDFLAGS = $(hardening_ldflags)

tests_hardening_fill_SOURCES = tests/hardening/fill.c $(hardening_common)
tests_hardening_fill_CFLAGS = $(hardening_cflags)
tests_hardening_fill_CPPFLAGS = $(hardening_cppflags)
tests_hardening_fill_LDADD = libxpfo.la
tests_hardening_fill_LDFLAGS = $(hardening_ldflags)

tests_hardening_random_SOURCES = tests/hardening/random.c $(hardening_common)
tests_hardening_random_CFLAGS = $(hardening_cflags)
tests_hardening_random_CPPFLAGS = $(hardening_cppflags)
tests_hardening_random_LDADD = libxpfo.la
tests_hardening_random_LDFLAGS = $(hardening_ldflags)

tests_hardening_seal_SOURCES = tests/hardening/seal.c $(hardening_common)
tests_hardening_seal_CFLAGS = $(hardening_cflags)
tests_hardening_seal_CPPFLAGS = $(hardening_cppflags)
tests_hardening_seal_LDADD = libxpfo.la
tests_hardening_seal_LDFLAGS = $(hardening_ldflags)
