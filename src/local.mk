libxpfo_la_SOURCES += src/internal.h src/os.h src/os.c src/stats.h src/stats.c \
	src/fatal.h src/fatal.c src/options.h src/options.c src/meta.c src/revoke.c \
	src/init.c src/api.c src/compartment.c src/fault.c src/random.c src/pkeys.c \
	src/prefixed.c src/memfd.c

# xpfo_lock_thread (the sandbox issue): the filter, its executor, the gadget scan
libxpfo_la_SOURCES += src/sandbox.h src/sandbox.c src/executor.c src/gadgets.c
libxpfo_la_LIBADD += $(SECCOMP_LIBS)
