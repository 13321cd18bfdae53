/* threadexit.c - a thread's state goes back to the metadata pool when the
 * thread exits, so a program may start any number of threads over its life.
 *
 * Found by tests/fuzz/threads (one thread per input): after about 8,000
 * inputs, "xpfo: fatal: out of metadata memory for a thread state".  A
 * thread state holds its gather (4096 ranges), well over 64 KiB, and the
 * metadata pool's meta_free keeps blocks of that size instead of reusing
 * them, while metadata_bytes says they were freed.  Here 12,000 threads,
 * one after another, each allocate and free; it runs in a child so a
 * fatal is reported with its line. */
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

static int many_threads(void *arg)
{
	(void)arg;
	for (int i = 0; i < 12000; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL))
			return 99;
		pthread_join(t, NULL);
	}
	return 0;
}

int main(void)
{
	tu_prog = "threadexit";
	struct tu_child r;
	if (tu_run_child(many_threads, NULL, 240, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "12,000 threads one after another: %s; stderr: %s", tu_status_str(r.status), r.err);
	tu_exit();
}
