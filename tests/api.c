/* api.c - conformance of every function xpfo interposes.
 *
 * Checks alignment (aligned entry points up to 2 MiB), errno (ENOMEM for
 * overflowing and huge sizes, EINVAL for bad alignments, as glibc 2.36
 * does), zero sizes, NULL, realloc shrink/grow/move with contents kept,
 * malloc_usable_size >= the request (and writable up to it without touching
 * neighbours), calloc zeroing of reused memory, free keeping errno, and that
 * mallinfo2 / malloc_info describe xpfo's heap.  With xpfo present it also
 * checks that every interposed symbol resolves into libxpfo and every entry
 * point returns memory owned by the root compartment, and it runs itself a
 * second time with XPFO_OPTIONS=revoke=eager.
 *
 * Builds: tests/api (linked with libxpfo.la, xpfo required), tests/preload/api-plain
 * (not linked; run by tests/preload/api.sh under LD_PRELOAD with --require-xpfo,
 * and runnable alone to validate the checks against glibc).
 */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The checks look at blocks after a realloc that failed (still valid) and ask
 * xpfo_owner about blocks that were freed (no access): not use after free. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#ifndef TU_REQUIRE_XPFO
#define TU_REQUIRE_XPFO 0
#endif

/* Hide constants from the compiler so it neither folds nor warns. */
static size_t opaque(size_t x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}

static void *opaque_ptr(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

static size_t page;

static int is_aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

static size_t floor_pow2(size_t n)
{
	size_t a = 1;
	while (a * 2 <= n && a < 16)
		a *= 2;
	return a;
}

/* p must be a live allocation from xpfo's root compartment. */
static void check_owned(const void *p, const char *what, size_t n)
{
	if (!tu_x.present || !p)
		return;
	CHECK(tu_x.owner(p) == tu_x.root(),
	      "%s(%zu) = %p: xpfo_owner gives %p, not the root compartment %p",
	      what, n, p, (void *)tu_x.owner(p), (void *)tu_x.root());
	size_t u = malloc_usable_size((void *)p);
	if (u)
		CHECK(tu_x.owner((const char *)p + u - 1) == tu_x.root(),
		      "%s(%zu) = %p: last usable byte not owned by root", what,
		      n, p);
}

/* Common checks on a fresh block of n bytes aligned to align. */
static void check_block(void *p, size_t n, size_t align, const char *what)
{
	CHECK(p != NULL, "%s(%zu) returned NULL (errno %d)", what, n, errno);
	if (!p)
		return;
	CHECK(is_aligned(p, align), "%s(%zu) = %p not aligned to %zu", what, n,
	      p, align);
	size_t u = malloc_usable_size(p);
	CHECK(u >= n, "%s(%zu): malloc_usable_size %zu < request", what, n, u);
	check_owned(p, what, n);
	if (u > 64u << 20)
		u = n; /* don't touch far beyond the request */
	tu_fill(p, u, (uintptr_t)p);
	CHECK(tu_verify(p, u, (uintptr_t)p) == (size_t)-1,
	      "%s(%zu): block does not hold what was written", what, n);
}

static const size_t sizes[] = {
	1, 2, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64, 65, 96, 100,
	127, 128, 129, 200, 255, 256, 257, 500, 512, 513, 1000, 1024, 1025,
	2000, 2048, 2049, 3000, 4000, 4095, 4096, 4097, 6000, 8191, 8192, 8193,
	12288, 16383, 16384, 16385, 20000, 32768, 65535, 65536, 65537, 100000,
	131072, 262144, 500000, 1048576, 1048577, 3u << 20, 8u << 20,
};
#define NSIZES (sizeof sizes / sizeof sizes[0])

#ifdef TU_STATIC
/* linked statically with libxpfo.a (the QEMU guest): the entry points that
 * glibc's headers do not declare, referenced directly instead of dlsym */
#define TU_STATIC_BUILD 1
void free_sized(void *, size_t);
void free_aligned_sized(void *, size_t, size_t);
void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
#else
#define TU_STATIC_BUILD 0
#endif

/* ---- symbols ------------------------------------------------------------ */

static const char *const interposed[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray",
	"posix_memalign", "aligned_alloc", "memalign", "valloc", "pvalloc",
	"malloc_usable_size", "free_sized", "free_aligned_sized", "mallopt",
	"mallinfo2", "malloc_trim", "malloc_info",
	"__libc_malloc", "__libc_free", "__libc_calloc", "__libc_realloc",
	"__libc_memalign", "__libc_valloc", "__libc_pvalloc",
};

static void test_symbols(void)
{
	if (!tu_x.present)
		return;
#ifdef TU_STATIC
	/* linked statically with libxpfo.a (the QEMU guest): no dynamic
	 * symbols to look at; the static link itself took these from xpfo */
	fprintf(stderr, "note: static build: interposed symbols not checked with dlsym\n");
	return;
#endif
	for (size_t i = 0; i < sizeof interposed / sizeof interposed[0]; i++) {
		void *f = dlsym(RTLD_DEFAULT, interposed[i]);
		Dl_info info;

		CHECK(f != NULL, "symbol %s not found", interposed[i]);
		if (!f)
			continue;
		CHECK(dladdr(f, &info) && info.dli_fname &&
			      strstr(info.dli_fname, "libxpfo"),
		      "%s resolves to %s, not libxpfo", interposed[i],
		      dladdr(f, &info) && info.dli_fname ? info.dli_fname
							: "?");
	}
}

/* ---- malloc, free, malloc_usable_size ---------------------------------- */

static void test_malloc(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		size_t align = n >= 16 ? 16 : floor_pow2(n);
		void *p = malloc(opaque(n));
		check_block(p, n, align, "malloc");
		free(p);
	}

	/* Many blocks of each size, each written up to its usable size:
	 * neighbours must keep their contents. */
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		int count = n <= 65536 ? 64 : n <= (1u << 20) ? 8 : 2;
		void *v[64];
		for (int k = 0; k < count; k++) {
			v[k] = malloc(opaque(n));
			CHECK(v[k] != NULL, "malloc(%zu) #%d failed", n, k);
			if (!v[k])
				count = k;
			else
				tu_fill(v[k], malloc_usable_size(v[k]),
					(uintptr_t)v[k] ^ n);
		}
		for (int k = 0; k < count; k++) {
			size_t off = tu_verify(v[k], malloc_usable_size(v[k]),
					       (uintptr_t)v[k] ^ n);
			CHECK(off == (size_t)-1,
			      "malloc(%zu) #%d at %p: byte %zu overwritten (blocks overlap?)",
			      n, k, v[k], off);
		}
		for (int k = 0; k < count; k++)
			free(v[k]);
	}

	CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL) = %zu",
	      malloc_usable_size(NULL));
	free(NULL);

	/* A large block is writable throughout (sparse touch). */
	size_t big = 64u << 20;
	char *b = malloc(opaque(big));
	CHECK(b != NULL, "malloc(64 MiB) failed");
	if (b) {
		check_owned(b, "malloc", big);
		for (size_t off = 0; off < big; off += page)
			b[off] = (char)off;
		b[big - 1] = 1;
		for (size_t off = 0; off < big; off += page)
			if (b[off] != (char)off) {
				CHECK(0, "64 MiB block lost a write at %zu", off);
				break;
			}
		free(b);
	}
}

