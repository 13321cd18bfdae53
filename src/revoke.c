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
 * changed, so there is nothing to revoke.
 *
 * Batching: queued runs are sorted and adjacent ones coalesced at flush time,
 * one mprotect per coalesced span; each mprotect of a mapping that other CPUs
 * may cache is a TLB shootdown, which is what batching saves (see the cost
 * model in docs/design.md).  Bounds: opt.batch runs or opt.batch_pages pages
 * (a full gather is applied at once, like tlb_flush_mmu when the batch pages
 * run out).  revoke=eager applies every run as it comes, the baseline.
 */
#include "internal.h"

static void set_pending(const struct range *r)
{
	if (r->kind == RK_HUGE)
		__atomic_store_n(&seg_of(r->addr)->releasing, 1, __ATOMIC_RELEASE);
	else
		pages_set_run(r->addr, r->npages, PG_MAKE(PG_PENDING, r->npages));
}

void revoke_add(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner, enum range_kind k)
{
	struct gather *g = &t->g;
	struct range r = { addr, (uint32_t)npages, owner, (uint8_t)k, 0 };
	set_pending(&r);
	stat_inc(revoke_queued);
	stat_add(pages_queued, npages);
	g->r[g->n++] = r;
	g->pages += npages;
	if (opt.revoke == REVOKE_EAGER)
		revoke_flush(t, FR_EAGER);
	else if (g->n >= opt.batch || g->pages >= opt.batch_pages)
		revoke_flush(t, FR_FULL);
}

uintptr_t revoke_cancel(struct tstate *t, size_t npages, size_t align_pages, uint16_t owner,
			enum range_kind k)
{
	struct gather *g = &t->g;
	size_t align = align_pages << PAGE_SHIFT;
	int best = -1;
	for (int i = (int)g->n - 1; i >= 0; i--) {
		struct range *r = &g->r[i];
		if (r->owner != owner || r->kind != k || r->npages < npages || (r->addr & (align - 1)))
			continue;
		if (r->npages == npages) {
			best = i;
			break;
		}
		if (k == RK_RUN && best < 0)
			best = i;
	}
	if (best < 0)
		return 0;
	struct range *r = &g->r[best];
	uintptr_t a = r->addr;
	if (r->npages > npages) {
		/* keep the tail queued */
		r->addr += npages << PAGE_SHIFT;
		r->npages -= (uint32_t)npages;
		set_pending(r);
	} else {
		*r = g->r[--g->n];
		if (k == RK_HUGE)
			__atomic_store_n(&seg_of(a)->releasing, 0, __ATOMIC_RELEASE);
	}
	g->pages -= npages;
	stat_add(pages_cancelled, npages);
	return a;
}

/* Shell sort by address: the gather is small and often nearly sorted. */
static void sort_ranges(struct range *r, unsigned n)
{
	static const unsigned gaps[] = { 701, 301, 132, 57, 23, 10, 4, 1 };
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

/* Purge the coalesced runs (not huge: segments are purged when released)
 * of r[a..b) that reach the purge threshold. */
static void purge_span(struct range *r, unsigned a, unsigned b)
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
		if (len >= opt.purge && !os_purge((void *)r[i].addr, len)) {
			stat_inc(purges);
			stat_add(pages_purged, len >> PAGE_SHIFT);
			for (unsigned k = i; k < j; k++)
				r[k].purged = 1;
		}
		i = j;
	}
}

static void quarantine(struct range *r)
{
	if (r->kind == RK_RUN)
		pages_set_run(r->addr, r->npages, PG_MAKE(PG_QUAR, r->npages));
	stat_inc(revoke_failures);
	stat_add(pages_quarantined, r->npages);
	r->npages = 0; /* dropped from the release below */
}

int revoke_flush(struct tstate *t, enum flush_reason why)
{
	struct gather *g = &t->g;
	unsigned n = g->n;
	if (!n)
		return 0;
	stat_inc(flushes);
	switch (why) {
	case FR_FULL: stat_inc(flush_full); break;
	case FR_EXPLICIT: stat_inc(flush_explicit); break;
	case FR_THREAD_EXIT: stat_inc(flush_thread_exit); break;
	case FR_REUSE: stat_inc(flush_reuse); break;
	case FR_EAGER: stat_inc(flush_eager); break;
	case FR_OTHER: stat_inc(flush_other); break;
	}
	struct range *r = g->r;
	sort_ranges(r, n);
	int err = 0;
	for (unsigned i = 0; i < n;) {
		unsigned j = i + 1;
		while (j < n && r[j].addr == range_end(&r[j - 1]))
			j++;
		size_t len = range_end(&r[j - 1]) - r[i].addr;
		if (opt.revoke != REVOKE_OFF) {
			int e = os_protect((void *)r[i].addr, len, OS_NONE);
			stat_inc(revoke_syscalls);
			if (e) {
				err = e;
				for (unsigned k = i; k < j; k++)
					quarantine(&r[k]);
				i = j;
				continue;
			}
			stat_add(pages_revoked, len >> PAGE_SHIFT);
		}
		purge_span(r, i, j);
		i = j;
	}
	/* drop quarantined entries, then hand the rest back */
	unsigned m = 0;
	for (unsigned i = 0; i < n; i++)
		if (r[i].npages)
			r[m++] = r[i];
	g->n = 0;
	g->pages = 0;
	pages_release(r, m);
	return err;
}

int grant(uintptr_t addr, size_t len)
{
	if (opt.revoke == REVOKE_OFF)
		return 0;
	stat_inc(grant_syscalls);
	return os_protect((void *)addr, len, OS_RW);
}
