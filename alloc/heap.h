/* heap.h - what the four files of malloc and free share (internal to them).
 *
 *   heap.c    the entry points (malloc, free, realloc, ...) and their fast
 *             paths: a slot from the current slab, a slot given back
 *   slab.c    slabs and thread heaps: new, refilled, adopted, retired
 *             slabs, remote frees, a thread's heap at exit
 *   run.c     page runs and huge blocks: guards, grant spans, resizing in
 *             place
 *   harden.c  canaries, fills, the write-after-free check, the quarantine,
 *             and reaching a slot of a closed compartment (struct touch)
 *
 * The fast path's helpers are static inline here (slab_take, slot_release,
 * canary_check, touch_direct): a small malloc/free pair is counted in
 * instructions (bench/pairs.sh), and a call across files would
 * cost it a frame.
 */
#ifndef XPFO_ALLOC_HEAP_H
#define XPFO_ALLOC_HEAP_H

#include "alloc.h"
#include "arch.h"
#include "owner.h"

#include <string.h>

#define LARGE_CLASS NCLASSES /* stats index of page runs */
/* A guarded page run grows in place from this many pages (run.c
 * realloc_in_place); smaller ones are granted in spans (run_get), whose
 * spares would stand where a larger one grows. */
#define GUARDED_GROW_MIN 64

static inline const char *comp_name(uint16_t id)
{
	struct xpfo_compartment *c = id < MAX_COMPARTMENTS ? comp_table[id] : NULL;
	return c ? c->name : "?";
}

