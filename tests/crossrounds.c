/* crossrounds.c - the flush rounds (TLB shootdowns, include/xpfo.h
 * flush_rounds) of a two-thread free/reallocate loop stay under a bound per
 * 1,000 frees, and the per-mechanism counts sum to flush_rounds.  Counts,
 * never times.
 *
 * Thread A allocates batches of BATCH blocks (80% 16 B to 1 KiB, 20% page
 * runs of 4 to 64 KiB, a fixed pseudo-random sequence), writes them and
 * hands each batch to thread B; B frees them (frees of another thread's
 * blocks), allocates as many of the same sizes, writes them, and frees the
 * ones it allocated for the batch before.  A works on its next batch
 * meanwhile (two batches in flight), so both threads are live throughout:
 * every round is a shared one, a shootdown sent to the other CPU.
 *
 * The bound a 1,000 frees, measured on the 2-CPU development machine
 * (Linux 6.18, no protection keys, other jobs running):
 *
 * - where freed runs get guard markers (spans_guarded moved), the default
 *   profile made 0.3 to 0.45 rounds a 1,000 frees (a process_madvise
 *   release a batch of about 370 runs, and a few unmaps); revoke=eager and
 *   batch=1 made 119 (a round a page run freed), batch=4 30.
 *   ROUNDS_MAX_MARKERS 5 leaves ten times the measured count and fails
 *   with each of those.
 * - without markers (release=mprotect, as on a kernel before 6.13), the
 *   default made 21 to 23.5 (an mprotect a span of a batch's scattered
 *   runs, about 40 a batch, and purges past `retain`); eager and batch=1
 *   made 119.  ROUNDS_MAX 40 leaves 1.7 times that and still fails them
 *   by a factor of 3.
 *
 * XPFO_OPTIONS=revoke=eager or batch=1 makes the test fail either way.
 *
 * Run with "--report" it prints the counts and checks nothing. */
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 128
#define BATCHES 400
#define ROUNDS_MAX_MARKERS 5 /* a 1,000 frees, freed runs under guard markers */
#define ROUNDS_MAX 40 /* a 1,000 frees, otherwise */

struct batch {
	void *p[BATCH];
	size_t n[BATCH];
};

static struct batch slots[2];
static int full[2]; /* slot handed to B */
static int done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

/* The sizes: 80% small (16 B to 1 KiB), 20% page runs (4 to 64 KiB). */
static size_t next_size(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	unsigned r = (unsigned)(*x >> 33);
	if (r % 5)
		return 16u << (r / 5 % 7);
	return 4096u << (r / 5 % 5);
}

static void *b_thread(void *arg)
{
	(void)arg;
	struct batch mine[2];
	memset(mine, 0, sizeof mine);
	for (unsigned i = 0;; i++) {
		unsigned s = i % 2;
		pthread_mutex_lock(&lock);
		while (!full[s] && !done)
			pthread_cond_wait(&cond, &lock);
		if (!full[s]) {
			pthread_mutex_unlock(&lock);
			break;
		}
		pthread_mutex_unlock(&lock);
		struct batch *b = &slots[s], *m = &mine[i % 2], *old = &mine[(i + 1) % 2];
		for (unsigned k = 0; k < BATCH; k++) {
			xpfo_free(b->p[k]);
			m->n[k] = b->n[k];
		}
		pthread_mutex_lock(&lock);
		full[s] = 0;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
		for (unsigned k = 0; k < BATCH; k++) {
			if (!(m->p[k] = xpfo_malloc(m->n[k])))
				tu_hard_error("malloc of %zu bytes failed", m->n[k]);
			memset(m->p[k], 0x5b, m->n[k] < 256 ? m->n[k] : 256);
			xpfo_free(old->p[k]);
			old->p[k] = NULL;
		}
	}
	for (unsigned j = 0; j < 2; j++)
		for (unsigned k = 0; k < BATCH; k++)
			xpfo_free(mine[j].p[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	int report = tu_has_arg(argc, argv, "--report");
	uint64_t x = 42;
	struct xpfo_stats s0, s1;
	pthread_t t;

	tu_timeout(120);
	xpfo_free(xpfo_malloc(16)); /* this thread's state */
	if (pthread_create(&t, NULL, b_thread, NULL))
		tu_hard_error("pthread_create failed");
	xpfo_stats_get(&s0, sizeof s0);
	for (unsigned i = 0; i < BATCHES; i++) {
		unsigned s = i % 2;
		pthread_mutex_lock(&lock);
		while (full[s])
			pthread_cond_wait(&cond, &lock);
		pthread_mutex_unlock(&lock);
		for (unsigned k = 0; k < BATCH; k++) {
			size_t n = next_size(&x);
			if (!(slots[s].p[k] = xpfo_malloc(n)))
				tu_hard_error("malloc of %zu bytes failed", n);
			slots[s].n[k] = n;
			memset(slots[s].p[k], 0x5a, n < 256 ? n : 256);
		}
		pthread_mutex_lock(&lock);
		full[s] = 1;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	xpfo_flush();
	xpfo_stats_get(&s1, sizeof s1);

#define D(f) ((unsigned long long)(s1.f - s0.f))
	unsigned long long frees = D(frees), r = D(flush_rounds);
	unsigned long long sum = D(flush_rounds_protect) + D(flush_rounds_purge) +
				 D(flush_rounds_guard) + D(flush_rounds_vector) +
				 D(flush_rounds_unmap);
	printf("%llu frees (%llu page runs allocated): %llu flush rounds (%llu shared), "
	       "%llu.%llu a 1,000 frees; protect %llu, purge %llu, guard %llu, vector %llu, "
	       "unmap %llu; %llu spans under markers, %llu revoking syscalls, %llu madvise\n",
	       frees, D(allocs_large), r, D(flush_rounds_shared), frees ? r * 1000 / frees : 0,
	       frees ? r * 10000 / frees % 10 : 0, D(flush_rounds_protect), D(flush_rounds_purge),
	       D(flush_rounds_guard), D(flush_rounds_vector), D(flush_rounds_unmap),
	       D(spans_guarded), D(revoke_syscalls), D(madvise_syscalls));
	if (report)
		return 0;
	CHECK(frees >= 2ull * BATCH * (BATCHES - 1), "only %llu frees counted, want at least %u",
	      frees, 2 * BATCH * (BATCHES - 1));
	CHECK(sum == r, "the mechanisms' flush rounds sum to %llu, flush_rounds moved by %llu",
	      sum, r);
	int markers = D(spans_guarded) > 0;
	unsigned most = markers ? ROUNDS_MAX_MARKERS : ROUNDS_MAX;
	CHECK(r * 1000 <= most * frees, "%llu flush rounds for %llu frees: %llu.%llu a 1,000 "
	      "frees, want at most %u (%s)", r, frees, frees ? r * 1000 / frees : 0,
	      frees ? r * 10000 / frees % 10 : 0, most,
	      markers ? "freed runs under guard markers" : "no guard markers");
	tu_exit();
}
