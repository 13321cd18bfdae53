/* revoke.c - the revocation engine: a per-thread gather, in the shape of the
 * kernel's mmu_gather (include/asm-generic/tlb.h, mm/mmu_gather.c).
 *
 * The ordering rule (invariant I2): revoke, flush, reuse.  A freed run is
 * queued here (revoke_add) and stays out of every free structure until the
 * gather is applied (revoke_flush): its protection is removed, its frames are
 * released where that pays, and only then does pages_release() make it free
 * for any owner.  So no page reaches a new owner while its previous owner
 * can still reach it.  The one shortcut is revoke_cancel: the same thread
 * taking a queued run back for the same owner, whose ownership never
 * changed, so there is nothing to revoke.  That is what makes deferral pay:
 * the cheapest revocation is the one never applied.
 *
 * Batching: queued runs are sorted and adjacent ones coalesced at flush time,
 * one mprotect per coalesced span.  Each mprotect of a mapping that other
 * CPUs may cache costs a TLB shootdown (measured here: ~11 us for one page
 * with one thread, ~58 us with a second thread running, ~0.5 us per page over
 * a 64-page range), which is what batching saves.  Bounds: opt.batch frees or
 * opt.batch_pages freed pages since the last flush (those taken back by
 * revoke_cancel count too).  As __tlb_remove_page says when the batch runs
 * out, revoke_add returns true when the gather is full and the caller
 * flushes it.  The flush is two steps, like tlb_flush_mmu: gather_protect
 * takes access away (mprotect or pkey_mprotect to none, purge), then
 * gather_release hands the pages back (pages_release).  What to flush is
 * decided first (gather_take); heap_lock is held across the protection
 * changes only when a compartment was destroyed meanwhile (its segments must
 * not change hands under the flush).  They also bound how long a freed page stays
 * reachable by the thread that freed it: until its gather is applied.
 * revoke=eager applies every run as it comes, the baseline.
 */
#include "alloc.h"
#include "owner.h"
#include "backing.h"
#include "policy.h"

#include <errno.h>
#include <limits.h>
#include <string.h>

/* Compartments destroyed so far, and flushes under way that did not see
 * the last destroy (compartment.c's comp_destroy waits for them: a flush
 * that saw no destroy holds no lock over its protection changes). */
uint32_t destroy_serial;
uint32_t fast_flushes_inflight;

void gather_init(struct gather *g)
{
	g->n = g->live = g->frees = 0;
	g->pages = g->free_pages = 0;
	for (unsigned b = 0; b < GATHER_BUCKETS; b++)
		g->head[b] = GATHER_NIL;
}

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

/* Fork child, for a thread that did not survive the fork: a gather it was
 * changing is dropped, not applied.  Its runs stay queued (PG_PENDING) for
 * good in the child: never reused, never released twice. */
void revoke_fork_orphan(struct tstate *t)
{
	if (!__atomic_load_n(&t->g.busy, __ATOMIC_ACQUIRE))
		return;
	gather_init(&t->g);
	t->q.nruns = 0;
	t->g.busy = 0;
}

static inline unsigned bucket(size_t npages) { return npages < 32 ? (unsigned)npages : 32; }

static void link(struct gather *g, uint16_t i)
{
	unsigned b = bucket(g->r[i].npages);
	g->r[i].prev = GATHER_NIL;
	g->r[i].next = g->head[b];
	if (g->head[b] != GATHER_NIL)
		g->r[g->head[b]].prev = i;
	g->head[b] = i;
}

static void unlink_entry(struct gather *g, uint16_t i)
{
	struct range *r = &g->r[i];
	if (r->prev != GATHER_NIL)
		g->r[r->prev].next = r->next;
	else
		g->head[bucket(r->npages)] = r->next;
	if (r->next != GATHER_NIL)
		g->r[r->next].prev = r->prev;
}

static void set_pending(const struct range *r)
{
	if (r->kind == RK_HUGE)
		__atomic_store_n(&seg_of(r->addr)->releasing, 1, __ATOMIC_RELEASE);
	else if (r->flags & RF_WHOLE)
		owner_set_pending_whole(r->addr, r->npages, r->owner);
	else
		owner_set_pending(r->addr, r->npages, RF_CLASS_OF(r->flags), r->owner);
}

static void gather_push(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner,
			enum range_kind k, unsigned flags)
{
	struct gather *g = &t->g;
	if (g->n == GATHER_MAX)
		revoke_flush(t, FR_FULL);
	gather_busy(g, true);
	if (!g->live)
		g->destroy_serial = __atomic_load_n(&destroy_serial, __ATOMIC_ACQUIRE);
	uint16_t i = (uint16_t)g->n++;
	struct xpfo_compartment *c = comp_table[owner];
	g->r[i] = (struct range){ addr, (uint32_t)npages, owner, (uint8_t)k, 0, 0, 0,
				  seg_of(addr)->gen, 0, (uint16_t)flags };
	/* A compartment's open and close walks run under its lock and skip or
	 * take queued pages by their entries: queue under the same lock, so
	 * the access_gen recorded here says which side of a walk the run is
	 * on (revoke_cancel reopens it when a walk came after).  Root walks
	 * for STRICT, with one thread, and on pkeys at the first lock
	 * (comp_plain_rekey), with any number. */
	if (c && (c != &comp_root || pkeys_on)) {
		pthread_mutex_lock(&c->lock);
		g->r[i].cgen = c->access_gen;
		set_pending(&g->r[i]);
		pthread_mutex_unlock(&c->lock);
	} else {
		g->r[i].cgen = c ? c->access_gen : 0;
		set_pending(&g->r[i]);
	}
	link(g, i);
	g->live++;
	g->pages += npages;
	gather_busy(g, false);
}

/* Full: the batch bound is reached (every run, with revoke=eager). */
static bool gather_full(const struct gather *g)
{
	return opt.revoke == REVOKE_EAGER || g->frees >= opt.batch ||
	       g->free_pages >= opt.batch_pages;
}

enum flush_reason revoke_full_reason(void)
{
	return opt.revoke == REVOKE_EAGER ? FR_EAGER : FR_FULL;
}

bool revoke_add(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner, enum range_kind k,
		unsigned flags)
{
	t->st.revoke_queued++;
	t->st.pages_queued += npages;
	gather_push(t, addr, npages, owner, k, flags);
	/* counted here, not by live entries: frees taken back by the next
	 * malloc would otherwise keep the count down, and the other runs of
	 * the gather would wait (reachable) for ever */
	t->g.frees++;
	t->g.free_pages += npages;
	t->g.free_serial++;
	return gather_full(&t->g);
}

