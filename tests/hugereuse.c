/* hugereuse.c - a thread that frees a huge block and allocates another of
 * as many segments gets the freed one's segments back with their frames:
 * from its queue before the revocation (the pages the new length gains
 * opened, the ones it loses closed), or once revoked, kept for the same
 * compartment (PROT_NONE) and granted again with one call.  A segment
 * that changes owner is still mapped afresh.
 *
 *   kept:      REPS blocks of 5 and 7 MiB in turn (2 and 3 segments),
 *              each written, freed and flushed: at most one flush round a
 *              block, no purge or new mapping past the first few, page
 *              faults for no more than a few blocks' pages (each block
 *              mapped afresh: two rounds, a purge, a mapping and 1,280 to
 *              1,792 faults a block).
 *   queued:    the same without the flushes (the queue fills by itself):
 *              half the blocks or more are taken back from the queue.
 *   uaf:       a block freed and flushed, kept, then reused and freed
 *              again: a read of the stale pointer faults (a child, SIGSEGV);
 *              so does a read past a 5 MiB block reusing a 7 MiB one's
 *              segments.
 *   other:     another compartment's block of the same size reads zero.
 *   trim:      malloc_trim releases the kept blocks (resident bytes drop).
 *
 * One thread, nothing else allocating. */
#include "testutil.h"

#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>

#define MIB (1u << 20)
#define REPS 32
#define PAGES(n) ((n) / 4096u)

#define D(a, b, f) ((unsigned long long)((b).f - (a).f))

static long minflt(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		tu_hard_error("getrusage failed");
	return ru.ru_minflt;
}

static size_t size_of(int i) { return i % 2 ? 7 * MIB : 5 * MIB; }

static void cycles(const char *what, int flush)
{
	struct xpfo_stats s0, s1;
	xpfo_flush();
	tu_stats(&s0);
	long f0 = minflt();
	for (int i = 0; i < REPS; i++) {
		char *p = xpfo_malloc(size_of(i));
		if (!p)
			tu_hard_error("malloc of %zu bytes failed", size_of(i));
		memset(p, i + 1, size_of(i));
		xpfo_free(p);
		if (flush)
			xpfo_flush();
	}
	xpfo_flush();
	long faults = minflt() - f0;
	tu_stats(&s1);
	unsigned long long r = D(s0, s1, flush_rounds), pu = D(s0, s1, purges),
			   mm = D(s0, s1, mmap_syscalls);
	unsigned long long back = D(s0, s1, pages_cancelled) / PAGES(5 * MIB);
	printf("%s: %d blocks: %llu flush rounds, %llu purges, %llu mmaps, %ld page faults, "
	       "%llu taken back queued\n", what, REPS, r, pu, mm, faults, back);
	if (!flush)
		CHECK(back >= REPS / 2, "%s: %llu of %d blocks taken back from the queue, want %d",
		      what, back, REPS, REPS / 2);
	CHECK(r <= REPS + 4, "%s: %d blocks made %llu flush rounds, want at most %d", what, REPS, r,
	      REPS + 4);
	CHECK(pu <= 4, "%s: %d blocks made %llu purges, want at most 4", what, REPS, pu);
	CHECK(mm <= 4, "%s: %d blocks made %llu mmap calls, want at most 4", what, REPS, mm);
	CHECK(faults <= 3 * (long)PAGES(7 * MIB), "%s: %d blocks took %ld page faults, want at most %u",
	      what, REPS, faults, 3 * PAGES(7 * MIB));
}

/* In a child: must die by SIGSEGV. */
static int stale_read(void *arg)
{
	(void)arg;
	char *p = xpfo_malloc(5 * MIB);
	if (!p)
		return 97;
	memset(p, 1, 5 * MIB);
	xpfo_free(p);
	xpfo_flush(); /* revoked, kept */
	char *q = xpfo_malloc(5 * MIB);
	if (!q)
		return 97;
	memset(q, 2, 5 * MIB);
	xpfo_free(q);
	xpfo_flush();
	return ((volatile char *)p)[100] == 2 ? 3 : 4;
}

static int past_end(void *arg)
{
	(void)arg;
	char *p = xpfo_malloc(7 * MIB);
	if (!p)
		return 97;
	memset(p, 1, 7 * MIB);
	xpfo_free(p);
	xpfo_flush();
	char *q = xpfo_malloc(5 * MIB);
	if (!q)
		return 97;
	memset(q, 2, 5 * MIB);
	return ((volatile char *)q)[6 * MIB] == 1 ? 3 : 4;
}

static void other_owner(void)
{
	char *p = xpfo_malloc(5 * MIB);
	if (!p)
		tu_hard_error("allocation failed");
	memset(p, 0x5a, 5 * MIB);
	xpfo_free(p);
	xpfo_flush(); /* kept for root */
	xpfo_compartment_t *c = xpfo_compartment_create("other", 0);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		tu_hard_error("cannot enter a compartment");
	char *q = xpfo_malloc(5 * MIB);
	if (!q)
		tu_hard_error("allocation failed");
	size_t bad = 0;
	for (size_t k = 0; k < 5 * MIB; k += 4096)
		bad += q[k] != 0 || q[k + 4095] != 0;
	printf("other: a block at %p, the kept one at %p, %zu pages not zero\n", (void *)q,
	       (void *)p, bad);
	CHECK(bad == 0, "another compartment's block holds %zu pages of old bytes", bad);
	xpfo_free(q);
	xpfo_flush();
	xpfo_leave(prev);
	CHECK(xpfo_compartment_destroy(c) == 0, "destroy failed");
}

static void trim(void)
{
	struct xpfo_stats s0, s1;
	char *p = xpfo_malloc(7 * MIB);
	if (!p)
		tu_hard_error("allocation failed");
	memset(p, 3, 7 * MIB);
	xpfo_free(p);
	xpfo_flush();
	tu_stats(&s0);
	malloc_trim(0);
	tu_stats(&s1);
	printf("trim: resident %llu KiB before malloc_trim, %llu after\n",
	       (unsigned long long)s0.resident_bytes >> 10, (unsigned long long)s1.resident_bytes >> 10);
	CHECK(s1.resident_bytes < 7 * MIB, "malloc_trim left %llu bytes resident",
	      (unsigned long long)s1.resident_bytes);
}

int main(void)
{
	tu_prog = "hugereuse";
	tu_timeout(120);
	tu_xpfo_init(1);
	xpfo_free(xpfo_malloc(16)); /* this thread's state */
	cycles("kept", 1);
	cycles("queued", 0);
	tu_must_segv("uaf: stale read of a kept block", stale_read, NULL);
	tu_must_segv("uaf: read past a block in a longer one's segments", past_end, NULL);
	other_owner();
	trim();
	tu_exit();
}
