/* batching.c - batching and deferral, counted (issue 3, "What must be
 * shown" 3).
 *
 * The workload frees 100,000 page-run allocations spread over 4
 * compartments: 100 rounds; each enters compartment (round % 4), allocates
 * 1,000 blocks with plain malloc, frees them in allocation order and leaves.
 * Each block is 16 KiB + 1 byte: the smallest size that xpfo serves as a page
 * run of its own (5 pages; sizes up to 16 KiB, and aligned_alloc with an
 * alignment up to 4096, come from slabs, whose frees revoke nothing until a
 * whole slab is empty), so every free is a revocation to apply.  It runs in
 * a child exec'd once with the default options and once with
 * XPFO_OPTIONS=revoke=eager; the revocation syscalls xpfo counts
 * (stats.revoke_syscalls, over the workload) must be at least 50x fewer with
 * the defaults.  The mean pages per revocation syscall is printed for both.
 *
 * When strace is installed the two runs are repeated under strace, and
 * the protection changes it saw (mprotect, pkey_mprotect on the pkeys
 * backend, and guard markers installed or removed by madvise or
 * process_madvise) must match xpfo's own counts (revocations + grants,
 * less the revocations made by a fresh mapping over the span,
 * spans_remapped, plus the calls the dynamic loader and xpfo's start-up
 * make, measured by a run with no rounds); the mmap calls it saw must
 * match xpfo's mmap_syscalls (plus those outside xpfo, measured the same
 * way), and those that map no-access memory over a fixed place (span
 * remaps, and segments going back to the pool) must be at least
 * spans_remapped.  The workload runs with the backend= of this test's own
 * XPFO_OPTIONS, if it has one, and the options below.
 *
 * Informational (printed, not checked): the same with blocks freed in random
 * order, and with 1-page runs (aligned_alloc(8192, 4096)).
 */
#include "iso.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NCOMP 4
#define BLOCK (16384 + 1)

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- the workload (child) --------------------------------------------------- */

static int work(int rounds, int per, const char *shape, const char *order)
{
	xpfo_compartment_t *c[NCOMP];
	for (int i = 0; i < NCOMP; i++) {
		char name[16];
		snprintf(name, sizeof name, "part%d", i);
		c[i] = xpfo_compartment_create(name, 0);
		if (!c[i])
			tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	}
	void **blk = calloc((size_t)per, sizeof *blk);
	int *perm = calloc((size_t)per, sizeof *perm);
	if (!blk || !perm)
		tu_hard_error("calloc");
	/* run: 16 KiB + 1 (5-page runs); run16: 64 KiB (16-page runs); page:
	 * aligned_alloc(8192, 4096) (1-page runs, 2-page aligned); slab:
	 * malloc(4096) (slab slots) */
	int kind = !strcmp(shape, "run") ? 0 : !strcmp(shape, "run16") ? 1 : !strcmp(shape, "page") ? 2 : 3;
	bool random_order = !strcmp(order, "random");
	uint64_t seed = 12345;
	xpfo_flush();
	struct xpfo_stats s0, s1;
	tu_stats(&s0);
	double t0 = now();
	long frees = 0;
	for (int r = 0; r < rounds; r++) {
		xpfo_compartment_t *prev = xpfo_enter(c[r % NCOMP]);
		if (!prev)
			tu_hard_error("xpfo_enter: %s", strerror(errno));
		for (int i = 0; i < per; i++) {
			blk[i] = kind == 0 ? malloc(BLOCK) : kind == 1 ? malloc(65536) :
				 kind == 2 ? aligned_alloc(8192, 4096) : malloc(4096);
			if (!blk[i])
				tu_hard_error("allocation %d: %s", i, strerror(errno));
			((char *)blk[i])[0] = (char)i; /* touch it */
			perm[i] = i;
		}
		if (random_order)
			for (int i = per - 1; i > 0; i--) {
				int j = (int)(tu_rand(&seed) % (uint64_t)(i + 1)), x = perm[i];
				perm[i] = perm[j];
				perm[j] = x;
			}
		for (int i = 0; i < per; i++) {
			if (xpfo_owner(blk[perm[i]]) != c[r % NCOMP])
				tu_hard_error("block %p is not compartment %d's", blk[perm[i]], r % NCOMP);
			free(blk[perm[i]]);
			frees++;
		}
		xpfo_leave(prev);
	}
	xpfo_flush();
	double t1 = now();
	tu_stats(&s1);
	/* one line the parent parses */
	printf("frees=%ld revoke_syscalls=%llu pages_revoked=%llu grant_syscalls=%llu flushes=%llu "
	       "flush_switch=%llu compartment_closes=%llu seconds=%.3f total_revoke_syscalls=%llu "
	       "total_grant_syscalls=%llu total_spans_remapped=%llu total_mmap_syscalls=%llu\n",
	       frees, (unsigned long long)(s1.revoke_syscalls - s0.revoke_syscalls),
	       (unsigned long long)(s1.pages_revoked - s0.pages_revoked),
	       (unsigned long long)(s1.grant_syscalls - s0.grant_syscalls),
	       (unsigned long long)(s1.flushes - s0.flushes),
	       (unsigned long long)(s1.flush_switch - s0.flush_switch),
	       (unsigned long long)(s1.compartment_closes - s0.compartment_closes), t1 - t0,
	       (unsigned long long)s1.revoke_syscalls, (unsigned long long)s1.grant_syscalls,
	       (unsigned long long)s1.spans_remapped, (unsigned long long)s1.mmap_syscalls);
	fflush(stdout);
	return 0;
}

