# src: the bottom layer (platform): the OS boundary (memfd.c: secret memory
# and alias files), errors, options, randomness, the counters, the gadget
# scan.  Nothing here calls alloc/ or api/.
libxpfo_la_SOURCES += src/base.h src/os.h src/os.c src/stats.h src/stats.c \
	src/fatal.h src/fatal.c src/options.h src/options.c src/random.c src/memfd.c src/uffd.c \
	src/gadgets.c src/sandbox_os.c
