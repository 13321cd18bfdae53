/* owner.h - page ownership: the segment table and its page entries.
 *
 * Every heap page has one owner: a compartment, or the allocator while the
 * page is free.  Who it is lives in the page's entry and aux words in its
 * segment's descriptor, and alloc/owner.c is the only code that reads or
 * writes them: one
 * validating lookup (owner_lookup) for every entry point (free, realloc,
 * usable size, xpfo_owner, xpfo_transfer, the fault reporter), one setter
 * family (owner_set_*), one walker (owner_walk) and one describer
 * (owner_describe).  The free fast path reads an entry through
 * owner_slab_of(), the one inline decoder. */
#ifndef XPFO_OWNER_H
#define XPFO_OWNER_H

#include "base.h"

/* ---- page map entries (one uint32 per page, out of line) --------------- */
enum page_type {
	PG_FREE = 0,    /* the allocator's: revoked (or never used) */
	PG_SLAB = 1,    /* value: slab id */
	PG_LARGE = 2,   /* head of a live run; value: pages */
	PG_TAIL = 3,    /* value: distance back to the head page */
	PG_PENDING = 4, /* freed, queued for revocation in a gather */
	PG_QUAR = 5,    /* revocation failed: never reused */
	PG_GUARD = 6,   /* an inaccessible guard page after a slab or run */
};
#define PG_TYPE(e) ((e) >> 28)
#define PG_VAL(e) ((e) & 0x0fffffffu)
#define PG_MAKE(t, v) (((uint32_t)(t) << 28) | (uint32_t)(v))
/* A retired slab's pages, queued (PG_PENDING) and then free (PG_FREE), keep
 * its class and each page's index in it, so that freeing one of its slots
 * again still reads as a double free.  Value bits 0-10: the queued run's
 * pages (its first page), 11-15: the page's index in the slab, 16-21: the
 * class + 1 (0: not a slab's). */
#define PG_RUN_PAGES(v) ((v) & 0x7ffu)
#define PG_SLAB_INFO(cls, idx) ((((uint32_t)(cls) + 1) << 16) | ((uint32_t)(idx) << 11))
#define PG_INFO_MASK 0x3ff800u
#define PG_INFO_CLASS(v) ((int)(((v) >> 16) & 0x3f) - 1)
#define PG_INFO_INDEX(v) (((v) >> 11) & 0x1f)

enum seg_kind { SEG_UNUSED = 0, SEG_PAGES_K = 1, SEG_HUGE = 2, SEG_HUGE_TAIL = 3 };

/* A page's entry and aux word, side by side: a segment whose runs and
 * slabs are in its first pages (first fit puts them there) writes only
 * the start of its entries, and a descriptor that its segment's 100 pages
 * use keeps about one page resident; as two arrays of words, with the
 * whole entry array cleared at each carve, it kept 2.4 (every class has
 * segments of its own, and random_bases spreads them over up to 256). */
struct page_entry {
	uint32_t page;
	uint32_t aux;
};

/* One per 4 MiB of the reservation; lives in the metadata region.
 *
 * Invariant of a carved segment (kind SEG_PAGES_K, not releasing), checked
 * by owner_check() in debug builds, pages_lock held:
 *     free_pages == popcount(free_map) == #{p : PG_TYPE(ent[p].page) == PG_FREE}
 *     clean_map  is a subset of free_map (a clean page is a free one)
 *     PG_FREE page: inaccessible; aux = flush serial of its revocation
 *     (pages at or past ents_hwm: no words written since the carve)
 *     any other page: aux = owning compartment's id (a run transferred to
 *     another compartment keeps its segment, so aux, not `owner`, is the
 *     page's owner)
 * so a page reaches a new owner only through the free map, which a page
 * joins only after its revocation was applied (I2).
 *
 * One shortcut keeps it: revoke_cancel (gather.c) taking back a run of
 * root's (mprotect backend) leaves its entries pending until the caller
 * writes the slab's, or the head of a page run taken from a run queued
 * whole (its tails point at it already; one taken from any other queued
 * run gets its placeholders there, for owner_set_large_head).  On the
 * mprotect backend root's pages are walked only by root_access, in
 * comp_enter/comp_leave of a STRICT compartment, by the process's only
 * thread (comp_enter counts the threads; one started while root is closed
 * stops at tstate_slow) right after it flushed its gather (FR_SWITCH keeps
 * nothing): so by this thread, never between the cancel and the caller's
 * write.  uffd's pages_walk_live takes pending and live pages alike.  The
 * pages are not free and their aux is still root's, so the invariant
 * holds. */
/* A huge block revoked (PROT_NONE) and kept, frames and all, for its
 * owner's next huge block (pages.c pages_keep_huge): still on the
 * owner's list, neither live nor queued. */
