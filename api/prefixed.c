/* prefixed.c - the allocator under xpfo_ names.  Built in every
 * configuration; with --disable-override these are the only allocation
 * entry points (LD_PRELOAD/override.c, which defines the libc names, is not
 * built), so a program can use xpfo beside glibc's malloc. */
#include "internal.h"

#include <errno.h>

static inline bool is_pow2(size_t a) { return a && !(a & (a - 1)); }

XPFO_EXPORT void *xpfo_malloc(size_t size)
{
	XPFO_ENTRY;
	return heap_malloc(tstate_get(), size);
}

XPFO_EXPORT void xpfo_free(void *p)
{
	XPFO_ENTRY;
	if (p)
		heap_free(tstate_get(), p);
}

XPFO_EXPORT void *xpfo_calloc(size_t n, size_t size)
{
	XPFO_ENTRY;
	return heap_calloc(tstate_get(), n, size);
}

/* realloc(NULL, n) is malloc; realloc(p, 0) frees and returns NULL (glibc) */
XPFO_EXPORT void *xpfo_realloc(void *p, size_t size)
{
	XPFO_ENTRY;
	if (!p)
		return heap_malloc(tstate_get(), size);
	if (!size) {
		heap_free(tstate_get(), p);
		return NULL;
	}
	return heap_realloc(tstate_get(), p, size);
}

/* An alignment beyond half the reservation can never be met: ENOMEM, as
 * the libc names answer (LD_PRELOAD/override.c). */
static void *aligned_checked(size_t align, size_t size)
{
	struct tstate *t = tstate_get();
	if (align > (heap_end - heap_base) / 2) {
		errno = ENOMEM;
		return NULL;
	}
	return heap_aligned(t, align, size);
}

XPFO_EXPORT void *xpfo_aligned_alloc(size_t align, size_t size)
{
	XPFO_ENTRY;
	if (!is_pow2(align)) {
		errno = EINVAL;
		return NULL;
	}
	return aligned_checked(align, size);
}

/* Returns the errno and leaves errno itself as it was (POSIX). */
XPFO_EXPORT int xpfo_posix_memalign(void **out, size_t align, size_t size)
{
	XPFO_ENTRY;
	if (!is_pow2(align) || align % sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = aligned_checked(align, size);
	int e = errno;
	errno = saved;
	if (!p)
		return e ? e : ENOMEM;
	*out = p;
	return 0;
}

XPFO_EXPORT size_t xpfo_usable_size(const void *p)
{
	XPFO_ENTRY;
	return p ? heap_usable(p) : 0;
}

XPFO_EXPORT void xpfo_free_sized(void *p, size_t size)
{
	XPFO_ENTRY;
	if (p) {
		heap_check_sized(p, size, 0);
		heap_free(tstate_get(), p);
	}
}
