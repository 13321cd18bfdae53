/* gather.c - the per-thread queue of pending revocations (the gather, in
 * the shape of the kernel's mmu_gather): runs are queued here (revoke_add,
 * revoke_add_spare), indexed by size so that the thread can take one back
 * for the same owner without a syscall (revoke_cancel), and handed to the
 * flush (gather_take; revoke.c applies them) with the newest kept queued
 * (gather_keep).  The ordering rule and the flush are revoke.c's. */
#include "revoke.h"
#include "owner.h"
#include "backing.h"

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
	if (g->n > g->hwm)
		g->hwm = g->n;
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

/* How many more runs of the last bucket (32 pages and more, any length)
 * a request looks at, once one fits, for a shorter one that does. */
#define REST_SCAN 256

/* The last bucket holds runs of every length from 32 pages: the shortest
 * that fits, not the newest, so a short request does not take the long
 * run a long one needed (genchurn's guarded runs of 5 to 65 pages: with
 * the newest, the longest requests found no run left long enough in the
 * orphan gather and took fresh pages, 5,500-5,900 of them a run). */
static uint16_t gather_find_rest(const struct gather *g, size_t npages, size_t align,
				 uint16_t owner, enum range_kind k, unsigned flags)
{
	uint16_t best = GATHER_NIL;
	unsigned more = REST_SCAN;
	for (uint16_t i = g->head[GATHER_BUCKETS - 1]; i != GATHER_NIL; i = g->r[i].next) {
		const struct range *r = &g->r[i];
		if (best != GATHER_NIL && more-- == 0)
			break;
		if (!fits(r, npages, align, owner, k, flags))
			continue;
		if (r->npages == npages)
			return i;
		if (best == GATHER_NIL || r->npages < g->r[best].npages)
			best = i;
	}
	return best;
}

/* The queued run revoke_cancel takes: exact size first, and there a
 * retired slab of the class asked for (RF_CLASS in flags) if one is near
 * the bucket's head (a new slab of that class need not be filled, see
 * slab.c's slab_needs_fill), else the newest that fits; then (page runs
 * only, and for a guarded one no more than TAIL_REST_MAX pages larger)
 * the smallest larger bucket, and in the last one the shortest run. */
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
		if (b == GATHER_BUCKETS - 1 && k == RK_RUN)
			return gather_find_rest(g, npages, align, owner, k, flags);
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

/* The queued huge block of owner's in nsegs segments at a multiple of
 * align that a new one of np pages takes back (revoke_cancel_huge): one of
 * exactly np pages, else the longest shorter one (only pages to open),
 * else the shortest longer one (a tail to close). */
static uint16_t gather_find_huge(const struct gather *g, size_t nsegs, size_t align,
				 uint16_t owner, size_t np)
{
	uint16_t best = GATHER_NIL;
	for (uint16_t i = g->head[GATHER_BUCKETS - 1]; i != GATHER_NIL; i = g->r[i].next) {
		const struct range *r = &g->r[i];
		if (r->kind != RK_HUGE || !fits(r, 0, align, owner, RK_HUGE, 0) ||
		    seg_of(r->addr)->nsegs < nsegs)
			continue;
		uint32_t rs = seg_of(r->addr)->nsegs;
		if (r->npages == np && rs == nsegs)
			return i;
		if (best == GATHER_NIL)
			best = i;
		const struct range *b = &g->r[best];
		uint32_t bs = seg_of(b->addr)->nsegs;
		bool shorter = r->npages < np, bshorter = b->npages < np;
		if (rs != bs ? rs < bs
			     : shorter != bshorter ? shorter
			     : shorter ? r->npages > b->npages : r->npages < b->npages)
			best = i;
	}
	return best;
}

/* Take back npages of queued run `found` of g: the thread's own gather,
 * or an orphan gather under its lock.  Returns the address, or 0 when a
 * walk closed the run since and it could not be reopened. */