static void test_zero(void)
{
	void *a = malloc(opaque(0)), *b = malloc(opaque(0));
	CHECK(a && b, "malloc(0) returned NULL (glibc returns a unique pointer)");
	CHECK(!a || !b || a != b, "two malloc(0) returned the same pointer %p", a);
	check_owned(a, "malloc", 0);
	free(a);
	free(b);

	a = calloc(opaque(0), 8);
	CHECK(a != NULL, "calloc(0, 8) returned NULL");
	free(a);
	a = calloc(8, opaque(0));
	CHECK(a != NULL, "calloc(8, 0) returned NULL");
	free(a);
	a = calloc(opaque(0), 0);
	CHECK(a != NULL, "calloc(0, 0) returned NULL");
	free(a);

	a = realloc(NULL, opaque(0));
	CHECK(a != NULL, "realloc(NULL, 0) returned NULL (glibc: malloc(0))");
	free(a);

	a = reallocarray(NULL, opaque(0), 0);
	CHECK(a != NULL, "reallocarray(NULL, 0, 0) returned NULL");
	free(a);

	a = aligned_alloc(64, opaque(0));
	CHECK(a != NULL && is_aligned(a, 64), "aligned_alloc(64, 0) = %p", a);
	free(a);
	a = memalign(4096, opaque(0));
	CHECK(a != NULL && is_aligned(a, 4096), "memalign(4096, 0) = %p", a);
	free(a);
	a = NULL;
	int r = posix_memalign(&a, 64, opaque(0));
	CHECK(r == 0, "posix_memalign(64, 0) = %d", r);
	CHECK(!a || is_aligned(a, 64), "posix_memalign(64, 0) gave %p", a);
	free(a);
	a = valloc(opaque(0));
	CHECK(a != NULL && is_aligned(a, page), "valloc(0) = %p", a);
	free(a);
	a = pvalloc(opaque(0));
	CHECK(a != NULL && is_aligned(a, page), "pvalloc(0) = %p", a);
	free(a);

	/* realloc(p, 0) frees p; glibc returns NULL.  Either NULL (and p
	 * freed) or a valid pointer is accepted. */
	char *p = malloc(opaque(100000));
	CHECK(p != NULL, "malloc(100000)");
	void *q = realloc(p, opaque(0));
	if (q) {
		check_owned(q, "realloc(p, 0)", 0);
		free(q);
	} else if (tu_x.present) {
		CHECK(tu_x.owner(opaque_ptr(p)) == NULL,
		      "realloc(%p, 0) returned NULL but the block is still live",
		      (void *)p);
	}
}

/* ---- errno on failure --------------------------------------------------- */

