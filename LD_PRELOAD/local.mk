# --disable-override leaves the libc names out: only the xpfo_ API
# (api/prefixed.c).  With the override, LD_PRELOAD/override.c compiles
# api/prefixed.c inside itself: its libc names are aliases of the xpfo_
# functions, and an alias needs its target in the same translation unit.
if XPFO_OVERRIDE
libxpfo_la_SOURCES += LD_PRELOAD/override.c
EXTRA_DIST += api/prefixed.c
else
libxpfo_la_SOURCES += api/prefixed.c
EXTRA_DIST += LD_PRELOAD/override.c
endif
EXTRA_DIST += LD_PRELOAD/xpfo-run.in
EXTRA_DIST += LD_PRELOAD/demo.py

# The Quick start's main job: a real program under xpfo, with its statistics.
demo_python = $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
.PHONY: demo
demo: libxpfo.la LD_PRELOAD/xpfo-run
	PYTHONMALLOC=malloc $(top_builddir)/LD_PRELOAD/xpfo-run --stats -- $(demo_python) $(top_srcdir)/LD_PRELOAD/demo.py

# xpfo-run is made here, not by configure, so that its paths are expanded
# (configure would leave ${exec_prefix} in them) and it names the library by
# its soname (libtool's dlname), which the runtime package ships.
LD_PRELOAD/xpfo-run: $(top_srcdir)/LD_PRELOAD/xpfo-run.in libxpfo.la Makefile
	$(AM_V_GEN)soname=`sed -n "s/^dlname='\(.*\)'/\1/p" libxpfo.la`; \
	test -n "$$soname" || soname=libxpfo.so; \
	$(MKDIR_P) LD_PRELOAD && \
	sed -e 's|@VERSION[@]|$(VERSION)|g' -e 's|@bindir[@]|$(bindir)|g' \
		-e 's|@libdir[@]|$(libdir)|g' -e "s|@SONAME[@]|$$soname|g" \
		$(top_srcdir)/LD_PRELOAD/xpfo-run.in > $@.tmp && \
	chmod +x $@.tmp && mv $@.tmp $@
CLEANFILES += LD_PRELOAD/xpfo-run
