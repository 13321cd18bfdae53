/* meta.c - the out-of-line metadata region (invariant I5).
 *
 * One reservation, separate from the heap, holds the segment table, the slab
 * table and a pool for thread states and compartments.  Each part is
 * surrounded by inaccessible guard pages, so an overflow from one part (or a
 * wild pointer walking from the heap) faults instead of rewriting another.
 * Nothing here is ever inside a user allocation's pages.
 */
#include "alloc.h"
#include "owner.h"

#include <string.h>

/* The thread's state (made by api/init.c's tstate_slow on first use, in
 * this region's pool). */
__thread struct tstate *tl_state __attribute__((tls_model("initial-exec")));

#define GUARD PAGE_SIZE
#define MAX_SLABS ((size_t)1 << 22)
/* a slab takes a page at least: a small heap needs fewer (less metadata
 * to reserve under an address-space limit) */
static size_t max_slabs;
/* The pool (thread states of about 130 KiB, compartments, maps sized by
 * the heap): a 64th of the heap, 1 GiB for the default 64 GiB, at least
 * 4 MiB (some 30 thread states: each thread's stack takes more address
 * space than that in a program small enough to need such a heap). */
#define POOL_MIN ((size_t)4 << 20)
#define POOL_MAX ((size_t)1 << 30)
static size_t pool_size(void)
{
	size_t n = (heap_nsegs << SEG_SHIFT) / 64;
	return n < POOL_MIN ? POOL_MIN : n > POOL_MAX ? POOL_MAX : n;
}


static char *pool_base, *pool_cur, *pool_end;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
/* free lists by size in 64-byte units, for sizes up to 64 KiB + 64 */
#define POOL_BINS 1040
static void *pool_free[POOL_BINS];
/* Larger blocks (thread states, about 130 KiB) freed for reuse: a list of
 * exact sizes, searched first-fit on the same size.  Few sizes are ever
 * this large, so the list stays short. */
struct big_free {
	struct big_free *next;
	size_t size;
	uintptr_t zlo, zhi; /* [zlo, zhi) reads zero: purged, or never written */
	bool resident;      /* kept resident on purpose: counted in pool_big_resident */
};

/* Freed big blocks kept resident rather than purged: the next thread takes
 * one and clears what was written of it (meta_free_zero says what still
 * reads zero), where a purge at every thread exit is a madvise and a TLB
 * shootdown on every CPU the process runs on, and the next thread faults
 * the pages in again.
 * META_KEEP_RESIDENT (alloc.h) thread states: about 1 MiB held at most. */
static unsigned pool_big_resident; /* pool_lock */

/* The whole pages of a big block [p, p + size) past its free header: purged
 * when it is freed past META_KEEP_RESIDENT, so a thread state's gather (most
 * of its 130 KiB) is not kept resident, nor cleared again, by the next
 * thread that takes it. */
static void big_pages(const void *p, size_t size, uintptr_t *lo, uintptr_t *hi)
{
	*lo = align_up((uintptr_t)p + sizeof(struct big_free), PAGE_SIZE);
	*hi = ((uintptr_t)p + size) & ~(uintptr_t)(PAGE_SIZE - 1);
	if (*hi < *lo)
		*hi = *lo;
}
static struct big_free *pool_big;

/* The slab table's ids handed out so far and its free list, under a lock
 * of their own held for a few instructions.  Under pages_lock, with the
 * new header cleared (and a new page of the table faulted in) inside it,
 * this was where threads starting at once slept and woke each other
 * (larson, 4 threads: the commonest futex call), each wake-up an
 * interrupt to the sleeper's CPU.  Taken inside pages_lock where a caller
 * holds that, never the other way; adaptive like pages_lock (pages.c). */
static pthread_mutex_t slab_meta_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static size_t slab_next;     /* slab_meta_lock */
static struct slab *slab_freelist; /* slab_meta_lock */

static char *meta_parts[3];
static size_t meta_sizes[3];

static size_t page_round(size_t n) { return align_up(n, PAGE_SIZE); }

