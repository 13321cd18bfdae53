/* owner.c - the only code that reads or writes the page entries (owner.h):
 * the lookup, the setters, the walker and the describer. */
#include "alloc.h"
#include "owner.h"

#include <string.h>

/* The compartments by id (an owner is a compartment id), root's statically:
 * compartment.c makes and destroys them. */
struct xpfo_compartment *comp_table[MAX_COMPARTMENTS];
struct xpfo_compartment comp_root = {
	.magic = COMP_MAGIC, .id = 1, .live = 1, .open = 1, .name = "root",
	.lock = PTHREAD_MUTEX_INITIALIZER, .epoch = 1,
};

static inline uint64_t ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
/* page i's entry and aux words */
static inline uint32_t *pw(struct segment *s, size_t i) { return &s->ent[i].page; }
static inline uint32_t *aw(struct segment *s, size_t i) { return &s->ent[i].aux; }
/* pages past it have never been written since the carve: free, zero */
static inline size_t ents_hwm(struct segment *s) { return __atomic_load_n(&s->ents_hwm, __ATOMIC_ACQUIRE); }
static inline uint32_t entry_at(struct segment *s, size_t i)
{
	return __atomic_load_n(pw(s, i), __ATOMIC_ACQUIRE);
}
static inline uint32_t entry_of(struct segment *s, uintptr_t p) { return entry_at(s, page_index(p)); }

/* The type of page i of s, a tail taking its head's: the tails of a run
 * queued whole (owner_set_pending_whole) still point back at its head,
 * which alone says pending. */
static inline unsigned type_at(struct segment *s, size_t i, uint32_t e)
{
	if (PG_TYPE(e) == PG_TAIL && PG_VAL(e) && PG_VAL(e) <= i &&
	    PG_TYPE(entry_at(s, i - PG_VAL(e))) == PG_PENDING)
		return PG_PENDING;
	return PG_TYPE(e);
}

/* ---- lookup ------------------------------------------------------------- */

/* Was a a slot's start in the retired slab that page (entry value v) was
 * part of?  Its slots were all free when it was retired. */
static bool retired_slot(uintptr_t a, uintptr_t page, uint32_t v)
{
	const struct size_class *k = &classes[PG_INFO_CLASS(v)];
	uintptr_t off = a - (page - ((uintptr_t)PG_INFO_INDEX(v) << PAGE_SHIFT));
	uint32_t i = (uint32_t)((off * k->recip) >> 32);
	return i < k->nslots && (uintptr_t)i * k->size == off;
}

/* The first segment of the huge block that segment s (of that kind) is in. */
static struct segment *huge_head(struct segment *s, uint8_t kind)
{
	return kind == SEG_HUGE ? s : s - s->nsegs;
}

static enum blk_status lookup_huge(uintptr_t a, struct segment *sg, uint8_t kind, struct blk *b)
{
	struct segment *head = huge_head(sg, kind);
	/* the block ends its span: the pages before it are no block's */
	size_t off = (size_t)head->huge_off << PAGE_SHIFT;
	uintptr_t base = seg_addr(head) + off;
	b->kind = BK_HUGE;
	b->seg = head;
	b->base = base;
	b->owner = head->owner;
	b->usable = b->span = ((size_t)head->huge_pages << PAGE_SHIFT) - off;
	if (__atomic_load_n(&head->releasing, __ATOMIC_ACQUIRE))
		return a == base ? BLK_FREED : BLK_NOT_BLOCK;
	return a == base ? BLK_OK : a < base ? BLK_NOT_BLOCK : BLK_INTERIOR;
}

/* a segment back in the pool: one that held slabs (its sticky tag is a
 * class) keeps the entries of its retired slabs; otherwise a page-aligned
 * pointer into it was a run's start */