static inline uint64_t bits_load(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* revoke_add said the gather is full: the caller flushes (mmu_gather). */
static inline void flush_if_full(struct tstate *t, bool full)
{
	if (full)
		revoke_flush(t, revoke_full_reason());
}
static inline void bits_store(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }

/* The byte freed small slots are filled with (zero_on_free, junk). */
static inline int free_fill(void) { return opt.junk ? 0xdf : 0; }

/* Fill a freed slot the thread reaches directly (n bytes, a multiple
 * of 8). */
static inline void slot_fill(void *p, size_t n)
{
	if (opt.junk)
		memset(p, 0xdf, n);
	else
		arch_zero(p, n);
}

/* Up to this many bytes heap_free zeroes a slot itself, with 16-byte
 * stores that may overlap: memset's call cost more than its stores there
 * (12 instructions in glibc's memset, and a call in heap_free made it keep
 * its values in saved registers). */
#define SLOT_ZERO_INLINE 128

static inline void zero16(char *c)
{
	const uint64_t z __attribute__((vector_size(16))) = { 0, 0 };
	memcpy(c, &z, sizeof z);
}

/* n bytes, 8 to SLOT_ZERO_INLINE, a multiple of 8. */
static inline __attribute__((always_inline)) void slot_zero_inline(void *p, size_t n)
{
	char *c = p;
	if (n < 16) {
		const uint64_t z = 0;
		memcpy(c, &z, sizeof z);
		return;
	}
	zero16(c);
	zero16(c + n - 16);
	if (n <= 32)
		return;
	zero16(c + 16);
	zero16(c + n - 32);
	if (n <= 64)
		return;
	zero16(c + 32);
	zero16(c + 48);
	zero16(c + n - 64);
	zero16(c + n - 48);
}

/* Hardening reads and writes slots (canaries, fills).  A slot of a
 * compartment the calling thread is not inside may be out of its reach right
 * now: with a key, the thread's rights are widened for the moment (no
 * syscall, nobody else gains anything); a closed compartment on the mprotect
 * backend is read and written through /proc/self/mem, which needs no
 * protection change, so no other thread ever sees the page open.  Without
 * /proc/self/mem the slot's pages are moved to an address nobody knows,
 * opened there, and moved back closed (os_move_out): they are never
 * reachable at their own address.  If even that fails, the checks on the
 * slot are skipped (counted in touches_skipped) and a write it needs is
 * fatal.  The compartment's lock keeps enter, leave, grants, walks and key
 * moves out meanwhile, and no thread is inside a closed compartment. */
struct touch {
	struct xpfo_compartment *c;
	bool indirect;        /* through /proc/self/mem */
	bool moved;           /* fallback: the pages were moved away and opened */
	bool skipped;         /* neither worked: checks skipped, writes fatal */
	bool rights;          /* pkeys: the thread's rights were widened */
	int err;              /* skipped: why */
	uintptr_t a;
	size_t len;
	ptrdiff_t delta;      /* moved: where the slot is now, less where it was */
	uint64_t saved;
};

/* The usual case: root's slot, or a slot of the compartment the thread is
 * in: touched directly.  t->heap is the heap of the compartment the thread
 * is in (only thread_switch, at enter and leave, changes it) unless it is
 * borrowed (xpfo_malloc_in); t->depth is not asked: a thread of
 * compartments=thread is in its own compartment at depth 0 (it cannot
 * leave it), and asking it sent every small malloc and free of such a
 * thread through the compartment's lock (touches_locked counts that path;
 * tests/isolation/threadmode checks it stays 0 there). */
static inline bool touch_direct(const struct tstate *t, uint16_t owner)
{
	return owner == comp_root.id || (t->heap->comp->id == owner && !t->borrowed);
}

/* The write-after-free check (harden.c's waf_scan) for a slot the thread
 * reaches directly, with junk off (the fill is zero, zero_on_free): true
 * when the checked bytes are all zero.  16 bytes a step (one SSE2 load and
 * OR on x86-64; the default's 64 unrolled), then 8; user is a multiple of 8.  Inline: the default
 * profile runs it on every small malloc's fast path. */
typedef uint64_t waf_vec __attribute__((vector_size(16)));

static inline bool waf_clean_direct(const unsigned char *p, size_t user)
{
	size_t head = opt.waf_bytes && opt.waf_bytes < user - 8 ? opt.waf_bytes : user - 8, i = 0;
	waf_vec acc = { 0, 0 }, v;
	uint64_t w, rest;
	if (likely(head == 64)) { /* the default's waf_bytes, slots past 72 bytes */
		/* four loads into registers (an array of four went through
		 * the stack: a store and a load more each) */
		waf_vec h0, h1, h2, h3;
		memcpy(&h0, p, sizeof h0);
		memcpy(&h1, p + 16, sizeof h1);
		memcpy(&h2, p + 32, sizeof h2);
		memcpy(&h3, p + 48, sizeof h3);
		acc = (h0 | h1) | (h2 | h3);
		i = 64;
	}
	for (; i + 16 <= head; i += 16) {
		memcpy(&v, p + i, sizeof v);
		acc |= v;
	}
	memcpy(&rest, p + user - 8, sizeof rest);
	for (; i < head; i += 8) {
		memcpy(&w, p + i, sizeof w);
		rest |= w;
	}
	return !(acc[0] | acc[1] | rest);
}

/* ---- alloc/heap.c -------------------------------------------------------- */
_Noreturn __attribute__((cold)) void heap_misuse(const char *what, uintptr_t a,
						 enum blk_status st_, const struct blk *b);

/* ---- alloc/slab.c -------------------------------------------------------- */
/* A slot of class cls when the current slab has none: its remote frees,
 * the partial list, an abandoned slab, a new slab (NULL, errno ENOMEM). */
__attribute__((noinline)) void *small_refill(struct tstate *t, struct theap *h, unsigned cls);
/* Empty slabs a heap keeps (slab.c): up to KEEP_EMPTY_BASE pages of them
 * whatever it allocates; past that, fresh pages taken retire as many. */
#define KEEP_EMPTY_BASE 64
void slab_shed_kept(struct tstate *t, struct theap *h, size_t np);
/* Give slot i back to the slab's remote bits (another heap's slab). */
void slot_release_remote(struct tstate *t, struct slab *s, uint32_t i);
__attribute__((noinline)) void slot_release_listed(struct tstate *t, struct theap *h,
						   struct slab *s);

/* ---- alloc/run.c --------------------------------------------------------- */
bool guard_allowed(void);
void run_populate(struct tstate *t, uint16_t owner, uintptr_t a, size_t len);
uintptr_t run_get(struct tstate *t, struct xpfo_compartment *c, size_t npages,
		  size_t align_pages, bool guard, unsigned tag, bool *clean);
/* A page run (<= LARGE_MAX) or whole segments for size bytes (NULL, errno);
 * written: bytes from its start the caller writes at once (realloc's copy),
 * faulted in by one call where the run's frames are missing. */
void *large_alloc(struct tstate *t, size_t size, size_t align, bool zero, size_t written);
bool realloc_in_place(struct tstate *t, uintptr_t a, struct blk *b, size_t size, size_t room);

/* ---- alloc/harden.c ------------------------------------------------------ */
void touch_begin(struct touch *x, struct tstate *t, uint16_t owner, void *p, size_t n);
void touch_end(struct touch *x);
void touch_fill(struct touch *x, void *p, int byte, size_t n);
_Noreturn __attribute__((noinline, cold)) void canary_fatal(void *p, unsigned cls);
/* Hardening work on a slot being handed out (t->hard says some is on). */
__attribute__((noinline)) void slot_prepare(struct tstate *t, struct slab *s, void *p);
/* The hardening part of freeing a small slot; true when the slot went to
 * the quarantine instead of being released. */
__attribute__((noinline)) bool slot_on_free(struct tstate *t, struct slab *s, uint32_t i, void *p);

/* ---- the fast path's helpers -------------------------------------------- */

static inline void touch_read(struct touch *x, const void *p, void *buf, size_t n)
{
	if (!x->indirect)
		memcpy(buf, (const char *)p + x->delta, n);
	else if (os_mem_read(p, buf, n))
		xpfo_fatal("cannot read a slot of compartment \"%s\"", x->c->name);
}

static inline void *slot_addr(const struct slab *s, unsigned i)
{
	return (void *)(s->base + (size_t)i * classes[s->cls].size);
}

/* A random free slot: a random word with a free slot, then a random free
 * bit in it, from one random byte (its low 6 bits the bit, its top 2 the
 * first word: every class has 1, 2 or 4 words, sizeclass_init).  A full
 * slab draws nothing. */
static inline void *slab_take_random(struct tstate *t, struct slab *s)
{
	if (s->nused >= s->nslots)
		return NULL;
	unsigned nw = ((unsigned)s->nslots + 63) >> 6;
	unsigned x = rng_byte(&t->rng), r = x & 63;
	unsigned w = ((x >> 6) * nw) >> 2;
	for (unsigned k = 0; k < nw; k++, w = (w + 1) & (nw - 1)) {
		uint64_t f = ~s->used[w];
		if (!f)
			continue;
		uint64_t rot = (f >> r) | (f << ((64 - r) & 63));
		unsigned b = ((unsigned)__builtin_ctzll(rot) + r) & 63;
		t->fresh_slot = s->fresh & ~(unsigned)(s->given[w] >> b) & 1;
		bits_store(&s->used[w], s->used[w] | (1ull << b));
		bits_store(&s->given[w], s->given[w] | (1ull << b));
		s->nused++;
		return slot_addr(s, w * 64 + b);
	}
	return NULL;
}

/* Inlined into small_alloc whatever GCC's estimate: a call costs the
 * fast path a frame (about 15 instructions per malloc). */
static inline __attribute__((always_inline)) void *slab_take(struct tstate *t, struct slab *s)
{
	if (opt.random_slots)
		return slab_take_random(t, s);
	for (uint32_t w = s->cursor; w < SLAB_WORDS; w++) {
		uint64_t u = s->used[w];
		if (~u) {
			unsigned b = (unsigned)__builtin_ctzll(~u);
			uint64_t g = s->given[w];
			bits_store(&s->used[w], u | (1ull << b));
			bits_store(&s->given[w], g | (1ull << b));
			t->fresh_slot = s->fresh & ~(unsigned)(g >> b) & 1;
			s->nused++;
			s->cursor = w;
			return slot_addr(s, w * 64 + b);
		}
	}
	s->cursor = SLAB_WORDS;
	return NULL;
}

static inline void canary_check_x(struct touch *x, const struct slab *s, void *p)
{
	if (x->skipped)
		return;
	uint64_t c;
	touch_read(x, (char *)p + classes[s->cls].size - canary_bytes, &c, sizeof c);
	if (unlikely(c != s->canary))
		canary_fatal(p, s->cls);
}

static inline void canary_check(const struct slab *s, void *p)
{
	struct touch x = { .indirect = false };
	canary_check_x(&x, s, p);
}

/* Slot i of a slab of the thread's own heap is free again (its bit, its
 * count, the cursor); the slab's list is the caller's. */
static inline void slot_release_bits(struct tstate *t, struct slab *s, uint32_t i)
{
	uint32_t w = i / 64;
	bits_store(&s->used[w], s->used[w] & ~(1ull << (i % 64)));
	s->nused--;
	if (w < s->cursor)
		s->cursor = w;
	t->st.frees[s->cls]++;
}

static inline void slot_release_local(struct tstate *t, struct theap *h, struct slab *s, uint32_t i)
{
	slot_release_bits(t, s, i);
	if (unlikely(s->list != SL_CUR))
		slot_release_listed(t, h, s);
}

static inline void slot_release(struct tstate *t, struct slab *s, uint32_t i)
{
	/* abandon_slab and adopt store s->heap atomically (pages_lock) */
	if (__atomic_load_n(&s->heap, __ATOMIC_RELAXED) == t->heap)
		slot_release_local(t, t->heap, s, i);
	else
		slot_release_remote(t, s, i);
}

#endif
