/* fds.c - xpfo's own descriptors are out of a locked thread's reach.
 *
 * Root shares a page run holding its secret with xpfo_share_fd (xpfo keeps
 * the memfd for the revocation) and closes the descriptor it was given; a
 * secret compartment holds a block (memfd_secret, where the kernel has it);
 * the lock arms the userfaultfd (release=auto).  Then the locked thread,
 * knowing every descriptor the program itself holds (listed before any of
 * that), tries every other number: sendmsg with SCM_RIGHTS (the way to
 * duplicate one: dup and fcntl are denied, and a filter cannot read the
 * message), then mmap MAP_SHARED read-write and read(2) of what came back,
 * and of the number itself.  None may be open.
 *
 * The fork deployment: the parent shares its run, the child locks and
 * writes into every descriptor it can map; the parent's run must hold its
 * secret afterwards.  On pkeys (the QEMU rig) the same with a second thread
 * alive: the locked thread's table is its own, and the other thread keeps
 * xpfo's descriptors (it shares a run after the lock, maps it, and frees
 * the first shared run: the revocation needs the memfd). */
#include "cases.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#define RUN_SIZE 65536
#define FD_MAX 65536

static char *secret_run;
static uint64_t own[FD_MAX / 64]; /* the program's own descriptors */
static int sp[2];                 /* the attacker's socketpair, made before */
static int to_helper[2], from_helper[2];

static bool is_own(int fd)
{
	return own[fd / 64] >> (fd % 64) & 1;
}

/* Before anything of xpfo's: the socketpair, then every open number. */
static void record_own(void)
{
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sp))
		_exit(95);
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		_exit(96);
	int dfd = dirfd(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dfd && atoi(e->d_name) < FD_MAX)
			own[atoi(e->d_name) / 64] |= (uint64_t)1 << (atoi(e->d_name) % 64);
	closedir(d);
}

/* Root's secret in a shared run; its own copy of the descriptor closed. */
static void share_secret(unsigned flags)
{
	secret_run = malloc(RUN_SIZE);
	if (!secret_run)
		_exit(97);
	strcpy(secret_run, SECRET);
	int fd = xpfo_share_fd(secret_run, flags);
	if (fd < 0) {
		fprintf(stderr, "xpfo_share_fd: %s\n", strerror(errno));
		_exit(98);
	}
	close(fd);
	/* a secret compartment's block: memfd_secret, where the kernel has it
	 * (Debian's 6.1 in the QEMU rig needs secretmem.enable=1) */
	long sfd = syscall(SYS_memfd_secret, 0);
	if (sfd < 0)
		return;
	close((int)sfd);
	xpfo_compartment_t *v = xpfo_compartment_create("vault", XPFO_COMPARTMENT_SECRET);
	xpfo_compartment_t *prev = v ? xpfo_enter(v) : NULL;
	if (prev) {
		char *s = malloc(4096);
		if (s)
			strcpy(s, SECRET);
		xpfo_leave(prev);
	}
}

static void lock(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (!c || xpfo_lock_thread(c, 0)) {
		fprintf(stderr, "lock failed: %s\n", strerror(errno));
		_exit(90);
	}
}

/* What the attacker does with a descriptor it got: map it shared and
 * read-write, write over what it finds (root's heap, when the memfd is a
 * shared run), and leak it.  Returns true when it got a mapping. */
static bool use(int fd)
{
	char *m = mmap(NULL, RUN_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		if (memcmp(m, SECRET, sizeof SECRET) == 0) {
			leak(m, sizeof SECRET);
			memcpy(m, "OWNED", 6);
		}
		return true;
	}
	char buf[64];
	ssize_t r = read(fd, buf, sizeof buf);
	if (r > 0)
		leak(buf, (size_t)r);
	return r >= 0 || errno != EBADF;
}

/* sendmsg SCM_RIGHTS of fd to the socketpair: the kernel's dup.  Returns
 * the copy received, or -1 (EBADF: nothing open under that number). */
static int pass(int fd)
{
	char b = 'x';
	struct iovec io = { &b, 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof fd);
	if (sendmsg(sp[0], &m, 0) != 1)
		return -1;
	if (recvmsg(sp[1], &m, 0) != 1 || !(c = CMSG_FIRSTHDR(&m)) || c->cmsg_type != SCM_RIGHTS)
		return -1;
	int got;
	memcpy(&got, CMSG_DATA(c), sizeof got);
	return got;
}

/* Every number that is not the program's: sent (and what came back used),
 * then used itself.  Prints one line per open one; returns how many. */
static int attack_all(void)
{
	int open_ones = 0;
	for (int fd = 0; fd < FD_MAX; fd++) {
		if (is_own(fd))
			continue;
		int copy = pass(fd);
		bool sent = copy >= 0, used = false;
		if (sent)
			used = use(copy);
		if (!sent && errno != EBADF)
			fprintf(stderr, "sendmsg of %d: %s\n", fd, strerror(errno));
		if (fd < 4096) /* read(2) needs no sendmsg: the low numbers, directly */
			used |= use(fd);
		if (sent || used) {
			fprintf(stderr, "descriptor %d is open in the locked thread\n", fd);
			open_ones++;
		}
	}
	return open_ones;
}

