/* owner.c - unit test of the ownership module (alloc/owner.c), built from
 * the module's own sources (tests/local.mk) with a segment table in plain
 * memory: no heap is mapped, only the page entries are exercised.
 *
 * Checks: the lookup of live runs (start, interior, guard), slabs (live,
 * freed, interior and past-the-end slots), queued, free and quarantined
 * pages, retired slabs' slots (double free), foreign addresses; the walker
 * coalescing a compartment's pages into spans by what is asked (live,
 * queued, guards); the describer; a transfer moving the guard page too;
 * a run queued whole read as queued through its head (lookup, describer,
 * walker) and taken back with its head alone; a carve clearing the words
 * written since the last one and no others (ents_hwm); the invariant check
 * on a consistent segment, and its fatal line on a broken one (a count, an
 * entry past the written pages).
 */
#include "alloc.h"
#include "owner.h"
#include "testutil.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define NSEG 4
#define PG(n) ((uintptr_t)(n) << PAGE_SHIFT)

static struct segment *carve(size_t idx, uint16_t owner)
{
	struct segment *s = &seg_table[idx];
	memset(s, 0, sizeof *s);
	s->owner = owner;
	s->kind = SEG_PAGES_K;
	s->free_pages = SEG_PAGES;
	memset(s->free_map, 0xff, sizeof s->free_map);
	owner_reset(s);
	return s;
}

/* pages [i, i+n) of s leave the free map as owner's placeholders */
static uintptr_t take(struct segment *s, size_t i, size_t n, uint16_t owner)
{
	for (size_t k = i; k < i + n; k++)
		s->free_map[k / 64] &= ~(1ull << (k % 64));
	s->free_pages -= (uint32_t)n;
	uintptr_t a = seg_addr(s) + PG(i);
	owner_set_taken(a, n, owner);
	return a;
}

/* pages [i, i+n) of s back in the free map (pages_release's part) */
static void give_back(struct segment *s, size_t i, size_t n, uint32_t serial)
{
	owner_set_free(seg_addr(s) + PG(i), n, serial);
	for (size_t k = i; k < i + n; k++)
		s->free_map[k / 64] |= 1ull << (k % 64);
	s->free_pages += (uint32_t)n;
}

static void test_runs(void)
{
	struct segment *s = carve(0, 7);
	uintptr_t a = take(s, 10, 4, 7);
	owner_set_large(a, 3, 7);
	owner_set_guard(a + PG(3), 7);
	struct blk b;
	CHECK(owner_lookup(a, &b) == BLK_OK && b.kind == BK_LARGE && b.owner == 7, "run start");
	CHECK(b.usable == PG(3) && b.span == PG(4) && b.guarded, "run with guard: %zu %zu %d",
	      b.usable, b.span, b.guarded);
	CHECK(owner_lookup(a + PG(1) + 8, &b) == BLK_INTERIOR && b.base == a, "run interior");
	CHECK(owner_lookup(a + 8, &b) == BLK_INTERIOR && b.base == a, "run start + 8");
	CHECK(owner_lookup(a + PG(3), &b) == BLK_NOT_BLOCK, "the guard page is no block");
	CHECK(owner_lookup(heap_end + 4096, &b) == BLK_FOREIGN, "outside the heap");
	owner_set_pending(a, 3, -1, 7);
	CHECK(owner_lookup(a, &b) == BLK_FREED, "a queued run reads as freed");
	CHECK(owner_lookup(a + PG(1) + 8, &b) == BLK_NOT_BLOCK, "inside a queued run");
	owner_set_quarantined(a, 3, 7);
	CHECK(owner_lookup(a, &b) == BLK_FREED, "a quarantined run reads as freed");
}

/* Runs of 16 pages or more have their entries written in bulk (eight at
 * a time, then the rest): every page of runs of lengths around those
 * steps, live and then queued, and the owner word of each. */
