/* freshslot.c - the write-after-free check does not read a slot that was
 * never handed out of a slab made over pages whose frames were missing.
 * Such a read maps the shared zero page, and the program's first write
 * then replaces that mapping: a second page fault and a TLB flush on
 * every CPU the process runs on (threadchurn in the QEMU guest, Debian's
 * 6.1, 4 CPUs: 1,158 TLB and function-call interrupts under the default
 * profile against 270 under profile=light, before).
 *
 * A child on a fresh heap allocates 4,096 blocks of 3,000 bytes (a class
 * whose slabs are more than two pages, so they are not populated first:
 * alloc/slab.c POPULATE_SLAB_PAGES) and writes each whole; it reports its
 * minor page faults over that loop.  With the check on (the default
 * profile) it must fault no more than 1/8 over the same child with
 * waf_check=0, which reads nothing (before: twice as many, a read fault
 * and a write fault a page).  And the check still sees what it is for: in
 * another child a slot freed, written after its free and handed out
 * again is the fatal "write after free".
 * The same cost in the program's own reads: a calloc'd page run on fresh
 * pages whose every page is read before it is written (a hash map's
 * bucket array) faulted twice a page; now a calloc'd run of up to 64
 * pages is faulted in whole by one call (alloc/run.c run_populate): 64
 * blocks of 64 KiB, each page read then written, must take at most 1/8
 * more faults than their 1,024 pages (before: 2,048).
 * And in xpfo's own metadata: the search for unused segments read the
 * tag of descriptors never written.  64 blocks of a segment each, never
 * touched, must take at most 2.25 faults a block (131 here; 197 when the
 * search read them).
 * And in the library's own data: the C runtime's flag that its
 * destructors ran sits on the first page of libxpfo's zero-fill, read then
 * written at every exit, and that write replaced the zero page there (one
 * flush a process, traced in the guest).  In a child that ran a second
 * thread, every page of libxpfo's writable mappings and the first page of
 * its zero-fill must be present and the process's own (/proc/self/pagemap:
 * exclusively mapped), not the file's page nor the zero page (before, with
 * fa60cce's library: 1 of 3 was not, the zero-fill's first page). */
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096
#define SIZE 3000

static long minflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static int fill(void)
{
	static void *b[N];
	long f0 = minflt();
	for (int i = 0; i < N; i++) {
		if (!(b[i] = xpfo_malloc(SIZE)))
			return 99;
		memset(b[i], 0x5a, SIZE);
	}
	printf("faults %ld\n", minflt() - f0);
	return 0;
}

#define TABLES 64
#define TABLE (64u << 10)

/* calloc'd tables read, then written, page by page */
static int tables(void)
{
	static volatile char *b[TABLES];
	long f0 = minflt();
	unsigned sum = 0;
	for (int i = 0; i < TABLES; i++) {
		if (!(b[i] = xpfo_calloc(1, TABLE)))
			return 99;
		for (unsigned o = 0; o < TABLE; o += 4096)
			sum += (unsigned char)b[i][o];
		for (unsigned o = 0; o < TABLE; o += 4096)
			b[i][o] = 1;
	}
	printf("faults %ld\n", minflt() - f0);
	return sum ? 5 : 0;
}

#define BLOCKS 64

/* blocks of one segment each, never touched: what faults is the heap's
 * own metadata, their segments' descriptors first */
static int segments(void)
{
	static void *b[BLOCKS];
	long f0 = minflt();
	for (int i = 0; i < BLOCKS; i++)
		if (!(b[i] = xpfo_malloc((4u << 20) - 8192)))
			return 99;
	printf("faults %ld\n", minflt() - f0);
	return 0;
}

static void *churn(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		xpfo_free(xpfo_malloc(16 + i % 512));
	return NULL;
}

/* pagemap: present (bit 63) and exclusively mapped (bit 56) */
static int own_page(int pm, uintptr_t a)
{
	uint64_t e = 0;
	if (pread(pm, &e, sizeof e, (off_t)(a / 4096 * sizeof e)) != sizeof e)
		return -1;
	return (e >> 63 & 1) && (e >> 56 & 1);
}

/* libxpfo's writable pages and its zero-fill's first page, after a
 * second thread ran */
