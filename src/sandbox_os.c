/* sandbox_os.c - the OS layer's part for xpfo_lock_thread (alloc/sandbox.c)
 * and its executor (alloc/executor.c).  Contract of os.h: 0 or a positive
 * errno, errno preserved.  Nothing here allocates: the executor is a raw
 * clone that must not touch the heap, and the locking thread calls some of
 * these once its filter is loaded.  Each call but a close can be made to
 * fail (os_inject): OS_OP_SANDBOX in the locking thread, OS_OP_EXECUTOR in
 * the executor (which inherits the injections armed at its clone). */
#include "base.h"
#include "fatal.h"
#include "os.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/seccomp.h>
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* ---- the locking thread ------------------------------------------------- */

int os_sandbox_shared_map(size_t size, void **out)
{
	int e = os_injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	stat_inc(mmap_syscalls);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	e = os_result(p == MAP_FAILED, saved);
	if (!e)
		*out = p;
	return e;
}

int os_sandbox_pipe(int p[2])
{
	int e = os_injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	return os_result(pipe2(p, O_CLOEXEC) != 0, saved);
}

int os_sandbox_read(int fd, void *buf, size_t n, size_t *got)
{
	int e = os_injected(OS_OP_SANDBOX);
	*got = 0;
	if (e)
		return e;
	int saved = errno;
	ssize_t r;
	do
		r = read(fd, buf, n);
	while (r < 0 && errno == EINTR);
	e = os_result(r < 0, saved);
	if (!e)
		*got = (size_t)r;
	return e;
}

void os_sandbox_close(int fd)
{
	int saved = errno;
	syscall(SYS_close, (long)fd);
	errno = saved;
}

/* A raw clone: no fork handlers run (they could allocate or take locks),
 * and the child returns here with *pid 0, as from fork. */
int os_sandbox_clone(long *pid)
{
	int e = os_injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	long r = syscall(SYS_clone, (unsigned long)SIGCHLD, 0, 0, 0, 0);
	e = os_result(r < 0, saved);
	*pid = e ? -1 : r;
	return e;
}

int os_sandbox_filter(const void *prog, int *fd)
{
	int e = os_injected(OS_OP_SANDBOX);
	if (e)
		return e;
	int saved = errno;
	if ((e = os_result(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0, saved)))
		return e;
	if ((e = os_injected(OS_OP_SANDBOX)))
		return e;
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, prog);
	e = os_result(r < 0, saved);
	if (!e)
		*fd = (int)r;
	return e;
}

/* One byte from sock: 0 and *b, EPIPE at end of file or when the peer
 * closed with bytes of ours unread (ECONNRESET: the same end, earlier),
 * or the errno. */
static int byte_recv(enum os_op op, int sock, char *b)
{
	int e = os_injected(op);
	if (e)
		return e;
	int saved = errno;
	ssize_t r;
	do
		r = read(sock, b, 1);
	while (r < 0 && errno == EINTR);
	e = os_result(r < 0, saved);
	return e == ECONNRESET ? EPIPE : e ? e : r == 1 ? 0 : EPIPE;
}

static int byte_send(enum os_op op, int sock, char b)
{
	int e = os_injected(op);
	if (e)
		return e;
	int saved = errno;
	ssize_t r;
	do
		r = send(sock, &b, 1, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	e = os_result(r < 0, saved);
	return e ? e : r == 1 ? 0 : EPIPE;
}

int os_sandbox_ready(int sock)
{
	char b;
	int e = byte_recv(OS_OP_SANDBOX, sock, &b);
	return e ? e : (unsigned char)b;
}

int os_sandbox_hand_off(int sock, int fd)
{
	int e = os_injected(OS_OP_SANDBOX);
	if (e)
		return e;
	char byte = 'x';
	struct iovec io = { &byte, 1 };
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
	int saved = errno;
	ssize_t r;
	do
		r = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if ((e = os_result(r < 0, saved)))
		return e;
	if (r != 1)
		return EPIPE;
	return byte_recv(OS_OP_SANDBOX, sock, &byte); /* the executor has it */
}

int os_sandbox_reap(long pid)
{
	int e = os_injected(OS_OP_SANDBOX);
	int saved = errno;
	if (!e)
		e = os_result(kill((pid_t)pid, SIGKILL) != 0, saved);
	int w = os_injected(OS_OP_SANDBOX);
	if (w)
		return e ? e : w;
	pid_t r;
	do
		r = waitpid((pid_t)pid, NULL, 0);
	while (r < 0 && errno == EINTR);
	w = os_result(r < 0, saved);
	return e ? e : w;
}

/* ---- the executor ------------------------------------------------------- */

int os_executor_start(long parent)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	if ((e = os_result(prctl(PR_SET_PDEATHSIG, SIGKILL) != 0, saved)))
		return e;
	return getppid() == (pid_t)parent ? 0 : ESRCH;
}