static void test_long_runs(void)
{
	struct segment *s = carve(1, 5);
	size_t lens[] = { 15, 16, 17, 23, 24, 25, 256, 263 };
	size_t at = 0;
	for (size_t n = 0; n < sizeof lens / sizeof lens[0]; n++) {
		size_t np = lens[n];
		uintptr_t a = take(s, at, np, 5);
		owner_set_large(a, np, 5);
		size_t bad = 0;
		struct blk b;
		for (size_t k = 0; k < np; k++) {
			enum blk_status st = owner_lookup(a + PG(k) + 8, &b);
			bad += st != BLK_INTERIOR || b.base != a || b.usable != PG(np) ||
			       owner_of_page(s, a + PG(k)) != 5;
		}
		CHECK(!bad && owner_lookup(a, &b) == BLK_OK, "run of %zu pages: %zu pages wrong", np,
		      bad);
		owner_set_pending(a, np, -1, 5);
		for (size_t k = 1; k < np; k++)
			bad += owner_lookup(a + PG(k) + 8, &b) != BLK_NOT_BLOCK ||
			       owner_of_page(s, a + PG(k)) != 5;
		CHECK(!bad && owner_lookup(a, &b) == BLK_FREED, "queued run of %zu pages: %zu wrong",
		      np, bad);
		at += np + 1;
	}
}

static void test_slabs(void)
{
	struct segment *s = carve(1, 9);
	unsigned cls = 3; /* 64-byte slots */
	const struct size_class *k = &classes[cls];
	uintptr_t a = take(s, 0, k->npages, 9);
	struct slab *sl = &slab_table[5];
	memset(sl, 0, sizeof *sl);
	sl->base = a;
	sl->cls = (uint16_t)cls;
	sl->nslots = k->nslots;
	sl->owner = 9;
	sl->used[0] = 1; /* slot 0 live */
	sl->given[0] = 3; /* slots 0 and 1 were handed out, slot 2 never */
	owner_set_slab(a, k->npages, 5, 9);
	struct blk b;
	CHECK(owner_lookup(a, &b) == BLK_OK && b.kind == BK_SMALL && b.slot == 0 && b.s == sl,
	      "live slot");
	CHECK(owner_lookup(a + k->size, &b) == BLK_FREED && b.slot == 1, "free slot");
	CHECK(owner_lookup(a + 2 * k->size, &b) == BLK_NOT_BLOCK && b.slot == 2,
	      "a slot never handed out is no block");
	CHECK(owner_lookup(a + 1, &b) == BLK_INTERIOR && b.base == a, "inside a slot");
	sl->remote[0] = 1;
	CHECK(owner_lookup(a, &b) == BLK_FREED, "slot freed remotely");
	long id = owner_slab_of(s, a + PG(k->npages - 1));
	CHECK(id == 5, "the fast path's decoder: %ld", id);
	/* retired: queued, then free; its slots still read as freed */
	owner_set_pending(a, k->npages, (int)cls, 9);
	CHECK(owner_lookup(a + k->size, &b) == BLK_FREED, "retired slab's slot (queued)");
	give_back(s, 0, k->npages, 42);
	CHECK(owner_lookup(a + 2 * k->size, &b) == BLK_FREED, "retired slab's slot (free)");
	CHECK(owner_lookup(a + k->size + 8, &b) == BLK_NOT_BLOCK, "not a slot of it");
	CHECK(owner_slab_of(s, a) == -1, "a free page is no slab's");
}

struct spans {
	uintptr_t a[8];
	size_t n[8];
	bool pending[8];
	unsigned count;
};

static void collect(uintptr_t a, size_t n, bool pending, void *arg)
{
	struct spans *sp = arg;
	if (sp->count < 8) {
		sp->a[sp->count] = a;
		sp->n[sp->count] = n;
		sp->pending[sp->count] = pending;
	}
	sp->count++;
}

