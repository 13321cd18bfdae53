/* hugethp.c - huge blocks on transparent huge pages (thp=1, the default):
 * a block over 2 MiB ends on a 2 MiB boundary, the pages before it in its
 * first 2 MiB (its slack) are its owner's but no block's, and a block
 * freed, revoked and reused changes protection by whole huge pages.
 *
 *   place:    3 MiB and 5 MiB blocks end on 2 MiB; usable size exact; a
 *             block aligned to 4 MiB starts its segment (no slack).
 *   guard:    a read one byte past the block faults (a child, SIGSEGV).
 *   slack:    free of a pointer into the slack is "not an allocated block"
 *             (fatal); after the block is freed and flushed, a read of its
 *             slack faults like one of the block.
 *   uaf:      a read of a freed, flushed block faults.
 *   contents: calloc of a block reusing a dirty one's span reads zero; a
 *             block realloc'd in place keeps its bytes.
 *   reuse:    REPS blocks of 3 to 7 MiB, each written whole, freed and
 *             flushed: the page faults stay under one block's pages (huge
 *             pages, or kept frames), and with THP on in the kernel, a
 *             live block is backed by huge pages (AnonHugePages in
 *             /proc/self/smaps_rollup).
 *   thp=0:    the same process again with thp=0: blocks start their
 *             segment (the placement above would fail there).
 *   meta:     xpfo's metadata is never on huge pages (MADV_NOHUGEPAGE,
 *             VmFlags "nh" in /proc/self/smaps, where the kernel has THP):
 *             its tables are touched sparsely, and under THP "always" a
 *             read of an untouched 2 MiB of them mapped the huge zero
 *             page, which the next write split, a TLB flush on every CPU.
 */
#include "testutil.h"

#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define REPS 32

static int thp_off; /* running as the thp=0 child */

static long minflt(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		tu_hard_error("getrusage failed");
	return ru.ru_minflt;
}

/* THP as the kernel has it: 1 always or madvise, 0 never, -1 unknown. */
static int kernel_thp(void)
{
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	char buf[128] = "";
	if (!f)
		return -1;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = 0;
	fclose(f);
	return strstr(buf, "[never]") ? 0 : strstr(buf, "[") ? 1 : -1;
}

static long anon_huge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long kib = -1;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void place(void)
{
	size_t sizes[] = { 3 * MIB, 5 * MIB, 5 * MIB + 4096 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char *p = xpfo_malloc(sizes[i]);
		if (!p)
			tu_hard_error("xpfo_malloc(%zu) failed", sizes[i]);
		uintptr_t end = (uintptr_t)p + sizes[i];
		printf("place: %zu bytes at %p, end %% 2 MiB = %zu, usable %zu\n", sizes[i], (void *)p,
		       (size_t)(end % (2 * MIB)), xpfo_usable_size(p));
		if (thp_off)
			CHECK((uintptr_t)p % (4 * MIB) == 0,
			      "thp=0: a %zu-byte block at %p does not start its segment", sizes[i],
			      (void *)p);
		else
			CHECK(end % (2 * MIB) == 0, "a %zu-byte block at %p ends %zu bytes past 2 MiB",
			      sizes[i], (void *)p, (size_t)(end % (2 * MIB)));
		CHECK(xpfo_usable_size(p) == sizes[i], "usable size %zu of a %zu-byte block",
		      xpfo_usable_size(p), sizes[i]);
		memset(p, 1, sizes[i]);
		xpfo_free(p);
	}
	void *q = NULL;
	CHECK(xpfo_posix_memalign(&q, 4 * MIB, 3 * MIB) == 0 && (uintptr_t)q % (4 * MIB) == 0,
	      "posix_memalign(4 MiB, 3 MiB) gave %p", q);
	xpfo_free(q);
}

static int past_end(void *arg)
{
	(void)arg;
	volatile char *p = xpfo_malloc(3 * MIB);
	if (!p)
		return 97;
	p[3 * MIB - 1] = 1;
	return p[3 * MIB] == 0 ? 3 : 4;
}

static int slack_free(void *arg)
{
	(void)arg;
	char *p = xpfo_malloc(3 * MIB);
	if (!p)
		return 97;
	tu_expect("xpfo: fatal: invalid free of %p: not an allocated block (compartment \"root\")",
		  (void *)(p - 4096));
	xpfo_free(p - 4096);
	return 3;
}

/* A block of `size` written at `at` (before it: its slack, the owner's
 * while the block lives), freed and flushed, then read there. */
struct stale {
	size_t size;
	long at;
};

static int stale_read(void *arg)
{
	const struct stale *s = arg;
	volatile char *p = xpfo_malloc(s->size);
	if (!p)
		return 97;
	p[s->at] = 1;
	xpfo_free((void *)p);
	xpfo_flush();
	return p[s->at] == 1 ? 3 : 4;
}

