/* pairs.c - malloc/free pairs of small blocks, for instruction counts.
 *
 *   xb-pairs local  [N]   one thread: N times, free a random slot of a
 *                         window of 256 live blocks and malloc a new block
 *                         (16..1024 bytes) into it
 *   xb-pairs remote [N]   two threads: one mallocs N blocks (16..1024
 *                         bytes) in batches of 1024, the other frees them
 *
 * Plain C and libc only, run under each allocator with LD_PRELOAD.  The
 * counted work is in the functions named measure_* (callgrind's
 * --toggle-collect=measure_*, see bench/pairs.sh); sizes and slots are
 * drawn before, so every allocator runs the same calls.  Threads hand
 * batches over with semaphores (they sleep, never spin: the counts do not
 * depend on the scheduler).  Every block is stamped at malloc and checked
 * at free, so overlapping blocks fail the run.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 256
#define BATCH 1024

static uint32_t *sizes, *slots;
static size_t npairs;

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void draw(size_t n)
{
	uint64_t seed = 11;
	sizes = malloc(n * sizeof *sizes);
	slots = malloc(n * sizeof *slots);
	if (!sizes || !slots)
		exit(99);
	for (size_t i = 0; i < n; i++) {
		sizes[i] = 16 + (uint32_t)(lcg(&seed) % (1024 - 16 + 1));
		slots[i] = (uint32_t)(lcg(&seed) % WINDOW);
	}
}

static void stamp(char *p, size_t i)
{
	if (!p)
		exit(99);
	p[0] = (char)i;
	*(uint32_t *)(p + 12) = (uint32_t)i;
}

static void check(const char *p, size_t i)
{
	if (p[0] != (char)i || *(const uint32_t *)(p + 12) != (uint32_t)i) {
		fprintf(stderr, "xb-pairs: block %p overwritten\n", (const void *)p);
		exit(1);
	}
}

static inline void local_pairs(char **w, size_t *tag, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		uint32_t k = slots[i];
		check(w[k], tag[k]);
		free(w[k]);
		w[k] = malloc(sizes[i]);
		stamp(w[k], tag[k] = i);
	}
}

static __attribute__((noipa)) void warm_local(char **w, size_t *tag, size_t n)
{
	local_pairs(w, tag, 0, n);
}

static __attribute__((noipa)) void measure_local(char **w, size_t *tag, size_t n)
{
	local_pairs(w, tag, 0, n);
}

static int run_local(void)
{
	char *w[WINDOW];
	size_t tag[WINDOW];
	for (size_t k = 0; k < WINDOW; k++)
		stamp(w[k] = malloc(sizes[k]), tag[k] = k);
	warm_local(w, tag, npairs / 10); /* slabs made, not counted */
	measure_local(w, tag, npairs);
	for (size_t k = 0; k < WINDOW; k++)
		free(w[k]);
	return 0;
}

/* ---- remote: a producer and a consumer with two batch buffers ---- */
static char *buf[2][BATCH];
static sem_t full[2], empty[2];

static __attribute__((noipa)) void measure_produce(char **b, size_t from)
{
	for (size_t i = 0; i < BATCH; i++)
		stamp(b[i] = malloc(sizes[from + i]), from + i);
}

static __attribute__((noipa)) void measure_consume(char **b, size_t from)
{
	for (size_t i = 0; i < BATCH; i++) {
		check(b[i], from + i);
		free(b[i]);
	}
}

static void *consumer(void *arg)
{
	(void)arg;
	for (size_t n = 0, k = 0; n < npairs; n += BATCH, k ^= 1) {
		sem_wait(&full[k]);
		measure_consume(buf[k], n);
		sem_post(&empty[k]);
	}
	return NULL;
}

static int run_remote(void)
{
	pthread_t th;
	for (int k = 0; k < 2; k++)
		if (sem_init(&full[k], 0, 0) || sem_init(&empty[k], 0, 1))
			return 99;
	npairs -= npairs % BATCH;
	if (pthread_create(&th, NULL, consumer, NULL))
		return 99;
	for (size_t n = 0, k = 0; n < npairs; n += BATCH, k ^= 1) {
		sem_wait(&empty[k]);
		measure_produce(buf[k], n);
		sem_post(&full[k]);
	}
	pthread_join(th, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "local") && strcmp(argv[1], "remote"))) {
		fprintf(stderr, "usage: xb-pairs local|remote [pairs]\n");
		return 2;
	}
	npairs = argc > 2 ? strtoull(argv[2], NULL, 10) : 200000;
	if (npairs < 2 * BATCH)
		npairs = 2 * BATCH;
	draw(npairs);
	return argv[1][0] == 'l' ? run_local() : run_remote();
}