/* ---- the parent ------------------------------------------------------------ */


struct result {
	long long frees, revokes, pages, grants, flushes, total_revokes, total_grants;
	double seconds;
};

static struct result run(const char *options, const char *rounds, const char *shape,
			 const char *order)
{
	const char *args[] = { "--work", rounds, shape, order, NULL };
	struct tu_child ch;
	if (iso_run_self(tu_child_options(options), args, 600, &ch))
		tu_hard_error("could not run the workload");
	if (!WIFEXITED(ch.status) || WEXITSTATUS(ch.status))
		tu_hard_error("workload (%s) ended with %s:\n%s", options ? options : "defaults",
			      tu_status_str(ch.status), ch.err);
	struct result r;
	r.frees = iso_find_num(ch.out, "frees");
	r.revokes = iso_find_num(ch.out, "revoke_syscalls");
	r.pages = iso_find_num(ch.out, "pages_revoked");
	r.grants = iso_find_num(ch.out, "grant_syscalls");
	r.flushes = iso_find_num(ch.out, "flushes");
	r.total_revokes = iso_find_num(ch.out, "total_revoke_syscalls");
	r.total_grants = iso_find_num(ch.out, "total_grant_syscalls");
	const char *sec = strstr(ch.out, "seconds=");
	r.seconds = sec ? atof(sec + 8) : -1;
	if (r.frees < 0 || r.revokes < 0 || r.pages < 0)
		tu_hard_error("unparsable workload output: %s", ch.out);
	return r;
}

static void show(const char *what, const struct result *r)
{
	fprintf(stderr, "     %-7s %lld frees: %lld revocation syscalls, %lld pages revoked, %.1f "
			"pages/syscall, %lld grant syscalls, %lld flushes, %.3f s\n",
		what, r->frees, r->revokes, r->pages,
		r->revokes ? (double)r->pages / (double)r->revokes : 0.0, r->grants, r->flushes,
		r->seconds);
}

/* What strace saw of a workload, and what xpfo counted of the same calls
 * (its totals since start). */
struct traced {
	long protects, mmaps, fixed_none;
	long long revokes, grants, remapped, xmmaps;
};

/* Run the workload (rounds of it) under strace; 1: strace is not there. */
static int traced_run(const char *options, const char *rounds, const char *label,
		      unsigned seconds, struct traced *t)
{
	char file[] = "/tmp/xpfo-batching-strace-XXXXXX";
	int fd = mkstemp(file);
	if (fd < 0)
		tu_hard_error("mkstemp: %s", strerror(errno));
	close(fd);
	const char *args[] = { "--work", rounds, "run", "order", NULL };
	struct tu_child ch;
	int e = iso_run_self_strace(tu_child_options(options), args, seconds, &ch, file);
	if (e == 1) {
		unlink(file);
		return 1;
	}
	if (e || !WIFEXITED(ch.status) || WEXITSTATUS(ch.status))
		tu_hard_error("workload under strace (%s) ended with %s:\n%s", label,
			      tu_status_str(ch.status), ch.err);
	t->protects = iso_strace_protects(file);
	t->mmaps = iso_strace_mmaps(file, false);
	t->fixed_none = iso_strace_mmaps(file, true);
	unlink(file);
	if (t->protects < 0 || t->mmaps < 0 || t->fixed_none < 0)
		tu_hard_error("strace's trace could not be read (%s)", label);
	t->revokes = iso_find_num(ch.out, "total_revoke_syscalls");
	t->grants = iso_find_num(ch.out, "total_grant_syscalls");
	t->remapped = iso_find_num(ch.out, "total_spans_remapped");
	t->xmmaps = iso_find_num(ch.out, "total_mmap_syscalls");
	if (t->revokes < 0 || t->grants < 0 || t->remapped < 0 || t->xmmaps < 0)
		tu_hard_error("unparsable workload output (%s): %s", label, ch.out);
	return 0;
}

/* Under strace: protection changes and mappings seen vs. xpfo's own
 * counts; base: the calls outside xpfo (a run with no rounds). */
