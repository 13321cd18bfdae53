libxpfo_la_SOURCES += alloc/sizeclass.c alloc/pages.c alloc/heap.c alloc/backing.h alloc/secret.c alloc/alias.c