bool revoke_add_spare(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner,
		      bool guarded, bool clean)
{
	gather_push(t, addr, npages, owner, RK_RUN,
		    RF_SPARE | (guarded ? RF_GUARDED : 0) | (clean ? RF_CLEAN : 0));
	return gather_full(&t->g);
}

/* Grant spans (issue 11): a thread that needs pages takes a span of its
 * owner's free pages with one protection change, and the rest waits in the
 * gather as a spare its next runs and slabs take back without a syscall.
 * The span doubles at every grant, from GRANT_MIN up to GRANT_MAX pages,
 * and halves when a flush revokes spare pages nobody used.  The spare's
 * pages are the owner's from then on (I3 holds: they never leave it until
 * revoked like any freed run).  revoke=eager takes no spare: it would be
 * revoked at once, a syscall for nothing. */
#define GRANT_MIN 16
#define GRANT_MAX 256

/* The thread's grant span, doubled for the next grant up to GRANT_MAX. */
static size_t grant_span_next(struct gather *g)
{
	size_t span = g->span ? g->span : GRANT_MIN;
	if (span < GRANT_MAX)
		g->span = (uint32_t)span * 2;
	return span;
}

size_t revoke_grant_span(struct tstate *t, size_t npages, bool guarded)
{
	if (opt.revoke == REVOKE_EAGER || npages >= GRANT_MAX)
		return npages;
	size_t span = grant_span_next(&t->g);
	/* guarded runs: one range each in grant_guarded_span's call */
	if (guarded && span > npages * OS_GUARD_VEC)
		span = npages * OS_GUARD_VEC;
	return span < npages ? npages : span / npages * npages;
}

/* Where a request for npages (flags RF_GUARDED or 0) would take queued run
 * r: its head, or for a guarded request its tail, which ends at the run's
 * guard page (the guard stays where it was: no protection change). */
static inline uintptr_t take_at(const struct range *r, size_t npages, unsigned flags)
{
	return (flags & RF_GUARDED) ? r->addr + ((r->npages - npages) << PAGE_SHIFT) : r->addr;
}

/* A guarded page run takes the tail of a longer guarded run only where
 * at most this many pages stay queued: a long run freed (an array that
 * grew) is not cut into by shorter ones (hash's table, doubling at each
 * growth, lost the run its next growth would take: 17% more page faults
 * when half of a run could go). */
#define TAIL_REST_MAX 16

/* Can queued run r serve a request for npages (flags RF_GUARDED or 0, and
 * a slab's RF_CLASS)?  A guarded request wants a guarded run of that size,
 * or for a page run, a freed page run's a little longer (its tail,
 * take_at); with a quarantine for runs, only spares qualify. */
static inline bool fits(const struct range *r, size_t npages, size_t align, uint16_t owner,
			enum range_kind k, unsigned flags)
{
	if (r->owner != owner || r->kind != k || r->npages < npages ||
	    (take_at(r, npages, flags) & (align - 1)) || r->gen != seg_of(r->addr)->gen)
		return false;
	if ((r->flags & RF_GUARDED) != (flags & RF_GUARDED))
		return false;
	if ((flags & RF_GUARDED) && r->npages != npages &&
	    (RF_CLASS_OF(flags) >= 0 || RF_CLASS_OF(r->flags) >= 0 || (r->flags & RF_SPARE) ||
	     r->npages - npages > TAIL_REST_MAX))
		return false;
	if (opt.quarantine_large && !(r->flags & RF_SPARE))
		return false;
	/* a shared run is revoked by the flush: its pages are another
	 * process's too until then; a secret run is never taken back, so
	 * that every secret run is one whole file (one VMA) of its own */
	return !alias_in(r->addr, (size_t)r->npages << PAGE_SHIFT) && !secret_comp(comp_table[owner]);
}

/* Entry i's last npages (and its guard) were taken back: its head stays
 * queued, without a guard now.  It is a page run's (fits): its other pages
 * say pending already (a run queued whole: they point at the head, which
 * stays where it was), only the head's length is written. */
static void gather_shrink_tail(struct gather *g, uint16_t i, size_t npages)
{
	struct range *r = &g->r[i];
	r->npages -= (uint32_t)npages;
	r->flags &= RF_WHOLE;
	owner_set_pending_head(r->addr, r->npages, r->owner);
	link(g, i);
}

/* Entry i's first npages were taken back (its last ones, `tail`: a
 * guarded request that took a longer run): the rest stays queued. */
static void gather_shrink(struct gather *g, uint16_t i, size_t npages, bool tail)
{
	struct range *r = &g->r[i];
	unlink_entry(g, i);
	if (tail) {
		gather_shrink_tail(g, i, npages);
	} else if (r->npages > npages) {
		/* keep the tail queued (no longer a whole slab: no class); the
		 * tail of a run without class already says pending but for its
		 * head (a grant span is taken one run at a time), but a run
		 * queued whole, whose tails point at the old head */
		bool rewrite = RF_CLASS_OF(r->flags) >= 0 || (r->flags & RF_WHOLE);
		r->addr += npages << PAGE_SHIFT;
		r->npages -= (uint32_t)npages;
		r->flags &= RF_GUARDED | RF_SPARE | RF_CLEAN;
		if (rewrite)
			set_pending(r);
		else
			owner_set_pending_head(r->addr, r->npages, r->owner);
		link(g, i);
	} else {
		r->npages = 0;
		g->live--;
	}
	g->pages -= npages;
}

/* Once a queued run fits, how many more entries of its bucket are looked
 * at for one of the class asked for. */
#define CLASS_LOOKAHEAD 8

/* The queued run revoke_cancel takes: exact size first, and there a
 * retired slab of the class asked for (RF_CLASS in flags) if one is near
 * the bucket's head (a new slab of that class need not be filled, see
 * slab.c's slab_needs_fill), else the newest that fits; then (page runs
 * only, and for a guarded one no more than TAIL_REST_MAX pages larger)
 * the smallest larger bucket. */
