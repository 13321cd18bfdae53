/* pages.c - segments and page runs: who owns which page (invariant I1).
 *
 * The heap is one reservation cut into 4 MiB segments.  A segment is unused
 * (the allocator's, purged, inaccessible), carved into page runs for one
 * compartment, or part of one huge allocation.  Inside a carved segment each
 * page has an out-of-line entry (internal.h, enum page_type) and a bit in
 * free_map.  A page is PG_FREE only after its revocation was applied, so any
 * page this file hands out is already inaccessible to its previous owner
 * (invariant I2): the gather (alloc/revoke.c) is the only caller of
 * pages_release().  A segment goes back to the unused pool only when all its
 * pages are free, and is purged first, so a new owner gets fresh frames.
 *
 * Everything here runs under pages_lock; syscalls (purges) run outside it.
 */
#include "alloc.h"
#include "owner.h"
#include "backing.h"
#include "policy.h"

#include <errno.h>
#include <string.h>

/* Adaptive: a thread that finds it taken spins a little before it sleeps
 * (most of its holds are short), as a sleeper's wake-up is an
 * interrupt to its CPU: in a guest at 4 CPUs, larson's futex wake-ups fell
 * from 23-32 a run pair to 17-22 (3 boots each, bench/vm/ipi.sh --trace). */
pthread_mutex_t pages_lock = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP;
static uint64_t *seg_used_map; /* bit set: segment in use (or being released) */
/* bit set: the segment was taken once, so its descriptor (8.5 KiB of the
 * segment table) is resident for good; seg_seen counts them */
static uint64_t *seg_seen_map;
static size_t seg_seen;
/* bit set: reserved for a locked compartment (segment.rsv) and unused;
 * such a segment keeps its bit in seg_used_map, so no one else finds it */
static uint64_t *seg_idle_map;

static inline bool bit_get(const uint64_t *m, size_t i) { return m[i / 64] >> (i % 64) & 1; }
static inline void bit_set(uint64_t *m, size_t i) { m[i / 64] |= 1ull << (i % 64); }
static inline void bit_clr(uint64_t *m, size_t i) { m[i / 64] &= ~(1ull << (i % 64)); }

/* Next index >= i whose bit equals want, or n. */
static size_t bit_next(const uint64_t *m, size_t i, size_t n, bool want)
{
	while (i < n) {
		uint64_t w = m[i / 64];
		if (!want)
			w = ~w;
		w &= ~0ull << (i % 64);
		if (w) {
			size_t r = (i & ~(size_t)63) + (size_t)__builtin_ctzll(w);
			return r < n ? r : n;
		}
		i = (i & ~(size_t)63) + 64;
	}
	return n;
}

/* First run of len set bits in m[0..n) starting at a multiple of align. */
static size_t bit_find_run(const uint64_t *m, size_t n, size_t len, size_t align)
{
	size_t i = 0;
	while (i + len <= n) {
		if (!bit_get(m, i)) {
			i = align_up(bit_next(m, i, n, true), align);
			continue;
		}
		size_t j = bit_next(m, i, i + len, false);
		if (j == i + len)
			return i;
		i = align_up(j, align);
	}
	return n;
}

/* Count set bits of m in [i, i+len). */
static size_t bit_count(const uint64_t *m, size_t i, size_t len)
{
	size_t c = 0;
	for (size_t k = i; k < i + len;) {
		if (k % 64 == 0 && k + 64 <= i + len) {
			c += (size_t)__builtin_popcountll(m[k / 64]);
			k += 64;
		} else {
			c += bit_get(m, k);
			k++;
		}
	}
	return c;
}

static void bit_fill(uint64_t *m, size_t i, size_t len, bool v)
{
	for (size_t k = i; k < i + len;) {
		if (k % 64 == 0 && k + 64 <= i + len) {
			m[k / 64] = v ? ~0ull : 0;
			k += 64;
		} else {
			if (v)
				bit_set(m, k);
			else
				bit_clr(m, k);
			k++;
		}
	}
}

int pages_init(void);
int pages_init(void)
{
	seg_used_map = meta_alloc(align_up(heap_nsegs, 64) / 8);
	seg_seen_map = meta_alloc(align_up(heap_nsegs, 64) / 8);
	seg_idle_map = meta_alloc(align_up(heap_nsegs, 64) / 8);
	return seg_used_map && seg_seen_map && seg_idle_map ? 0 : ENOMEM;
}


void seg_list_add(struct xpfo_compartment *c, struct segment *s)
{
	s->prev = NULL;
	s->next = c->segs;
	if (c->segs)
		c->segs->prev = s;
	c->segs = s;
}

void seg_list_del(struct xpfo_compartment *c, struct segment *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->segs = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
}

static struct rng seg_rng;
static bool seg_rng_ready;

/* First run of n unused segments aligned to align, from index `from` on,
 * whose sticky tag is `tag` or none (any tag when tag is 0); when `seen`,
 * only segments taken before and tagged `tag` (descriptors already
 * resident). */
