/* tests/alias/alias: alias views (xpfo_share_fd) and their revocation.
 *
 * A helper process, forked before anything is shared (so it inherits no
 * mapping of the block), receives each descriptor over a socket
 * (SCM_RIGHTS), maps it and reads the parent's bytes.  After the parent
 * frees the block and calls xpfo_flush(), the helper's next read of its
 * mapping faults with SIGBUS, a fresh mmap of the old descriptor maps
 * nothing (the file is empty, reads fault), and a new allocation at the same
 * address in the parent is never visible to the helper.  The same after a
 * transfer and after a destroy.  A write share is seen both ways.  Bad
 * calls get EINVAL.  10,000 share/free cycles leave no descriptor behind
 * (entries of /proc/self/fd) and count one revocation each. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define RUN (64 * 1024)

enum cmd { C_MAP, C_READ, C_PROBE, C_WRITE, C_QUIT };
struct msg {
	int cmd;
	uint64_t seed;
};

static int sock[2];

/* ---- the helper process ---------------------------------------------- */
static sigjmp_buf jb;
static void on_bus(int sig)
{
	siglongjmp(jb, sig);
}

/* The signal a read of p raises (0: none); *ok: the bytes match seed. */
static int try_read(const char *p, uint64_t seed, int *ok)
{
	int sig = sigsetjmp(jb, 1);
	if (sig)
		return sig;
	*ok = tu_verify(p, RUN, seed) == (size_t)-1;
	return 0;
}

/* After revocation: the old mapping faults, the old descriptor is empty,
 * and a fresh mapping of it shows nothing either.  Replies 0 or a code. */
static int probe(const char *map, int fd, uint64_t new_seed)
{
	int ok = 0;
	if (try_read(map, 0, &ok) != SIGBUS)
		return 1;
	struct stat st;
	if (fstat(fd, &st) || st.st_size != 0)
		return 2;
	char *m = mmap(NULL, RUN, PROT_READ, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED) {
		int sig = try_read(m, new_seed, &ok);
		munmap(m, RUN);
		if (!sig)
			return 3; /* it read something */
	}
	if (ftruncate(fd, RUN) == 0)
		return 4; /* a holder made it grow again */
	return 0;
}

static int recv_fd(int s, struct msg *m)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec v = { m, sizeof *m };
	struct msghdr h = { .msg_iov = &v, .msg_iovlen = 1, .msg_control = cbuf,
			    .msg_controllen = sizeof cbuf };
	if (recvmsg(s, &h, 0) != sizeof *m)
		return -2;
	struct cmsghdr *c = CMSG_FIRSTHDR(&h);
	int fd = -1;
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd;
}

static void helper(int s)
{
	signal(SIGBUS, on_bus);
	char *map = NULL;
	int fd = -1;
	for (;;) {
		struct msg m;
		int got = recv_fd(s, &m), r = 0, ok = 0;
		if (got == -2 || m.cmd == C_QUIT)
			_exit(0);
		if (got >= 0) {
			if (fd >= 0)
				close(fd);
			fd = got;
		}
		switch (m.cmd) {
		case C_MAP:
			if (map)
				munmap(map, RUN);
			map = mmap(NULL, RUN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			if (map == MAP_FAILED)
				map = mmap(NULL, RUN, PROT_READ, MAP_SHARED, fd, 0);
			r = map == MAP_FAILED ? 10 : try_read(map, m.seed, &ok) ? 11 : ok ? 0 : 12;
			break;
		case C_READ: /* 1: the mapping shows seed's bytes */
			r = try_read(map, m.seed, &ok) ? 0 : ok;
			break;
		case C_WRITE:
			tu_fill(map, RUN, m.seed);
			break;
		case C_PROBE:
			r = probe(map, fd, m.seed);
			break;
		}
		if (write(s, &r, sizeof r) != sizeof r)
			_exit(1);
	}
}

/* ---- the parent --------------------------------------------------------- */
static int ask(int cmd, uint64_t seed, int fd)
{
	struct msg m = { cmd, seed };
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec v = { &m, sizeof m };
	struct msghdr h = { .msg_iov = &v, .msg_iovlen = 1 };
	if (fd >= 0) {
		h.msg_control = cbuf;
		h.msg_controllen = sizeof cbuf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&h);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof fd);
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	int r = -1;
	if (sendmsg(sock[0], &h, 0) != sizeof m || read(sock[0], &r, sizeof r) != sizeof r)
		tu_hard_error("helper gone");
	return r;
}

/* Share p (filled with seed) with the helper; it must read the bytes. */
static void share(const char *what, void *p, uint64_t seed, unsigned flags)
{
	tu_fill(p, RUN, seed);
	int fd = xpfo_share_fd(p, flags);
	CHECK(fd >= 0, "%s: xpfo_share_fd: %s", what, strerrorname_np(errno));
	if (fd < 0)
		return;
	int r = ask(C_MAP, seed, fd);
	CHECK(r == 0, "%s: the helper could not read the shared bytes (%d)", what, r);
	close(fd);
}

static void revoked(const char *what, uint64_t new_seed)
{
	static const char *why[] = { "", "its old mapping did not fault with SIGBUS",
				     "the old descriptor is not empty",
				     "a fresh mapping of the old descriptor read something",
				     "the old descriptor could grow again" };
	int r = ask(C_PROBE, new_seed, -1);
	CHECK(r == 0, "%s: %s", what, r > 0 && r < 5 ? why[r] : "helper error");
}