#define EXPECT_ENOMEM(expr, what)                                          \
	do {                                                               \
		errno = 0;                                                 \
		void *r_ = (expr);                                         \
		int e_ = errno;                                            \
		CHECK(r_ == NULL, "%s succeeded (%p)", what, r_);           \
		CHECK(r_ != NULL || e_ == ENOMEM, "%s: errno %d (%s), not ENOMEM", \
		      what, e_, strerror(e_));                             \
		if (r_)                                                    \
			free(r_);                                          \
	} while (0)

static void test_enomem(void)
{
	size_t max = SIZE_MAX, half = SIZE_MAX / 2 + 1;
	size_t over = (size_t)PTRDIFF_MAX + 1;

	EXPECT_ENOMEM(malloc(opaque(max)), "malloc(SIZE_MAX)");
	EXPECT_ENOMEM(malloc(opaque(max - page)), "malloc(SIZE_MAX - page)");
	EXPECT_ENOMEM(malloc(opaque(over)), "malloc(PTRDIFF_MAX + 1)");
	EXPECT_ENOMEM(malloc(opaque((size_t)1 << 50)), "malloc(1 PiB)");
	EXPECT_ENOMEM(calloc(opaque(half), 2), "calloc(SIZE_MAX/2+1, 2)");
	EXPECT_ENOMEM(calloc(opaque((size_t)1 << 33), (size_t)1 << 33),
		      "calloc(2^33, 2^33)");
	EXPECT_ENOMEM(calloc(opaque(3), max / 2), "calloc(3, SIZE_MAX/2)");
	EXPECT_ENOMEM(calloc(opaque(1), opaque(max)), "calloc(1, SIZE_MAX)");
	EXPECT_ENOMEM(realloc(NULL, opaque(max)), "realloc(NULL, SIZE_MAX)");
	EXPECT_ENOMEM(reallocarray(NULL, opaque(half), 2),
		      "reallocarray(NULL, SIZE_MAX/2+1, 2)");
	EXPECT_ENOMEM(reallocarray(NULL, opaque((size_t)1 << 40), (size_t)1 << 30),
		      "reallocarray(NULL, 2^40, 2^30)");
	EXPECT_ENOMEM(aligned_alloc(64, opaque(max)), "aligned_alloc(64, SIZE_MAX)");
	EXPECT_ENOMEM(aligned_alloc(1u << 20, opaque(max - (1u << 20))),
		      "aligned_alloc(1 MiB, SIZE_MAX - 1 MiB)");
	EXPECT_ENOMEM(memalign(4096, opaque(over)), "memalign(4096, PTRDIFF_MAX+1)");
	EXPECT_ENOMEM(valloc(opaque(max)), "valloc(SIZE_MAX)");
	EXPECT_ENOMEM(pvalloc(opaque(max)), "pvalloc(SIZE_MAX)");
	EXPECT_ENOMEM(pvalloc(opaque(max - page + 2)), "pvalloc(SIZE_MAX-page+2) (rounding overflows)");

	void *p = (void *)1;
	int r = posix_memalign(&p, 64, opaque(max));
	CHECK(r == ENOMEM, "posix_memalign(64, SIZE_MAX) = %d, not ENOMEM", r);
	CHECK(p == (void *)1, "posix_memalign changed *memptr on failure");
	r = posix_memalign(&p, 1u << 20, opaque(over));
	CHECK(r == ENOMEM, "posix_memalign(1 MiB, PTRDIFF_MAX+1) = %d", r);

	/* A failed realloc / reallocarray leaves the block alone. */
	char *q = malloc(opaque(1000));
	CHECK(q != NULL, "malloc(1000)");
	tu_fill(q, 1000, 7);
	EXPECT_ENOMEM(realloc(q, opaque(max)), "realloc(p, SIZE_MAX)");
	EXPECT_ENOMEM(realloc(q, opaque(over)), "realloc(p, PTRDIFF_MAX+1)");
	EXPECT_ENOMEM(reallocarray(q, opaque(half), 4), "reallocarray(p, SIZE_MAX/2+1, 4)");
	q = opaque_ptr(q);
	CHECK(tu_verify(q, 1000, 7) == (size_t)-1,
	      "failed realloc changed the original block");
	check_owned(q, "malloc (after failed reallocs)", 1000);
	free(q);

	/* A large block too. */
	q = malloc(opaque(1u << 20));
	CHECK(q != NULL, "malloc(1 MiB)");
	tu_fill(q, 1u << 20, 8);
	EXPECT_ENOMEM(realloc(q, opaque((size_t)1 << 50)), "realloc(1 MiB block, 1 PiB)");
	q = opaque_ptr(q);
	CHECK(tu_verify(q, 1u << 20, 8) == (size_t)-1,
	      "failed realloc changed the original 1 MiB block");
	free(q);
}

/* ---- calloc ------------------------------------------------------------- */

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