static size_t segs_find(size_t from, size_t n, size_t align, unsigned tag, bool seen)
{
	size_t i = from;
	for (;;) {
		i = align_up(bit_next(seg_used_map, i, heap_nsegs, false), align);
		if (seen && i < heap_nsegs)
			i = align_up(bit_next(seg_seen_map, i, heap_nsegs, true), align);
		if (i + n > heap_nsegs)
			return heap_nsegs;
		size_t j = bit_next(seg_used_map, i, i + n, true);
		if (seen) {
			size_t k = bit_next(seg_seen_map, i, i + n, false);
			j = k < j ? k : j;
		}
		if (j < i + n) {
			i = j + (j == i); /* j == i: an unseen one */
			continue;
		}
		/* a descriptor never written has no tag, and is not read: a
		 * read would map the zero page there, and segs_take's write
		 * replace it, a TLB flush on every CPU the process runs on */
		if (seen ? seg_table[i].tag == tag
			 : !tag || !bit_get(seg_seen_map, i) || !seg_table[i].tag ||
				   seg_table[i].tag == tag)
			return i;
		i++;
	}
}

/* Segments random_bases may spread over before it reuses them: each one
 * taken leaves its descriptor resident, so without a bound a long-running
 * process touches the whole segment table (136 MB for 64 GiB) in time. */
#define SEG_SPREAD 256

/* Where to take n segments from `from` on: while few segments were ever
 * taken, anywhere (fresh ones too); past the spread, one taken before for
 * the same tag first, so the set of touched descriptors stays bounded. */
static size_t segs_pick(size_t from, size_t n, size_t align, unsigned tag)
{
	size_t i = heap_nsegs;
	uint64_t in_use = __atomic_load_n(&g_stats.segments, __ATOMIC_RELAXED);
	if (seg_seen >= SEG_SPREAD + 2 * in_use) {
		i = segs_find(from, n, align, tag, true);
		if (i == heap_nsegs && from)
			i = segs_find(0, n, align, tag, true);
	}
	if (i == heap_nsegs)
		i = segs_find(from, n, align, tag, false);
	if (i == heap_nsegs && from)
		i = segs_find(0, n, align, tag, false);
	return i;
}

/* Where n contiguous unused segments aligned to align segments are, for
 * pages of tag (size class + 1, or TAG_LARGE + 1), or heap_nsegs.  A
 * segment keeps its tag when it is released, so the address space of a
 * size class is not reused for another class while a segment without a
 * conflicting tag remains (class isolation); random_bases starts the
 * search at a random segment (segs_pick bounds how many different segments
 * it ever uses). */
static size_t segs_place(size_t n, size_t align, unsigned tag)
{
	size_t from = 0;
	if (opt.random_bases && heap_nsegs > n) {
		if (!seg_rng_ready) {
			rng_init(&seg_rng);
			seg_rng_ready = true;
		}
		from = (size_t)(rng_u64(&seg_rng) % (heap_nsegs - n));
	}
	size_t i = segs_pick(from, n, align, tag);
	if (i == heap_nsegs)
		i = segs_find(0, n, align, 0, false); /* no untagged room left: share */
	return i;
}

/* n contiguous idle segments reserved for compartment id, aligned to
 * align segments, whose first one's tag is `tag` or none (any tag when tag
 * is 0: class isolation as in segs_find), or heap_nsegs. */
static size_t rsv_find(size_t n, size_t align, uint16_t id, unsigned tag)
{
	size_t i = 0;
	for (;;) {
		i = align_up(bit_next(seg_idle_map, i, heap_nsegs, true), align);
		if (i + n > heap_nsegs)
			return heap_nsegs;
		size_t j = bit_next(seg_idle_map, i, i + n, false);
		for (size_t k = i; j == i + n && k < i + n; k++)
			if (seg_table[k].rsv != id || (k == i && tag && seg_table[k].tag &&
						       seg_table[k].tag != tag))
				j = k;
		if (j == i + n)
			return i;
		i = j + 1;
	}
}

/* Segment k's descriptor is written: resident for good. */
static void seg_seen_mark(size_t k)
{
	if (!bit_get(seg_seen_map, k)) {
		bit_set(seg_seen_map, k);
		seg_seen++;
		stat_add(metadata_bytes, sizeof seg_table[k]);
	}
}

/* Segments [i, i+n) leave the pool, or c's reservation, or (back) in. */
static void segs_mark(struct xpfo_compartment *c, size_t i, size_t n, bool taken)
{
	bit_fill(c->reserved ? seg_idle_map : seg_used_map, i, n, c->reserved ? !taken : taken);
}

/* A locked compartment's reservation is used up: its allocation fails
 * (ENOMEM), said once. */
static void rsv_exhausted(struct xpfo_compartment *c)
{
	if (c->rsv_warned)
		return;
	c->rsv_warned = 1;
	xpfo_warn("sandbox: compartment \"%s\" has used every segment reserved at its lock "
		  "(lock_segments=%u): its allocations fail (ENOMEM)",
		  c->pub_name, (unsigned long)opt.lock_segments);
}

/* Take n contiguous unused segments aligned to align segments for c's
 * pages of tag: from the pool (segs_place), or for a locked compartment
 * only from its reservation (pages_reserve). */
static struct segment *segs_take(struct xpfo_compartment *c, size_t n, size_t align, unsigned tag)
{
	size_t i = heap_nsegs;
	if (c->reserved) {
		i = rsv_find(n, align, c->id, tag);
		if (i == heap_nsegs)
			i = rsv_find(n, align, c->id, 0); /* no untagged room left: share */
	} else {
		i = segs_place(n, align, tag);
	}
	if (i == heap_nsegs) {
		if (c->reserved)
			rsv_exhausted(c);
		return NULL;
	}
	segs_mark(c, i, n, true);
	stat_add(segments, n);
	if (opt.revoke == REVOKE_OFF) {
		/* no revocation: the segment stays accessible for good */
		if (os_protect((void *)(heap_base + (i << SEG_SHIFT)), n * SEG_SIZE, OS_RW)) {
			segs_mark(c, i, n, false);
			stat_sub(segments, n);
			return NULL;
		}
		stat_inc(grant_syscalls);
	}
	for (size_t k = i; k < i + n; k++) {
		seg_table[k].tag = (uint8_t)tag;
		seg_seen_mark(k);
	}
	return &seg_table[i];
}