static int owndata(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, churn, NULL) || pthread_join(th, NULL))
		return 99;
	FILE *m = fopen("/proc/self/maps", "r");
	int pm = open("/proc/self/pagemap", O_RDONLY);
	if (!m || pm < 0)
		return 77;
	char line[512];
	unsigned long lo, hi, last_end = 0, pages = 0, bad = 0, first_bad = 0;
	char perms[8];
	while (fgets(line, sizeof line, m)) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		bool lib = strstr(line, "libxpfo") != NULL;
		bool zero_fill = !lib && lo == last_end && !strchr(line, '/');
		if (lib)
			last_end = hi;
		if (!(lib && perms[1] == 'w') && !zero_fill)
			continue;
		if (zero_fill)
			hi = lo + 4096;
		for (unsigned long a = lo; a < hi; a += 4096, pages++) {
			int own = own_page(pm, a);
			if (own < 0)
				return 77;
			if (!own && !bad++)
				first_bad = a;
		}
		if (zero_fill)
			last_end = 0;
	}
	printf("pages %lu bad %lu first %#lx\n", pages, bad, first_bad);
	return 0;
}

/* A freed slot written after its free, then handed out again: fatal. */
static int stale(void)
{
	char *a = xpfo_malloc(SIZE), *keep = xpfo_malloc(SIZE);
	if (!a || !keep)
		return 99;
	xpfo_free(a);
	a[0] = 1; /* in the first 64 bytes, which the default profile checks */
	for (int i = 0; i < 8; i++)
		if (xpfo_malloc(SIZE) == a)
			return 3; /* handed out unnoticed */
	return 4;
}

/* This program again with the argument `what` and XPFO_OPTIONS=opts. */
static void run_child(char *what, const char *opts, struct tu_child *r)
{
	char *argv[] = { "/proc/self/exe", what, NULL };
	char e[600];
	snprintf(e, sizeof e, "XPFO_OPTIONS=%s", tu_child_options(opts));
	const char *env[] = { e, NULL };
	if (tu_run_cmd(argv, env, 60, r))
		tu_hard_error("cannot run the child");
}

static long run_fill(const char *opts, char *what)
{
	struct tu_child r;
	long f = -1;
	run_child(what, opts, &r);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 || sscanf(r.out, "faults %ld", &f) != 1)
		tu_hard_error("child (%s): %s; %s%s", opts, tu_status_str(r.status), r.out, r.err);
	fprintf(stderr, "%s %s: %ld page faults\n", what, opts, f);
	return f;
}

int main(int argc, char **argv)
{
	tu_prog = "freshslot";
	tu_xpfo_init(1);
	if (argc == 2 && !strcmp(argv[1], "--fill"))
		return fill();
	if (argc == 2 && !strcmp(argv[1], "--stale"))
		return stale();
	if (argc == 2 && !strcmp(argv[1], "--tables"))
		return tables();
	if (argc == 2 && !strcmp(argv[1], "--segments"))
		return segments();
	if (argc == 2 && !strcmp(argv[1], "--owndata"))
		return owndata();
	long on = run_fill("waf_check=1", "--fill"), off = run_fill("waf_check=0", "--fill");
	CHECK(on <= off + off / 8,
	      "the check reads no fresh slot: %ld page faults with it for %d blocks of %d bytes "
	      "(%d pages), %ld without", on, N, SIZE, N * 3072 / 4096, off);
	long t = run_fill("", "--tables"), pages = TABLES * TABLE / 4096;
	CHECK(t <= pages + pages / 8,
	      "calloc'd tables read before written: %ld page faults for %ld pages", t, pages);
	long sg = run_fill("", "--segments");
	CHECK(sg <= BLOCKS * 2 + BLOCKS / 4,
	      "no segment descriptor read before written: %ld page faults for %d blocks of a "
	      "segment each, untouched", sg, BLOCKS);
	struct tu_child r;
	run_child("--owndata", "", &r);
	unsigned long own = 0, bad = 0, first = 0;
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77)
		fprintf(stderr, "--owndata: no /proc/self/pagemap here, not checked\n");
	else if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) ||
		 sscanf(r.out, "pages %lu bad %lu first %lx", &own, &bad, &first) != 3)
		tu_hard_error("--owndata child: %s; %s%s", tu_status_str(r.status), r.out, r.err);
	else
		CHECK(own >= 2 && bad == 0,
		      "libxpfo's writable pages and its zero-fill's first page are the process's "
		      "own: %lu of %lu not (the first at %#lx)", bad, own, first);
	run_child("--stale", "waf_check=1", &r);
	CHECK(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGABRT &&
		      strstr(r.err, "xpfo: fatal: write after free of "),
	      "a slot written after its free is fatal when handed out again: %s; %s%s",
	      tu_status_str(r.status), r.out, r.err);
	tu_exit();
}
