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
