/* override.c - the libc allocation interface, interposed.  This is the only
 * file that defines libc's names; everything else is xpfo's own.  Linked
 * into libxpfo.so, so LD_PRELOAD=libxpfo.so (or linking it) replaces the
 * allocator of every object in the process.
 *
 * The names that mean what an xpfo_ function means are that function under
 * a second name (FORWARD: the same code, no call in between).  An alias
 * needs its target in the same translation unit, so api/prefixed.c is
 * compiled here, not on its own, in this configuration. */
#include "prefixed.c"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
/* Declares a libc name as another name of the xpfo_ function `target`
 * (with the target's attributes), exported. */
#define FORWARD(target) __attribute__((alias(#target), copy(target))) EXPORT

/* C23, not yet in this libc's headers */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

FORWARD(xpfo_malloc) void *malloc(size_t size);
FORWARD(xpfo_free) void free(void *p);
FORWARD(xpfo_calloc) void *calloc(size_t n, size_t size);
FORWARD(xpfo_realloc) void *realloc(void *p, size_t size);
FORWARD(xpfo_posix_memalign) int posix_memalign(void **out, size_t align, size_t size);
FORWARD(xpfo_aligned_alloc) void *aligned_alloc(size_t align, size_t size);
FORWARD(xpfo_free_sized) void free_sized(void *p, size_t size);

EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
	XPFO_ENTRY;
	size_t total;
	if (__builtin_mul_overflow(n, size, &total))
		return fail_null(ENOMEM);
	return realloc(p, total);
}

/* As glibc: an alignment that is not a power of two is rounded up to one. */
static size_t pow2_up(size_t align)
{
	if (entry_pow2(align))
		return align;
	return align ? (size_t)1 << (64 - __builtin_clzll(align)) : 1;
}

EXPORT void *memalign(size_t align, size_t size)
{
	XPFO_ENTRY;
	if (align > ((size_t)1 << 62))
		return fail_null(EINVAL);
	return entry_aligned(pow2_up(align), size);
}

EXPORT void *valloc(size_t size)
{
	XPFO_ENTRY;
	return entry_aligned(PAGE_SIZE, size);
}

EXPORT void *pvalloc(size_t size)
{
	XPFO_ENTRY;
	if (size > SIZE_MAX - PAGE_SIZE)
		return fail_null(ENOMEM);
	return entry_aligned(PAGE_SIZE, size ? align_up(size, PAGE_SIZE) : PAGE_SIZE);
}

/* xpfo_usable_size under glibc's prototype (no const: not an alias) */
EXPORT size_t malloc_usable_size(void *p)
{
	return xpfo_usable_size(p);
}

EXPORT void free_aligned_sized(void *p, size_t align, size_t size)
{
	XPFO_ENTRY;
	entry_free_sized(p, size, align);
}

/* xpfo has no tunables behind mallopt: say so instead of pretending. */
EXPORT int mallopt(int param, int value)
{
	(void)param;
	(void)value;
	return 0;
}

EXPORT struct mallinfo2 mallinfo2(void)
{
	XPFO_ENTRY;
	struct xpfo_stats s;
	struct mallinfo2 m;
	memset(&m, 0, sizeof m);
	tstate_get();
	stats_fill(&s);
	m.arena = s.mapped_bytes;           /* accessible heap pages */
	m.ordblks = s.segments;             /* segments in use */
	m.hblkhd = s.resident_bytes;        /* pages possibly resident */
	m.usmblks = s.peak_mapped_bytes;
	m.uordblks = s.live_bytes;          /* bytes in live allocations */
	m.fordblks = s.mapped_bytes > s.live_bytes ? s.mapped_bytes - s.live_bytes : 0;
	m.keepcost = s.resident_bytes > s.mapped_bytes ? s.resident_bytes - s.mapped_bytes : 0;
	return m;
}

