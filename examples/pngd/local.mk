# examples/pngd: a PNG decoding service whose decoder (libpng) runs in a
# locked compartment (examples/pngd/README.md).  Built with `make` (noinst)
# when libpng's headers are installed (libpng-dev); tests/sandbox/pngd.sh
# runs it in make check, and its static build runs in the QEMU rig.
if HAVE_PNG
noinst_PROGRAMS += examples/pngd/pngd examples/pngd/pngd-send \
	examples/pngd/pngd-bug examples/pngd/pngd-plain
pngd_sources = examples/pngd/pngd.c examples/pngd/decode.c examples/pngd/decode.h
examples_pngd_pngd_SOURCES = $(pngd_sources)
examples_pngd_pngd_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS)
examples_pngd_pngd_LDADD = libxpfo.la $(PNG_LIBS) -lpthread
examples_pngd_pngd_LDFLAGS = -no-install
# the injected overflow (make check only)
examples_pngd_pngd_bug_SOURCES = $(pngd_sources)
examples_pngd_pngd_bug_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS) -DPNGD_BUG
examples_pngd_pngd_bug_LDADD = libxpfo.la $(PNG_LIBS) -lpthread
examples_pngd_pngd_bug_LDFLAGS = -no-install
# the baseline: glibc's malloc, fork per request, no xpfo (and the bug, so
# the exploit test shows what it does without xpfo)
examples_pngd_pngd_plain_SOURCES = $(pngd_sources)
examples_pngd_pngd_plain_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS) -DPNGD_NO_XPFO -DPNGD_BUG
examples_pngd_pngd_plain_LDADD = $(PNG_LIBS)
examples_pngd_pngd_send_SOURCES = examples/pngd/pngd-send.c examples/pngd/decode.c examples/pngd/decode.h
examples_pngd_pngd_send_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS)
examples_pngd_pngd_send_LDADD = $(PNG_LIBS)
TESTS += tests/sandbox/pngd.sh
pngd_progs = examples/pngd/pngd$(EXEEXT) examples/pngd/pngd-send$(EXEEXT) \
	examples/pngd/pngd-bug$(EXEEXT) examples/pngd/pngd-plain$(EXEEXT)
if HAVE_PNG_STATIC
# The QEMU rig (tests/qemu/local.mk): the service's self-test (valid and
# malformed files, then the exploit) on pkeys (thread mode) and mprotect
# (fork mode), linked statically with libpng16.a and libz.a.
check_PROGRAMS += examples/pngd/pngd-static examples/pngd/pngd-bug-static
examples_pngd_pngd_static_SOURCES = $(pngd_sources)
examples_pngd_pngd_static_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS)
examples_pngd_pngd_static_LDADD = libxpfo.la $(PNG_LIBS) -lm -lpthread
examples_pngd_pngd_static_LDFLAGS = -all-static
examples_pngd_pngd_bug_static_SOURCES = $(pngd_sources)
examples_pngd_pngd_bug_static_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS) -DPNGD_BUG
examples_pngd_pngd_bug_static_LDADD = libxpfo.la $(PNG_LIBS) -lm -lpthread
examples_pngd_pngd_bug_static_LDFLAGS = -all-static
QEMU_TEST_BINARIES += examples/pngd/pngd-static$(EXEEXT) examples/pngd/pngd-bug-static$(EXEEXT)
endif
endif
examples: $(pngd_progs)
EXTRA_DIST += examples/pngd/README.md tests/sandbox/pngd.sh
