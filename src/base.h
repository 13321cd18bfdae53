/* base.h - the bottom layer's header (src/): what every file may use:
 * compiler helpers, asserts, the heap's geometry, the sealed globals, the
 * options, errors, counters, the OS boundary and randomness.  Nothing here
 * knows slabs, compartments or threads (those are alloc/alloc.h's). */
#ifndef XPFO_BASE_H
#define XPFO_BASE_H

#include "config.h"
#include "xpfo.h"
#include "fatal.h"
#include "options.h"
#include "os.h"
#include "stats.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define XPFO_EXPORT __attribute__((visibility("default")))

static const bool debug_asserts = XPFO_DEBUG >= 1;
static const bool debug_walks = XPFO_DEBUG >= 2;

#define xpfo_assert(c)                                                          \
	do {                                                                    \
		if (debug_asserts && !(c))                                      \
			xpfo_fatal("assertion failed: %s (%s:%d)", #c, __FILE__,  \
				   (long)__LINE__);                             \
	} while (0)

/* ---- geometry ---------------------------------------------------------- */
#define PAGE_SHIFT 12
#define PAGE_SIZE ((size_t)1 << PAGE_SHIFT)
#define SEG_SHIFT 22                          /* 4 MiB segments */
#define SEG_SIZE ((size_t)1 << SEG_SHIFT)
#define SEG_PAGES (SEG_SIZE / PAGE_SIZE)      /* 1024 */
#define SEG_WORDS (SEG_PAGES / 64)
#define SMALL_MAX 16384                       /* larger: page runs */
/* Allocations of RUN_MIN bytes or more are page runs too, so xpfo_transfer
 * takes every one of them in place; the slab classes
 * above it only hold smaller requests grown by the canary. */
#define RUN_MIN 4096
#define LARGE_MAX (SEG_SIZE / 2)              /* larger: whole segments */
#define NCLASSES 41
/* The most slots a slab has: the 16-byte class's one page.  Each slab
 * descriptor holds three bitmaps of this many bits (used, quarantined,
 * remote), so a larger bound costs every slab: at 512, never reached,
 * a descriptor takes 272 bytes instead of 192 (python's ~26,600 slabs at
 * its peak: 2.4 MiB more metadata). */
#define SLAB_MAX_SLOTS 256
#define SLAB_WORDS (SLAB_MAX_SLOTS / 64)
#define MAX_COMPARTMENTS 4096
/* A heap of fewer segments (1 GiB; an address-space limit made it so:
 * api/init.c) cannot give each size class segments of its own: its
 * classes share segments (alloc/pages.c seg_serves). */
#define SMALL_HEAP_SEGS 256

_Static_assert(NCLASSES <= XPFO_STATS_CLASSES, "stats arrays too small");
_Static_assert(SEG_PAGES % 64 == 0, "segment bitmaps are whole words");

static inline uintptr_t align_up(uintptr_t x, uintptr_t a) { return (x + a - 1) & ~(a - 1); }

struct segment;

/* ---- size classes (filled by alloc/sizeclass.c) ----------------------- */
struct size_class {
	uint32_t size;
	uint16_t npages; /* pages per slab */
	uint16_t nslots;
	uint32_t recip;  /* ceil(2^32 / size): slot index by multiplication */
};
/* ---- sealed globals ----------------------------------------------------
 * Everything set once at start-up and only read afterwards: the options,
 * the class table, where the heap and the metadata are.  One page, made
 * read-only when start-up ends (seal=1), so a write primitive cannot
 * retarget the allocator (hardened_malloc seals its configuration the same
 * way). */
struct sealed_globals {
	struct options options;
	struct size_class classes[NCLASSES];
	uint8_t class_lut_small[65]; /* (size + 15) >> 4, size <= 1024 */
	uint8_t class_lut_mid[SMALL_MAX / 64 + 1]; /* (size + 63) >> 6, size <= 16384 */
	uintptr_t heap_base, heap_end;
	size_t heap_nsegs;
	struct segment *seg_table;
	struct slab *slab_table;
	size_t canary_bytes;         /* 8 with canaries, else 0 */
	int pkeys_on;                /* the pkeys backend is in use */
	int key_alloc;               /* pkeys: the allocator's key (free pages, metadata) */
	int key_root;                /* pkeys: reserved for root's pages (a lock moves them to it), or -1 */
	int seal_meta;               /* pkeys: metadata carries key_alloc, open only inside xpfo */
	const char *backend_note;    /* why this backend (e.g. why not pkeys) */
};
union sealed_page {
	struct sealed_globals g;
	char pad[4096];
};
_Static_assert(sizeof(struct sealed_globals) <= 4096, "sealed globals fit one page");
extern union sealed_page xpfo_sealed;
#define classes (xpfo_sealed.g.classes)
#define class_lut_small (xpfo_sealed.g.class_lut_small)
#define class_lut_mid (xpfo_sealed.g.class_lut_mid)
#define heap_base (xpfo_sealed.g.heap_base)
#define heap_end (xpfo_sealed.g.heap_end)
#define heap_nsegs (xpfo_sealed.g.heap_nsegs)
#define seg_table (xpfo_sealed.g.seg_table)
#define slab_table (xpfo_sealed.g.slab_table)
#define canary_bytes (xpfo_sealed.g.canary_bytes)
#define pkeys_on (xpfo_sealed.g.pkeys_on)
#define key_alloc (xpfo_sealed.g.key_alloc)
#define key_root (xpfo_sealed.g.key_root)
#define seal_meta (xpfo_sealed.g.seal_meta)

/* A thread's ChaCha20 stream (src/random.c). */
struct rng {
	uint32_t state[16];
	uint8_t buf[256];     /* four blocks (rng_refill) */
	unsigned used;
};
void rng_init(struct rng *r);
void rng_refill(struct rng *r);
uint64_t rng_u64(struct rng *r);
static inline unsigned rng_byte(struct rng *r)
{
	if (unlikely(r->used >= sizeof r->buf))
		rng_refill(r);
	return r->buf[r->used++];
}

/* src/gadgets.c: WRPKRU/XRSTOR sites in executable mappings (the sandbox's
 * lock refuses a process that has one outside xpfo's gate) */
size_t gadget_scan(const unsigned char *p, size_t n, size_t *offs, size_t max);
int gadget_check_mappings(void); /* 0, or EPERM after a report */

#endif