static void contents(void)
{
	char *p = xpfo_malloc(5 * MIB);
	if (!p)
		tu_hard_error("malloc failed");
	memset(p, 0x5a, 5 * MIB);
	xpfo_free(p);
	unsigned char *z = xpfo_calloc(1, 5 * MIB - 4096);
	if (!z)
		tu_hard_error("calloc failed");
	size_t bad = 0;
	for (size_t k = 0; k < 5 * MIB - 4096; k += 512)
		bad += z[k] != 0;
	CHECK(bad == 0, "calloc: %zu of the sampled bytes are not zero", bad);
	xpfo_free(z);
	char *r = xpfo_malloc(3 * MIB);
	if (!r)
		tu_hard_error("malloc failed");
	memset(r, 0x33, 3 * MIB);
	char *r2 = xpfo_realloc(r, 3 * MIB + 512 * 1024);
	if (!r2)
		tu_hard_error("realloc failed");
	bad = 0;
	for (size_t k = 0; k < 3 * MIB; k += 512)
		bad += r2[k] != 0x33;
	printf("contents: realloc 3 MiB -> 3.5 MiB %s\n", r2 == r ? "in place" : "moved");
	CHECK(bad == 0, "realloc: %zu sampled bytes changed", bad);
	memset(r2, 0x44, 3 * MIB + 512 * 1024);
	xpfo_free(r2);
}

static void reuse(void)
{
	uint64_t seed = 7;
	size_t pages = 0;
	long huge = -1;
	xpfo_flush();
	long f0 = minflt();
	for (int i = 0; i < REPS; i++) {
		size_t n = 3 * MIB + (size_t)(tu_rand(&seed) % (4 * MIB)) / 4096 * 4096;
		char *p = xpfo_malloc(n);
		if (!p)
			tu_hard_error("xpfo_malloc(%zu) failed", n);
		for (size_t k = 0; k < n; k += 4096)
			p[k] = (char)i;
		pages += n / 4096;
		if (i == REPS - 1)
			huge = anon_huge_kib();
		xpfo_free(p);
		xpfo_flush();
	}
	long faults = minflt() - f0;
	int kt = kernel_thp();
	printf("reuse: %d blocks, %zu pages written, %ld page faults; AnonHugePages with the last "
	       "live: %ld KiB; kernel THP %d\n", REPS, pages, faults, huge, kt);
	if (thp_off || kt != 1)
		return;
	CHECK(huge >= 2048, "a live block of 3 MiB or more has %ld KiB of huge pages", huge);
	CHECK(faults < (long)(7 * MIB / 4096), "%d blocks took %ld page faults, want under %zu", REPS,
	      faults, 7 * MIB / 4096);
}

/* the kilobytes of this process's VMAs flagged nh (MADV_NOHUGEPAGE) */
static long nohuge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	long kib = 0, size = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof line, f)) {
		long k;
		if (sscanf(line, "Size: %ld kB", &k) == 1)
			size = k;
		else if (!strncmp(line, "VmFlags:", 8) && strstr(line, " nh"))
			kib += size;
	}
	fclose(f);
	return kib;
}

static void meta(void)
{
	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK)) {
		printf("meta: not checked: this kernel has no transparent huge pages\n");
		return;
	}
	long kib = nohuge_kib();
	printf("meta: %ld KiB of mappings never on huge pages\n", kib);
	CHECK(kib >= 4096, "the metadata is flagged MADV_NOHUGEPAGE: %ld KiB flagged", kib);
}

int main(int argc, char **argv)
{
	tu_prog = "hugethp";
	tu_timeout(120);
	const char *o = getenv("XPFO_OPTIONS");
	thp_off = o && strstr(o, "thp=0") != NULL;
	tu_xpfo_init(1);
	static const struct tu_case c = { "slack: free of a pointer before the block", slack_free,
					  NULL, SIGABRT, 0, TU_ERR_LINE, NULL, NULL, NULL };
	if (!thp_off) {
		tu_must_segv("guard: read past the end", past_end, NULL);
		tu_run_case(&c, 30, NULL);
		static struct stale slack = { 3 * MIB, -4096 }, block = { 5 * MIB, 4096 };
		tu_must_segv("slack: read of a freed block's slack", stale_read, &slack);
		tu_must_segv("uaf: read of a freed block", stale_read, &block);
	}
	place();
	contents();
	reuse();
	meta();
	if (!thp_off && !tu_has_arg(argc, argv, "--child")) {
		/* the same placement checks with thp=0, in a new process */
		char *args[] = { argv[0], (char *)"--child", NULL };
		char envbuf[1100];
		snprintf(envbuf, sizeof envbuf, "XPFO_OPTIONS=%s", tu_child_options("thp=0"));
		const char *envset[] = { envbuf, NULL };
		struct tu_child res;
		if (tu_run_cmd(args, envset, 60, &res))
			tu_hard_error("cannot run %s again", argv[0]);
		printf("thp=0 run: %s\n%s", tu_status_str(res.status), res.out);
		CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0, "thp=0 run: %s\n%s",
		      tu_status_str(res.status), res.err);
	}
	tu_exit();
}