static uintptr_t cancel_at(struct tstate *t, struct gather *g, uint16_t found, size_t npages,
			   uint16_t owner, enum range_kind k, unsigned flags)
{
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
	/* a walk since the run was queued closed its pages (not present), or
	 * opened the compartment's with them closed already, or (pkeys) gave
	 * it a key: then they may be present under the old one */
	enum os_takes takes = c && pkeys_comp_key(c) > 0 ? OS_TAKES_AWAY : OS_TAKES_NOTHING;
	if (c && r->cgen != c->access_gen &&
	    grant_range_locked(c, a, open_pages << PAGE_SHIFT, takes)) {
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
	 * its own (one walk of its pages less); owner.h, beside struct
	 * segment's invariant, says why no walk sees them meanwhile */
	if (locked)
		pthread_mutex_unlock(&c->lock);
	if ((r->npages == npages && RF_CLASS_OF(r->flags) >= 0) || (r->flags & RF_CLEAN)) {
		t->g.taken = a;
		t->g.taken_cls = RF_CLASS_OF(r->flags);
		t->g.taken_clean = r->flags & RF_CLEAN;
	}
	gather_shrink(g, found, npages, tail);
	t->st.pages_cancelled += npages;
	gather_busy(g, false);
	return a;
}

static uintptr_t orphan_cancel(struct tstate *t, size_t npages, size_t align, uint16_t owner,
			       enum range_kind k, unsigned flags);

uintptr_t revoke_cancel(struct tstate *t, size_t npages, size_t align_pages, uint16_t owner,
			enum range_kind k, unsigned flags)
{
	struct gather *g = &t->g;
	size_t align = align_pages << PAGE_SHIFT;
	g->taken = 0;
	uint16_t found = gather_find(g, npages, align, owner, k, flags);
	if (found == GATHER_NIL)
		return orphan_cancel(t, npages, align, owner, k, flags);
	return cancel_at(t, g, found, npages, owner, k, flags);
}

uintptr_t revoke_cancel_huge(struct tstate *t, size_t nsegs, size_t align_pages, uint16_t owner,
			     size_t np, size_t *old_np)
{
	struct gather *g = &t->g;
	g->taken = 0;
	uint16_t found = gather_find_huge(g, nsegs, align_pages << PAGE_SHIFT, owner, np);
	if (found == GATHER_NIL)
		return 0;
	*old_np = g->r[found].npages;
	return cancel_at(t, g, found, *old_np, owner, RK_HUGE, 0);
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

/* Decide what the flush covers: the gather's live runs, sorted, emptied
 * from the gather.  A compartment destroyed since the first run was queued
 * may have given its segments to someone else: runs of segments that
 * changed hands are dropped, and *careful says pages_lock is then held
 * across the protection changes so none can change hands meanwhile. */
unsigned gather_take(struct gather *g, bool *careful, unsigned keep)
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
		pthread_mutex_lock(&pages_lock);
		unsigned m = 0;
		for (unsigned i = 0; i < n; i++)
			if (r[i].gen == seg_of(r[i].addr)->gen)
				r[m++] = r[i];
		n = m;
	}
	sort_ranges(r, n);
	return n;
}

/* Keep hot runs: a flush because the gather is full applies its
 * oldest runs and keeps the newest queued, at most a quarter of each bound:
 * those are the runs the thread is about to reuse, and revoke_cancel takes
 * them back without a syscall.  A kept run is not counted again: it counted
 * toward the batch that kept it, and at the next full flush it is older
 * than the last `window` queued, so that flush applies it.  So a freed run
 * stays reachable by the thread that freed it (and by nobody else: its
 * owner never changed) for at most 1.25 batches (window + batch frees,
 * batch_pages / 4 + batch_pages pages).  Counting kept runs again would
 * make every batch after the first a quarter shorter (hash: a third more
 * full flushes and revoke calls) for a bound of ~1 batch where the window
 * is full.  Any other flush applies all. */
unsigned gather_keep(const struct gather *g, enum flush_reason why)
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
void gather_restore(struct gather *g, unsigned keep)
{
	memmove(g->r, &g->r[GATHER_MAX - keep], keep * sizeof *g->r);
	for (unsigned i = 0; i < keep; i++) {
		link(g, (uint16_t)i);
		g->pages += g->r[i].npages;
	}
	g->n = g->live = keep;
}

/* ---- orphan gathers: the queued runs of exited threads ---------------------
 *
 * At its exit a thread's queued runs go to the orphan gather of their
 * compartment instead of being revoked (and, with guard markers or past
 * `retain`, purged): the next thread of that compartment takes them back
 * as it would its own (revoke_cancel), with no syscall and no page fault,
 * as mimalloc's abandoned segments pass a dead thread's pages on.  They are
 * still queued: PG_PENDING, never handed to another owner (I2), reachable
 * by their own owner only, as in the gather they came from.  The bound:
 * an orphan gather is applied once ORPHAN_RUNS runs or ORPHAN_PAGES pages
 * were orphaned into it since it was last applied (the exit that passes
 * it applies it, keeping its newest runs up to half of each bound, not
 * counted again), by any thread's full flush, xpfo_flush, malloc_trim, a
 * flush for lack of free pages, a STRICT compartment's enter or leave, and
 * the destroy of its compartment. */
