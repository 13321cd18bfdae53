# examples/parsed: an XML summary service that parses untrusted input in a
# locked compartment (examples/parsed/README.md).  Built with `make`
# (noinst) when expat's headers are installed; tests/sandbox/service.sh runs
# it in make check.
if HAVE_EXPAT
noinst_PROGRAMS += examples/parsed/parsed examples/parsed/parsed-send \
	examples/parsed/parsed-bug examples/parsed/parsed-plain
examples_parsed_parsed_SOURCES = examples/parsed/parsed.c
examples_parsed_parsed_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS)
examples_parsed_parsed_LDADD = libxpfo.la $(EXPAT_LIBS) -lpthread
examples_parsed_parsed_LDFLAGS = -no-install
# the injected overflow (make check only)
examples_parsed_parsed_bug_SOURCES = examples/parsed/parsed.c
examples_parsed_parsed_bug_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) -DPARSED_BUG
examples_parsed_parsed_bug_LDADD = libxpfo.la $(EXPAT_LIBS) -lpthread
examples_parsed_parsed_bug_LDFLAGS = -no-install
# the baseline: glibc's malloc, fork per request, no xpfo (and the bug, so
# the exploit test shows what it does without xpfo)
examples_parsed_parsed_plain_SOURCES = examples/parsed/parsed.c
examples_parsed_parsed_plain_CFLAGS = $(AM_CFLAGS) $(EXPAT_CFLAGS) -DPARSED_NO_XPFO -DPARSED_BUG
examples_parsed_parsed_plain_LDADD = $(EXPAT_LIBS)
examples_parsed_parsed_send_SOURCES = examples/parsed/parsed-send.c
TESTS += tests/sandbox/service.sh
parsed_progs = examples/parsed/parsed$(EXEEXT) examples/parsed/parsed-send$(EXEEXT) \
	examples/parsed/parsed-bug$(EXEEXT) examples/parsed/parsed-plain$(EXEEXT)
endif
.PHONY: examples
examples: $(parsed_progs)
EXTRA_DIST += examples/parsed/README.md tests/sandbox/service.sh examples/common/service.h
