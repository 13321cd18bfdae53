/* vmabudget.c - the VMA budget (issue 3, "What must be shown" 4).
 *
 * 1. 16 compartments, 1,000,000 live small objects (16..512 bytes), then
 *    rounds of random free + allocate: each round enters the next
 *    compartment in turn, frees 20,000 random objects (of any compartment,
 *    mostly closed ones) and allocates replacements inside.  After every
 *    round the process must have fewer than 2,000 VMAs, counted both in
 *    /proc/self/maps and by xpfo (stats.vmas), and the objects keep their
 *    first byte (checked when their compartment is entered).  On pkeys two
 *    more per segment in use (obj_vma_limit: a keyed compartment's segment
 *    carries its key, a VMA of its own between unused reservation).
 * 2. Page runs: 4 compartments x 6,000 live 16 KiB + 1 byte blocks (the
 *    smallest page runs), allocated inside each compartment in turn and
 *    never freed: the VMA count must not grow with the number of objects
 *    (design brief section 4): fewer than 2,000 VMAs, counted inside each
 *    compartment after its allocations.
 * 3. Transfers: 4,000 live 64 KiB blocks of root transferred to one
 *    compartment: fewer than 2,000 VMAs (each transfer gives the block fresh
 *    frames; the VMA count must still not grow with the number of blocks).
 * 4. Degraded mode, in a child with XPFO_OPTIONS=max_vmas=100: a workload
 *    that splits the heap into thousands of protection boundaries (every
 *    other 5-page run freed, with a flush each time) goes over the budget;
 *    the one-time warning "xpfo: warning: ... over the budget ..." appears
 *    exactly once, small spans are then released instead of protected
 *    (stats.spans_released_unprotected, or spans_released_uffd where a
 *    userfaultfd watches them), a span released unprotected reads as zeros
 *    (never the old bytes; a watched one is a violation: tests/isolation/uffd),
 *    and allocation keeps working.  With no userfaultfd under release=auto
 *    the warning says the spans stay protected, and none is released.
 *
 * Usage: vmabudget [--rounds N] [--objects N] [--runs N] [--transfers N]
 *                  [--degraded-runs N] [--objects-vmas N (limit of part 1)]
 * (tests/isolation/uffd runs it with release=uffd and --objects-vmas 200)
 * (defaults 32 rounds, 16 with XPFO_SKIP_SLOW; 1,000,000 objects; 6,000
 * runs per compartment; 4,000 transfers; 4,000 runs in the degraded-mode
 * child).  The QEMU guest runs a smaller
 * scale (tests/qemu/pkeys-rig.sh) on both backends: on pkeys, 16
 * compartments are more than the keys, so the churn also parks and
 * re-keys compartments (key_evictions).
 */
#include "iso.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#define NCOMP 16
#define VMA_MAX 2000

static size_t nobj = 1000000;   /* live small objects */
static int nruns = 6000;        /* live page runs per compartment */
static int nxfer = 4000;        /* live transferred blocks */
static int ndegraded = 4000;    /* page runs of the degraded-mode child */
static int obj_vma_max = VMA_MAX; /* --objects-vmas: the limit of part 1 */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t obj_size(uint64_t *r)
{
	uint64_t x = tu_rand(r);
	return (x & 3) ? 16 + (size_t)(x >> 8) % 112 : 16 + (size_t)(x >> 8) % 497;
}

static unsigned char tag(size_t i)
{
	return (unsigned char)(i * 131 + 7) | 1;
}

/* The limit of part 1 for the segments in use now.  mprotect: obj_vma_max,
 * whatever their number (closed compartments' segments are PROT_NONE, as
 * the unused reservation around them, and merge with it).  pkeys: a key is
 * a property of a VMA, and nothing closes a keyed compartment, so each
 * segment of one (or of a parked one, the allocator's key) is a VMA of its
 * own: segments are placed at random, so the reservation left unused after
 * it is another.  Two per segment more, then; the split inside a segment
 * is what the limit bounds: with release=uffd (tests/isolation/uffd's
 * limit of 200) none, since a keyed compartment's segment gets its key
 * whole, its guard and free pages missing and watched. */
static long obj_vma_limit(const struct xpfo_stats *s)
{
	if (strcmp(xpfo_backend(), "pkeys"))
		return obj_vma_max;
	return obj_vma_max + 2 * (long)s->segments;
}