static uint16_t gather_find(const struct gather *g, size_t npages, size_t align, uint16_t owner,
			    enum range_kind k, unsigned flags)
{
	/* only slab_new's fill gains from it (slab_needs_fill) */
	int want = opt.waf_check && !opt.junk ? RF_CLASS_OF(flags) : -1;
	/* a guarded request looks no further than fits lets it take */
	unsigned last = GATHER_BUCKETS - 1;
	if (flags & RF_GUARDED)
		last = bucket(RF_CLASS_OF(flags) >= 0 ? npages : npages + TAIL_REST_MAX);
	for (unsigned b = bucket(npages); b <= last; b++) {
		uint16_t found = GATHER_NIL;
		unsigned more = CLASS_LOOKAHEAD;
		for (uint16_t i = g->head[b]; i != GATHER_NIL; i = g->r[i].next) {
			const struct range *r = &g->r[i];
			if (found != GATHER_NIL && more-- == 0)
				break;
			if (!fits(r, npages, align, owner, k, flags) ||
			    (r->npages != npages && k != RK_RUN))
				continue;
			if (want < 0 || RF_CLASS_OF(r->flags) == want)
				return i;
			if (found == GATHER_NIL)
				found = i;
		}
		if (found != GATHER_NIL || k != RK_RUN)
			return found;
	}
	return GATHER_NIL;
}

uintptr_t revoke_cancel(struct tstate *t, size_t npages, size_t align_pages, uint16_t owner,
			enum range_kind k, unsigned flags)
{
	struct gather *g = &t->g;
	size_t align = align_pages << PAGE_SHIFT;
	g->taken = 0;
	uint16_t found = gather_find(g, npages, align, owner, k, flags);
	if (found == GATHER_NIL)
		return 0;
	struct range *r = &g->r[found];
	uintptr_t a = take_at(r, npages, flags);
	/* a guarded run's tail: its pages point at the run's head */
	bool tail = a != r->addr;
	struct xpfo_compartment *c = comp_table[owner];
	size_t open_pages = npages - ((flags & RF_GUARDED) ? 1 : 0);
	/* Under the compartment's lock, like its open and close walks: the
	 * run is reopened if a walk came since it was queued, and its pages
	 * stop being queued (they become the new run's placeholders) before
	 * any other walk can look at them. */
	bool locked = c && (c != &comp_root || pkeys_on); /* root: see revoke_add */
	if (locked)
		pthread_mutex_lock(&c->lock);
	if (c && r->cgen != c->access_gen && grant_locked(c, a, open_pages << PAGE_SHIFT)) {
		if (locked)
			pthread_mutex_unlock(&c->lock);
		return 0; /* could not reopen it */
	}
	gather_busy(g, true);
	if (k == RK_HUGE)
		__atomic_store_n(&seg_of(a)->releasing, 0, __ATOMIC_RELEASE);
	else if (c != &comp_root || pkeys_on || tail ||
		 (RF_CLASS_OF(flags) < 0 && !(r->flags & RF_WHOLE)))
		owner_set_reclaimed(a, npages, owner);
	/* else root's run keeps its pending entries until the caller writes
	 * the slab's, or the head of a page run taken from a run queued whole
	 * (its tails point at it already; one taken from any other queued run
	 * got its placeholders just above, for owner_set_large_head): one
	 * walk of its pages less, issue 11.  On
	 * the mprotect backend root's pages are walked only by root_access,
	 * in comp_enter/comp_leave of a STRICT compartment, by the process's
	 * only thread (comp_enter counts the threads; one started while root
	 * is closed stops at tstate_slow) right after it flushed its gather
	 * (FR_SWITCH keeps nothing): so by this thread, never between here
	 * and that setup.  uffd's pages_walk_live takes pending and live pages
	 * alike.  The pages are not free and their aux is still root's: the
	 * invariant beside struct segment (owner.h) holds. */
	if (locked)
		pthread_mutex_unlock(&c->lock);
	if ((r->npages == npages && RF_CLASS_OF(r->flags) >= 0) || (r->flags & RF_CLEAN)) {
		g->taken = a;
		g->taken_cls = RF_CLASS_OF(r->flags);
		g->taken_clean = r->flags & RF_CLEAN;
	}
	gather_shrink(g, found, npages, tail);
	t->st.pages_cancelled += npages;
	gather_busy(g, false);
	return a;
}

int revoke_taken_class(const struct tstate *t, uintptr_t a)
{
	return a && t->g.taken == a ? t->g.taken_cls : -1;
}

bool revoke_taken_clean(const struct tstate *t, uintptr_t a)
{
	return a && t->g.taken == a && t->g.taken_clean;
}

/* Shell sort by address: the gather is small and often nearly sorted. */
static void sort_ranges(struct range *r, unsigned n)
{
	static const unsigned gaps[] = { 1750, 701, 301, 132, 57, 23, 10, 4, 1 };
	for (unsigned gi = 0; gi < sizeof gaps / sizeof gaps[0]; gi++) {
		unsigned gap = gaps[gi];
		for (unsigned i = gap; i < n; i++) {
			struct range x = r[i];
			unsigned j = i;
			for (; j >= gap && r[j - gap].addr > x.addr; j -= gap)
				r[j] = r[j - gap];
			r[j] = x;
		}
	}
}

static inline uintptr_t range_end(const struct range *r) { return r->addr + ((uintptr_t)r->npages << PAGE_SHIFT); }

static void quarantine(struct range *r);

/* Purge the coalesced page runs (not huge ones: their segments are purged
 * when released) of r[a..b) that are at least min bytes long. */
static void purge_span(struct range *r, unsigned a, unsigned b, size_t min)
{
	for (unsigned i = a; i < b;) {
		if (r[i].kind != RK_RUN) {
			i++;
			continue;
		}
		unsigned j = i + 1;
		while (j < b && r[j].kind == RK_RUN && r[j].addr == range_end(&r[j - 1]))
			j++;
		size_t len = range_end(&r[j - 1]) - r[i].addr;
		/* a run that was not its segment's carver's (it was transferred)
		 * changes owner now: it leaves with fresh frames */
		bool foreign = false;
		for (unsigned k = i; k < j && !foreign; k++)
			foreign = r[k].owner != seg_of(r[k].addr)->owner;
		/* secret or aliased pages: always, and never reused unpurged */
		foreign = foreign || backing_special(r[i].addr, len);
		int e = len >= min || foreign ? backing_purge(r[i].addr, len) : -1;
		if (!e) {
			stat_inc(purges);
			stat_add(pages_purged, len >> PAGE_SHIFT);
			for (unsigned k = i; k < j; k++)
				r[k].purged = 1;
		} else if (foreign && e > 0) {
			/* its old frames would reach the segment's owner: never reused */
			for (unsigned k = i; k < j; k++)
				quarantine(&r[k]);
			policy_failed("purge (changing owner)", e, r[i].addr, len >> PAGE_SHIFT);
		}
		i = j;
	}
}

/* One range of a span whose `what` failed (policy.h); the span is counted
 * and reported once, by the caller. */
static void quarantine(struct range *r)
{
	if (r->kind == RK_RUN)
		policy_quarantine(r->addr, r->npages, r->owner);
	r->npages = 0; /* dropped from the release below */
}

