libxpfo_la_SOURCES += LD_PRELOAD/override.c
EXTRA_DIST += LD_PRELOAD/xpfo-run.in