static enum blk_status lookup_unused(uintptr_t a, struct segment *sg, uint8_t kind, uint32_t e,
				     struct blk *b)
{
	uintptr_t page = a & ~(uintptr_t)(PAGE_SIZE - 1);
	b->base = a;
	if (!sg->tag)
		return BLK_NOT_BLOCK; /* never carved: nothing was ever handed out here */
	if (kind == SEG_UNUSED && sg->tag && sg->tag <= NCLASSES && PG_TYPE(e) == PG_FREE &&
	    PG_INFO_CLASS(PG_VAL(e)) == sg->tag - 1)
		return retired_slot(a, page, PG_VAL(e)) ? BLK_FREED : BLK_NOT_BLOCK;
	return (a & (PAGE_SIZE - 1)) == 0 ? BLK_FREED : BLK_NOT_BLOCK;
}

static enum blk_status lookup_slab(uintptr_t a, uint32_t e, struct blk *b)
{
	struct slab *s = &slab_table[PG_VAL(e)];
	const struct size_class *k = &classes[s->cls];
	uintptr_t off = a - s->base;
	uint32_t i = (uint32_t)((off * k->recip) >> 32);
	b->kind = BK_SMALL;
	b->s = s;
	b->slot = i;
	b->owner = s->owner;
	b->span = k->size;
	b->usable = k->size - canary_bytes;
	b->base = s->base + (uintptr_t)i * k->size;
	if (i >= s->nslots)
		return BLK_NOT_BLOCK;
	if (b->base != a)
		return BLK_INTERIOR;
	uint64_t bit = 1ull << (i % 64);
	if (!(ld(&s->used[i / 64]) & bit) || ((ld(&s->remote[i / 64]) | ld(&s->quar[i / 64])) & bit))
		return ld(&s->given[i / 64]) & bit ? BLK_FREED : BLK_NOT_BLOCK;
	return BLK_OK;
}

static enum blk_status lookup_run(uintptr_t a, struct segment *sg, uint32_t e, struct blk *b)
{
	uintptr_t page = a & ~(uintptr_t)(PAGE_SIZE - 1);
	b->kind = BK_LARGE;
	if (PG_TYPE(e) == PG_TAIL) {
		uintptr_t head = page - ((uintptr_t)PG_VAL(e) << PAGE_SHIFT);
		uint32_t he = entry_of(sg, head);
		b->owner = owner_of_page(sg, head);
		b->base = head;
		b->usable = b->span = (size_t)PG_VAL(he) << PAGE_SHIFT;
		return PG_TYPE(he) == PG_LARGE ? BLK_INTERIOR : BLK_NOT_BLOCK;
	}
	b->owner = owner_of_page(sg, page);
	b->base = page;
	b->usable = b->span = (size_t)PG_VAL(e) << PAGE_SHIFT;
	uintptr_t end = page + b->span;
	if ((end & (SEG_SIZE - 1)) && PG_TYPE(entry_of(sg, end)) == PG_GUARD) {
		b->guarded = 1;
		b->span += PAGE_SIZE;
	}
	return a == page ? BLK_OK : BLK_INTERIOR;
}

/* PG_FREE, PG_PENDING, PG_QUAR, PG_GUARD.  A page past ents_hwm was never
 * written since the carve: in a segment on its first carve (gen 1: it never
 * changed hands before) nothing was ever handed out there; after an
 * earlier life a page start there may be a run freed then (a double free,
 * as before). */
static enum blk_status lookup_dead(uintptr_t a, struct segment *sg, uint32_t e, struct blk *b)
{
	uintptr_t page = a & ~(uintptr_t)(PAGE_SIZE - 1);
	b->kind = BK_LARGE;
	b->base = page;
	b->usable = b->span = (size_t)PG_RUN_PAGES(PG_VAL(e)) << PAGE_SHIFT;
	if (page_index(a) >= ents_hwm(sg) && sg->gen <= 1)
		return BLK_NOT_BLOCK;
	if ((PG_TYPE(e) == PG_FREE || PG_TYPE(e) == PG_PENDING) && PG_INFO_CLASS(PG_VAL(e)) >= 0)
		return retired_slot(a, page, PG_VAL(e)) ? BLK_FREED : BLK_NOT_BLOCK;
	return a == page && PG_TYPE(e) != PG_GUARD ? BLK_FREED : BLK_NOT_BLOCK;
}

