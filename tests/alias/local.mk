# tests/alias: alias views (xpfo_share_fd) and their revocation.  See
# tests/README.
check_PROGRAMS += tests/alias/alias
TESTS += tests/alias/alias
tests_alias_alias_SOURCES = tests/alias/alias.c $(tests_common)
tests_alias_alias_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1
tests_alias_alias_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_alias_alias_LDADD = libxpfo.la -lpthread
tests_alias_alias_LDFLAGS = -no-install
