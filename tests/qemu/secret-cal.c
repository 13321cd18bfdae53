/* tests/qemu/secret-cal: the measurement that ties xpfo's two halves
 * together.  First touch of 64 MiB of secret compartment memory through
 * the allocator (malloc inside an XPFO_COMPARTMENT_SECRET compartment, then
 * one write per page), while a busy thread spins on the other CPU; prints
 * the function-call interrupts (the CAL line of /proc/interrupts, summed
 * over CPUs: a kernel-range TLB flush on x86, one per page on a kernel
 * without the companion patch) and the TLB shootdowns the touch cost.
 *
 * Usage: secret-cal [MiB] [block KiB]   (default 64 MiB in 1024 KiB blocks)
 * Runs as root in a guest (RLIMIT_MEMLOCK); statically linked so that
 * kernel/test.sh --extra DIR (first boot of each kernel) and
 * tests/qemu/run.sh can run it.  Exit 0 with the line
 *   secret-cal: kernel=R mib=64 pages=16384 cal=N tlb=M ns_per_page=T ...
 * 77 when the kernel refuses memfd_secret, 1 on any other failure. */

#include "xpfo.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>

static long irq_count(const char *name)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[4096];
	long sum = -1;
	size_t n = strlen(name);
	while (f && fgets(line, sizeof line, f)) {
		char *p = line;
		while (*p == ' ')
			p++;
		if (strncmp(p, name, n) || p[n] != ':')
			continue;
		sum = 0;
		for (p += n + 1;;) {
			char *e;
			long v = strtol(p, &e, 10);
			if (e == p)
				break;
			sum += v;
			p = e;
		}
	}
	if (f)
		fclose(f);
	return sum;
}

static volatile int stop;

static void *busy(void *arg)
{
	(void)arg;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(1, &set);
	sched_setaffinity(0, sizeof set, &set);
	while (!stop)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	size_t block = (argc > 2 ? strtoul(argv[2], NULL, 10) : 1024) << 10;
	size_t nblocks = (mib << 20) / block;
	/* 6.1 charges secret pages to RLIMIT_MEMLOCK even for root */
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		printf("secret-cal: cannot raise RLIMIT_MEMLOCK (errno %d)\n", errno);
	xpfo_compartment_t *s = xpfo_compartment_create("cal", XPFO_COMPARTMENT_SECRET);
	if (!s) {
		printf("secret-cal: no secret compartment (errno %d)\n", errno);
		return errno == ENOSYS ? 77 : 1;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	sched_setaffinity(0, sizeof set, &set);
	pthread_t t;
	pthread_create(&t, NULL, busy, NULL);
	xpfo_compartment_t *prev = xpfo_enter(s);
	char **b = calloc(nblocks, sizeof *b);
	struct timespec t0, t1;
	long cal0 = irq_count("CAL"), tlb0 = irq_count("TLB");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < nblocks; i++) {
		b[i] = malloc(block);
		if (!b[i]) {
			printf("secret-cal: malloc %zu failed (errno %d)\n", i, errno);
			return 1;
		}
		for (size_t k = 0; k < block; k += 4096)
			b[i][k] = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long cal1 = irq_count("CAL"), tlb1 = irq_count("TLB");
	xpfo_leave(prev);
	stop = 1;
	pthread_join(t, NULL);
	struct xpfo_stats st;
	xpfo_stats_get(&st, sizeof st);
	size_t pages = (mib << 20) / 4096;
	double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / pages;
	struct utsname u;
	uname(&u);
	printf("secret-cal: kernel=%s mib=%zu pages=%zu cal=%ld tlb=%ld ns_per_page=%.0f "
	       "secret_resident=%lu\n", u.release, mib, pages, cal0 < 0 ? -1 : cal1 - cal0, tlb0 < 0 ? -1 : tlb1 - tlb0, ns,
	       (unsigned long)st.secret_resident_bytes);
	return cal0 < 0 ? 1 : 0;
}