int meta_init(void)
{
	size_t seg_bytes = page_round(heap_nsegs * sizeof(struct segment));
	size_t heap_pages = heap_nsegs * SEG_PAGES;
	max_slabs = heap_pages < MAX_SLABS ? heap_pages : MAX_SLABS;
	size_t slab_bytes = page_round(max_slabs * sizeof(struct slab));
	size_t pool = pool_size();
	size_t total = GUARD + seg_bytes + GUARD + slab_bytes + GUARD + pool + GUARD;
	void *base;
	int e = os_reserve(total, PAGE_SIZE, &base);
	if (e)
		return e;
	char *p = (char *)base + GUARD;
	char *slabs = p + seg_bytes + GUARD, *pool_p = slabs + slab_bytes + GUARD;
	if ((e = os_protect(p, seg_bytes, OS_RW)) || (e = os_protect(slabs, slab_bytes, OS_RW)) ||
	    (e = os_protect(pool_p, pool, OS_RW))) {
		os_unmap(base, total); /* the caller may try a smaller heap */
		return e;
	}
	/* Never huge pages, whatever the system's setting (THP "always", as
	 * Debian's kernels): these tables are read and written sparsely, and a
	 * read of an untouched 2 MiB of them maps the huge zero page, which
	 * the first write there splits, a TLB flush on every CPU the process
	 * runs on (10-25 splits a run in the QEMU guest, Debian's 6.1).  A
	 * kernel without THP refuses the advice (EINVAL): nothing to avoid. */
	os_hugepage(base, total, false);
	seg_table = (struct segment *)p;
	slab_table = (struct slab *)slabs;
	pool_base = pool_cur = pool_p;
	pool_end = pool_p + pool;
	meta_parts[0] = p;
	meta_sizes[0] = seg_bytes;
	meta_parts[1] = slabs;
	meta_sizes[1] = slab_bytes;
	meta_parts[2] = pool_p;
	meta_sizes[2] = pool;
	return 0;
}

/* pkeys: tag the metadata with key (sealed: open only inside xpfo). */
int meta_tag(int key)
{
	for (int i = 0; i < 3; i++) {
		/* the pages written so far change key: flushed */
		int e = os_protect_key(meta_parts[i], meta_sizes[i], OS_RW, key, OS_TAKES_AWAY);
		if (e)
			return e;
	}
	return 0;
}

/* The whole region, guards included (the sandbox's executor guards it). */
void meta_region(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)meta_parts[0] - GUARD;
	*hi = (uintptr_t)meta_parts[2] + meta_sizes[2] + GUARD;
}

bool meta_owns(const void *p)
{
	for (int i = 0; i < 3; i++)
		if ((const char *)p >= meta_parts[i] && (const char *)p < meta_parts[i] + meta_sizes[i])
			return true;
	return false;
}

bool meta_pool_owns(const void *p)
{
	return (const char *)p >= pool_base && (const char *)p < pool_end;
}

/* A freed block of exactly size bytes, or NULL (pool_lock held). */
static void *big_take(size_t size)
{
	for (struct big_free **pp = &pool_big; *pp; pp = &(*pp)->next)
		if ((*pp)->size == size) {
			struct big_free *b = *pp;
			*pp = b->next;
			return b;
		}
	return NULL;
}

void *meta_alloc(size_t size)
{
	size = align_up(size, 64);
	size_t bin = size / 64;
	void *r = NULL;
	bool fresh = false, big = false;
	uintptr_t zlo = 0, zhi = 0;
	pthread_mutex_lock(&pool_lock);
	if (bin < POOL_BINS && pool_free[bin]) {
		r = pool_free[bin];
		pool_free[bin] = *(void **)r;
	} else if (bin >= POOL_BINS && (r = big_take(size))) {
		struct big_free *b = r;
		big = true;
		zlo = b->zlo;
		zhi = b->zhi;
		pool_big_resident -= b->resident;
	} else if ((size_t)(pool_end - pool_cur) >= size) {
		r = pool_cur;
		pool_cur += size;
		fresh = true;
	}
	pthread_mutex_unlock(&pool_lock);
	if (r) {
		/* the pool's memory past pool_cur was never written (the
		 * region's pages read as zero until then): clearing it would
		 * make all of it resident, and a thread state is 130 KiB, most
		 * of it a gather a thread fills only as far as it queues */
		if (big) { /* all but what reads zero already */
			memset(r, 0, zlo - (uintptr_t)r);
			memset((void *)zhi, 0, (uintptr_t)r + size - zhi);
		} else if (!fresh) {
			memset(r, 0, size);
		}
		stat_add(metadata_bytes, size);
	}
	return r;
}

