/* alloc.c - allocator micro benchmarks that run under any malloc.
 *
 * The xb-micro binary is linked against nothing but libc and Google
 * Benchmark; the runner executes it once per allocator with LD_PRELOAD
 * (glibc: no preload).  Every body touches what it allocates, as a program
 * would, and checks what it can (calloc returns zeros, the cross-thread
 * ring hands over intact objects); a failed check skips the benchmark with
 * an error, which the runner reports.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "xb.h"

/* Sizes 8 B .. 1 MiB, powers of two. */
#define SIZE_CLASSES                                                         \
	XB_ARGS(8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, \
		32768, 65536, 131072, 262144, 524288, 1048576)

/* ---- malloc/free pairs: one malloc and one free, first byte written ---- */

static void bm_malloc_free(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0);

	while (xb_run_batch(s, 16)) {
		for (int i = 0; i < 16; i++) {
			char *p = xb_escape(malloc(n));
			p[0] = (char)i;
			free(xb_escape(p));
		}
	}
	xb_items(s, xb_iterations(s));
}
XB_BENCH(malloc_free, "malloc_free", bm_malloc_free, .args = SIZE_CLASSES);

/* ---- batch: allocate BATCH objects, then free them in some order ---- */

#define BATCH 1024
enum order { LIFO, FIFO, RANDOM };