static void test_free(void)
{
	char *p = malloc(RUN);
	share("free", p, 0x2, XPFO_SHARE_READ);
	CHECK(tu_verify(p, RUN, 0x2) == (size_t)-1, "the parent's bytes stay in place");
	free(p);
	CHECK(xpfo_flush() == 0, "flush");
	/* the same address again, written: never visible to the helper */
	char *q = NULL, *held[64];
	int n = 0;
	while (n < 64 && (q = malloc(RUN)) != p)
		held[n++] = q;
	if (q != p)
		q = NULL; /* all in held[] */
	else
		tu_fill(q, RUN, 0x4);
	revoked("after free", 0x4);
	free(q);
	while (n)
		free(held[--n]);
}

/* Freed, not flushed, and the same size asked for again: the queued run
 * must not come back (to the same owner, without revocation) while the
 * helper still maps it. */
static void test_unflushed_reuse(void)
{
	char *p = malloc(RUN);
	share("unflushed reuse", p, 0x14, XPFO_SHARE_READ);
	free(p);
	char *q = malloc(RUN);
	tu_fill(q, RUN, 0x16);
	CHECK(ask(C_READ, 0x16, -1) == 0, "a new allocation (%s address) is visible to the helper",
	      q == p ? "same" : "another");
	free(q);
	xpfo_flush();
	revoked("after free, flushed later", 0x16);
}

static void test_write(void)
{
	char *p = malloc(RUN);
	share("write share", p, 0x6, XPFO_SHARE_WRITE);
	CHECK(ask(C_WRITE, 0x8, -1) == 0, "helper write");
	CHECK(tu_verify(p, RUN, 0x8) == (size_t)-1, "the helper's write is seen by the parent");
	free(p);
	xpfo_flush();
	revoked("after free (write share)", 0xa);
}

static void test_transfer(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("receiver", 0);
	char *p = malloc(RUN);
	share("transfer", p, 0xc, XPFO_SHARE_READ);
	CHECK(xpfo_transfer(p, c) == 0, "transfer: %s", strerrorname_np(errno));
	revoked("after transfer", 0xe);
	xpfo_compartment_t *prev = xpfo_enter(c);
	CHECK(tu_verify(p, RUN, 0xc) == (size_t)-1, "transfer kept the bytes");
	tu_fill(p, RUN, 0xe);
	xpfo_leave(prev);
	revoked("after transfer and a write", 0xe);
	free(p);
	xpfo_compartment_destroy(c);
}

static void test_destroy(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("doomed", 0);
	xpfo_compartment_t *prev = xpfo_enter(c);
	char *p = malloc(RUN);
	share("destroy", p, 0x10, XPFO_SHARE_READ);
	xpfo_leave(prev);
	CHECK(xpfo_compartment_destroy(c) == 0, "destroy: %s", strerrorname_np(errno));
	revoked("after destroy", 0x12);
}

static void test_einval(void)
{
	char *small = malloc(100), *p = malloc(RUN);
	xpfo_compartment_t *c = xpfo_compartment_create("other", 0);
	char *foreign = xpfo_malloc_in(c, RUN);
	struct { const char *what; void *p; unsigned flags; } bad[] = {
		{ "a small block", small, XPFO_SHARE_READ },
		{ "an interior pointer", p + 4096, XPFO_SHARE_READ },
		{ "flags 0", p, 0 },
		{ "unknown flags", p, 0x80 },
		{ "another compartment's block", foreign, XPFO_SHARE_READ },
		{ "NULL", NULL, XPFO_SHARE_READ },
	};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		errno = 0;
		int fd = xpfo_share_fd(bad[i].p, bad[i].flags);
		CHECK(fd == -1 && errno == EINVAL, "share %s: %d, errno %s (want EINVAL)", bad[i].what,
		      fd, strerrorname_np(errno));
	}
	free(small);
	free(p);
	free(foreign);
	xpfo_compartment_destroy(c);
}

static long fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	long n = 0;
	if (!d)
		tu_hard_error("opendir /proc/self/fd");
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void test_cycles(int cycles)
{
	struct xpfo_stats a, b;
	xpfo_flush();
	long before = fd_count();
	tu_stats(&a);
	for (int i = 0; i < cycles; i++) {
		char *p = malloc(RUN);
		int fd = xpfo_share_fd(p, XPFO_SHARE_READ);
		if (fd < 0) {
			CHECK(0, "cycle %d: share: %s", i, strerrorname_np(errno));
			break;
		}
		close(fd);
		free(p);
	}
	xpfo_flush();
	tu_stats(&b);
	long after = fd_count();
	CHECK(after == before, "%d share/free cycles: %ld descriptors before, %ld after", cycles,
	      before, after);
	CHECK(b.aliases == 0 && b.alias_revocations - a.alias_revocations == (uint64_t)cycles,
	      "stats: %lu aliases live, %lu revocations (want 0 and %d)", (unsigned long)b.aliases,
	      (unsigned long)(b.alias_revocations - a.alias_revocations), cycles);
}

/* --cycles N: share/free cycles (default 10,000; the QEMU rig runs fewer) */
int main(int argc, char **argv)
{
	int cycles = 10000;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--cycles"))
			cycles = atoi(argv[i + 1]);
	tu_xpfo_init(1);
	tu_timeout(300);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sock))
		tu_hard_error("socketpair");
	pid_t h = fork();
	if (h == 0) {
		close(sock[0]);
		helper(sock[1]);
	}
	close(sock[1]);
	test_free();
	test_unflushed_reuse();
	test_write();
	test_transfer();
	test_destroy();
	test_einval();
	test_cycles(cycles);
	close(sock[0]); /* the helper exits */
	waitpid(h, NULL, 0);
	tu_exit();
}