static void strace_check(const char *options, const char *label, const struct traced *base)
{
	struct traced t;
	if (traced_run(options, "100", label, 900, &t))
		return;
	long long want = t.revokes - t.remapped + t.grants + base->protects;
	fprintf(stderr, "     strace, %s: %ld protection changes; xpfo counted %lld revocations "
			"(%lld of them remaps) + %lld grants, + %ld outside xpfo = %lld\n",
		label, t.protects, t.revokes, t.remapped, t.grants, base->protects, want);
	CHECK(t.protects == want, "strace saw %ld protection changes, xpfo's counters say %lld (%s)",
	      t.protects, want, label);
	fprintf(stderr, "     strace, %s: %ld mmap calls (%ld no-access over a fixed place); xpfo "
			"counted %lld, + %ld outside xpfo\n",
		label, t.mmaps, t.fixed_none, t.xmmaps, base->mmaps);
	CHECK(t.mmaps == t.xmmaps + base->mmaps, "strace saw %ld mmap calls, xpfo's counters say "
	      "%lld + %ld (%s)", t.mmaps, t.xmmaps, base->mmaps, label);
	CHECK(t.fixed_none >= t.remapped, "strace saw %ld no-access mappings over a fixed place, "
	      "xpfo counted %lld spans remapped (%s)", t.fixed_none, t.remapped, label);
}

/* The calls a run with no rounds makes outside xpfo's counts; false:
 * strace is not there. */
static bool strace_baseline(struct traced *base)
{
	struct traced t;
	if (traced_run(NULL, "0", "baseline", 60, &t))
		return false;
	base->protects = t.protects - (long)(t.revokes - t.remapped + t.grants);
	base->mmaps = t.mmaps - (long)t.xmmaps;
	return true;
}

int main(int argc, char **argv)
{
	tu_prog = "batching";
	if (argc == 5 && !strcmp(argv[1], "--work")) {
		tu_xpfo_init(1);
		return work(atoi(argv[2]), 1000, argv[3], argv[4]);
	}
	if (argc != 1) {
		fprintf(stderr, "usage: batching\n");
		return 99;
	}
	tu_xpfo_init(1);
	struct result b = run(NULL, "100", "run", "order");
	struct result e = run("revoke=eager", "100", "run", "order");
	show("batched", &b);
	show("eager", &e);
	CHECK(b.frees == 100000 && e.frees == 100000, "frees: %lld and %lld", b.frees, e.frees);
	CHECK(e.revokes >= e.frees, "revoke=eager made %lld revocation syscalls for %lld frees",
	      e.revokes, e.frees);
	CHECK(b.pages >= 5 * b.frees, "batched: %lld pages revoked for %lld frees of 5 pages",
	      b.pages, b.frees);
	double ratio = b.revokes ? (double)e.revokes / (double)b.revokes : 0;
	fprintf(stderr, "     eager/batched revocation syscalls: %.1fx (need >= 50x); time "
			"eager/batched %.2fx\n", ratio, e.seconds / b.seconds);
	CHECK(b.revokes > 0 && e.revokes >= 50 * b.revokes,
	      "default settings made %lld revocation syscalls, revoke=eager %lld: %.1fx, not 50x",
	      b.revokes, e.revokes, ratio);

	/* informational */
	if (iso_skip_slow()) {
		fprintf(stderr, "     (XPFO_SKIP_SLOW: the informational runs are skipped)\n");
		goto cross_check;
	}
	struct result br = run(NULL, "100", "run", "random");
	struct result er = run("revoke=eager", "100", "run", "random");
	fprintf(stderr, "     (info) the same, freed in random order:\n");
	show("batched", &br);
	show("eager", &er);
	fprintf(stderr, "     (info) random order: eager/batched %.1fx\n",
		br.revokes ? (double)er.revokes / (double)br.revokes : 0.0);
	static const char *const shapes[][2] = { { "run16", "16-page runs (malloc(65536))" },
						 { "page", "1-page runs (aligned_alloc(8192, 4096))" },
						 { "slab", "4 KiB slab slots (malloc(4096))" } };
	for (int i = 0; i < 3; i++) {
		struct result bp = run(NULL, "100", shapes[i][0], "order");
		struct result ep = run("revoke=eager", "100", shapes[i][0], "order");
		fprintf(stderr, "     (info) %s:\n", shapes[i][1]);
		show("batched", &bp);
		show("eager", &ep);
		fprintf(stderr, "     (info) %s: eager/batched %.1fx\n", shapes[i][1],
			bp.revokes ? (double)ep.revokes / (double)bp.revokes : 0.0);
	}

cross_check:;
	struct traced base;
	if (!strace_baseline(&base)) {
		fprintf(stderr, "     strace not installed: the syscall counts were not "
				"cross-checked\n");
	} else {
		strace_check(NULL, "defaults", &base);
		strace_check("revoke=eager", "revoke=eager", &base);
	}
	tu_exit();
}