static void test_calloc(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		/* Dirty blocks of this size, free them, then calloc: the
		 * allocator is likely to hand the same memory back. */
		void *v[16];
		int count = n <= 65536 ? 16 : 2;
		for (int k = 0; k < count; k++) {
			v[k] = malloc(opaque(n));
			if (v[k])
				memset(v[k], 0xa5, malloc_usable_size(v[k]));
		}
		for (int k = 0; k < count; k++)
			free(v[k]);
		for (int k = 0; k < count; k++) {
			v[k] = calloc(1, opaque(n));
			CHECK(v[k] != NULL, "calloc(1, %zu) failed", n);
			if (!v[k])
				continue;
			CHECK(all_zero(v[k], n), "calloc(1, %zu) = %p not zeroed",
			      n, v[k]);
			check_owned(v[k], "calloc", n);
			CHECK(n < 16 || is_aligned(v[k], 16),
			      "calloc(1, %zu) = %p not 16-aligned", n, v[k]);
			CHECK(malloc_usable_size(v[k]) >= n,
			      "calloc(1, %zu): usable size %zu", n,
			      malloc_usable_size(v[k]));
		}
		for (int k = 0; k < count; k++)
			free(v[k]);
	}
	/* n * size split both ways */
	char *p = calloc(opaque(1000), 1000);
	CHECK(p && all_zero(p, 1000000), "calloc(1000, 1000)");
	free(p);
	p = calloc(opaque(3), 5);
	CHECK(p && all_zero(p, 15) && malloc_usable_size(p) >= 15, "calloc(3, 5)");
	free(p);
}

/* ---- realloc ------------------------------------------------------------ */

static const size_t rsizes[] = {
	1, 8, 15, 16, 24, 100, 512, 4000, 4096, 8192, 16384, 16385, 65536,
	200000, 1u << 20, 3u << 20,
};
#define NRSIZES (sizeof rsizes / sizeof rsizes[0])

static void test_realloc(void)
{
	for (size_t i = 0; i < NRSIZES; i++) {
		for (size_t j = 0; j < NRSIZES; j++) {
			size_t a = rsizes[i], b = rsizes[j];
			uint64_t seed = a * 1000003 + b;
			char *p = malloc(opaque(a));
			CHECK(p != NULL, "malloc(%zu)", a);
			if (!p)
				continue;
			tu_fill(p, a, seed);
			char *q = realloc(p, opaque(b));
			CHECK(q != NULL, "realloc(%zu -> %zu) failed", a, b);
			if (!q) {
				free(p);
				continue;
			}
			size_t keep = a < b ? a : b;
			size_t off = tu_verify(q, keep, seed);
			CHECK(off == (size_t)-1,
			      "realloc(%zu -> %zu): byte %zu not preserved (%p -> %p)",
			      a, b, off, (void *)p, (void *)q);
			CHECK(malloc_usable_size(q) >= b,
			      "realloc(%zu -> %zu): usable size %zu", a, b,
			      malloc_usable_size(q));
			CHECK(b < 16 || is_aligned(q, 16),
			      "realloc(%zu -> %zu) = %p not 16-aligned", a, b,
			      (void *)q);
			check_owned(q, "realloc", b);
			if (tu_x.present && q != p && a >= 65536)
				CHECK(tu_x.owner(opaque_ptr(p)) == NULL,
				      "realloc(%zu -> %zu) moved %p -> %p but the old block is still live",
				      a, b, (void *)p, (void *)q);
			/* the new tail is writable */
			memset(q + keep, 0x5a, malloc_usable_size(q) - keep);
			free(q);
		}
	}

	/* A chain of growth by small steps keeps everything (the common
	 * string-builder pattern, which should often be in place). */
	char *s = NULL;
	size_t len = 0;
	for (int k = 0; k < 3000; k++) {
		size_t nl = len + 1 + (size_t)k % 700;
		char *t = realloc(s, opaque(nl));
		CHECK(t != NULL, "realloc chain step %d", k);
		if (!t)
			break;
		for (size_t x = len; x < nl; x++)
			t[x] = (char)(x * 131 + 7);
		s = t;
		len = nl;
	}
	for (size_t x = 0; x < len; x++)
		if (s[x] != (char)(x * 131 + 7)) {
			CHECK(0, "realloc chain lost byte %zu of %zu", x, len);
			break;
		}
	/* and shrink back down in steps */
	while (len > 1) {
		len = len / 3;
		if (!len)
			len = 1;
		char *t = realloc(s, opaque(len));
		CHECK(t != NULL, "shrinking realloc to %zu", len);
		if (!t)
			break;
		s = t;
		for (size_t x = 0; x < len; x++)
			if (s[x] != (char)(x * 131 + 7)) {
				CHECK(0, "shrinking realloc to %zu lost byte %zu",
				      len, x);
				break;
			}
	}
	free(s);

	/* realloc keeps a block that does not move usable from the start */
	char *p = malloc(opaque(1u << 20));
	tu_fill(p, 1u << 20, 99);
	char *q = realloc(p, opaque(1u << 20));
	CHECK(q && tu_verify(q, 1u << 20, 99) == (size_t)-1, "realloc same size");
	free(q);

	/* reallocarray */
	int *arr = reallocarray(NULL, opaque(100), sizeof(int));
	CHECK(arr != NULL, "reallocarray(NULL, 100, 4)");
	for (int k = 0; k < 100; k++)
		arr[k] = k * k;
	int *arr2 = reallocarray(arr, opaque(100000), sizeof(int));
	CHECK(arr2 != NULL, "reallocarray(p, 100000, 4)");
	if (arr2) {
		for (int k = 0; k < 100; k++)
			if (arr2[k] != k * k) {
				CHECK(0, "reallocarray lost element %d", k);
				break;
			}
		check_owned(arr2, "reallocarray", 400000);
		CHECK(malloc_usable_size(arr2) >= 400000, "reallocarray usable");
		arr = arr2;
	}
	free(arr);
}

