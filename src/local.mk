# src: the bottom layer (platform): the OS boundary, errors, options,
# randomness and the counters.  Nothing here calls alloc/ or api/.
libxpfo_la_SOURCES += src/base.h src/os.h src/os.c src/stats.h src/stats.c \
	src/fatal.h src/fatal.c src/options.h src/options.c src/random.c
