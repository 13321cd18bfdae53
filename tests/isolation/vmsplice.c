/* vmsplice.c - kernel-held aliases do not survive an owner change (issue 3,
 * "Kernel-held aliases"; design brief section 8).
 *
 * The old owner vmsplices the pages of an allocation into a pipe: the pipe
 * then holds references to the physical frames, which no protection change
 * revokes.  The pages change owner (transfer, or free and reuse by another
 * owner, or destroy and reuse); the new owner writes its own bytes ('N');
 * reading the pipe must never return them.  Each case checks that the pages
 * really went to the new owner (xpfo_owner and overlapping addresses); when
 * the test cannot force that, it says so and fails.  The test runs itself
 * with XPFO_OPTIONS=reserve=1 (a 1 GiB heap) so that the new owner can be
 * made to reach the old owner's segment despite random segment placement,
 * and thp=0, so that its 3 MiB blocks take one segment each and tile the
 * heap (with huge pages a block's span ends on 2 MiB, and its guard page
 * can take a segment of its own).
 *
 * A control run first shows that vmsplice aliases user pages on this kernel
 * (writing the pages after the vmsplice changes what the pipe returns);
 * without that the test could not fail, and it skips (77) only when vmsplice
 * is missing or does not alias.
 */
#include "iso.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define RUN (64u << 10)     /* page run; a pipe holds 16 pages by default */
#define HUGE (3u << 20)     /* whole segments */
#define SPLICED (64u << 10) /* bytes vmspliced */

static unsigned char pipebuf[SPLICED];

/* vmsplice n bytes at p into a new pipe; returns the read end, or -1. */
static int splice_in(const void *p, size_t n, int *wfd)
{
	int fd[2];
	if (pipe(fd))
		return -1;
	struct iovec iov = { (void *)p, n };
	size_t done = 0;
	while (done < n) {
		iov.iov_base = (char *)p + done;
		iov.iov_len = n - done;
		ssize_t r = vmsplice(fd[1], &iov, 1, SPLICE_F_NONBLOCK);
		if (r <= 0) {
			int e = errno;
			close(fd[0]);
			close(fd[1]);
			errno = r == 0 ? EIO : e;
			return -1;
		}
		done += (size_t)r;
	}
	*wfd = fd[1];
	return fd[0];
}

/* Read what the pipe holds; returns bytes of the new owner's 'N' seen. */
static long drain_count_n(int rfd, int wfd, size_t n)
{
	close(wfd);
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(rfd, pipebuf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(rfd);
	if (got != n) {
		fprintf(stderr, "the pipe gave %zu bytes of %zu\n", got, n);
		return -1;
	}
	size_t nn = iso_count_byte(pipebuf, n, 'N');
	size_t na = iso_count_byte(pipebuf, n, 'A');
	fprintf(stderr, "pipe: %zu bytes: %zu of the old owner ('A'), %zu of the new owner ('N'), "
			"%zu other\n", n, na, nn, n - na - nn);
	return (long)nn;
}

static bool overlaps(const void *a, size_t an, const void *b, size_t bn)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
	return x < y + bn && y < x + an;
}

static xpfo_compartment_t *mk(const char *name)
{
	xpfo_compartment_t *c = xpfo_compartment_create(name, 0);
	if (!c)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	return c;
}

#define NOREUSE 40 /* exit status: the new owner did not get the pages */
#define LEAK 41    /* exit status: the pipe returned the new owner's bytes */

static int verdict(long nn)
{
	if (nn < 0)
		return 42;
	if (nn > 0) {
		fprintf(stderr, "LEAK: the old owner's pipe returned %ld bytes the new owner "
				"wrote\n", nn);
		return LEAK;
	}
	return 0;
}

/* Allocate blocks in c (entered) until one overlaps [old, old+oldn): first
 * up to `tries` blocks of `size`, then 3 MiB blocks (whole segments) until the heap
 * reservation runs out (the test runs with reserve=1: 256 segments, placed
 * at random).  Only the overlapping block is written ('N', all of it); the
 * others stay allocated so that each try takes new pages.  (3 MiB: one
 * segment with its guard page.) */