/* pages 10-12 live (7), 13 queued (7), 14 live (8), 15-16 guards (7) */
static void test_walk(void)
{
	struct segment *s = carve(2, 7);
	uintptr_t base = seg_addr(s);
	take(s, 10, 4, 7);
	take(s, 14, 1, 8); /* a page's aux is its taker's from then on */
	take(s, 15, 2, 7);
	owner_set_large(base + PG(10), 3, 7);
	owner_set_pending(base + PG(13), 1, -1, 7);
	owner_set_large(base + PG(14), 1, 8);
	owner_set_guard(base + PG(15), 7);
	owner_set_guard(base + PG(16), 7);
	struct spans sp = { 0 };
	owner_walk(s, 7, OW_LIVE, collect, &sp);
	CHECK(sp.count == 1 && sp.a[0] == base + PG(10) && sp.n[0] == 3 && !sp.pending[0],
	      "live: one span of 3 (%u spans)", sp.count);
	memset(&sp, 0, sizeof sp);
	owner_walk(s, 7, OW_LIVE | OW_PENDING, collect, &sp);
	CHECK(sp.count == 1 && sp.n[0] == 4 && sp.pending[0], "live and queued coalesce: %u, %zu",
	      sp.count, sp.n[0]);
	memset(&sp, 0, sizeof sp);
	owner_walk(s, 7, OW_LIVE | OW_GUARD, collect, &sp);
	CHECK(sp.count == 2 && sp.n[0] == 3 && sp.a[1] == base + PG(15) && sp.n[1] == 2,
	      "another owner's page splits the spans: %u", sp.count);
	memset(&sp, 0, sizeof sp);
	owner_walk(s, 8, OW_LIVE | OW_PENDING | OW_GUARD, collect, &sp);
	CHECK(sp.count == 1 && sp.a[0] == base + PG(14) && sp.n[0] == 1, "owner 8: its one page");
	size_t mine, foreign;
	owner_census(s, 7, &mine, &foreign, NULL, NULL);
	CHECK(mine == 6 && foreign == 1, "census: %zu mine, %zu foreign", mine, foreign);
	/* a transfer takes the run's guard page along */
	CHECK(owner_set_owner(base + PG(14), 1, 9) == 2, "run + guard change owner");
	struct owner_desc d;
	owner_describe(base + PG(15), 0, &d);
	CHECK(d.state == OS_GUARD, "guard described");
	CHECK(owner_of_page(s, base + PG(15)) == 9, "the guard went with the run");
	owner_describe(base + PG(13), 0, &d);
	CHECK(d.state == OS_OWNED_PENDING && d.owner == 7, "queued page described");
	owner_describe(base + PG(10), 0, &d);
	CHECK(d.state == OS_OWNED && d.owner == 7, "live page described");
	give_back(s, 13, 1, 40);
	owner_describe(base + PG(13), 45, &d);
	CHECK(d.state == OS_FREE && d.age == 5, "free page revoked 5 flushes ago: %u", d.age);
	owner_check(); /* consistent once the free map agrees */
}

static int broken(void *arg)
{
	(void)arg;
	struct segment *s = carve(3, 7);
	s->free_pages--; /* the count no longer matches the map */
	owner_check();
	return 0;
}

/* An entry past the pages written since the carve (ents_hwm) */
static int broken_past(void *arg)
{
	(void)arg;
	struct segment *s = carve(3, 7);
	s->ent[600].page = PG_MAKE(PG_SLAB, 1);
	s->free_map[600 / 64] &= ~(1ull << (600 % 64));
	s->free_pages--; /* the map agrees: only the mark does not */
	owner_check();
	return 0;
}

/* A segment's words are written only for pages taken since its carve
 * (ents_hwm), and a carve clears only those: the words past them are never
 * touched (fails with a take that does not raise the mark, whose run then
 * outlives the next carve, or a carve that clears past it). */
static void test_written(void)
{
	struct segment *s = carve(1, 6);
	uintptr_t a = take(s, 0, 5, 6), r = take(s, 100, 4, 6);
	owner_set_large(a, 5, 6);
	owner_set_large(r, 4, 6);
	CHECK(s->ents_hwm == 104, "written up to page 104: %u", (unsigned)s->ents_hwm);
	struct blk b;
	CHECK(owner_lookup(r + PG(1), &b) == BLK_INTERIOR, "the second run is live");
	s->gen = 1; /* its first carve: a page start past the mark was never a block */
	CHECK(owner_lookup(r + PG(8), &b) == BLK_NOT_BLOCK, "past the mark, first carve");
	s->ent[500].page = 0xabc; /* a marker past the mark */
	owner_reset(s);
	s->gen = 2; /* carved again: a run start there may be one freed before */
	memset(s->free_map, 0xff, sizeof s->free_map);
	s->free_pages = SEG_PAGES;
	CHECK(s->ents_hwm == 0 && owner_lookup(a, &b) == BLK_FREED && s->ent[101].page == 0 &&
	      owner_lookup(r + PG(1) + 8, &b) == BLK_NOT_BLOCK, "a new carve clears both runs");
	CHECK(s->ent[500].page == 0xabc, "the words past the mark are not touched: %x",
	      (unsigned)s->ent[500].page);
	s->ent[500].page = 0;
	owner_check();
	a = take(s, 0, 2, 6);
	owner_set_large(a, 2, 6);
	CHECK(s->ents_hwm == 2 && owner_lookup(a, &b) == BLK_OK, "taken again: mark %u",
	      (unsigned)s->ents_hwm);
}

