/* alloc.h - the allocator's layers (alloc/): slabs, page runs,
 * compartments, thread states, the gather; the cross-file prototypes
 * grouped by the file that defines them.  Page entries and segments are
 * owner.h's. */
#ifndef XPFO_ALLOC_H
#define XPFO_ALLOC_H

#include "base.h"

#include <pthread.h>

void sizeclass_init(void);

struct tstate;
struct xpfo_compartment;
#include "gate.h"
/* ---- alloc/pkeys.c: the pkeys backend ------------------------------------
 * Keys: 0 for everything not in the heap and for root's pages; key_alloc
 * for free pages (and the metadata when sealed); one per keyed compartment.
 * key_root, reserved at start, is open in every thread's rights but a
 * locked one's; the first xpfo_lock_thread moves root's pages (and those of
 * keyless compartments open for the process) from key 0 to it
 * (sandbox_gate.g.plain_key says so; sandbox.c).  A thread's rights
 * register opens key 0, key_root and its compartment's key. */
extern __thread uint64_t tl_pkru __attribute__((tls_model("initial-exec")));
extern __thread uint64_t tl_pkru_open __attribute__((tls_model("initial-exec")));
extern __thread unsigned tl_seal_depth __attribute__((tls_model("initial-exec")));
void pkeys_write(uint64_t v);
/* Entry and exit of every xpfo entry point on the pkeys backend: open the
 * allocator's key (when the metadata is sealed), and at the outermost exit
 * write the thread's own rights, so that a signal handler, which starts
 * with the kernel's default rights, can use what malloc gave it (the
 * interrupted rights come back with sigreturn). */
static inline unsigned seal_enter(void)
{
	if (unlikely(pkeys_on)) {
		tl_seal_depth++;
		pkeys_write(tl_pkru_open);
	}
	return 0;
}
static inline void seal_exit(unsigned *unused)
{
	(void)unused;
	if (unlikely(pkeys_on) && tl_seal_depth && --tl_seal_depth == 0)
		pkeys_write(tl_pkru);
}
#define XPFO_ENTRY unsigned xpfo_seal_ __attribute__((cleanup(seal_exit), unused)) = seal_enter()
/* key for pages being revoked (free, guard): key_alloc, or -1 (mprotect) */
static inline int key_revoked(void) { return pkeys_on ? key_alloc : -1; }
/* key for pages open to every thread that is not locked (root, open
 * keyless compartments): 0, or key_root once a lock moved them (read from
 * the gate's page, read-only to a locked thread) */
static inline int key_plain(void)
{
	return pkeys_on ? __atomic_load_n(&sandbox_gate.g.plain_key, __ATOMIC_ACQUIRE) : -1;
}
void pkeys_init(void);                       /* picks the backend */
void pkeys_sealed(void);                     /* the metadata was just sealed */
void pkeys_thread_update(struct tstate *t);  /* rights for t's compartment */
int pkeys_comp_key(struct xpfo_compartment *c); /* c->key or -1 */
/* Gives compartment c's pages key (> 0) or parks them (key < 0); c->lock
 * held.  compartment.c's walk, passed down to pkeys_enter. */
typedef void comp_retag_fn(struct xpfo_compartment *c, int key);
/* enter/leave bookkeeping in pkeys mode; false: c has no key (mprotect
 * way).  A key taken re-tags c's pages, and a victim's, with retag. */
bool pkeys_enter(struct xpfo_compartment *c, comp_retag_fn *retag);
void pkeys_leave(struct xpfo_compartment *c);
void pkeys_comp_destroyed(struct xpfo_compartment *c);
void pkeys_comp_created(struct xpfo_compartment *c);
int comp_plain_rekey(int key);                          /* compartment.c: sandbox.c's */
const char *pkeys_key_owner(int key);
void pkeys_fork_lock(bool lock);             /* fork: take or drop pkeys' lock */