static void seg_init_pages(struct xpfo_compartment *c, struct segment *s, unsigned tag)
{
	s->tag = (uint8_t)tag;
	s->gen++;
	s->owner = c->id;
	s->kind = SEG_PAGES_K;
	s->releasing = 0;
	s->nsegs = 1;
	s->free_pages = SEG_PAGES;
	memset(s->free_map, 0xff, sizeof s->free_map);
	memset(s->clean_map, 0xff, sizeof s->clean_map);
	memset(s->open_map, 0, sizeof s->open_map);
	__atomic_store_n(&s->unkeyed, 1, __ATOMIC_RELAXED);
	owner_reset(s);
	seg_list_add(c, s);
}

/* pkeys, release=uffd (grant.c): carved segment s, which c carved and has
 * not yet given its key whole, gets it in one call (read-write), if
 * nothing in it but c's live and guard pages and clean free pages: those
 * are missing, watched (a touch by c's threads is reported, and no other
 * thread has the key), so the segment is one VMA, not one per boundary
 * between its granted runs and its guard and free pages (nothing closes a
 * keyed compartment to merge them again, as the mprotect backend's close
 * does).  Under pages_lock: a free page taken meanwhile by a run of
 * another owner growing in place (pages_take_after) would get c's key
 * after its own.  Tried once per carve.  0, -1 (not done) or an errno. */
int pages_key_segment(struct xpfo_compartment *c, struct segment *s, int key)
{
	int e = -1;
	pthread_mutex_lock(&pages_lock);
	if (s->unkeyed && s->kind == SEG_PAGES_K && !s->releasing && s->owner == c->id &&
	    !memcmp(s->free_map, s->clean_map, sizeof s->free_map) && owner_only(s, c->id))
		/* c's live pages keep their key and access; the rest are
		 * missing: no present page loses access or changes key */
		e = os_protect_key((void *)seg_addr(s), SEG_SIZE, OS_RW, key, OS_TAKES_NOTHING);
	__atomic_store_n(&s->unkeyed, 0, __ATOMIC_RELAXED); /* grant.c reads it unlocked */
	pthread_mutex_unlock(&pages_lock);
	return e;
}

/* The open guard-marked pages among [i, i+n) of s leave the open map; the
 * thread notes how many for its grant (grant.c guard_granted). */
static void take_note(struct segment *s, size_t i, size_t n)
{
	/* all but the last page apart: a guarded run's guard is its last */
	size_t head = n > 1 ? bit_count(s->open_map, i, n - 1) : 0;
	size_t open = head + (size_t)(s->open_map[(i + n - 1) / 64] >> ((i + n - 1) % 64) & 1);
	if (open)
		bit_fill(s->open_map, i, n, false);
	struct tstate *t = tl_state;
	if (t) {
		t->take.addr = seg_addr(s) + (i << PAGE_SHIFT);
		t->take.npages = (uint32_t)n;
		t->take.open = (uint32_t)open;
		t->take.open_head = (uint32_t)head;
		t->take.runs_open = false;
	}
}

/* Take pages [i, i+n) of s: they leave the free map, get placeholder entries
 * and are counted as mapped and (maybe) resident.  Returns whether all were
 * clean. */
static bool seg_take_pages(struct segment *s, size_t i, size_t n, uint16_t owner)
{
	bit_fill(s->free_map, i, n, false);
	s->free_pages -= (uint32_t)n;
	size_t clean = bit_count(s->clean_map, i, n);
	bit_fill(s->clean_map, i, n, false);
	take_note(s, i, n);
	/* the owner from the start: an open/close walk that runs before the
	 * run is set up must already count these pages as the owner's */
	owner_set_taken(seg_addr(s) + (i << PAGE_SHIFT), n, owner);
	stat_gauge_add(&g_stats.resident_pages, &g_stats.peak_resident_pages, (int64_t)clean);
	stat_gauge_add(&g_stats.mapped_pages, &g_stats.peak_mapped_pages, (int64_t)n);
	return clean == n;
}

/* Can carved segment s take pages of tag?  Its own tag's only (class
 * isolation), but any in a small heap, whose few segments could not hold
 * a class each. */
static bool seg_serves(const struct segment *s, unsigned tag)
{
	return s->kind == SEG_PAGES_K && (s->tag == tag || heap_nsegs < SMALL_HEAP_SEGS);
}

uintptr_t pages_alloc(struct xpfo_compartment *c, size_t npages, size_t align_pages, unsigned tag,
		      bool *clean)
{
	tag++; /* stored as class + 1: 0 means never carved */
	uintptr_t r = 0;
	pthread_mutex_lock(&pages_lock);
	struct segment *s;
	size_t i = SEG_PAGES;
	for (s = c->segs; s; s = s->next) {
		if (!seg_serves(s, tag) || s->free_pages < npages)
			continue;
		i = bit_find_run(s->free_map, SEG_PAGES, npages, align_pages);
		if (i < SEG_PAGES)
			break;
	}
	if (!s) {
		s = segs_take(c, 1, 1, tag);
		if (s) {
			seg_init_pages(c, s, tag);
			i = 0;
		}
	}
	if (s) {
		*clean = seg_take_pages(s, i, npages, c->id);
		r = seg_addr(s) + (i << PAGE_SHIFT);
	}
	pthread_mutex_unlock(&pages_lock);
	return r;
}

