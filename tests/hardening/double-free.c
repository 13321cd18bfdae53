/* double-free.c - a second free of a block is fatal, for every kind of
 * block and under every profile (the check has no switch).
 *
 *   xpfo: fatal: double free of <p> (compartment "root")
 *
 * Controls: the same programs with one free end cleanly and silently, so
 * the check is not just "any second call aborts".
 */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int twice(size_t n, int flush, int second_free)
{
	char *p = malloc(n);
	if (!p)
		return 97;
	memset(p, 1, n);
	free(p);
	if (flush)
		xpfo_flush();
	if (!second_free)
		return 0;
	tu_expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(h_opaque(p));
	return 0;
}

static int c_small(const char *a) { (void)a; return twice(32, 0, 1); }
static int c_small_once(const char *a) { (void)a; return twice(32, 0, 0); }
static int c_largest_small(const char *a) { (void)a; return twice(16384 - 8, 0, 1); }
static int c_run(const char *a) { (void)a; return twice(65536, 0, 1); }
static int c_run_flushed(const char *a) { (void)a; return twice(65536, 1, 1); }
static int c_run_once(const char *a) { (void)a; return twice(65536, 1, 0); }
static int c_huge(const char *a) { (void)a; return twice(5u << 20, 1, 1); }

/* A run freed after other runs of its segment were freed and revoked, so
 * the whole segment may have gone back to the allocator. */
static int c_run_segment_gone(const char *a)
{
	(void)a;
	char *other = malloc(65536);
	char *p = malloc(65536);
	if (!other || !p)
		return 97;
	free(p);
	free(other);
	xpfo_flush();
	tu_expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(h_opaque(p));
	return 0;
}

/* The second free from another thread (a remote free of a free slot). */
static void *p_shared;
static void *free_it(void *u)
{
	(void)u;
	free(h_opaque(p_shared));
	return NULL;
}

static int c_small_other_thread(const char *a)
{
	(void)a;
	pthread_t t;
	char *p = malloc(100);
	if (!p)
		return 97;
	memset(p, 1, 100);
	p_shared = p;
	free(p);
	tu_expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	if (pthread_create(&t, NULL, free_it, NULL))
		return 97;
	pthread_join(t, NULL);
	return 0;
}

/* The first free from another thread (a remote free), the second here. */
static int c_small_remote_first(const char *a)
{
	(void)a;
	pthread_t t;
	char *p = malloc(100);
	if (!p)
		return 97;
	memset(p, 1, 100);
	p_shared = p;
	if (pthread_create(&t, NULL, free_it, NULL))
		return 97;
	pthread_join(t, NULL);
	tu_expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(h_opaque(p));
	return 0;
}

/* A freed run whose tail a smaller run took back (guard-page.c, run-tail):
 * its head is still queued, and a second free of it still reads as one. */
static int c_run_tail(const char *a)
{
	(void)a;
	char *p, *q;
	int e = h_run_tail(&p, &q);
	if (e)
		return e;
	tu_expect("xpfo: fatal: double free of %p" ROOT, (void *)p);
	free(h_opaque(p));
	return 0;
}

static const struct hcase cases[] = {
	{ "small-remote-first", c_small_remote_first },
	{ "small", c_small },
	{ "small-once", c_small_once },
	{ "largest-small", c_largest_small },
	{ "small-other-thread", c_small_other_thread },
	{ "run", c_run },
	{ "run-flushed", c_run_flushed },
	{ "run-segment-gone", c_run_segment_gone },
	{ "run-once", c_run_once },
	{ "run-tail", c_run_tail },
	{ "huge", c_huge },
};

#define ALL(c, x, v)                                                       \
	{ c, "profile=default", x, v, NULL, NULL, NULL },                  \
	{ c, "profile=strict", x, v, NULL, NULL, NULL },                   \
	{ c, "profile=light", x, v, NULL, NULL, NULL }

static const struct hrun runs[] = {
	ALL("small", HX_DETECT, SIGABRT),
	ALL("largest-small", HX_DETECT, SIGABRT),
	ALL("small-other-thread", HX_DETECT, SIGABRT),
	ALL("small-remote-first", HX_DETECT, SIGABRT),
	ALL("run", HX_DETECT, SIGABRT),
	ALL("run-flushed", HX_DETECT, SIGABRT),
	ALL("run-segment-gone", HX_DETECT, SIGABRT),
	ALL("huge", HX_DETECT, SIGABRT),
	{ "run-tail", "profile=default", HX_DETECT, SIGABRT, NULL, NULL, NULL },
	ALL("small-once", HX_SILENT, 0),
	ALL("run-once", HX_SILENT, 0),
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "double-free", cases, NELEM(cases), runs, NELEM(runs));
}