static inline unsigned size_to_class(size_t size)
{
	if (size <= 1024)
		return class_lut_small[(size + 15) >> 4];
	return class_lut_mid[(size + 63) >> 6];
}

/* ---- slabs ------------------------------------------------------------- */
struct theap;
struct slab {
	uintptr_t base;
	uint16_t cls, nslots;
	uint16_t owner;       /* compartment id */
	uint8_t list;         /* which list of its heap: enum slab_list */
	uint8_t abandoned;    /* on the global abandoned list */
	struct theap *heap;   /* allocating heap (atomic); NULL when abandoned */
	struct slab *next, *prev;
	struct slab *notify_next;  /* heap's remote-free notification stack */
	uint32_t nused;       /* used bits set (heap's view) */
	uint32_t cursor;      /* word to search first */
	uint32_t id;
	uint8_t in_notify;    /* atomic */
	uint32_t rpending;    /* atomic: remote frees between their bit and their notice */
	uint8_t guard;        /* a guard page follows the slab */
	uint8_t kept;         /* empty, kept on its heap's partial list (slab.c) */
	uint8_t spare;        /* empty, abandoned, counted in spare_pages (slab.c) */
	/* made over pages whose frames were missing (slab.c slab_new): a slot
	 * never handed out since (its given bit clear) was never written */
	uint8_t fresh;
	uint64_t canary;      /* ends every slot (opt.canary); low byte zero */
	uint64_t used[SLAB_WORDS];
	/* bit set: the slot was handed out at least once since the slab was
	 * made (a free of a slot never handed out is an invalid free, not a
	 * double free); set with used, never cleared */
	uint64_t given[SLAB_WORDS];
	uint64_t quar[SLAB_WORDS];   /* atomic: freed, held in a quarantine */
	uint64_t remote[SLAB_WORDS]; /* atomic: freed by other threads */
	/* a line of its own: packed at 176 bytes, the next slab's header
	 * shared a line with these remote bits, and larson (frees from the
	 * other thread) took 0.91 s against 0.84 at 272 bytes and 0.86 at
	 * 192 (9 interleaved runs each) */
} __attribute__((aligned(64)));
enum slab_list { SL_NONE, SL_CUR, SL_PARTIAL, SL_FULL };

struct slab_list_head { struct slab *head, *tail; };

/* ---- compartments ------------------------------------------------------ */
#define COMP_MAGIC 0x7866636fu
#define COMP_XSEGS 64
struct xpfo_compartment {
	uint32_t magic;
	uint16_t id;
	uint8_t live;
	uint8_t open;                     /* its pages are accessible (lock) */
	uint8_t poisoned;                 /* a close failed: unusable (lock; read unlocked) */
	uint8_t reserved;                 /* locked: takes segments only from its reservation (pages_lock) */
	uint8_t rsv_warned;               /* its reservation ran out once (pages_lock) */
	unsigned flags;                   /* XPFO_COMPARTMENT_* */
	char name[48];
	pthread_mutex_t lock;             /* open/close against grants */
	int inside;                       /* threads inside (lock) */
	uint32_t epoch;                   /* changes at destroy */
	uint32_t access_gen;              /* changes at every open and close */
	struct segment *segs;             /* segments it carves runs from (pages_lock) */
	struct slab *abandoned[NCLASSES]; /* slabs whose heap exited (pages_lock) */
	uint32_t spare_pages;             /* of empty abandoned slabs (pages_lock) */
	uint32_t huge_kept;               /* pages of its revoked huge blocks kept (pages_lock) */
	uint32_t xsegs[COMP_XSEGS];       /* other segments holding runs transferred to it */
	unsigned nxsegs;                  /* > COMP_XSEGS: walk every segment */
	struct xpfo_compartment *next_free;
	int key;                          /* pkeys: its key, or -1 (parked: mprotect way) */
	uint64_t last_enter;              /* pkeys: for choosing whom to evict */
	char *pub_name;                   /* the name, outside the sealed metadata */
};

