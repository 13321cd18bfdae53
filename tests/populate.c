/* populate.c - pages whose frames are missing and which are about to be
 * written are faulted in by one MADV_POPULATE_WRITE call, not by one page
 * fault each (issue 11: under guard markers every revoked page loses its
 * frame, and hash, frag and python faulted their freed pages back in one
 * at a time): a new slab of one or two pages, and the part of a page run
 * that realloc copies the old block to (alloc/run.c, run_populate).
 *
 * Each part in a child (a heap of its own, on fresh pages):
 *   1. 200 one-page slabs (25,600 blocks of 24 bytes, 128 to a slab) from
 *      fresh pages: their pages counted in pages_populated, one call each;
 *   2. every block freed and the gather applied (xpfo_flush): the retired
 *      slabs revoked under guard markers (their frames gone), then the same
 *      again: the new slabs on those pages populated too, every block
 *      handed out zero (the write-after-free check reads each);
 *   3. a 64 KiB block filled with a pattern and moved by realloc to 1 MiB
 *      (a blocker behind it): its 16 copied pages populated, the pattern
 *      intact, and none of the rest of the new run;
 *   4. a slab of the 16 KiB class (four pages, one slot) is not populated:
 *      a slot of several pages may be written only in part.
 * Skipped where the kernel has no MADV_POPULATE_WRITE (before 5.14); part
 * 2's second count is not asserted where revoked pages keep their frames
 * (no guard markers: mprotect, Linux before 6.13).  Run again by itself
 * with XPFO_OPTIONS=keep_empty=0, so that part 2's empty slabs all retire
 * (the heap keeps none). */
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define SLABS 200
#define PER_SLAB 128 /* 24 bytes (+ an 8-byte canary): the 32-byte class */
#define PAGE 4096u
#define OLD (64u << 10)
#define NEW (1u << 20)
#define POPULATE_WRITE 23 /* linux/mman.h of 5.14 */

static void *blocks[SLABS * PER_SLAB];

#define D(f) ((unsigned long long)(s1.f - s0.f))

/* 0 when every block was handed out zero */
static int fill(void)
{
	for (int i = 0; i < SLABS * PER_SLAB; i++) {
		uint64_t w[3];
		if (!(blocks[i] = xpfo_malloc(24)))
			return 99;
		memcpy(w, blocks[i], sizeof w);
		if (w[0] | w[1] | w[2])
			return 5;
		memset(blocks[i], 0x5a, 24);
	}
	return 0;
}

static int slabs(void)
{
	struct xpfo_stats s0, s1;
	xpfo_stats_get(&s0, sizeof s0);
	int e = fill();
	if (e)
		return e;
	xpfo_stats_get(&s1, sizeof s1);
	fprintf(stderr, "fresh slabs: %llu pages populated, %llu madvise calls\n",
		D(pages_populated), D(madvise_syscalls));
	if (D(pages_populated) < SLABS - 1 || D(pages_populated) > SLABS + 8)
		return 1;
	for (int i = 0; i < SLABS * PER_SLAB; i++)
		xpfo_free(blocks[i]);
	xpfo_flush();
	xpfo_stats_get(&s0, sizeof s0);
	if ((e = fill()))
		return e;
	xpfo_stats_get(&s1, sizeof s1);
	fprintf(stderr, "slabs again on revoked pages (%llu spans guarded before): %llu pages "
		"populated\n", (unsigned long long)s0.spans_guarded, D(pages_populated));
	if (!s0.spans_guarded)
		return 77; /* protected with mprotect: the frames stayed */
	/* every slab but the one the heap allocates from retired (keep_empty=0) */
	return D(pages_populated) >= SLABS - 2 ? 0 : 2;
}

static int moved(void)
{
	struct xpfo_stats s0, s1;
	for (int try = 0; try < 8; try++) {
		unsigned char *a = xpfo_malloc(OLD), *blocker = xpfo_malloc(OLD);
		if (!a || !blocker)
			return 99;
		for (unsigned i = 0; i < OLD; i++)
			a[i] = (unsigned char)(i * 7 + 1);
		xpfo_stats_get(&s0, sizeof s0);
		unsigned char *b = xpfo_realloc(a, NEW);
		xpfo_stats_get(&s1, sizeof s1);
		if (!b)
			return 99;
		if (b == a)
			continue; /* grown in place: nothing copied */
		unsigned char vec[NEW / PAGE];
		if (mincore(b, NEW, vec))
			return 99;
		unsigned resident = 0;
		for (unsigned k = OLD / PAGE; k < NEW / PAGE; k++)
			resident += vec[k] & 1;
		for (unsigned i = 0; i < OLD; i++)
			if (b[i] != (unsigned char)(i * 7 + 1))
				return 6;
		fprintf(stderr, "realloc moved 64 KiB to 1 MiB: %llu pages populated, %u pages "
			"past the copy resident\n", D(pages_populated), resident);
		return D(pages_populated) == OLD / PAGE && resident == 0 ? 0 : 3;
	}
	return 98;
}

static int big_slab(void)
{
	struct xpfo_stats s0, s1;
	xpfo_stats_get(&s0, sizeof s0);
	char *p = xpfo_malloc(16000);
	xpfo_stats_get(&s1, sizeof s1);
	if (!p)
		return 99;
	fprintf(stderr, "a 16 KiB slot's slab: %llu pages populated\n", D(pages_populated));
	return D(pages_populated) ? 4 : 0;
}

static int run_slabs(void *arg)
{
	(void)arg;
	return slabs();
}

static int run_moved(void *arg)
{
	(void)arg;
	return moved();
}

static int run_big_slab(void *arg)
{
	(void)arg;
	return big_slab();
}

/* Each part in a child of its own: a heap whose pages are all fresh. */
static void part(int (*fn)(void *), const char *what, bool may_skip)
{
	struct tu_child r;
	if (tu_run_child(fn, NULL, 120, &r))
		tu_hard_error("fork failed");
	printf("%s", r.err);
	if (may_skip && WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77) {
		printf("(revoked pages keep their frames here: no guard markers, nothing to "
		       "populate after the flush)\n");
		return;
	}
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "%s: %s; stderr: %s", what,
	      tu_status_str(r.status), r.err);
}

int main(int argc, char **argv)
{
	tu_prog = "populate";
	/* part 2 wants every empty slab retired: none kept by the heap */
	if (argc < 2 || strcmp(argv[1], "--again")) {
		char *again[] = { "/proc/self/exe", "--again", NULL };
		if (setenv("XPFO_OPTIONS", "keep_empty=0", 1))
			tu_hard_error("setenv failed");
		execv(again[0], again);
		tu_hard_error("cannot run itself again with XPFO_OPTIONS=keep_empty=0");
	}
	void *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		tu_hard_error("mmap failed");
	if (madvise(p, PAGE, POPULATE_WRITE) && errno == EINVAL)
		tu_skip("no MADV_POPULATE_WRITE here (Linux 5.14 has it)");
	part(run_slabs, "new one-page slabs populated by one call each, fresh and on revoked "
	     "pages, every block handed out zero", true);
	part(run_moved, "a 64 KiB block realloc'd to 1 MiB: its 16 copied pages populated, "
	     "the pattern intact, nothing past the copy resident", false);
	part(run_big_slab, "a 16 KiB slot's four-page slab not populated", false);
	tu_exit();
}