/* The VMA budget.  Every protection boundary inside the heap splits a VMA,
 * and past vm.max_map_count mprotect fails.  Every VMA_CHECK_EVERY flushes
 * (and at once when an mprotect fails with ENOMEM) the process's VMAs are
 * counted; over the budget, spans shorter than DEGRADE_SPAN are revoked by
 * releasing their frames instead of protecting them, until the count is
 * back under half of it, watched by the userfaultfd (a stale access is
 * reported, alloc/uffd.c: release=auto arms it here, the first time).
 * Nothing to watch with: release=mprotect releases them unprotected (the
 * next touch reads zeros, never the old data); auto and uffd keep
 * protecting (VMAs grow past the budget).  The first time, a warning says
 * which. */
#define VMA_CHECK_EVERY 64
#define DEGRADE_SPAN ((size_t)64 << 10)
static uint32_t vma_checks;

static void degrade_warn(long n, uint64_t budget, int armed)
{
	static int warned;
	if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
		return;
	if (armed > 0)
		xpfo_warn("%d VMAs, over the budget of %u (max_vmas), and no userfaultfd to watch "
			  "released pages (errno %d): freed spans stay protected, VMAs grow past the "
			  "budget", n, (unsigned long)budget, (long)armed);
	else
		xpfo_warn("%d VMAs, over the budget of %u (max_vmas): small freed spans are "
			  "now released instead of protected%s", n, (unsigned long)budget,
			  armed ? "" : " (watched by userfaultfd)");
}

static void vma_check(bool failed)
{
	if (!failed && __atomic_add_fetch(&vma_checks, 1, __ATOMIC_RELAXED) % VMA_CHECK_EVERY != 1)
		return;
	long n = os_count_vmas(0, UINTPTR_MAX);
	uint64_t budget = g_stats.vma_budget;
	if (n < 0)
		return;
	if ((uint64_t)n > budget || failed) {
		/* armed before the flag is up: no span is released unwatched meanwhile */
		if (!__atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED)) {
			int armed = uffd_degrade_arm();
			__atomic_store_n(&g_stats.degraded, 1, __ATOMIC_RELAXED);
			degrade_warn(n, budget, armed);
		}
	} else if ((uint64_t)n < budget / 2) {
		__atomic_store_n(&g_stats.degraded, 0, __ATOMIC_RELAXED);
	}
}

/* Revoke a span by releasing its frames only (degraded mode).  Its pages
 * stay as reachable as they were, so they are not known to be zero later:
 * the next owner's calloc zeroes them. */
static bool release_unprotected(uintptr_t a, size_t len)
{
	if (backing_purge(a, len))
		return false;
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_inc(spans_released_unprotected);
	return true;
}

/* quarantine_large: a revoked run waits in a ring before it is released;
 * returns true if r was taken (the run it displaced is released). */
static bool quarantine_run(struct tstate *t, struct range *r)
{
	struct quarantine *q = &t->q;
	if (!q->runs) {
		q->runs = meta_alloc(opt.quarantine_large * sizeof *q->runs);
		if (!q->runs)
			return false;
	}
	/* revoked, held back: fault reports say so */
	if (r->kind == RK_RUN)
		owner_set_quarantined(r->addr, r->npages, r->owner);
	else
		__atomic_store_n(&seg_of(r->addr)->releasing, 2, __ATOMIC_RELEASE);
	if (q->nruns < opt.quarantine_large) {
		q->runs[q->nruns++] = *r;
		return true;
	}
	unsigned i = (unsigned)(rng_u64(&t->rng) % q->nruns);
	struct range out = q->runs[i];
	q->runs[i] = *r;
	pages_release(&out, 1);
	return true;
}

void revoke_quarantine_drain(struct tstate *t)
{
	struct quarantine *q = &t->q;
	gather_busy(&t->g, true);
	if (q->nruns)
		pages_release(q->runs, q->nruns);
	q->nruns = 0;
	gather_busy(&t->g, false);
}

/* Released spans shorter than this stay resident (revoked) for reuse while
 * the retained total stays under opt.retain; longer ones always go back. */
#define PURGE_ALWAYS ((size_t)1 << 20)

/* the counter of each flush reason */
static uint64_t *const reason_counter[] = {
	[FR_FULL] = &g_stats.flush_full, [FR_EXPLICIT] = &g_stats.flush_explicit,
	[FR_THREAD_EXIT] = &g_stats.flush_thread_exit, [FR_REUSE] = &g_stats.flush_reuse,
	[FR_EAGER] = &g_stats.flush_eager, [FR_SWITCH] = &g_stats.flush_switch,
	[FR_OTHER] = &g_stats.flush_other,
};

static void count_flush(enum flush_reason why)
{
	stat_inc(flushes);
	__atomic_fetch_add(reason_counter[why], 1, __ATOMIC_RELAXED);
}

/* Decide what the flush covers: the gather's live runs, sorted, emptied
 * from the gather.  A compartment destroyed since the first run was queued
 * may have given its segments to someone else: runs of segments that
 * changed hands are dropped, and *careful says heap_lock is then held
 * across the protection changes so none can change hands meanwhile. */
static unsigned gather_take(struct gather *g, bool *careful, unsigned keep)
{
	struct range *r = g->r;
	unsigned n = 0;
	for (unsigned i = 0; i < g->n; i++) /* compact: drop removed entries */
		if (r[i].npages)
			r[n++] = r[i];
	/* the newest runs stay queued: set aside at the end (gather_restore) */
	n -= keep;
	memmove(&r[GATHER_MAX - keep], &r[n], keep * sizeof *r);
	__atomic_add_fetch(&fast_flushes_inflight, 1, __ATOMIC_ACQ_REL);
	*careful = g->destroy_serial != __atomic_load_n(&destroy_serial, __ATOMIC_ACQUIRE);
	if (*careful)
		__atomic_sub_fetch(&fast_flushes_inflight, 1, __ATOMIC_RELEASE);
	gather_init(g);
	if (*careful) {
		pthread_mutex_lock(&heap_lock);
		unsigned m = 0;
		for (unsigned i = 0; i < n; i++)
			if (r[i].gen == seg_of(r[i].addr)->gen)
				r[m++] = r[i];
		n = m;
	}
	sort_ranges(r, n);
	return n;
}

/* Revoke the span r[i..j) by releasing its frames, watched by the
 * userfaultfd (alloc/uffd.c): no mprotect, no VMA split; a stale access
 * faults and is reported.  Its pages are known zero (missing) from now on:
 * marked purged, so they are free and clean.  Secret and aliased spans are
 * not plain anonymous memory: they are protected as before. */
