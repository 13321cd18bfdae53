/* flushrounds.c - xpfo counts a flush round (flush_rounds, issue 37) for
 * each system call that takes access or frames away from mapped pages,
 * and only those, in the OS layer (src/os.c): a block of 4 MiB written
 * and freed, its revocation applied (xpfo_flush), costs at least one
 * round and no more than 4 (its protection taken away and its frames
 * released, the guard of the run, and the retain sweep); allocating and
 * writing it costs none (a protection raised from PROT_NONE is not
 * flushed).  Rounds made while another thread xpfo knows of is alive are
 * counted in flush_rounds_shared as well, and only those: with a second
 * thread parked every round is shared; after it has exited none is.
 * Repeated 8 times so a stray round elsewhere cannot pass for one.  The
 * same inside a compartment: on pkeys its grants give the pages its key,
 * from PROT_NONE (not present: no flush either).
 *
 * Batches: 32 runs of 32 KiB, every other one of 64, freed and flushed,
 * are 32 spans.  Where they get guard markers (spans_guarded), the flush
 * releases their frames in one process_madvise and then installs the
 * markers in another, which finds no page to zap: at most 4 rounds, not
 * one a span, on Linux 6.16 and later, which flushes that release once for
 * all its ranges (a kernel before zaps and flushes them one by one: a round
 * a span more).  Elsewhere (mprotect) one round a span at most.
 *
 * One process, nothing else allocating. */
#include "testutil.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#define BLOCK (4u << 20)
#define ROUNDS_MAX 4 /* per block freed */
#define REPS 8
#define RUN (32u << 10)
#define RUNS 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int parked, release;

#define D(a, b, f) ((unsigned long long)((b).f - (a).f))

static void *park(void *arg)
{
	(void)arg;
	void *p = xpfo_malloc(64); /* xpfo knows this thread from here */
	pthread_mutex_lock(&lock);
	parked = 1;
	pthread_cond_broadcast(&cond);
	while (!release)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	xpfo_free(p);
	return NULL;
}

/* REPS blocks allocated and written (alloc), then freed and flushed (free) */
static void cycle(const char *when, int shared)
{
	struct xpfo_stats s0, s1, s2;
	void *p[REPS];

	xpfo_stats_get(&s0, sizeof s0);
	for (int i = 0; i < REPS; i++) {
		p[i] = xpfo_malloc(BLOCK);
		if (!p[i])
			tu_hard_error("malloc of %u bytes failed", BLOCK);
		memset(p[i], 0x5a, BLOCK);
	}
	xpfo_stats_get(&s1, sizeof s1);
	for (int i = 0; i < REPS; i++) {
		xpfo_free(p[i]);
		xpfo_flush();
	}
	xpfo_stats_get(&s2, sizeof s2);
	unsigned long long r = D(s1, s2, flush_rounds), sh = D(s1, s2, flush_rounds_shared);
	printf("%s: %llu rounds for %d blocks allocated, %llu freed (%llu shared)\n", when,
	       D(s0, s1, flush_rounds), REPS, r, sh);
	CHECK(D(s0, s1, flush_rounds) == 0, "%s: allocating and writing %d blocks counted %llu "
	      "flush rounds, want 0", when, REPS, D(s0, s1, flush_rounds));
	CHECK(r >= REPS && r <= REPS * ROUNDS_MAX, "%s: %d blocks freed counted %llu flush rounds, "
	      "want %d to %d", when, REPS, r, REPS, REPS * ROUNDS_MAX);
	CHECK(sh == (shared ? r : 0), "%s: %llu of %llu rounds counted shared, want %llu", when,
	      sh, r, shared ? r : 0ull);
}

static void in_compartment(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("counted", 0);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		tu_hard_error("cannot enter a compartment");
	cycle("in a compartment", 0);
	xpfo_leave(prev);
}

static void batch(void)
{
	struct xpfo_stats s0, s1;
	void *p[2 * RUNS];

	for (int i = 0; i < 2 * RUNS; i++) {
		if (!(p[i] = xpfo_malloc(RUN)))
			tu_hard_error("malloc of %u bytes failed", RUN);
		memset(p[i], 0x5a, RUN);
	}
	xpfo_flush();
	xpfo_stats_get(&s0, sizeof s0);
	for (int i = 0; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long long r = D(s0, s1, flush_rounds), g = D(s0, s1, spans_guarded);
	printf("batch: %llu rounds for %d runs freed, %llu spans with guard markers\n", r, RUNS, g);
	struct utsname u;
	unsigned major = 0, minor = 0;
	int gathered = uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
		       (major > 6 || (major == 6 && minor >= 16));
	unsigned most = gathered ? 4 : RUNS + 4;
	if (g >= RUNS / 2)
		CHECK(r >= 1 && r <= most, "%d runs freed with markers (%llu spans) counted %llu "
		      "flush rounds, want 1 to %u", RUNS, g, r, most);
	else
		CHECK(r >= 1 && r <= RUNS, "%d runs freed counted %llu flush rounds, want 1 to %d",
		      RUNS, r, RUNS);
	for (int i = 1; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();
}

int main(void)
{
	pthread_t t;

	tu_timeout(60);
	xpfo_free(xpfo_malloc(16)); /* this thread's state */
	cycle("alone", 0);
	if (pthread_create(&t, NULL, park, NULL))
		tu_hard_error("pthread_create failed");
	pthread_mutex_lock(&lock);
	while (!parked)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	cycle("with a thread parked", 1);
	pthread_mutex_lock(&lock);
	release = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
	cycle("after it exited", 0);
	in_compartment();
	batch();
	tu_exit();
}
