/* heap.c - malloc, free and realloc: the entry points and their fast paths.
 *
 * Small sizes (< run_min()) come from slabs (slab.c): a page run cut into
 * equal slots of one size class, with its metadata (struct slab: allocated
 * bits, remotely-freed bits) out of line.  Each slab is allocated from by
 * one thread heap (struct theap) at a time, so the malloc fast path here is
 * a bitmap search with no atomics, no lock and no syscall, and a free by
 * that thread clears the bit; frees by other threads go to the slab's
 * remote bits (slab.c).  Larger sizes are page runs and, above LARGE_MAX,
 * whole segments (run.c); canaries, fills and the quarantine are harden.c's.
 * Every check that a pointer is a live block is done here, once (through
 * owner_lookup, or its slab checks inline on the fast path), and misuse is
 * fatal with the address and the compartment.
 */
#include "heap.h"

#include <errno.h>

/* A flag, not a size: this page is not sealed, and no value written here
 * can send a request past the slab classes (size_to_class). */
static unsigned char runs_from_page;

void heap_runs_from_page(void)
{
	__atomic_store_n(&runs_from_page, 1, __ATOMIC_RELAXED);
}

/* Requests of this many bytes or more are page runs (alloc.h). */
static inline size_t run_min(void)
{
	return __atomic_load_n(&runs_from_page, __ATOMIC_RELAXED) ? RUN_MIN
								   : SMALL_MAX + 1 - canary_bytes;
}

static __attribute__((noinline)) void *small_alloc_full(struct tstate *t, unsigned cls)
{
	/* small_fast_ok wants a random byte left, random_slots or not (so
	 * the fast path needs no refill): without random_slots the stream
	 * would stay empty and every malloc would come here */
	if (t->rng.used >= sizeof t->rng.buf)
		rng_refill(&t->rng);
	struct theap *h = t->heap;
	struct slab *s = h->cur[cls];
	void *p = likely(s != NULL) ? slab_take(t, s) : NULL;
	if (unlikely(!p)) {
		p = small_refill(t, h, cls);
		if (!p)
			return NULL;
		s = h->cur[cls];
	}
	t->st.allocs[cls]++;
	if (t->hard) {
		if (likely(!opt.waf_check && !opt.junk && touch_direct(t, s->owner))) {
			/* canary_bytes is 8 or 0: a constant size is one store,
			 * not a call to memcpy */
			if (canary_bytes)
				memcpy((char *)p + classes[cls].size - sizeof s->canary, &s->canary,
				       sizeof s->canary);
		} else
			slot_prepare(t, s, p);
	}
	return p;
}

/* A slot written since its free: slot_prepare's full check finds where
 * and ends the process.  Called last (a tail call): small_alloc needs no
 * frame. */
static __attribute__((noinline)) void *small_alloc_dirty(struct tstate *t, struct slab *s, void *p)
{
	slot_prepare(t, s, p);
	return p;
}

/* The cases small_alloc_full is for: no current slab or a full one, a
 * random stream to refill, hardening beyond the canary.  Outside them
 * small_alloc calls nothing, so it needs no frame. */
static inline bool small_fast_ok(const struct tstate *t, const struct slab *s)
{
	return s && s->nused < s->nslots && t->rng.used < sizeof t->rng.buf &&
	       (!t->hard || (!opt.junk && touch_direct(t, s->owner)));
}

static inline void *small_alloc(struct tstate *t, unsigned cls)
{
	struct slab *s = t->heap->cur[cls];
	if (unlikely(!small_fast_ok(t, s)))
		return small_alloc_full(t, cls);
	void *p = slab_take(t, s);
	if (unlikely(!p))
		return small_alloc_full(t, cls);
	t->st.allocs[cls]++;
	if (t->hard) {
		size_t user = classes[cls].size - canary_bytes;
		if (opt.waf_check && !t->fresh_slot && unlikely(!waf_clean_direct(p, user)))
			return small_alloc_dirty(t, s, p);
		if (canary_bytes)
			memcpy((char *)p + user, &s->canary, sizeof s->canary);
	}
	return p;
}

void *heap_malloc(struct tstate *t, size_t size)
{
	/* RUN_MIN first: the fast path compares with a constant */
	if (likely(size < RUN_MIN) || size < run_min())
		return small_alloc(t, size_to_class(size + canary_bytes));
	return large_alloc(t, size, PAGE_SIZE, false, 0);
}

