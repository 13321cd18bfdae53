/* retain.c - the revoked pages a process keeps resident stay within the
 * `retain` option (issue 11).  Spans shorter than `purge` (a slab's few
 * pages) are never purged one by one, so nothing bounded them: a heap that
 * freed 24 MiB of small blocks kept all 24 MiB resident behind PROT_NONE.
 *
 * A child run with retain=2 MiB (xpfo reads its options once at start)
 * allocates 24 MiB of 256-byte blocks, frees those in every other 32 KiB
 * of the heap (so each freed span is short) and flushes: the revoked
 * pages still resident (resident_bytes - mapped_bytes) must be at most
 * 2 MiB.  Then the same with the default retain: at most 4 MiB.  These run
 * with release=mprotect, the mode that keeps revoked pages resident (guard
 * markers, the default where the kernel has them, release their frames as
 * they revoke: tests/guardrel); once more with the default options.  Every
 * run sets keep_empty=64, the bound before issue 11's change: a heap keeps
 * 16 MiB of empty slabs by default, more than the 12 MiB freed here, and
 * none of them would retire and be revoked.  With
 * every purge failing (injected ENOMEM): the pages stay resident, still
 * revoked, and exactly one warning says so.
 * Last, a sweep that could not bring them under the bound is not repeated
 * at every flush (each would walk the whole heap for nothing): with the
 * purges failing for the first fill only, 100 flushes that retain nothing
 * new leave the pages resident (before the bound, the first of them swept
 * them), and freeing the rest of the blocks (12 MiB more) sweeps again,
 * down to the bound.
 * The sweep purges its ranges 64 to a process_madvise(MADV_DONTNEED)
 * call where the kernel takes that advice on the caller's own process
 * (Linux 6.13; one flush for the call from 6.16): the same fill with
 * release=mprotect makes at most an eighth of the purge calls it makes
 * when the call is refused (TU_OS_SELF injected as EINVAL, range by range
 * as on 6.1), purges the same pages, and counts vector flush rounds; also
 * where PIDFD_SELF is refused (TU_OS_SELF as EBADF, as before 6.15: each
 * call opens a pidfd of its own and closes it, no descriptor left open). */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 256
#define NBLOCKS ((24u << 20) / BLOCK)

/* NBLOCKS blocks of BLOCK bytes (NULL: an allocation failed) */
static void **fill(void)
{
	void **b = malloc(NBLOCKS * sizeof *b);
	for (unsigned i = 0; b && i < NBLOCKS; i++)
		if (!(b[i] = xpfo_malloc(BLOCK)))
			return NULL;
	return b;
}

static int fill_and_free(unsigned long limit)
{
	void **b = fill();
	if (!b)
		return 99;
	/* the blocks of every other 32 KiB of the heap: each freed span is
	 * shorter than `purge` (64 KiB), between live slabs */
	for (unsigned i = 0; i < NBLOCKS; i++)
		if ((uintptr_t)b[i] >> 15 & 1)
			xpfo_free(b[i]);
	xpfo_flush();
	struct xpfo_stats s;
	tu_stats(&s);
	uint64_t kept = s.resident_bytes - s.mapped_bytes;
	printf("%llu KiB of revoked pages resident (limit %lu KiB), peak resident %llu KiB\n",
	       (unsigned long long)(kept >> 10), limit >> 10,
	       (unsigned long long)(s.peak_resident_bytes >> 10));
	return kept <= limit ? 0 : 1;
}

/* Every purge fails: the trim keeps the pages (exit 0 when more than the
 * limit stayed resident) and warns once. */
static int fill_purge_fails(unsigned long limit)
{
	if (xpfo__test_inject(TU_OS_PURGE, ENOMEM, 0, 1u << 30))
		return 99;
	return fill_and_free(limit) == 1 ? 0 : 1;
}

static uint64_t retained(void)
{
	struct xpfo_stats s;
	tu_stats(&s);
	return s.resident_bytes - s.mapped_bytes;
}

/* Exit 0: stayed above the limit over 100 idle flushes (no sweep), then
 * under it once 12 MiB more were freed. */
