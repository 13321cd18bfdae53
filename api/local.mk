# api: the public entry points (xpfo.h) other than malloc itself: start-up
# and thread states, the fault reporter, statistics, the xpfo_malloc
# family.  They sit on top of alloc/, so they cannot live in src/, the
# bottom layer.
libxpfo_la_SOURCES += api/internal.h api/api.c api/compartment.c api/init.c api/fault.c api/stats.c \
	api/entry.h
# api/prefixed.c, the xpfo_malloc family: LD_PRELOAD/local.mk (with the
# override it is compiled inside LD_PRELOAD/override.c)
