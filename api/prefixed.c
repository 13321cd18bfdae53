/* prefixed.c - the allocator under xpfo_ names, in every configuration.
 * With --disable-override these are the only allocation entry points, so a
 * program can use xpfo beside glibc's malloc; otherwise this file is
 * compiled inside LD_PRELOAD/override.c, whose libc names (malloc, free,
 * ...) are aliases of these functions. */
#include "entry.h"

static __attribute__((noinline)) void *xpfo_malloc_entry(size_t size)
{
	XPFO_ENTRY;
	return heap_malloc(tstate_get(), size);
}

XPFO_EXPORT void *xpfo_malloc(size_t size)
{
	struct tstate *t = entry_fast();
	return likely(t) ? heap_malloc(t, size) : xpfo_malloc_entry(size);
}

static __attribute__((noinline)) void xpfo_free_entry(void *p)
{
	XPFO_ENTRY;
	heap_free(tstate_get(), p);
}

XPFO_EXPORT void xpfo_free(void *p)
{
	struct tstate *t = entry_fast();
	if (!p)
		return;
	if (likely(t))
		heap_free(t, p);
	else
		xpfo_free_entry(p);
}

XPFO_EXPORT void *xpfo_calloc(size_t n, size_t size)
{
	XPFO_ENTRY;
	return heap_calloc(tstate_get(), n, size);
}

XPFO_EXPORT void *xpfo_realloc(void *p, size_t size)
{
	XPFO_ENTRY;
	return entry_realloc(p, size);
}

XPFO_EXPORT void *xpfo_aligned_alloc(size_t align, size_t size)
{
	XPFO_ENTRY;
	return entry_aligned_alloc(align, size);
}

XPFO_EXPORT int xpfo_posix_memalign(void **out, size_t align, size_t size)
{
	XPFO_ENTRY;
	return entry_posix_memalign(out, align, size);
}

XPFO_EXPORT size_t xpfo_usable_size(const void *p)
{
	XPFO_ENTRY;
	return p ? heap_usable(p) : 0;
}

XPFO_EXPORT void xpfo_free_sized(void *p, size_t size)
{
	XPFO_ENTRY;
	entry_free_sized(p, size, 0);
}
