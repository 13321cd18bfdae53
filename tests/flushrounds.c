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
 * Zapped batches: the same 32 spans inside a compartment, whose spans get
 * no guard markers (those are for root's), with a second thread parked
 * (alone, nothing is zapped: a flush interrupts no other CPU, and the
 * spans keep their frames): where one process_madvise releases
 * frames with one flush for all its ranges (Linux 6.16 and later), their
 * frames go in one call and mprotect then closes each with nothing present
 * (spans_zapped): at most 4 rounds, where mprotect alone makes one a span;
 * a freed run then faults when read, and calloc over the freed runs' pages
 * gives zeros (they were marked clean: a run marked so without its frames
 * gone would give the old bytes).  A close that fails after the release
 * (an injected mprotect failure) quarantines the span: revoke_failures
 * counts it, and no later run lands on its pages.  Under release=mprotect
 * nothing is zapped, and every span is its own round (a child of this test, run
 * with that option).
 *
 * One process, nothing else allocating. */
#include "testutil.h"

#include <errno.h>
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

/* A second thread xpfo knows of, parked until park_stop */
static void park_start(pthread_t *t)
{
	parked = release = 0;
	if (pthread_create(t, NULL, park, NULL))
		tu_hard_error("pthread_create failed");
	pthread_mutex_lock(&lock);
	while (!parked)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

static void park_stop(pthread_t t)
{
	pthread_mutex_lock(&lock);
	release = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	pthread_join(t, NULL);
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

/* 2 * RUNS runs of RUN allocated and written, every other one freed and
 * flushed: the counters before and after that free in *s0, *s1 */
static void free_every_other(void **p, struct xpfo_stats *s0, struct xpfo_stats *s1)
{
	for (int i = 0; i < 2 * RUNS; i++) {
		if (!(p[i] = xpfo_malloc(RUN)))
			tu_hard_error("malloc of %u bytes failed", RUN);
		memset(p[i], 0x5a, RUN);
	}
	xpfo_flush();
	xpfo_stats_get(s0, sizeof *s0);
	for (int i = 0; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();
	xpfo_stats_get(s1, sizeof *s1);
}

/* Linux 6.16 or later: one flush for a process_madvise(MADV_DONTNEED) */
static int kernel_gathers(void)
{
	struct utsname u;
	unsigned major = 0, minor = 0;
	return uname(&u) == 0 && sscanf(u.release, "%u.%u", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 16));
}

static void batch(void)
{
	struct xpfo_stats s0, s1;
	void *p[2 * RUNS];

	free_every_other(p, &s0, &s1);
	unsigned long long r = D(s0, s1, flush_rounds), g = D(s0, s1, spans_guarded);
	printf("batch: %llu rounds for %d runs freed, %llu spans with guard markers\n", r, RUNS, g);
	unsigned most = kernel_gathers() ? 4 : RUNS + 4;
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

static int read_freed(void *arg)
{
	return *(volatile unsigned char *)arg;
}

static int is_freed(void *q, void *const *p, int n)
{
	for (int i = 0; i < n; i += 2)
		if (q == p[i])
			return 1;
	return 0;
}

static void zapped(void)
{
	const char *o = getenv("XPFO_OPTIONS");
	int plain = o && strstr(o, "release=mprotect");
	/* stdout's buffer is allocated before the compartment is entered:
	 * allocated inside, it could take a freed run's pages */
	printf("zapped%s\n", plain ? ", release=mprotect:" : ":");
	xpfo_compartment_t *c = xpfo_compartment_create("zapped", 0);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		tu_hard_error("cannot enter a compartment");
	void *p[2 * RUNS], *q[RUNS];
	struct xpfo_stats s0, s1;
	pthread_t t;
	/* alone: nothing zapped (no other CPU to interrupt) */
	free_every_other(p, &s0, &s1);
	unsigned long long r = D(s0, s1, flush_rounds), z = D(s0, s1, spans_zapped);
	printf("zapped: alone, %llu rounds for %d runs freed, %llu spans zapped\n", r, RUNS, z);
	CHECK(z == 0, "%llu spans zapped with no other thread, want 0", z);
	for (int i = 1; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();
	park_start(&t);
	free_every_other(p, &s0, &s1);
	r = D(s0, s1, flush_rounds);
	z = D(s0, s1, spans_zapped);
	printf("zapped: %llu rounds for %d runs freed in a compartment, %llu spans zapped%s\n", r,
	       RUNS, z, plain ? " (release=mprotect)" : "");
	if (plain)
		CHECK(z == 0 && r >= RUNS && r <= RUNS + 4, "release=mprotect: %llu spans zapped, "
		      "%llu rounds, want 0 and %d to %d", z, r, RUNS, RUNS + 4);
	else if (kernel_gathers())
		CHECK(z == RUNS && r >= 1 && r <= 4, "%d runs freed in a compartment: %llu spans "
		      "zapped, %llu flush rounds, want %d and 1 to 4", RUNS, z, r, RUNS);
	else
		CHECK(r >= 1 && r <= RUNS + 4, "%d runs freed counted %llu flush rounds, want 1 to %d",
		      RUNS, r, RUNS + 4);
	tu_must_segv("zapped: a freed run read after its flush", read_freed, p[2 * RUNS - 2]);
	int hits = 0;
	for (int i = 0; i < RUNS; i++) {
		if (!(q[i] = xpfo_calloc(1, RUN)))
			tu_hard_error("calloc of %u bytes failed", RUN);
		if (!is_freed(q[i], p, 2 * RUNS))
			continue;
		hits++;
		for (size_t k = 0; k < RUN; k++)
			if (((unsigned char *)q[i])[k]) {
				CHECK(0, "calloc over a freed run's pages at %p: byte %zu is %#x", q[i],
				      k, ((unsigned char *)q[i])[k]);
				break;
			}
	}
	CHECK(hits > 0, "no calloc landed on a freed run's pages (of %d)", RUNS);
	printf("zapped: %d of %d callocs over freed runs' pages, all zero\n", hits, RUNS);
	for (int i = 0; i < RUNS; i++)
		xpfo_free(q[i]);
	for (int i = 1; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();

	/* the close after the release fails: quarantined, never reused */
	xpfo_stats_get(&s0, sizeof s0);
	for (int i = 0; i < 2 * RUNS; i++) {
		if (!(p[i] = xpfo_malloc(RUN)))
			tu_hard_error("malloc of %u bytes failed", RUN);
		memset(p[i], 0x5a, RUN);
	}
	xpfo_flush();
	for (int i = 0; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo__test_inject(TU_OS_PROTECT, EIO, 0, 1);
	xpfo_flush();
	xpfo__test_inject(TU_OS_PROTECT, 0, 0, 0);
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long long fails = D(s0, s1, revoke_failures), quar = D(s0, s1, pages_quarantined);
	printf("zapped: one close failed: %llu revocation failures, %llu pages quarantined\n",
	       fails, quar);
	CHECK(fails == 1 && quar >= RUN / 4096, "a failed close: %llu revocation failures, %llu "
	      "pages quarantined, want 1 and at least %u", fails, quar, RUN / 4096);
	int landed = 0;
	for (int i = 0; i < RUNS; i++) {
		if (!(q[i] = xpfo_malloc(RUN)))
			tu_hard_error("malloc of %u bytes failed", RUN);
	}
	/* which span failed is the first the flush closed: the lowest address */
	void *low = p[0];
	for (int i = 2; i < 2 * RUNS; i += 2)
		if ((char *)p[i] < (char *)low)
			low = p[i];
	for (int i = 0; i < RUNS; i++)
		landed += q[i] == low;
	CHECK(landed == 0, "a run landed on the quarantined span at %p", low);
	for (int i = 0; i < RUNS; i++)
		xpfo_free(q[i]);
	for (int i = 1; i < 2 * RUNS; i += 2)
		xpfo_free(p[i]);
	xpfo_flush();
	park_stop(t);
	xpfo_leave(prev);
}

/* zapped() again in a child under release=mprotect */
static void zapped_plain(void)
{
	char *argv[] = { "/proc/self/exe", "--zapped", NULL };
	const char *env[] = { "XPFO_OPTIONS=release=mprotect", NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 60, &r))
		tu_hard_error("cannot run the child");
	printf("%s", r.out);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "zapped, release=mprotect: %s; %s",
	      tu_status_str(r.status), r.err);
}

int main(int argc, char **argv)
{
	pthread_t t;

	tu_timeout(60);
	if (tu_has_arg(argc, argv, "--zapped")) {
		zapped();
		tu_exit();
	}
	xpfo_free(xpfo_malloc(16)); /* this thread's state */
	cycle("alone", 0);
	park_start(&t);
	cycle("with a thread parked", 1);
	park_stop(t);
	cycle("after it exited", 0);
	in_compartment();
	batch();
	zapped();
	zapped_plain();
	tu_exit();
}
