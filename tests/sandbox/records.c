/* records.c - the executor records a change only once the kernel made it.
 *
 * Compartment "parser" holds its secret on every page of a 256 KiB run and
 * shrinks it in place before the lock (realloc): the tail's pages stay
 * resident and closed, free pages of its own segment, not purged.  Then it
 * locks.  The locked thread then asks the executor to purge
 * those pages in ways the kernel refuses, and to open them: it must never
 * read what was freed before the lock.
 *
 *   madvise(p + 1, ...)             an unaligned start: EINVAL in the kernel
 *   mmap(p, MAP_FIXED, offset 1)    an unaligned offset: EINVAL
 *   mmap(p + 1, MAP_FIXED)          an unaligned address: EINVAL
 *   mmap(p + 4096, MAP_FIXED) with vm.max_map_count used up by the thread's
 *                                   own mappings: ENOMEM in the kernel after
 *                                   every argument was right (the split)
 *
 * then mprotect (pkey_mprotect with the thread's own key on pkeys) of the
 * page to PROT_READ: refused.  And a purge the kernel did carry out (an
 * aligned MADV_DONTNEED): the page opens and reads zeros. */
#include "cases.h"

#include <sys/mman.h>
#include <sys/syscall.h>

#define RUN_SIZE 65536

static char *stale;   /* parser's run, freed before the lock */
static bool pkeys;

static void setup(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	xpfo_compartment_t *prev = c ? xpfo_enter(c) : NULL;
	if (!prev)
		_exit(97);
	/* a run shrunk in place: its tail pages are free pages of a segment
	 * that stays the compartment's, with their frames */
	char *run = malloc(4 * RUN_SIZE);
	if (!run)
		_exit(96);
	for (size_t o = 0; o < 4 * RUN_SIZE; o += 4096)
		strcpy(run + o, SECRET);
	if (realloc(run, 8192) != run)
		_exit(95);
	stale = run + RUN_SIZE;
	xpfo_flush();
	xpfo_leave(prev);
	if (xpfo_lock_thread(c, 0)) {
		fprintf(stderr, "lock failed: %s\n", strerror(errno));
		_exit(90);
	}
}

#ifdef __x86_64__
/* The locked thread's own key (RDPKRU: the first key but 0 it opens). */
static int own_key(void)
{
	unsigned eax, edx;
	__asm__ volatile(".byte 0x0f, 0x01, 0xee" : "=a"(eax), "=d"(edx) : "c"(0));
	for (int k = 1; k < 16; k++)
		if (!(eax >> (2 * k) & 3))
			return k;
	return -1;
}
#else
static int own_key(void)
{
	return -1;
}
#endif

/* Open one page for reading: mprotect, or on pkeys pkey_mprotect with the
 * thread's own key.  0 when refused with EPERM; else what it read is
 * leaked and 1 returned. */
static int open_page(char *pg)
{
	long r = pkeys ? syscall(SYS_pkey_mprotect, pg, 4096, PROT_READ, own_key())
		       : mprotect(pg, 4096, PROT_READ);
	if (r == -1 && errno == EPERM)
		return 0;
	if (r == 0)
		leak(pg, sizeof SECRET);
	else
		fprintf(stderr, "open: %s\n", strerror(errno));
	return 1;
}

/* A fresh mapping over one page at p (the system call itself). */
static void *fixed(void *p, long off)
{
	return (void *)syscall(SYS_mmap, p, 4096, PROT_NONE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, off);
}

static int c_madvise_unaligned(void *arg)
{
	setup();
	if (madvise(stale + 1, 4096, MADV_DONTNEED) == 0)
		return 2;
	return open_page(stale);
}

static int c_mmap_offset(void *arg)
{
	setup();
	/* raw: glibc's mmap refuses an unaligned offset itself */
	if (fixed(stale, 1) != MAP_FAILED)
		return 2;
	return open_page(stale);
}

static int c_mmap_unaligned(void *arg)
{
	setup();
	if (fixed(stale + 1, 0) != MAP_FAILED)
		return 2;
	return open_page(stale);
}

/* The thread's own mappings (the kernel places them: allowed) until the
 * map count is used up: alternate protections, so that none merges. */
#define FILL_MAX 300000
static void *fill[FILL_MAX];

static int c_map_count(void *arg)
{
	setup();
	int n = 0;
	while (n < FILL_MAX) {
		void *m = mmap(NULL, 4096, n % 2 ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (m == MAP_FAILED)
			break;
		fill[n++] = m;
	}
	if (n == FILL_MAX || errno != ENOMEM)
		return 3; /* could not use the map count up: the case cannot run */
	char *pg = stale + 4096;
	void *r = fixed(pg, 0);
	int e = errno;
	/* room again for the split the grant needs */
	for (int i = 1; i <= 16; i++)
		munmap(fill[n - i], 4096);
	if (r != MAP_FAILED || e != ENOMEM) {
		fprintf(stderr, "mmap over the page: %s\n", r == MAP_FAILED ? strerror(e) : "done");
		return 4; /* the kernel did not refuse it: the case cannot run */
	}
	return open_page(pg);
}

/* The purge done right (an aligned MADV_DONTNEED the kernel carries
 * out): the page opens, and reads zeros. */
static int c_purged(void *arg)
{
	setup();
	if (madvise(stale, 4096, MADV_DONTNEED))
		return 2;
	long r = pkeys ? syscall(SYS_pkey_mprotect, stale, 4096, PROT_READ, own_key())
		       : mprotect(stale, 4096, PROT_READ);
	if (r)
		return 3;
	for (size_t o = 0; o < 4096; o++)
		if (stale[o]) {
			leak(stale + o, sizeof SECRET);
			return 1;
		}
	printf("purged page: zeros\n");
	return 0;
}

static struct scase cases[] = {
	{ "madvise of an unaligned start, then open the page", c_madvise_unaligned, 0, 0,
	  { DENIED("madvise"), DENIED("mprotect") }, 0 },
	{ "mmap MAP_FIXED with offset 1, then open the page", c_mmap_offset, 0, 0,
	  { DENIED("mmap"), DENIED("mprotect") }, 0 },
	{ "mmap MAP_FIXED of an unaligned address, then open the page", c_mmap_unaligned, 0, 0,
	  { DENIED("mmap"), DENIED("mprotect") }, 0 },
	{ "mmap MAP_FIXED refused by the kernel (map count used up), then open the page",
	  c_map_count, 0, 0, { DENIED("mprotect") }, 0 },
	{ "a purge the kernel made, then open the page (allowed)", c_purged, 0, 0,
	  { "purged page: zeros" }, 0 },
};

int main(int argc, char **argv)
{
	tu_prog = "sandbox/records";
	tu_timeout(600);
	pkeys = sc_pkeys();
	if (pkeys) /* the grant is pkey_mprotect there */
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
			for (int k = 0; k < NLINES && cases[i].lines[k]; k++)
				if (strcmp(cases[i].lines[k], DENIED("mprotect")) == 0)
					cases[i].lines[k] = DENIED("pkey_mprotect");
	sc_check_all(cases, sizeof cases / sizeof cases[0]);
	tu_exit();
}