static int fill_sweep_bound(unsigned long limit)
{
	if (xpfo__test_inject(TU_OS_PURGE, ENOMEM, 0, 1u << 30))
		return 99;
	void **b = fill();
	if (!b)
		return 99;
	for (unsigned i = 0; i < NBLOCKS; i++)
		if ((uintptr_t)b[i] >> 15 & 1)
			xpfo_free(b[i]);
	xpfo_flush();
	uint64_t r0 = retained();
	if (xpfo__test_inject(TU_OS_PURGE, 0, 0, 0))
		return 99;
	void *run = xpfo_malloc(20 << 10);
	for (int i = 0; i < 100 && run; i++) {
		xpfo_free(run);
		xpfo_flush();
		run = xpfo_malloc(20 << 10);
	}
	uint64_t r1 = retained();
	for (unsigned i = 0; i < NBLOCKS; i++)
		if (!((uintptr_t)b[i] >> 15 & 1))
			xpfo_free(b[i]);
	xpfo_flush();
	uint64_t r2 = retained();
	printf("revoked pages resident: %llu KiB after the failed sweep, %llu KiB after 100 flushes, "
	       "%llu KiB after freeing the rest (limit %lu KiB)\n", (unsigned long long)(r0 >> 10),
	       (unsigned long long)(r1 >> 10), (unsigned long long)(r2 >> 10), limit >> 10);
	if (!run)
		return 99;
	if (r0 <= limit)
		return 2; /* the injection did not hold the pages: nothing tested */
	return r1 > limit && r2 <= limit ? 0 : 1;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* The fill with release=mprotect, the vector call as `how` says (self:
 * as the kernel does, pidfd: PIDFD_SELF refused, refused: the advice
 * refused); prints the purge calls, pages purged, vector flush rounds and
 * the descriptors open before and after. */
static int fill_vec(const char *how)
{
	int err = !strcmp(how, "pidfd") ? EBADF : !strcmp(how, "refused") ? EINVAL : 0;
	if (err && xpfo__test_inject(TU_OS_SELF, err, 0, 1))
		return 99;
	void **b = fill();
	if (!b)
		return 99;
	int fd0 = open_fds();
	struct xpfo_stats s0, s1;
	tu_stats(&s0);
	for (unsigned i = 0; i < NBLOCKS; i++)
		if ((uintptr_t)b[i] >> 15 & 1)
			xpfo_free(b[i]);
	xpfo_flush();
	tu_stats(&s1);
	printf("purges %llu pages %llu vector %llu fds %d %d\n",
	       (unsigned long long)(s1.purges - s0.purges),
	       (unsigned long long)(s1.pages_purged - s0.pages_purged),
	       (unsigned long long)(s1.flush_rounds_vector - s0.flush_rounds_vector), fd0,
	       open_fds());
	return 0;
}

struct vec_run {
	unsigned long long purges, pages, vector;
	int fd0, fd1;
};

static void run_vec(const char *how, struct vec_run *v)
{
	char *argv[] = { "/proc/self/exe", "--vec", (char *)how, NULL };
	const char *env[] = { "XPFO_OPTIONS=retain=2097152,release=mprotect,keep_empty=64", NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 120, &r))
		tu_hard_error("cannot run the child");
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0 ||
	    sscanf(r.out, "purges %llu pages %llu vector %llu fds %d %d", &v->purges, &v->pages,
		   &v->vector, &v->fd0, &v->fd1) != 5)
		tu_hard_error("child --vec %s: %s; %s%s", how, tu_status_str(r.status), r.out, r.err);
	fprintf(stderr, "vector sweep, %s: %s", how, r.out);
}

/* Does this kernel take process_madvise(MADV_DONTNEED) on the caller's own
 * process (named by a pidfd: any kernel with process_madvise)? */
static bool vec_supported(void)
{
	char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long fd = syscall(SYS_pidfd_open, (long)getpid(), 0L);
	struct iovec v = { p, 4096 };
	bool ok = p != MAP_FAILED && fd >= 0 &&
		  syscall(SYS_process_madvise, fd, &v, 1, MADV_DONTNEED, 0) == 4096;
	if (fd >= 0)
		close((int)fd);
	if (p != MAP_FAILED)
		munmap(p, 4096);
	return ok;
}

