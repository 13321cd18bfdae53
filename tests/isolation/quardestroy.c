/* quardestroy.c - a slot held in a thread's quarantine outlives its
 * compartment.
 *
 * Found by the threads fuzz target under profile=strict: the fuzzer's main
 * thread frees blocks it allocated in a compartment (xpfo_malloc_in); with
 * the slot quarantine on they wait in that thread's quarantine; the
 * compartment is destroyed (its pages revoked and freed); a later eviction
 * read the slot for the write-after-free check and faulted on a free page
 * (ASan: SEGV in t_first_not from quarantine_evict).  The eviction of a slot
 * whose compartment is gone must drop it, and it must never release a slot
 * of whatever took the pages since.
 *
 * Runs itself again with XPFO_OPTIONS=profile=strict (quarantine, waf_check)
 * and checks the child exits 0 without a line from xpfo. */
#include "iso.h"

#include <stdlib.h>
#include <string.h>

#define N 64
#define SZ 64
#define LIVE 4000

static int scenario(void)
{
	void *p[N];
	xpfo_compartment_t *c = xpfo_compartment_create("gone", 0);
	if (!c)
		return 10;
	for (int i = 0; i < N; i++) {
		p[i] = xpfo_malloc_in(c, SZ);
		if (!p[i])
			return 11;
	}
	for (int i = 0; i < N; i++)
		free(p[i]); /* into this thread's quarantine */
	if (xpfo_compartment_destroy(c))
		return 12;
	/* live root blocks of the same class: they may take the old pages */
	static unsigned char *live[LIVE];
	for (int i = 0; i < LIVE; i++) {
		live[i] = malloc(SZ);
		if (!live[i])
			return 13;
		memset(live[i], 0xa5, SZ);
	}
	/* churn the quarantine until every old entry was evicted: an entry
	 * that released a slot of a live block would let malloc hand it out
	 * again, and the free after it would fill it */
	for (int i = 0; i < 20000; i++)
		free(malloc(SZ));
	for (int i = 0; i < LIVE; i++)
		for (int k = 0; k < SZ; k++)
			if (live[i][k] != 0xa5)
				return 14;
	for (int i = 0; i < LIVE; i++)
		free(live[i]);
	return 0;
}

int main(int argc, char **argv)
{
	tu_prog = "quardestroy";
	tu_xpfo_init(1);
	iso_stdio_warmup();
	if (argc > 1 && !strcmp(argv[1], "child"))
		return scenario();
	const char *const args[] = { "child", NULL };
	struct tu_child ch;
	if (iso_run_self("profile=strict", args, 120, &ch))
		tu_hard_error("cannot run the child");
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
	      "profile=strict child: %s, stderr: %s", tu_status_str(ch.status), ch.err);
	CHECK(!strstr(ch.err, "xpfo:"), "profile=strict child wrote: %s", ch.err);
	tu_exit();
}