/* ---- per-thread state -------------------------------------------------- */
struct theap {                        /* a thread's allocation context in one compartment */
	struct xpfo_compartment *comp;
	struct tstate *t;
	struct slab *cur[NCLASSES];
	struct slab_list_head partial[NCLASSES];
	struct slab_list_head full[NCLASSES];
	struct slab *notify;              /* atomic stack of slabs with remote frees */
	uint32_t epoch;                   /* comp->epoch when made; stale after destroy */
	uint32_t nslabs;                  /* slabs made, for the guard interval */
	uint32_t kept_pages;              /* pages of the empty slabs it keeps */
};

struct range {
	uintptr_t addr;
	uint32_t npages;                  /* 0: a removed entry */
	uint16_t owner;
	uint8_t kind;                     /* enum range_kind */
	uint8_t purged;                   /* set by the flush (PURGED_MARKED: by guard markers) */
	uint16_t next, prev;              /* bucket list (by size) */
	uint32_t gen;                     /* segment gen when queued */
	uint32_t cgen;                    /* owner's access_gen when queued */
	uint16_t flags;                   /* RF_* */
};
enum range_kind { RK_RUN, RK_HUGE };
#define PURGED_MARKED 2
#define RF_GUARDED 1  /* its last page is a guard (inaccessible) */
#define RF_SPARE 2    /* granted, never used (a grant chunk's rest) */
#define RF_CLASS(cls) ((unsigned)((cls) + 1) << 2) /* a retired slab of class cls */
#define RF_CLASS_OF(f) ((int)(((f) >> 2) & 0x3f) - 1)
/* a live run freed whole: only its head was written (owner_set_pending_whole) */
#define RF_WHOLE 0x100
/* a spare whose pages were all known zero when granted (fresh or purged):
 * nothing has written them since, the rest of it stays so when its head
 * is taken */
#define RF_CLEAN 0x200
/* a huge block the flush protects and keeps for its owner (pages_keep_huge) */
#define RF_KEEP 0x400
/* a huge block realloc moved out of: not kept */
#define RF_NOKEEP 0x800

#define GATHER_MAX 4096
#define GATHER_BUCKETS 33             /* runs of 1..31 pages by size; 32: the rest */
#define GATHER_NIL 0xffff
#define GATHER_RECENT 16            /* revoked spans remembered for regrants_soon */

/* The gather: a thread's queue of pending revocations (alloc/gather.c).
 * Entries are also indexed by size, so the thread can take a run back. */
struct gather {
	unsigned n;                       /* slots used, removed ones included */
	unsigned live;                    /* runs queued */
	/* set while the owning thread changes the gather or its run
	 * quarantine (gather_busy): a fork child finds another thread's
	 * gather as that thread left it, maybe half changed */
	unsigned busy;
	uint64_t pages;                   /* pages queued */
	/* frees (and their pages) queued since the last flush, those taken
	 * back included: what the batch bounds */
	unsigned frees;
	uint64_t free_pages;
	uint32_t destroy_serial;          /* destroy_serial when the first run came */
	uint16_t head[GATHER_BUCKETS];
	/* grants: pages the thread's next grant takes at once
	 * (grant_span_size), and the spans its last flushes revoked, to
	 * count those granted back soon (regrants_soon) */
	uint32_t span;
	uint32_t recent_next;
	uint64_t free_serial;             /* frees queued, ever */
	/* the last revoke_cancel took back the whole of a retired slab of
	 * class taken_cls at `taken` (0: it did not), see revoke_taken_class */
	uintptr_t taken;
	int taken_cls;
	bool taken_clean;                 /* ... and it was an RF_CLEAN spare's */
	struct revoked_span {
		uintptr_t lo, hi;
		uint64_t at;              /* free_serial when revoked */
		uint16_t owner;
	} recent[GATHER_RECENT];
	unsigned hwm;                     /* slots ever used: r[hwm..) never written */
	struct range r[GATHER_MAX];
};

