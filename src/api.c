/* api.c - the public functions of xpfo.h that are not malloc itself. */
#include "internal.h"

#include <errno.h>

XPFO_EXPORT xpfo_compartment_t *xpfo_root(void)
{
	tstate_get();
	return &comp_root;
}

XPFO_EXPORT xpfo_compartment_t *xpfo_current(void)
{
	return tstate_get()->heap->comp;
}

XPFO_EXPORT const char *xpfo_compartment_name(const xpfo_compartment_t *c)
{
	if (!c) {
		errno = EINVAL;
		return NULL;
	}
	return c->name;
}

XPFO_EXPORT xpfo_compartment_t *xpfo_owner(const void *p)
{
	tstate_get();
	uintptr_t a = (uintptr_t)p;
	if (!in_heap(a))
		return NULL;
	struct segment *s = seg_of(a);
	uint8_t kind = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
	if (kind == SEG_HUGE || kind == SEG_HUGE_TAIL) {
		struct segment *head = kind == SEG_HUGE ? s : s - s->nsegs;
		size_t off = a - (heap_base + ((size_t)(head - seg_table) << SEG_SHIFT));
		if (head->releasing || off >= (size_t)head->huge_pages << PAGE_SHIFT)
			return NULL;
		return comp_table[head->owner];
	}
	if (kind != SEG_PAGES_K)
		return NULL;
	uint32_t e = page_entry(s, a);
	switch (PG_TYPE(e)) {
	case PG_SLAB:
	case PG_LARGE:
	case PG_TAIL:
		return comp_table[page_owner(s, a)];
	default:
		return NULL;
	}
}

XPFO_EXPORT int xpfo_flush(void)
{
	int e = revoke_flush(tstate_get(), FR_EXPLICIT);
	heap_walk_check();
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

XPFO_EXPORT const char *xpfo_backend(void)
{
	tstate_get();
	return "mprotect";
}