int os_executor_map(size_t size, void **out)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	e = os_result(p == MAP_FAILED, saved);
	if (!e)
		*out = p;
	return e;
}

int os_executor_ready(int sock, int status)
{
	return byte_send(OS_OP_EXECUTOR, sock, (char)status);
}

/* recvmsg of one byte with one descriptor: 0 and *fd, EPIPE at end of
 * file (or ECONNRESET, as byte_recv), EBADMSG when no descriptor came. */
static int fd_recv(int sock, int *fd)
{
	char byte;
	struct iovec io = { &byte, 1 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1, .msg_control = u.buf,
			    .msg_controllen = sizeof u.buf };
	int saved = errno;
	ssize_t r;
	do
		r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	int e = os_result(r < 0, saved);
	if (e || r != 1)
		return e && e != ECONNRESET ? e : EPIPE;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return EBADMSG;
	memcpy(fd, CMSG_DATA(c), sizeof *fd);
	return 0;
}

int os_executor_take(int sock, int *fd)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e || (e = fd_recv(sock, fd)))
		return e;
	if ((e = byte_send(OS_OP_EXECUTOR, sock, 'x'))) {
		os_sandbox_close(*fd);
		*fd = -1;
	}
	return e;
}

int os_executor_close_range(unsigned lo, unsigned hi)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	return os_result(syscall(SYS_close_range, lo, hi, 0) != 0, saved);
}

int os_executor_pagemap(long pid, int *fd)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	char path[48];
	fmt_str(path, sizeof path, "/proc/%d/pagemap", pid);
	int saved = errno;
	int r = open(path, O_RDONLY | O_CLOEXEC);
	e = os_result(r < 0, saved);
	if (!e)
		*fd = r;
	return e;
}

int os_executor_pread(int fd, void *buf, size_t n, uint64_t off)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	ssize_t r = pread(fd, buf, n, (off_t)off);
	e = os_result(r < 0, saved);
	return e ? e : (size_t)r == n ? 0 : EIO;
}

int os_executor_wait(int lfd, bool *gone)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	struct pollfd p = { lfd, POLLIN, 0 };
	int saved = errno;
	if ((e = os_result(poll(&p, 1, -1) < 0, saved)))
		return e;
	*gone = !(p.revents & POLLIN);
	return 0;
}

static int notif_ioctl(int lfd, unsigned long req, void *arg)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	return os_result(ioctl(lfd, req, arg) != 0, saved);
}

#ifndef SECCOMP_IOCTL_NOTIF_RECV /* headers older than user notification */
#define SECCOMP_IOCTL_NOTIF_RECV 0
#define SECCOMP_IOCTL_NOTIF_SEND 0
#define SECCOMP_FILTER_FLAG_NEW_LISTENER 0
#endif

int os_executor_notif_recv(int lfd, void *req)
{
	return notif_ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, req);
}

int os_executor_notif_send(int lfd, void *resp)
{
	return notif_ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, resp);
}

int os_executor_kill(long pid)
{
	int e = os_injected(OS_OP_EXECUTOR);
	if (e)
		return e;
	int saved = errno;
	return os_result(kill((pid_t)pid, SIGKILL) != 0, saved);
}

_Noreturn void os_exit_group(int code)
{
	syscall(SYS_exit_group, code);
	__builtin_unreachable();
}
