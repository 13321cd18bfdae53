# tests/sandbox: xpfo_lock_thread (the sandbox issue).  See
# tests/sandbox/README.  Linked against libxpfo.la.

sandbox_cppflags = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1
sandbox_cflags = $(AM_CFLAGS) -fno-builtin
sandbox_ldadd = libxpfo.la -lpthread

sandbox_tests = \
	tests/sandbox/attacks \
	tests/sandbox/allowlist \
	tests/sandbox/alloc \
	tests/sandbox/gadgets \
	tests/sandbox/transfer \
	tests/sandbox/rootruns \
	tests/sandbox/lazylib \
	tests/sandbox/fds \
	tests/sandbox/records \
	tests/sandbox/handlers \
	tests/sandbox/lockfail

check_PROGRAMS += $(sandbox_tests)
TESTS += $(sandbox_tests)
EXTRA_DIST += tests/sandbox/README

tests_sandbox_attacks_SOURCES = tests/sandbox/attacks.c tests/testutil.c tests/testutil.h
tests_sandbox_attacks_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_attacks_CFLAGS = $(sandbox_cflags)
tests_sandbox_attacks_LDADD = $(sandbox_ldadd)
tests_sandbox_attacks_LDFLAGS = -no-install

tests_sandbox_allowlist_SOURCES = tests/sandbox/allowlist.c tests/testutil.c tests/testutil.h
tests_sandbox_allowlist_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_allowlist_CFLAGS = $(sandbox_cflags)
tests_sandbox_allowlist_LDADD = $(sandbox_ldadd)
tests_sandbox_allowlist_LDFLAGS = -no-install

tests_sandbox_alloc_SOURCES = tests/sandbox/alloc.c tests/testutil.c tests/testutil.h
tests_sandbox_alloc_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_alloc_CFLAGS = $(sandbox_cflags)
tests_sandbox_alloc_LDADD = $(sandbox_ldadd)
tests_sandbox_alloc_LDFLAGS = -no-install

tests_sandbox_gadgets_SOURCES = tests/sandbox/gadgets.c tests/testutil.c tests/testutil.h
tests_sandbox_gadgets_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_gadgets_CFLAGS = $(sandbox_cflags)
tests_sandbox_gadgets_LDADD = $(sandbox_ldadd)
tests_sandbox_gadgets_LDFLAGS = -no-install

tests_sandbox_transfer_SOURCES = tests/sandbox/transfer.c tests/testutil.c tests/testutil.h
tests_sandbox_transfer_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_transfer_CFLAGS = $(sandbox_cflags)
tests_sandbox_transfer_LDADD = $(sandbox_ldadd)
tests_sandbox_transfer_LDFLAGS = -no-install

tests_sandbox_rootruns_SOURCES = tests/sandbox/rootruns.c tests/testutil.c tests/testutil.h
tests_sandbox_rootruns_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_rootruns_CFLAGS = $(sandbox_cflags)
tests_sandbox_rootruns_LDADD = $(sandbox_ldadd)
tests_sandbox_rootruns_LDFLAGS = -no-install

tests_sandbox_lazylib_SOURCES = tests/sandbox/lazylib.c tests/testutil.c tests/testutil.h
tests_sandbox_lazylib_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_lazylib_CFLAGS = $(sandbox_cflags)
tests_sandbox_lazylib_LDADD = $(sandbox_ldadd)
tests_sandbox_lazylib_LDFLAGS = -no-install

tests_sandbox_fds_SOURCES = tests/sandbox/fds.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_fds_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_fds_CFLAGS = $(sandbox_cflags)
tests_sandbox_fds_LDADD = $(sandbox_ldadd)
tests_sandbox_fds_LDFLAGS = -no-install

tests_sandbox_records_SOURCES = tests/sandbox/records.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_records_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_records_CFLAGS = $(sandbox_cflags)
tests_sandbox_records_LDADD = $(sandbox_ldadd)
tests_sandbox_records_LDFLAGS = -no-install

tests_sandbox_handlers_SOURCES = tests/sandbox/handlers.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_handlers_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_handlers_CFLAGS = $(sandbox_cflags)
tests_sandbox_handlers_LDADD = $(sandbox_ldadd)
tests_sandbox_handlers_LDFLAGS = -no-install

tests_sandbox_lockfail_SOURCES = tests/sandbox/lockfail.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_lockfail_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_lockfail_CFLAGS = $(sandbox_cflags)
tests_sandbox_lockfail_LDADD = $(sandbox_ldadd)
tests_sandbox_lockfail_LDFLAGS = -no-install