void meta_free(void *p, size_t size)
{
	meta_free_zero(p, size, NULL, NULL);
}

/* [zlo, zhi) of a big block kept resident reads zero: clipped to the block
 * past its free header, or empty. */
static void big_zero(struct big_free *b, const void *zlo, const void *zhi)
{
	uintptr_t lo = (uintptr_t)b + sizeof *b, hi = (uintptr_t)b + b->size;
	uintptr_t a = (uintptr_t)zlo < lo ? lo : (uintptr_t)zlo;
	uintptr_t z = (uintptr_t)zhi > hi ? hi : (uintptr_t)zhi;
	b->zlo = b->zhi = lo;
	if (zlo && z > a) {
		b->zlo = a;
		b->zhi = z;
	}
}

void meta_free_zero(void *p, size_t size, const void *zlo, const void *zhi)
{
	size = align_up(size, 64);
	size_t bin = size / 64;
	stat_sub(metadata_bytes, size);
	bool clean = false, keep = false;
	uintptr_t lo = 0, hi = 0;
	if (bin >= POOL_BINS) {
		pthread_mutex_lock(&pool_lock);
		keep = pool_big_resident < META_KEEP_RESIDENT;
		pool_big_resident += keep;
		pthread_mutex_unlock(&pool_lock);
	}
	if (bin >= POOL_BINS && !keep) {
		big_pages(p, size, &lo, &hi);
		/* a locked thread's filter refuses madvise on the metadata
		 * (and reports it): its block is cleared when taken again */
		clean = hi > lo && !os_thread_locked() && !os_purge((void *)lo, hi - lo);
	}
	pthread_mutex_lock(&pool_lock);
	if (bin >= POOL_BINS) {
		struct big_free *b = p;
		b->size = size;
		b->resident = keep;
		big_zero(b, clean ? (void *)lo : keep ? zlo : NULL, clean ? (void *)hi : zhi);
		b->next = pool_big;
		pool_big = b;
	} else {
		*(void **)p = pool_free[bin];
		pool_free[bin] = p;
	}
	pthread_mutex_unlock(&pool_lock);
}

struct slab *slab_meta_new(void)
{
	pthread_mutex_lock(&slab_meta_lock);
	struct slab *s = slab_freelist;
	size_t id = max_slabs;
	if (s)
		slab_freelist = s->next;
	else if (slab_next < max_slabs)
		id = slab_next++;
	pthread_mutex_unlock(&slab_meta_lock);
	/* the header is the caller's alone from here: cleared (and a new one's
	 * page of the table faulted in) outside the lock */
	if (s) {
		id = s->id;
	} else {
		if (id == max_slabs)
			return NULL;
		s = &slab_table[id];
		stat_add(metadata_bytes, sizeof *s);
	}
	memset(s, 0, sizeof *s);
	s->id = (uint32_t)id;
	return s;
}

void slab_meta_free(struct slab *s)
{
	s->heap = NULL;
	pthread_mutex_lock(&slab_meta_lock);
	s->next = slab_freelist;
	slab_freelist = s;
	pthread_mutex_unlock(&slab_meta_lock);
}

void meta_lock_all(void);
void meta_unlock_all(void);
void meta_lock_all(void)
{
	pthread_mutex_lock(&pool_lock);
	pthread_mutex_lock(&slab_meta_lock);
}
void meta_unlock_all(void)
{
	pthread_mutex_unlock(&slab_meta_lock);
	pthread_mutex_unlock(&pool_lock);
}
