/* move.c - xpfo_move: a live block of any size to another compartment.
 *
 * A page run changes owner in place (comp_transfer: fresh frames, the old
 * owner's mappings gone) and stays where it is.  Everything else is copied
 * into a new block in the target's own pages, as large as the old one's
 * usable size, and the old block is freed (revoked) from its owner: a slab
 * slot (every block under a page, and root's blocks up to 16 KiB made
 * before the first compartment), and a page run that cannot change owner
 * in place because the target or the source is a locked compartment
 * (lock_segments: such a compartment's pages come from its reservation
 * only, and its executor holds its blocks its own until they are freed, so
 * an in-place change by another thread would leave a page the executor
 * would reopen).
 *
 * Who may move what (EPERM otherwise): a locked thread moves only its own
 * compartment's blocks, and copies none (it reaches neither root's pages
 * nor another compartment's): its page runs it may give away in place.
 * The service thread, unlocked, takes any block out of a locked
 * compartment once the locked thread has handed it over: it reads it as
 * free does (struct touch), never opening the compartment to others.
 */
#include "heap.h"

#include <errno.h>

bool comp_reaches(const struct tstate *t, const struct xpfo_compartment *c)
{
	if (c == &comp_root)
		return !tl_sandbox_locked && !comp_root_closed_by();
	return touch_direct(t, c->id);
}

static void *move_copy(struct tstate *t, void *p, const struct blk *b, struct xpfo_compartment *to)
{
	size_t n = b->usable;
	void *q = comp_malloc_in(t, to, n ? n : 1);
	if (!q)
		return NULL;
	heap_copy(t, q, to->id, p, b->owner, n);
	heap_free(t, p);
	return q;
}

/* A page run that may change owner in place. */
static bool move_in_place(const struct blk *b, const struct xpfo_compartment *from,
			  const struct xpfo_compartment *to)
{
	if (b->kind == BK_SMALL || __atomic_load_n(&to->reserved, __ATOMIC_RELAXED))
		return false;
	return tl_sandbox_locked || !__atomic_load_n(&from->reserved, __ATOMIC_RELAXED);
}

void *comp_move(struct tstate *t, void *p, struct xpfo_compartment *to)
{
	if (!comp_check(to))
		return NULL;
	uintptr_t a = (uintptr_t)p;
	struct blk b;
	if (!in_heap(a) || owner_lookup(a, &b) != BLK_OK)
		return fail_null(EINVAL); /* freed, interior, foreign or NULL */
	struct xpfo_compartment *from = comp_table[b.owner];
	if (!from)
		return fail_null(EINVAL);
	if (from == to)
		return p;
	if (tl_sandbox_locked && from != t->heap->comp)
		return fail_null(EPERM);
	if (move_in_place(&b, from, to))
		return comp_transfer(p, to) ? NULL : p;
	/* a copy: a locked thread reaches no other compartment's pages, and
	 * while a STRICT compartment is inside, root's are closed */
	if (tl_sandbox_locked)
		return fail_null(EPERM);
	if ((from == &comp_root || to == &comp_root) && comp_root_closed_by())
		return fail_null(EPERM);
	return move_copy(t, p, &b, to);
}