static unsigned char *reuse_in(xpfo_compartment_t *c, size_t size, const void *old,
			       size_t oldn, int tries)
{
	xpfo_compartment_t *prev = c == xpfo_root() ? NULL : xpfo_enter(c);
	unsigned char *hit = NULL;
	size_t hit_size = 0;
	int n = 0;
	for (int i = 0; i < tries && !hit; i++, n++) {
		unsigned char *q = malloc(size);
		if (!q)
			break;
		if (overlaps(q, size, old, oldn)) {
			hit = q;
			hit_size = size;
		}
	}
	for (int i = 0; i < 4096 && !hit; i++, n++) {
		unsigned char *q = malloc(3u << 20);
		if (!q)
			break;
		if (overlaps(q, 3u << 20, old, oldn)) {
			hit = q;
			hit_size = 3u << 20;
		}
	}
	if (hit) {
		memset(hit, 'N', hit_size);
		if (xpfo_owner(hit) != c) {
			fprintf(stderr, "the reused block's owner is %s, not %s\n",
				xpfo_owner(hit) ? xpfo_compartment_name(xpfo_owner(hit)) : "none",
				xpfo_compartment_name(c));
			hit = NULL;
		} else {
			fprintf(stderr, "reuse: %s got the old pages after %d allocations (block %p, "
					"%zu bytes)\n", xpfo_compartment_name(c), n + 1, (void *)hit,
				hit_size);
		}
	}
	if (prev)
		xpfo_leave(prev);
	if (!hit)
		fprintf(stderr, "NO REUSE: %s never got the pages of the freed block at %p in %d "
				"allocations: the test could not force reuse\n",
			xpfo_compartment_name(c), old, n);
	return hit;
}

/* ---- transfer ------------------------------------------------------------ */

struct xfer_arg {
	size_t size;
	int from_compartment;
};

static int by_transfer(void *arg)
{
	struct xfer_arg *a = arg;
	xpfo_compartment_t *to = mk("receiver"), *prev = NULL;
	xpfo_compartment_t *from = a->from_compartment ? mk("sender") : xpfo_root();
	if (a->from_compartment)
		NEED(prev = xpfo_enter(from), 3);
	unsigned char *p = malloc(a->size);
	NEED(p && xpfo_owner(p) == from, 4);
	memset(p, 'A', a->size);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	NEED(rfd >= 0, 5);
	if (a->from_compartment)
		xpfo_leave(prev);
	NEED(xpfo_transfer(p, to) == 0, 6);
	NEED(xpfo_owner(p) == to, 7);
	NEED(prev = xpfo_enter(to), 8);
	NEED(iso_count_byte(p, a->size, 'A') == a->size, 9); /* same bytes */
	memset(p, 'N', a->size);
	xpfo_leave(prev);
	return verdict(drain_count_n(rfd, wfd, SPLICED));
}

/* ---- free, then reuse by another owner ------------------------------------ */

/* The old owner A's block sits in A's own segment; A frees it; the segment
 * is all free, so it goes back to the pool, and B's next segment is it. */
static int by_segment_reuse(void *arg)
{
	size_t size = *(size_t *)arg;
	xpfo_compartment_t *a = mk("old"), *b = mk("new"), *prev;
	NEED(prev = xpfo_enter(a), 3);
	unsigned char *p = malloc(size);
	NEED(p && xpfo_owner(p) == a, 4);
	memset(p, 'A', size);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	NEED(rfd >= 0, 5);
	free(p);
	xpfo_leave(prev);
	NEED(xpfo_flush() == 0, 6);
	NEED(xpfo_owner(p) == NULL, 7);
	if (!reuse_in(b, size, p, size, 256))
		return NOREUSE;
	return verdict(drain_count_n(rfd, wfd, SPLICED));
}

/* Root's huge block: freed, its segments released, taken by B.  Revoked,
 * it is kept for root with its frames until malloc_trim gives its
 * segments back to the pool, mapped afresh. */
static int by_root_huge_reuse(void *arg)
{
	(void)arg;
	xpfo_compartment_t *b = mk("new");
	unsigned char *p = malloc(HUGE);
	NEED(p && xpfo_owner(p) == xpfo_root(), 3);
	memset(p, 'A', HUGE);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	NEED(rfd >= 0, 4);
	free(p);
	NEED(xpfo_flush() == 0, 5);
	malloc_trim(0);
	if (!reuse_in(b, HUGE, p, HUGE, 2))
		return NOREUSE;
	return verdict(drain_count_n(rfd, wfd, SPLICED));
}

/* A block transferred from root to A lives in root's segment.  A pins it
 * and frees it; its pages become root's segment's free pages, and root's
 * next allocations take them: they change owner from A to root. */
static int by_transfer_then_free(void *arg)
{
	(void)arg;
	xpfo_compartment_t *a = mk("old"), *prev;
	unsigned char *keep = malloc(RUN); /* root's segment stays root's */
	unsigned char *p = malloc(RUN);
	NEED(keep && p, 3);
	NEED(xpfo_transfer(p, a) == 0 && xpfo_owner(p) == a, 4);
	NEED(prev = xpfo_enter(a), 5);
	memset(p, 'A', RUN);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	NEED(rfd >= 0, 6);
	free(p);
	xpfo_leave(prev);
	NEED(xpfo_flush() == 0, 7);
	if (!reuse_in(xpfo_root(), RUN, p, RUN, 4096))
		return NOREUSE;
	return verdict(drain_count_n(rfd, wfd, SPLICED));
}

