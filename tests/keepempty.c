/* keepempty.c - a thread heap keeps a bounded number of its empty slabs
 * (alloc/slab.c, slab_keep_empty: at most 64 pages) instead of retiring
 * each at once, and retires them when its thread exits.
 *
 * A thread fills 200 one-page slabs (25,600 blocks of 24 bytes, 128 to a
 * slab) and frees every block: each retired slab is one range queued for
 * revocation (revoke_queued), so between 2 and 65 slabs must stay (64
 * kept, and the one the heap allocates from, which never retires), and
 * all 200 must be queued once the thread has exited.  In a child, so that
 * no other thread allocates meanwhile. */
#include "testutil.h"

#include <pthread.h>
#include <sys/wait.h>

#define SLABS 200
#define PER_SLAB 128 /* 24 bytes (+ an 8-byte canary): the 32-byte class */
static void *blocks[SLABS * PER_SLAB];
static struct xpfo_stats s0, s1, s2;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < SLABS * PER_SLAB; i++)
		if (!(blocks[i] = xpfo_malloc(24)))
			return "malloc failed";
	for (int i = 0; i < SLABS * PER_SLAB; i++)
		xpfo_free(blocks[i]);
	xpfo_stats_get(&s1, sizeof s1);
	return NULL;
}

static int keep(void *arg)
{
	(void)arg;
	pthread_t t;
	void *err;
	xpfo_stats_get(&s0, sizeof s0);
	if (pthread_create(&t, NULL, worker, NULL) || pthread_join(t, &err) || err)
		return 99;
	xpfo_stats_get(&s2, sizeof s2);
	uint64_t retired = s1.revoke_queued - s0.revoke_queued;
	uint64_t at_exit = s2.revoke_queued - s0.revoke_queued;
	fprintf(stderr, "retired while running %llu, after exit %llu\n",
		(unsigned long long)retired, (unsigned long long)at_exit);
	return retired >= SLABS - 65 && retired < SLABS - 1 && at_exit >= SLABS ? 0 : 1;
}

int main(void)
{
	tu_prog = "keepempty";
	struct tu_child r;
	if (tu_run_child(keep, NULL, 120, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "200 slabs emptied: 2..65 stay, all retired at exit: %s; stderr: %s",
	      tu_status_str(r.status), r.err);
	tu_exit();
}
