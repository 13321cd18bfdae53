/* slabclean.c - a new slab carved from the rest of a grant span whose pages
 * were all zero (fresh or purged, RF_CLEAN) is not filled (issue 11).  With
 * the write-after-free check on, a slab's free slots must hold zeros; such
 * pages already do, and filling them wrote every page of every slab: hash
 * spent 11% of its time in that memset, and every slab was resident whole
 * however little of it the program used.
 *
 * In a child (a heap of its own): 256 blocks of 16,000 bytes (the
 * 16,384-byte class with the canary: four pages a slot, one slab after
 * another from the same spans), the first byte of each written.  malloc
 * touches a slot's first page (the check reads its first 64 bytes) and its
 * last (the canary), so two of each slot's four pages are resident
 * (mincore), not four as when the slabs were filled; at most 2.5 on average
 * are allowed.  And no block is handed out dirty: all its bytes past the
 * first are zero. */
#include "testutil.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NBLOCKS 256
#define SIZE 16000
#define SLOT 16384
#define PAGE 4096u

static int carve(void *arg)
{
	(void)arg;
	static char *b[NBLOCKS];
	for (int i = 0; i < NBLOCKS; i++) {
		if (!(b[i] = xpfo_malloc(SIZE)))
			return 99;
		b[i][0] = 1;
	}
	size_t resident = 0, dirty = 0;
	for (int i = 0; i < NBLOCKS; i++) {
		unsigned char vec[SLOT / PAGE];
		if ((uintptr_t)b[i] % PAGE || mincore(b[i], SLOT, vec))
			return 98; /* not the class this test expects */
		for (unsigned k = 0; k < SLOT / PAGE; k++)
			resident += vec[k] & 1;
		for (size_t j = 1; j < SIZE; j++)
			dirty += b[i][j] != 0;
	}
	fprintf(stderr, "%zu of %u slot pages resident, %zu bytes not zero\n", resident,
		NBLOCKS * (SLOT / PAGE), dirty);
	if (dirty)
		return 2;
	return resident * 10 <= NBLOCKS * 25 ? 0 : 1;
}

int main(void)
{
	tu_prog = "slabclean";
	struct tu_child r;
	if (tu_run_child(carve, NULL, 60, &r))
		tu_hard_error("fork failed");
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "256 new 16 KiB slots from clean spans: at most 2.5 of their 4 pages resident "
	      "each, no byte past the first written: %s; stderr: %s",
	      tu_status_str(r.status), r.err);
	tu_exit();
}
