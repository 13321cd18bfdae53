/* api.c - the public functions of xpfo.h that are not malloc itself. */
#include "internal.h"
#include "owner.h"

#include <errno.h>

XPFO_EXPORT xpfo_compartment_t *xpfo_root(void)
{
	XPFO_ENTRY;
	tstate_get();
	return &comp_root;
}

XPFO_EXPORT xpfo_compartment_t *xpfo_current(void)
{
	XPFO_ENTRY;
	return tstate_get()->heap->comp;
}

XPFO_EXPORT const char *xpfo_compartment_name(const xpfo_compartment_t *c)
{
	XPFO_ENTRY;
	if (!c)
		return fail_null(EINVAL);
	return c == &comp_root ? "root" : c->pub_name;
}

/* Whose page a (in the heap) is: a page-level question, any byte of a live
 * block answers, as the fault reporter's does. */
static xpfo_compartment_t *page_owner(uintptr_t a)
{
	struct owner_desc d;
	owner_describe(a, 0, &d);
	return d.state == OS_OWNED ? comp_table[d.owner] : NULL;
}

XPFO_EXPORT xpfo_compartment_t *xpfo_owner(const void *p)
{
	XPFO_ENTRY;
	tstate_get();
	uintptr_t a = (uintptr_t)p;
	return in_heap(a) ? page_owner(a) : NULL;
}

XPFO_EXPORT int xpfo_flush(void)
{
	XPFO_ENTRY;
	int e = revoke_flush(tstate_get(), FR_EXPLICIT);
	heap_walk_check();
	return e ? fail_int(e) : 0;
}

XPFO_EXPORT const char *xpfo_backend(void)
{
	XPFO_ENTRY;
	tstate_get();
	return pkeys_on ? "pkeys" : "mprotect";
}

/* For tests only (tests/qemu/pkeys-backend.c): an address inside xpfo's
 * metadata, to show that a stray write there faults when it is sealed. */
XPFO_EXPORT void *xpfo__test_metadata_address(void);
XPFO_EXPORT void *xpfo__test_metadata_address(void)
{
	XPFO_ENTRY;
	tstate_get();
	return seg_table;
}
