/* rootruns.c - where blocks of 4096 bytes to 16 KiB live.  Until a program
 * creates its first compartment, nothing can be transferred anywhere, so
 * root keeps them in slabs (a 4104-byte block takes 5 KiB, not a two-page
 * run, no grant or revocation syscall of its own: issue 11's sqlite RSS and
 * batch1024/4096 costs).  aligned_alloc(4096, n) of a page or more is a
 * page run always (what xpfo_share_fd and a later transfer need).  Once a
 * compartment exists, every block of 4096 bytes or more is a page run, in
 * root too, and moves in place (tests/sandbox/transfer); a slab block made
 * before is refused with EINVAL. */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define N 512
#define SIZE 4104 /* sqlite's page plus its 8-byte header */

static struct xpfo_stats st(void)
{
	struct xpfo_stats s;
	memset(&s, 0, sizeof s);
	if (xpfo_stats_get(&s, sizeof s))
		tu_hard_error("xpfo_stats_get: %s", strerror(errno));
	return s;
}

int main(void)
{
	tu_prog = "sandbox/rootruns";
	static char *p[N];
	struct xpfo_stats a = st();
	for (int i = 0; i < N; i++)
		if (!(p[i] = malloc(SIZE)))
			tu_hard_error("malloc");
	struct xpfo_stats b = st();
	CHECK(b.allocs_large == a.allocs_large, "no compartment yet: %d blocks of %d bytes made %lu "
	      "page runs (slab slots expected)", N, SIZE, (unsigned long)(b.allocs_large - a.allocs_large));
	CHECK(b.grant_syscalls - a.grant_syscalls < N / 8, "%lu granting syscalls for %d blocks",
	      (unsigned long)(b.grant_syscalls - a.grant_syscalls), N);
	for (int i = 1; i < N; i++)
		free(p[i]);
	char *aligned = aligned_alloc(4096, 5000);
	CHECK(aligned && st().allocs_large == b.allocs_large + 1,
	      "aligned_alloc(4096, 5000) is not a page run");

	xpfo_compartment_t *c = xpfo_compartment_create("worker", 0);
	if (!c)
		tu_hard_error("xpfo_compartment_create: %s", strerror(errno));
	char *run = malloc(SIZE);
	CHECK(run != NULL, "malloc");
	tu_fill(run, SIZE, 7);
	int r = xpfo_transfer(run, c);
	CHECK(r == 0 && xpfo_owner(run) == c, "root's %d-byte block after the first compartment: "
	      "not moved in place (%s)", SIZE, strerror(errno));
	xpfo_compartment_t *prev = xpfo_enter(c);
	CHECK(r || tu_verify(run, SIZE, 7) == (size_t)-1, "contents changed by the transfer");
	xpfo_leave(prev);
	CHECK(xpfo_transfer(aligned, c) == 0, "the page-aligned block: %s", strerror(errno));
	errno = 0;
	CHECK(xpfo_transfer(p[0], c) == -1 && errno == EINVAL,
	      "a slab block made before any compartment: errno %d, not EINVAL", errno);
	free(run);
	free(aligned);
	free(p[0]);
	xpfo_compartment_destroy(c);
	tu_exit();
}