static void run_vec_sweep(void)
{
	if (!vec_supported()) {
		fprintf(stderr, "vector sweep: not checked: this kernel does not take "
				"process_madvise(MADV_DONTNEED) on its own process (before 6.13)\n");
		return;
	}
	struct vec_run self, pidfd, refused;
	run_vec("self", &self);
	run_vec("pidfd", &pidfd);
	run_vec("refused", &refused);
	CHECK(refused.purges >= 64 && refused.vector == 0,
	      "vector refused: the sweep purges range by range (%llu calls, %llu vector rounds)",
	      refused.purges, refused.vector);
	const struct vec_run *v[2] = { &self, &pidfd };
	for (int k = 0; k < 2; k++) {
		const char *how = k ? "PIDFD_SELF refused, a pidfd a call" : "PIDFD_SELF";
		CHECK(v[k]->purges * 8 <= refused.purges && v[k]->vector > 0,
		      "%s: the sweep purges in vectors: %llu calls (%llu vector rounds) against "
		      "%llu range by range", how, v[k]->purges, v[k]->vector, refused.purges);
		CHECK(v[k]->pages == refused.pages, "%s: the same pages purged: %llu against %llu",
		      how, v[k]->pages, refused.pages);
		CHECK(v[k]->fd1 == v[k]->fd0, "%s: no descriptor left open: %d before, %d after",
		      how, v[k]->fd0, v[k]->fd1);
	}
}

static void run_sweep_bound(void)
{
	char *argv[] = { "/proc/self/exe", "--sweep-bound", "2097152", NULL };
	const char *env[] = { "XPFO_OPTIONS=retain=2097152,release=mprotect,keep_empty=64", NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 120, &r))
		tu_hard_error("cannot run the child");
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99)
		tu_hard_error("child: allocation or injection failed; %s", r.err);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "a failed sweep is repeated only once more is retained: %s; %s%s",
	      tu_status_str(r.status), r.out, r.err);
	fprintf(stderr, "sweep bound: %s", r.out);
}

static void run_purge_fails(void)
{
	char *argv[] = { "/proc/self/exe", "--purge-fails", "2097152", NULL };
	const char *env[] = { "XPFO_OPTIONS=retain=2097152,release=mprotect,keep_empty=64", NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 120, &r))
		tu_hard_error("cannot run the child");
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99)
		tu_hard_error("child: allocation or injection failed; %s", r.err);
	const char *w = "\nxpfo: warning: cannot purge ";
	const char *first = strstr(r.err, w); /* after the child's "running on" line */
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "purges failing: the revoked pages stay resident: %s; %s%s",
	      tu_status_str(r.status), r.out, r.err);
	CHECK(first && !strstr(r.err, "\nxpfo: error") && !strstr(first + 1, "\nxpfo:"),
	      "purges failing: exactly one warning line, got: %s", r.err);
	fprintf(stderr, "purges failing: %s%s", r.out, r.err);
}

static void run(const char *opts, const char *limit)
{
	char *argv[] = { "/proc/self/exe", "--fill", (char *)limit, NULL };
	const char *env[] = { opts, NULL };
	struct tu_child r;
	if (tu_run_cmd(argv, env, 120, &r))
		tu_hard_error("cannot run the child");
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 99)
		tu_hard_error("child: allocation failed; %s", r.err);
	CHECK(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0,
	      "%s: 24 MiB of small blocks, half freed: resident revoked pages within the bound: "
	      "%s; %s%s", opts, tu_status_str(r.status), r.out, r.err);
	fprintf(stderr, "%s: %s", opts, r.out);
}

int main(int argc, char **argv)
{
	tu_prog = "retain";
	tu_xpfo_init(1);
	if (argc == 3 && !strcmp(argv[1], "--fill"))
		return fill_and_free(strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "--purge-fails"))
		return fill_purge_fails(strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "--sweep-bound"))
		return fill_sweep_bound(strtoul(argv[2], NULL, 10));
	if (argc == 3 && !strcmp(argv[1], "--vec"))
		return fill_vec(argv[2]);
	run("XPFO_OPTIONS=retain=2097152,release=mprotect,keep_empty=64", "2097152");
	run("XPFO_OPTIONS=release=mprotect,keep_empty=64", "4194304");
	run("XPFO_OPTIONS=keep_empty=64", "4194304");
	run_purge_fails();
	run_sweep_bound();
	run_vec_sweep();
	tu_exit();
}
