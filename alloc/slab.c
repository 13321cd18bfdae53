/* slab.c - slabs and thread heaps.
 *
 * A slab is a page run cut into equal slots of one size class.  A thread
 * heap allocates from its current slab of each class (heap.c's fast path)
 * and keeps the others on a partial and a full list.  Frees by other threads
 * set a bit in the slab's `remote` bitmap atomically and push the slab on
 * the heap's notification stack once; the heap collects them when it runs
 * out.  Slabs of a heap whose thread exited are abandoned to their
 * compartment and adopted by the next heap that needs that class.
 *
 * A slab whose slots are all free is retired (past the few a heap keeps,
 * slab_keep_empty): its pages go to the gather and are revoked (free pages
 * belong to the allocator, invariant I3).
 */
#include "heap.h"

#include <errno.h>

/* ---- slab lists --------------------------------------------------------- */
static void list_push(struct slab_list_head *l, struct slab *s, enum slab_list which)
{
	s->list = (uint8_t)which;
	s->prev = NULL;
	s->next = l->head;
	if (l->head)
		l->head->prev = s;
	else
		l->tail = s;
	l->head = s;
}

/* At the far end: a full slab that gets a free slot goes behind the
 * partial slabs that had theirs longer (small_refill takes the head).
 * Pushed at the head, the slab with one free slot became current, filled
 * at once and sent the next malloc back to small_refill: xb-pairs local
 * called it on 14% of its mallocs. */
static void list_append(struct slab_list_head *l, struct slab *s, enum slab_list which)
{
	s->list = (uint8_t)which;
	s->next = NULL;
	s->prev = l->tail;
	if (l->tail)
		l->tail->next = s;
	else
		l->head = s;
	l->tail = s;
}

static void list_del(struct slab_list_head *l, struct slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		l->head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		l->tail = s->prev;
	s->next = s->prev = NULL;
	s->list = SL_NONE;
}

static struct slab_list_head *list_of(struct theap *h, struct slab *s)
{
	return s->list == SL_PARTIAL ? &h->partial[s->cls] : &h->full[s->cls];
}

/* Fold remotely freed slots back into the heap's view. */
static bool slab_collect(struct slab *s)
{
	bool any = false;
	for (uint32_t w = 0; w < SLAB_WORDS; w++) {
		/* seq_cst: see slot_release_remote (a plain load on x86) */
		if (!__atomic_load_n(&s->remote[w], __ATOMIC_SEQ_CST))
			continue;
		uint64_t r = __atomic_exchange_n(&s->remote[w], 0, __ATOMIC_ACQUIRE);
		if (!r)
			continue;
		bits_store(&s->used[w], s->used[w] & ~r);
		s->nused -= (uint32_t)__builtin_popcountll(r);
		if (w < s->cursor)
			s->cursor = w;
		any = true;
	}
	return any;
}

/* The slab may be retired (its metadata freed) only when no remote free is
 * between setting its bit and announcing it: the announcement would link
 * freed metadata into a heap's list. */
static inline bool slab_quiet(struct slab *s)
{
	return !__atomic_load_n(&s->in_notify, __ATOMIC_SEQ_CST) &&
	       !__atomic_load_n(&s->rpending, __ATOMIC_SEQ_CST);
}

/* The slab's slots are all free: its pages go back through the gather. */
static void slab_retire(struct tstate *t, struct slab *s)
{
	size_t np = classes[s->cls].npages + s->guard;
	unsigned flags = (s->guard ? RF_GUARDED : 0) | RF_CLASS(s->cls);
	uintptr_t base = s->base;
	uint16_t owner = s->owner;
	slab_meta_free(s);
	flush_if_full(t, revoke_add(t, base, np, owner, RK_RUN, flags));
}

/* An empty slab stays on its heap's partial list while the heap keeps
 * fewer than opt.keep_empty pages so (its slots are free and zeroed, its
 * pages its compartment's, as a partial slab's free slots are): a thread
 * whose blocks are all freed, by itself or by a consumer thread, would
 * otherwise retire slabs and make new ones at every turn (slab_new, a
 * canary, the gather and back), and a program that frees everything and
 * allocates it again would get its pages back from the kernel one fault
 * each (guard markers take the frames of what they revoke).  mimalloc
 * keeps empty pages a while the same way.  The rest retire, and past
 * KEEP_EMPTY_BASE pages fresh pages retire kept ones (slab_shed_kept);
 * slab_abandon retires the kept ones at thread exit. */

/* Count s's pages in *total (its flag set) unless that passes bound; true
 * when s is (now) counted. */
