/* internal.h - the interface layer's umbrella (api/ and LD_PRELOAD/): the
 * allocator (alloc.h), page ownership (owner.h) and the prototypes of
 * api/'s own files.  Only files of the top layer include it. */
#ifndef XPFO_INTERNAL_H
#define XPFO_INTERNAL_H

#include "alloc.h"
#include "owner.h"

/* ---- api/init.c: start-up and thread states ---------------------------- */
void xpfo_init(void);
struct tstate *tstate_slow(void);
void tstate_foreach(void (*fn)(struct tstate *, void *), void *arg);
/* The calling thread's state, made (and xpfo started) on first use: every
 * entry point begins here, so the layers below are given the state. */
static inline struct tstate *tstate_get(void)
{
	struct tstate *t = tl_state;
	return likely(t != NULL) ? t : tstate_slow();
}

/* ---- api/fault.c ------------------------------------------------------- */
void fault_install(void);

/* ---- api/stats.c ------------------------------------------------------- */
void stats_fill(struct xpfo_stats *s);
void stats_merge_thread(struct tstate *t);
void stats_fork_lock(bool lock);             /* fork: take or drop the merge lock */

#endif
