# alloc: page ownership and revocation, then slabs, page runs and compartments.
libxpfo_la_SOURCES += alloc/alloc.h alloc/owner.h alloc/owner.c alloc/meta.c alloc/revoke.c alloc/compartment.c alloc/pkeys.c
libxpfo_la_SOURCES += alloc/sizeclass.c alloc/pages.c alloc/heap.c
