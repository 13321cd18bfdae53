/* osfail.c - what the program sees when a purge (madvise / remap) fails,
 * injected with xpfo__test_inject(TU_OS_PURGE, EIO), under release=mprotect.  (A failed mprotect is
 * failclosed's, /proc/self/mem nomem's; mmap only runs at start-up, where
 * tests/reserve.sh makes it fail for real under ulimit -v.)
 *
 * Each case runs in a forked child and must exit 0; a step that fails exits
 * with its own code and says which on stderr.
 *   own run: the purge of root's freed 1.5 MiB run fails: nothing is lost
 *     (no purge counted, the run not quarantined), and calloc over the same
 *     size still gives zeros.
 *   transferred run: a run transferred from compartment "sender" to root
 *     and freed by root must change owner with fresh frames, which a fresh
 *     no-access mapping over it gives (its revocation and its purge in one
 *     call: alloc/revoke.c release_remapped).  That remap fails: an
 *     mprotect and a purge do it instead (nothing quarantined, one purge
 *     counted) and the sender's next run on its pages reads zeros.  The
 *     remap and the purge after it both fail: it is quarantined
 *     (revoke_failures + 1, pages_quarantined + its pages) and the
 *     sender's next runs never land on it.  The remap refused with EPERM
 *     (a seccomp filter of the program's): protected and purged instead,
 *     and the next such span is not remapped at all.
 *   huge block: the remap that gives a freed 6 MiB block's segments fresh
 *     frames fails: the segments stay out of the pool (still counted in
 *     `segments`), no later huge block lands on them, and calloc of huge
 *     blocks gives zeros; the failure says one "xpfo: error:" line; freeing
 *     the block again is a double free (fatal line), not a free of a live
 *     block of no one.
 */
#include "iso.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif

#define RUN (1536u << 10)
#define HUGE (6u << 20)
#define PAT 0x5a

