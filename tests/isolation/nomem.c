/* nomem.c - closed compartments stay closed when /proc/self/mem cannot be
 * used (a container that mounts its own /proc, a sandbox that denies open;
 * simulated with xpfo__test_inject(TU_OS_MEM, ENOSYS)).
 *
 * 1. A root thread spins reading a closed compartment's secret with write(2)
 *    to a pipe (EFAULT on a protected page: no signal) while the main thread
 *    makes 20,000 xpfo_malloc_in / free pairs of the secret's size class
 *    into that closed compartment, whose hardening (canary written at
 *    allocation, checked and zeroed at free) must reach its slots: the
 *    secret is never read, and the heap's VMA count does not grow.
 *    Also 2,000 transfers of a 64 KiB block between two closed compartments
 *    (fresh frames by copy) while the spy reads it: never read.
 * 2. The hardening still works on that path: a corrupted canary of a closed
 *    compartment's slot freed from root is fatal with the canary line.
 * 3. xpfo_calloc_in into the closed compartment gives zeros.
 * 4. When the slot's pages cannot be moved either (remapping made to fail),
 *    the write the allocation needs is fatal with a line that says why.
 */
#include "iso.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE 48
#define PAIRS 20000

static xpfo_compartment_t *comp;
static char *secret;
static int stop;
static long reads, tries;

static void *spy(void *arg)
{
	(void)arg;
	int fd[2];
	char c;
	if (pipe(fd))
		tu_hard_error("pipe: %s", strerror(errno));
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		tries++;
		if (write(fd[1], secret, 1) == 1) {
			reads++;
			if (read(fd[0], &c, 1) != 1)
				tu_hard_error("pipe read");
		}
	}
	close(fd[0]);
	close(fd[1]);
	return NULL;
}

