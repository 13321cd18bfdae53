/* compartment.c - the public compartment functions of xpfo.h.  Each enters
 * xpfo (XPFO_ENTRY), gets the thread's state (starting xpfo on first use)
 * and hands the work to alloc/compartment.c. */
#include "internal.h"

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

XPFO_EXPORT xpfo_compartment_t *xpfo_enter(xpfo_compartment_t *c)
{
	XPFO_ENTRY;
	return comp_enter(tstate_get(), c);
}

XPFO_EXPORT void xpfo_leave(xpfo_compartment_t *previous)
{
	XPFO_ENTRY;
	comp_leave(tstate_get(), previous);
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