static bool overlaps(const void *a, size_t na, const void *b, size_t nb)
{
	return (const char *)a < (const char *)b + nb && (const char *)b < (const char *)a + na;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static int own_run(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	unsigned char *p = malloc(RUN);
	NEED(p, 2);
	memset(p, PAT, RUN);
	tu_stats(&s0);
	NEED(xpfo__test_inject(TU_OS_PURGE, EIO, 0, 1000) == 0, 3); /* every purge of the flush */
	free(p);
	NEED(xpfo_flush() == 0, 4);
	xpfo__test_inject(TU_OS_PURGE, 0, 0, 0);
	tu_stats(&s1);
	NEED(s1.purges == s0.purges, 5);          /* the purge was the one that failed */
	/* at most the segment the free emptied: its remap failed too, so it
	 * is kept out and reported (alloc/policy.c), the run itself is not */
	NEED(s1.revoke_failures <= s0.revoke_failures + 1, 6);
	unsigned char *q = calloc(1, RUN);
	NEED(q && all_zero(q, RUN), 7);
	free(q);
	return 0;
}

/* A run of compartment "sender" transferred to root, written, and freed
 * by root with the next `fails` purges (the remap, then the madvise)
 * failing with err; *s0 and *s1 the stats around the free's flush.  The sender
 * keeps a run before it in the same segment, so that the segment does not
 * go back to the pool (a new mapping over all of it) when it is freed.
 * 0, or the failed step's code. */
static int transferred_free(unsigned fails, int err, xpfo_compartment_t **c, unsigned char **a,
			    struct xpfo_stats *s0, struct xpfo_stats *s1)
{
	*c = xpfo_compartment_create("sender", 0);
	NEED(*c, 2);
	xpfo_compartment_t *prev = xpfo_enter(*c);
	NEED(prev, 3);
	unsigned char *keep = malloc(RUN);
	*a = malloc(RUN);
	NEED(keep && *a, 4);
	memset(*a, PAT, RUN);
	xpfo_leave(prev);
	NEED(xpfo_transfer(*a, xpfo_root()) == 0, 5);
	tu_stats(s0);
	NEED(xpfo__test_inject(TU_OS_PURGE, err, 0, fails) == 0, 6);
	free(*a);
	NEED(xpfo_flush() == 0, 7);
	xpfo__test_inject(TU_OS_PURGE, 0, 0, 0);
	tu_stats(s1);
	return 0;
}

static int transferred_remap_fails(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *c;
	unsigned char *a;
	int e = transferred_free(1, EIO, &c, &a, &s0, &s1);
	if (e)
		return e;
	NEED(s1.revoke_failures == s0.revoke_failures, 8);
	NEED(s1.pages_quarantined == s0.pages_quarantined, 9);
	NEED(s1.spans_remapped == s0.spans_remapped, 10);
	/* the mprotect and the madvise instead: two rounds, one purge, and no
	 * segment back to the pool */
	NEED(s1.flush_rounds_protect == s0.flush_rounds_protect + 1, 11);
	NEED(s1.flush_rounds_purge == s0.flush_rounds_purge + 1, 12);
	NEED(s1.flush_rounds_unmap == s0.flush_rounds_unmap, 13);
	NEED(s1.purges == s0.purges + 1, 14);
	xpfo_compartment_t *prev = xpfo_enter(c);
	unsigned char *r = malloc(RUN);
	NEED(r, 15);
	NEED(overlaps(r, RUN, a, RUN), 16); /* its first free pages again */
	for (size_t i = 0; i < RUN; i += ISO_PAGE)
		NEED(r[i] != PAT, 17); /* fresh frames, never the sender's old bytes */
	xpfo_leave(prev);
	return 0;
}

static int transferred_run(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *c;
	unsigned char *a;
	int e = transferred_free(2, EIO, &c, &a, &s0, &s1);
	if (e)
		return e;
	NEED(s1.revoke_failures == s0.revoke_failures + 1, 8);
	NEED(s1.pages_quarantined >= s0.pages_quarantined + RUN / ISO_PAGE, 9);
	xpfo_compartment_t *prev = xpfo_enter(c);
	for (int i = 0; i < 8; i++) {
		unsigned char *r = malloc(RUN);
		NEED(r, 10);
		NEED(!overlaps(r, RUN, a, RUN), 11);
	}
	xpfo_leave(prev);
	return 0;
}

/* Revoked the usual way: an mprotect and a madvise, no remap. */
static bool protected_purged(const struct xpfo_stats *s0, const struct xpfo_stats *s1)
{
	return s1->spans_remapped == s0->spans_remapped &&
	       s1->flush_rounds_protect == s0->flush_rounds_protect + 1 &&
	       s1->flush_rounds_purge == s0->flush_rounds_purge + 1 &&
	       s1->revoke_failures == s0->revoke_failures;
}

static int transferred_remap_refused(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *c;
	unsigned char *a;
	int e = transferred_free(1, EPERM, &c, &a, &s0, &s1);
	if (e)
		return e;
	NEED(protected_purged(&s0, &s1), 8);
	e = transferred_free(0, 0, &c, &a, &s0, &s1); /* nothing injected now */
	if (e)
		return e + 10;
	NEED(protected_purged(&s0, &s1), 9); /* refused once: no remap tried */
	NEED(s1.revoke_syscalls == s0.revoke_syscalls + 1, 10);
	return 0;
}

static int huge_block(void *arg)
{
	(void)arg;
	struct xpfo_stats s0, s1;
	unsigned char *h = malloc(HUGE);
	NEED(h, 2);
	memset(h, PAT, HUGE);
	tu_stats(&s0);
	NEED(xpfo__test_inject(TU_OS_PURGE, EIO, 0, 1) == 0, 3);
	free(h);
	NEED(xpfo_flush() == 0, 4);
	xpfo__test_inject(TU_OS_PURGE, 0, 0, 0);
	tu_stats(&s1);
	NEED(s1.segments == s0.segments, 8); /* still held: out of the pool */
	for (int i = 0; i < 8; i++) {
		unsigned char *q = calloc(1, HUGE);
		NEED(q, 5);
		NEED(!overlaps(q, HUGE, h, HUGE), 6);
		NEED(all_zero(q, HUGE), 7);
	}
	return 0;
}

/* The same block freed again: a double free, not a block of no one. */
static int huge_twice(void *arg)
{
	(void)arg;
	unsigned char *h = malloc(HUGE);
	NEED(h, 2);
	NEED(xpfo__test_inject(TU_OS_PURGE, EIO, 0, 1) == 0, 3);
	free(h);
	NEED(xpfo_flush() == 0, 4);
	xpfo__test_inject(TU_OS_PURGE, 0, 0, 0);
	tu_expect("xpfo: fatal: double free of %p (compartment \"root\")", (void *)h);
	free(h);
	return 0;
}

/* The purges these cases make fail are release=mprotect's: guard markers
 * (the default where the kernel has them) release frames as they revoke,
 * with no purge of their own (tests/guardrel).  With retain=0 a freed huge
 * block is not kept for its owner (revoked, frames and all): its segments
 * are mapped afresh at the flush.  xpfo reads its options once: run again
 * with release=mprotect,retain=0 added. */
static void with_mprotect(char **argv)
{
	if (getenv("OSFAIL_AGAIN"))
		return;
	const char *o = getenv("XPFO_OPTIONS");
	char buf[512];
	snprintf(buf, sizeof buf, "%s%srelease=mprotect,retain=0", o ? o : "", o && *o ? "," : "");
	if (setenv("XPFO_OPTIONS", buf, 1) || setenv("OSFAIL_AGAIN", "1", 1))
		tu_hard_error("setenv");
	execv("/proc/self/exe", argv);
	tu_hard_error("exec: %s", strerror(errno));
}

int main(int argc, char **argv)
{
	(void)argc;
	with_mprotect(argv);
	tu_prog = "osfail";
	tu_xpfo_init(1);
	iso_stdio_warmup();
	const struct tu_case cases[] = {
		{ "own run: its purge fails: nothing lost, calloc still zero", own_run, NULL, 0 },
		{ "transferred run: its remap fails: mprotect and purge, the sender reads zeros",
		  transferred_remap_fails, NULL, 0 },
		{ "transferred run: its remap and purge fail: quarantined, never the sender's again",
		  transferred_run, NULL, 0 },
		{ "transferred run: its remap refused (EPERM): none tried again",
		  transferred_remap_refused, NULL, 0 },
		{ "huge block: the remap of its segments fails: they stay out of the pool",
		  huge_block, NULL, 0 },
		{ "huge block whose remap failed, freed again: double free", huge_twice, NULL,
		  SIGABRT, .lead = "xpfo: error: cannot purge (released segments) *" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		tu_run_case(&cases[i], 30, NULL);
	tu_exit();
}