struct orphans {
	pthread_mutex_t lock;
	struct gather g;
	/* g.live as last left under the lock: what the unlocked looks read */
	unsigned live;
};

static struct orphans *orphan_pool[MAX_COMPARTMENTS];
static pthread_mutex_t orphan_make_lock = PTHREAD_MUTEX_INITIALIZER;
/* runs in all orphan gathers (each one's lock): flushes look here first */
static unsigned orphan_runs;

static struct orphans *orphans_of(uint16_t id, bool make)
{
	struct orphans *o = __atomic_load_n(&orphan_pool[id], __ATOMIC_ACQUIRE);
	if (o || !make)
		return o;
	pthread_mutex_lock(&orphan_make_lock);
	o = orphan_pool[id];
	if (!o && (o = meta_alloc(sizeof *o)) != NULL) {
		pthread_mutex_init(&o->lock, NULL);
		gather_init(&o->g);
		__atomic_store_n(&orphan_pool[id], o, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&orphan_make_lock);
	return o;
}

/* Could the next thread take r back at all (fits)?  Only then it waits. */
static bool orphan_eligible(const struct range *r)
{
	struct xpfo_compartment *c = comp_table[r->owner];
	return r->npages && c && !secret_comp(c) &&
	       !alias_in(r->addr, (size_t)r->npages << PAGE_SHIFT) &&
	       !(opt.quarantine_large && !(r->flags & RF_SPARE));
}

static void orphans_count(struct orphans *o, unsigned before)
{
	struct gather *p = &o->g;
	__atomic_store_n(&o->live, p->live, __ATOMIC_RELAXED);
	if (p->live > before)
		__atomic_add_fetch(&orphan_runs, p->live - before, __ATOMIC_RELAXED);
	else if (p->live < before)
		__atomic_sub_fetch(&orphan_runs, before - p->live, __ATOMIC_RELAXED);
}

/* What an orphan gather may hold: a quarter of a thread's batch, runs and
 * pages (the pages of clean spares, never written nor resident, are not
 * counted).  Its frames are what the next threads reuse, and what peak
 * RSS pays for what they do not (design.md, "Orphan gathers"). */
#define ORPHAN_RUNS (opt.batch / 4 ? opt.batch / 4 : 1)
#define ORPHAN_PAGES (opt.batch_pages / 4 ? opt.batch_pages / 4 : 1)

static uint32_t orphan_weight(const struct range *r)
{
	return (r->flags & RF_CLEAN) ? 0 : r->npages;
}

/* The newest runs of p an exit keeps queued when it applies p: up to half
 * of each bound. */
static unsigned orphan_keep(const struct gather *p)
{
	unsigned keep = 0;
	uint64_t pages = 0;
	for (unsigned i = p->n; i-- > 0 && keep < ORPHAN_RUNS / 2;) {
		if (!p->r[i].npages)
			continue;
		if (pages + orphan_weight(&p->r[i]) > ORPHAN_PAGES / 2)
			break;
		pages += orphan_weight(&p->r[i]);
		keep++;
	}
	return keep;
}

/* Move t's eligible runs of owner into its orphan gather o (locked);
 * false when the compartment is no longer live (they stay with t). */
static bool orphan_move(struct tstate *t, struct orphans *o, uint16_t owner)
{
	struct gather *g = &t->g, *p = &o->g;
	struct xpfo_compartment *c = comp_table[owner];
	if (!c || !__atomic_load_n(&c->live, __ATOMIC_ACQUIRE))
		return false;
	unsigned incoming = 0, before = p->live;
	for (unsigned i = 0; i < g->n; i++)
		if (g->r[i].owner == owner && orphan_eligible(&g->r[i]))
			incoming++;
	if (p->n + incoming > GATHER_MAX) /* no room: the old ones go first */
		gather_apply(t, p, FR_THREAD_EXIT, 0);
	gather_busy(g, true);
	gather_busy(p, true);
	if (!p->live || (int32_t)(g->destroy_serial - p->destroy_serial) < 0)
		p->destroy_serial = g->destroy_serial; /* the older: flush carefully */
	for (unsigned i = 0; i < g->n; i++) {
		struct range *r = &g->r[i];
		if (r->owner != owner || !orphan_eligible(r))
			continue;
		uint16_t j = (uint16_t)p->n++;
		if (p->n > p->hwm)
			p->hwm = p->n;
		unlink_entry(g, (uint16_t)i);
		p->r[j] = *r;
		link(p, j);
		p->live++;
		p->pages += r->npages;
		p->frees++;
		p->free_pages += orphan_weight(r);
		stat_add(pages_orphaned, r->npages);
		g->live--;
		g->pages -= r->npages;
		r->npages = 0;
	}
	gather_busy(p, false);
	gather_busy(g, false);
	if (p->frees >= ORPHAN_RUNS || p->free_pages >= ORPHAN_PAGES)
		gather_apply(t, p, FR_THREAD_EXIT, orphan_keep(p));
	orphans_count(o, before);
	return true;
}

void revoke_orphan_exit(struct tstate *t)
{
	struct gather *g = &t->g;
	/* a locked thread's runs are applied by its executor, as before */
	if (opt.revoke != REVOKE_EAGER && !tl_sandbox_locked) {
		for (unsigned i = 0; i < g->n && g->live; i++) {
			const struct range *r = &g->r[i];
			if (!orphan_eligible(r))
				continue;
			uint16_t owner = r->owner;
			struct orphans *o = orphans_of(owner, true);
			if (!o)
				break; /* no metadata: applied below */
			pthread_mutex_lock(&o->lock);
			bool moved = orphan_move(t, o, owner);
			pthread_mutex_unlock(&o->lock);
			if (!moved)
				break;
		}
	}
	revoke_flush(t, FR_THREAD_EXIT);
}

static uintptr_t orphan_cancel(struct tstate *t, size_t npages, size_t align, uint16_t owner,
			       enum range_kind k, unsigned flags)
{
	struct orphans *o = orphans_of(owner, false);
	if (!o || !__atomic_load_n(&o->live, __ATOMIC_RELAXED) || tl_sandbox_locked)
		return 0;
	uintptr_t a = 0;
	pthread_mutex_lock(&o->lock);
	unsigned before = o->g.live;
	uint16_t found = gather_find(&o->g, npages, align, owner, k, flags);
	if (found != GATHER_NIL)
		a = cancel_at(t, &o->g, found, npages, owner, k, flags);
	orphans_count(o, before);
	pthread_mutex_unlock(&o->lock);
	if (a)
		stat_add(pages_adopted, npages);
	return a;
}

static int orphans_apply_one(struct tstate *t, struct orphans *o, enum flush_reason why)
{
	int err = 0;
	pthread_mutex_lock(&o->lock);
	unsigned before = o->g.live;
	if (o->g.live)
		err = gather_apply(t, &o->g, why, 0);
	else
		gather_init(&o->g);
	orphans_count(o, before);
	pthread_mutex_unlock(&o->lock);
	return err;
}

bool revoke_orphans_waiting(void)
{
	return __atomic_load_n(&orphan_runs, __ATOMIC_RELAXED) != 0;
}

int revoke_orphans_apply(struct tstate *t, enum flush_reason why)
{
	int err = 0;
	if (!__atomic_load_n(&orphan_runs, __ATOMIC_RELAXED) || tl_sandbox_locked)
		return 0;
	for (unsigned id = 0; id < MAX_COMPARTMENTS; id++) {
		struct orphans *o = orphans_of((uint16_t)id, false);
		if (o && __atomic_load_n(&o->live, __ATOMIC_RELAXED)) {
			int e = orphans_apply_one(t, o, why);
			if (!err)
				err = e;
		}
	}
	return err;
}

void revoke_orphans_destroy(struct tstate *t, struct xpfo_compartment *c)
{
	struct orphans *o = orphans_of(c->id, false);
	if (o)
		orphans_apply_one(t, o, FR_OTHER);
}

void revoke_orphans_fork_child(void)
{
	unsigned runs = 0;
	pthread_mutex_init(&orphan_make_lock, NULL);
	for (unsigned id = 0; id < MAX_COMPARTMENTS; id++) {
		struct orphans *o = orphan_pool[id];
		if (!o)
			continue;
		pthread_mutex_init(&o->lock, NULL);
		if (__atomic_load_n(&o->g.busy, __ATOMIC_ACQUIRE)) {
			gather_init(&o->g);
			o->g.busy = 0;
		}
		o->live = o->g.live;
		runs += o->g.live;
	}
	orphan_runs = runs;
}