check_PROGRAMS += tests/sandbox/fds-static
tests_sandbox_fds_static_SOURCES = tests/sandbox/fds.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_fds_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_fds_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_fds_static_LDADD = $(sandbox_ldadd)
tests_sandbox_fds_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/fds-static$(EXEEXT)

check_PROGRAMS += tests/sandbox/records-static
tests_sandbox_records_static_SOURCES = tests/sandbox/records.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_records_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_records_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_records_static_LDADD = $(sandbox_ldadd)
tests_sandbox_records_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/records-static$(EXEEXT)

check_PROGRAMS += tests/sandbox/handlers-static
tests_sandbox_handlers_static_SOURCES = tests/sandbox/handlers.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_handlers_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_handlers_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_handlers_static_LDADD = $(sandbox_ldadd)
tests_sandbox_handlers_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/handlers-static$(EXEEXT)

check_PROGRAMS += tests/sandbox/lockfail-static
tests_sandbox_lockfail_static_SOURCES = tests/sandbox/lockfail.c tests/sandbox/cases.h tests/testutil.c tests/testutil.h
tests_sandbox_lockfail_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_lockfail_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_lockfail_static_LDADD = $(sandbox_ldadd)
tests_sandbox_lockfail_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/lockfail-static$(EXEEXT)

# The attacks in the QEMU rig (pkeys and mprotect in the guest): static,
# with the cases that need keys (tests/qemu/local.mk's QEMU_TEST_BINARIES).
check_PROGRAMS += tests/sandbox/attacks-static
tests_sandbox_attacks_static_SOURCES = tests/sandbox/attacks.c tests/testutil.c tests/testutil.h
tests_sandbox_attacks_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1 -DSANDBOX_STATIC=1
tests_sandbox_attacks_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_attacks_static_LDADD = $(sandbox_ldadd)
tests_sandbox_attacks_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/attacks-static$(EXEEXT)
check_PROGRAMS += tests/sandbox/alloc-static
tests_sandbox_alloc_static_SOURCES = tests/sandbox/alloc.c tests/testutil.c tests/testutil.h
tests_sandbox_alloc_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_alloc_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_alloc_static_LDADD = $(sandbox_ldadd)
tests_sandbox_alloc_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/alloc-static$(EXEEXT)
check_PROGRAMS += tests/sandbox/allowlist-static
tests_sandbox_allowlist_static_SOURCES = tests/sandbox/allowlist.c tests/testutil.c tests/testutil.h
tests_sandbox_allowlist_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_allowlist_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_allowlist_static_LDADD = $(sandbox_ldadd)
tests_sandbox_allowlist_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/allowlist-static$(EXEEXT)

# xpfo_move, xpfo_send and xpfo_recv both deployments; the
# pkeys thread deployment in the QEMU rig.
check_PROGRAMS += tests/sandbox/dataflow tests/sandbox/dataflow-static
TESTS += tests/sandbox/dataflow
tests_sandbox_dataflow_SOURCES = tests/sandbox/dataflow.c tests/testutil.c tests/testutil.h
tests_sandbox_dataflow_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_dataflow_CFLAGS = $(sandbox_cflags)
tests_sandbox_dataflow_LDADD = $(sandbox_ldadd)
tests_sandbox_dataflow_LDFLAGS = -no-install
tests_sandbox_dataflow_static_SOURCES = tests/sandbox/dataflow.c tests/testutil.c tests/testutil.h
tests_sandbox_dataflow_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_dataflow_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_dataflow_static_LDADD = $(sandbox_ldadd)
tests_sandbox_dataflow_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/dataflow-static$(EXEEXT)

# stdio in a locked thread: fork on the host, thread on pkeys.
check_PROGRAMS += tests/sandbox/stdio tests/sandbox/stdio-static
TESTS += tests/sandbox/stdio
tests_sandbox_stdio_SOURCES = tests/sandbox/stdio.c tests/testutil.c tests/testutil.h
tests_sandbox_stdio_CPPFLAGS = $(sandbox_cppflags)
tests_sandbox_stdio_CFLAGS = $(sandbox_cflags)
tests_sandbox_stdio_LDADD = $(sandbox_ldadd)
tests_sandbox_stdio_LDFLAGS = -no-install
tests_sandbox_stdio_static_SOURCES = tests/sandbox/stdio.c tests/testutil.c tests/testutil.h
tests_sandbox_stdio_static_CPPFLAGS = $(sandbox_cppflags) -DTU_STATIC=1
tests_sandbox_stdio_static_CFLAGS = $(sandbox_cflags)
tests_sandbox_stdio_static_LDADD = $(sandbox_ldadd)
tests_sandbox_stdio_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += tests/sandbox/stdio-static$(EXEEXT)
