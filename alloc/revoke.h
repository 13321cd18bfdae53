/* revoke.h - between the revocation layer's three files: gather.c (the
 * per-thread queue of pending revocations), revoke.c (applying it: protect,
 * purge, release) and grant.c (access for pages taken from the allocator).
 * alloc.h has what the layers above call. */
#ifndef XPFO_REVOKE_H
#define XPFO_REVOKE_H

#include "alloc.h"

/* A fork child sees the other threads' memory as each left it at the fork:
 * a prefix of its stores in program order (a thread stops at its first
 * write to a page fork has made copy-on-write).  So a gather caught in the
 * middle of a change may count an entry not yet written (a stale one,
 * released before: released twice, free pages counted twice), or hold an
 * entry half shrunk.  The owning thread marks such changes; the release
 * orders the change before the mark's end. */
static inline void gather_busy(struct gather *g, bool on)
{
	if (on) {
		__atomic_store_n(&g->busy, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&g->busy, 0, __ATOMIC_RELEASE);
	}
}

static inline uintptr_t range_end(const struct range *r) { return r->addr + ((uintptr_t)r->npages << PAGE_SHIFT); }

/* ---- gather.c: a flush's view of the queue -------------------------------- */
/* Decide what the flush covers: the gather's live runs but its `keep`
 * newest, sorted and emptied from the gather (returns how many, in g->r).
 * *careful: pages_lock is held across the protection changes (the flush
 * lets it go); else fast_flushes_inflight counts the flush until then. */
unsigned gather_take(struct gather *g, bool *careful, unsigned keep);
/* How many of the newest runs a flush for `why` keeps queued, and putting
 * them back after it (gather_restore). */
unsigned gather_keep(const struct gather *g, enum flush_reason why);
void gather_restore(struct gather *g, unsigned keep);

/* ---- revoke.c: applying a gather ------------------------------------------- */
/* Apply g's runs but its `keep` newest (a thread's, or an orphan gather
 * under its lock), counted as a flush for why; 0 or an errno. */
int gather_apply(struct tstate *t, struct gather *g, enum flush_reason why, unsigned keep);

/* ---- revoke.c: what the revocation found working -------------------------- */
bool revoke_marks_seen(void);    /* guard markers were installed */
/* Root's spans are revoked with guard markers, many in one call (both seen
 * working), by this thread now: the grant side may take them back a span at
 * a time (grant_guarded_spans). */
bool revoke_marks_batched(void);

/* ---- grant.c ---------------------------------------------------------------- */
/* A flush revoked a spare nobody used: the next grant spans are shorter. */
void grant_span_unused(struct gather *g);

#endif
