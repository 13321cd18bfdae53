/* orphan.c - the runs a thread leaves queued at its exit wait in their
 * compartment's orphan gather (alloc/gather.c) for the next thread, which
 * takes them back without a revocation; they are still revoked in time.
 *
 * Counts: 1,000 generations of one thread each, every thread allocating
 * 16 page runs of 16-64 KiB and freeing the half the thread before it
 * left, make at most 6,000 purge calls and 2,000 flush rounds, and the
 * later threads take back a quarter of the orphaned pages at least.  When
 * every exit applied its gather, the same made 11,460 purge calls and
 * 100,517 flush rounds (mprotect backend, guard markers).
 *
 * Four at a time: 300 generations of four threads each, every thread
 * allocating 24 page runs of 16-64 KiB and freeing what its predecessor
 * left (about 1,000 pages orphaned a generation, a quarter of a batch),
 * take back three quarters of the orphaned pages at least and make at
 * most 9,000 purge calls and flush rounds together: 90% and 5,445 here
 * (guard markers), 93% and 5,339 under release=mprotect.  With the orphan
 * gather bounded at an eighth of a batch, the same took back 60% and 75%
 * and made 13,684 and 13,068.
 *
 * Revocation: a 64 KiB run freed by a thread that then exits is orphaned,
 * not revoked, and xpfo_flush() (and malloc_trim) applies it: a write to
 * it afterwards is reported and killed by SIGSEGV. */
#include "config.h"
#include "testutil.h"

#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>

enum { GENS = 1000, NBLK = 16, WIDE_GENS = 300, WIDE_THREADS = 4, WIDE_BLK = 24,
       RUN = 64 << 10 };

/* One thread of each generation: what it leaves its successor. */
struct lineage {
	void *left[WIDE_BLK];
	int nblk;
	uint64_t seed;
};

/* the seed of the calling thread's lineage (tu_generation's pick takes
 * no argument) */
static _Thread_local uint64_t *pick_seed;

static size_t pick(void)
{
	return 4096 * (4 + tu_rand(pick_seed) % 13);
}

static void *generation(void *arg)
{
	struct lineage *l = arg;
	pick_seed = &l->seed;
	tu_generation(l->left, l->nblk, &l->seed, pick);
	return NULL;
}

struct counts {
	unsigned long long purges, rounds, adopted, orphaned;
};

/* gens generations of nthreads threads each (at most WIDE_THREADS), every
 * thread allocating nblk runs; their counts, printed. */
static struct counts generations(int gens, int nthreads, int nblk)
{
	struct lineage l[WIDE_THREADS] = { 0 };
	struct xpfo_stats s0, s1;
	for (int k = 0; k < nthreads; k++)
		l[k] = (struct lineage){ .nblk = nblk, .seed = 0x0f7a + (uint64_t)k };
	xpfo_flush();
	xpfo_stats_get(&s0, sizeof s0);
	for (int g = 0; g < gens; g++) {
		pthread_t t[WIDE_THREADS];
		for (int k = 0; k < nthreads; k++)
			if (pthread_create(&t[k], NULL, generation, &l[k]))
				tu_hard_error("pthread_create failed");
		for (int k = 0; k < nthreads; k++)
			pthread_join(t[k], NULL);
	}
	xpfo_stats_get(&s1, sizeof s1);
	struct counts c = { s1.purges - s0.purges, s1.flush_rounds - s0.flush_rounds,
			    s1.pages_adopted - s0.pages_adopted,
			    s1.pages_orphaned - s0.pages_orphaned };
	printf("%d generations of %d thread(s): %llu purge calls, %llu flush rounds, %llu pages "
	       "orphaned, %llu taken back\n", gens, nthreads, c.purges, c.rounds, c.orphaned,
	       c.adopted);
	for (int k = 0; k < nthreads; k++)
		for (int i = 0; i < nblk; i++)
			xpfo_free(l[k].left[i]);
	return c;
}

static void one_by_one(void)
{
	struct counts c = generations(GENS, 1, NBLK);
	CHECK(c.purges <= 6000, "%d generations made %llu purge calls, want <= 6,000", GENS,
	      c.purges);
	CHECK(c.rounds <= 2000, "%d generations made %llu flush rounds, want <= 2,000", GENS,
	      c.rounds);
	CHECK(c.adopted >= c.orphaned / 4 && c.adopted > 0,
	      "%llu of %llu orphaned pages taken back, want a quarter at least", c.adopted,
	      c.orphaned);
}

static void four_at_a_time(void)
{
	struct counts c = generations(WIDE_GENS, WIDE_THREADS, WIDE_BLK);
	CHECK(c.purges + c.rounds <= 9000,
	      "%d generations of %d threads made %llu purge calls and flush rounds, want <= 9,000",
	      WIDE_GENS, WIDE_THREADS, c.purges + c.rounds);
	CHECK(c.adopted >= c.orphaned / 4 * 3 && c.adopted > 0,
	      "%llu of %llu orphaned pages taken back, want three quarters at least", c.adopted,
	      c.orphaned);
}

static char *freed;

static void *free_and_exit(void *arg)
{
	(void)arg;
	freed = xpfo_malloc(RUN);
	if (!freed)
		tu_hard_error("xpfo_malloc failed");
	memset(freed, 0x11, RUN);
	xpfo_free(freed);
	return NULL;
}

/* In a child: exit 3 when the run was not orphaned (nothing to test),
 * 0 when the write after the flush went through (the failure). */
static int uaf_after(void *arg)
{
	const char *how = arg;
	struct xpfo_stats s0, s1;
	xpfo_flush(); /* nothing of this thread's or the parent's is queued */
	xpfo_stats_get(&s0, sizeof s0);
	pthread_t t;
	if (pthread_create(&t, NULL, free_and_exit, NULL))
		return 99;
	pthread_join(t, NULL);
	xpfo_stats_get(&s1, sizeof s1);
	if (s1.pages_orphaned - s0.pages_orphaned < RUN / 4096)
		return 3;
	if (!strcmp(how, "flush"))
		xpfo_flush();
	else
		malloc_trim(0);
	*(volatile char *)(freed + 100) = 1;
	return 0;
}

static void uaf(const char *how)
{
	struct tu_child r;
	if (tu_run_child(uaf_after, (void *)how, 60, &r))
		tu_hard_error("fork failed");
	CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGSEGV,
	      "a write to a run its exited thread freed, after %s: %s (want killed by "
	      "SIGSEGV); stderr: %s", how, tu_status_str(r.status), r.err);
}

int main(void)
{
	tu_prog = "orphan";
	tu_xpfo_init(1);
	one_by_one();
	four_at_a_time();
	uaf("flush");
#if XPFO_OVERRIDE
	uaf("malloc_trim");
#endif
	tu_exit();
}
