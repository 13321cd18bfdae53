/* alloc.c - the allocator keeps working in a locked thread: 100,000 mixed
 * allocations (small blocks, page runs freed and revoked, a few huge ones)
 * in a locked thread give the same counters as the same work in the same
 * compartment entered without the lock, no call is denied, the executor
 * did the heap work (sandbox_granted), and no span was revoked by a new
 * mapping in the locked thread (its filter refuses one over the heap). */
#include "testutil.h"

#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned OPS = 100000; /* argv[1]: a smaller scale for the QEMU guest */
#define LIVE 512

static size_t pick_size(uint64_t *rng)
{
	uint64_t r = tu_rand(rng);
	switch (r % 16) {
	case 0: case 1: case 2: case 3: case 4: case 5: case 6:
		return 1 + (r >> 8) % 1024;
	case 7: case 8: case 9: case 10:
		return 1024 + (r >> 8) % 15360;
	case 11: case 12: case 13: case 14:
		return 16385 + (r >> 8) % (512 << 10);
	default:
		return (r >> 8) % 64 ? 4096 + (r >> 8) % 60000 : (3u << 20) + (r >> 8) % 4096;
	}
}

/* Returns the number of blocks that did not hold what was written. */
static unsigned workload(void)
{
	static void *p[LIVE];
	static size_t sz[LIVE];
	uint64_t rng = 0x5eed;
	unsigned bad = 0;
	for (unsigned i = 0; i < OPS; i++) {
		unsigned k = (unsigned)(tu_rand(&rng) % LIVE);
		if (p[k]) {
			bad += ((unsigned char *)p[k])[0] != (unsigned char)k ||
			       ((unsigned char *)p[k])[sz[k] - 1] != (unsigned char)k;
			free(p[k]);
		}
		sz[k] = pick_size(&rng);
		p[k] = malloc(sz[k]);
		if (!p[k])
			return OPS;
		((unsigned char *)p[k])[0] = (unsigned char)k;
		((unsigned char *)p[k])[sz[k] - 1] = (unsigned char)k;
	}
	for (unsigned k = 0; k < LIVE; k++)
		free(p[k]);
	xpfo_flush();
	return bad;
}

struct result {
	unsigned bad;
	struct xpfo_stats d; /* after - before */
};

#define FIELDS(X) X(allocs) X(frees) X(allocs_small) X(allocs_large) X(revoke_queued) \
	X(pages_queued) X(pages_cancelled) X(pages_revoked) X(revoke_syscalls) X(grant_syscalls) \
	X(flushes) X(purges) X(pages_purged) X(transfers) X(sandbox_denied) X(sandbox_granted)

static void child(int fd, int locked)
{
	struct result r;
	memset(&r, 0, sizeof r);
	int sp[2]; /* for the stats report: a locked thread cannot make one */
	if (pipe(sp))
		_exit(92);
	xpfo_compartment_t *c = xpfo_compartment_create("parser", XPFO_COMPARTMENT_STRICT);
	if (locked ? xpfo_lock_thread(c, 0) != 0 : xpfo_enter(c) == NULL)
		_exit(90);
	/* the same start: the lock's own allocations leave retained pages */
	xpfo_flush();
	malloc_trim(0);
	struct xpfo_stats a, b;
	xpfo_stats_get(&a, sizeof a);
	r.bad = workload();
	xpfo_stats_get(&b, sizeof b);
#define X(f) r.d.f = b.f - a.f;
	FIELDS(X)
#undef X
	/* not differences: release=auto arms at the lock (the executor must
	 * hold the descriptor), and not without it */
	r.d.uffd_armed = b.uffd_armed;
	r.d.uffd_syscalls = b.uffd_syscalls;
	/* not compared: only the unlocked thread may remap */
	r.d.spans_remapped = b.spans_remapped - a.spans_remapped;
	r.d.spans_zapped = b.spans_zapped - a.spans_zapped;
	/* stats=1's report shows what the executor did */
	char rep[8192] = "";
	if (locked) {
		xpfo_stats_print(sp[1]);
		close(sp[1]);
		ssize_t k = read(sp[0], rep, sizeof rep - 1);
		rep[k > 0 ? k : 0] = 0;
		char *line = strstr(rep, "xpfo:   sandbox      0 denied; executor: ");
		if (!line)
			_exit(91);
		fprintf(stderr, "%.*s\n", (int)strcspn(line, "\n"), line);
	}
	write(fd, &r, sizeof r);
	_exit(0);
}

static int run(int locked, struct result *r)
{
	int p[2];
	if (pipe(p))
		tu_hard_error("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1], locked);
	}
	close(p[1]);
	ssize_t got = read(p[0], r, sizeof *r);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	CHECK(got == (ssize_t)sizeof *r && WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "%s child: %s", locked ? "locked" : "unlocked", tu_status_str(st));
	return got == (ssize_t)sizeof *r;
}

/* a and b differ by at most 1/div of b */
static int within(unsigned long long a, unsigned long long b, unsigned long long div)
{
	return (a > b ? a - b : b - a) <= b / div;
}