/* ---- destroy, then reuse --------------------------------------------------- */

struct destroy_arg {
	int via_transfer; /* A's block sits in root's segment: root reuses it */
};

static int by_destroy(void *arg)
{
	struct destroy_arg *d = arg;
	xpfo_compartment_t *a = mk("old"), *b = mk("new"), *prev;
	unsigned char *p;
	if (d->via_transfer) {
		unsigned char *keep = malloc(RUN);
		p = malloc(RUN);
		NEED(keep && p, 3);
		NEED(xpfo_transfer(p, a) == 0, 4);
		NEED(prev = xpfo_enter(a), 5);
	} else {
		NEED(prev = xpfo_enter(a), 5);
		p = malloc(RUN);
		NEED(p, 6);
	}
	memset(p, 'A', RUN);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	NEED(rfd >= 0, 7);
	xpfo_leave(prev);
	NEED(xpfo_compartment_destroy(a) == 0, 8);
	NEED(xpfo_owner(p) == NULL, 9);
	if (!reuse_in(d->via_transfer ? xpfo_root() : b, RUN, p, RUN, 4096))
		return NOREUSE;
	return verdict(drain_count_n(rfd, wfd, SPLICED));
}

/* ---- control -------------------------------------------------------------- */

/* Does writing the pages after vmsplice change what the pipe returns? */
static void control(void)
{
	unsigned char *p = malloc(RUN);
	if (!p)
		tu_hard_error("malloc");
	memset(p, 'A', RUN);
	int wfd, rfd = splice_in(p, SPLICED, &wfd);
	if (rfd < 0) {
		if (errno == ENOSYS || errno == EINVAL || errno == EPERM)
			tu_skip("vmsplice: %s", strerror(errno));
		tu_hard_error("vmsplice: %s", strerror(errno));
	}
	memset(p, 'N', RUN);
	long nn = drain_count_n(rfd, wfd, SPLICED);
	if (nn != (long)SPLICED)
		tu_skip("vmsplice does not alias user pages here (%ld of %u bytes written after "
			"the vmsplice came through the pipe): nothing to test", nn, SPLICED);
	fprintf(stderr, "ok   control: with no owner change, the pipe returns the bytes written "
			"after the vmsplice (%ld of %u)\n", nn, SPLICED);
	free(p);
}

int main(int argc, char **argv)
{
	(void)argc;
	tu_prog = "vmsplice";
	/* A small heap reservation (1 GiB, 256 segments) so that a new owner
	 * can be made to get the old owner's pages even with random segment
	 * placement: run again with reserve=1 added (and thp=0: blocks of
	 * whole segments). */
	const char *o = getenv("XPFO_OPTIONS");
	if (!o || !strstr(o, "reserve=")) {
		char buf[1024];
		snprintf(buf, sizeof buf, "%s%sreserve=1,thp=0", o ? o : "", o && *o ? "," : "");
		setenv("XPFO_OPTIONS", buf, 1);
		execv("/proc/self/exe", argv);
		tu_hard_error("execv /proc/self/exe: %s", strerror(errno));
	}
	fprintf(stderr, "XPFO_OPTIONS=%s\n", o);
	tu_xpfo_init(1);
	iso_stdio_warmup();
	control();

	static struct xfer_arg x_root = { RUN, 0 }, x_root_huge = { HUGE, 0 },
			       x_comp = { RUN, 1 };
	static size_t s_run = RUN;
	static struct destroy_arg d_own = { 0 }, d_xfer = { 1 };
	const struct tu_case cases[] = {
		{ "transfer root -> compartment (page run)", by_transfer, &x_root, 0 },
		{ "transfer root -> compartment (huge block)", by_transfer, &x_root_huge, 0 },
		{ "transfer compartment -> compartment", by_transfer, &x_comp, 0 },
		{ "free, segment released, reused by another compartment", by_segment_reuse, &s_run,
		  0 },
		{ "root frees a huge block, reused by a compartment", by_root_huge_reuse, NULL, 0 },
		{ "transferred block freed by its receiver, reused by root", by_transfer_then_free,
		  NULL, 0 },
		{ "destroy, segment reused by another compartment", by_destroy, &d_own, 0 },
		{ "destroy, transferred block reused by root", by_destroy, &d_xfer, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		tu_run_case(&cases[i], 30, NULL);
	tu_exit();
}