static bool slab_count_in(uint8_t *flag, uint32_t *total, unsigned np, unsigned bound)
{
	if (*flag)
		return true;
	if (*total + np > bound)
		return false;
	*total += np;
	*flag = 1;
	return true;
}

/* A slab newly kept goes to its partial list's tail: small_refill takes
 * the head (partial slabs fill first) and slab_shed_kept looks at the
 * tail. */
static bool slab_keep_empty(struct theap *h, struct slab *s)
{
	bool was = s->kept;
	if (!slab_count_in(&s->kept, &h->kept_pages, classes[s->cls].npages, opt.keep_empty))
		return false;
	struct slab_list_head *l = &h->partial[s->cls];
	if (!was && s->list == SL_PARTIAL && l->tail != s) {
		list_del(l, s);
		list_append(l, s, SL_PARTIAL);
	}
	return true;
}

/* Empty slabs of exited threads stay abandoned to their compartment, up
 * to SPARE_PAGES pages of them, for the next thread that needs the class
 * (adopt): a program that runs many short threads would otherwise retire
 * every thread's empty slabs at its exit (a revocation, its TLB shootdown
 * on every CPU and the mmap_lock) and grant new ones to the next thread,
 * and empty whole segments and carve them again (threadchurn: 10.5
 * revoking and 3 granting mprotect calls and one 4 MiB segment purge per
 * thread).  The pages stay their compartment's, as a heap's kept empty
 * slabs do, free slots filled; the bound is per compartment, not per
 * thread. */
#define SPARE_PAGES 1024

/* pages_lock held; true when s is (now) counted as a spare */
static bool slab_spare(struct xpfo_compartment *c, struct slab *s)
{
	unsigned np = classes[s->cls].npages;
	bool was = s->spare;
	if (!slab_count_in(&s->spare, &c->spare_pages, np, SPARE_PAGES))
		return false;
	if (!was)
		stat_add(spare_pages, np);
	return true;
}

static void slab_unspare(struct xpfo_compartment *c, struct slab *s)
{
	if (s->spare) {
		s->spare = 0;
		c->spare_pages -= classes[s->cls].npages;
		stat_sub(spare_pages, classes[s->cls].npages);
	}
}

/* s leaves the partial list to be allocated from again. */
static inline void slab_unkeep(struct theap *h, struct slab *s)
{
	if (s->kept) {
		s->kept = 0;
		h->kept_pages -= classes[s->cls].npages;
	}
}

/* The write-after-free check expects every free slot's user bytes to hold
 * the fill: a new slab's pages are filled unless they are known to hold it.
 * With a zero fill, zero pages do, and so do the pages of a retired slab of
 * the same class that this thread took back whole from its gather
 * (revoke_taken_class): with the check on, zero_on_free is (api/init.c),
 * so every slot of every slab held zeros from the slab's start or since it
 * was freed; the slab retired with all its slots free, and its pages never
 * left their owner meanwhile (a purge on the way, the only other writer,
 * leaves zeros too).  The same class lays out the same slots, so only the
 * canary words differ, which the check skips and the slot's next malloc
 * writes.  A stale write into such a slot since its free is caught at its
 * reuse, where a fill would have erased it.  Junk (0xdf) always fills.  A
 * closed compartment's new slab (xpfo_malloc_in from outside) is filled
 * without opening it (found by the ops fuzz target, strict). */
static bool slab_needs_fill(const struct tstate *t, uintptr_t a, unsigned cls, bool clean)
{
	if (free_fill())
		return true;
	return !clean && revoke_taken_class(t, a) != (int)cls;
}

/* The fill slab_needs_fill asks for.  A retired slab of another class
 * taken back whole holds zeros for the same reasons, but in its slots'
 * canary words and past its last slot (which overflows of its last slot
 * may have reached): when the thread reaches the pages directly, only
 * those are cleared, one store a slot instead of the whole run. */
static void slab_fill(struct tstate *t, struct slab *s, size_t npages)
{
	size_t len = npages << PAGE_SHIFT;
	int old = free_fill() ? -1 : revoke_taken_class(t, s->base);
	if (old >= 0 && touch_direct(t, s->owner)) {
		const struct size_class *o = &classes[old];
		char *b = (char *)s->base;
		uint64_t zero = 0;
		for (size_t i = 1; canary_bytes && i <= o->nslots; i++)
			memcpy(b + i * o->size - sizeof zero, &zero, sizeof zero);
		memset(b + (size_t)o->nslots * o->size, 0, len - (size_t)o->nslots * o->size);
		return;
	}
	struct touch x;
	touch_begin(&x, t, s->owner, (void *)s->base, len);
	touch_fill(&x, (void *)s->base, free_fill(), len);
	touch_end(&x);
}