/* Freed small slots held back (opt.quarantine) and freed runs held back
 * after their revocation (opt.quarantine_large). */
struct quarantine {
	unsigned n;
	void **slot;
	unsigned nruns;
	struct range *runs;
};

struct tstats {
	uint64_t allocs[NCLASSES + 1]; /* [NCLASSES]: page runs */
	uint64_t frees[NCLASSES + 1];
	/* the counters of a large malloc and free and of every revocation
	 * queued, here and not in g_stats: an atomic add there costs each of
	 * them a locked instruction, and a cache line shared by every thread;
	 * stats_fill adds them to g_stats' own */
	uint64_t revoke_queued, pages_queued, pages_cancelled;
	uint64_t large_live_bytes; /* may wrap below zero per thread; summed */
};

struct tstate {
	struct theap *heap;   /* current compartment's heap */
	struct theap **heaps; /* by compartment id, made on first use */
	unsigned depth;       /* xpfo_enter nesting */
	unsigned hard;        /* slot hardening to do at malloc/free (canary, fills, checks) */
	/* the slot slab_take returned last is a fresh slab's, never handed
	 * out before: nothing to check in it (heap.h small_alloc) */
	unsigned fresh_slot;
	unsigned borrowed;    /* heap is another compartment's (xpfo_malloc_in) */
	unsigned keyed;       /* pkeys: the current compartment was entered with its key */
	unsigned root_denied; /* pkeys: locked (sandbox.c): key_root closed in its rights */
	struct theap root_heap;
	struct tstate *next, *prev; /* all threads (threads_lock) */
	long tid;
	int dead;
	struct tstats st;
	struct rng rng;
	struct quarantine q;
	struct gather g;
	/* pages.c's last take of free pages by this thread, for the grant
	 * that follows (grant.c guard_granted): how many were under guard
	 * markers with root's protection (release=guard); runs_open: a span
	 * of guarded runs whose pages are all so, guards apart */
	struct { uintptr_t addr; uint32_t npages, open, open_head; bool runs_open; } take;
};

/* ---- globals: pages_lock (pages.c), the compartment table (owner.c), the
 * thread's state (meta.c; made by api/init.c's tstate_slow), the flushes
 * against destroys (gather.c) ----------------------------------------------- */
extern pthread_mutex_t pages_lock;
extern struct xpfo_compartment *comp_table[MAX_COMPARTMENTS];
extern struct xpfo_compartment comp_root;
extern int xpfo_ready;
extern uint32_t destroy_serial;          /* compartments destroyed so far */
extern uint32_t fast_flushes_inflight;   /* flushes that did not see a destroy */

extern __thread struct tstate *tl_state __attribute__((tls_model("initial-exec")));
/* ---- alloc/meta.c: out-of-line metadata region --------------------------- */
int meta_init(void);
bool meta_owns(const void *p);       /* anywhere in the metadata region */
void meta_region(uintptr_t *lo, uintptr_t *hi); /* its bounds, guards included */
bool meta_pool_owns(const void *p);  /* in its pool (thread states, compartments) */
int meta_tag(int key);
void *meta_alloc(size_t size);          /* zeroed, never freed back to the OS */
void meta_free(void *p, size_t size);
/* The same, saying that [zlo, zhi) of the block still reads zero (never
 * written since meta_alloc): the next taker clears only the rest. */
void meta_free_zero(void *p, size_t size, const void *zlo, const void *zhi);
/* Freed big blocks (thread states) kept resident for the next taker
 * before meta_free purges them (alloc/meta.c). */
#define META_KEEP_RESIDENT 8
struct slab *slab_meta_new(void);        /* its own lock (meta.c) */
void slab_meta_free(struct slab *s);     /* its own lock, inside pages_lock or not */