enum blk_status owner_lookup(uintptr_t a, struct blk *b)
{
	b->guarded = 0;
	if (!in_heap(a))
		return BLK_FOREIGN;
	struct segment *sg = seg_of(a);
	b->seg = sg;
	b->owner = sg->owner;
	uint8_t kind = __atomic_load_n(&sg->kind, __ATOMIC_ACQUIRE);
	if (kind == SEG_HUGE || kind == SEG_HUGE_TAIL)
		return lookup_huge(a, sg, kind, b);
	uint32_t e = entry_of(sg, a);
	if (kind != SEG_PAGES_K)
		return lookup_unused(a, sg, kind, e, b);
	switch (PG_TYPE(e)) {
	case PG_SLAB:
		return lookup_slab(a, e, b);
	case PG_TAIL:
	case PG_LARGE:
		return lookup_run(a, sg, e, b);
	default:
		return lookup_dead(a, sg, e, b);
	}
}

/* ---- setters -------------------------------------------------------------- */

/* The one writer: page k of the run [addr, +npages) gets entry(k), its
 * aux word aux(k) (the owner, or a flush serial for free pages). */
/* The aux word before the entry: a reader that acquires the entry sees it.
 * Always inlined, so that `order` is a constant at every store: an order the
 * compiler cannot see is compiled as sequentially consistent (an xchg per
 * page on x86, 84% of a 1 MiB malloc/free pair before this was forced). */
static inline __attribute__((always_inline)) void entry_store(struct segment *s, size_t i, uint32_t aux, uint32_t e, int order)
{
	if (debug_asserts)
		xpfo_assert(i < s->ents_hwm);
	__atomic_store_n(aw(s, i), aux, __ATOMIC_RELAXED);
	__atomic_store_n(pw(s, i), e, order);
}

/* Runs at least this long have their entries written in bulk, but under
 * ThreadSanitizer (GCC says so with __SANITIZE_THREAD__, clang, which
 * make check-tsan uses, with __has_feature). */
#define BULK_PAGES 16
#if defined(__SANITIZE_THREAD__)
#define OWNER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OWNER_TSAN 1
#endif
#endif

/* p[k] = {v + k * step, aux} for k < n, four entries a step: plain
 * stores, which the compiler makes vector stores (an atomic store a word,
 * page and aux, was 84% of a 1 MiB malloc/free pair).  Each aligned 4-byte
 * word is still written whole (single-copy atomic on x86-64 and arm64),
 * and the aux words are the ones the pages already hold (set_run).  Not
 * under TSan, which would see plain stores race with the lookups' atomic
 * loads. */
static void bulk_fill(struct page_entry *p, uint32_t v, uint32_t step, uint32_t aux, size_t n)
{
	/* stored through an unaligned, aliasing vector type: a memcpy from
	 * x took its address, and GCC kept x on the stack (a store and a
	 * load a step, chained through store forwarding) */
	typedef uint32_t v4 __attribute__((vector_size(16)));
	typedef uint32_t v4u __attribute__((vector_size(16), aligned(4), may_alias));
	v4 x0 = { v, aux, v + step, aux };
	v4 x1 = { v + 2 * step, aux, v + 3 * step, aux };
	v4 inc = { 4 * step, 0, 4 * step, 0 };
	size_t k = 0;
	for (; k + 4 <= n; k += 4, x0 += inc, x1 += inc) {
		*(v4u *)(p + k) = x0;
		*(v4u *)(p + k + 2) = x1;
	}
	for (; k < n; k++)
		p[k] = (struct page_entry){ v + (uint32_t)k * step, aux };
}

/* Pages that already carry their owner in aux: every page taken from the
 * free map got it (owner_set_taken), and a page keeps it while it is not
 * free (the invariant beside struct segment), so a live run queued, or a
 * taken or queued run made live, has nothing to write there: set_run skips
 * the aux words of long runs (SAME_AUX), half the stores of a 1 MiB
 * malloc/free pair.  Debug builds check that they are the owner's. */