/* A new slab of up to this many pages whose frames are missing is faulted
 * in whole by one call (run_populate): slots up to 1 KiB, eight or more to
 * a slab, so the slab's first mallocs touch its pages anyway.  Bigger
 * slabs are left to the program's touches: a slot of several pages may be
 * written only in part, and its untouched pages stay missing
 * (tests/slabclean). */
#define POPULATE_SLAB_PAGES 2

/* The heap takes np fresh pages (their frames missing) while it keeps
 * more than KEEP_EMPTY_BASE pages of empty slabs, none of the class it
 * needs (small_refill took those first): as many kept pages retire, so the
 * kept slabs of sizes the program has moved on from do not add to its
 * peak (frag: 16 MiB of one-page slabs idle while its medium blocks took
 * new pages).  Their pages go to the gather like any slab's. */
void slab_shed_kept(struct tstate *t, struct theap *h, size_t np)
{
	size_t shed = 0;
	if (h->kept_pages <= KEEP_EMPTY_BASE)
		return;
	for (unsigned c = 0; c < NCLASSES && shed < np; c++) {
		struct slab *s = h->partial[c].tail;
		while (s && shed < np && h->kept_pages > KEEP_EMPTY_BASE) {
			struct slab *prev = s->prev;
			if (!s->kept || s->nused || !slab_quiet(s))
				break;
			list_del(&h->partial[c], s);
			slab_unkeep(h, s);
			shed += classes[c].npages;
			stat_add(pages_shed, classes[c].npages);
			slab_retire(t, s);
			s = prev;
		}
	}
}

static struct slab *slab_new(struct tstate *t, struct theap *h, unsigned cls)
{
	const struct size_class *k = &classes[cls];
	bool clean;
	bool guard = opt.guard_slabs && h->nslabs++ % opt.guard_slabs == 0 && guard_allowed();
	uintptr_t a = run_get(t, h->comp, k->npages, 1, guard, cls, &clean);
	if (!a)
		return NULL;
	if (clean)
		slab_shed_kept(t, h, k->npages);
	struct slab *s = slab_meta_new();
	if (!s) {
		flush_if_full(t, revoke_add(t, a, k->npages + guard, h->comp->id, RK_RUN,
					    guard ? RF_GUARDED : 0));
		return NULL;
	}
	s->base = a;
	s->cls = (uint16_t)cls;
	s->nslots = k->nslots;
	s->owner = h->comp->id;
	s->guard = guard;
	s->canary = rng_u64(&t->rng) & ~(uint64_t)0xff; /* its first byte is zero */
	/* its pages read zero (or the fill) until the program writes a slot,
	 * and a read of one whose frame is missing maps the zero page: the
	 * program's first write then replaces that mapping, a TLB flush on
	 * every CPU the process runs on.  So the write-after-free check
	 * skips a slot never handed out (under revoke=off a free page may
	 * have been written after its purge: checked as before) */
	s->fresh = clean && opt.revoke != REVOKE_OFF;
	/* slots past the end count as used, so the search never finds them */
	for (unsigned w = k->nslots / 64; w < SLAB_WORDS; w++)
		s->used[w] = w == k->nslots / 64 ? ~0ull << (k->nslots % 64) : ~0ull;
	if (opt.waf_check && slab_needs_fill(t, a, cls, clean))
		slab_fill(t, s, k->npages);
	else if (clean && k->npages <= POPULATE_SLAB_PAGES)
		run_populate(t, s->owner, a, (size_t)k->npages << PAGE_SHIFT);
	__atomic_store_n(&s->heap, h, __ATOMIC_RELEASE);
	owner_set_slab(a, k->npages, s->id, s->owner);
	return s;
}

/* Slabs whose remote frees were announced: fold them in. */
static void heap_drain_notify(struct tstate *t, struct theap *h)
{
	struct slab *s = __atomic_exchange_n(&h->notify, NULL, __ATOMIC_ACQUIRE);
	while (s) {
		struct slab *next = s->notify_next;
		/* seq_cst, as slab_collect's reads: a remote free that saw the
		 * notice still set must have its bit read here */
		__atomic_store_n(&s->in_notify, 0, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&s->heap, __ATOMIC_ACQUIRE) == h && slab_collect(s)) {
			/* a free announced again since the notice was cleared has
			 * linked the slab into the new list: it must stay */
			if (s->nused == 0 && s->list != SL_CUR && slab_quiet(s) &&
			    !slab_keep_empty(h, s)) {
				list_del(list_of(h, s), s);
				slab_retire(t, s);
			} else if (s->list == SL_FULL) {
				list_del(&h->full[s->cls], s);
				list_append(&h->partial[s->cls], s, SL_PARTIAL);
			}
		}
		s = next;
	}
}