/* ---- aligned entry points ------------------------------------------------ */

static void test_aligned(void)
{
	for (size_t align = 1; align <= (2u << 20); align *= 2) {
		size_t asz[] = { 1, 8, align > 1 ? align - 1 : 1, align,
				 align + 1, align * 3 / 2 + 1, 100000, 3 * align };
		for (size_t k = 0; k < sizeof asz / sizeof asz[0]; k++) {
			size_t n = asz[k];
			char what[64];
			void *p;

			p = aligned_alloc(align, opaque(n));
			snprintf(what, sizeof what, "aligned_alloc(%zu, .)", align);
			check_block(p, n, align, what);
			free(p);

			p = memalign(align, opaque(n));
			snprintf(what, sizeof what, "memalign(%zu, .)", align);
			check_block(p, n, align, what);
			free(p);

			if (align >= sizeof(void *)) {
				p = NULL;
				int r = posix_memalign(&p, align, opaque(n));
				snprintf(what, sizeof what,
					 "posix_memalign(%zu, .)", align);
				CHECK(r == 0, "%s(%zu) returned %d", what, n, r);
				check_block(p, n, align, what);
				free(p);
			}
		}
	}

	/* Several aligned blocks at once must not overlap. */
	void *v[8];
	for (int k = 0; k < 8; k++) {
		v[k] = aligned_alloc(1u << 20, opaque(5000));
		CHECK(v[k] && is_aligned(v[k], 1u << 20), "aligned_alloc(1 MiB, 5000) #%d", k);
		if (v[k])
			tu_fill(v[k], 5000, (uintptr_t)v[k]);
	}
	for (int k = 0; k < 8; k++) {
		CHECK(!v[k] || tu_verify(v[k], 5000, (uintptr_t)v[k]) == (size_t)-1,
		      "aligned block %d overwritten", k);
		free(v[k]);
	}

	/* posix_memalign: EINVAL for alignments that are not a power of two
	 * multiple of sizeof(void *); *memptr untouched. */
	size_t bad[] = { 0, 1, 2, 4, 3, 12, 24, 48, 100, 4097, (size_t)3 << 20,
			 SIZE_MAX };
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		void *p = (void *)2;
		int e = errno = 1234;
		int r = posix_memalign(&p, opaque(bad[k]), 64);
		CHECK(r == EINVAL, "posix_memalign(align %zu) = %d, not EINVAL",
		      bad[k], r);
		CHECK(p == (void *)2, "posix_memalign(align %zu) changed *memptr",
		      bad[k]);
		CHECK(errno == e, "posix_memalign(align %zu) changed errno to %d",
		      bad[k], errno);
		if (r == 0)
			free(p);
	}

	/* aligned_alloc / memalign with an alignment that is not a power of
	 * two: glibc 2.36 rounds it up to one, newer glibc and C17 fail with
	 * EINVAL.  Accept both, nothing else. */
	size_t odd[] = { 3, 24, 48, 100, 4097, 3u << 20 };
	for (size_t k = 0; k < sizeof odd / sizeof odd[0]; k++) {
		size_t a = odd[k], up = 1;
		while (up < a)
			up *= 2;
		void *(*fns[2])(size_t, size_t) = { aligned_alloc, memalign };
		const char *names[2] = { "aligned_alloc", "memalign" };
		for (int f = 0; f < 2; f++) {
			errno = 0;
			void *p = fns[f](opaque(a), 100);
			if (p) {
				CHECK(is_aligned(p, up),
				      "%s(%zu, 100) = %p: not aligned to %zu",
				      names[f], a, p, up);
				CHECK(malloc_usable_size(p) >= 100, "%s(%zu) usable",
				      names[f], a);
				free(p);
			} else {
				CHECK(errno == EINVAL,
				      "%s(%zu, 100) = NULL with errno %d, not EINVAL",
				      names[f], a, errno);
			}
		}
	}
	/* Alignments beyond half the address space: EINVAL (glibc). */
	errno = 0;
	void *p = memalign(opaque(SIZE_MAX / 2 + 2), 10);
	CHECK(p == NULL && errno == EINVAL, "memalign(SIZE_MAX/2+2, 10) = %p errno %d",
	      p, errno);
	errno = 0;
	p = aligned_alloc(opaque(SIZE_MAX / 2 + 1), 10);
	CHECK(p == NULL && (errno == EINVAL || errno == ENOMEM),
	      "aligned_alloc(2^63, 10) = %p errno %d", p, errno);

	/* valloc, pvalloc */
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		void *q = valloc(opaque(n));
		check_block(q, n, page, "valloc");
		free(q);
		q = pvalloc(opaque(n));
		check_block(q, n, page, "pvalloc");
		size_t rounded = (n + page - 1) & ~(page - 1);
		CHECK(!q || malloc_usable_size(q) >= rounded,
		      "pvalloc(%zu): usable %zu < %zu (whole pages)", n,
		      malloc_usable_size(q), rounded);
		free(q);
	}
}