static void spin_reads(void)
{
	xpfo_compartment_t *prev = xpfo_enter(comp);
	secret = malloc(SIZE);
	if (!prev || !secret)
		tu_hard_error("enter / malloc: %s", strerror(errno));
	memset(secret, 'S', SIZE);
	xpfo_leave(prev);
	struct xpfo_stats a, b;
	tu_stats(&a);
	pthread_t th;
	if (pthread_create(&th, NULL, spy, NULL))
		tu_hard_error("pthread_create");
	for (int i = 0; i < PAIRS; i++) {
		void *p = xpfo_malloc_in(comp, SIZE);
		if (!p)
			tu_hard_error("xpfo_malloc_in: %s", strerror(errno));
		free(p);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	tu_stats(&b);
	CHECK(reads == 0, "a root thread read the closed compartment's secret %ld times in %ld "
	      "tries during %d xpfo_malloc_in/free pairs", reads, tries, PAIRS);
	CHECK(b.vmas <= a.vmas + 16, "VMAs in the heap grew from %llu to %llu",
	      (unsigned long long)a.vmas, (unsigned long long)b.vmas);
	CHECK(b.touches_skipped == 0, "%llu slot checks skipped",
	      (unsigned long long)b.touches_skipped);
	fprintf(stderr, "     %d xpfo_malloc_in/free pairs into the closed compartment: the "
			"secret read %ld times in %ld tries; heap VMAs %llu -> %llu\n",
		PAIRS, reads, tries, (unsigned long long)a.vmas, (unsigned long long)b.vmas);
	prev = xpfo_enter(comp);
	CHECK(secret[0] == 'S' && secret[SIZE - 1] == 'S', "the secret changed");
	xpfo_leave(prev);
}

/* Transfers between two closed compartments copy the block to fresh
 * frames: without /proc/self/mem it is read away from its address. */
static void spin_transfers(void)
{
	xpfo_compartment_t *other = xpfo_compartment_create("other", 0);
	xpfo_compartment_t *prev = xpfo_enter(comp);
	char *block = malloc(65536);
	if (!other || !prev || !block)
		tu_hard_error("create / enter / malloc: %s", strerror(errno));
	memset(block, 'T', 65536);
	xpfo_leave(prev);
	secret = block + 4096;
	reads = tries = 0;
	__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
	pthread_t th;
	if (pthread_create(&th, NULL, spy, NULL))
		tu_hard_error("pthread_create");
	int failed = 0;
	for (int i = 0; i < 2000; i++)
		failed += xpfo_transfer(block, i % 2 ? comp : other) != 0;
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK(failed == 0, "%d of 2000 transfers failed", failed);
	CHECK(reads == 0, "a root thread read a block of a closed compartment %ld times in %ld "
	      "tries during 2000 transfers between closed compartments", reads, tries);
	fprintf(stderr, "     2000 transfers between closed compartments: the block read %ld "
			"times in %ld tries\n", reads, tries);
	prev = xpfo_enter(comp);
	CHECK(block[0] == 'T' && block[65535] == 'T', "the transferred block lost its bytes");
	free(block);
	xpfo_leave(prev);
}

/* Writes past the block on purpose: the sanitizer build's object-size
 * check would stop it before xpfo's canary check could. */
__attribute__((no_sanitize("undefined"))) static int canary_case(void *arg)
{
	(void)arg;
	xpfo_compartment_t *prev = xpfo_enter(comp);
	char *p = malloc(SIZE);
	size_t n = malloc_usable_size(p);
	p[n] = 'X'; /* the canary's first byte is zero */
	xpfo_leave(prev);
	tu_expect("xpfo: fatal: canary of %p (size class <N>) corrupted: buffer overflow "
		   "(compartment \"root\")", (void *)p);
	free(p);
	return 0;
}

static int nomove_case(void *arg)
{
	(void)arg;
	xpfo__test_inject(TU_OS_PURGE, ENOMEM, 0, 1000);
	tu_expect("xpfo: fatal: cannot write a slot of compartment \"nomem\": no /proc/self/mem "
		   "and its pages cannot be moved (errno 12)");
	free(xpfo_malloc_in(comp, SIZE));
	return 0;
}

static void calloc_zero(void)
{
	/* dirty a slot of the class, freed inside (zero_on_free may be off) */
	xpfo_compartment_t *prev = xpfo_enter(comp);
	char *q = malloc(SIZE);
	memset(q, 0xee, SIZE);
	free(q);
	xpfo_leave(prev);
	int nonzero = 0;
	char *p[64];
	for (int i = 0; i < 64; i++)
		p[i] = xpfo_calloc_in(comp, 1, SIZE);
	prev = xpfo_enter(comp);
	for (int i = 0; i < 64; i++)
		for (int k = 0; k < SIZE; k++)
			nonzero += p[i][k] != 0;
	for (int i = 0; i < 64; i++)
		free(p[i]);
	xpfo_leave(prev);
	CHECK(nonzero == 0, "xpfo_calloc_in into the closed compartment: %d non-zero bytes", nonzero);
}

int main(int argc, char **argv)
{
	(void)argc;
	tu_prog = "nomem";
	tu_timeout(120);
	tu_xpfo_init(1);
	iso_stdio_warmup();
	if (strcmp(xpfo_backend(), "mprotect"))
		tu_on_mprotect(argv, xpfo_backend(),
			       "on pkeys closed compartments are reached through keys");
	if (xpfo__test_inject(TU_OS_MEM, ENOSYS, 0, 1u << 30))
		tu_hard_error("xpfo__test_inject: %s", strerror(errno));
	comp = xpfo_compartment_create("nomem", 0);
	if (!comp)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	spin_reads();
	spin_transfers();
	calloc_zero();
	struct tu_case canary = { "corrupted canary of a closed compartment's slot, freed from root",
				   canary_case, NULL, SIGABRT };
	tu_run_case(&canary, 30, NULL);
	struct tu_case nomove = { "neither /proc/self/mem nor moving: the canary write is fatal",
				   nomove_case, NULL, SIGABRT };
	tu_run_case(&nomove, 30, NULL);
	tu_exit();
}