#define SAME_AUX true

static inline __attribute__((always_inline)) void
set_run(uintptr_t addr, size_t npages, uint32_t head, uint32_t tail, bool count, uint32_t aux,
	int order, bool same_aux)
{
	struct segment *s = seg_of(addr);
	size_t i = page_index(addr);
	if (debug_asserts)
		xpfo_assert(i + npages <= s->ents_hwm);
	if (debug_asserts && same_aux)
		for (size_t k = 0; k < npages; k++)
			xpfo_assert(*aw(s, i + k) == aux);
#ifndef OWNER_TSAN
	if (npages >= BULK_PAGES) {
		/* every aux word before any entry, as entry_store orders
		 * each pair: a reader that acquires an entry sees its aux */
		if (!same_aux)
			for (size_t k = 0; k < npages; k++)
				s->ent[i + k].aux = aux;
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(pw(s, i), head, order);
		bulk_fill(&s->ent[i + 1], count ? tail + 1 : tail, count, aux, npages - 1);
		return;
	}
#endif
	for (size_t k = 0; k < npages; k++)
		entry_store(s, i + k, aux, !k ? head : count ? tail + (uint32_t)k : tail, order);
}

/* a live run's tails point back at its head */
void owner_set_large(uintptr_t addr, size_t npages, uint16_t owner)
{
	set_run(addr, npages, PG_MAKE(PG_LARGE, npages), PG_MAKE(PG_TAIL, 0), true, owner,
		__ATOMIC_RELEASE, SAME_AUX);
}

/* Debug: pages [addr+1, addr+npages) point back at addr, with owner's aux. */
static void check_tails(uintptr_t addr, size_t npages, uint16_t owner)
{
	struct segment *s = seg_of(addr);
	size_t i = page_index(addr);
	for (size_t k = 1; k < npages; k++)
		if (*pw(s, i + k) != PG_MAKE(PG_TAIL, k) || *aw(s, i + k) != owner)
			xpfo_fatal("invariant: page %u of the run at %p is %x (owner %u), not its tail",
				   (unsigned long)k, (void *)addr, (unsigned long)*pw(s, i + k),
				   (unsigned long)*aw(s, i + k));
}

void owner_set_large_head(uintptr_t addr, size_t npages, uint16_t owner)
{
	if (debug_asserts)
		check_tails(addr, npages, owner);
	set_run(addr, 1, PG_MAKE(PG_LARGE, npages), 0, false, owner, __ATOMIC_RELEASE, SAME_AUX);
}

/* slab pages all name the slab */
void owner_set_slab(uintptr_t addr, size_t npages, uint32_t slab_id, uint16_t owner)
{
	uint32_t e = PG_MAKE(PG_SLAB, slab_id);
	set_run(addr, npages, e, e, false, owner, __ATOMIC_RELEASE, !SAME_AUX);
}

void owner_set_guard(uintptr_t addr, uint16_t owner)
{
	set_run(addr, 1, PG_MAKE(PG_GUARD, 0), 0, false, owner, __ATOMIC_RELEASE, !SAME_AUX);
}

void owner_set_quarantined(uintptr_t addr, size_t npages, uint16_t owner)
{
	set_run(addr, npages, PG_MAKE(PG_QUAR, npages), PG_MAKE(PG_QUAR, 0), false, owner,
		__ATOMIC_RELEASE, !SAME_AUX);
}

static void set_retired(uintptr_t addr, size_t npages, int cls, uint16_t owner)
{
	struct segment *s = seg_of(addr);
	size_t i = page_index(addr);
	for (size_t k = 0; k < npages; k++) {
		uint32_t v = (k ? 0 : (uint32_t)npages) | PG_SLAB_INFO(cls, k);
		entry_store(s, i + k, owner, PG_MAKE(PG_PENDING, v), __ATOMIC_RELEASE);
	}
}

