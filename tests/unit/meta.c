/* meta.c - unit test of the metadata pool (alloc/meta.c), built from its
 * own sources (tests/local.mk): no heap, only the pool.
 *
 * A thread state is about 130 KiB, most of it a gather a thread fills only
 * as far as it queues (issue 11: RSS).  A big block taken fresh from the
 * pool is not cleared (its pages read zero until written) and so stays
 * mostly non-resident; freed, its whole pages are purged, and the next
 * block of that size reuses it, all zero, still mostly non-resident.
 * Residency is read with mincore; the block's bytes with plain reads.
 * Small blocks are cleared on reuse as before.
 */
#include "alloc.h"
#include "testutil.h"

#include <string.h>
#include <sys/mman.h>

#define BIG (130u << 10)

/* pages of [p, p + n) resident now */
static size_t resident(const void *p, size_t n)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(PAGE_SIZE - 1);
	size_t np = ((uintptr_t)p + n - lo + PAGE_SIZE - 1) / PAGE_SIZE, k = 0;
	unsigned char v[64];
	if (np > sizeof v || mincore((void *)lo, np * PAGE_SIZE, v))
		tu_hard_error("mincore");
	for (size_t i = 0; i < np; i++)
		k += v[i] & 1;
	return k;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Past META_KEEP_RESIDENT freed big blocks, the next ones freed are
 * purged (their whole pages), and taken again they read zero and are not
 * made resident. */
static void keep_bound(void)
{
	enum { N = META_KEEP_RESIDENT + 4 };
	unsigned char *m[N];
	for (int i = 0; i < N; i++) {
		m[i] = meta_alloc(BIG);
		if (!m[i])
			tu_hard_error("meta_alloc of a big block");
		memset(m[i], 0xa5, BIG);
	}
	int kept = 0, purged = 0;
	for (int i = 0; i < N; i++) {
		meta_free(m[i], BIG);
		size_t r = resident(m[i], BIG);
		kept += r >= BIG / PAGE_SIZE;
		purged += r <= 2;
	}
	CHECK(kept == META_KEEP_RESIDENT && purged == N - META_KEEP_RESIDENT,
	      "%d blocks freed: %d stayed resident, %d purged (want %d and %d)", N, kept, purged,
	      META_KEEP_RESIDENT, N - META_KEEP_RESIDENT);
	unsigned char *c = meta_alloc(BIG); /* the last freed: a purged one */
	size_t r = c ? resident(c, BIG) : 0;
	CHECK(c == m[N - 1] && r <= 2, "a purged block taken again is not made resident: %zu", r);
	CHECK(c && all_zero(c, BIG), "a purged block taken again reads zero");
	meta_free(c, BIG);
}

int main(void)
{
	tu_prog = "unit/meta";
	heap_nsegs = 4;
	if (meta_init())
		tu_hard_error("meta_init");
	/* residency first: a read of an untouched page maps the zero page,
	 * which mincore counts */
	unsigned char *a = meta_alloc(BIG);
	size_t r = a ? resident(a, BIG) : 0;
	CHECK(a && r <= 2, "a fresh big block is not made resident: %zu of %zu pages", r,
	      (size_t)(BIG / PAGE_SIZE));
	CHECK(a && all_zero(a, BIG), "a fresh big block reads zero");
	memset(a, 0xa5, BIG);
	CHECK(resident(a, BIG) >= BIG / PAGE_SIZE, "written, it is resident");
	meta_free(a, BIG);
	r = resident(a, BIG);
	CHECK(r >= BIG / PAGE_SIZE, "freed, it stays resident for the next taker: %zu resident", r);
	unsigned char *b = meta_alloc(BIG);
	CHECK(b == a, "the next block of that size reuses it");
	CHECK(b && all_zero(b, BIG), "reused, it reads zero (cleared)");
	meta_free(b, BIG);
	keep_bound();
	unsigned char *s = meta_alloc(256);
	memset(s, 0x5a, 256);
	meta_free(s, 256);
	unsigned char *s2 = meta_alloc(256);
	CHECK(s2 == s && all_zero(s2, 256), "a small block is cleared on reuse");
	tu_exit();
}
