/* tests/alias/alias: alias views (xpfo_share_fd) and their revocation.
 *
 * A helper process, forked before anything is shared (so it inherits no
 * mapping of the block), receives each descriptor over a socket
 * (SCM_RIGHTS), maps it and reads the parent's bytes.  After the parent
 * frees the block and calls xpfo_flush(), the helper's next read of its
 * mapping faults with SIGBUS, a fresh mmap of the old descriptor maps
 * nothing (the file is empty, reads fault), and a new allocation at the same
 * address in the parent is never visible to the helper.  The same after a
 * transfer and after a destroy.  A write share is seen both ways.  The
 * holder attacks its descriptor: opened again read-write through
 * /proc/self/fd, /proc/PID/fd and xpfo's own descriptor (/proc/OWNER/fd),
 * a read share's file cannot be written (write, pwrite, a writable shared
 * mapping, mprotect of a read one, a hole punch), and no share's file takes
 * a seal (SHRINK, GROW, WRITE, FUTURE_WRITE, SEAL) that would stop the
 * revocation, which still happens; the owner's own mapping keeps writing.
 * A run cut in half by realloc loses its tail's alias.  A holder that
 * shrinks a read share's file ends the owner's next access with SIGBUS.  A run is shared
 * read-only or read-write (EPERM for the other).  Bad calls get EINVAL.  10,000 share/free cycles leave no descriptor behind
 * (entries of /proc/self/fd) and count one revocation each. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

enum cmd { C_MAP, C_READ, C_PROBE, C_WRITE, C_ATTACK_RO, C_ATTACK_RW, C_READ_HEAD, C_QUIT };
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

/* The signal a read of n bytes at p raises (0: none); *ok: they are all
 * zero (zeros set) or match seed. */
static int try_read_range(const char *p, size_t n, uint64_t seed, volatile int zeros, int *ok)
{
	int sig = sigsetjmp(jb, 1);
	if (sig)
		return sig;
	if (zeros) {
		size_t i = 0;
		while (i < n && !p[i])
			i++;
		*ok = i == n;
	} else {
		*ok = tu_verify(p, n, seed) == (size_t)-1;
	}
	return 0;
}

/* After the run was cut in half (a realloc in place): the first half still
 * shows seed's bytes and the second does not show the owner's: 1 (the
 * second half faults) or 2 (it reads zeros); 0: the first half is wrong, 3:
 * the second half shows something else. */
static int read_head(const char *map, uint64_t seed)
{
	int ok = 0;
	if (try_read_range(map, RUN / 2, seed, 0, &ok) || !ok)
		return 0;
	if (try_read_range(map + RUN / 2, RUN / 2, 0, 1, &ok))
		return 1;
	return ok ? 2 : 3;
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

/* ---- the holder's attacks on its descriptor --------------------------- */

/* A new open of the same file through a path in /proc ("self" or a pid),
 * read-write. */
static int reopen(const char *pid, int fd)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%s/fd/%d", pid, fd);
	return open(path, O_RDWR | O_CLOEXEC);
}

/* Attacks that write through a read-write open w of a read share; the
 * number of the first that worked, or 0.  Each writes bytes of seed 0x99,
 * which the owner looks for afterwards. */
static int write_attacks(int w)
{
	char buf[4096];
	tu_fill(buf, sizeof buf, 0x99);
	if (pwrite(w, buf, sizeof buf, 0) >= 0)
		return 1;
	if (write(w, buf, sizeof buf) >= 0)
		return 2;
	char *m = mmap(NULL, RUN, PROT_READ | PROT_WRITE, MAP_SHARED, w, 0);
	if (m != MAP_FAILED) {
		tu_fill(m, RUN, 0x99);
		munmap(m, RUN);
		return 3;
	}
	m = mmap(NULL, RUN, PROT_READ, MAP_SHARED, w, 0);
	if (m == MAP_FAILED)
		return 4; /* a read mapping must still work */
	int up = mprotect(m, RUN, PROT_READ | PROT_WRITE);
	if (!up)
		tu_fill(m, RUN, 0x99);
	munmap(m, RUN);
	if (!up)
		return 5;
	if (!fallocate(w, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096))
		return 6; /* the owner's live page replaced by zeros */
	return 0;
}

