/* threadexit.c - a thread's state goes back to the metadata pool when the
 * thread exits, so a program may start any number of threads over its life.
 *
 * Found by tests/fuzz/threads (one thread per input): after about 8,000
 * inputs, "xpfo: fatal: out of metadata memory for a thread state".  A
 * thread state holds its gather (4096 ranges), well over 64 KiB, and the
 * metadata pool's meta_free keeps blocks of that size instead of reusing
 * them, while metadata_bytes says they were freed.  Here 12,000 threads,
 * one after another, each allocate and free; it runs in a child so a
 * fatal is reported with its line.
 *
 * Then the cost of a thread's exit: 1,000 threads, one after another, each
 * allocating and freeing a small block, make at most 50 flush rounds and
 * 50 madvise calls.  A freed thread state stays resident for the next
 * thread (alloc/meta.c, META_KEEP_RESIDENT) instead of being purged at
 * every exit, a shootdown each. */
#include "testutil.h"

#include <pthread.h>
#include <string.h>
#include <sys/wait.h>

static void *worker(void *arg)
{
	(void)arg;
	xpfo_free(xpfo_malloc(16));
	return NULL;
}

static int many_exits(int n)
{
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL))
			return 99;
		pthread_join(t, NULL);
	}
	return 0;
}

static int many_threads(void *arg)
{
	(void)arg;
	return many_exits(12000);
}

static void exit_cost(void)
{
	struct xpfo_stats s0, s1;
	xpfo_stats_get(&s0, sizeof s0);
	if (many_exits(1000))
		tu_hard_error("pthread_create failed");
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long long rounds = s1.flush_rounds - s0.flush_rounds,
			   madv = s1.madvise_syscalls - s0.madvise_syscalls;
	printf("1,000 thread exits: %llu flush rounds, %llu madvise calls\n", rounds, madv);
	CHECK(rounds <= 50, "1,000 thread exits made %llu flush rounds, want <= 50", rounds);
	CHECK(madv <= 50, "1,000 thread exits made %llu madvise calls, want <= 50", madv);
}

int main(void)
{
	tu_prog = "threadexit";
	exit_cost();
	struct tu_child r;
	if (tu_run_child(many_threads, NULL, 240, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "12,000 threads one after another: %s; stderr: %s", tu_status_str(r.status), r.err);
	tu_exit();
}