/* ---- alloc/pages.c: segments and page runs (pages_lock inside) ---------- */
/* A run of npages pages (aligned to align_pages) for owner, taken from the
 * allocator: its pages are PG_FREE and revoked on return, marked as
 * placeholders (PG_TAIL) until the caller sets the entries.  *clean says
 * whether all pages are known zero.  NULL when the reservation is full. */
uintptr_t pages_alloc(struct xpfo_compartment *c, size_t npages, size_t align_pages, unsigned tag,
		      bool *clean);
/* Up to max pages (a multiple of unit, at least unit) of the first free run
 * of at least unit pages, for a grant span; *got: how many.  guarded: the
 * units are guarded runs (their last page the guard), see take_note. */
uintptr_t pages_alloc_span(struct xpfo_compartment *c, size_t unit, size_t max, unsigned tag,
			   bool guarded, size_t *got, bool *clean);
#define TAG_LARGE NCLASSES /* segments of page runs; slab segments carry their class */
/* Whole segments for one huge allocation. */
uintptr_t huge_alloc(struct xpfo_compartment *c, size_t npages, size_t align, bool *clean);
/* Revoked huge blocks kept for their owner, frames and all (pages.c):
 * may r (its owner has `more` segments decided kept already) be kept;
 * keep it (false: not, release it); take one back for np pages. */
bool pages_huge_keep_room(const struct range *r, size_t more);
bool pages_keep_huge(const struct range *r);
uintptr_t pages_take_kept(struct xpfo_compartment *c, size_t np, size_t align, bool guard);
/* Every kept huge block back to the pool (a locked thread: its
 * reservation's); true if there was one. */
bool pages_drop_kept(void);
/* Give revoked ranges back to the allocator (called by the gather flush). */
void pages_release(const struct range *r, unsigned n);
/* The free pages after the live run at addr (npages), for it to grow in
 * place to at least min_npages and at most max_npages; returns the new
 * count, with the pages taken (not granted) in *r, or 0. */
struct range;
size_t pages_take_after(uintptr_t addr, size_t npages, size_t min_npages, size_t max_npages,
			bool guard, struct range *r);
/* pkeys, release=uffd: carved segment s of c gets key over all of it, once
 * (c->lock held; 0, -1: not done, or an errno). */
struct segment;
int pages_key_segment(struct xpfo_compartment *c, struct segment *s, int key);
/* Count pages [addr, +npages) that were clean and mark them dirty. */
void pages_mark_used(uintptr_t addr, size_t npages);
void pages_purge_all(void);              /* release every retained free page */
/* Fork child whose heap could not be registered again: every free page
 * and unused segment gets PROT_NONE (single-threaded: under pages_lock). */
void pages_protect_free(void);
/* Every live span of the heap, any owner (alloc/uffd.c fills them when it arms). */
void pages_walk_live(void (*fn)(uintptr_t, size_t, bool, void *), void *arg);

/* ---- uffd.c: released pages watched by a userfaultfd ------------------- */
void uffd_init(void);                   /* at start: arm for release=uffd */
void uffd_fork_child(void);             /* the child registers its own copy */
bool uffd_may_arm(void);                /* release=auto or uffd: it may arm (fault handler needed) */
/* The degraded mode starts: release=auto arms now.  0: armed; -1: not
 * wanted (release=mprotect, revoke=off); else the errno it failed with. */
int uffd_degrade_arm(void);
void uffd_lock_prepare(void);           /* before a sandbox lock: arm (release=auto) */
bool uffd_release_on(void);             /* release=uffd in effect for this thread */
bool uffd_degrade_on(void);             /* the degraded mode may release watched */
/* Over the budget with nothing to watch: may a span be released
 * unprotected (only release=mprotect says so; else it stays protected) */
