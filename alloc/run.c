/* run.c - page runs and huge blocks.
 *
 * Sizes from RUN_MIN to LARGE_MAX (and slabs' pages) are page runs inside a
 * segment of the compartment, optionally followed by a guard page; larger
 * sizes or alignments take whole segments.  A run is taken back from the
 * thread's own gather first (no syscall: the owner never changed), else
 * granted from the allocator's free pages, in spans.  realloc resizes a run
 * or a huge block in place when it can.
 */
#include "heap.h"
#include "backing.h"
#include "policy.h"

#include <errno.h>

/* Guard pages split VMAs: each live guarded run or slab costs up to two.
 * So that the VMA count does not grow with the number of live blocks, new
 * guards stop while MAX_LIVE_GUARDS are live (and while the process is over
 * its VMA budget); g_stats.live_guards counts them without reading
 * /proc/self/maps on the allocation path. */
#define MAX_LIVE_GUARDS 512

static bool guards_at_limit(void)
{
	return __atomic_load_n(&g_stats.live_guards, __ATOMIC_RELAXED) >= MAX_LIVE_GUARDS ||
	       __atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED);
}

bool guard_allowed(void)
{
	if (guards_at_limit()) {
		stat_inc(guards_skipped);
		return false;
	}
	return true;
}

/* A span of guarded runs of npages (and a guard) each, taken at a for c
 * (grant_guarded_spans said yes): granted by one call (three where some
 * page was not open under markers); the first run is the caller's, the
 * others wait in the gather as spares, guards included (queued like a
 * freed guarded run: one taken back gets its guard set again).  0: done.
 * Else the grant failed and the span was closed again: its other runs go
 * back to the free pages, and the first is left for the caller to grant
 * the usual way (its take, returned); SIZE_MAX: not even closed, the span
 * stays out of use for good (quarantined), and the caller fails. */
static size_t guarded_span(struct tstate *t, struct xpfo_compartment *c, uintptr_t a,
			   size_t npages, size_t take, bool clean)
{
	size_t total = npages + 1;
	bool kept;
	if (grant_guarded_span(a, total, take / total, t->take.runs_open, clean, &kept)) {
		if (kept) { /* not closed: no page of it is handed out */
			policy_quarantine(a, take, c->id);
			return SIZE_MAX;
		}
		struct range r = { a + (total << PAGE_SHIFT), (uint32_t)(take - total), c->id, RK_RUN,
				   0, 0, 0, seg_of(a)->gen, 0, 0 };
		pages_release(&r, 1);
		return total;
	}
	/* each queued run's guard leaves with it */
	for (size_t k = total; k < take; k += total) {
		stat_inc(live_guards);
		flush_if_full(t, revoke_add_spare(t, a + (k << PAGE_SHIFT), total, c->id, true, clean));
	}
	owner_set_guard(a + (npages << PAGE_SHIFT), c->id);
	stat_inc(live_guards);
	return 0;
}

/* Pages whose grant failed go back to the free pages, closed, or where
 * they could not be closed again (grant_range's close_err) are quarantined
 * and reported. */
static void grant_failed(const struct range *r, int close_err)
{
	if (close_err)
		policy_fail_run("close a run whose grant failed", close_err, r->addr, r->npages,
				r->owner);
	else
		pages_release(r, 1);
}

/* MADV_POPULATE_WRITE: 1 works, 0 refused (an older kernel, a seccomp
 * filter of the program's), -1 not tried yet. */
static int populate_state = -1;

/* Fault in a run that is about to be written whole (a small slab's pages,
 * the part of a realloc'd block its old bytes are copied to) and whose
 * frames are known missing (clean: purged, revoked under guard markers, or
 * never touched).  Under guard markers every revoked page loses its frame,
 * so a heap that frees and allocates again faults its pages back in one
 * at a time: 9.2 us a page on the 2-vCPU test machine, against 4.2-6.2 us
 * a page for one MADV_POPULATE_WRITE over 1-16 pages (bench/README.md).
 * Only where the thread reaches the pages directly and nothing else fills
 * them (the userfaultfd's grants, a locked sandbox's executor), and not
 * for secret or aliased backing.  A failure costs only the call: the
 * program faults the pages in as before; a kernel without the advice
 * (before 5.14) or a filter that refuses it turns it off. */