/* A span for a thread's grant: the first free run of at least
 * `unit` pages in c's segments of `tag`, taken whole up to `max` pages (a
 * multiple of unit), so one protection change opens what the thread's next
 * runs or slabs need; a new segment only when none has `unit` free pages. */
uintptr_t pages_alloc_span(struct xpfo_compartment *c, size_t unit, size_t max, unsigned tag,
			   bool guarded, size_t *got, bool *clean)
{
	uintptr_t r = 0;
	pthread_mutex_lock(&pages_lock);
	struct segment *s;
	size_t i = SEG_PAGES, n = unit;
	for (s = c->segs; s; s = s->next) {
		if (!seg_serves(s, tag + 1) || s->free_pages < unit)
			continue;
		i = bit_find_run(s->free_map, SEG_PAGES, unit, 1);
		if (i < SEG_PAGES)
			break;
	}
	if (!s && (s = segs_take(c, 1, 1, tag + 1)) != NULL) {
		seg_init_pages(c, s, tag + 1);
		i = 0;
	}
	if (s) {
		size_t end = bit_next(s->free_map, i + unit, i + max < SEG_PAGES ? i + max : SEG_PAGES,
				      false);
		n = (end - i) / unit * unit;
		/* guarded runs whose pages (their guards apart) are all open
		 * under markers are granted by one call (grant.c
		 * grant_guarded_span) */
		bool open = guarded && n > unit;
		for (size_t k = i; open && k < i + n; k += unit)
			open = bit_count(s->open_map, k, unit - 1) == unit - 1;
		*clean = seg_take_pages(s, i, n, c->id);
		if (open && tl_state)
			tl_state->take.runs_open = true;
		r = seg_addr(s) + (i << PAGE_SHIFT);
	}
	pthread_mutex_unlock(&pages_lock);
	*got = n;
	return r;
}

uintptr_t huge_alloc(struct xpfo_compartment *c, size_t npages, size_t align, bool *clean)
{
	size_t n = align_up(npages << PAGE_SHIFT, SEG_SIZE) >> SEG_SHIFT;
	size_t a = align > SEG_SIZE ? align >> SEG_SHIFT : 1;
	pthread_mutex_lock(&pages_lock);
	struct segment *s = segs_take(c, n, a, TAG_LARGE + 1);
	if (s) {
		for (size_t k = 0; k < n; k++) {
			s[k].gen++;
			s[k].owner = c->id;
			s[k].kind = k ? SEG_HUGE_TAIL : SEG_HUGE;
			s[k].nsegs = k ? (uint32_t)k : (uint32_t)n;
			s[k].releasing = 0;
		}
		s->huge_pages = (uint32_t)npages;
		seg_list_add(c, s);
		stat_gauge_add(&g_stats.resident_pages, &g_stats.peak_resident_pages, (int64_t)npages);
		stat_gauge_add(&g_stats.mapped_pages, &g_stats.peak_mapped_pages, (int64_t)npages);
	}
	pthread_mutex_unlock(&pages_lock);
	*clean = true;
	return s ? seg_addr(s) : 0;
}

/* A freed huge block's segments need not go back to the pool: revoked
 * (PROT_NONE) and kept with their frames, up to HUGE_KEEP_PAGES pages
 * (16 MiB) per compartment, they give its next huge block of as many segments its
 * pages with one grant, no new mapping and no page fault for the pages
 * the old one had.  Only the same owner's (I2: the owner never changed;
 * a segment that changes hands is mapped afresh, segs_release).  Not with
 * retain=0 (no revoked page stays resident), nor for secret or aliased
 * backing (their release revokes the other views), nor a block realloc
 * moved out of (heap.c).  Released by malloc_trim and the retain sweep
 * (pages_purge_all), by an allocation that finds no unused segment
 * (pages_drop_kept), and with their compartment.  The gauges count a kept block resident, not mapped, and
 * huge_kept_pages apart from the retained pages of carved segments. */
#define HUGE_KEEP_PAGES (4 * SEG_PAGES)

bool pages_huge_keep_room(const struct range *r, size_t more)
{
	struct segment *s = seg_of(r->addr);
	struct xpfo_compartment *c = comp_table[r->owner];
	return opt.retain && c && !secret_comp(c) && s->kind == SEG_HUGE && s->gen == r->gen &&
	       !backing_special(r->addr, (size_t)s->nsegs << SEG_SHIFT) &&
	       __atomic_load_n(&c->huge_kept, __ATOMIC_RELAXED) + s->huge_pages + more <= HUGE_KEEP_PAGES;
}

bool pages_keep_huge(const struct range *r)
{
	bool kept = true;
	pthread_mutex_lock(&pages_lock);
	struct segment *s = seg_of(r->addr);
	struct xpfo_compartment *c = comp_table[r->owner];
	/* a changed gen: gone with its compartment, nothing left to release */
	if (s->gen == r->gen) {
		kept = s->kind == SEG_HUGE && c && s->owner == r->owner &&
		       c->huge_kept + s->huge_pages <= HUGE_KEEP_PAGES;
		if (kept) {
			c->huge_kept += s->huge_pages;
			stat_sub(mapped_pages, s->huge_pages);
			stat_add(huge_kept_pages, s->huge_pages);
			s->freed_at = (uint32_t)flush_serial();
			__atomic_store_n(&s->releasing, HUGE_KEPT, __ATOMIC_RELEASE);
		}
	}
	pthread_mutex_unlock(&pages_lock);
	return kept;
}

