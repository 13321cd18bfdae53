/* bench/vm/counts.c - counts, not times, of the compartment workloads, for
 * the QEMU guest (timings under emulation mean nothing; counts do).  Run on
 * backend=pkeys and backend=mprotect by bench/vm/run.sh; prints one Markdown
 * row per workload. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "xpfo.h"

#define SWITCHES 10000
#define TRANSFERS 1000

static void row(const char *what, unsigned long n, const struct xpfo_stats *a,
		const struct xpfo_stats *b)
{
	unsigned long prot = (b->revoke_syscalls - a->revoke_syscalls) +
			     (b->grant_syscalls - a->grant_syscalls);
	printf("| %s | %s | %lu | %lu | %lu | %lu | %lu | %.3f |\n", xpfo_backend(), what, n,
	       (unsigned long)(b->revoke_syscalls - a->revoke_syscalls),
	       (unsigned long)(b->grant_syscalls - a->grant_syscalls),
	       (unsigned long)(b->pages_revoked - a->pages_revoked),
	       (unsigned long)(b->mmap_syscalls - a->mmap_syscalls + b->madvise_syscalls -
			       a->madvise_syscalls),
	       (double)prot / (double)n);
}

int main(void)
{
	struct xpfo_stats a, b;
	printf("counts: backend %s\n", xpfo_backend());
	/* 1. enter and leave a compartment holding 64 pages of live data */
	xpfo_compartment_t *c = xpfo_compartment_create("switch", 0);
	char *data = xpfo_malloc_in(c, 64 * 4096);
	xpfo_compartment_t *prev = xpfo_enter(c);
	memset(data, 1, 64 * 4096);
	xpfo_leave(prev);
	xpfo_stats_get(&a, sizeof a);
	for (int i = 0; i < SWITCHES; i++) {
		prev = xpfo_enter(c);
		data[i % (64 * 4096)]++;
		xpfo_leave(prev);
	}
	xpfo_stats_get(&b, sizeof b);
	row("enter+leave (64 live pages)", SWITCHES, &a, &b);
	/* 2. transfer a 16-page block between two compartments and back */
	xpfo_compartment_t *c2 = xpfo_compartment_create("other", 0);
	char *blk = xpfo_malloc_in(c, 16 * 4096);
	xpfo_stats_get(&a, sizeof a);
	for (int i = 0; i < TRANSFERS; i++)
		if (xpfo_transfer(blk, i % 2 ? c : c2)) {
			perror("xpfo_transfer");
			return 1;
		}
	xpfo_stats_get(&b, sizeof b);
	row("transfer (16 pages)", TRANSFERS, &a, &b);
	/* 3. free 10,000 page runs of a compartment from root (batched revocation) */
	void **p = malloc(10000 * sizeof *p);
	for (int i = 0; i < 10000; i++)
		p[i] = xpfo_malloc_in(c2, 16385);
	xpfo_stats_get(&a, sizeof a);
	for (int i = 0; i < 10000; i++)
		free(p[i]);
	xpfo_flush();
	xpfo_stats_get(&b, sizeof b);
	row("free 10,000 page runs + flush", 10000, &a, &b);
	return 0;
}