/* A run freed whole (owner_set_pending_whole) keeps its tails pointing at
 * its head, and only the head says queued: every reader takes a tail's
 * state from its head (fails with the tails read as live: the open walk
 * would open a queued run's pages).  Taken back whole, only its head is
 * written (owner_set_large_head). */
static void test_whole(void)
{
	struct segment *s = carve(0, 5);
	uintptr_t a = take(s, 100, 21, 5);
	owner_set_large(a, 20, 5);
	owner_set_guard(a + PG(20), 5);
	owner_set_pending_whole(a, 21, 5);
	struct blk b;
	CHECK(owner_lookup(a, &b) == BLK_FREED, "a run queued whole reads as freed");
	size_t bad = 0;
	struct owner_desc d;
	for (size_t k = 1; k < 21; k++) {
		owner_describe(a + PG(k), 0, &d);
		bad += owner_lookup(a + PG(k) + 8, &b) != BLK_NOT_BLOCK ||
		       d.state != OS_OWNED_PENDING || d.owner != 5;
	}
	CHECK(!bad, "queued whole: %zu of its 20 other pages read otherwise", bad);
	struct spans sp = { 0 };
	owner_walk(s, 5, OW_LIVE | OW_GUARD, collect, &sp);
	CHECK(sp.count == 0, "no live page or guard in a run queued whole: %u spans", sp.count);
	memset(&sp, 0, sizeof sp);
	owner_walk(s, 5, OW_PENDING, collect, &sp);
	CHECK(sp.count == 1 && sp.a[0] == a && sp.n[0] == 21 && sp.pending[0],
	      "queued whole: one queued span of 21 (%u spans, %zu pages)", sp.count, sp.n[0]);
	/* taken back whole: the head and the guard */
	owner_set_large_head(a, 20, 5);
	owner_set_guard(a + PG(20), 5);
	CHECK(owner_lookup(a, &b) == BLK_OK && b.usable == PG(20) && b.guarded, "taken back whole");
	CHECK(owner_lookup(a + PG(19) + 8, &b) == BLK_INTERIOR && b.base == a, "its last page");
	memset(&sp, 0, sizeof sp);
	owner_walk(s, 5, OW_LIVE, collect, &sp);
	CHECK(sp.count == 1 && sp.n[0] == 20 && !sp.pending[0], "live again: %u spans", sp.count);
}

int main(void)
{
	tu_prog = "unit/owner";
	sizeclass_init();
	heap_base = (uintptr_t)1 << 40; /* addresses only: never touched */
	heap_nsegs = NSEG;
	heap_end = heap_base + NSEG * SEG_SIZE;
	seg_table = calloc(NSEG, sizeof(struct segment));
	slab_table = calloc(16, sizeof(struct slab));
	if (!seg_table || !slab_table)
		tu_hard_error("calloc");
	test_runs();
	test_long_runs();
	test_slabs();
	test_walk();
	test_whole();
	test_written();
	struct tu_child c;
	tu_run_child(broken, NULL, 10, &c);
	CHECK(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT &&
	      strstr(c.err, "xpfo: fatal: invariant: segment 3 counts 1023 free pages, map has 1024"),
	      "a broken segment is fatal with the invariant's line: %s", c.err);
	tu_run_child(broken_past, NULL, 10, &c);
	CHECK(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGABRT &&
	      strstr(c.err, "xpfo: fatal: invariant: segment 3 page 600, past the 0 written, has entry 10000001"),
	      "an entry past the written pages is fatal: %s", c.err);
	tu_exit();
}