int main(int argc, char **argv)
{
	tu_prog = "sandbox/alloc";
	if (argc > 1)
		OPS = (unsigned)strtoul(argv[1], NULL, 0);
	tu_timeout(300);
	struct result u, l;
	if (!run(0, &u) || !run(1, &l))
		tu_exit();
	CHECK(u.bad == 0 && l.bad == 0, "corrupted blocks: unlocked %u, locked %u", u.bad, l.bad);
	printf("%-18s %12s %12s\n", "counter", "unlocked", "locked");
#define X(f) printf("%-18s %12llu %12llu\n", #f, (unsigned long long)u.d.f, (unsigned long long)l.d.f);
	FIELDS(X)
#undef X
	/* Every count is equal but the revoking syscalls, which depend on how
	 * freed runs coalesce at a flush: about one run in 4 a span differs by
	 * one (25,963 against 25,964 here), so they may differ by 0.1%, or by one
	 * at the QEMU rig's small scale (558 against 557).  The
	 * purges depend on placement too: a locked compartment's segments
	 * come from its reservation (contiguous), and a thread's grant spans
	 * (issue 11) are cut from whatever segment has room, so where freed runs
	 * meet a segment's edge differs (3,927 purges of 485,589 pages unlocked,
	 * 4,030 of 494,520 locked here; 1,502 and 1,578 in another run): purges
	 * may differ by a seventh either way; and the unlocked thread's retain
	 * sweeps purge 64 ranges to a process_madvise call where the kernel
	 * takes it (alloc/pages.c purge_vec), which the locked thread's
	 * executor does range by range (21,450 calls locked against 6,372
	 * unlocked here, 6.18), so the unlocked thread may make fewer.
	 * Purged pages may differ by an
	 * eighth: a locked thread keeps no freed huge block (alloc/revoke.c
	 * huge_keeps), so it purges a few more of them (28 of 21,450 purges
	 * here), and each is a span of up to 8 MiB with its huge-page slack
	 * (alloc/run.c huge_slack): 680,602 pages locked, 619,162 unlocked
	 * (570,553 and 549,049 with thp=0).  Where the unlocked thread zaps
	 * spans (alloc/revoke.c zap_apply: their frames go in one vector call
	 * at revocation, which a locked thread does not make), their pages
	 * come back clean, and a segment of them goes back to the pool with
	 * no purge of its own: 496,328 pages unlocked (487,082 zapped) against
	 * the locked thread's 680,602 (196,608 of them such segment purges), so
	 * there the unlocked thread purges fewer, up to half less. */
#define PLACED(f) (strcmp(#f, "revoke_syscalls") == 0 || strcmp(#f, "purges") == 0 || \
		   strcmp(#f, "pages_purged") == 0)
#define X(f) CHECK(strcmp(#f, "sandbox_granted") == 0 || PLACED(f) || u.d.f == l.d.f, \
		   "%s differs", #f);
	FIELDS(X)
#undef X
	CHECK(within(l.d.purges, u.d.purges, 7) || u.d.purges < l.d.purges,
	      "purges: %llu locked, %llu unlocked", (unsigned long long)l.d.purges,
	      (unsigned long long)u.d.purges);
	CHECK(within(l.d.pages_purged, u.d.pages_purged, 8) ||
		      (u.d.spans_zapped && u.d.pages_purged < l.d.pages_purged &&
		       u.d.pages_purged >= l.d.pages_purged / 2),
	      "pages_purged: %llu locked, %llu unlocked", (unsigned long long)l.d.pages_purged,
	      (unsigned long long)u.d.pages_purged);
	/* A span the unlocked thread revokes by a new mapping over it (it
	 * would be purged right after: alloc/revoke.c release_remapped) is one
	 * revoking call, as the locked thread's mprotect is, and one purge, as
	 * its madvise is; on pkeys it takes one revoking call more, the
	 * pkey_mprotect that gives the fresh pages the revoked key. */
	unsigned long long ur = u.d.revoke_syscalls -
				(strcmp(xpfo_backend(), "pkeys") ? 0 : u.d.spans_remapped);
	printf("spans_remapped %llu %llu\n", (unsigned long long)u.d.spans_remapped,
	       (unsigned long long)l.d.spans_remapped);
	CHECK(l.d.spans_remapped == 0, "the locked thread remapped %llu spans",
	      (unsigned long long)l.d.spans_remapped);
	CHECK(within(l.d.revoke_syscalls, ur, 1000) || l.d.revoke_syscalls + 1 == ur ||
		      ur + 1 == l.d.revoke_syscalls,
	      "revoke_syscalls: %llu locked, %llu unlocked (%llu less the keys of remapped "
	      "spans): more than 0.1%% or one apart", (unsigned long long)l.d.revoke_syscalls,
	      (unsigned long long)u.d.revoke_syscalls, ur);
	printf("uffd_armed %llu %llu, uffd_syscalls %llu %llu\n",
	       (unsigned long long)u.d.uffd_armed, (unsigned long long)l.d.uffd_armed,
	       (unsigned long long)u.d.uffd_syscalls, (unsigned long long)l.d.uffd_syscalls);
	const char *o = getenv("XPFO_OPTIONS");
	if (!o || !strstr(o, "release=")) { /* release=auto */
		CHECK(u.d.uffd_armed == 0 && u.d.uffd_syscalls == 0,
		      "unlocked: the userfaultfd was armed far from the VMA budget");
		CHECK(l.d.uffd_armed == 1 || l.d.uffd_syscalls == 1,
		      "locked: the lock did not arm the userfaultfd (nor fail to open it)");
	}
	CHECK(l.d.sandbox_denied == 0, "%llu calls denied", (unsigned long long)l.d.sandbox_denied);
	CHECK(l.d.sandbox_granted >= l.d.grant_syscalls, "executor let through %llu, grants %llu",
	      (unsigned long long)l.d.sandbox_granted, (unsigned long long)l.d.grant_syscalls);
	tu_exit();
}