static bool release_watched(struct range *r, unsigned i, unsigned j, size_t len)
{
	if (backing_special(r[i].addr, len))
		return false;
	stat_inc(revoke_syscalls); /* the madvise is this revocation's syscall */
	if (os_purge((void *)r[i].addr, len))
		return false;
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	stat_inc(spans_released_uffd);
	for (unsigned k = i; k < j; k++)
		r[k].purged = 1;
	return true;
}

/* release=guard (auto where the kernel has it): 1 markers installed, 0
 * off (or refused: the kernel has none), -1 not tried yet.  No probe: the
 * first span revoked is the try, so no call is made for nothing. */
static int guard_state = -1;

static bool guard_mode(void)
{
	int s = __atomic_load_n(&guard_state, __ATOMIC_RELAXED);
	if (likely(s >= 0))
		return s;
	return opt.revoke != REVOKE_OFF &&
	       (opt.release == RELEASE_AUTO || opt.release == RELEASE_GUARD);
}

/* The kernel refused markers (EINVAL, ENOSYS, EPERM) before any was
 * installed: none here (before Linux 6.13), or not allowed; mprotect for
 * good, said once. */
static void guard_refused(int e)
{
	int was = -1;
	if (!__atomic_compare_exchange_n(&guard_state, &was, 0, false, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED))
		return;
	if (opt.release == RELEASE_GUARD || opt.verbose)
		xpfo_warn("release=guard: no guard markers here (errno %d; Linux 6.13 has them): "
			  "revoked pages are protected with mprotect", (long)e);
}

/* Can the span r[i..j) be revoked with guard markers?  Root's page runs in
 * root's segments, plain anonymous memory, outside a locked thread (its
 * executor decides madvise calls: DONTNEED only): their protection stays
 * root's, which a grant back to root then need not change (guard_granted). */
static bool span_guardable(const struct range *r, unsigned i, unsigned j, size_t len)
{
	if (tl_sandbox_locked || !guard_mode() || backing_special(r[i].addr, len))
		return false;
	/* a span may run on into the next segment */
	for (unsigned k = i; k < j; k++)
		if (r[k].kind != RK_RUN || r[k].owner != comp_root.id ||
		    seg_of(r[k].addr)->owner != comp_root.id)
			return false;
	return true;
}

/* Markers were installed: the first try succeeded, if it was that. */
static void guard_worked(void)
{
	if (__atomic_load_n(&guard_state, __ATOMIC_RELAXED) < 0)
		__atomic_store_n(&guard_state, 1, __ATOMIC_RELAXED);
}

/* The span r[i..j) got its guard markers: revoked, its frames gone. */
static void span_marked(struct range *r, unsigned i, unsigned j, size_t len)
{
	stat_inc(spans_guarded);
	stat_inc(purges);
	stat_add(pages_purged, len >> PAGE_SHIFT);
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	for (unsigned k = i; k < j; k++)
		r[k].purged = PURGED_MARKED;
}

/* Revoke the span with guard markers: one madvise, no VMA split, its
 * frames released (so marked purged: no purge call after).  0; -1 to
 * protect it the usual way (markers refused: an older kernel, an mlocked
 * mapping, or a seccomp filter of the program's that denies the advice);
 * else the errno of a failure. */
static int release_marked(struct range *r, unsigned i, unsigned j, size_t len)
{
	int e = os_guard((void *)r[i].addr, len, true);
	stat_inc(revoke_syscalls);
	if (e == EINVAL || e == ENOSYS || e == EPERM) {
		guard_refused(e);
		return -1;
	}
	if (e)
		return e;
	guard_worked();
	span_marked(r, i, j, len);
	return 0;
}

/* Take access away from the span r[i..j) (contiguous): 0, or the errno of
 * a failure (its runs are quarantined).  *done: released already. */
static int span_revoke(struct range *r, unsigned i, unsigned j, bool *done)
{
	size_t len = range_end(&r[j - 1]) - r[i].addr;
	*done = true;
	bool degraded = __atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED) && len < DEGRADE_SPAN;
	if ((uffd_release_on() || (degraded && uffd_degrade_on())) &&
	    release_watched(r, i, j, len))
		return 0;
	/* a span released unprotected is not marked clean: it stays writable,
	 * and a write after free would reach the next calloc.  Only
	 * release=mprotect asks for that; otherwise it stays protected. */
	if (degraded && uffd_unwatched_ok() && release_unprotected(r[i].addr, len))
		return 0;
	int e = span_guardable(r, i, j, len) ? release_marked(r, i, j, len) : -1;
	if (!e)
		return 0;
	if (e < 0) {
		e = os_protect_key((void *)r[i].addr, len, OS_NONE, key_revoked());
		stat_inc(revoke_syscalls);
	}
	if (e == ENOMEM) {
		vma_check(true);
		if ((uffd_degrade_on() && release_watched(r, i, j, len)) ||
		    release_unprotected(r[i].addr, len))
			return 0;
	}
	if (e) {
		for (unsigned k = i; k < j; k++)
			quarantine(&r[k]);
		policy_failed("revoke", e, r[i].addr, len >> PAGE_SHIFT);
		return e;
	}
	stat_add(pages_revoked, len >> PAGE_SHIFT);
	*done = false;
	return 0;
}

/* One span the usual way: revoked (or released), then purged if due. */
static void span_apply(struct range *r, unsigned i, unsigned j, size_t purge_min, int *err)
{
	bool done = false;
	if (opt.revoke != REVOKE_OFF) {
		int e = span_revoke(r, i, j, &done);
		if (e)
			*err = e;
	}
	if (!done)
		purge_span(r, i, j, purge_min);
}

/* Spans waiting to get their guard markers in one call (gather_protect):
 * a flush of scattered spans made one madvise each (frag: 56,746). */
struct guard_batch {
	unsigned n;
	uint16_t i[OS_GUARD_VEC], j[OS_GUARD_VEC];
};

/* 1: process_madvise takes PIDFD_SELF here; 0: it does not (range by range
 * from then on); -1: not tried yet. */
static int batch_state = -1;

/* May span r[i..j) wait for a batch?  Where span_revoke would install
 * markers itself (a batch refused goes that way: the first try). */
static bool span_batchable(const struct range *r, unsigned i, unsigned j)
{
	return opt.revoke != REVOKE_OFF && __atomic_load_n(&batch_state, __ATOMIC_RELAXED) &&
	       !uffd_release_on() &&
	       !__atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED) &&
	       span_guardable(r, i, j, range_end(&r[j - 1]) - r[i].addr);
}

/* 1: process_madvise takes MADV_DONTNEED here (for this process); 0: it
 * refused; -1: not tried yet. */
