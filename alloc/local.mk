# alloc: page ownership and revocation, then slabs, page runs and compartments.
libxpfo_la_SOURCES += alloc/alloc.h alloc/owner.h alloc/owner.c alloc/policy.h alloc/policy.c alloc/meta.c alloc/revoke.h alloc/gather.c alloc/revoke.c alloc/grant.c alloc/compartment.c alloc/pkeys.c alloc/gate.h alloc/gate.c
libxpfo_la_SOURCES += alloc/sizeclass.c alloc/pages.c alloc/heap.h alloc/heap.c alloc/slab.c alloc/run.c alloc/harden.c alloc/uffd.c
# secret compartments' backing and alias views
libxpfo_la_SOURCES += alloc/backing.h alloc/backing.c alloc/secret.c alloc/alias.c
# xpfo_lock_thread: the filter, its executor
libxpfo_la_SOURCES += alloc/sandbox.h alloc/sandbox.c alloc/executor.c
libxpfo_la_LIBADD += $(SECCOMP_LIBS)
