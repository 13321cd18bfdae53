# tests/preload: programs under LD_PRELOAD=libxpfo.so (and xpfo-run): the
# plain builds of the C tests, and real programs compared with their run
# without xpfo (tests/lib.sh's compare_run).  See tests/README.
# AM_TESTS_ENVIRONMENT and the .sh log compiler come from tests/local.mk.

preload_tests = \
	tests/preload/api.sh tests/preload/misuse.sh tests/preload/forkalloc.sh \
	tests/preload/python.sh tests/preload/sqlite.sh tests/preload/git.sh \
	tests/preload/perl.sh tests/preload/bash.sh tests/preload/sort.sh \
	tests/preload/gcc.sh tests/preload/threads.sh

TESTS += $(preload_tests)
EXTRA_DIST += $(preload_tests) tests/preload/workload.py

# The plain builds: the C tests' sources, not linked with libxpfo (run
# alone they use glibc's malloc, which checks the checks themselves).
preload_plain = tests/preload/api-plain tests/preload/misuse-plain \
	tests/preload/stress-plain tests/preload/forkalloc-plain
check_PROGRAMS += $(preload_plain)
tests_preload_api_plain_CFLAGS = $(tests_cflags)
tests_preload_api_plain_SOURCES = tests/api.c $(tests_common)
tests_preload_misuse_plain_CFLAGS = $(tests_cflags)
tests_preload_misuse_plain_SOURCES = tests/misuse.c $(tests_common)
tests_preload_stress_plain_CFLAGS = $(tests_cflags)
tests_preload_stress_plain_SOURCES = tests/stress.c $(tests_common)
tests_preload_forkalloc_plain_CFLAGS = $(tests_cflags)
tests_preload_forkalloc_plain_SOURCES = tests/forkalloc.c $(tests_common)