uintptr_t pages_take_kept(struct xpfo_compartment *c, size_t np, size_t align, bool guard)
{
	size_t n = align_up((np + guard) << PAGE_SHIFT, SEG_SIZE) >> SEG_SHIFT;
	size_t a = align > SEG_SIZE ? align >> SEG_SHIFT : 1;
	uintptr_t r = 0;
	if (!__atomic_load_n(&c->huge_kept, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&pages_lock);
	for (struct segment *s = c->segs; s; s = s->next) {
		if (s->kind != SEG_HUGE || s->releasing != HUGE_KEPT || s->nsegs != n ||
		    seg_index(s) % a)
			continue;
		c->huge_kept -= s->huge_pages;
		stat_sub(huge_kept_pages, s->huge_pages);
		stat_gauge_add(&g_stats.mapped_pages, &g_stats.peak_mapped_pages, (int64_t)np);
		stat_gauge_add(&g_stats.resident_pages, &g_stats.peak_resident_pages,
			       (int64_t)np - (int64_t)s->huge_pages);
		s->huge_pages = (uint32_t)np;
		/* taken, not live until granted (run.c huge_get) */
		__atomic_store_n(&s->releasing, 1, __ATOMIC_RELEASE);
		r = seg_addr(s);
		break;
	}
	pthread_mutex_unlock(&pages_lock);
	return r;
}

/* Kept huge block s goes back to the pool (pages_lock held). */
static void huge_drop_kept(struct segment *s, size_t *rel, size_t *nrel)
{
	struct xpfo_compartment *c = comp_table[s->owner];
	size_t nsegs = s->nsegs;
	stat_sub(huge_kept_pages, s->huge_pages);
	stat_sub(resident_pages, s->huge_pages);
	if (c) {
		c->huge_kept -= s->huge_pages;
		seg_list_del(c, s);
	}
	for (size_t m = 0; m < nsegs; m++) {
		s[m].releasing = 1;
		s[m].owner = 0;
		segs_queue(rel, nrel, seg_index(s) + m);
	}
}

/* Mark pages [i, i+n) of a carved segment clean (pages_lock held). */
static void seg_mark_clean(struct segment *s, size_t i, size_t n)
{
	size_t was = bit_count(s->clean_map, i, n);
	bit_fill(s->clean_map, i, n, true);
	stat_sub(resident_pages, n - was);
}

/* Purge whole segments being released, then return them to the pool. */
void segs_release(size_t *idx, size_t n)
{
	/* sorted, so that neighbours coalesce into one remap */
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && idx[b - 1] > idx[b]; b--) {
			size_t t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
	for (size_t k = 0; k < n;) {
		size_t j = k + 1;
		while (j < n && idx[j] == idx[j - 1] + 1)
			j++;
		/* A new mapping over the span gives fresh frames and undoes the
		 * protection splits of its VMAs.  A failure leaves old contents
		 * behind: those segments are kept out of the pool. */
		alias_revoke_range(heap_base + (idx[k] << SEG_SHIFT), (j - k) * SEG_SIZE);
		void *at = (void *)(heap_base + (idx[k] << SEG_SHIFT));
		const char *what = "purge (released segments)";
		int e = os_remap(at, (j - k) * SEG_SIZE, opt.revoke == REVOKE_OFF ? OS_RW : OS_NONE);
		if (!e) {
			stat_inc(purges);
			stat_add(pages_purged, (j - k) * SEG_PAGES);
		} else if (opt.revoke != REVOKE_OFF) {
			/* a huge block's release is its revocation (revoke.c
			 * remap_only): kept out of the pool, and out of reach */
			int pe = os_protect(at, (j - k) * SEG_SIZE, OS_NONE);
			if (pe) {
				what = "revoke (released segments)";
				e = pe;
			}
		}
		pthread_mutex_lock(&pages_lock);
		for (size_t m = k; m < j; m++) {
			/* kept out: marked quarantined (2), so that a lookup reads
			 * a freed block, not a live one with no owner */
			seg_table[idx[m]].releasing = e ? 2 : 0;
			seg_table[idx[m]].gen++;
			seg_table[idx[m]].freed_at = (uint32_t)flush_serial();
			if (!e) {
				seg_table[idx[m]].kind = SEG_UNUSED;
				if (seg_table[idx[m]].rsv) /* back to its compartment's reservation */
					bit_set(seg_idle_map, idx[m]);
				else
					bit_clr(seg_used_map, idx[m]);
				stat_sub(segments, 1);
			}
		}
		pthread_mutex_unlock(&pages_lock);
		if (e) /* the entries stay as they were: `releasing` says quarantined */
			policy_failed(what, e,
				      heap_base + (idx[k] << SEG_SHIFT), (j - k) * SEG_PAGES);
		k = j;
	}
}

/* A full queue is released with pages_lock dropped (syscalls after the lock). */
static void segs_drain(size_t *rel, size_t *nrel)
{
	pthread_mutex_unlock(&pages_lock);
	segs_release(rel, *nrel);
	*nrel = 0;
	pthread_mutex_lock(&pages_lock);
}

void segs_queue(size_t *rel, size_t *nrel, size_t i)
{
	if (*nrel == SEGS_QUEUE_MAX)
		segs_drain(rel, nrel);
	rel[(*nrel)++] = i;
}

void pages_release(const struct range *r, unsigned n)
{
	size_t rel[SEGS_QUEUE_MAX];
	size_t nrel = 0;
	uint32_t serial = (uint32_t)flush_serial();
	pthread_mutex_lock(&pages_lock);
	for (unsigned k = 0; k < n; k++) {
		struct segment *s = seg_of(r[k].addr);
		if (s->gen != r[k].gen)
			continue; /* its compartment was destroyed: the segment is gone */
		if (r[k].kind == RK_HUGE) {
			size_t nsegs = s->nsegs;
			stat_sub(resident_pages, r[k].npages);
			stat_sub(mapped_pages, r[k].npages);
			struct xpfo_compartment *c = comp_table[s->owner];
			if (c)
				seg_list_del(c, s);
			for (size_t m = 0; m < nsegs; m++) {
				s[m].releasing = 1;
				s[m].owner = 0;
				segs_queue(rel, &nrel, seg_index(s) + m);
			}
			continue;
		}
		size_t i = (r[k].addr >> PAGE_SHIFT) & (SEG_PAGES - 1);
		owner_set_free(r[k].addr, r[k].npages, serial);
		bit_fill(s->free_map, i, r[k].npages, true);
		if (r[k].purged)
			seg_mark_clean(s, i, r[k].npages);
		/* a guarded run's last page was the guard: its protection
		 * is not known (closed, or open under markers) */
		if (r[k].purged == PURGED_MARKED)
			bit_fill(s->open_map, i, r[k].npages - (r[k].flags & RF_GUARDED ? 1 : 0), true);
		s->free_pages += r[k].npages;
		stat_sub(mapped_pages, r[k].npages);
		if (s->free_pages == SEG_PAGES && !s->releasing) {
			struct xpfo_compartment *c = comp_table[s->owner];
			size_t dirty = SEG_PAGES - bit_count(s->clean_map, 0, SEG_PAGES);
			stat_sub(resident_pages, dirty);
			if (c)
				seg_list_del(c, s);
			s->releasing = 1;
			s->owner = 0;
			segs_queue(rel, &nrel, seg_index(s));
		}
	}
	pthread_mutex_unlock(&pages_lock);
	if (nrel)
		segs_release(rel, nrel);
}

/* Take the free pages after the live run at addr (npages; guarded: its
 * guard page follows) for it to grow over: as many as are free up to
 * max_npages, at least min_npages (realloc asks for some room beyond the
 * size: heap.c, realloc_room; deciding here, once, keeps a failed grant
 * from being tried again at another size).  A guarded run takes the pages
 * after its guard page.  Returns the run's new length, the pages taken in
 * *r (not granted yet: run.c's run_grow_in_place does that, and gives them
 * back with pages_release on failure), or 0.  Free pages that are not
 * clean hold their segment owner's old bytes (a run of any other owner is
 * purged when it is freed, and a segment changes hands only purged): a run
 * of another owner growing over them gets fresh frames here. */
size_t pages_take_after(uintptr_t addr, size_t npages, size_t min_npages, size_t max_npages,
			bool guard, struct range *r)
{
	struct segment *s = seg_of(addr);
	size_t i = ((addr >> PAGE_SHIFT) & (SEG_PAGES - 1)) + guard;
	uintptr_t more = addr + ((npages + guard) << PAGE_SHIFT);
	uint16_t owner = owner_of_page(s, addr);
	if (max_npages > SEG_PAGES - i)
		max_npages = SEG_PAGES - i;
	if (s->kind != SEG_PAGES_K || min_npages > max_npages)
		return 0;
	pthread_mutex_lock(&pages_lock);
	size_t new_npages = bit_next(s->free_map, i + npages, i + max_npages, false) - i;
	bool ok = new_npages >= min_npages;
	size_t extra = new_npages - npages;
	bool fresh = ok && (seg_take_pages(s, i + npages, extra, owner) || owner == s->owner);
	pthread_mutex_unlock(&pages_lock);
	if (!ok)
		return 0;
	*r = (struct range){ more, (uint32_t)extra, owner, RK_RUN, 0, 0, 0, s->gen, 0, 0 };
	if (!fresh) {
		if (backing_purge(more, extra << PAGE_SHIFT)) {
			pages_release(r, 1); /* never opened: back as they were */
			return 0;
		}
		stat_inc(purges);
		stat_add(pages_purged, extra);
		r->purged = 1;
	}
	return new_npages;
}

/* Pages [p, q) of s could not be purged while s changes hands: they hold
 * the old owner's bytes, so they leave the free map for good (pages_lock
 * held). */
static void seg_quarantine_free(struct segment *s, size_t p, size_t q, int err)
{
	bit_fill(s->free_map, p, q - p, false);
	s->free_pages -= (uint32_t)(q - p);
	policy_fail_run("purge (free pages changing owner)", err, seg_addr(s) + (p << PAGE_SHIFT),
			q - p, s->owner);
}

/* A trim that could not purge: the pages stay revoked and stay with the
 * segment's owner (they are not clean, so never handed to another one
 * unpurged); only the memory is not given back.  Said once. */
static void purge_failed(uintptr_t addr, size_t npages, int err)
{
	static bool said;
	if (!__atomic_exchange_n(&said, true, __ATOMIC_RELAXED))
		xpfo_warn("cannot purge %u retained pages at %p (errno %d): they stay resident "
			  "(revoked; reused only by their segment's owner); further failures not "
			  "reported", (unsigned long)npages, (void *)addr, (long)err);
}

/* Purge pages [p, q) of carved segment s on their own, under pages_lock;
 * with `handover`, pages that cannot be purged are quarantined. */
static void seg_purge_range(struct segment *s, size_t p, size_t q, bool handover)
{
	int e = backing_purge(seg_addr(s) + (p << PAGE_SHIFT), (q - p) << PAGE_SHIFT);
	if (!e) {
		stat_inc(purges);
		stat_add(pages_purged, q - p);
		seg_mark_clean(s, p, q - p);
	} else if (handover) {
		seg_quarantine_free(s, p, q, e);
	} else {
		purge_failed(seg_addr(s) + (p << PAGE_SHIFT), q - p, e);
	}
}

/* The retain sweep's ranges on their way to one purge call, each with its
 * segment and first page, marked clean once purged.  pages_lock is held
 * from the first range queued until the call: none of them may be taken
 * meanwhile. */
struct purge_vec {
	unsigned n;
	uintptr_t a[OS_GUARD_VEC];
	size_t len[OS_GUARD_VEC];
	struct segment *s[OS_GUARD_VEC];
	uint32_t p[OS_GUARD_VEC];
};

/* Purge the queued ranges: one call where the kernel takes a vector
 * (backing_purge_vec), one flush round for all of them on Linux 6.16 and
 * on kernel/'s 6.12 series; the ranges it did not reach one by one. */
static void purge_vec_apply(struct purge_vec *v)
{
	size_t done = 0;
	int e = backing_purge_vec(v->a, v->len, v->n, &done);
	if (!e || done)
		stat_inc(purges);
	for (unsigned k = 0; k < v->n; k++) {
		size_t np = v->len[k] >> PAGE_SHIFT;
		if (done >= v->len[k]) {
			done -= v->len[k];
			stat_add(pages_purged, np);
			seg_mark_clean(v->s[k], v->p[k], np);
		} else {
			done = 0;
			seg_purge_range(v->s[k], v->p[k], v->p[k] + np, false);
		}
	}
	v->n = 0;
}

/* Purge the retained (free, not clean) pages of carved segment s, under
 * pages_lock: a page taken by another thread right after an unlock could be
 * zeroed under its new owner.  With `handover` s is about to change hands:
 * a page that cannot be purged is quarantined, never handed over.  With
 * v (the sweep), plain ranges are queued there instead. */
static void seg_purge_some(struct segment *s, bool handover, struct purge_vec *v)
{
	uint64_t want[SEG_WORDS];
	for (size_t w = 0; w < SEG_WORDS; w++)
		want[w] = s->free_map[w] & ~s->clean_map[w];
	size_t p = 0;
	while ((p = bit_next(want, p, SEG_PAGES, true)) < SEG_PAGES) {
		size_t q = bit_next(want, p, SEG_PAGES, false);
		uintptr_t a = seg_addr(s) + (p << PAGE_SHIFT);
		if (!v || backing_special(a, (q - p) << PAGE_SHIFT)) {
			seg_purge_range(s, p, q, handover);
		} else {
			v->a[v->n] = a;
			v->len[v->n] = (q - p) << PAGE_SHIFT;
			v->s[v->n] = s;
			v->p[v->n++] = (uint32_t)p;
			if (v->n == OS_GUARD_VEC)
				purge_vec_apply(v);
		}
		p = q;
	}
}

void seg_purge_retained(struct segment *s, bool handover)
{
	seg_purge_some(s, handover, NULL);
}

/* Release every retained free page of every carved segment, and every
 * kept huge block (malloc_trim); a locked thread only its reservation's
 * (its executor refuses the rest: those pages may be another owner's by
 * now).  The ranges go OS_GUARD_VEC to a call (purge_vec), pages_lock
 * held across segments only while some are queued. */
void pages_purge_all(void)
{
	uint16_t only = tl_sandbox_locked ? tl_state->heap->comp->id : 0;
	struct purge_vec v;
	v.n = 0;
	bool held = false;
	for (size_t i = 0; i < heap_nsegs; i++) {
		if (!__atomic_load_n(&seg_used_map[i / 64], __ATOMIC_RELAXED)) {
			i |= 63;
			continue;
		}
		if (!held)
			pthread_mutex_lock(&pages_lock);
		held = true;
		struct segment *s = &seg_table[i];
		if (bit_get(seg_used_map, i) && s->kind == SEG_PAGES_K && !s->releasing &&
		    (!only || s->rsv == only))
			seg_purge_some(s, false, &v);
		if (!v.n) {
			pthread_mutex_unlock(&pages_lock);
			held = false;
		}
	}
	if (v.n)
		purge_vec_apply(&v);
	if (held)
		pthread_mutex_unlock(&pages_lock);
	pages_drop_kept();
}

bool pages_drop_kept(void)
{
	if (!__atomic_load_n(&g_stats.huge_kept_pages, __ATOMIC_RELAXED))
		return false;
	uint16_t only = tl_sandbox_locked ? tl_state->heap->comp->id : 0;
	size_t rel[SEGS_QUEUE_MAX];
	size_t nrel = 0;
	bool any = false;
	pthread_mutex_lock(&pages_lock);
	for (size_t i = 0; i < heap_nsegs; i++) {
		if (!seg_used_map[i / 64]) {
			i |= 63;
			continue;
		}
		struct segment *s = &seg_table[i];
		if (bit_get(seg_used_map, i) && s->kind == SEG_HUGE && s->releasing == HUGE_KEPT &&
		    (!only || s->rsv == only)) {
			huge_drop_kept(s, rel, &nrel);
			any = true;
		}
	}
	pthread_mutex_unlock(&pages_lock);
	if (nrel)
		segs_release(rel, nrel);
	return any;
}

/* Every span of live (or queued) pages of every segment in use, any
 * owner's, huge allocations whole: fn(addr, npages, pending, arg).  No lock
 * (alloc/uffd.c, uffd_arm: a span this misses is one whose grant sees the
 * userfaultfd armed and fills it itself). */
void pages_walk_live(void (*fn)(uintptr_t, size_t, bool, void *), void *arg)
{
	for (size_t i = 0; i < heap_nsegs; i++) {
		if (!__atomic_load_n(&seg_used_map[i / 64], __ATOMIC_ACQUIRE)) {
			i |= 63;
			continue;
		}
		struct segment *s = &seg_table[i];
		uint8_t kind = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
		if (kind == SEG_PAGES_K)
			owner_walk(s, OWNER_ANY, OW_LIVE | OW_PENDING, fn, arg);
		else if (kind == SEG_HUGE && !__atomic_load_n(&s->releasing, __ATOMIC_RELAXED))
			fn(seg_addr(s), __atomic_load_n(&s->huge_pages, __ATOMIC_RELAXED), false, arg);
	}
}

/* ---- the reservation of a locked compartment ------------------------------
 * The executor (alloc/executor.c) judges a locked thread's memory calls by
 * its copy of the tables taken at the lock; a free page in it could be
 * another owner's by now (taken by an unfiltered thread).  So at the lock
 * the compartment gets segments of its own for good: the ones it holds and
 * n unused ones; no other owner takes them (they stay set in seg_used_map;
 * released, they go back to it, not to the pool), it takes no other, and
 * the executor grants only inside them. */

/* Mark c's segments (a huge one's tail too) reserved for it. */
static void rsv_claim_held(struct xpfo_compartment *c)
{
	for (struct segment *s = c->segs; s; s = s->next) {
		size_t n = s->kind == SEG_HUGE ? s->nsegs : 1;
		for (size_t k = 0; k < n; k++)
			s[k].rsv = c->id;
	}
}

int pages_reserve(struct xpfo_compartment *c, size_t n)
{
	int e = 0;
	pthread_mutex_lock(&pages_lock);
	if (!c->reserved) {
		size_t i = n <= heap_nsegs ? segs_find(0, n, 1, 0, false) : heap_nsegs;
		if (i == heap_nsegs) {
			e = ENOMEM;
		} else {
			bit_fill(seg_used_map, i, n, true);
			bit_fill(seg_idle_map, i, n, true);
			for (size_t k = i; k < i + n; k++) {
				seg_table[k].rsv = c->id;
				seg_seen_mark(k);
			}
			rsv_claim_held(c);
			c->reserved = 1;
		}
	}
	pthread_mutex_unlock(&pages_lock);
	return e;
}

void pages_unreserve(struct xpfo_compartment *c)
{
	pthread_mutex_lock(&pages_lock);
	for (size_t i = 0; c->reserved && i < heap_nsegs; i++) {
		i = bit_next(seg_used_map, i, heap_nsegs, true);
		if (i == heap_nsegs || seg_table[i].rsv != c->id)
			continue;
		seg_table[i].rsv = 0; /* one still in use goes to the pool when released */
		if (bit_get(seg_idle_map, i)) {
			bit_clr(seg_idle_map, i);
			bit_clr(seg_used_map, i);
		}
	}
	c->reserved = 0;
	c->rsv_warned = 0;
	pthread_mutex_unlock(&pages_lock);
}

bool pages_reserved_for(size_t i, uint16_t id)
{
	return i < heap_nsegs && id && seg_table[i].rsv == id;
}

/* Protect [a, a+len) or say it could not (a fork child: nobody else runs). */
static void protect_or_warn(uintptr_t a, size_t len)
{
	if (len && os_protect((void *)a, len, OS_NONE))
		xpfo_warn("cannot protect free pages %p..%p: they read as zeros", (void *)a,
			  (void *)(a + len));
}

void pages_protect_free(void)
{
	pthread_mutex_lock(&pages_lock);
	size_t unused_from = heap_nsegs;
	for (size_t i = 0; i <= heap_nsegs; i++) {
		bool unused = i < heap_nsegs && seg_table[i].kind == SEG_UNUSED;
		if (unused && unused_from == heap_nsegs)
			unused_from = i;
		if (unused)
			continue;
		if (unused_from != heap_nsegs)
			protect_or_warn(heap_base + (unused_from << SEG_SHIFT),
					(i - unused_from) << SEG_SHIFT);
		unused_from = heap_nsegs;
		if (i == heap_nsegs || seg_table[i].kind != SEG_PAGES_K)
			continue;
		struct segment *s = &seg_table[i];
		for (size_t p = bit_next(s->free_map, 0, SEG_PAGES, true); p < SEG_PAGES;) {
			size_t q = bit_next(s->free_map, p, SEG_PAGES, false);
			protect_or_warn(seg_addr(s) + (p << PAGE_SHIFT), (q - p) << PAGE_SHIFT);
			p = bit_next(s->free_map, q, SEG_PAGES, true);
		}
	}
	pthread_mutex_unlock(&pages_lock);
}