/* ---- free keeps errno, free_sized, free_aligned_sized -------------------- */

static void test_free_errno(void)
{
	for (size_t i = 0; i < NSIZES; i++) {
		void *p = malloc(opaque(sizes[i]));
		errno = EDOM;
		free(p);
		CHECK(errno == EDOM, "free of a %zu-byte block changed errno to %d",
		      sizes[i], errno);
	}
	/* many frees in a row (gathers fill and flush) */
	void **v = malloc(2000 * sizeof *v);
	for (int k = 0; k < 2000; k++)
		v[k] = malloc(opaque(k % 2 ? 4096 : 70000));
	for (int k = 0; k < 2000; k++) {
		errno = ERANGE;
		free(v[k]);
		if (errno != ERANGE) {
			CHECK(0, "free #%d changed errno to %d", k, errno);
			break;
		}
	}
	free(v);
	void *a = aligned_alloc(1u << 20, opaque(3u << 20));
	errno = EDOM;
	free(a);
	CHECK(errno == EDOM, "free of an aligned block changed errno");
	errno = EDOM;
	free(NULL);
	CHECK(errno == EDOM, "free(NULL) changed errno");
	if (tu_x.present) {
		errno = EDOM;
		tu_x.flush();
		/* xpfo_flush may set errno only on failure (-1) */
	}
}

/* Every (size, align) pair the allocator served is accepted back by the
 * sized frees: a size of 0 with an alignment above a page is served a
 * one-page run, and free_aligned_sized must take that back. */
struct sized_fns {
	void (*fs)(void *, size_t);
	void (*fas)(void *, size_t, size_t);
};

static int sized_roundtrip(void *arg)
{
	const struct sized_fns *f = arg;
	for (size_t align = 1; align <= ((size_t)2 << 20); align *= 2)
		for (size_t i = 0; i <= NSIZES; i++) {
			size_t n = i ? sizes[i - 1] : 0;
			if (n > ((size_t)1 << 20) && align > 4096)
				continue; /* keeps the loop quick */
			void *p = aligned_alloc(align, opaque(n));
			if (!p)
				return 2;
			f->fas(p, align, n);
			if (align == 1) {
				p = malloc(opaque(n));
				f->fs(p, n);
			}
		}
	return 0;
}

static void test_sized_roundtrip(const struct sized_fns *f)
{
	struct tu_child c;
	if (tu_run_child(sized_roundtrip, (void *)f, 120, &c) != 0)
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0,
	      "free_aligned_sized(aligned_alloc(a, s), a, s) / free_sized(malloc(s), s): %s: %s",
	      tu_status_str(c.status), c.err);
}

