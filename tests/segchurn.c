/* segchurn.c - taking and releasing segments over and over must not touch
 * ever more of the segment table.
 *
 * Found by the soak (make soak): RSS grew from 50 MB to 136 MB in 20
 * minutes while live, mapped and resident heap bytes stayed flat.  Each of
 * the 16,384 segments of the default reservation has an 8.5 KiB descriptor
 * in the metadata region; random_bases started every search at a random
 * segment, so each new segment was almost always one never used before,
 * and its descriptor, once written, stayed resident: the whole table
 * (136 MB) over time.  Here 3,000 blocks of 5 MiB (each two whole
 * segments) are allocated and freed one after another with the default
 * profile (random_bases on); they must land on a bounded set of segments,
 * and metadata_bytes (which counts the descriptors in use) must stay
 * bounded too.  It runs in a child so a fatal is reported with its line. */
#include "testutil.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define ROUNDS 3000
#define BIG (5u << 20)
/* segments the allocator may spread over before reusing (256) and a few
 * more for the ones in use; without reuse about 2,900 are distinct */
#ifndef MAX_DISTINCT
#define MAX_DISTINCT 400
#endif

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

static size_t distinct(uintptr_t *v, size_t n)
{
	qsort(v, n, sizeof *v, cmp_ptr);
	size_t d = 0;
	for (size_t i = 0; i < n; i++)
		d += !i || v[i] != v[i - 1];
	return d;
}

static int churn(void *arg)
{
	(void)arg;
	static uintptr_t base[ROUNDS];
	/* XPFO_SKIP_SLOW (the debug build in CI): every xpfo_flush walks the
	 * page tables there, seconds a round on the mprotect backend; 100
	 * rounds still run the churn under the walks (the bound on distinct
	 * segments is then the release build's to show) */
	const char *slow = getenv("XPFO_SKIP_SLOW");
	int rounds = slow && *slow && *slow != '0' ? 100 : ROUNDS;
	struct xpfo_stats s0, s1;
	memset(&s0, 0, sizeof s0);
	memset(&s1, 0, sizeof s1);
	if (xpfo_stats_get(&s0, sizeof s0))
		return 98;
	for (int i = 0; i < rounds; i++) {
		char *p = xpfo_malloc(BIG);
		if (!p)
			return 97;
		p[0] = p[BIG - 1] = 1;
		base[i] = (uintptr_t)p;
		xpfo_free(p);
		xpfo_flush(); /* the segments go back to the pool now */
	}
	if (xpfo_stats_get(&s1, sizeof s1))
		return 98;
	size_t d = distinct(base, (size_t)rounds);
	uint64_t grew = s1.metadata_bytes - s0.metadata_bytes;
	fprintf(stderr, "%d blocks of 5 MiB: %zu distinct bases; metadata_bytes %llu -> %llu\n",
		rounds, d, (unsigned long long)s0.metadata_bytes,
		(unsigned long long)s1.metadata_bytes);
	if (d > MAX_DISTINCT)
		return 3;
	if (s1.metadata_bytes > s0.metadata_bytes && grew > (8u << 20))
		return 4;
	return 0;
}

int main(void)
{
	tu_prog = "segchurn";
	struct tu_child r;
	if (tu_run_child(churn, NULL, 240, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "3,000 segment-sized blocks one after another (3: on more than %d distinct "
	      "segments, 4: metadata grew by more than 8 MiB): %s; stderr: %s",
	      MAX_DISTINCT, tu_status_str(r.status), r.err);
	tu_exit();
}