void run_populate(struct tstate *t, uint16_t owner, uintptr_t a, size_t len)
{
	if (!__atomic_load_n(&populate_state, __ATOMIC_RELAXED) || tl_sandbox_locked ||
	    !touch_direct(t, owner) || uffd_filling() || backing_special(a, len))
		return;
	int e = os_populate((void *)a, len);
	if (e == EINVAL || e == ENOSYS || e == EPERM)
		__atomic_store_n(&populate_state, 0, __ATOMIC_RELAXED);
	else if (!e) {
		__atomic_store_n(&populate_state, 1, __ATOMIC_RELAXED);
		stat_add(pages_populated, len >> PAGE_SHIFT);
	}
}

/* A run of npages for compartment c in segments of `tag`, followed by an
 * inaccessible guard page if `guard`: first one this thread queued for
 * revocation itself (no syscall: ownership never changed), else free pages
 * from the allocator, granted.  *clean: known to be zero. */
uintptr_t run_get(struct tstate *t, struct xpfo_compartment *c, size_t npages,
		  size_t align_pages, bool guard, unsigned tag, bool *clean)
{
	size_t total = npages + guard;
	/* a slab asks for a retired slab of its class first (slab_needs_fill) */
	unsigned want = (guard ? RF_GUARDED : 0) | (tag < NCLASSES ? RF_CLASS(tag) : 0);
	uintptr_t a = revoke_cancel(t, total, align_pages, c->id, RK_RUN, want);
	if (a) {
		/* a spare granted clean holds zeros unless an overflow of the
		 * run before it wrote there: a slab's slots are checked for
		 * that at each malloc (write-after-free check), so only a slab
		 * trusts it; calloc's page runs are cleared all the same */
		*clean = tag < NCLASSES && revoke_taken_clean(t, a);
		if (guard)
			owner_set_guard(a + (npages << PAGE_SHIFT), c->id);
		return a;
	}
	/* a span of whole runs, granted at once: the spare waits in the gather
	 * for this thread's next ones (grant_span_size); guarded runs only
	 * where one call grants them all (grant_guarded_spans) and none would
	 * grow in place */
	size_t take = total;
	bool span = align_pages == 1 && !secret_comp(c) &&
		    (!guard || (npages < GUARDED_GROW_MIN && grant_guarded_spans(c)));
	if (span)
		a = pages_alloc_span(c, total, grant_span_size(t, total, guard), tag, guard, &take,
				     clean);
	else
		a = pages_alloc(c, take, align_pages, tag, clean);
	if (!a && (t->g.live || revoke_orphans_waiting())) {
		revoke_flush(t, FR_REUSE);
		a = pages_alloc(c, take = total, align_pages, tag, clean);
	}
	if (!a && pages_drop_kept())
		a = pages_alloc(c, take = total, align_pages, tag, clean);
	if (!a)
		return 0;
	if (guard && take > total && (take = guarded_span(t, c, a, npages, take, *clean)) != total)
		return take ? 0 : a;
	int ce;
	if (grant_range(c, a, (take - guard) << PAGE_SHIFT, &ce)) {
		struct range r = { a, (uint32_t)take, c->id, RK_RUN, 0, 0, 0, seg_of(a)->gen, 0, 0 };
		grant_failed(&r, ce);
		return 0;
	}
	if (guard) {
		owner_set_guard(a + (npages << PAGE_SHIFT), c->id);
		stat_inc(live_guards);
	} else if (take > npages)
		flush_if_full(t, revoke_add_spare(t, a + (npages << PAGE_SHIFT), take - npages,
						  c->id, false, *clean));
	return a;
}