bool uffd_unwatched_ok(void);
/* Map the zero page over the missing pages of a new grant (0 or errno). */
int uffd_fill_grant(struct xpfo_compartment *c, uintptr_t a, size_t len);
bool uffd_filling(void);                /* armed: grants map their missing pages */
/* A SIGBUS at heap address a from a thread in compartment `mine`: 1 when
 * the page was one it may use and it is filled, 0 for a violation. */
int uffd_fault(uintptr_t a, uint16_t mine);
/* Purge s's retained free pages (pages_lock held); handover: s changes
 * hands, and a page whose purge fails is quarantined. */
void seg_purge_retained(struct segment *s, bool handover);
void seg_list_add(struct xpfo_compartment *c, struct segment *s); /* pages_lock held */
void seg_list_del(struct xpfo_compartment *c, struct segment *s); /* pages_lock held */
/* Purge segments idx[0..n) and return them to the unused pool, or to
 * their compartment's reservation (sorts idx). */
void segs_release(size_t *idx, size_t n);
/* xpfo_lock_thread: the segments c holds and n unused ones become c's for
 * good: no other owner takes them, c takes no other (ENOMEM when none is
 * left).  Once per compartment; 0 or ENOMEM (pages_lock inside). */
int pages_reserve(struct xpfo_compartment *c, size_t n);
/* c destroyed: its reserved segments go back to the pool (pages_lock inside). */
void pages_unreserve(struct xpfo_compartment *c);
/* Segment i is reserved for compartment id (the executor's copy). */
bool pages_reserved_for(size_t i, uint16_t id);
/* Add segment i to rel[0..*nrel) (SEGS_QUEUE_MAX entries) for a later
 * segs_release; a full buffer is released first (pages_lock held, dropped
 * meanwhile), so no segment is ever left out. */
#define SEGS_QUEUE_MAX 64
void segs_queue(size_t *rel, size_t *nrel, size_t i);

/* ---- alloc/gather.c: the gather (the queue of pending revocations) ------ */
enum flush_reason { FR_FULL, FR_EXPLICIT, FR_THREAD_EXIT, FR_REUSE, FR_EAGER, FR_SWITCH, FR_OTHER };
/* Queue a freed run for revocation (its page entries become PG_PENDING).
 * Returns true when the gather is full: the caller then flushes it,
 * revoke_flush(t, revoke_full_reason()) (mm/mmu_gather.c's shape). */
bool revoke_add(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner, enum range_kind k,
		unsigned flags);
enum flush_reason revoke_full_reason(void); /* FR_EAGER with revoke=eager, else FR_FULL */
/* Queue granted pages the thread did not need (a grant chunk's rest): they
 * can be taken back like freed runs, and are revoked with the batch. */
bool revoke_add_spare(struct tstate *t, uintptr_t addr, size_t npages, uint16_t owner,
		      bool guarded, bool clean);
void gather_init(struct gather *g);
/* In a fork child: drop (never apply) a gather its thread was changing at
 * the fork. */
void revoke_fork_orphan(struct tstate *t);
/* Thread exit: the thread's queued runs go to their compartments' orphan
 * gathers, for the next threads to take back (revoke_cancel); what cannot
 * go is applied (FR_THREAD_EXIT). */
void revoke_orphan_exit(struct tstate *t);
/* Apply every orphan gather (counted as flushes for why); 0 or an errno.
 * A locked thread (xpfo_lock_thread) leaves them to the others. */
int revoke_orphans_apply(struct tstate *t, enum flush_reason why);
/* c is being destroyed (no longer live): its orphan gather is applied. */
void revoke_orphans_destroy(struct tstate *t, struct xpfo_compartment *c);
/* Fork child: the orphan gathers' locks made anew; one a thread was
 * changing at the fork is dropped, not applied (revoke_fork_orphan). */
void revoke_orphans_fork_child(void);
/* Some orphan gather holds runs (a flush for lack of free pages applies them). */
bool revoke_orphans_waiting(void);
/* Take back a queued run of the same owner (cancel its revocation); flags:
 * RF_GUARDED, and RF_CLASS(cls) to prefer a retired slab of class cls. */