static int purge_vec_state = -1;

/* Installing markers over populated pages zaps them range by range, each
 * with its own TLB flush (a shootdown on every CPU the process runs on):
 * a batch of 64 populated 4-page ranges took 889 us with a second thread
 * running (a standalone timing, 2 CPUs), and 112 us when their frames
 * had gone first in one MADV_DONTNEED call, which flushes once for the
 * whole vector; the markers then find nothing to zap.  Not where the
 * batches were refused (batch_state); a refusal of this call turns it off,
 * and the markers zap as before.  In between the pages read zero, never
 * their old bytes. */
static void batch_purge(const uintptr_t *addr, const size_t *len, unsigned n)
{
	if (!__atomic_load_n(&batch_state, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&purge_vec_state, __ATOMIC_RELAXED))
		return;
	int e = os_purge_vec(addr, len, n);
	if (e == ECANCELED)
		return;
	__atomic_store_n(&purge_vec_state, e ? 0 : 1, __ATOMIC_RELAXED);
}

/* Install the batch's markers in one call; the spans it did not cover (a
 * failure stops it: the rest are untouched) go the usual way. */
static void batch_apply(struct range *r, struct guard_batch *b, size_t purge_min, int *err)
{
	uintptr_t addr[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC], done = 0;
	for (unsigned k = 0; k < b->n; k++) {
		addr[k] = r[b->i[k]].addr;
		len[k] = range_end(&r[b->j[k] - 1]) - addr[k];
	}
	if (b->n > 1)
		batch_purge(addr, len, b->n);
	int e = b->n > 1 ? os_guard_vec(addr, len, b->n, true, &done) : ECANCELED;
	if (e != ECANCELED)
		stat_inc(revoke_syscalls);
	/* no PIDFD_SELF, no process_madvise, not for this advice, or not
	 * allowed: range by range from now on (where markers are tried, if
	 * not yet) */
	if (e == EBADF || e == EINVAL || e == ENOSYS || e == EPERM)
		__atomic_store_n(&batch_state, 0, __ATOMIC_RELAXED);
	if (!e && done) {
		__atomic_store_n(&batch_state, 1, __ATOMIC_RELAXED);
		guard_worked();
	}
	for (unsigned k = 0; k < b->n; k++) {
		if (done >= len[k]) {
			done -= len[k];
			span_marked(r, b->i[k], b->j[k], len[k]);
		} else {
			done = 0;
			span_apply(r, b->i[k], b->j[k], purge_min, err);
		}
	}
	b->n = 0;
}

/* Step one: take access away from every span (and purge what must go);
 * spans that get guard markers, in batches of OS_GUARD_VEC. */
static int gather_protect(struct range *r, unsigned n, uint64_t pages)
{
	uint64_t retained = __atomic_load_n(&g_stats.resident_pages, __ATOMIC_RELAXED) -
			    __atomic_load_n(&g_stats.mapped_pages, __ATOMIC_RELAXED);
	size_t purge_min = (retained + pages) << PAGE_SHIFT > opt.retain ? opt.purge : PURGE_ALWAYS;
	int err = 0;
	struct guard_batch b;
	b.n = 0;
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		while (j < n && r[j].addr == range_end(&r[j - 1]))
			j++;
		if (span_batchable(r, i, j)) {
			b.i[b.n] = (uint16_t)i;
			b.j[b.n++] = (uint16_t)j;
			if (b.n == OS_GUARD_VEC)
				batch_apply(r, &b, purge_min, &err);
		} else {
			span_apply(r, i, j, purge_min, &err);
		}
		i = j;
	}
	if (b.n)
		batch_apply(r, &b, purge_min, &err);
	return err;
}

/* The protection changes are done: what gather_take held, let go.  The
 * VMA budget is checked only after a flush that applied something (n
 * ranges): a full flush that kept every run changed no VMA (malloc/free of
 * 512 KiB flushed every 31 frees that way, each 64th reading the maps). */
static void gather_untake(bool careful, unsigned n)
{
	if (careful)
		pthread_mutex_unlock(&heap_lock);
	else
		__atomic_sub_fetch(&fast_flushes_inflight, 1, __ATOMIC_RELEASE);
	if (n)
		vma_check(false);
}

/* Does range r go back to the pages (not dropped, nor kept in the
 * thread's run quarantine)? */
static bool release_keeps(struct tstate *t, struct range *r)
{
	if (r->flags & RF_GUARDED) /* its guard leaves with it */
		stat_sub(live_guards, 1);
	return r->npages &&
	       !(opt.quarantine_large && !(r->flags & RF_SPARE) && quarantine_run(t, r));
}

/* Step two: hand the pages back (or to the thread's run quarantine). */
static void gather_release(struct tstate *t, struct range *r, unsigned n)
{
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		if (release_keeps(t, &r[i]))
			r[m++] = r[i];
	pages_release(r, m);
}

/* Keep hot runs (issue 11): a flush because the gather is full applies its
 * oldest runs and keeps the newest queued, at most a quarter of each bound:
 * those are the runs the thread is about to reuse, and revoke_cancel takes
 * them back without a syscall.  A kept run is not counted again: it counted
 * toward the batch that kept it, and at the next full flush it is older
 * than the last `window` queued, so that flush applies it.  So a freed run
 * stays reachable by the thread that freed it (and by nobody else: its
 * owner never changed) for at most 1.25 batches (window + batch frees,
 * batch_pages / 4 + batch_pages pages).  Counting kept runs again (6481bbe)
 * made every batch after the first a quarter shorter: hash's full flushes
 * 6 -> 8 and its revoke calls 3,300 -> 4,300, for a bound of ~1 batch where
 * the window was full (bench/README.md).  Any other flush applies all. */
static unsigned gather_keep(const struct gather *g, enum flush_reason why)
{
	/* revoke=off keeps them too: it measures what revocation costs, so it
	 * must release what batched releases (else a run freed and taken again
	 * at once is purged every few frees and faulted in again) */
	if (why != FR_FULL || opt.revoke == REVOKE_EAGER)
		return 0;
	unsigned keep = 0, window = opt.batch / 4;
	uint64_t pages = 0;
	/* only runs among the last `window` queued (taken back ones count):
	 * a run kept once is older than those at the next full flush */
	for (unsigned i = g->n; i-- > 0 && i + window >= g->n;) {
		if (!g->r[i].npages)
			continue;
		if (pages + g->r[i].npages > opt.batch_pages / 4)
			break;
		pages += g->r[i].npages;
		keep++;
	}
	return keep;
}