static void test_free_sized(void)
{
#ifdef TU_STATIC
	void (*fs)(void *, size_t) = free_sized;
	void (*fas)(void *, size_t, size_t) = free_aligned_sized;
#else
	void (*fs)(void *, size_t) =
		(void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
	void (*fas)(void *, size_t, size_t) = (void (*)(void *, size_t, size_t))
		dlsym(RTLD_DEFAULT, "free_aligned_sized");
#endif

	if (!fs || !fas) {
		CHECK(!tu_x.present, "xpfo present but free_sized/free_aligned_sized missing");
		fprintf(stderr, "note: no free_sized in this libc; skipped\n");
		return;
	}
	for (size_t i = 0; i < NSIZES; i++) {
		size_t n = sizes[i];
		char *p = malloc(opaque(n));
		CHECK(p != NULL, "malloc(%zu)", n);
		tu_fill(p, n, 3);
		errno = EDOM;
		fs(p, n);
		CHECK(errno == EDOM, "free_sized changed errno");
		if (tu_x.present && n > 16384)
			CHECK(tu_x.owner(opaque_ptr(p)) == NULL,
			      "free_sized(%p, %zu): block still live", (void *)p, n);
		p = calloc(opaque(n), 1);
		fs(p, n);
	}
	for (size_t align = 8; align <= (1u << 20); align *= 4) {
		size_t n = align + 100;
		void *p = aligned_alloc(align, opaque(n));
		CHECK(p && is_aligned(p, align), "aligned_alloc(%zu, %zu)", align, n);
		errno = EDOM;
		fas(p, align, n);
		CHECK(errno == EDOM, "free_aligned_sized changed errno");
		if (tu_x.present && n > 16384)
			CHECK(tu_x.owner(opaque_ptr(p)) == NULL,
			      "free_aligned_sized(%p): block still live", p);
	}
	fs(NULL, 0);
	fs(NULL, 100);
	fas(NULL, 64, 0);
	test_sized_roundtrip(&(struct sized_fns){ fs, fas });
}

/* ---- mallinfo2, malloc_info, mallopt, malloc_trim ----------------------- */

static size_t in_use(const struct mallinfo2 *m)
{
	return m->uordblks + m->hblkhd;
}

static void test_info(void)
{
	enum { N = 64, SZ = 65536 };
	void *v[N];
	struct mallinfo2 m0 = mallinfo2();

	for (int k = 0; k < N; k++) {
		v[k] = malloc(opaque(SZ));
		memset(v[k], 1, SZ);
	}
	struct mallinfo2 m1 = mallinfo2();
	CHECK(in_use(&m1) >= in_use(&m0) + (size_t)N * SZ,
	      "mallinfo2: uordblks+hblkhd grew by %zd after allocating %d bytes "
	      "(not an honest answer about this heap)",
	      (ssize_t)(in_use(&m1) - in_use(&m0)), N * SZ);
	for (int k = 0; k < N; k++)
		free(v[k]);
	struct mallinfo2 m2 = mallinfo2();
	CHECK(in_use(&m2) + (size_t)N * SZ <= in_use(&m1),
	      "mallinfo2: uordblks+hblkhd fell by %zd after freeing %d bytes",
	      (ssize_t)(in_use(&m1) - in_use(&m2)), N * SZ);
	CHECK(m1.arena + m1.hblkhd >= m1.uordblks,
	      "mallinfo2: arena+hblkhd %zu < uordblks %zu",
	      m1.arena + m1.hblkhd, m1.uordblks);

	if (tu_x.present) {
		/* xpfo's answer: uordblks is the live bytes of its heap, the
		 * same number xpfo_stats_get gives (nothing allocates between
		 * the two calls). */
		struct xpfo_stats st;
		char *hold = opaque_ptr(malloc(opaque(1u << 20)));
		CHECK(hold != NULL, "malloc(1 MiB)");
		hold[0] = 1;
		tu_stats(&st);
		struct mallinfo2 m = mallinfo2();
		CHECK(m.uordblks == st.live_bytes,
		      "mallinfo2 uordblks %zu, xpfo live_bytes %llu", m.uordblks,
		      (unsigned long long)st.live_bytes);
		CHECK(st.live_bytes >= (1u << 20), "xpfo live_bytes %llu with a "
		      "1 MiB block live", (unsigned long long)st.live_bytes);
		CHECK(m1.uordblks >= m0.uordblks + (size_t)N * SZ,
		      "mallinfo2 uordblks grew by %zd after allocating %d bytes",
		      (ssize_t)(m1.uordblks - m0.uordblks), N * SZ);
		CHECK(m.arena >= m.uordblks, "mallinfo2 arena %zu < uordblks %zu",
		      m.arena, m.uordblks);
		free(hold);
	}

	/* malloc_info writes XML describing the heap. */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	CHECK(f != NULL, "open_memstream");
	if (f) {
		int r = malloc_info(0, f);
		fclose(f);
		CHECK(r == 0, "malloc_info(0, f) = %d", r);
		CHECK(buf && len > 0 && strncmp(buf, "<malloc", 7) == 0,
		      "malloc_info output does not start with <malloc: \"%.60s\"",
		      buf ? buf : "");
		if (tu_x.present)
			CHECK(buf && strstr(buf, "xpfo"),
			      "malloc_info does not describe xpfo: \"%.200s\"",
			      buf ? buf : "");
		free(buf);
	}
	f = fopen("/dev/null", "w");
	if (f) {
		errno = 0;
		int r = malloc_info(1, f);
		/* glibc returns EINVAL itself; the manual says -1 and errno. */
		CHECK(r == EINVAL || (r == -1 && errno == EINVAL),
		      "malloc_info(1, f) = %d errno %d, not EINVAL", r, errno);
		fclose(f);
	}

	int r = mallopt(M_TRIM_THRESHOLD, 256 * 1024);
	CHECK(r == 0 || r == 1, "mallopt(M_TRIM_THRESHOLD) = %d", r);
	r = mallopt(M_ARENA_MAX, 4);
	CHECK(r == 0 || r == 1, "mallopt(M_ARENA_MAX) = %d", r);
	r = mallopt((int)opaque(98765), 1);
	CHECK(r == 0 || r == 1, "mallopt(unknown parameter) = %d", r);

	for (int k = 0; k < N; k++)
		v[k] = malloc(opaque(SZ * (k % 3 + 1)));
	for (int k = 0; k < N; k++)
		free(v[k]);
	r = malloc_trim(0);
	CHECK(r == 0 || r == 1, "malloc_trim(0) = %d", r);
	r = malloc_trim(1u << 20);
	CHECK(r == 0 || r == 1, "malloc_trim(1 MiB) = %d", r);
	void *p = malloc(opaque(SZ));
	CHECK(p != NULL, "malloc after malloc_trim");
	memset(p, 2, SZ);
	free(p);
}

/* ---- __libc_* aliases --------------------------------------------------- */

static void test_libc_aliases(void)
{
#ifdef TU_STATIC
	void *(*lm)(size_t) = __libc_malloc;
	void (*lf)(void *) = __libc_free;
	void *(*lc)(size_t, size_t) = __libc_calloc;
	void *(*lr)(void *, size_t) = __libc_realloc;
	void *(*lma)(size_t, size_t) = __libc_memalign;
	void *(*lv)(size_t) = __libc_valloc;
	void *(*lpv)(size_t) = __libc_pvalloc;
#else
	void *(*lm)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_malloc");
	void (*lf)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "__libc_free");
	void *(*lc)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "__libc_calloc");
	void *(*lr)(void *, size_t) =
		(void *(*)(void *, size_t))dlsym(RTLD_DEFAULT, "__libc_realloc");
	void *(*lma)(size_t, size_t) =
		(void *(*)(size_t, size_t))dlsym(RTLD_DEFAULT, "__libc_memalign");
	void *(*lv)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_valloc");
	void *(*lpv)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "__libc_pvalloc");