uintptr_t revoke_cancel(struct tstate *t, size_t npages, size_t align_pages, uint16_t owner,
			enum range_kind k, unsigned flags);
/* Take back a queued huge block of owner's in nsegs segments at a
 * multiple of align_pages, for a new one of np pages: its address, its
 * length in *old_np (still its pages open: the caller opens or closes the
 * difference), or 0. */
uintptr_t revoke_cancel_huge(struct tstate *t, size_t nsegs, size_t align_pages, uint16_t owner,
			     size_t np, size_t *old_np);
/* The size class of the retired slab whose whole run the thread's last
 * revoke_cancel took back, if that returned a; else -1. */
int revoke_taken_class(const struct tstate *t, uintptr_t a);
/* The pages the thread's last revoke_cancel returned (a) are known zero:
 * taken from an RF_CLEAN spare. */
bool revoke_taken_clean(const struct tstate *t, uintptr_t a);
/* ---- alloc/revoke.c: applying the gather ---------------------------------- */
/* Release what the thread's quarantine of freed runs holds. */
void revoke_quarantine_drain(struct tstate *t);
/* Apply every queued revocation; returns 0 or an errno of a failure. */
int revoke_flush(struct tstate *t, enum flush_reason why);
/* Take access away from pages outside a flush (a guard page made, a run's
 * cut tail, a destroyed compartment's run): one counted call; nothing under
 * revoke=off.  Returns 0 or errno. */
int revoke_range(uintptr_t addr, size_t len);
/* Flushes so far: a caller that saw it change may retry what failed. */
static inline uint64_t flush_serial(void)
{
	return __atomic_load_n(&g_stats.flushes, __ATOMIC_RELAXED);
}

/* ---- alloc/grant.c: access for pages taken from the allocator ------------ */
/* How many pages a run of npages should take from the allocator at once
 * (a multiple of npages; npages when no span pays), and grow the span;
 * guarded: runs of npages with their guard, granted by grant_guarded_span. */
size_t grant_span_size(struct tstate *t, size_t npages, bool guarded);
/* Guarded runs of c granted a span at a time, and that grant. */
bool grant_guarded_spans(const struct xpfo_compartment *c);
int grant_guarded_span(uintptr_t a, size_t unit, size_t k, bool open, bool clean, bool *kept);
/* Make a run taken from the allocator accessible as its compartment is now
 * (open: read-write; closed: it stays inaccessible). Returns 0 or errno:
 * then the pages are closed as they were, for the caller to give back,
 * unless *close_err says why they could not be (their guard markers were
 * removed and the grant failed): then they must never be handed out
 * (policy.h).  close_err NULL: the caller's pages close anyway (a huge
 * block's segments, mapped afresh when released). */
int grant_range(struct xpfo_compartment *c, uintptr_t addr, size_t len, int *close_err);
/* The same, c->lock held; `takes` says what the grant takes from present
 * pages (os.h): nothing for free pages (PROT_NONE, released or never
 * touched), which grant_range's are. */
int grant_range_locked(struct xpfo_compartment *c, uintptr_t addr, size_t len,
		       enum os_takes takes);
/* ---- alloc/heap.c, slab.c, harden.c: malloc and free -------------------- */
void *heap_malloc(struct tstate *t, size_t size);
void *heap_calloc(struct tstate *t, size_t n, size_t size);
void *heap_aligned(struct tstate *t, size_t align, size_t size);
void *heap_realloc(struct tstate *t, void *p, size_t size);
void heap_free(struct tstate *t, void *p);
/* free_sized: fatal unless p is a live block of that size (and alignment) */
void heap_check_sized(const void *p, size_t size, size_t align);
size_t heap_usable(const void *p);
/* slab.c */
void slab_abandon(struct tstate *t, struct theap *h); /* thread exit / fork child */
void slab_init_theap(struct theap *h, struct tstate *t, struct xpfo_compartment *c);
/* harden.c */
void harden_quarantine_drain(struct tstate *t);
/* Zero n bytes at p, a block of compartment owner, even if it is closed. */
void harden_zero_in(struct tstate *t, uint16_t owner, void *p, size_t n);
/* n bytes from src, a block of src_owner, to dst, one of dst_owner, either
 * of them closed to the thread (xpfo_move's copy). */