void owner_set_pending(uintptr_t addr, size_t npages, int cls, uint16_t owner)
{
	if (cls >= 0)
		set_retired(addr, npages, cls, owner);
	else
		set_run(addr, npages, PG_MAKE(PG_PENDING, npages), PG_MAKE(PG_PENDING, 0), false,
			owner, __ATOMIC_RELEASE, SAME_AUX);
}

void owner_set_pending_whole(uintptr_t addr, size_t npages, uint16_t owner)
{
	struct segment *s = seg_of(addr);
	size_t last = page_index(addr) + npages - 1;
	bool guard = npages > 1 && PG_TYPE(*pw(s, last)) == PG_GUARD;
	if (debug_asserts)
		check_tails(addr, npages - guard, owner);
	/* the guard page is queued with the run (a destroy's walk of live
	 * runs and guards must not take it) */
	if (guard)
		entry_store(s, last, owner, PG_MAKE(PG_PENDING, 0), __ATOMIC_RELEASE);
	set_run(addr, 1, PG_MAKE(PG_PENDING, npages), 0, false, owner, __ATOMIC_RELEASE, SAME_AUX);
}

/* a pending run without a class that lost its first pages: its other pages
 * already say pending, only the new head (the length) is written */
void owner_set_pending_head(uintptr_t addr, size_t npages, uint16_t owner)
{
	set_run(addr, 1, PG_MAKE(PG_PENDING, npages), 0, false, owner, __ATOMIC_RELEASE, SAME_AUX);
}

/* the owner from the start: an open/close walk that runs before the run is
 * set up must already count these pages as the owner's */
void owner_set_taken(uintptr_t addr, size_t npages, uint16_t owner)
{
	struct segment *s = seg_of(addr);
	size_t end = page_index(addr) + npages;
	if (end > s->ents_hwm)
		__atomic_store_n(&s->ents_hwm, (uint32_t)end, __ATOMIC_RELEASE);
	set_run(addr, npages, PG_MAKE(PG_TAIL, 0), PG_MAKE(PG_TAIL, 0), true, owner,
		__ATOMIC_RELAXED, !SAME_AUX);
}

void owner_set_reclaimed(uintptr_t addr, size_t npages, uint16_t owner)
{
	set_run(addr, npages, PG_MAKE(PG_TAIL, 0), PG_MAKE(PG_TAIL, 0), true, owner,
		__ATOMIC_RELEASE, SAME_AUX);
}

void owner_set_free(uintptr_t addr, size_t npages, uint32_t serial)
{
	struct segment *s = seg_of(addr);
	size_t i = page_index(addr);
	for (size_t m = 0; m < npages; m++) {
		/* a retired slab's page keeps what it was (double free reports) */
		uint32_t was = *pw(s, i + m);
		uint32_t info = PG_TYPE(was) == PG_PENDING ? PG_VAL(was) & PG_INFO_MASK : 0;
		entry_store(s, i + m, serial, PG_MAKE(PG_FREE, info), __ATOMIC_RELEASE);
	}
}

/* the run's guard page goes with it; returns the pages that changed */
size_t owner_set_owner(uintptr_t addr, size_t npages, uint16_t to)
{
	struct segment *s = seg_of(addr);
	size_t i = page_index(addr);
	size_t n = npages + (i + npages < SEG_PAGES && PG_TYPE(*pw(s, i + npages)) == PG_GUARD);
	for (size_t k = 0; k < n; k++)
		__atomic_store_n(aw(s, i + k), to, __ATOMIC_RELAXED);
	return n;
}

void owner_reset(struct segment *s)
{
	/* only the words written since the last carve: the rest were never
	 * touched, and on a kernel without the shared zero page even reading
	 * them would make them resident */
	for (size_t i = 0; i < s->ents_hwm; i++)
		s->ent[i].page = 0;
	__atomic_store_n(&s->ents_hwm, 0, __ATOMIC_RELEASE);
}