/* Huge blocks on transparent huge pages (opt.thp).  A protection change
 * that covers a 2 MiB huge page whole keeps it one mapping; one that cuts
 * it splits it into 4 KiB ones for good, and after a revocation and a
 * grant each 4 KiB page faults again on its first touch (a hypervisor's
 * exit each where page tables are shadowed: 5.3-8.0 us a page on the
 * 2-vCPU test machine, against 57-87 ns a page over huge pages;
 * bench/README.md, "A page's next touch").
 * So a huge block's span, from its segment's start, ends on a 2 MiB
 * boundary: the block is placed at the end of it (its guard page right
 * after, as before) and the pages before it in its first 2 MiB, its
 * slack, are its owner's, granted and revoked with it but no block's.
 * Its taking back, keeping and resizing move that end by whole huge
 * pages.  Not for a block aligned to more than a page, nor under the
 * userfaultfd's releases or in a secret compartment; a locked thread's
 * blocks get their slack (its executor's counts stay those of an unlocked
 * one) but not the MADV_HUGEPAGE, which its filter does not allow.  That
 * call only flags the VMAs: a kernel without transparent huge pages
 * refuses it once, and then no block gets slack. */
#define THP_PAGES (((size_t)2 << 20) >> PAGE_SHIFT)

static int thp_state = 1;

static size_t huge_slack(const struct xpfo_compartment *c, size_t np, size_t align)
{
	if (!opt.thp || !__atomic_load_n(&thp_state, __ATOMIC_RELAXED) || np < THP_PAGES ||
	    align > PAGE_SIZE || opt.release == RELEASE_UFFD || secret_comp(c))
		return 0;
	return align_up(np, THP_PAGES) - np;
}

/* Flag the segments of a new huge block for huge pages (off: no slack
 * was asked for, nothing to do).  The flag splits the VMA around them:
 * not while the process is over its VMA budget. */
static void huge_thp(uintptr_t a, size_t span, size_t off)
{
	if (!off || tl_sandbox_locked || __atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED) ||
	    backing_special(a, span << PAGE_SHIFT))
		return;
	/* advice: another error costs only the huge pages */
	int e = os_hugepage((void *)a, align_up(span << PAGE_SHIFT, SEG_SIZE), true);
	if (e == EINVAL || e == EPERM || e == ENOSYS)
		__atomic_store_n(&thp_state, 0, __ATOMIC_RELAXED);
}

/* New segments for a huge block (none of this thread's to take back),
 * granted to c; 0 when there are none or the grant failed. */
static uintptr_t huge_grant(struct tstate *t, struct xpfo_compartment *c, size_t np, size_t align,
			    bool guard, size_t off, bool *clean)
{
	size_t span = np + guard;
	uintptr_t a = huge_alloc(c, span, align, clean);
	if (!a && (t->g.live || revoke_orphans_waiting())) {
		revoke_flush(t, FR_REUSE);
		a = huge_alloc(c, span, align, clean);
	}
	if (!a && pages_drop_kept()) /* the pool ran out: the kept blocks go back */
		a = huge_alloc(c, span, align, clean);
	if (a && guard) {
		/* the guard page is never mapped: not counted */
		stat_sub(mapped_pages, 1);
		stat_sub(resident_pages, 1);
	}
	if (a)
		huge_thp(a, span, off);
	if (a && grant_range(c, a, np << PAGE_SHIFT, NULL)) {
		struct range r = { a, (uint32_t)np, c->id, RK_HUGE, 0, 0, 0, seg_of(a)->gen, 0, 0 };
		seg_of(a)->releasing = 1;
		pages_release(&r, 1);
		a = 0;
	}
	return a;
}

/* A huge block now holds np pages: the gauges counted s->huge_pages for it
 * (pages_release subtracts what it holds when it goes), so they move by the
 * difference (a block resized in place, or taken back from the gather). */