void harden_copy(struct tstate *t, void *dst, uint16_t dst_owner, const void *src, uint16_t src_owner,
		 size_t n);
/* What t->hard is when not borrowing a heap. */
unsigned harden_flags(void);
/* heap.c */
void heap_walk_check(void);              /* debug: invariant walk */
/* Where page runs start (heap.c's run_min).  Until the first compartment
 * is created nothing can be transferred, so it is the slab classes' reach
 * (SMALL_MAX + 1 - canary_bytes: a 4104-byte block takes a 5 KiB slot, not
 * two pages and a grant of its own); from then on RUN_MIN, so that
 * xpfo_transfer takes every block of a page or more in place. */
void heap_runs_from_page(void);   /* the first compartment was created */

/* ---- alloc/compartment.c ------------------------------------------------ */
struct xpfo_compartment *comp_check(const struct xpfo_compartment *c); /* NULL + errno */
struct theap *theap_for(struct tstate *t, struct xpfo_compartment *c);
void comp_thread_exit(struct tstate *t);
void comp_thread_start(struct tstate *t);          /* compartments=thread */
void comp_destroy_pages(struct xpfo_compartment *c);
/* fork: take comp_lock, pkeys' lock and every compartment's lock, in the
 * lock order; drop them (in the child, flushes in flight are forgotten). */
void comp_fork_lock(void);
void comp_fork_unlock(bool child);
void comp_fork_orphan(struct tstate *t);   /* child: a dead thread is in no compartment */
void comp_fork_recount(struct tstate *self); /* child: compartments from self's truth */
/* The STRICT compartment root is closed for, or NULL (root is open). */
const char *comp_root_closed_by(void);
/* The work of the public functions of the same names (xpfo_compartment_create,
 * ...; api/compartment.c): same results, errno set on failure. */
struct xpfo_compartment *comp_create(const char *name, unsigned flags);
int comp_destroy(struct xpfo_compartment *c);
struct xpfo_compartment *comp_enter(struct tstate *t, struct xpfo_compartment *c);
void comp_leave(struct tstate *t, struct xpfo_compartment *previous);
void *comp_malloc_in(struct tstate *t, struct xpfo_compartment *c, size_t size);
void *comp_aligned_alloc_in(struct tstate *t, struct xpfo_compartment *c, size_t align,
			    size_t size);
void *comp_calloc_in(struct tstate *t, struct xpfo_compartment *c, size_t n, size_t size);
int comp_transfer(void *p, struct xpfo_compartment *to);
/* alloc/move.c: the work of xpfo_move (api/compartment.c): where p now
 * lives, or NULL with errno and p untouched. */
void *comp_move(struct tstate *t, void *p, struct xpfo_compartment *to);
/* The thread reaches c's pages itself now (its own, or root's while root
 * is open to it): xpfo_recv reads straight into a block of c. */
bool comp_reaches(const struct tstate *t, const struct xpfo_compartment *c);


/* ---- alloc/sandbox.c: xpfo_lock_thread ---------------------------------- */
/* The work of xpfo_lock_thread (api/compartment.c): 0 or an errno. */
int sandbox_lock(struct tstate *t, struct xpfo_compartment *c, unsigned flags);
void sandbox_stats_fill(struct xpfo_stats *s);
void sandbox_stats_print(int fd);

/* ---- alloc/alias.c: the work of xpfo_share_fd (api/compartment.c) ------ */
int alias_share(struct xpfo_compartment *c, void *p, unsigned flags);

#endif