EXPORT struct mallinfo mallinfo(void)
{
	struct mallinfo2 m2 = mallinfo2();
	struct mallinfo m;
	m.arena = (int)m2.arena;
	m.ordblks = (int)m2.ordblks;
	m.smblks = 0;
	m.hblks = 0;
	m.hblkhd = (int)m2.hblkhd;
	m.usmblks = (int)m2.usmblks;
	m.fsmblks = 0;
	m.uordblks = (int)m2.uordblks;
	m.fordblks = (int)m2.fordblks;
	m.keepcost = (int)m2.keepcost;
	return m;
}

EXPORT int malloc_trim(size_t pad)
{
	XPFO_ENTRY;
	(void)pad;
	struct tstate *t = tstate_get();
	uint64_t before = __atomic_load_n(&g_stats.pages_purged, __ATOMIC_RELAXED);
	revoke_flush(t, FR_OTHER);
	pages_purge_all();
	return __atomic_load_n(&g_stats.pages_purged, __ATOMIC_RELAXED) != before;
}

EXPORT int malloc_info(int options, FILE *fp)
{
	XPFO_ENTRY;
	if (options || !fp)
		return fail_int(EINVAL);
	struct xpfo_stats s;
	tstate_get();
	stats_fill(&s);
	fprintf(fp, "<malloc version=\"xpfo-%d.%d\">\n", XPFO_VERSION_MAJOR, XPFO_VERSION_MINOR);
	for (unsigned c = 0; c < NCLASSES; c++)
		if (s.class_allocs[c])
			fprintf(fp, "<size from=\"%llu\" to=\"%llu\" total=\"%llu\" count=\"%llu\"/>\n",
				c ? (unsigned long long)s.class_size[c - 1] + 1 : 1ull,
				(unsigned long long)s.class_size[c],
				(unsigned long long)((s.class_allocs[c] - s.class_frees[c]) * s.class_size[c]),
				(unsigned long long)(s.class_allocs[c] - s.class_frees[c]));
	fprintf(fp, "<total type=\"live\" size=\"%llu\"/>\n", (unsigned long long)s.live_bytes);
	fprintf(fp, "<total type=\"mapped\" size=\"%llu\"/>\n", (unsigned long long)s.mapped_bytes);
	fprintf(fp, "<total type=\"resident\" size=\"%llu\"/>\n", (unsigned long long)s.resident_bytes);
	fprintf(fp, "<revocation queued=\"%llu\" revoked_pages=\"%llu\" syscalls=\"%llu\" flushes=\"%llu\"/>\n",
		(unsigned long long)s.revoke_queued, (unsigned long long)s.pages_revoked,
		(unsigned long long)s.revoke_syscalls, (unsigned long long)s.flushes);
	fprintf(fp, "</malloc>\n");
	return 0;
}

/* glibc's internal names, which some programs and libraries call directly */
void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
int __posix_memalign(void **out, size_t align, size_t size);
FORWARD(xpfo_malloc) void *__libc_malloc(size_t size);
FORWARD(xpfo_free) void __libc_free(void *p);
FORWARD(xpfo_calloc) void *__libc_calloc(size_t n, size_t size);
FORWARD(xpfo_realloc) void *__libc_realloc(void *p, size_t size);
FORWARD(xpfo_posix_memalign) int __posix_memalign(void **out, size_t align, size_t size);
EXPORT void *__libc_memalign(size_t align, size_t size) { return memalign(align, size); }
EXPORT void *__libc_valloc(size_t size) { return valloc(size); }
EXPORT void *__libc_pvalloc(size_t size) { return pvalloc(size); }

/* C++ sized delete (-fsized-deallocation, the default since C++14): the
 * size the program passes must be the size it allocated, as free_sized
 * checks.  libstdc++'s operator new calls malloc, so the block is ours. */
void _ZdlPvm(void *p, size_t size);
void _ZdaPvm(void *p, size_t size);
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align);
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align);
FORWARD(xpfo_free_sized) void _ZdlPvm(void *p, size_t size);
FORWARD(xpfo_free_sized) void _ZdaPvm(void *p, size_t size);
EXPORT void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	XPFO_ENTRY;
	free_aligned_sized(p, align, size);
}
EXPORT void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align)
{
	XPFO_ENTRY;
	free_aligned_sized(p, align, size);
}