#define HUGE_KEPT 3
struct segment {
	uint16_t owner;      /* compartment id; 0 when unused */
	uint8_t kind;        /* enum seg_kind */
	uint8_t releasing;   /* huge: 1 queued or being released, 2 quarantined, HUGE_KEPT */
	uint8_t tag;         /* class + 1 of its slabs, TAG_LARGE + 1, or 0: never carved */
	uint8_t unkeyed;     /* carved, not yet given its owner's key whole (pages_key_segment) */
	uint16_t rsv;        /* reserved for this compartment (xpfo_lock_thread), or 0 */
	uint32_t nsegs;      /* SEG_HUGE: segments in the span; TAIL: distance to head */
	uint32_t free_pages; /* SEG_PAGES_K: pages in PG_FREE */
	uint32_t huge_pages; /* SEG_HUGE: pages in the allocation, from the segment's start */
	uint32_t huge_off;   /* SEG_HUGE: of those, the unused ones before the block (run.c) */
	struct segment *next, *prev; /* owner's segment list */
	uint32_t gen;        /* changes whenever the segment changes hands */
	uint32_t freed_at;   /* unused or huge: flush serial of the last release */
	uint64_t free_map[SEG_WORDS];  /* bit set: page is PG_FREE */
	uint64_t clean_map[SEG_WORDS]; /* bit set: page is known zero, not resident */
	/* bit set: a free page revoked with guard markers (release=guard)
	 * whose protection is still root's, open (a subset of clean_map;
	 * pages.c, grant.c guard_granted) */
	uint64_t open_map[SEG_WORDS];
	/* owner.c only: the pages whose words were written since the carve
	 * are below this one (every page is taken before it is written:
	 * owner_set_taken, pages_lock held) */
	uint32_t ents_hwm;
	struct page_entry ent[SEG_PAGES]; /* owner.c only: see the invariant */
};

static inline struct segment *seg_of(uintptr_t p)
{
	return &seg_table[(p - heap_base) >> SEG_SHIFT];
}
static inline bool in_heap(uintptr_t p) { return p - heap_base < heap_end - heap_base; }
static inline size_t seg_index(const struct segment *s) { return (size_t)(s - seg_table); }
static inline uintptr_t seg_addr(const struct segment *s) { return heap_base + (seg_index(s) << SEG_SHIFT); }
static inline size_t page_index(uintptr_t p) { return (p >> PAGE_SHIFT) & (SEG_PAGES - 1); }

/* The free fast path's decoder: the slab id of the page at p in carved
 * segment s, or -1 when the page is not a live slab's. */
static inline long owner_slab_of(struct segment *s, uintptr_t p)
{
	uint32_t e = __atomic_load_n(&s->ent[page_index(p)].page, __ATOMIC_ACQUIRE);
	return PG_TYPE(e) == PG_SLAB ? (long)PG_VAL(e) : -1;
}
/* Owner id of a non-free page of a carved segment. */
static inline uint16_t owner_of_page(struct segment *s, uintptr_t p)
{
	return (uint16_t)__atomic_load_n(&s->ent[page_index(p)].aux, __ATOMIC_RELAXED);
}

/* ---- the lookup ---------------------------------------------------------- */
enum blk_status { BLK_OK, BLK_FREED, BLK_INTERIOR, BLK_FOREIGN, BLK_NOT_BLOCK };
enum blk_kind { BK_SMALL, BK_LARGE, BK_HUGE };

struct blk {
	enum blk_kind kind;
	uintptr_t base;      /* block start (interior: the block's start) */
	size_t usable;       /* bytes the program may use */
	size_t span;         /* bytes the block takes: slot size, or pages */
	uint16_t owner;
	uint8_t guarded;     /* page run followed by its guard page */
	struct slab *s;
	struct segment *seg;
	uint32_t slot;
};
/* What the address a is: a live block's start (BLK_OK), a freed one, an
 * interior pointer, not in the heap, or nothing; b says which block. */
enum blk_status owner_lookup(uintptr_t a, struct blk *b);

/* ---- the setters (pages_lock held, or pages the caller alone holds) ------ */
/* A live page run of npages for owner (its head says how long it is). */
void owner_set_large(uintptr_t addr, size_t npages, uint16_t owner);
/* The same for a run whose pages already point back at addr with owner's
 * aux (taken or taken back: owner_set_taken, owner_set_reclaimed, or the
 * tails of a run queued whole): only its head is written. */