static struct slab *adopt(struct theap *h, unsigned cls)
{
	struct xpfo_compartment *c = h->comp;
	if (!__atomic_load_n(&c->abandoned[cls], __ATOMIC_RELAXED))
		return NULL;
	pthread_mutex_lock(&pages_lock);
	struct slab *s = c->abandoned[cls];
	if (s) {
		__atomic_store_n(&c->abandoned[cls], s->next, __ATOMIC_RELAXED);
		if (s->next)
			s->next->prev = NULL;
		s->next = s->prev = NULL;
		s->abandoned = 0;
		slab_unspare(c, s);
		__atomic_store_n(&s->heap, h, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&pages_lock);
	if (s)
		slab_collect(s);
	return s;
}

__attribute__((noinline)) void *small_refill(struct tstate *t, struct theap *h, unsigned cls)
{
	struct slab *s = h->cur[cls];
	if (s) {
		/* its remote bits are scanned only when it was announced (a
		 * slab with remote frees is, unless announced to an exited
		 * heap before it was adopted: its notice stays set) */
		if (__atomic_load_n(&s->in_notify, __ATOMIC_RELAXED) && slab_collect(s)) {
			void *p = slab_take(t, s);
			if (p)
				return p;
		}
		list_push(&h->full[cls], s, SL_FULL);
		h->cur[cls] = NULL;
	}
	/* remote frees push onto notify with a CAS: read it atomically */
	if (__atomic_load_n(&h->notify, __ATOMIC_ACQUIRE))
		heap_drain_notify(t, h);
	for (;;) {
		s = h->partial[cls].head;
		if (s) {
			list_del(&h->partial[cls], s);
			slab_unkeep(h, s);
		} else if (!(s = adopt(h, cls)) && !(s = slab_new(t, h, cls))) {
			errno = ENOMEM;
			return NULL;
		}
		s->list = SL_CUR;
		h->cur[cls] = s;
		void *p = slab_take(t, s);
		if (p)
			return p;
		/* an adopted slab with no free slot */
		h->cur[cls] = NULL;
		list_push(&h->full[cls], s, SL_FULL);
	}
}

/* Announce s's remote frees to heap h (once until h drains the notice):
 * the drain clears the notice before it reads the remote bits (both
 * seq_cst, like the caller's accesses), so it sees this bit.  Only the first
 * remote free after a drain pays for the exchange and the push, and the
 * others do not write the slab's line the owner reads (mimalloc's
 * delayed-free flag does the same). */
static void slab_announce(struct theap *h, struct slab *s)
{
	if (__atomic_load_n(&s->in_notify, __ATOMIC_SEQ_CST) ||
	    __atomic_exchange_n(&s->in_notify, 1, __ATOMIC_SEQ_CST))
		return;
	struct slab *top = __atomic_load_n(&h->notify, __ATOMIC_RELAXED);
	do
		s->notify_next = top;
	while (!__atomic_compare_exchange_n(&h->notify, &top, s, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/* An abandoned slab with no live slot left (pages_lock held). */
static bool slab_abandoned_empty(struct slab *s)
{
	if (!s->abandoned || __atomic_load_n(&s->heap, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&s->in_notify, __ATOMIC_SEQ_CST) ||
	    __atomic_load_n(&s->rpending, __ATOMIC_SEQ_CST) != 0)
		return false;
	for (unsigned w = 0; w < SLAB_WORDS; w++) {
		uint64_t live = bits_load(&s->used[w]) & ~bits_load(&s->remote[w]);
		if (w == (unsigned)(s->nslots - 1) / 64 && s->nslots % 64)
			live &= (1ull << (s->nslots % 64)) - 1;
		else if (w > (unsigned)(s->nslots - 1) / 64)
			live = 0;
		if (live)
			return false;
	}
	return true;
}

/* Take an abandoned slab off its compartment's list (pages_lock held). */
static void slab_unabandon(struct slab *s)
{
	struct xpfo_compartment *c = comp_table[s->owner];
	if (s->prev)
		s->prev->next = s->next;
	else
		__atomic_store_n(&c->abandoned[s->cls], s->next, __ATOMIC_RELAXED);
	if (s->next)
		s->next->prev = s->prev;
	s->abandoned = 0;
	slab_unspare(c, s);
}

/* Give slot i back: to the heap that allocates from its slab, or to the
 * slab's remote bits. */
void slot_release_remote(struct tstate *t, struct slab *s, uint32_t i)
{
	uint64_t bit = 1ull << (i % 64);
	__atomic_add_fetch(&s->rpending, 1, __ATOMIC_SEQ_CST);
	uint64_t old = __atomic_fetch_or(&s->remote[i / 64], bit, __ATOMIC_SEQ_CST);
	if (old & bit) {
		struct blk b = { .owner = s->owner };
		heap_misuse("free", (uintptr_t)slot_addr(s, i), BLK_FREED, &b);
	}
	t->st.frees[s->cls]++;
	struct theap *h = __atomic_load_n(&s->heap, __ATOMIC_ACQUIRE);
	if (h) {
		/* already announced and not drained yet: see slab_announce */
		slab_announce(h, s);
		__atomic_sub_fetch(&s->rpending, 1, __ATOMIC_SEQ_CST);
		return;
	}
	__atomic_sub_fetch(&s->rpending, 1, __ATOMIC_SEQ_CST);
	/* abandoned: if that was its last live slot, it stays a spare or
	 * retires here */
	pthread_mutex_lock(&pages_lock);
	bool empty = slab_abandoned_empty(s) && !slab_spare(comp_table[s->owner], s);
	if (empty)
		slab_unabandon(s);
	pthread_mutex_unlock(&pages_lock);
	if (empty)
		slab_retire(t, s);
}

/* Slot i of s, owned by the calling thread's current heap: clear its bit. */
/* A slot was freed in a slab that is not its heap's current one: the
 * slab moves from full to partial, and retires once empty. */
__attribute__((noinline)) void slot_release_listed(struct tstate *t, struct theap *h,
						   struct slab *s)
{
	if (s->list == SL_FULL) {
		list_del(&h->full[s->cls], s);
		list_append(&h->partial[s->cls], s, SL_PARTIAL);
	}
	/* an announced slab stays until its heap drains the notice:
	 * freeing its metadata now would leave it linked in that list */
	if (s->nused == 0 && slab_quiet(s) && !slab_keep_empty(h, s)) {
		list_del(&h->partial[s->cls], s);
		slab_retire(t, s);
	}
}

/* ---- heaps -------------------------------------------------------------- */
void slab_init_theap(struct theap *h, struct tstate *t, struct xpfo_compartment *c)
{
	memset(h, 0, sizeof *h);
	h->comp = c;
	h->t = t;
}

static void abandon_slab(struct tstate *t, struct theap *h, struct slab *s)
{
	slab_collect(s);
	slab_unkeep(h, s);
	bool empty = s->nused == 0 && slab_quiet(s);
	struct xpfo_compartment *c = h->comp;
	pthread_mutex_lock(&pages_lock);
	if (empty && !slab_spare(c, s)) {
		pthread_mutex_unlock(&pages_lock);
		slab_retire(t, s);
		return;
	}
	s->list = SL_NONE;
	s->abandoned = 1;
	s->prev = NULL;
	s->next = c->abandoned[s->cls];
	if (s->next)
		s->next->prev = s;
	/* adopt() peeks at the list without pages_lock */
	__atomic_store_n(&c->abandoned[s->cls], s, __ATOMIC_RELAXED);
	__atomic_store_n(&s->heap, NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pages_lock);
	/* frees that raced with the hand-over are folded in by the adopter, or
	 * retire the slab themselves once it is empty */
}

void slab_abandon(struct tstate *t, struct theap *h)
{
	struct slab *n = __atomic_exchange_n(&h->notify, NULL, __ATOMIC_ACQUIRE);
	while (n) {
		/* the link first: once the notice is clear, a remote free may
		 * push the slab again and rewrite it (TSan, tsan-remote) */
		struct slab *next = n->notify_next;
		__atomic_store_n(&n->in_notify, 0, __ATOMIC_SEQ_CST);
		n = next;
	}
	for (unsigned c = 0; c < NCLASSES; c++) {
		if (h->cur[c]) {
			abandon_slab(t, h, h->cur[c]);
			h->cur[c] = NULL;
		}
		struct slab_list_head *lists[2] = { &h->partial[c], &h->full[c] };
		for (int l = 0; l < 2; l++)
			while (lists[l]->head) {
				struct slab *s = lists[l]->head;
				list_del(lists[l], s);
				abandon_slab(t, h, s);
			}
	}
}
