/* ownership.c - pages that change owner through destroy and realloc come
 * with fresh frames, and destroy gives every segment back.
 *
 * Each case runs in a forked child and must exit 0; a step that fails
 * exits with its own code and says which on stderr.
 *   destroy: a compartment frees a run, transfers another run of the same
 *     segment to root and is destroyed: the segment stays, now root's, and
 *     root's next run over the freed pages must not hold the compartment's
 *     bytes (retained free pages, and pages still queued in root's gather).
 *   grow: a run transferred from a compartment to root grows in place over
 *     pages the compartment freed (revoked, retained): root must not see
 *     the compartment's bytes.  Unguarded runs are needed: once 512 guard
 *     pages are live (guard_allowed), and again with guard_large=0 in a
 *     re-executed child.
 *   huge destroy: a 300 MiB block of a destroyed compartment gives all its
 *     segments back (segments, mapped and resident gauges as before), three
 *     times over.
 *   realloc: root reallocs a block of a closed compartment (small, run,
 *     huge; larger, same class, smaller): no fault, the bytes move into a
 *     root block.
 */
#include "iso.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN (64u << 10)
#define PAT 0xa5
#define SEG (4u << 20)

static xpfo_compartment_t *mk(const char *name)
{
	xpfo_compartment_t *c = xpfo_compartment_create(name, 0);
	if (!c) {
		fprintf(stderr, "xpfo_compartment_create(%s): %s\n", name, strerror(errno));
		_exit(90);
	}
	return c;
}

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
	uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
	return x < y + nb && y < x + na;
}

/* Bytes of p[0..n) that are not zero; *pat: how many of them are PAT. */
static size_t nonzero(const unsigned char *p, size_t n, size_t *pat)
{
	size_t nz = 0;
	*pat = 0;
	for (size_t i = 0; i < n; i++) {
		nz += p[i] != 0;
		*pat += p[i] == PAT;
	}
	return nz;
}

/* ---- destroy: the segment that stays ------------------------------------ */

/* root_frees: the freed run is freed by root while the compartment is
 * closed (queued in root's gather across the destroy), not by the
 * compartment itself (revoked at leave, retained). */
static int destroy_handover(void *arg)
{
	bool root_frees = arg != NULL;
	xpfo_compartment_t *d = mk("doomed");
	xpfo_compartment_t *prev = xpfo_enter(d);
	NEED(prev, 3);
	unsigned char *a = malloc(RUN), *b = malloc(RUN);
	NEED(a && b && (uintptr_t)a / SEG == (uintptr_t)b / SEG, 4);
	memset(a, PAT, RUN);
	memset(b, 1, RUN);
	if (!root_frees)
		free(a);
	NEED(xpfo_transfer(b, xpfo_root()) == 0, 5);
	xpfo_leave(prev);
	if (root_frees)
		free(a);
	NEED(xpfo_compartment_destroy(d) == 0, 6);
	NEED(xpfo_flush() == 0, 7);
	unsigned char *r = malloc(RUN);
	NEED(r && xpfo_owner(r) == xpfo_root(), 8);
	/* otherwise the case shows nothing */
	NEED(overlaps(r, RUN, a, RUN), 9);
	size_t pat, nz = nonzero(r, RUN, &pat);
	if (nz) {
		fprintf(stderr, "root's new run at %p (the freed run was at %p) holds %zu nonzero "
			"bytes, %zu of them the destroyed compartment's pattern\n", (void *)r,
			(void *)a, nz, pat);
		return 20;
	}
	NEED(b[0] == 1 && b[RUN - 1] == 1, 10);
	free(r);
	free(b);
	return 0;
}

/* The same, but the purge at the hand-over fails (injected): the freed
 * run's pages are quarantined, with one warning, and no run root gets
 * holds the pattern. */
static int destroy_handover_purge_fails(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *d = mk("doomed");
	xpfo_compartment_t *prev = xpfo_enter(d);
	NEED(prev, 3);
	unsigned char *a = malloc(RUN), *b = malloc(RUN);
	NEED(a && b && (uintptr_t)a / SEG == (uintptr_t)b / SEG, 4);
	memset(a, PAT, RUN);
	free(a);
	NEED(xpfo_transfer(b, xpfo_root()) == 0, 5);
	xpfo_leave(prev);
	tu_stats(&s0);
	NEED(xpfo__test_inject(TU_OS_PURGE, EIO, 0, 1) == 0, 6);
	NEED(xpfo_compartment_destroy(d) == 0, 7);
	tu_stats(&s1);
	NEED(s1.pages_quarantined >= s0.pages_quarantined + RUN / ISO_PAGE, 8);
	for (int i = 0; i < 8; i++) {
		unsigned char *r = malloc(RUN);
		NEED(r, 9);
		NEED(!overlaps(r, RUN, a, RUN), 10);
		size_t pat;
		nonzero(r, RUN, &pat);
		NEED(pat == 0, 11);
	}
	return 0;
}

/* ---- grow in place over another owner's free pages ---------------------- */

