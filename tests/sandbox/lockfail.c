/* lockfail.c - xpfo_lock_thread when one of its system calls fails.
 *
 * Every call the lock makes goes through src/os.h, where a test can make
 * it fail (os_inject): OS_OP_SANDBOX counts the locking thread's calls in
 * the order they are made, OS_OP_EXECUTOR the executor's (armed here
 * before the lock, inherited by the executor at its clone: the parent
 * never makes those calls, so only the child's count).  Each case is a
 * forked child that makes one call fail once (EIO unless said) and locks
 * its thread into "parser":
 *
 * - a failure the lock can undo (before the filter; on pkeys before the
 *   thread's descriptor table is its own): -1 with that errno, no
 *   descriptor left open (the lock's pipe, socketpair and listener; the
 *   userfaultfd the lock arms and /proc/self/mem, which it closes for
 *   good, are xpfo's own and not counted), no executor left (reaped), the
 *   thread unlocked (it opens a file, reads root's block, enters the
 *   compartment and leaves), and a second lock succeeds;
 * - on pkeys a failure once the table is the thread's own, and anywhere a
 *   failure after the filter: the documented fatal line (SIGABRT);
 * - a failure the executor survives (a later call of its: closing the
 *   service's descriptors, the page map, a poll, a notification received
 *   or answered): the lock succeeds and the locked thread's allocations
 *   work.
 *
 * Both backends: on mprotect every failure before the filter is undone. */
#include "cases.h"

#include <dirent.h>
#include <fcntl.h>

#define FD_MAX 1024

struct inj {
	int op;
	unsigned skip, count;
	int err;
};
static struct inj cur; /* the case's injection (set before its fork) */

/* The open descriptors but xpfo's own kept ones (the userfaultfd; the
 * /proc/self/mem descriptor, which the lock closes), as a bitmap. */
static void fds_open(uint64_t out[FD_MAX / 64])
{
	memset(out, 0, FD_MAX / 64 * sizeof *out);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		_exit(96);
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		char path[64], link[128] = "";
		if (e->d_name[0] == '.' || fd == dirfd(d) || fd >= FD_MAX)
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
		ssize_t n = readlink(path, link, sizeof link - 1);
		link[n > 0 ? n : 0] = 0;
		if (strstr(link, "userfaultfd") || strstr(link, "/mem"))
			continue;
		out[fd / 64] |= (uint64_t)1 << (fd % 64);
	}
	closedir(d);
}

/* The thread is not locked: it opens a file, reads root's block, enters
 * the compartment and leaves it. */
static bool unlocked(const char *root_block, xpfo_compartment_t *c)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	close(fd);
	xpfo_compartment_t *prev = xpfo_enter(c);
	if (!prev)
		return false;
	char *p = malloc(100);
	bool ok = p != NULL;
	free(p);
	xpfo_leave(prev);
	return ok && strcmp(root_block, "root's") == 0;
}

/* Locked: blocks and page runs allocated, written, freed, allocated
 * again (grants, purges and remaps through the executor). */
static bool locked_works(void)
{
	for (int round = 0; round < 4; round++) {
		char *p[8];
		for (int i = 0; i < 8; i++) {
			size_t n = i % 2 ? 64 : (size_t)65536 << (i % 4);
			if (!(p[i] = malloc(n)))
				return false;
			memset(p[i], i + 1, n);
		}
		for (int i = 0; i < 8; i++)
			free(p[i]);
	}
	return true;
}

/* The lock with cur's injection, what it left, then a lock that works. */
static int c_inject(void *arg)
{
	char *root_block = malloc(64);
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (!root_block || !c)
		return 94;
	strcpy(root_block, "root's");
	uint64_t before[FD_MAX / 64], after[FD_MAX / 64];
	fds_open(before);
	xpfo__test_inject(cur.op, cur.err, cur.skip, cur.count);
	int r = xpfo_lock_thread(c, 0), e = errno;
	xpfo__test_inject(TU_OS_SANDBOX, 0, 0, 0); /* the executor's stays armed in the parent */
	printf("lock: %d, %s\n", r, r ? strerror(e) : "locked");
	if (r == 0) {
		printf("locked: %s\n", locked_works() ? "allocations work" : "FAILED");
		return 0;
	}
	fds_open(after);
	for (int fd = 0; fd < FD_MAX; fd++)
		if ((after[fd / 64] ^ before[fd / 64]) >> (fd % 64) & 1)
			printf("descriptor %d %s\n", fd, after[fd / 64] >> (fd % 64) & 1 ? "left open" : "closed");
	printf("executor: %s\n", waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD ? "none left" : "LEFT");
	printf("unlocked: %s\n", unlocked(root_block, c) ? "opens, reads root, enters" : "FAILED");
	xpfo__test_inject(TU_OS_EXECUTOR, 0, 0, 0);
	r = xpfo_lock_thread(c, 0);
	printf("second lock: %s\n", r ? strerror(errno) : locked_works() ? "allocations work" : "FAILED");
	return 0;
}

#define UNDONE(msg) { "lock: -1, " msg, "executor: none left", "unlocked: opens, reads root, enters", \
		      "second lock: allocations work" }
#define PRIVATE(n) { "xpfo: fatal: sandbox: the lock failed after the thread's descriptor table was " \
		     "made its own (errno " n ")" }
