# tests/docs: every code block of README.md, the man pages, the examples'
# READMEs and docs/tutorial.md is compiled, run or checked
# (tests/docs/blocks.py says how each kind of block is).
check_PROGRAMS += tests/docs/messages
tests_docs_messages_SOURCES = tests/docs/messages.c
tests_docs_messages_CFLAGS = $(AM_CFLAGS) -fno-builtin
tests_docs_messages_LDADD = libxpfo.la -lpthread
tests_docs_messages_LDFLAGS = -no-install
TESTS += tests/docs/blocks.sh tests/docs/tutorial.sh
EXTRA_DIST += tests/docs/blocks.sh tests/docs/tutorial.sh tests/docs/blocks.py \
	tests/docs/prelude.h docs/tutorial.md
AM_TESTS_ENVIRONMENT += DOCS_CC='$(CC)'; export DOCS_CC; \
	DOCS_MESSAGES='$(abs_top_builddir)/tests/docs/messages$(EXEEXT)'; export DOCS_MESSAGES;
