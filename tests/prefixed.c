/* prefixed.c - the xpfo_-prefixed allocation API (xpfo_malloc, xpfo_free,
 * ...), and that it lives beside the program's own malloc.
 *
 * In a --disable-override build (TU_OVERRIDE=0) libxpfo defines no libc
 * name: a block from xpfo_malloc is in xpfo's heap (xpfo_owner answers),
 * one from plain malloc is glibc's (xpfo_owner says NULL), and each is freed
 * by its own free.  In the normal build (TU_OVERRIDE=1) plain malloc is
 * xpfo's too, and the prefixed functions must behave the same.  Both builds
 * check each prefixed function's semantics: contents, usable size, errno,
 * alignment, realloc(NULL)/realloc(p, 0), calloc zeroing and overflow. */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#ifndef TU_OVERRIDE
#error "TU_OVERRIDE must say whether libxpfo defines malloc"
#endif

static size_t opaque(size_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}

static void check_beside_libc(void)
{
	char *ours = xpfo_malloc(100);
	char *theirs = malloc(100);
	CHECK(ours && theirs, "allocation failed");
	memset(ours, 'x', 100);
	memset(theirs, 'g', 100);
	CHECK(xpfo_owner(ours) == xpfo_root(), "xpfo_malloc: owner %p, not root",
	      (void *)xpfo_owner(ours));
	if (TU_OVERRIDE)
		CHECK(xpfo_owner(theirs) == xpfo_root(), "malloc is xpfo's here: owner %p",
		      (void *)xpfo_owner(theirs));
	else
		CHECK(xpfo_owner(theirs) == NULL, "malloc must be glibc's: owner %p",
		      (void *)xpfo_owner(theirs));
	CHECK(ours[99] == 'x' && theirs[99] == 'g', "contents lost");
	xpfo_free(ours);
	free(theirs);
}

static void check_realloc_calloc(void)
{
	char *p = xpfo_realloc(NULL, 50);
	CHECK(p && xpfo_owner(p), "realloc(NULL) is malloc");
	memset(p, 7, 50);
	p = xpfo_realloc(p, 100000);
	CHECK(p && p[0] == 7 && p[49] == 7, "realloc lost contents");
	CHECK(xpfo_usable_size(p) >= 100000, "usable %zu", xpfo_usable_size(p));
	errno = 0;
	CHECK(xpfo_realloc(p, 0) == NULL, "realloc(p, 0) frees, returns NULL");
	unsigned char *z = xpfo_calloc(1000, 3);
	CHECK(z && xpfo_usable_size(z) >= 3000, "calloc");
	for (size_t i = 0; z && i < 3000; i++)
		if (z[i]) {
			CHECK(0, "calloc byte %zu not zero", i);
			break;
		}
	xpfo_free_sized(z, 3000);
	errno = 0;
	CHECK(!xpfo_calloc(opaque(SIZE_MAX / 2), 3) && errno == ENOMEM, "calloc overflow: ENOMEM");
	errno = 0;
	CHECK(!xpfo_malloc(opaque(SIZE_MAX - 8)) && errno == ENOMEM, "malloc huge: ENOMEM");
	CHECK(xpfo_usable_size(NULL) == 0, "usable_size(NULL)");
	xpfo_free(NULL);
	xpfo_free_sized(NULL, 8);
}

static void check_aligned(void)
{
	for (size_t a = 8; a <= (2u << 20); a <<= 3) {
		void *p = xpfo_aligned_alloc(a, 24);
		CHECK(p && ((uintptr_t)p & (a - 1)) == 0, "aligned_alloc(%zu) = %p", a, p);
		xpfo_free(p);
		void *q = NULL;
		CHECK(xpfo_posix_memalign(&q, a, 5000) == 0 && q && ((uintptr_t)q & (a - 1)) == 0,
		      "posix_memalign(%zu) = %p", a, q);
		xpfo_free(q);
	}
	errno = 0;
	CHECK(!xpfo_aligned_alloc(opaque(24), 8) && errno == EINVAL, "aligned_alloc(24): EINVAL");
	void *q = (void *)1;
	errno = 1234;
	CHECK(xpfo_posix_memalign(&q, opaque(4), 8) == EINVAL && q == (void *)1 && errno == 1234,
	      "posix_memalign(4): EINVAL, *out and errno unchanged");
	CHECK(xpfo_posix_memalign(&q, (size_t)1 << 62, 8) == ENOMEM && errno == 1234,
	      "posix_memalign(2^62): ENOMEM, errno unchanged");
}

int main(void)
{
	tu_prog = "prefixed";
	tu_timeout(60);
	check_beside_libc();
	check_realloc_calloc();
	check_aligned();
	tu_exit();
}