#define HANDOFF(n) "xpfo: fatal: sandbox: cannot hand the filter to the executor (errno " n ")"
#define LOCKED { "lock: 0, locked", "locked: allocations work" }
#define NOEXEC "xpfo: warning: sandbox: the executor could not take the locked thread's listener " \
	       "(errno 5)"

struct fcase {
	const char *name;
	struct inj inj;
	int sig; /* 0: exit 0 */
	const char *lines[NLINES];
};

#define S TU_OS_SANDBOX
#define X TU_OS_EXECUTOR

/* Before the descriptor table: the same on both backends. */
static const struct fcase early[] = {
	{ "the statistics page cannot be mapped", { S, 0, 1, ENOMEM }, 0, UNDONE("Cannot allocate memory") },
	{ "the filter's pipe cannot be made", { S, 1, 1, EMFILE }, 0, UNDONE("Too many open files") },
	{ "the filter cannot be read from its pipe", { S, 2, 1, EIO }, 0, UNDONE("Input/output error") },
	/* after the filter: fatal on both */
	{ "the executor cannot receive the listener", { X, 3, 1, EIO }, SIGABRT, { NOEXEC, HANDOFF("32") } },
	{ "the executor cannot acknowledge it", { X, 4, 1, EIO }, SIGABRT, { NOEXEC, HANDOFF("32") } },
};

/* mprotect: one descriptor table; every failure before the filter undone. */
static const struct fcase mprotect_cases[] = {
	{ "the hand-off socketpair cannot be made", { S, 3, 1, EMFILE }, 0, UNDONE("Too many open files") },
	{ "the executor cannot be cloned", { S, 4, 1, EAGAIN }, 0, UNDONE("Resource temporarily unavailable") },
	{ "the executor's readiness cannot be read", { S, 5, 1, EIO }, 0, UNDONE("Input/output error") },
	{ "no new privileges refused", { S, 6, 1, EINVAL }, 0, UNDONE("Invalid argument") },
	{ "the filter refused", { S, 7, 1, EINVAL }, 0, UNDONE("Invalid argument") },
	{ "the filter refused and the executor cannot be killed (it ends by itself)", { S, 7, 2, EPERM }, 0,
	  UNDONE("Operation not permitted") },
	{ "the listener cannot be sent", { S, 8, 1, EIO }, SIGABRT, { HANDOFF("5") } },
	{ "the executor's acknowledgement cannot be read", { S, 9, 1, EIO }, SIGABRT, { HANDOFF("5") } },
	{ "the executor's death signal cannot be set", { X, 0, 1, EINVAL }, 0, UNDONE("Invalid argument") },
	{ "the executor's record cannot be mapped", { X, 1, 1, ENOMEM }, 0, UNDONE("Cannot allocate memory") },
	{ "the executor cannot say it is ready", { X, 2, 1, EIO }, 0, UNDONE("Broken pipe") },
};

/* pkeys: the table is the thread's own from the unshare on. */
static const struct fcase pkeys_cases[] = {
	{ "the descriptor table cannot be made the thread's own", { S, 3, 1, ENOMEM }, 0,
	  UNDONE("Cannot allocate memory") },
	{ "the hand-off socketpair cannot be made", { S, 4, 1, EMFILE }, SIGABRT, PRIVATE("24") },
	{ "the executor cannot be cloned", { S, 5, 1, EAGAIN }, SIGABRT, PRIVATE("11") },
	{ "the executor's readiness cannot be read", { S, 6, 1, EIO }, SIGABRT, PRIVATE("5") },
	{ "no new privileges refused", { S, 7, 1, EINVAL }, SIGABRT, PRIVATE("22") },
	{ "the filter refused", { S, 8, 1, EINVAL }, SIGABRT, PRIVATE("22") },
	{ "the listener cannot be sent", { S, 9, 1, EIO }, SIGABRT, { HANDOFF("5") } },
	{ "the executor's acknowledgement cannot be read", { S, 10, 1, EIO }, SIGABRT, { HANDOFF("5") } },
	{ "the executor's death signal cannot be set", { X, 0, 1, EINVAL }, SIGABRT, PRIVATE("22") },
	{ "the executor's record cannot be mapped", { X, 1, 1, ENOMEM }, SIGABRT, PRIVATE("12") },
	{ "the executor cannot say it is ready", { X, 2, 1, EIO }, SIGABRT, PRIVATE("32") },
};

static void run(const struct fcase *f)
{
	struct scase s = { f->name, c_inject, f->sig, 0, { NULL }, 0 };
	memcpy(s.lines, f->lines, sizeof s.lines);
	cur = f->inj;
	sc_check(&s);
}

static void run_all(const struct fcase *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run(&f[i]);
}

int main(int argc, char **argv)
{
	tu_prog = "sandbox/lockfail";
	tu_timeout(600);
	run_all(early, sizeof early / sizeof early[0]);
	if (sc_pkeys())
		run_all(pkeys_cases, sizeof pkeys_cases / sizeof pkeys_cases[0]);
	else
		run_all(mprotect_cases, sizeof mprotect_cases / sizeof mprotect_cases[0]);
	/* every later call of the executor's failing once (closing the
	 * service's descriptors, opening the page map, its polls, requests
	 * received and answered, page-map reads): the lock works */
	for (unsigned k = 5; k < 40; k++) {
		char name[80];
		snprintf(name, sizeof name, "the executor's call %u fails: survived", k);
		run(&(struct fcase){ name, { X, k, 1, EIO }, 0, LOCKED });
	}
	tu_exit();
}
