# --disable-override leaves the libc names out: only the xpfo_ API (src/prefixed.c).
if XPFO_OVERRIDE
libxpfo_la_SOURCES += LD_PRELOAD/override.c
else
EXTRA_DIST += LD_PRELOAD/override.c
endif
EXTRA_DIST += LD_PRELOAD/xpfo-run.in
EXTRA_DIST += LD_PRELOAD/demo.py

# The Quick start's main job: a real program under xpfo, with its statistics.
demo_python = $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
.PHONY: demo
demo: libxpfo.la LD_PRELOAD/xpfo-run
	PYTHONMALLOC=malloc $(top_builddir)/LD_PRELOAD/xpfo-run --stats -- $(demo_python) $(top_srcdir)/LD_PRELOAD/demo.py