/* The kept runs go back in, not counted as frees (see gather_keep). */
static void gather_restore(struct gather *g, unsigned keep)
{
	memmove(g->r, &g->r[GATHER_MAX - keep], keep * sizeof *g->r);
	for (unsigned i = 0; i < keep; i++) {
		link(g, (uint16_t)i);
		g->pages += g->r[i].npages;
	}
	g->n = g->live = keep;
}

/* Remember the spans just revoked (adjacent runs of one owner), and halve
 * the grant span when a spare was revoked unused. */
static void note_revoked(struct gather *g, const struct range *r, unsigned n)
{
	bool spare = false;
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		while (j < n && r[j].addr == range_end(&r[j - 1]) && r[j].owner == r[i].owner)
			j++;
		for (unsigned k = i; k < j; k++)
			spare |= r[k].npages && (r[k].flags & RF_SPARE);
		if (r[i].npages) {
			struct revoked_span *s = &g->recent[g->recent_next++ % GATHER_RECENT];
			*s = (struct revoked_span){ r[i].addr, range_end(&r[j - 1]), g->free_serial,
						    r[i].owner };
		}
		i = j;
	}
	if (spare && g->span > GRANT_MIN)
		g->span /= 2;
}

/* Spans shorter than opt.purge stay resident after their revocation
 * whatever the total (one purge call each would double the syscalls), so
 * the bound is kept here: once the revoked pages left resident exceed
 * opt.retain, one thread purges them all, segment by segment, each run of
 * free neighbours in one call (issue 11: the default's 32 MiB bound was
 * never reached by a heap under 32 MiB, and half its extra RSS was these
 * pages). */
static uint64_t retained_bytes(void)
{
	uint64_t res = __atomic_load_n(&g_stats.resident_pages, __ATOMIC_RELAXED);
	uint64_t map = __atomic_load_n(&g_stats.mapped_pages, __ATOMIC_RELAXED);
	return res > map ? (res - map) << PAGE_SHIFT : 0;
}

/* A sweep that leaves more than retain behind (pages queued in other
 * threads' gathers, or the resident gauge counting pages that were never
 * touched) is not repeated at every flush, each walking every segment to
 * find nothing: the next waits until another retain/2 has accumulated over
 * what the last one left (`floor`, reset once under retain again). */
static void retain_trim(void)
{
	static bool trimming;
	static uint64_t floor;
	uint64_t r = retained_bytes(), f = __atomic_load_n(&floor, __ATOMIC_RELAXED);
	if (r <= opt.retain) {
		if (f)
			__atomic_store_n(&floor, 0, __ATOMIC_RELAXED);
		return;
	}
	if ((f && r <= f + opt.retain / 2) || __atomic_exchange_n(&trimming, true, __ATOMIC_ACQUIRE))
		return;
	pages_purge_all();
	r = retained_bytes();
	__atomic_store_n(&floor, r > opt.retain ? r : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&trimming, false, __ATOMIC_RELEASE);
}

int revoke_flush(struct tstate *t, enum flush_reason why)
{
	struct gather *g = &t->g;
	if (why == FR_EXPLICIT) /* the program says a phase ends: spans start small */
		g->span = 0;
	if (!g->live) {
		gather_init(g);
		return 0;
	}
	count_flush(why);
	gather_busy(g, true); /* until the kept runs are back */
	uint64_t pages = g->pages;
	bool careful;
	unsigned keep = gather_keep(g, why);
	unsigned n = gather_take(g, &careful, keep);
	int err = gather_protect(g->r, n, pages);
	gather_untake(careful, n);
	note_revoked(g, g->r, n);
	gather_release(t, g->r, n);
	gather_restore(g, keep);
	gather_busy(g, false);
	retain_trim();
	return err;
}

/* The statistic that says whether keeping hot runs works: a grant of
 * pages this thread revoked from the same owner within `batch` frees. */
static void count_regrant(uint16_t owner, uintptr_t addr, size_t len)
{
	struct gather *g = tl_state ? &tl_state->g : NULL;
	for (unsigned i = 0; g && i < GATHER_RECENT; i++) {
		const struct revoked_span *s = &g->recent[i];
		if (s->owner == owner && s->lo < addr + len && addr < s->hi &&
		    g->free_serial - s->at <= opt.batch) {
			stat_inc(regrants_soon);
			return;
		}
	}
}

static int grant_now(uint16_t owner, uintptr_t addr, size_t len, int key)
{
	stat_inc(grant_syscalls);
	count_regrant(owner, addr, len);
	return os_protect_key((void *)addr, len, OS_RW, key);
}

/* Under revoke=off free pages stay accessible as the rest of their
 * segment (pages.c opens each new one for good) and grants change nothing,
 * so a page closed here would never be opened again: a guard moved by
 * realloc in place, reused as a plain page, faulted its new owner (python
 * and xb-micro died under revoke=off, "violation: write of ... owned by
 * compartment root").  So nothing is closed there (tests/revoke case 8). */
int revoke_range(uintptr_t addr, size_t len)
{
	if (opt.revoke == REVOKE_OFF)
		return 0;
	int e = os_protect_key((void *)addr, len, OS_NONE, key_revoked());
	if (!e)
		stat_inc(revoke_syscalls);
	return e;
}

/* The key a grant to c opens pages with, or KEY_CLOSED: c is closed, and
 * its pages stay as their revocation left them until it opens (c->lock
 * held, unless c is root). */
#define KEY_CLOSED INT_MIN
static int grant_key(struct xpfo_compartment *c)
{
	if (c == &comp_root) /* closed only while a single thread is in a STRICT one */
		return comp_root.open ? key_plain() : KEY_CLOSED; /* -1 or key_root */
	int key = pkeys_comp_key(c);
	if (key > 0)
		return key;
	return c->open ? key_plain() : KEY_CLOSED;
}

/* c->lock held (unless c is root). */
int grant_locked(struct xpfo_compartment *c, uintptr_t addr, size_t len)
{
	if (opt.revoke == REVOKE_OFF)
		return 0;
	int key = grant_key(c);
	return key == KEY_CLOSED ? 0 : grant_now(c->id, addr, len, key);
}

/* Under release=guard any free page of root's segments may carry guard
 * markers (and a guard page keeps them, its own protection unknown), so
 * every grant there removes them first (one madvise; nothing to do where
 * there are none): the pages read zero from then on.  Other segments
 * never have any (span_guardable; a segment that changes hands is mapped
 * afresh).  Then true when [addr, addr+len) is this thread's last take
 * of free pages (pages.c, just before the grant) and every one of its
 * pages was revoked with markers, open to root (pages.c open_map): root's
 * protection is theirs already, no mprotect.  *e: a failure's errno. */