static void huge_recount(struct segment *s, size_t np)
{
	int64_t d = (int64_t)np - (int64_t)s->huge_pages;
	stat_gauge_add(&g_stats.resident_pages, &g_stats.peak_resident_pages, d);
	stat_gauge_add(&g_stats.mapped_pages, &g_stats.peak_mapped_pages, d);
	s->huge_pages = (uint32_t)np;
}

/* Huge block a of c's (np pages), taken but not granted whole: its
 * segments go back to the pool, mapped afresh (a changed protection may
 * have been left half done). */
static void huge_give_back(struct xpfo_compartment *c, uintptr_t a, size_t np)
{
	struct range r = { .addr = a, .npages = (uint32_t)np, .owner = c->id, .kind = RK_HUGE,
			   .gen = seg_of(a)->gen };
	__atomic_store_n(&seg_of(a)->releasing, 1, __ATOMIC_RELEASE);
	pages_release(&r, 1);
}

/* A queued huge block of old pages taken back (gather.c
 * revoke_cancel_huge) now holds np: the pages it gains opened, the ones it
 * loses closed (the rest of its last segment stays closed); where that
 * fails, it is given back (huge_give_back). */
static bool huge_fit(struct xpfo_compartment *c, uintptr_t a, size_t old, size_t np)
{
	int e = 0;
	if (np > old)
		e = grant_range(c, a + (old << PAGE_SHIFT), (np - old) << PAGE_SHIFT, NULL);
	else if (np < old)
		e = revoke_range(a + (np << PAGE_SHIFT), (old - np) << PAGE_SHIFT);
	if (!e)
		return true;
	huge_give_back(c, a, old);
	return false;
}

/* A revoked huge block c kept (pages.c pages_take_kept) as its next one of
 * np pages: its first np pages granted, the rest of its segments stay
 * closed; 0 when none fits or the grant failed (then it is released). */
static uintptr_t huge_take_kept(struct xpfo_compartment *c, size_t np, size_t align, bool guard)
{
	uintptr_t a = pages_take_kept(c, np, align, guard);
	if (a && grant_range(c, a, np << PAGE_SHIFT, NULL)) {
		huge_give_back(c, a, np);
		a = 0;
	}
	return a;
}

/* Whole segments for np pages (off of them slack: huge_slack); with
 * guard_large one more page, so the rest of the last segment always leaves
 * an inaccessible page behind it.  Returns the span's start. */
static uintptr_t huge_get(struct tstate *t, struct xpfo_compartment *c, size_t np, size_t align,
			  bool guard, size_t off, bool *clean)
{
	size_t nsegs = align_up((np + guard) << PAGE_SHIFT, SEG_SIZE) >> SEG_SHIFT, old = 0;
	uintptr_t a = revoke_cancel_huge(t, nsegs, align_up(align, SEG_SIZE) >> PAGE_SHIFT, c->id,
					 np, &old);
	*clean = false;
	if (a && !huge_fit(c, a, old, np))
		a = 0;
	if (a)
		huge_recount(seg_of(a), np);
	else if ((a = huge_take_kept(c, np, align, guard)))
		; /* counted by pages_take_kept */
	else if ((a = huge_grant(t, c, np, align, guard, off, clean)))
		seg_of(a)->huge_pages = (uint32_t)np; /* counted by huge_grant */
	if (a) {
		seg_of(a)->huge_off = (uint32_t)off;
		__atomic_store_n(&seg_of(a)->releasing, 0, __ATOMIC_RELEASE);
	}
	return a;
}

/* A calloc'd run on pages whose frames are missing is faulted in whole
 * (run_populate) up to this many pages: a table read before it is written
 * (a hash map's buckets) maps the zero page at each first read, and the
 * program's first write then replaces that mapping, a second fault and a
 * TLB flush on every CPU the process runs on.  A larger one may be used
 * sparsely: its untouched pages stay unmapped. */
#define CALLOC_POPULATE_PAGES 64