/* Seals that would stop the owner's revocation (or its own writes); the
 * number of the first the holder could add, or 0. */
static int seal_attacks(int fd)
{
	static const int seals[] = { F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE, F_SEAL_FUTURE_WRITE,
				     F_SEAL_SEAL };
	for (unsigned i = 0; i < sizeof seals / sizeof seals[0]; i++)
		if (!fcntl(fd, F_ADD_SEALS, seals[i]))
			return 20 + (int)i;
	return 0;
}

/* Every attack on one descriptor d of the shared file (ro: a read share). */
static int attack_one(int d, int ro)
{
	int r = seal_attacks(d);
	if (r || !ro)
		return r;
	return write_attacks(d);
}

/* The holder's descriptor fd, reopened read-write through /proc/self/fd,
 * /proc/PID/fd, and every descriptor of the owner's (xpfo's own memfd of the
 * run, through /proc/OWNER/fd).  0, or a code naming the attack that
 * worked (+100: through the owner's descriptor). */
static int attack(int fd, int ro)
{
	char self[24], owner[24];
	snprintf(self, sizeof self, "%ld", (long)getpid());
	snprintf(owner, sizeof owner, "%ld", (long)getppid());
	int r = attack_one(fd, ro);
	const char *via[] = { "self", self };
	for (unsigned k = 0; k < 2 && !r; k++) {
		int w = reopen(via[k], fd);
		if (w < 0)
			continue; /* refused: nothing to attack through */
		r = attack_one(w, ro);
		close(w);
	}
	char dir[40];
	snprintf(dir, sizeof dir, "/proc/%s/fd", owner);
	DIR *d = opendir(dir);
	struct dirent *e;
	while (!r && d && (e = readdir(d))) {
		char link[300], target[128];
		snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(link, target, sizeof target - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (!strstr(target, "memfd:xpfo-share"))
			continue;
		int w = reopen(owner, atoi(e->d_name));
		if (w >= 0) {
			int a = attack_one(w, ro);
			r = a ? 100 + a : 0;
			close(w);
		}
	}
	if (d)
		closedir(d);
	return r;
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
		case C_ATTACK_RO:
		case C_ATTACK_RW:
			r = attack(fd, m.cmd == C_ATTACK_RO);
			break;
		case C_READ_HEAD:
			r = read_head(map, m.seed);
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

/* A read share stays read-only however the holder reopens its descriptor
 * (/proc/self/fd, /proc/PID/fd, xpfo's own descriptor through
 * /proc/OWNER/fd), and the holder cannot seal the file against the
 * revocation.  The owner's own mapping keeps working (closed and opened
 * again by leave and enter), and the free revokes the holder's mapping. */
static void test_reopen_read(void)
{
	xpfo_compartment_t *c = xpfo_compartment_create("sharer", 0);
	xpfo_compartment_t *prev = xpfo_enter(c);
	char *p = malloc(RUN);
	share("read share, attacked", p, 0x20, XPFO_SHARE_READ);
	xpfo_leave(prev);
	int r = ask(C_ATTACK_RO, 0, -1);
	CHECK(r == 0, "read share: the holder's attack %d worked (see attack())", r);
	prev = xpfo_enter(c);
	CHECK(tu_verify(p, RUN, 0x20) == (size_t)-1, "read share: the owner's bytes changed");
	tu_fill(p, RUN, 0x22);
	xpfo_leave(prev);
	CHECK(ask(C_READ, 0x22, -1) == 1, "read share: the holder does not see the owner's write");
	prev = xpfo_enter(c);
	free(p);
	xpfo_flush();
	char *q = malloc(RUN);
	tu_fill(q, RUN, 0x24); /* the owner's next secret, maybe at the same address */
	xpfo_leave(prev);
	revoked("read share, attacked, after free", 0x24);
	prev = xpfo_enter(c);
	free(q);
	xpfo_leave(prev);
	xpfo_compartment_destroy(c);
}

/* A write share: the holder writes, as it may, but cannot seal the file
 * against the revocation. */
static void test_reopen_write(void)
{
	char *p = malloc(RUN);
	share("write share, attacked", p, 0x26, XPFO_SHARE_WRITE);
	int r = ask(C_ATTACK_RW, 0, -1);
	CHECK(r == 0, "write share: the holder's attack %d worked (see attack())", r);
	free(p);
	xpfo_flush();
	revoked("write share, attacked, after free", 0x28);
}

/* A run cut in half in place (realloc): the tail is revoked alone, also on
 * a sealed read share, and the head stays shared. */
static void test_cut(const char *what, unsigned flags)
{
	char *p = malloc(RUN);
	share(what, p, 0x2a, flags);
	char *q = realloc(p, RUN / 2);
	xpfo_flush();
	if (q != p) { /* moved (a guarded run): the whole share is revoked */
		revoked(what, 0x2c);
		free(q);
		return;
	}
	int r = ask(C_READ_HEAD, 0x2a, -1);
	CHECK(r == 1 || r == 2, "%s: after the cut, %s", what,
	      r == 0 ? "the head is not the owner's bytes" : "the holder reads the tail");
	free(p);
	xpfo_flush();
	revoked(what, 0x2c);
}

/* The residual of a read share (docs/security.md): a holder that opens the
 * file again for writing can shrink it.  It cannot grow it back, so the
 * owner's next access to its run ends the owner with SIGBUS: its bytes are
 * never replaced by zeros nor shown to anyone.  In a child (the owner
 * dies); a grandchild is the holder. */
static int shrunk_owner(void *arg)
{
	char *p = malloc(RUN);
	tu_fill(p, RUN, 0x30);
	int fd = xpfo_share_fd(p, XPFO_SHARE_READ);
	if (fd < 0)
		return 10;
	pid_t h = fork();
	if (h == 0) {
		int w = reopen("self", fd);
		_exit(w < 0 ? 1 : ftruncate(w, 0) ? 2 : ftruncate(w, RUN) == 0 ? 3 : 0);
	}
	int st;
	if (waitpid(h, &st, 0) != h || !WIFEXITED(st) || WEXITSTATUS(st))
		return 20 + (WIFEXITED(st) ? WEXITSTATUS(st) : 9);
	volatile char c = p[100]; /* SIGBUS here */
	(void)c;
	return tu_verify(p, RUN, 0x30) == (size_t)-1 ? 30 : 31; /* it read something */
}

static void test_shrunk(void)
{
	struct tu_child res;
	if (tu_run_child(shrunk_owner, NULL, 30, &res))
		tu_hard_error("fork");
	CHECK(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGBUS,
	      "a read share shrunk by its holder: the owner ended with %s (want SIGBUS)",
	      tu_status_str(res.status));
}

/* One file per run: a read share of a run shared for writing could not be
 * read-only, and a write share of a read-only one could not write. */
static void test_mixed(void)
{
	char *p = malloc(RUN), *q = malloc(RUN);
	int a = xpfo_share_fd(p, XPFO_SHARE_READ);
	int b = xpfo_share_fd(p, XPFO_SHARE_READ);
	errno = 0;
	int c = xpfo_share_fd(p, XPFO_SHARE_WRITE);
	CHECK(a >= 0 && b >= 0, "two read shares of one run");
	CHECK(c == -1 && errno == EPERM, "a write share of a run shared read-only: %d, %s", c,
	      strerrorname_np(errno));
	int d = xpfo_share_fd(q, XPFO_SHARE_WRITE | XPFO_SHARE_READ);
	errno = 0;
	int e = xpfo_share_fd(q, XPFO_SHARE_READ);
	int f = xpfo_share_fd(q, XPFO_SHARE_WRITE);
	CHECK(d >= 0 && f >= 0, "two write shares of one run");
	CHECK(e == -1 && errno == EPERM, "a read share of a run shared for writing: %d, %s", e,
	      strerrorname_np(errno));
	int fds[] = { a, b, c, d, e, f };
	for (unsigned i = 0; i < 6; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(p);
	free(q);
	xpfo_flush();
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
	test_reopen_read();
	test_reopen_write();
	test_cut("a read share cut in half", XPFO_SHARE_READ);
	test_cut("a write share cut in half", XPFO_SHARE_WRITE);
	test_mixed();
	test_shrunk();
	test_einval();
	test_cycles(cycles);
	close(sock[0]); /* the helper exits */
	waitpid(h, NULL, 0);
	tu_exit();
}