static int c_single(void *arg)
{
	record_own();
	share_secret(XPFO_SHARE_WRITE);
	lock();
	return attack_all() ? 1 : 0;
}

/* The fork deployment: the child writes into every descriptor it maps. */
static int c_fork(void *arg)
{
	record_own();
	share_secret(XPFO_SHARE_WRITE);
	pid_t pid = fork();
	if (pid < 0)
		return 94;
	if (pid == 0) {
		lock();
		_exit(attack_all() ? 1 : 0);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid)
		return 93;
	printf("child: %s\n", tu_status_str(st));
	printf("parent's run: %s\n", memcmp(secret_run, SECRET, sizeof SECRET) ? "overwritten" : "intact");
	return 0;
}

/* ---- pkeys: a second thread (the QEMU rig) ------------------------------- */

/* After the lock: shares a new run and maps it through the descriptor it
 * gets, then frees root's first shared run (its memfd is truncated through
 * xpfo's descriptor: the error line if that one is gone). */
static void *helper(void *arg)
{
	char b;
	if (read(to_helper[0], &b, 1) != 1)
		return arg;
	int e = 0;
	char *r = malloc(RUN_SIZE);
	int fd = r ? xpfo_share_fd(r, XPFO_SHARE_READ) : -1;
	if (fd < 0) {
		e = 1;
	} else {
		strcpy(r, "later");
		char *m = mmap(NULL, RUN_SIZE, PROT_READ, MAP_SHARED, fd, 0);
		e = m == MAP_FAILED ? 2 : strcmp(m, "later") ? 3 : 0;
		close(fd);
	}
	free(secret_run);
	xpfo_flush();
	fprintf(stderr, e ? "other thread: FAILED (%d)\n" : "other thread: ok\n", e);
	write(from_helper[1], &b, 1);
	return arg;
}

static int c_threads(void *arg)
{
	pthread_t th;
	if (pipe(to_helper) || pipe(from_helper) || pthread_create(&th, NULL, helper, NULL))
		return 92;
	record_own();
	share_secret(XPFO_SHARE_WRITE);
	lock();
	int n = attack_all();
	char b = 1;
	if (write(to_helper[1], &b, 1) != 1 || read(from_helper[0], &b, 1) != 1)
		return 91;
	return n + attack_all() ? 1 : 0; /* the helper's new memfd: not in this table */
}

/* The lock's hand-off channel cannot be made (EMFILE, injected).  With
 * one table (mprotect) the lock is undone: the thread goes on unlocked and
 * xpfo's descriptors still work.  With a table of its own (pkeys) that
 * table would drift from the process's: the process ends. */
static int c_lock_fails(void *arg)
{
	share_secret(XPFO_SHARE_READ);
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	/* the lock's calls before it: the shared page, the filter's pipe and
	 * read, on pkeys the descriptor table (src/os.h, OS_OP_SANDBOX) */
	if (!c || xpfo__test_inject(TU_OS_SANDBOX, EMFILE, sc_pkeys() ? 4 : 3, 1))
		return 94;
	int r = xpfo_lock_thread(c, 0);
	printf("lock: %d, %s\n", r, strerror(errno));
	int fd = xpfo_share_fd(secret_run, XPFO_SHARE_READ);
	char *m = fd < 0 ? MAP_FAILED : mmap(NULL, RUN_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	printf("not locked: %s\n", m != MAP_FAILED && memcmp(m, SECRET, sizeof SECRET) == 0 &&
					    xpfo_enter(c) ? "the run shared again, compartment entered"
							  : "FAILED");
	return 0;
}

static const struct scase mprotect_cases[] = {
	{ "the lock's channel fails: undone (one table)", c_lock_fails, 0, 0,
	  { "lock: -1, Too many open files", "not locked: the run shared again, compartment entered" }, 0 },
};

static const struct scase pkeys_cases[] = {
	{ "the lock's channel fails after the table is the thread's own: fatal", c_lock_fails, SIGABRT, 0,
	  { "xpfo: fatal: sandbox: the lock failed after the thread's descriptor table was made its own (errno 24)" }, 1 },
};

static const struct scase cases[] = {
	{ "xpfo's descriptors: every number tried from the locked thread", c_single, 0, 0, { NULL }, 0 },
	{ "fork deployment: the locked child maps xpfo's memfd of the parent's run", c_fork, 0, 0,
	  { "child: exit 0", "parent's run: intact" }, 0 },
	{ "a second thread keeps xpfo's descriptors, the locked one has none", c_threads, 0, 0,
	  { "other thread: ok" }, 1 },
};

int main(int argc, char **argv)
{
	tu_prog = "sandbox/fds";
	tu_timeout(600);
	sc_check_all(cases, sizeof cases / sizeof cases[0]);
	if (sc_pkeys())
		sc_check_all(pkeys_cases, sizeof pkeys_cases / sizeof pkeys_cases[0]);
	else
		sc_check_all(mprotect_cases, sizeof mprotect_cases / sizeof mprotect_cases[0]);
	tu_exit();
}