void *large_alloc(struct tstate *t, size_t size, size_t align, bool zero, size_t written)
{
	struct xpfo_compartment *c = t->heap->comp;
	if (size > heap_end - heap_base)
		return fail_null(ENOMEM);
	size_t np = align_up(size, PAGE_SIZE) >> PAGE_SHIFT;
	bool guard = opt.guard_large && guard_allowed();
	bool clean;
	uintptr_t a;
	if (size > LARGE_MAX || align > SEG_SIZE / 4) {
		size_t off = huge_slack(c, np, align);
		a = huge_get(t, c, off + np, align, guard, off, &clean);
		if (a)
			a += off << PAGE_SHIFT;
	} else {
		size_t ap = align > PAGE_SIZE ? align >> PAGE_SHIFT : 1;
		a = run_get(t, c, np, ap, guard, TAG_LARGE, &clean);
		if (a) /* taken or taken back, its tails point at it */
			owner_set_large_head(a, np, c->id);
	}
	if (!a)
		return fail_null(ENOMEM);
	if (clean)
		slab_shed_kept(t, t->heap, np);
	if (zero && !clean)
		memset((void *)a, 0, np << PAGE_SHIFT);
	else if (written >= PAGE_SIZE && clean)
		run_populate(t, c->id, a, align_up(written, PAGE_SIZE));
	else if (zero && clean && np <= CALLOC_POPULATE_PAGES)
		run_populate(t, c->id, a, np << PAGE_SHIFT);
	t->st.allocs[LARGE_CLASS]++;
	t->st.large_live_bytes += np << PAGE_SHIFT;
	return (void *)a;
}

/* Shrink a page run in place: the tail goes to the gather (with a guard,
 * its first page becomes the new guard, already made inaccessible, and the
 * old guard ends the freed tail). */
static void run_shrink(struct tstate *t, uintptr_t a, const struct blk *b, size_t np, size_t nnp)
{
	owner_set_large_head(a, nnp, b->owner); /* its tails still point at it */
	stat_sub(large_live_bytes, (np - nnp) << PAGE_SHIFT);
	if (b->guarded) {
		owner_set_guard(a + (nnp << PAGE_SHIFT), b->owner);
		stat_inc(live_guards); /* the old one leaves with the tail */
		if (np - nnp > 0)
			flush_if_full(t, revoke_add(t, a + ((nnp + 1) << PAGE_SHIFT), np - nnp, b->owner,
						    RK_RUN, RF_GUARDED));
	} else {
		flush_if_full(t, revoke_add(t, a + (nnp << PAGE_SHIFT), np - nnp, b->owner, RK_RUN, 0));
	}
}

/* Resize a huge block within its segments (not below half its size: the
 * freed pages would stay with it); false: it must move. */
static bool huge_resize(uintptr_t a, struct blk *b, size_t np, size_t nnp)
{
	if (b->kind != BK_HUGE)
		return false;
	size_t off = b->seg->huge_off;
	size_t room = (size_t)b->seg->nsegs * SEG_PAGES - opt.guard_large - off;
	if (nnp > room || nnp <= np / 2)
		return false;
	/* its own segments: mapped afresh when it goes, whatever a failed
	 * grant left */
	if (nnp > np &&
	    grant_range(comp_table[b->owner], a + (np << PAGE_SHIFT), (nnp - np) << PAGE_SHIFT, NULL))
		return false;
	if (nnp < np) {
		if (revoke_range(a + (nnp << PAGE_SHIFT), (np - nnp) << PAGE_SHIFT))
			return false;
	}
	huge_recount(b->seg, off + nnp);
	stat_add(large_live_bytes, (nnp << PAGE_SHIFT) - (np << PAGE_SHIFT));
	return true;
}

/* The guard page of a run growing by `extra` moves to its new end: made
 * inaccessible before the old one opens (the run never ends unguarded). */
