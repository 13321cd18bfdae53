/* tsan-remote.c - ThreadSanitizer's view of xpfo's cross-thread paths.
 *
 * Built with clang -fsanitize=thread over the library's sources without
 * the libc names (the --disable-override build), so TSan keeps its own
 * malloc and sees every access xpfo makes.  Threads (default 4, 3 s):
 *   - hand blocks round a ring (xpfo_malloc / calloc / aligned_alloc, every
 *     size class and page runs); the receiver checks and frees them: remote
 *     frees, the notification stack, slab retirement;
 *   - enter and leave two shared compartments and allocate in them with
 *     xpfo_malloc_in, freeing on other threads (open/close walks against
 *     grants);
 *   - transfer page runs between the compartments while others enter and
 *     leave; flush at random;
 *   - exit in generations, leaving blocks on other threads' slabs.
 * Exit 0 when every check passed; a race makes TSan exit 66.
 * Usage: tsan-remote [threads] [seconds] */
#include "xpfo.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 256
#define MAXT 16

struct inbox {
	pthread_mutex_t lock;
	void *b[RING];
	size_t n[RING];
	unsigned head, tail;
};

static struct inbox box[MAXT];
static xpfo_compartment_t *comp[2];
static int nthreads = 4;
static double seconds = 3;
static atomic_int failed;
static double t_end;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fail(const char *what, const void *p)
{
	fprintf(stderr, "tsan-remote: %s (%p)\n", what, p);
	atomic_store(&failed, 1);
}

/* A block carries its size in its first word and a byte pattern after. */
static void fill(unsigned char *p, size_t n)
{
	if (n >= 8)
		memcpy(p, &n, sizeof n);
	for (size_t k = 8; k < n && k < 4096; k++)
		p[k] = (unsigned char)(k * 31 + n);
}

static void check_free(unsigned char *p, size_t n)
{
	size_t got = n;
	if (n >= 8)
		memcpy(&got, p, sizeof got);
	for (size_t k = 8; k < n && k < 4096; k++)
		if (p[k] != (unsigned char)(k * 31 + n)) {
			fail("pattern lost", p);
			break;
		}
	if (got != n || xpfo_usable_size(p) < n)
		fail("size lost", p);
	xpfo_free(p);
}

static int send(int to, void *p, size_t n)
{
	struct inbox *b = &box[to];
	pthread_mutex_lock(&b->lock);
	int ok = b->tail - b->head < RING;
	if (ok) {
		b->b[b->tail % RING] = p;
		b->n[b->tail++ % RING] = n;
	}
	pthread_mutex_unlock(&b->lock);
	return ok;
}

static void drain(int me)
{
	struct inbox *b = &box[me];
	for (;;) {
		pthread_mutex_lock(&b->lock);
		void *p = NULL;
		size_t n = 0;
		if (b->head != b->tail) {
			p = b->b[b->head % RING];
			n = b->n[b->head++ % RING];
		}
		pthread_mutex_unlock(&b->lock);
		if (!p)
			return;
		check_free(p, n);
	}
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = rnd(s);
	switch (r % 8) {
	case 0: return 20000 + r % 200000;     /* page runs */
	case 1: return 4096 + r % 12000;
	default: return 1 + r % 1024;
	}
}

static void *alloc_root(uint64_t *s, size_t n)
{
	switch (rnd(s) % 3) {
	case 0: return xpfo_malloc(n);
	case 1: return xpfo_calloc(1, n);
	default: return xpfo_aligned_alloc((size_t)16 << rnd(s) % 9, n);
	}
}

/* Inside a shared compartment: allocate there, free some here and send
 * the rest to be freed from outside (n = 0: the receiver cannot read it). */
static void in_compartment(int me, uint64_t *s)
{
	xpfo_compartment_t *c = comp[rnd(s) & 1];
	xpfo_compartment_t *prev = xpfo_enter(c);
	if (prev != xpfo_root()) {
		fail("enter", c);
		return;
	}
	for (int i = 0; i < 8; i++) {
		size_t n = pick_size(s);
		unsigned char *p = xpfo_malloc(n);
		if (!p || xpfo_owner(p) != c) {
			fail("malloc inside a compartment", p);
			continue;
		}
		fill(p, n);
		if (rnd(s) & 1)
			check_free(p, n);
		else if (!send((me + 1) % nthreads, p, 0))
			xpfo_free(p);
	}
	xpfo_leave(prev);
}

/* A page run moves root -> compartment -> root while others go in and out. */
static void transfer_round(uint64_t *s)
{
	size_t n = 20000 + rnd(s) % 100000;
	unsigned char *p = xpfo_malloc(n);
	if (!p)
		return fail("malloc of a run", p);
	fill(p, n);
	xpfo_compartment_t *c = comp[rnd(s) & 1];
	if (xpfo_transfer(p, c) || xpfo_owner(p) != c)
		fail("transfer to a compartment", p);
	if (xpfo_transfer(p, xpfo_root()) || xpfo_owner(p) != xpfo_root())
		fail("transfer back to root", p);
	check_free(p, n);
}

static void step(int me, uint64_t *s)
{
	unsigned r = rnd(s) % 16;
	if (r < 10) {
		size_t n = pick_size(s);
		unsigned char *p = alloc_root(s, n);
		if (!p)
			return fail("allocation", p);
		fill(p, n);
		if (!send((int)(rnd(s) % (uint64_t)nthreads), p, n))
			check_free(p, n);
	} else if (r < 12) {
		in_compartment(me, s);
	} else if (r == 12) {
		size_t n = pick_size(s);
		void *p = xpfo_malloc_in(comp[rnd(s) & 1], n);
		if (!p || !send((me + 1) % nthreads, p, 0))
			xpfo_free(p);
	} else if (r == 13) {
		transfer_round(s);
	} else if (r == 14) {
		if (xpfo_flush())
			fail("flush", NULL);
	} else {
		drain(me);
	}
}

static void *thread_main(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(me + 1) + (uint64_t)time(NULL);
	while (now() < t_end && !atomic_load(&failed))
		step(me, &s);
	return NULL; /* exits with blocks on others' slabs and in inboxes */
}

int main(int argc, char **argv)
{
	if (argc > 1)
		nthreads = atoi(argv[1]) < 2 ? 2 : atoi(argv[1]) > MAXT ? MAXT : atoi(argv[1]);
	if (argc > 2)
		seconds = atof(argv[2]);
	for (int i = 0; i < MAXT; i++)
		pthread_mutex_init(&box[i].lock, NULL);
	comp[0] = xpfo_compartment_create("a", 0);
	comp[1] = xpfo_compartment_create("b", 0);
	if (!comp[0] || !comp[1])
		return 99;
	for (int gen = 0; gen < 3; gen++) {
		pthread_t t[MAXT];
		t_end = now() + seconds / 3;
		for (int i = 0; i < nthreads; i++)
			pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
		for (int i = 0; i < nthreads; i++)
			pthread_join(t[i], NULL);
	}
	for (int i = 0; i < nthreads; i++)
		drain(i);
	if (xpfo_compartment_destroy(comp[0]) || xpfo_compartment_destroy(comp[1]))
		fail("destroy", NULL);
	printf("tsan-remote: %d threads, %.1f s: %s\n", nthreads, seconds,
	       atomic_load(&failed) ? "FAILED" : "ok");
	return atomic_load(&failed) ? 1 : 0;
}
