/* internal.h - the interface layer's umbrella (api/ and LD_PRELOAD/): the
 * allocator (alloc.h), page ownership (owner.h) and the prototypes of
 * api/'s own files.  Only files of the top layer include it. */
#ifndef XPFO_INTERNAL_H
#define XPFO_INTERNAL_H

#include "alloc.h"
#include "owner.h"

/* ---- api/fault.c ------------------------------------------------------- */
void fault_install(void);

/* ---- api/stats.c ------------------------------------------------------- */
void stats_fill(struct xpfo_stats *s);
void stats_merge_thread(struct tstate *t);
void stats_fork_lock(bool lock);             /* fork: take or drop the merge lock */

#endif
