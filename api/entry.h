/* entry.h - what the libc names (LD_PRELOAD/override.c) and the xpfo_ names
 * (api/prefixed.c) share: one body each for the entry points that do more
 * than call the heap.  The callers open the entry (XPFO_ENTRY). */
#ifndef XPFO_ENTRY_H
#define XPFO_ENTRY_H

#include "internal.h"

#include <errno.h>

static inline bool entry_pow2(size_t a) { return a && !(a & (a - 1)); }

/* The thread's state when the entry has nothing to do around the call (no
 * pkeys: XPFO_ENTRY's seal_enter and seal_exit do nothing), so that malloc
 * and free end in a tail call instead of keeping a frame for the cleanup;
 * NULL: take the full entry (pkeys, or the thread's first call). */
static inline struct tstate *entry_fast(void)
{
	return likely(!pkeys_on) ? tl_state : NULL;
}

/* realloc(NULL, n) is malloc; realloc(p, 0) frees and returns NULL (glibc) */
static inline void *entry_realloc(void *p, size_t size)
{
	struct tstate *t = tstate_get();
	if (!p)
		return heap_malloc(t, size);
	if (!size) {
		heap_free(t, p);
		return NULL;
	}
	return heap_realloc(t, p, size);
}

/* An alignment beyond half the reservation can never be met: ENOMEM. */
static inline void *entry_aligned(size_t align, size_t size)
{
	struct tstate *t = tstate_get();
	if (align > (heap_end - heap_base) / 2)
		return fail_null(ENOMEM);
	return heap_aligned(t, align, size);
}

static inline void *entry_aligned_alloc(size_t align, size_t size)
{
	if (!entry_pow2(align))
		return fail_null(EINVAL);
	return entry_aligned(align, size);
}

/* Returns the errno and leaves errno itself as it was (POSIX). */
static inline int entry_posix_memalign(void **out, size_t align, size_t size)
{
	if (!entry_pow2(align) || align % sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = entry_aligned(align, size);
	int e = errno;
	errno = saved;
	if (!p)
		return e ? e : ENOMEM;
	*out = p;
	return 0;
}

static inline void entry_free_sized(void *p, size_t size, size_t align)
{
	if (p) {
		heap_check_sized(p, size, align);
		heap_free(tstate_get(), p);
	}
}

#endif
