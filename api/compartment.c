/* compartment.c - the public compartment functions of xpfo.h.  Each enters
 * xpfo (XPFO_ENTRY), gets the thread's state (starting xpfo on first use)
 * and hands the work to alloc/compartment.c (alloc/sandbox.c: the lock,
 * alloc/alias.c: the shared descriptors). */
#include "internal.h"

#include <errno.h>

XPFO_EXPORT xpfo_compartment_t *xpfo_compartment_create(const char *name, unsigned flags)
{
	XPFO_ENTRY;
	tstate_get();
	return comp_create(name, flags);
}

XPFO_EXPORT int xpfo_compartment_destroy(xpfo_compartment_t *c)
{
	XPFO_ENTRY;
	tstate_get();
	return comp_destroy(c);
}

/* alloc/sandbox.c: a locked thread stays where it is (EPERM). */
static bool sandbox_refuses(void)
{
	if (!tl_sandbox_locked)
		return false;
	errno = EPERM;
	return true;
}

XPFO_EXPORT xpfo_compartment_t *xpfo_enter(xpfo_compartment_t *c)
{
	XPFO_ENTRY;
	struct tstate *t = tstate_get();
	if (sandbox_refuses())
		return NULL;
	return comp_enter(t, c);
}

XPFO_EXPORT void xpfo_leave(xpfo_compartment_t *previous)
{
	XPFO_ENTRY;
	struct tstate *t = tstate_get();
	if (!sandbox_refuses())
		comp_leave(t, previous);
}

XPFO_EXPORT void *xpfo_malloc_in(xpfo_compartment_t *c, size_t size)
{
	XPFO_ENTRY;
	return comp_malloc_in(tstate_get(), c, size);
}

XPFO_EXPORT void *xpfo_aligned_alloc_in(xpfo_compartment_t *c, size_t align, size_t size)
{
	XPFO_ENTRY;
	return comp_aligned_alloc_in(tstate_get(), c, align, size);
}

XPFO_EXPORT void *xpfo_calloc_in(xpfo_compartment_t *c, size_t n, size_t size)
{
	XPFO_ENTRY;
	return comp_calloc_in(tstate_get(), c, n, size);
}

XPFO_EXPORT int xpfo_transfer(void *p, xpfo_compartment_t *to)
{
	XPFO_ENTRY;
	tstate_get();
	return comp_transfer(p, to);
}

static int lock_thread(xpfo_compartment_t *c, unsigned flags)
{
	XPFO_ENTRY;
	int e = sandbox_lock(tstate_get(), c, flags);
	return e ? fail_int(e) : 0;
}

/* Would stdout's buffer be out of a thread locked into c: a block of
 * another owner (root's, once the program printed), or none yet (the
 * first printf would put it in c, where on pkeys the other threads sharing
 * stdout cannot reach it)?  Not for a lock that fails at once. */
static bool lock_stdout_in_the_way(xpfo_compartment_t *c)
{
	XPFO_ENTRY;
	tstate_get();
	bool unbuffered;
	const void *buf = os_stdout_buffer(&unbuffered);
	if (unbuffered || tl_sandbox_locked || c == &comp_root || !comp_check(c))
		return false;
	if (!buf)
		return true;
	uintptr_t a = (uintptr_t)buf;
	struct blk b;
	return in_heap(a) && owner_lookup(a, &b) == BLK_OK && comp_table[b.owner] != c;
}

/* stdio in a locked thread (README, "stdio in a locked thread"): stdout
 * is made unbuffered first, outside xpfo's entry (the C library frees its
 * buffer with free). */
XPFO_EXPORT int xpfo_lock_thread(xpfo_compartment_t *c, unsigned flags)
{
	if (lock_stdout_in_the_way(c))
		os_stdout_unbuffer();
	return lock_thread(c, flags);
}

XPFO_EXPORT int xpfo_share_fd(void *p, unsigned flags)
{
	XPFO_ENTRY;
	return alias_share(tstate_get()->heap->comp, p, flags);
}

/* Test seam (tests/sandbox/attacks.c): what an arbitrary write into the
 * metadata does: the page run at p becomes, in the tables, the calling
 * thread's compartment's.  (With sealed metadata on pkeys such a write
 * needs a bug inside xpfo's entry points: the seam opens the key.) */
XPFO_EXPORT void xpfo__test_forge_owner(void *p);

/* The pages of the live page run that starts at a, or 0. */
static size_t run_pages_at(uintptr_t a)
{
	struct blk b;
	if (!in_heap(a) || owner_lookup(a, &b) != BLK_OK || b.kind != BK_LARGE)
		return 0;
	return b.usable >> PAGE_SHIFT;
}

XPFO_EXPORT void xpfo__test_forge_owner(void *p)
{
	XPFO_ENTRY;
	uint16_t id = tstate_get()->heap->comp->id;
	size_t npages = run_pages_at((uintptr_t)p);
	if (npages)
		owner_set_owner((uintptr_t)p, npages, id);
}
