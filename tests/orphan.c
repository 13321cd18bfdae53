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
 * most 9,000 purge calls and flush rounds together: 89% and 6,100-6,250
 * here (guard markers), 92% and 6,000 under release=mprotect.  With the
 * orphan gather bounded at an eighth of a batch, the same took back 55%
 * and 72% and made 14,200 and 12,770.
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

enum { GENS = 1000, NBLK = 16, RUN = 64 << 10 };

static void *left[NBLK];
static uint64_t seed = 0x0f7a;

static size_t pick(void)
{
	return 4096 * (4 + tu_rand(&seed) % 13);
}

static void *generation(void *arg)
{
	(void)arg;
	tu_generation(left, NBLK, &seed, pick);
	return NULL;
}

static void generations(void)
{
	struct xpfo_stats s0, s1;
	xpfo_stats_get(&s0, sizeof s0);
	for (int g = 0; g < GENS; g++) {
		pthread_t t;
		if (pthread_create(&t, NULL, generation, NULL))
			tu_hard_error("pthread_create failed");
		pthread_join(t, NULL);
	}
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long long purges = s1.purges - s0.purges,
			   rounds = s1.flush_rounds - s0.flush_rounds,
			   adopted = s1.pages_adopted - s0.pages_adopted,
			   orphaned = s1.pages_orphaned - s0.pages_orphaned;
	printf("%d generations: %llu purge calls, %llu flush rounds, %llu pages orphaned, "
	       "%llu taken back\n", GENS, purges, rounds, orphaned, adopted);
	CHECK(purges <= 6000, "%d generations made %llu purge calls, want <= 6,000", GENS, purges);
	CHECK(rounds <= 2000, "%d generations made %llu flush rounds, want <= 2,000", GENS, rounds);
	CHECK(adopted >= orphaned / 4 && adopted > 0,
	      "%llu of %llu orphaned pages taken back, want a quarter at least", adopted, orphaned);
	for (int i = 0; i < NBLK; i++) {
		xpfo_free(left[i]);
		left[i] = NULL;
	}
}

enum { WIDE_GENS = 300, WIDE_THREADS = 4, WIDE_BLK = 24 };

static void *wide_left[WIDE_THREADS][WIDE_BLK];
static uint64_t wide_seed[WIDE_THREADS];

static void *wide_generation(void *arg)
{
	int k = (int)(intptr_t)arg;
	tu_generation(wide_left[k], WIDE_BLK, &wide_seed[k], pick);
	return NULL;
}

static void wide(void)
{
	struct xpfo_stats s0, s1;
	xpfo_flush();
	xpfo_stats_get(&s0, sizeof s0);
	for (int g = 0; g < WIDE_GENS; g++) {
		pthread_t t[WIDE_THREADS];
		for (int k = 0; k < WIDE_THREADS; k++) {
			wide_seed[k] += (uint64_t)k + 1;
			if (pthread_create(&t[k], NULL, wide_generation, (void *)(intptr_t)k))
				tu_hard_error("pthread_create failed");
		}
		for (int k = 0; k < WIDE_THREADS; k++)
			pthread_join(t[k], NULL);
	}
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long long purges = s1.purges - s0.purges,
			   rounds = s1.flush_rounds - s0.flush_rounds,
			   adopted = s1.pages_adopted - s0.pages_adopted,
			   orphaned = s1.pages_orphaned - s0.pages_orphaned;
	printf("%d generations of %d threads: %llu purge calls, %llu flush rounds, %llu pages "
	       "orphaned, %llu taken back\n", WIDE_GENS, WIDE_THREADS, purges, rounds, orphaned,
	       adopted);
	CHECK(purges + rounds <= 9000,
	      "%d generations of %d threads made %llu purge calls and flush rounds, want <= 9,000",
	      WIDE_GENS, WIDE_THREADS, purges + rounds);
	CHECK(adopted >= orphaned / 4 * 3 && adopted > 0,
	      "%llu of %llu orphaned pages taken back, want three quarters at least", adopted,
	      orphaned);
	for (int k = 0; k < WIDE_THREADS; k++)
		for (int i = 0; i < WIDE_BLK; i++) {
			xpfo_free(wide_left[k][i]);
			wide_left[k][i] = NULL;
		}
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
	generations();
	wide();
	uaf("flush");
#if XPFO_OVERRIDE
	uaf("malloc_trim");
#endif
	tu_exit();
}