void owner_set_large_head(uintptr_t addr, size_t npages, uint16_t owner);
void owner_set_slab(uintptr_t addr, size_t npages, uint32_t slab_id, uint16_t owner);
void owner_set_guard(uintptr_t addr, uint16_t owner);
/* Queued for revocation; a retired slab's pages keep its class (cls >= 0). */
void owner_set_pending(uintptr_t addr, size_t npages, int cls, uint16_t owner);
/* A live run (and its guard page) queued whole: only its head says so, its
 * tails keep pointing back at it (readers take a tail's type from its head;
 * the guard page stays one).  Taken back whole, such a run needs only its
 * head written again (owner_set_large_head). */
void owner_set_pending_whole(uintptr_t addr, size_t npages, uint16_t owner);
/* A pending run without class whose head moved forward: only its new head. */
void owner_set_pending_head(uintptr_t addr, size_t npages, uint16_t owner);
void owner_set_quarantined(uintptr_t addr, size_t npages, uint16_t owner);
/* Placeholders of pages just taken (a run being set up), owner from now. */
void owner_set_taken(uintptr_t addr, size_t npages, uint16_t owner);
/* Placeholders again for a queued run taken back (owner unchanged), where a
 * compartment walk could come before its setup (revoke_cancel). */
void owner_set_reclaimed(uintptr_t addr, size_t npages, uint16_t owner);
/* Back to the allocator, revoked at flush `serial` (a retired slab's class
 * stays readable for double-free reports). */
void owner_set_free(uintptr_t addr, size_t npages, uint32_t serial);
/* A live run (and its guard page) given to compartment `to`. */
size_t owner_set_owner(uintptr_t addr, size_t npages, uint16_t to);
/* A segment carved afresh: every page free. */
void owner_reset(struct segment *s);

/* ---- the walker ---------------------------------------------------------- */
enum owner_walk_what {
	OW_LIVE = 1,    /* slab, run and tail pages */
	OW_PENDING = 2, /* queued for revocation */
	OW_GUARD = 4,   /* guard pages */
	OW_FREE = 8,    /* free pages of a segment the compartment carved */
	OW_CLEAN = 16,  /* those of them known clean (not resident), reported
			 * as pending: they may change hands once pages_lock
			 * drops, so a walk changes them under it */
};
/* Calls fn(addr, npages, pending, arg) for each span of pages of carved
 * segment s that compartment id owns and `what` selects; consecutive pages
 * make one span (pending: some of its pages are queued).  id OWNER_ANY:
 * every owner's (not with OW_FREE). */
#define OWNER_ANY 0xffffu
typedef void (*owner_span_fn)(uintptr_t addr, size_t npages, bool pending, void *arg);
void owner_walk(struct segment *s, uint16_t id, unsigned what, owner_span_fn fn, void *arg);
/* pages_lock held: is every page of carved segment s that is not free a
 * live or guard page of id (none queued, quarantined or another's)? */
bool owner_only(struct segment *s, uint16_t id);
/* Pages of s not free: those of id (and quarantined ones) in *mine, other
 * owners' in *foreign; calls slab_head(addr, slab id, arg) for each page
 * of id's that starts a slab. */
void owner_census(struct segment *s, uint16_t id, size_t *mine, size_t *foreign,
		  void (*slab_head)(uintptr_t, uint32_t, void *), void *arg);

/* ---- the describer --------------------------------------------------------- */
enum owner_state {
	OS_OWNED,          /* live: owner */
	OS_OWNED_PENDING,  /* freed, revocation queued: owner */
	OS_FREE,           /* the allocator's: revoked `age` flushes ago */
	OS_QUARANTINED,    /* the allocator's, never reused */
	OS_GUARD,          /* a guard page */
	OS_FREE_HUGE,      /* a huge allocation being released */
};
struct owner_desc {
	enum owner_state state;
	uint32_t owner;   /* compartment id (OS_OWNED*) */
	uint32_t age;     /* flushes since revocation (OS_FREE) */
};
/* Whose is the page at a (in the heap); async-signal-safe, takes no lock. */
void owner_describe(uintptr_t a, uint32_t now_serial, struct owner_desc *d);

/* ---- the sandbox executor's snapshot --------------------------------------- */
enum owner_snap {
	OSNAP_FREE_CLEAN,  /* the allocator's, no frames: may be granted */
	OSNAP_FREE_STALE,  /* the allocator's, old frames: a purge first */
	OSNAP_MINE,        /* compartment id's, live */
	OSNAP_FOREIGN,     /* anyone else's (quarantined pages too) */
};
/* What heap page i (from heap_base) is to compartment id, read from the
 * tables as they are (alloc/executor.c reads its copy taken at the lock). */
enum owner_snap owner_snapshot(size_t i, uint16_t id);

/* Debug: the invariant above for every carved segment (pages_lock held). */
void owner_check(void);

#endif
