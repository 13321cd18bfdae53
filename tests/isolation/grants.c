/* grants.c - grants batched (issue 11): granting syscalls, counted.
 *
 * The workload: 20,000 blocks of 4 KiB (malloc(4096): one-page runs) are
 * allocated and touched, then all freed in allocation order and all
 * allocated again (the free-and-reallocate phase), in root (after a
 * compartment is created: before, root keeps 4 KiB blocks in slabs).  It runs in a
 * child exec'd once with the default options and once with
 * XPFO_OPTIONS=revoke=eager; the granting syscalls xpfo counts
 * (stats.grant_syscalls) over the free-and-reallocate phase must be at most
 * 0.05 of eager's.  Every reallocated block must be readable and writable
 * (no page was left revoked under it), and the blocks must not overlap.
 *
 * Informational (printed, not checked): the whole run (first allocation
 * included), the same with 4,000-byte blocks (slab slots, 8-page slabs), and
 * regrants_soon (revoked runs granted back to the same owner soon after).
 */
#include "iso.h"

#include <stdlib.h>
#include <string.h>

#define NBLK 20000

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* No two blocks of `size` bytes overlap. */
static int check_disjoint(void **blk, size_t size)
{
	uintptr_t *a = malloc(NBLK * sizeof *a);
	if (!a)
		tu_hard_error("malloc");
	for (int i = 0; i < NBLK; i++)
		a[i] = (uintptr_t)blk[i];
	qsort(a, NBLK, sizeof *a, cmp_ptr);
	int bad = 0;
	for (int i = 1; i < NBLK; i++)
		bad += a[i] < a[i - 1] + size;
	free(a);
	return bad;
}

static int work(size_t size)
{
	void **blk = calloc(NBLK, sizeof *blk);
	if (!blk)
		tu_hard_error("calloc");
	xpfo_flush();
	struct xpfo_stats s0, s1, s2;
	tu_stats(&s0);
	for (int i = 0; i < NBLK; i++) {
		blk[i] = malloc(size);
		if (!blk[i])
			tu_hard_error("allocation %d: %s", i, strerror(errno));
		memset(blk[i], 1, size);
	}
	tu_stats(&s1);
	for (int i = 0; i < NBLK; i++)
		free(blk[i]);
	for (int i = 0; i < NBLK; i++) {
		blk[i] = malloc(size);
		if (!blk[i])
			tu_hard_error("reallocation %d: %s", i, strerror(errno));
		memset(blk[i], 2, size); /* faults if a page stayed revoked */
	}
	tu_stats(&s2);
	int overlaps = check_disjoint(blk, size);
	printf("grants=%llu total_grants=%llu revokes=%llu total_revokes=%llu regrants=%llu "
	       "overlaps=%d\n",
	       (unsigned long long)(s2.grant_syscalls - s1.grant_syscalls),
	       (unsigned long long)(s2.grant_syscalls - s0.grant_syscalls),
	       (unsigned long long)(s2.revoke_syscalls - s1.revoke_syscalls),
	       (unsigned long long)(s2.revoke_syscalls - s0.revoke_syscalls),
	       (unsigned long long)(s2.regrants_soon - s0.regrants_soon), overlaps);
	fflush(stdout);
	return 0;
}

struct result {
	long long grants, total_grants, revokes, total_revokes, regrants, overlaps;
};

static struct result run(const char *options, const char *size)
{
	const char *args[] = { "--work", size, NULL };
	struct tu_child ch;
	if (iso_run_self(options, args, 300, &ch))
		tu_hard_error("could not run the workload");
	if (!WIFEXITED(ch.status) || WEXITSTATUS(ch.status))
		tu_hard_error("workload (%s) ended with %s:\n%s", options ? options : "defaults",
			      tu_status_str(ch.status), ch.err);
	struct result r = {
		iso_find_num(ch.out, "grants"), iso_find_num(ch.out, "total_grants"),
		iso_find_num(ch.out, "revokes"), iso_find_num(ch.out, "total_revokes"),
		iso_find_num(ch.out, "regrants"), iso_find_num(ch.out, "overlaps"),
	};
	if (r.grants < 0 || r.total_grants < 0 || r.overlaps < 0)
		tu_hard_error("unparsable workload output: %s", ch.out);
	return r;
}

static void show(const char *what, const struct result *r)
{
	fprintf(stderr, "     %-7s free+realloc: %lld grant, %lld revoke syscalls; whole run: %lld "
			"grant, %lld revoke; %lld regrants soon\n",
		what, r->grants, r->revokes, r->total_grants, r->total_revokes, r->regrants);
}

static double ratio(long long a, long long b) { return b ? (double)a / (double)b : -1; }

int main(int argc, char **argv)
{
	tu_prog = "grants";
	if (argc == 3 && !strcmp(argv[1], "--work")) {
		tu_xpfo_init(1);
		/* with a compartment in the process, root's malloc(4096) is a
		 * page run (before the first one it is a slab slot) */
		if (!xpfo_compartment_create("other", 0))
			tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
		return work((size_t)atol(argv[2]));
	}
	tu_xpfo_init(1);
	struct result b = run(NULL, "4096");
	struct result e = run("revoke=eager", "4096");
	fprintf(stderr, "     20,000 x 4 KiB (malloc(4096)):\n");
	show("batched", &b);
	show("eager", &e);
	double r = ratio(b.grants, e.grants);
	fprintf(stderr, "     granting syscalls batched/eager: %.3f (need <= 0.05); whole run %.3f\n",
		r, ratio(b.total_grants, e.total_grants));
	CHECK(b.overlaps == 0 && e.overlaps == 0, "overlapping blocks: %lld, %lld", b.overlaps,
	      e.overlaps);
	CHECK(e.grants >= NBLK / 2, "revoke=eager made only %lld granting syscalls", e.grants);
	CHECK(r >= 0 && b.grants * 20 <= e.grants,
	      "granting syscalls: %lld batched, %lld eager: %.3f, not <= 0.05", b.grants, e.grants, r);

	struct result bs = run(NULL, "4000");
	struct result es = run("revoke=eager", "4000");
	fprintf(stderr, "     (info) 20,000 x 4,000 bytes (slab slots):\n");
	show("batched", &bs);
	show("eager", &es);
	fprintf(stderr, "     (info) granting syscalls batched/eager: %.3f; whole run %.3f\n",
		ratio(bs.grants, es.grants), ratio(bs.total_grants, es.total_grants));
	CHECK(bs.overlaps == 0 && es.overlaps == 0, "overlapping slots: %lld, %lld", bs.overlaps,
	      es.overlaps);
	tu_exit();
}
