# tests/secret: secret compartments (memfd_secret).  On the host (this
# kernel has memfd_secret) and, statically linked, in the QEMU rig (Debian's
# kernel booted with secretmem.enable=1).  See tests/README.
check_PROGRAMS += tests/secret/secret
TESTS += tests/secret/secret
tests_secret_secret_SOURCES = tests/secret/secret.c $(tests_common)
tests_secret_secret_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests -DTU_REQUIRE_XPFO=1
tests_secret_secret_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_secret_secret_LDADD = libxpfo.la -lpthread
tests_secret_secret_LDFLAGS = -no-install