static void batch_body(struct xb_state *s, enum order order)
{
	size_t n = (size_t)xb_arg(s, 0);
	void **p = malloc(BATCH * sizeof *p);
	unsigned *perm = malloc(BATCH * sizeof *perm);
	uint64_t seed = 42;

	if (!p || !perm) {
		xb_skip(s, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < BATCH; i++)
		perm[i] = order == LIFO ? BATCH - 1 - i : i;
	for (unsigned i = BATCH - 1; order == RANDOM && i > 0; i--) {
		unsigned j = (unsigned)(xb_rand(&seed) % (i + 1));
		unsigned t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	while (xb_run(s)) {
		for (unsigned i = 0; i < BATCH; i++) {
			p[i] = malloc(n);
			*(volatile char *)p[i] = 1;
		}
		for (unsigned i = 0; i < BATCH; i++)
			free(p[perm[i]]);
	}
	/* items = objects allocated and freed */
	xb_items(s, xb_iterations(s) * BATCH);
out:
	free(p);
	free(perm);
}

static void bm_batch_lifo(struct xb_state *s) { batch_body(s, LIFO); }
static void bm_batch_fifo(struct xb_state *s) { batch_body(s, FIFO); }
static void bm_batch_random(struct xb_state *s) { batch_body(s, RANDOM); }
XB_BENCH(batch_lifo, "batch1024_lifo", bm_batch_lifo, .args = XB_ARGS(16, 256, 4096));
XB_BENCH(batch_fifo, "batch1024_fifo", bm_batch_fifo, .args = XB_ARGS(16, 256, 4096));
XB_BENCH(batch_random, "batch1024_random", bm_batch_random,
	 .args = XB_ARGS(16, 256, 4096));

/* ---- realloc growth chains ---- */

/* Grow from 16 bytes to the argument by 1.5x steps (a vector). */
static void bm_realloc_grow(struct xb_state *s)
{
	size_t max = (size_t)xb_arg(s, 0);
	int64_t calls = 0;

	while (xb_run(s)) {
		char *p = NULL;
		for (size_t n = 16; n <= max; n += n / 2) {
			char *q = realloc(p, n);
			if (!q) {
				xb_skip(s, "realloc failed");
				break;
			}
			p = q;
			p[n - 1] = 1;
			calls++;
		}
		free(xb_escape(p));
	}
	xb_items(s, calls);
}
XB_BENCH(realloc_grow, "realloc_grow1.5x", bm_realloc_grow,
	 .args = XB_ARGS(4096, 65536, 1048576));

/* Grow by 64 bytes at a time up to the argument (a string builder),
 * checking that the first byte survives every move. */
static void bm_realloc_append(struct xb_state *s)
{
	size_t max = (size_t)xb_arg(s, 0);
	int64_t calls = 0;

	while (xb_run(s)) {
		char *p = NULL;
		for (size_t n = 64; n <= max; n += 64) {
			char *q = realloc(p, n);
			if (!q || (p && q[0] != 'x')) {
				xb_skip(s, q ? "realloc lost data" : "realloc failed");
				free(q ? q : p);
				return;
			}
			p = q;
			p[0] = 'x';
			p[n - 1] = 1;
			calls++;
		}
		free(xb_escape(p));
	}
	xb_items(s, calls);
}
XB_BENCH(realloc_append, "realloc_append64", bm_realloc_append,
	 .args = XB_ARGS(4096, 65536, 1048576));

/* ---- calloc of large sizes: must hand back zeros ---- */

static void bm_calloc_large(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0);

	while (xb_run(s)) {
		volatile char *p = calloc(1, n);
		if (!p || p[0] || p[n / 2] || p[n - 1]) {
			xb_skip(s, p ? "calloc memory not zero" : "calloc failed");
			free((void *)p);
			return;
		}
		p[n / 2] = 1; /* dirty it so a reuse must zero again */
		free((void *)p);
	}
	xb_items(s, xb_iterations(s));
}
XB_BENCH(calloc_large, "calloc", bm_calloc_large,
	 .args = XB_ARGS(65536, 262144, 1048576, 4194304, 16777216));

/* ---- cross-thread free: this thread allocates, a consumer frees ---- */

#define RING 1024 /* power of two */

struct ring {
	_Alignas(64) _Atomic uint64_t head; /* written by the producer */
	_Alignas(64) _Atomic uint64_t tail; /* written by the consumer */
	_Alignas(64) void *slot[RING];
	_Atomic int bad; /* consumer saw a corrupted object */
};

static void spin_wait(unsigned *spins)
{
	if (++*spins > 256) {
		*spins = 0;
		sched_yield(); /* 2 cores, shared with other jobs */
	} else {
		__builtin_ia32_pause();
	}
}

static void *consumer(void *arg)
{
	struct ring *r = arg;
	uint64_t t = 0;
	unsigned spins = 0;

	for (;;) {
		while (atomic_load_explicit(&r->head, memory_order_acquire) == t)
			spin_wait(&spins);
		char *p = r->slot[t & (RING - 1)];
		atomic_store_explicit(&r->tail, ++t, memory_order_release);
		if (!p)
			return NULL; /* end marker */
		if (p[0] != (char)0x5a)
			atomic_store(&r->bad, 1);
		free(p);
	}
}

static void push(struct ring *r, uint64_t *h, void *p)
{
	unsigned spins = 0;

	while (*h - atomic_load_explicit(&r->tail, memory_order_acquire) >= RING)
		spin_wait(&spins);
	r->slot[*h & (RING - 1)] = p;
	atomic_store_explicit(&r->head, ++*h, memory_order_release);
}

static void bm_cross_thread(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0);
	struct ring *r = aligned_alloc(64, sizeof *r);
	pthread_t th;
	uint64_t h = 0;

	if (!r) {
		xb_skip(s, "out of memory");
		return;
	}
	memset(r, 0, sizeof *r);
	if (pthread_create(&th, NULL, consumer, r) != 0) {
		xb_skip(s, "pthread_create failed");
		free(r);
		return;
	}
	while (xb_run_batch(s, 16)) {
		for (int i = 0; i < 16; i++) {
			char *p = malloc(n);
			p[0] = (char)0x5a;
			push(r, &h, p);
		}
	}
	push(r, &h, NULL);
	pthread_join(th, NULL);
	if (atomic_load(&r->bad))
		xb_skip(s, "consumer received a corrupted object");
	xb_items(s, xb_iterations(s));
	free(r);
}
XB_BENCH(cross_thread, "cross_thread_free", bm_cross_thread,
	 .args = XB_ARGS(64, 1024, 16384), .real_time = true);

/* ---- every thread allocates 64 objects and frees them (1 and 2 threads) ---- */

static void bm_thread_churn(struct xb_state *s)
{
	size_t n = (size_t)xb_arg(s, 0);
	void *p[64];

	while (xb_run(s)) {
		for (int i = 0; i < 64; i++) {
			p[i] = malloc(n);
			*(volatile char *)p[i] = 1;
		}
		for (int i = 63; i >= 0; i--)
			free(p[i]);
	}
	xb_items(s, xb_iterations(s) * 64);
}
XB_BENCH(thread_churn, "thread_churn64", bm_thread_churn,
	 .args = XB_ARGS(64, 4096), .threads = XB_THREADS(1, 2), .real_time = true);