static int grow_move_guard(uintptr_t addr, size_t new_npages, uint16_t owner)
{
	uintptr_t ng = addr + (new_npages << PAGE_SHIFT);
	int e = revoke_range(ng, PAGE_SIZE);
	if (e)
		return e;
	owner_set_guard(ng, owner);
	return 0;
}

static void grow_keep_guard(uintptr_t old, uint16_t owner)
{
	int e = revoke_range(old, PAGE_SIZE);
	if (e) {
		stat_inc(revoke_failures);
		xpfo_error("cannot close the guard page at %p again after a failed realloc in "
			   "place (errno %d): the run ends unguarded (compartment \"%s\")",
			   (void *)old, (long)e, comp_table[owner]->name);
	}
	owner_set_guard(old, owner);
}

/* Grow the run at addr from npages where it is, over the free pages after
 * it (pages_take_after: at least min_npages, at most max_npages).  A
 * guarded run's old guard becomes the run's, the last new page its guard.
 * Returns the new count, with the pages granted, or 0 (nothing changed). */
static size_t run_grow_in_place(uintptr_t addr, size_t npages, size_t min_npages,
				size_t max_npages, bool guard)
{
	struct range r;
	size_t new_npages = pages_take_after(addr, npages, min_npages, max_npages, guard, &r);
	if (!new_npages)
		return 0;
	if (guard && grow_move_guard(addr, new_npages, r.owner)) {
		pages_release(&r, 1);
		return 0;
	}
	int ce;
	if (grant_range(comp_table[r.owner], addr + (npages << PAGE_SHIFT), (size_t)r.npages << PAGE_SHIFT,
			&ce)) {
		/* the new guard stays inaccessible; the old one stays the guard
		 * (closed again: a failed grant may have opened a prefix) */
		if (guard)
			grow_keep_guard(addr + (npages << PAGE_SHIFT), r.owner);
		grant_failed(&r, ce); /* could not open them: straight back */
		return 0;
	}
	return new_npages;
}

/* Resize a page run or huge block of the caller's compartment where it
 * is, to size bytes or, growing a page run, up to room bytes where the
 * pages after it are free; false: it must move. */
bool realloc_in_place(struct tstate *t, uintptr_t a, struct blk *b, size_t size, size_t room)
{
	size_t np = b->usable >> PAGE_SHIFT;
	size_t nnp = align_up(size, PAGE_SIZE) >> PAGE_SHIFT;
	if (nnp == np)
		return true;
	/* a guarded shared run moves: its new guard page would stay in the
	 * memfd, read by the holders, and written again if the run grew back */
	if (b->kind == BK_LARGE && nnp < np && nnp > 0 &&
	    (!b->guarded ||
	     (!alias_in(a, np << PAGE_SHIFT) && revoke_range(a + (nnp << PAGE_SHIFT), PAGE_SIZE) == 0))) {
		run_shrink(t, a, b, np, nnp);
		return true;
	}
	/* a guarded run grows in place only from 256 KiB and by a quarter of
	 * its size at most (an append): the new guard and the grant are two
	 * protection calls, while a smaller or geometric growth moves into a
	 * run its thread queued, no call (in place, realloc_grow1.5x/65536
	 * took 10x as long, realloc_append64/65536 3x; realloc_append64/1MiB
	 * took 65x as long moving at every page) */
	size_t max = align_up(room > size ? room : size, PAGE_SIZE) >> PAGE_SHIFT, got;
	if (b->guarded && max > np && (max - np) * 4 > np)
		max = np + np / 4;
	if (b->kind == BK_LARGE && size <= LARGE_MAX && nnp > np &&
	    (!b->guarded || (np >= GUARDED_GROW_MIN && (nnp - np) * 4 <= np)) &&
	    (got = run_grow_in_place(a, np, nnp, max > nnp ? max : nnp, b->guarded))) {
		owner_set_large(a, got, b->owner);
		stat_add(large_live_bytes, (got - np) << PAGE_SHIFT);
		return true;
	}
	return huge_resize(a, b, np, nnp);
}