static int grow_foreign(void *arg)
{
	if (arg) {
		/* 512 live guard pages: later runs come without one */
		struct xpfo_stats st;
		for (int i = 0; i < 520; i++)
			NEED(malloc(20000), 3);
		tu_stats(&st);
		NEED(st.live_guards >= 512, 4);
	}
	xpfo_compartment_t *x = mk("sender");
	xpfo_compartment_t *prev = xpfo_enter(x);
	NEED(prev, 5);
	unsigned char *b = malloc(RUN), *a = malloc(20480);
	NEED(a && b, 6);
	NEED(a == b + RUN, 7); /* adjacent, no guard between */
	memset(b, 1, RUN);
	memset(a, PAT, 20480);
	free(a);
	xpfo_leave(prev); /* a's revocation applied: revoked, retained */
	NEED(xpfo_transfer(b, xpfo_root()) == 0, 8);
	NEED(xpfo_flush() == 0, 9);
	unsigned char *r = realloc(b, RUN + 20480);
	NEED(r && xpfo_owner(r) == xpfo_root(), 10);
	NEED(r[0] == 1 && r[RUN - 1] == 1, 11);
	size_t pat, nz = nonzero(r + RUN, 20480, &pat);
	if (pat) {
		fprintf(stderr, "realloc %s: the grown part holds %zu nonzero bytes, %zu of them "
			"compartment \"sender\"'s pattern\n", r == b ? "in place" : "moved", nz, pat);
		return 20;
	}
	fprintf(stderr, "realloc %s, no byte of the sender's\n", r == b ? "grew in place" : "moved");
	free(r);
	return 0;
}

/* ---- destroy gives every segment back ------------------------------------ */

static int destroy_big(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	for (int round = 0; round < 3; round++) {
		xpfo_compartment_t *d = mk("big");
		if (!round)
			tu_stats(&s0);
		void *p = xpfo_malloc_in(d, 300u << 20);
		NEED(p, 3);
		NEED(xpfo_compartment_destroy(d) == 0, 4);
		tu_stats(&s1);
		if (s1.segments != s0.segments || s1.mapped_bytes != s0.mapped_bytes ||
		    s1.resident_bytes != s0.resident_bytes) {
			fprintf(stderr, "after destroy %d: segments %llu (before %llu), mapped %llu "
				"(%llu), resident %llu (%llu) bytes\n", round + 1,
				(unsigned long long)s1.segments, (unsigned long long)s0.segments,
				(unsigned long long)s1.mapped_bytes, (unsigned long long)s0.mapped_bytes,
				(unsigned long long)s1.resident_bytes,
				(unsigned long long)s0.resident_bytes);
			return 20 + round;
		}
	}
	return 0;
}

/* ---- realloc of a closed compartment's block ------------------------------ */

struct realloc_arg {
	size_t size, new_size;
};

static int realloc_closed(void *arg)
{
	struct realloc_arg *a = arg;
	xpfo_compartment_t *x = mk("closed");
	unsigned char *p = xpfo_malloc_in(x, a->size);
	NEED(p, 3);
	xpfo_compartment_t *prev = xpfo_enter(x);
	NEED(prev, 4);
	tu_fill(p, a->size, 11);
	xpfo_leave(prev);
	unsigned char *q = realloc(p, a->new_size);
	NEED(q && q != p, 5);
	NEED(xpfo_owner(q) == xpfo_root(), 6);
	size_t keep = a->size < a->new_size ? a->size : a->new_size;
	NEED(tu_verify(q, keep, 11) == (size_t)-1, 7);
	free(q);
	NEED(xpfo_flush() == 0, 8);
	return 0;
}

/* Run grow_foreign in this program again with XPFO_OPTIONS=guard_large=0. */
static void grow_reexec(void)
{
	struct tu_child ch;
	const char *args[] = { "grow", NULL };
	if (iso_run_self("guard_large=0", args, 30, &ch))
		tu_hard_error("could not run the child");
	CHECK(WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0,
	      "grow, guard_large=0 (re-executed): child ended with %s; stderr: %s",
	      tu_status_str(ch.status), ch.err);
	printf("%s: grow in place over the sender's freed pages (guard_large=0)\n",
	       WIFEXITED(ch.status) && WEXITSTATUS(ch.status) == 0 ? "PASS" : "FAIL");
}

int main(int argc, char **argv)
{
	tu_prog = "ownership";
	tu_xpfo_init(1);
	iso_stdio_warmup();
	if (argc > 1 && !strcmp(argv[1], "grow"))
		return grow_foreign(NULL);
	static struct realloc_arg r_small = { 100, 3000 }, r_same = { 100, 104 },
				  r_run = { RUN, 2 * RUN }, r_shrink = { RUN, RUN / 2 },
				  r_huge = { 3u << 20, 5u << 20 }, r_small_run = { 200, RUN };
	static int yes = 1;
	const struct tu_case cases[] = {
		{ "destroy: root's next run over the compartment's retained freed run is fresh",
		  destroy_handover, NULL, 0 },
		{ "destroy: root's next run over a run root freed (queued across the destroy) is "
		  "fresh", destroy_handover, &yes, 0 },
		{ "destroy: the purge at the hand-over fails: the freed run is quarantined",
		  destroy_handover_purge_fails, NULL, 0 },
		{ "grow: a transferred run grows over the sender's freed pages (512 guards live)",
		  grow_foreign, &yes, 0 },
		{ "destroy: a 300 MiB block gives its segments back, three times",
		  destroy_big, NULL, 0 },
		{ "realloc from root of a closed compartment's 100 B block to 3000 B",
		  realloc_closed, &r_small, 0 },
		{ "realloc from root of a closed compartment's 100 B block, same class",
		  realloc_closed, &r_same, 0 },
		{ "realloc from root of a closed compartment's 200 B block to a run",
		  realloc_closed, &r_small_run, 0 },
		{ "realloc from root of a closed compartment's run, larger", realloc_closed, &r_run,
		  0 },
		{ "realloc from root of a closed compartment's run, smaller", realloc_closed,
		  &r_shrink, 0 },
		{ "realloc from root of a closed compartment's huge block", realloc_closed, &r_huge,
		  0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		tu_run_case(&cases[i], 30, NULL);
	grow_reexec();
	tu_exit();
}