#endif
	if (!lm || !lf || !lc || !lr || !lma || !lv || !lpv) {
		CHECK(0, "a __libc_* allocation symbol is missing");
		return;
	}
	for (size_t i = 0; i < NSIZES; i += 3) {
		size_t n = sizes[i];
		char *p = lm(opaque(n));
		check_block(p, n, n >= 16 ? 16 : floor_pow2(n), "__libc_malloc");
		free(p);                      /* cross: __libc_malloc -> free */
		p = malloc(opaque(n));
		lf(p);                        /* cross: malloc -> __libc_free */
		p = lc(opaque(n), 1);
		CHECK(p && all_zero(p, n), "__libc_calloc(%zu, 1)", n);
		check_owned(p, "__libc_calloc", n);
		tu_fill(p, n, 5);
		char *q = lr(p, opaque(n * 2 + 1));
		CHECK(q && tu_verify(q, n, 5) == (size_t)-1, "__libc_realloc(%zu)", n);
		check_owned(q, "__libc_realloc", n * 2 + 1);
		lf(q);
		p = lma(4096, opaque(n));
		check_block(p, n, 4096, "__libc_memalign");
		lf(p);
		p = lv(opaque(n));
		check_block(p, n, page, "__libc_valloc");
		lf(p);
		p = lpv(opaque(n));
		check_block(p, n, page, "__libc_pvalloc");
		lf(p);
	}
	errno = 0;
	CHECK(lm(opaque(SIZE_MAX)) == NULL && errno == ENOMEM,
	      "__libc_malloc(SIZE_MAX): errno %d", errno);
	errno = 0;
	CHECK(lc(opaque(SIZE_MAX / 2 + 1), 2) == NULL && errno == ENOMEM,
	      "__libc_calloc overflow: errno %d", errno);
	if (tu_x.present && !TU_STATIC_BUILD) {
		const char *opt[] = { "__libc_mallinfo", "__libc_mallopt" };
		for (int k = 0; k < 2; k++) {
			Dl_info info;
			void *f = dlsym(RTLD_DEFAULT, opt[k]);
			if (f && dladdr(f, &info) && info.dli_fname &&
			    !strstr(info.dli_fname, "libxpfo"))
				fprintf(stderr, "note: %s still resolves to %s\n",
					opt[k], info.dli_fname);
		}
	}
}

/* ---- driver --------------------------------------------------------------- */

static int run_eager_pass(void)
{
	char *argv[] = { "/proc/self/exe", "--require-xpfo", "--single-pass", NULL };
	/* the same options otherwise (the backend, in the QEMU guest) */
	const char *o = getenv("XPFO_OPTIONS");
	char opt[512];
	snprintf(opt, sizeof opt, "XPFO_OPTIONS=%s%srevoke=eager", o ? o : "", o && *o ? "," : "");
	const char *env[] = { opt, NULL };
	struct tu_child c;

	if (tu_run_cmd(argv, env, 300, &c) != 0)
		tu_hard_error("cannot re-run with revoke=eager");
	fprintf(stderr, "---- pass with %s ----\n%s%s"
			"---- end of that pass: %s ----\n",
		opt, c.out, c.err, tu_status_str(c.status));
	return WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
}

int main(int argc, char **argv)
{
	int require = TU_REQUIRE_XPFO || tu_has_arg(argc, argv, "--require-xpfo");
	tu_prog = "api";
	tu_timeout(300);
	page = (size_t)sysconf(_SC_PAGESIZE);
	tu_xpfo_init(require);

	test_symbols();
	test_malloc();
	test_zero();
	test_enomem();
	test_calloc();
	test_realloc();
	test_aligned();
	test_free_errno();
	test_free_sized();
	test_info();
	test_libc_aliases();

	if (tu_x.present && !tu_has_arg(argc, argv, "--single-pass")) {
		const char *o = getenv("XPFO_OPTIONS");
		if (!o || !strstr(o, "revoke="))
			CHECK(run_eager_pass(), "the revoke=eager pass failed");
	}
	tu_exit();
}
