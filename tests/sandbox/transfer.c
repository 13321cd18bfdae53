/* transfer.c - xpfo_transfer takes every allocation of 4096 bytes or more
 * in place (a service rarely chooses its results' sizes): blocks from 4096
 * bytes to past 16 KiB, made by malloc, calloc and aligned_alloc in a
 * compartment, move to root at the same address with the same bytes; a
 * block under 4096 bytes is still refused (EINVAL). */
#include "testutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const size_t sizes[] = { 4096, 4097, 5000, 6144, 8191, 8192, 10240, 12288, 14000,
				16376, 16384, 16385, 20000 };

static void one(xpfo_compartment_t *c, size_t n, int how)
{
	char *p = how == 0 ? xpfo_malloc_in(c, n) : how == 1 ? xpfo_calloc_in(c, 1, n)
		: xpfo_aligned_alloc_in(c, 64, n);
	CHECK(p != NULL, "allocation of %zu", n);
	if (!p)
		return;
	xpfo_compartment_t *prev = xpfo_enter(c);
	tu_fill(p, n, n);
	xpfo_leave(prev);
	int r = xpfo_transfer(p, xpfo_root());
	CHECK(r == 0, "xpfo_transfer of %zu bytes (way %d): %s", n, how, r ? strerror(errno) : "ok");
	if (r == 0) {
		CHECK(xpfo_owner(p) == xpfo_root(), "%zu bytes: owner after the transfer", n);
		CHECK(tu_verify(p, n, n) == (size_t)-1, "%zu bytes: contents changed", n);
	}
	free(p);
}

int main(void)
{
	tu_prog = "sandbox/transfer";
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		for (int how = 0; how < 3; how++)
			one(c, sizes[i], how);
	char *small = xpfo_malloc_in(c, 4095);
	errno = 0;
	CHECK(xpfo_transfer(small, xpfo_root()) == -1 && errno == EINVAL, "4095 bytes: errno %d", errno);
	free(small);
	tu_exit();
}