void *heap_calloc(struct tstate *t, size_t n, size_t size)
{
	size_t total;
	if (unlikely(__builtin_mul_overflow(n, size, &total)))
		return fail_null(ENOMEM);
	if (total < run_min()) {
		void *p = small_alloc(t, size_to_class(total + canary_bytes));
		if (p)
			arch_zero(p, total);
		return p;
	}
	return large_alloc(t, total, PAGE_SIZE, true, 0);
}

void *heap_aligned(struct tstate *t, size_t align, size_t size)
{
	if (align <= 16)
		return heap_malloc(t, size);
	/* a page-aligned request of a page or more is a page run always
	 * (xpfo_share_fd, a later xpfo_transfer) */
	if (size < run_min() && align <= PAGE_SIZE && (align < PAGE_SIZE || size < RUN_MIN)) {
		/* slab bases are page aligned: a class whose size is a multiple
		 * of align has every slot aligned */
		unsigned c = size_to_class(size + canary_bytes);
		while (classes[c].size % align)
			c++;
		return small_alloc(t, c);
	}
	return large_alloc(t, size ? size : 1, align, false, 0);
}

/* ---- block lookup: owner_lookup (owner.c) ----------------------------- */

_Noreturn __attribute__((cold)) void
heap_misuse(const char *what, uintptr_t a, enum blk_status st_, const struct blk *b)
{
	/* the compartment that made the call */
	const char *cn = tl_state && tl_state->heap ? tl_state->heap->comp->name
						     : comp_name(b->owner ? b->owner : 1);
	switch (st_) {
	case BLK_FREED:
		if (what[0] == 'r' || what[0] == 'm')
			xpfo_fatal("%s of freed pointer %p (compartment \"%s\")", what, (void *)a, cn);
		xpfo_fatal("double free of %p (compartment \"%s\")", (void *)a, cn);
	case BLK_FOREIGN:
		if (meta_owns((void *)a))
			xpfo_fatal("invalid %s of %p: points into xpfo's metadata (compartment \"%s\")",
				   what, (void *)a, cn);
		xpfo_fatal("invalid %s of %p: not from the xpfo heap (compartment \"%s\")", what,
			   (void *)a, cn);
	case BLK_INTERIOR:
		xpfo_fatal("invalid %s of %p: interior pointer of the block at %p (size class %z) "
			   "(compartment \"%s\")", what, (void *)a, (void *)b->base,
			   b->kind == BK_SMALL ? b->span : b->usable, cn);
	default:
		xpfo_fatal("invalid %s of %p: not an allocated block (compartment \"%s\")", what,
			   (void *)a, cn);
	}
}

/* A page run or huge block b goes to the gather (flags: RF_NOKEEP or 0). */
static void free_large(struct tstate *t, const struct blk *b, unsigned flags)
{
	t->st.frees[LARGE_CLASS]++;
	t->st.large_live_bytes -= b->usable;
	/* a huge block leaves with its whole span (the pages before it too) */
	uintptr_t at = b->kind == BK_HUGE ? seg_addr(b->seg) : b->base;
	size_t np = b->kind == BK_HUGE ? b->seg->huge_pages : b->span >> PAGE_SHIFT;
	flush_if_full(t, revoke_add(t, at, np, b->owner,
				    b->kind == BK_HUGE ? RK_HUGE : RK_RUN,
				    flags | (b->guarded ? RF_GUARDED : 0) |
					    (b->kind == BK_LARGE ? RF_WHOLE : 0)));
}

static __attribute__((noinline)) void free_slow(struct tstate *t, uintptr_t a, const char *what)
{
	struct blk b;
	enum blk_status stt = owner_lookup(a, &b);
	if (stt != BLK_OK)
		heap_misuse(what, a, stt, &b);
	if (b.kind == BK_SMALL) {
		if (slot_on_free(t, b.s, b.slot, (void *)a))
			return;
		slot_release(t, b.s, b.slot);
		return;
	}
	free_large(t, &b, 0);
}

/* A free slot: freed before (double free), or never handed out. */
static _Noreturn __attribute__((noinline, cold)) void free_freed(uintptr_t a, const struct slab *s,
								 uint32_t i)
{
	struct blk b = { .owner = s->owner };
	bool given = bits_load(&s->given[i / 64]) & (1ull << (i % 64));
	heap_misuse("free", a, given ? BLK_FREED : BLK_NOT_BLOCK, &b);
}