/* ---- walker ---------------------------------------------------------------- */

/* which walks take a page of each type (free and quarantined: none) */
static const uint8_t walk_class[8] = {
	[PG_SLAB] = OW_LIVE, [PG_LARGE] = OW_LIVE, [PG_TAIL] = OW_LIVE,
	[PG_PENDING] = OW_PENDING, [PG_GUARD] = OW_GUARD,
};

static bool selected(unsigned type, unsigned what)
{
	return type < 8 && (walk_class[type] & what);
}

void owner_walk(struct segment *s, uint16_t id, unsigned what, owner_span_fn fn, void *arg)
{
	uintptr_t base = seg_addr(s);
	size_t start = 0, n = 0, hwm = ents_hwm(s);
	bool pending = false;
	for (size_t p = 0; p <= SEG_PAGES; p++) {
		uint32_t e = p < hwm ? __atomic_load_n(pw(s, p), __ATOMIC_RELAXED) : 0;
		unsigned type = p < SEG_PAGES ? type_at(s, p, e) : PG_FREE;
		/* a free page's aux is a flush serial: it is the segment's */
		bool clean = p < SEG_PAGES && type == PG_FREE &&
			     (what & (OW_FREE | OW_CLEAN)) == OW_CLEAN &&
			     (ld(&s->clean_map[p / 64]) >> (p % 64) & 1);
		bool in = p < SEG_PAGES && (type == PG_FREE
				? ((what & OW_FREE) || clean) && s->owner == id
				: selected(type, what) && (id == OWNER_ANY ||
							   __atomic_load_n(aw(s, p), __ATOMIC_RELAXED) == id));
		if (in && !n)
			start = p;
		if (in) {
			n++;
			pending |= type == PG_PENDING || clean;
			continue;
		}
		if (n)
			fn(base + (start << PAGE_SHIFT), n, pending, arg);
		n = 0;
		pending = false;
	}
}

bool owner_only(struct segment *s, uint16_t id)
{
	for (size_t p = 0, hwm = ents_hwm(s); p < hwm; p++) {
		unsigned t = type_at(s, p, *pw(s, p));
		if (t != PG_FREE && (!selected(t, OW_LIVE | OW_GUARD) ||
				     __atomic_load_n(aw(s, p), __ATOMIC_RELAXED) != id))
			return false;
	}
	return true;
}

void owner_census(struct segment *s, uint16_t id, size_t *mine, size_t *foreign,
		  void (*slab_head)(uintptr_t, uint32_t, void *), void *arg)
{
	uintptr_t base = seg_addr(s);
	*mine = *foreign = 0;
	for (size_t p = 0, hwm = ents_hwm(s); p < hwm; p++) {
		uint32_t e = *pw(s, p);
		unsigned t = PG_TYPE(e);
		if (t == PG_FREE)
			continue;
		/* aux is stored atomically by the setters (a transfer under
		 * another lock) */
		if (__atomic_load_n(aw(s, p), __ATOMIC_RELAXED) != id && t != PG_QUAR) {
			(*foreign)++;
			continue;
		}
		(*mine)++;
		if (t == PG_SLAB)
			slab_head(base + (p << PAGE_SHIFT), PG_VAL(e), arg);
	}
}

/* ---- describer ----------------------------------------------------------- */

static void describe_huge(uintptr_t a, struct segment *s, uint8_t kind, uint32_t now,
			  struct owner_desc *d)
{
	struct segment *head = huge_head(s, kind);
	uintptr_t base = seg_addr(head);
	if (!head->releasing && a < base + ((uintptr_t)head->huge_pages << PAGE_SHIFT)) {
		d->state = OS_OWNED;
		d->owner = head->owner;
		return;
	}
	if (head->releasing == HUGE_KEPT) { /* revoked, kept for its owner's next block */
		d->state = OS_FREE;
		d->age = now - head->freed_at;
		return;
	}
	/* past a live huge block, the rest of its last segment: its guard */
	d->state = head->releasing == 2 ? OS_QUARANTINED : head->releasing ? OS_FREE_HUGE : OS_GUARD;
}

