# tests/isolation: compartment isolation tests (issue 3).  See
# tests/isolation/README for what each checks.  All are linked against
# libxpfo.la (-no-install: real executables, re-executed with XPFO_OPTIONS
# and run under strace).

iso_sources = tests/isolation/iso.c tests/isolation/iso.h tests/testutil.c tests/testutil.h
iso_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1
# -fno-builtin: the compiler must not fold or drop malloc/free pairs the
# tests make on purpose.
iso_cflags = $(AM_CFLAGS) -fno-builtin
iso_ldadd = libxpfo.la -lpthread
iso_ldflags = -no-install

iso_tests = \
	tests/isolation/isolation \
	tests/isolation/vmsplice \
	tests/isolation/contention \
	tests/isolation/batching \
	tests/isolation/grants \
	tests/isolation/vmabudget \
	tests/isolation/apimisuse \
	tests/isolation/threadmode \
	tests/isolation/ownership \
	tests/isolation/nomem \
	tests/isolation/failclosed \
	tests/isolation/forkcomp \
	tests/isolation/forkenter \
	tests/isolation/osfail \
	tests/isolation/quardestroy \
	tests/isolation/uffd

check_PROGRAMS += $(iso_tests)
TESTS += $(iso_tests)
EXTRA_DIST += tests/isolation/README

tests_isolation_isolation_SOURCES = tests/isolation/isolation.c $(iso_sources)
tests_isolation_isolation_CPPFLAGS = $(iso_cppflags)
tests_isolation_isolation_CFLAGS = $(iso_cflags)
tests_isolation_isolation_LDADD = $(iso_ldadd)
tests_isolation_isolation_LDFLAGS = $(iso_ldflags)

tests_isolation_vmsplice_SOURCES = tests/isolation/vmsplice.c $(iso_sources)
tests_isolation_vmsplice_CPPFLAGS = $(iso_cppflags)
tests_isolation_vmsplice_CFLAGS = $(iso_cflags)
tests_isolation_vmsplice_LDADD = $(iso_ldadd)
tests_isolation_vmsplice_LDFLAGS = $(iso_ldflags)

tests_isolation_contention_SOURCES = tests/isolation/contention.c $(iso_sources)
tests_isolation_contention_CPPFLAGS = $(iso_cppflags)
tests_isolation_contention_CFLAGS = $(iso_cflags)
tests_isolation_contention_LDADD = $(iso_ldadd)
tests_isolation_contention_LDFLAGS = $(iso_ldflags)

tests_isolation_batching_SOURCES = tests/isolation/batching.c $(iso_sources)
tests_isolation_batching_CPPFLAGS = $(iso_cppflags)
tests_isolation_batching_CFLAGS = $(iso_cflags)
tests_isolation_batching_LDADD = $(iso_ldadd)
tests_isolation_batching_LDFLAGS = $(iso_ldflags)

tests_isolation_grants_SOURCES = tests/isolation/grants.c $(iso_sources)
tests_isolation_grants_CPPFLAGS = $(iso_cppflags)
tests_isolation_grants_CFLAGS = $(iso_cflags)
tests_isolation_grants_LDADD = $(iso_ldadd)
tests_isolation_grants_LDFLAGS = $(iso_ldflags)

tests_isolation_vmabudget_SOURCES = tests/isolation/vmabudget.c $(iso_sources)
tests_isolation_vmabudget_CPPFLAGS = $(iso_cppflags)
tests_isolation_vmabudget_CFLAGS = $(iso_cflags)
tests_isolation_vmabudget_LDADD = $(iso_ldadd)
tests_isolation_vmabudget_LDFLAGS = $(iso_ldflags)

tests_isolation_apimisuse_SOURCES = tests/isolation/apimisuse.c $(iso_sources)
tests_isolation_apimisuse_CPPFLAGS = $(iso_cppflags)
tests_isolation_apimisuse_CFLAGS = $(iso_cflags)
tests_isolation_apimisuse_LDADD = $(iso_ldadd)
tests_isolation_apimisuse_LDFLAGS = $(iso_ldflags)

tests_isolation_threadmode_SOURCES = tests/isolation/threadmode.c $(iso_sources)
tests_isolation_threadmode_CPPFLAGS = $(iso_cppflags)
tests_isolation_threadmode_CFLAGS = $(iso_cflags)
tests_isolation_threadmode_LDADD = $(iso_ldadd)
tests_isolation_threadmode_LDFLAGS = $(iso_ldflags)

tests_isolation_ownership_SOURCES = tests/isolation/ownership.c $(iso_sources)
tests_isolation_ownership_CPPFLAGS = $(iso_cppflags)
tests_isolation_ownership_CFLAGS = $(iso_cflags)
tests_isolation_ownership_LDADD = $(iso_ldadd)
tests_isolation_ownership_LDFLAGS = $(iso_ldflags)
tests_isolation_nomem_SOURCES = tests/isolation/nomem.c $(iso_sources)
tests_isolation_nomem_CPPFLAGS = $(iso_cppflags)
tests_isolation_nomem_CFLAGS = $(iso_cflags)
tests_isolation_nomem_LDADD = $(iso_ldadd)
tests_isolation_nomem_LDFLAGS = $(iso_ldflags)
tests_isolation_failclosed_SOURCES = tests/isolation/failclosed.c $(iso_sources)
tests_isolation_failclosed_CPPFLAGS = $(iso_cppflags)
tests_isolation_failclosed_CFLAGS = $(iso_cflags)
tests_isolation_failclosed_LDADD = $(iso_ldadd)
tests_isolation_failclosed_LDFLAGS = $(iso_ldflags)

tests_isolation_forkcomp_SOURCES = tests/isolation/forkcomp.c $(iso_sources)
tests_isolation_forkcomp_CPPFLAGS = $(iso_cppflags)
tests_isolation_forkcomp_CFLAGS = $(iso_cflags)
tests_isolation_forkcomp_LDADD = $(iso_ldadd)
tests_isolation_forkcomp_LDFLAGS = $(iso_ldflags)
tests_isolation_forkenter_SOURCES = tests/isolation/forkenter.c $(iso_sources)
tests_isolation_forkenter_CPPFLAGS = $(iso_cppflags)
tests_isolation_forkenter_CFLAGS = $(iso_cflags)
tests_isolation_forkenter_LDADD = $(iso_ldadd)
tests_isolation_forkenter_LDFLAGS = $(iso_ldflags)

tests_isolation_quardestroy_SOURCES = tests/isolation/quardestroy.c $(iso_sources)
tests_isolation_quardestroy_CPPFLAGS = $(iso_cppflags)
tests_isolation_quardestroy_CFLAGS = $(iso_cflags)
tests_isolation_quardestroy_LDADD = $(iso_ldadd)
tests_isolation_quardestroy_LDFLAGS = $(iso_ldflags)
tests_isolation_osfail_SOURCES = tests/isolation/osfail.c $(iso_sources)
tests_isolation_osfail_CPPFLAGS = $(iso_cppflags)
tests_isolation_osfail_CFLAGS = $(iso_cflags)
tests_isolation_osfail_LDADD = $(iso_ldadd)
tests_isolation_osfail_LDFLAGS = $(iso_ldflags)

tests_isolation_uffd_SOURCES = tests/isolation/uffd.c $(iso_sources)
tests_isolation_uffd_CPPFLAGS = $(iso_cppflags)
tests_isolation_uffd_CFLAGS = $(iso_cflags)
tests_isolation_uffd_LDADD = $(iso_ldadd)
tests_isolation_uffd_LDFLAGS = $(iso_ldflags)