/* heap_free's slot paths past the fast one, each called last (a tail
 * call): the fast path keeps no value across a call (it would save six
 * registers and make a frame for them). */
static __attribute__((noinline)) void free_slot_hard(struct tstate *t, struct slab *s, uint32_t i,
						     void *p)
{
	if (!slot_on_free(t, s, i, p))
		slot_release(t, s, i);
}

/* Filled, then released: never a free slot with old bytes in it, not
 * even for a fork child that adopts the slabs of a thread caught here
 * (write-after-free checks would end it). */
static __attribute__((noinline)) void free_slot_fill(struct tstate *t, struct slab *s, uint32_t i,
						     void *p, size_t n)
{
	slot_fill(p, n);
	slot_release(t, s, i);
}

void heap_free(struct tstate *t, void *p)
{
	uintptr_t a = (uintptr_t)p;
	if (unlikely(!in_heap(a))) {
		free_slow(t, a, "free");
		return;
	}
	struct segment *sg = seg_of(a);
	long id = owner_slab_of(sg, a);
	if (unlikely(id < 0 || sg->kind != SEG_PAGES_K)) {
		free_slow(t, a, "free");
		return;
	}
	struct slab *s = &slab_table[id];
	const struct size_class *k = &classes[s->cls];
	uintptr_t off = a - s->base;
	uint32_t i = (uint32_t)((off * k->recip) >> 32);
	if (unlikely(i * k->size != off || i >= s->nslots)) {
		free_slow(t, a, "free");
		return;
	}
	/* a slot of another thread's slab takes the same path (the checks
	 * of owner_lookup's lookup_slab, inline) up to the release itself */
	uint32_t w = i / 64;
	uint64_t bit = 1ull << (i % 64);
	if (unlikely(!(bits_load(&s->used[w]) & bit) ||
		     ((bits_load(&s->remote[w]) | bits_load(&s->quar[w])) & bit))) {
		free_freed(a, s, i);
	}
	if (t->hard) {
		if (unlikely(opt.quarantine || !touch_direct(t, s->owner))) {
			free_slot_hard(t, s, i, p);
			return;
		}
		if (canary_bytes)
			canary_check(s, p);
		if (opt.zero_on_free | opt.junk) {
			size_t n = k->size - canary_bytes;
			if (opt.junk || n > SLOT_ZERO_INLINE) {
				free_slot_fill(t, s, i, p, n);
				return;
			}
			slot_zero_inline(p, n);
		}
	}
	if (likely(__atomic_load_n(&s->heap, __ATOMIC_RELAXED) == t->heap)) {
		slot_release_bits(t, s, i);
		if (unlikely(s->list != SL_CUR))
			slot_release_listed(t, t->heap, s);
	} else {
		slot_release_remote(t, s, i);
	}
}

/* A page run that realloc grows gets an eighth more room than asked
 * (page runs only: a huge block grows within its segments, huge_resize):
 * a buffer grown by small steps (an append) then crosses a page boundary,
 * so moves or grows in place, once per eighth of its size, not once per
 * page: realloc_append64/1048576 moved 60 times and grew its guard 192
 * times per chain.  Only for a growth by less than an eighth (an
 * append).  The room pages are granted and untouched (no frames until
 * written); malloc_usable_size reports them. */
static size_t realloc_room(size_t size)
{
	if (size > LARGE_MAX)
		return size;
	size_t room = size + (size >> 3);
	return room > LARGE_MAX ? LARGE_MAX : room;
}

void heap_check_sized(const void *p, size_t size, size_t align)
{
	struct blk b;
	uintptr_t a = (uintptr_t)p;
	enum blk_status stt = owner_lookup(a, &b);
	if (stt != BLK_OK)
		heap_misuse("free", a, stt, &b);
	size_t want = b.kind == BK_SMALL ? classes[b.s->cls].size : b.usable;
	size_t got, most;
	if (b.kind == BK_SMALL) {
		/* made before or after run_min() moved: its class decides */
		unsigned c = size <= SMALL_MAX - canary_bytes ? size_to_class(size + canary_bytes)
							      : NCLASSES;
		if (align > 16)
			while (c < NCLASSES && classes[c].size % align)
				c++;
		got = most = c < NCLASSES ? classes[c].size : 0;
	} else {
		/* heap_aligned serves size 0 with a large alignment one page;
		 * a run realloc grew may have its room beyond the size */
		size_t n = size || align <= 16 ? size : 1;
		got = align_up(n, PAGE_SIZE);
		most = align_up(realloc_room(n), PAGE_SIZE);
	}
	if (want < got || want > most)
		xpfo_fatal("sized free of %p with size %z: the block has size class %z (compartment \"%s\")",
			   p, size, want, comp_name(b.owner));
}