void owner_describe(uintptr_t a, uint32_t now, struct owner_desc *d)
{
	struct segment *s = seg_of(a);
	uint8_t kind = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
	d->owner = 0;
	d->age = 0;
	if (kind == SEG_HUGE || kind == SEG_HUGE_TAIL) {
		describe_huge(a, s, kind, now, d);
		return;
	}
	if (kind != SEG_PAGES_K) {
		d->state = OS_FREE;
		d->age = now - s->freed_at;
		return;
	}
	size_t i = page_index(a);
	uint32_t e = entry_at(s, i);
	uint32_t aux = __atomic_load_n(aw(s, i), __ATOMIC_RELAXED);
	static const enum owner_state by_type[] = {
		[PG_FREE] = OS_FREE, [PG_SLAB] = OS_OWNED, [PG_LARGE] = OS_OWNED,
		[PG_TAIL] = OS_OWNED, [PG_PENDING] = OS_OWNED_PENDING, [PG_QUAR] = OS_QUARANTINED,
		[PG_GUARD] = OS_GUARD,
	};
	unsigned type = type_at(s, i, e);
	d->state = type <= PG_GUARD ? by_type[type] : OS_OWNED;
	if (d->state == OS_FREE)
		d->age = now - aux;
	else
		d->owner = aux;
}

/* ---- the executor's snapshot ------------------------------------------------ */

enum owner_snap owner_snapshot(size_t i, uint16_t id)
{
	struct segment *s = &seg_table[i / SEG_PAGES];
	size_t p = i % SEG_PAGES;
	switch (s->kind) {
	case SEG_UNUSED: /* a released segment is remapped before its reuse */
		return s->releasing ? OSNAP_FREE_STALE : OSNAP_FREE_CLEAN;
	case SEG_HUGE:
	case SEG_HUGE_TAIL:
		return s->owner == id ? OSNAP_MINE : OSNAP_FOREIGN;
	default:
		break;
	}
	uint32_t e = entry_at(s, p);
	if (PG_TYPE(e) == PG_FREE)
		return ld(&s->clean_map[p / 64]) >> (p % 64) & 1 ? OSNAP_FREE_CLEAN : OSNAP_FREE_STALE;
	if (*aw(s, p) == id && PG_TYPE(e) != PG_QUAR)
		return OSNAP_MINE;
	return OSNAP_FOREIGN;
}

/* ---- debug ----------------------------------------------------------------- */

static void check_segment(size_t i, struct segment *s)
{
	uint32_t nfree = 0;
	for (size_t p = 0; p < SEG_PAGES; p++) {
		bool f = s->free_map[p / 64] >> (p % 64) & 1;
		bool c = s->clean_map[p / 64] >> (p % 64) & 1;
		uint32_t e = __atomic_load_n(pw(s, p), __ATOMIC_RELAXED);
		nfree += f;
		if (f != (PG_TYPE(e) == PG_FREE) || (c && !f))
			xpfo_fatal("invariant: segment %u page %u free bit %u, clean bit %u, entry type %u",
				   (unsigned long)i, (unsigned long)p, (unsigned long)f,
				   (unsigned long)c, (unsigned long)PG_TYPE(e));
		if (p >= s->ents_hwm && e)
			xpfo_fatal("invariant: segment %u page %u, past the %u written, has entry %x",
				   (unsigned long)i, (unsigned long)p, (unsigned long)s->ents_hwm,
				   (unsigned long)e);
	}
	if (nfree != s->free_pages)
		xpfo_fatal("invariant: segment %u counts %u free pages, map has %u", (unsigned long)i,
			   (unsigned long)s->free_pages, (unsigned long)nfree);
}

void owner_check(void)
{
	for (size_t i = 0; i < heap_nsegs; i++) {
		struct segment *s = &seg_table[i];
		if (s->kind == SEG_PAGES_K && !s->releasing)
			check_segment(i, s);
	}
}