static void live_objects(int rounds)
{
	unsigned char **obj = mmap(NULL, nobj * sizeof *obj, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *comp = mmap(NULL, nobj, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (obj == MAP_FAILED || comp == MAP_FAILED)
		tu_hard_error("mmap: %s", strerror(errno));
	xpfo_compartment_t *c[NCOMP];
	for (int k = 0; k < NCOMP; k++) {
		char name[16];
		snprintf(name, sizeof name, "c%02d", k);
		if (!(c[k] = xpfo_compartment_create(name, 0)))
			tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	}
	uint64_t r = 7;
	double t0 = now();
	long max_maps = 0, max_xpfo = 0;
	struct xpfo_stats s;
	/* fill */
	for (int k = 0; k < NCOMP; k++) {
		xpfo_compartment_t *prev = xpfo_enter(c[k]);
		if (!prev)
			tu_hard_error("xpfo_enter: %s", strerror(errno));
		for (size_t i = (size_t)k; i < nobj; i += NCOMP) {
			obj[i] = malloc(obj_size(&r));
			if (!obj[i])
				tu_hard_error("malloc: %s", strerror(errno));
			obj[i][0] = tag(i);
			comp[i] = (unsigned char)k;
		}
		if (k == NCOMP / 2) {
			max_maps = iso_count_vmas();
			tu_stats(&s);
			max_xpfo = (long)s.vmas;
		}
		xpfo_leave(prev);
	}
	long m = iso_count_vmas();
	tu_stats(&s);
	fprintf(stderr, "     %zu objects in %d compartments in %.2f s: %ld VMAs "
			"(/proc/self/maps), xpfo: %llu VMAs in the heap, budget %llu, "
			"vm.max_map_count %llu\n", nobj, NCOMP, now() - t0, m,
		(unsigned long long)s.vmas,
		(unsigned long long)s.vma_budget, (unsigned long long)s.vma_limit);
	if (m > max_maps)
		max_maps = m;
	if ((long)s.vmas > max_xpfo)
		max_xpfo = (long)s.vmas;
	/* churn */
	long bad_tags = 0, checked = 0;
	for (int round = 0; round < rounds; round++) {
		int k = round % NCOMP;
		xpfo_compartment_t *prev = xpfo_enter(c[k]);
		if (!prev)
			tu_hard_error("xpfo_enter: %s", strerror(errno));
		for (int op = 0; op < 20000; op++) {
			size_t i = (size_t)(tu_rand(&r) % nobj);
			if (comp[i] == k) {
				checked++;
				if (obj[i][0] != tag(i) && bad_tags++ < 5)
					CHECK(0, "object %zu at %p lost its first byte", i,
					      (void *)obj[i]);
			}
			free(obj[i]);
			obj[i] = malloc(obj_size(&r));
			if (!obj[i])
				tu_hard_error("malloc: %s", strerror(errno));
			obj[i][0] = tag(i);
			comp[i] = (unsigned char)k;
		}
		/* counted while inside: an open compartment among closed ones
		 * is where the boundaries are */
		m = iso_count_vmas();
		tu_stats(&s);
		xpfo_leave(prev);
		if (round % 8 == 7)
			xpfo_flush();
		if (m > max_maps)
			max_maps = m;
		if ((long)s.vmas > max_xpfo)
			max_xpfo = (long)s.vmas;
		long lim = obj_vma_limit(&s);
		CHECK(m < lim, "round %d: %ld VMAs in /proc/self/maps (limit %ld)", round, m, lim);
		CHECK(s.vmas < (uint64_t)lim, "round %d: xpfo counts %llu VMAs (limit %ld)", round,
		      (unsigned long long)s.vmas, lim);
		if (m >= lim)
			break;
	}
	CHECK(bad_tags == 0, "%ld of %ld objects checked lost their first byte", bad_tags, checked);
	CHECK(s.degraded == 0, "the default budget was reached (degraded) with %ld VMAs", m);
	CHECK(s.violations == 0, "%llu violations", (unsigned long long)s.violations);
	/* pkeys: 16 compartments entered in turn are more than the keys (16 on
	 * x86-64, 8 on arm64, less key 0 and the allocator's) */
	if (!strcmp(xpfo_backend(), "pkeys"))
		CHECK(s.key_evictions > 0, "%d compartments entered in turn on pkeys, but no key "
		      "was evicted", NCOMP);
	fprintf(stderr, "     %d rounds of 20,000 frees + allocations in %.2f s: at most %ld VMAs "
			"(/proc/self/maps), at most %ld counted by xpfo, limit %ld (%llu segments); "
			"%ld objects checked; %llu revocation syscalls, %llu opens, %llu closes, "
			"%llu key evictions (backend %s)\n",
		rounds, now() - t0, max_maps, max_xpfo, obj_vma_limit(&s),
		(unsigned long long)s.segments, checked,
		(unsigned long long)s.revoke_syscalls, (unsigned long long)s.compartment_opens,
		(unsigned long long)s.compartment_closes, (unsigned long long)s.key_evictions,
		xpfo_backend());
	for (size_t i = 0; i < nobj; i++)
		free(obj[i]);
	for (int k = 0; k < NCOMP; k++)
		CHECK(xpfo_compartment_destroy(c[k]) == 0, "destroy: %s", strerror(errno));
	munmap(obj, nobj * sizeof *obj);
	munmap(comp, nobj);
}

/* ---- page runs ---------------------------------------------------------------- */

static void live_runs(void)
{
	enum { NC = 4 };
	const int PER = nruns;
	void **blk[NC];
	xpfo_compartment_t *c[NC];
	long max_maps = 0, worst_k = -1;
	struct xpfo_stats s;
	int done = 0;
	for (int k = 0; k < NC; k++, done++) {
		char name[16];
		snprintf(name, sizeof name, "r%02d", k);
		if (!(c[k] = xpfo_compartment_create(name, 0)))
			tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
		blk[k] = mmap(NULL, (size_t)PER * sizeof *blk[k], PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (blk[k] == MAP_FAILED)
			tu_hard_error("mmap: %s", strerror(errno));
		xpfo_compartment_t *prev = xpfo_enter(c[k]);
		if (!prev)
			tu_hard_error("xpfo_enter: %s", strerror(errno));
		for (int i = 0; i < PER; i++) {
			blk[k][i] = malloc(16384 + 1);
			if (!blk[k][i])
				tu_hard_error("malloc: %s", strerror(errno));
			((char *)blk[k][i])[0] = 1;
		}
		xpfo_flush();
		long m = iso_count_vmas();
		if (m > max_maps) {
			max_maps = m;
			worst_k = k;
		}
		xpfo_leave(prev);
	}
	tu_stats(&s);
	fprintf(stderr, "     page runs: %d x %d live 16 KiB + 1 blocks: at most %ld VMAs "
			"(after compartment %ld), limit %d\n", NC, PER, max_maps, worst_k, VMA_MAX);
	CHECK(max_maps < VMA_MAX, "live page runs: %ld VMAs inside compartment %ld with its %d live "
		"blocks of 16 KiB + 1 (limit %d): the VMA count grows with the number of objects",
		max_maps, worst_k, PER, VMA_MAX);
	for (int k = 0; k < done; k++) {
		for (int i = 0; i < PER; i++)
			free(blk[k][i]);
		xpfo_compartment_destroy(c[k]);
		munmap(blk[k], (size_t)PER * sizeof *blk[k]);
	}
	xpfo_flush();
}

/* ---- transfers ------------------------------------------------------------------ */

static void live_transfers(void)
{
	const int N = nxfer;
	void **blk = mmap(NULL, (size_t)N * sizeof *blk, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (blk == MAP_FAILED)
		tu_hard_error("mmap: %s", strerror(errno));
	xpfo_compartment_t *c = xpfo_compartment_create("receiver", 0);
	if (!c)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	int done = 0;
	for (; done < N; done++) {
		blk[done] = malloc(65536);
		if (!blk[done])
			tu_hard_error("malloc: %s", strerror(errno));
		if (xpfo_transfer(blk[done], c)) {
			CHECK(0, "xpfo_transfer: %s", strerror(errno));
			free(blk[done]);
			break;
		}
	}
	xpfo_flush();
	long m = iso_count_vmas();
	fprintf(stderr, "     transfers: %d live 64 KiB blocks transferred to a compartment: %ld "
			"VMAs, limit %d\n", done, m, VMA_MAX);
	CHECK(m < VMA_MAX, "%ld VMAs with %d live transferred blocks (limit %d): the VMA count "
		"grows with the number of transfers", m, done, VMA_MAX);
	for (int i = 0; i < done; i++)
		free(blk[i]);
	CHECK(xpfo_compartment_destroy(c) == 0, "destroy: %s", strerror(errno));
	xpfo_flush();
	munmap(blk, (size_t)N * sizeof *blk);
}

/* ---- degraded mode (child) -------------------------------------------------- */

#define RUNSZ (16384 + 1)
#define NRUN_MAX 4000

static int degraded_child(int nrun)
{
	static unsigned char *run[NRUN_MAX];
	if (nrun < 100 || nrun > NRUN_MAX)
		tu_hard_error("--degraded: %d runs (100..%d)", nrun, NRUN_MAX);
	for (int i = 0; i < nrun; i++) {
		run[i] = malloc(RUNSZ);
		if (!run[i])
			tu_hard_error("malloc: %s", strerror(errno));
		tu_fill(run[i], RUNSZ, (uint64_t)i + 1);
	}
	xpfo_flush();
	struct xpfo_stats s;
	tu_stats(&s);
	printf("after-alloc vmas=%llu maps=%ld degraded=%llu released=%llu\n",
	       (unsigned long long)s.vmas, iso_count_vmas(), (unsigned long long)s.degraded,
	       (unsigned long long)s.spans_released_unprotected);
	/* every other run freed: each free is a new protection boundary */
	for (int i = 0; i < nrun; i += 2) {
		free(run[i]);
		run[i] = NULL;
		xpfo_flush();
	}
	tu_stats(&s);
	printf("after-split vmas=%llu maps=%ld degraded=%llu released=%llu budget=%llu\n",
	       (unsigned long long)s.vmas, iso_count_vmas(), (unsigned long long)s.degraded,
	       (unsigned long long)s.spans_released_unprotected, (unsigned long long)s.vma_budget);
	/* a span revoked by release reads as zeros */
	long long released_before = (long long)s.spans_released_unprotected;
	long long watched_before = (long long)s.spans_released_uffd;
	unsigned char *probe = run[1];
	run[1] = NULL;
	free(probe);
	xpfo_flush();
	tu_stats(&s);
	if ((long long)s.spans_released_uffd > watched_before) {
		/* watched by userfaultfd: reading it is a violation (tests/isolation/uffd) */
		printf("probe watched=1\n");
	} else if ((long long)s.spans_released_unprotected > released_before) {
		size_t nz = RUNSZ - iso_count_byte(probe, RUNSZ, 0);
		printf("probe released=1 nonzero=%zu\n", nz);
	} else {
		printf("probe released=0\n");
	}
	/* allocation keeps working, and the survivors kept their bytes */
	long wrong = 0;
	for (int i = 3; i < nrun; i += 2)
		if (tu_verify(run[i], RUNSZ, (uint64_t)i + 1) != (size_t)-1)
			wrong++;
	for (int i = 0; i < nrun; i += 2) {
		run[i] = malloc(RUNSZ);
		if (!run[i])
			tu_hard_error("malloc after degrading: %s", strerror(errno));
		tu_fill(run[i], RUNSZ, (uint64_t)i + 7);
	}
	for (int i = 0; i < nrun; i += 2)
		if (tu_verify(run[i], RUNSZ, (uint64_t)i + 7) != (size_t)-1)
			wrong++;
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(1 + (size_t)i % 3000);
		if (!p)
			tu_hard_error("small malloc after degrading: %s", strerror(errno));
		free(p);
	}
	for (int i = 0; i < nrun; i++)
		free(run[i]);
	xpfo_flush();
	tu_stats(&s);
	printf("end wrong=%ld vmas=%llu maps=%ld degraded=%llu released=%llu\n", wrong,
	       (unsigned long long)s.vmas, iso_count_vmas(), (unsigned long long)s.degraded,
	       (unsigned long long)(s.spans_released_unprotected + s.spans_released_uffd));
	return 0;
}

static void degraded(int nrun)
{
	char n[16];
	snprintf(n, sizeof n, "%d", nrun);
	const char *args[] = { "--degraded", n, NULL };
	/* the same options otherwise (the backend, in the QEMU guest) */
	const char *o = getenv("XPFO_OPTIONS");
	char opt[512];
	snprintf(opt, sizeof opt, "%s%smax_vmas=100", o ? o : "", o && *o ? "," : "");
	struct tu_child ch;
	if (iso_run_self(opt, args, 300, &ch))
		tu_hard_error("could not run the degraded-mode child");
	fprintf(stderr, "     degraded-mode child (XPFO_OPTIONS=%s): %s\n%s%s", opt,
		tu_status_str(ch.status), ch.out, ch.err);
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
	      "degraded-mode child ended with %s", tu_status_str(ch.status));
	int warnings = 0, others = 0, kept = 0;
	char *save, *errs = strdup(ch.err);
	for (char *l = strtok_r(errs, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "xpfo: warning: ", 15) && strstr(l, "over the budget")) {
			warnings++;
			/* release=auto or uffd with no userfaultfd: nothing released */
			kept += strstr(l, "freed spans stay protected") != NULL;
		}
		else if (!strncmp(l, "xpfo: ", 6))
			others++;
	}
	free(errs);
	/* release=uffd splits no VMA when it revokes, but live runs and their
	 * guard pages still may: at most once */
	bool watched = o && strstr(o, "release=uffd");
	CHECK(watched ? warnings <= 1 : warnings == 1,
	      "the over-the-budget warning appeared %d times (want once)", warnings);
	CHECK(others == 0, "%d other xpfo lines on stderr", others);
	const char *end = strstr(ch.out, "end ");
	long long released = iso_find_num(end ? end : "", "released");
	CHECK(kept ? released == 0 : released > 0,
	      "%s (released=%lld)", kept ? "spans released unwatched" : "no span was released "
	      "instead of protected", released);
	long long wrong = iso_find_num(end ? end : "", "wrong");
	CHECK(wrong == 0, "%lld runs lost their bytes while degraded", wrong);
	const char *probe = strstr(ch.out, "probe ");
	CHECK(probe != NULL, "no probe line");
	if (probe && iso_find_num(probe, "watched") == 1)
		CHECK(1, "watched");
	else if (probe && kept)
		CHECK(iso_find_num(probe, "released") == 0, "released with no userfaultfd");
	else if (probe && iso_find_num(probe, "released") == 1)
		CHECK(iso_find_num(probe, "nonzero") == 0,
		      "a span revoked by release still holds %lld old bytes",
		      iso_find_num(probe, "nonzero"));
	else
		CHECK(0, "the probe run was not released while degraded: could not check that a "
			 "released span reads as zeros");
}

int main(int argc, char **argv)
{
	tu_prog = "vmabudget";
	tu_xpfo_init(1);
	if (argc == 3 && !strcmp(argv[1], "--degraded"))
		return degraded_child(atoi(argv[2]));
	int rounds = iso_skip_slow() ? 16 : 32;
	/* the debug build's walks make each degraded run slow on mprotect:
	 * 1,000 still pass the budget of 100 VMAs many times over */
	if (iso_skip_slow())
		ndegraded = 1000;
	for (int i = 1; i < argc; i += 2) {
		const char *usage = "usage: vmabudget [--rounds N] [--objects N] [--runs N] "
				    "[--transfers N] [--degraded-runs N (100..4000)] [--objects-vmas N]";
		if (i + 1 >= argc)
			tu_hard_error("%s", usage);
		char *end;
		long v = strtol(argv[i + 1], &end, 10);
		if (*end || end == argv[i + 1] || v < 1 || v > 100000000)
			tu_hard_error("bad number '%s' (%s)", argv[i + 1], usage);
		if (!strcmp(argv[i], "--rounds"))
			rounds = (int)v;
		else if (!strcmp(argv[i], "--objects") && v >= NCOMP)
			nobj = (size_t)v;
		else if (!strcmp(argv[i], "--runs"))
			nruns = (int)v;
		else if (!strcmp(argv[i], "--transfers"))
			nxfer = (int)v;
		else if (!strcmp(argv[i], "--degraded-runs") && v >= 100 && v <= NRUN_MAX)
			ndegraded = (int)v;
		else if (!strcmp(argv[i], "--objects-vmas"))
			obj_vma_max = (int)v;
		else
			tu_hard_error("%s", usage);
	}
	iso_stdio_warmup();
	live_objects(rounds);
	live_runs();
	live_transfers();
	degraded(ndegraded);
	tu_exit();
}