static bool guard_granted(struct xpfo_compartment *c, uintptr_t addr, size_t len, int *e,
			  bool *removed)
{
	*e = 0;
	*removed = false;
	if (__atomic_load_n(&guard_state, __ATOMIC_RELAXED) <= 0 || opt.revoke == REVOKE_OFF ||
	    seg_of(addr)->owner != comp_root.id)
		return false;
	struct tstate *t = tl_state;
	size_t np = len >> PAGE_SHIFT;
	/* the whole take, or all of it but its last page (a new run's guard,
	 * which keeps its markers or its closed protection: inaccessible) */
	bool open = t && addr == t->take.addr &&
		    ((np == t->take.npages && t->take.open == np) ||
		     (np + 1 == t->take.npages && t->take.open_head == np));
	if (t)
		t->take.npages = 0; /* used */
	*e = os_guard((void *)addr, len, false);
	stat_inc(grant_syscalls);
	*removed = !*e;
	return *e || (open && c == &comp_root && !pkeys_on && comp_root.open);
}

/* Markers removed, then a grant that opens nothing: the owner is closed
 * (root while a STRICT compartment is entered; a closed compartment
 * without a key), and grant_locked leaves the pages as their revocation
 * did, which under mprotect is PROT_NONE, reopened by the owner's next
 * open.  Under markers they kept their old protection, so they are closed
 * here (c->lock held where grant takes it). */
static int close_after_marks(struct xpfo_compartment *c, uintptr_t addr, size_t len)
{
	if (grant_key(c) != KEY_CLOSED)
		return 0;
	stat_inc(revoke_syscalls);
	return os_protect_key((void *)addr, len, OS_NONE, key_revoked());
}

/* May c's guarded runs be granted a span at a time (run.c run_get)?  Root,
 * open, without keys, where revocation installs guard markers and batches
 * them in one call (both seen working): a run revoked that way needs only
 * its markers removed, in one call for up to OS_GUARD_VEC runs, while its
 * guard keeps its own (markers, or a closed protection).  A guarded run
 * took a grant call of its own: cross_thread_free/16384 made 0.93 granting
 * calls per block. */
bool grant_guarded_spans(const struct xpfo_compartment *c)
{
	return opt.revoke == REVOKE_BATCHED && c == &comp_root && !pkeys_on && comp_root.open &&
	       !tl_sandbox_locked && !uffd_release_on() &&
	       !__atomic_load_n(&g_stats.degraded, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&guard_state, __ATOMIC_RELAXED) > 0 &&
	       __atomic_load_n(&batch_state, __ATOMIC_RELAXED) > 0;
}

/* Some runs of a span whose grant failed may be open: every page of it gets
 * markers again (they may have had them, or a closed protection, or root's
 * after the second call), or PROT_NONE where markers fail; 0 when closed. */
static int grant_span_close(uintptr_t a, size_t len)
{
	stat_inc(revoke_syscalls);
	if (!os_guard((void *)a, len, true))
		return 0;
	stat_inc(revoke_syscalls);
	return os_protect((void *)a, len, OS_NONE);
}

/* grant_guarded_span's calls (below), without the closing on failure. */
static int grant_span_try(uintptr_t a, size_t unit, size_t k, bool open)
{
	uintptr_t addr[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC], want = 0, done = 0;
	if (k > OS_GUARD_VEC)
		return EINVAL;
	struct tstate *t = tl_state;
	if (t)
		t->take.npages = 0; /* used */
	count_regrant(comp_root.id, a, (k * unit) << PAGE_SHIFT);
	int e = 0;
	if (!open) {
		for (size_t j = 0; j < k; j++) {
			addr[j] = a + ((j * unit + unit - 1) << PAGE_SHIFT);
			len[j] = PAGE_SIZE;
		}
		e = os_guard_vec(addr, len, (unsigned)k, true, &done);
		if (e == ECANCELED) /* an injected failure: no call made */
			return e;
		stat_inc(grant_syscalls);
		if (e || done != k * PAGE_SIZE)
			return e ? e : EIO;
		stat_inc(grant_syscalls);
		e = os_protect((void *)a, (k * unit) << PAGE_SHIFT, OS_RW);
		if (e)
			return e;
	}
	for (size_t j = 0; j < k; j++) {
		addr[j] = a + ((j * unit) << PAGE_SHIFT);
		len[j] = (unit - 1) << PAGE_SHIFT;
		want += len[j];
	}
	e = os_guard_vec(addr, len, (unsigned)k, false, &done);
	if (e == ECANCELED)
		return e;
	stat_inc(grant_syscalls);
	return e ? e : done == want ? 0 : EIO;
}

/* Grant the k guarded runs of unit pages each (the last the guard) from
 * a, the span this thread just took from root's free pages.  Where every
 * run's pages are open under markers (pages.c pages_alloc_span: runs_open)
 * one call removes the markers of all of them, and each guard keeps its
 * own (markers, or a closed protection).  Otherwise three: markers on
 * every guard, root's protection over the span, the runs' markers
 * removed; the guards end open under markers.  0, or an errno: then no run
 * is granted, and the span is closed again (grant_span_close), or, where
 * even that failed, *kept says its pages must never be handed out. */
int grant_guarded_span(uintptr_t a, size_t unit, size_t k, bool open, bool *kept)
{
	int e = grant_span_try(a, unit, k, open);
	int ce = e ? grant_span_close(a, (k * unit) << PAGE_SHIFT) : 0;
	*kept = ce != 0;
	if (ce)
		policy_failed("close a span whose grant failed", ce, a, k * unit);
	return e;
}

int grant(struct xpfo_compartment *c, uintptr_t addr, size_t len)
{
	int ge;
	bool removed;
	if (guard_granted(c, addr, len, &ge, &removed))
		return ge ? ge : uffd_fill_grant(c, addr, len);
	int se = secret_back(c, addr, len); /* a secret compartment's new frames */
	if (se)
		return se;
	/* the lock keeps c's key and open state still meanwhile (root's key
	 * too: the first lock moves root's pages under it, comp_plain_rekey) */
	bool lock = !(c == &comp_root && !pkeys_on) && opt.revoke != REVOKE_OFF;
	if (lock)
		pthread_mutex_lock(&c->lock);
	int e = grant_locked(c, addr, len);
	if (!e && removed)
		e = close_after_marks(c, addr, len);
	if (lock)
		pthread_mutex_unlock(&c->lock);
	/* released or never used pages are missing: fill them now, so that
	 * neither the program nor the kernel faults on them */
	return e ? e : uffd_fill_grant(c, addr, len);
}