size_t heap_usable(const void *p)
{
	struct blk b;
	enum blk_status stt = owner_lookup((uintptr_t)p, &b);
	if (stt != BLK_OK)
		heap_misuse("malloc_usable_size", (uintptr_t)p, stt, &b);
	return b.usable;
}

/* realloc is free + malloc in the caller's compartment: a block stays
 * where it is only when it is the caller's compartment's own; one of
 * another compartment moves, read like free reads it (struct touch: a
 * closed compartment's pages through /proc/self/mem, never opened). */
void *heap_realloc(struct tstate *t, void *p, size_t size)
{
	uintptr_t a = (uintptr_t)p;
	struct blk b;
	enum blk_status stt = owner_lookup(a, &b);
	if (stt != BLK_OK)
		heap_misuse("realloc", a, stt, &b);
	struct touch x;
	if (b.kind == BK_SMALL && canary_bytes) {
		touch_begin(&x, t, b.owner, p, b.span);
		canary_check_x(&x, b.s, p);
		touch_end(&x);
	}
	bool small = size < run_min();
	/* room for a small step only: a caller that grows by an eighth or
	 * more grows geometrically itself (realloc_grow1.5x/1048576 took 12%
	 * longer with room: larger moves) */
	size_t want = !small && size > b.usable && size - b.usable <= b.usable / 8
			      ? realloc_room(size) : size;
	/* a run within the room realloc would give its new size stays as it
	 * is (the append's next steps), not cut to the size */
	if (b.owner == t->heap->comp->id &&
	    (b.kind == BK_SMALL ? small && size_to_class(size + canary_bytes) == b.s->cls
				: !small && ((size <= b.usable && align_up(realloc_room(size), PAGE_SIZE) >= b.usable) ||
					     realloc_in_place(t, a, &b, size, want)))) {
		stat_inc(reallocs_in_place);
		return p;
	}
	/* a new run gets the bytes copied to it faulted in by one call */
	size_t copy = b.usable < size ? b.usable : size;
	void *q = small ? heap_malloc(t, want) : large_alloc(t, want, PAGE_SIZE, false, copy);
	if (!q && want != size)
		q = large_alloc(t, size, PAGE_SIZE, false, copy);
	if (!q)
		return NULL;
	touch_begin(&x, t, b.owner, p, b.usable);
	touch_read(&x, p, q, copy);
	touch_end(&x);
	/* a huge block the program outgrew: its size rarely comes back, so it
	 * is not kept (pages.c pages_keep_huge) for the next one (frag's
	 * growing arrays held their old ones' frames for nothing) */
	if (b.kind == BK_HUGE)
		free_large(t, &b, RF_NOKEEP);
	else
		heap_free(t, p);
	return q;
}

/* Debug: check the page tables against each other (pages_lock held inside).
 * A walk reads every page entry of the heap, so a program flushing after
 * each free of a large heap would spend its life here: walks are paced.
 * Each call earns WALK_EARN segments' worth, and the walk runs once the
 * earnings cover the heap's segments: at every call while the heap has at
 * most that many, at a walk's cost of WALK_EARN segments per call beyond. */
#define WALK_EARN 16

void heap_walk_check(void)
{
	static size_t earned;
	if (!debug_walks)
		return;
	pthread_mutex_lock(&pages_lock);
	earned += WALK_EARN;
	if (earned < heap_nsegs) {
		pthread_mutex_unlock(&pages_lock);
		return;
	}
	earned = 0;
	owner_check();
	for (size_t i = 0; i < heap_nsegs; i++)
		if (seg_table[i].kind == SEG_PAGES_K && !seg_table[i].releasing &&
		    !comp_table[seg_table[i].owner])
			xpfo_fatal("invariant: segment %u has no owner", (unsigned long)i);
	pthread_mutex_unlock(&pages_lock);
}
