/* forkalloc.c - fork while other threads allocate.
 *
 * Worker threads allocate, fill, check and free blocks of all sizes (and
 * pass some to each other) without pause, while the main thread forks again
 * and again.  Each child checks a block the parent allocated before the
 * fork, frees it, allocates and frees blocks of all sizes on its own thread
 * and on a new thread, and exits 0; a child that hangs (a lock held across
 * fork) is killed by an alarm and reported.  The parent checks and frees
 * its own copy of the block after every fork and keeps going.
 *
 * Usage: forkalloc [--forks N] [--threads T] [--require-xpfo]
 * Defaults: 100 forks (40 with XPFO_SKIP_SLOW set), 2 threads.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TU_REQUIRE_XPFO
#define TU_REQUIRE_XPFO 0
#endif

static atomic_int stop;
static atomic_int worker_failures;
static atomic_ulong worker_ops;

static const size_t fsizes[] = { 8, 24, 100, 500, 2048, 4096, 9000, 16384,
				 40000, 70000, 300000, 1u << 20, 3u << 20 };
#define NF (sizeof fsizes / sizeof fsizes[0])

/* A shared hand-off slot per worker pair, to free across threads. */
static _Atomic(void *) handoff[8];

static void *worker(void *arg)
{
	uintptr_t id = (uintptr_t)arg;
	uint64_t r = 0x1234 + id;
	unsigned long ops = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		size_t n = fsizes[tu_rand(&r) % NF];
		uint64_t seed = tu_rand(&r);
		unsigned char *p = malloc(n);
		if (!p) {
			atomic_fetch_add(&worker_failures, 1);
			break;
		}
		tu_fill(p, n, seed);
		unsigned char *q = realloc(p, n + 100);
		if (!q || tu_verify(q, n, seed) != (size_t)-1) {
			fprintf(stderr, "FAIL: worker %lu: realloc(%zu) lost data\n",
				(unsigned long)id, n);
			atomic_fetch_add(&worker_failures, 1);
			free(q ? q : p);
			break;
		}
		/* hand it to the next worker; free what is in our slot */
		memset(q, 0x77, 64);
		void *old = atomic_exchange(&handoff[id % 8], (void *)q);
		free(old);
		ops++;
	}
	atomic_fetch_add(&worker_ops, ops);
	return NULL;
}

struct child_arg {
	unsigned char *block;
	size_t size;
	uint64_t seed;
};

static void *child_thread(void *arg)
{
	(void)arg;
	for (size_t i = 0; i < NF; i++) {
		void *p = calloc(1, fsizes[i]);
		if (!p)
			return (void *)1;
		memset(p, 1, fsizes[i]);
		free(p);
	}
	return NULL;
}

static int child(void *arg)
{
	struct child_arg *a = arg;
	uint64_t r = 99;

	if (tu_verify(a->block, a->size, a->seed) != (size_t)-1) {
		fprintf(stderr, "child: the parent's block is not intact\n");
		return 2;
	}
	free(a->block);
	void *keep[NF];
	for (size_t i = 0; i < NF; i++) {
		keep[i] = malloc(fsizes[i]);
		if (!keep[i])
			return 3;
		tu_fill(keep[i], fsizes[i], i);
	}
	for (size_t i = 0; i < NF; i++) {
		if (tu_verify(keep[i], fsizes[i], i) != (size_t)-1)
			return 4;
		free(keep[i]);
	}
	for (int k = 0; k < 200; k++) {
		size_t n = fsizes[tu_rand(&r) % NF];
		void *p = malloc(n);
		if (!p)
			return 3;
		memset(p, k, n < 4096 ? n : 4096);
		free(p);
	}
	pthread_t t;
	void *res;
	if (pthread_create(&t, NULL, child_thread, NULL) != 0)
		return 5;
	pthread_join(t, &res);
	if (res)
		return 6;
	if (tu_x.present && tu_x.flush() != 0)
		return 7;
	return 0;
}

int main(int argc, char **argv)
{
	int require = TU_REQUIRE_XPFO, forks = 100, nthreads = 2;
	tu_prog = "forkalloc";
	if (getenv("XPFO_SKIP_SLOW") && *getenv("XPFO_SKIP_SLOW"))
		forks = 40;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--require-xpfo"))
			require = 1;
		else if (!strcmp(argv[i], "--forks") && i + 1 < argc)
			forks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			nthreads = atoi(argv[++i]);
		else
			tu_hard_error("usage: forkalloc [--forks N] [--threads T] "
				      "[--require-xpfo]");
	}
	if (forks < 1 || nthreads < 1 || nthreads > 8)
		tu_hard_error("bad --forks or --threads");
	tu_timeout(300);
	tu_xpfo_init(require);

	pthread_t t[8];
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i) != 0)
			tu_hard_error("pthread_create");

	uint64_t r = 7;
	int hung = 0;
	for (int f = 0; f < forks; f++) {
		struct child_arg a;
		struct tu_child c;

		a.size = fsizes[tu_rand(&r) % NF];
		a.seed = tu_rand(&r);
		a.block = malloc(a.size);
		CHECK(a.block != NULL, "parent malloc(%zu)", a.size);
		if (!a.block)
			break;
		tu_fill(a.block, a.size, a.seed);
		if (tu_run_child(child, &a, 20, &c) != 0)
			tu_hard_error("fork: %s", strerror(errno));
		int ok = WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0;
		if (WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGALRM)
			hung++;
		CHECK(ok, "fork %d: child %s%s; stderr: %s", f,
		      tu_status_str(c.status),
		      WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGALRM ?
			      " (hung: a lock held across fork?)" : "",
		      c.err);
		CHECK(tu_verify(a.block, a.size, a.seed) == (size_t)-1,
		      "fork %d: the parent's block changed", f);
		free(a.block);
		/* the parent keeps allocating too */
		void *p = malloc(fsizes[f % NF]);
		CHECK(p != NULL, "parent malloc after fork");
		free(p);
		if (tu_failures > 10 || hung > 2)
			break;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < 8; i++)
		free(atomic_exchange(&handoff[i], NULL));
	CHECK(atomic_load(&worker_failures) == 0, "%d worker failures",
	      atomic_load(&worker_failures));
	fprintf(stderr, "forkalloc: %d forks with %d threads allocating (%lu "
			"worker operations)\n",
		forks, nthreads, (unsigned long)atomic_load(&worker_ops));
	tu_exit();
}
