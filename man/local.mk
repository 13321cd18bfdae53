# man: xpfo(3) (the API), xpfo-run(1), xpfo(7) (the model, options, reports,
# statistics).  xpfo(7)'s OPTIONS list is made at build time from the
# library's own table (XPFO_OPTIONS=help) by man/options-mdoc.sh.
dist_man_MANS = man/xpfo.3 man/xpfo-run.1
nodist_man_MANS = man/xpfo.7
EXTRA_DIST += man/xpfo.7.in man/options-mdoc.sh
CLEANFILES += man/xpfo.7

# The whole LD_PRELOAD is replaced (fakeroot's must not come along); the
# library prints the table to stderr.
man/xpfo.7: $(top_srcdir)/man/xpfo.7.in $(top_srcdir)/man/options-mdoc.sh libxpfo.la
	$(AM_V_GEN)$(MKDIR_P) man && \
	XPFO_OPTIONS=help LD_PRELOAD='$(abs_top_builddir)/.libs/libxpfo.so' \
		/bin/sh -c : 2>$@.help >/dev/null && \
	$(SHELL) $(top_srcdir)/man/options-mdoc.sh < $@.help > $@.opts && \
	sed -e '/^@OPTIONS@$$/{r $@.opts' -e 'd;}' $(top_srcdir)/man/xpfo.7.in > $@.tmp && \
	rm -f $@.help $@.opts && mv $@.tmp $@

# man xpfo_enter (and each function of xpfo(3)) finds xpfo(3).
man_xpfo3_names = `sed -n 's/^\.Nm \(xpfo_[a-z_]*\).*/\1/p' $(top_srcdir)/man/xpfo.3`
install-data-hook: install-man-links
install-man-links:
	for n in $(man_xpfo3_names); do \
		rm -f "$(DESTDIR)$(man3dir)/$$n.3" && \
		$(LN_S) xpfo.3 "$(DESTDIR)$(man3dir)/$$n.3" || exit 1; \
	done
uninstall-hook: uninstall-man-links
uninstall-man-links:
	for n in $(man_xpfo3_names); do rm -f "$(DESTDIR)$(man3dir)/$$n.3"; done
.PHONY: install-man-links uninstall-man-links

# make check: mandoc -Tlint, man -l, the options list against the library.
TESTS += man/manpages.sh
EXTRA_DIST += man/manpages.sh
AM_TESTS_ENVIRONMENT += CC='$(CC)'; export CC;
