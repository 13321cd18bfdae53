/* testutil.c - shared helpers for xpfo's test programs (see testutil.h). */
#include "testutil.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

unsigned long tu_failures;
unsigned long tu_checks;
const char *tu_prog = "test";
struct tu_xpfo tu_x;

void tu_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tu_failures++;
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void tu_hard_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ERROR: ", tu_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(99);
}

void tu_skip(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: SKIP: ", tu_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(77);
}

void tu_exit(void)
{
	fprintf(stderr, "%s: %lu checks, %lu failed\n", tu_prog, tu_checks,
		tu_failures);
	exit(tu_failures ? 1 : 0);
}

void tu_timeout(unsigned seconds)
{
	signal(SIGALRM, SIG_DFL);
	alarm(seconds);
}

const char *tu_status_str(int status)
{
	static __thread char buf[64];

	if (WIFEXITED(status))
		snprintf(buf, sizeof buf, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof buf, "killed by %s (%d)",
			 sigabbrev_np(WTERMSIG(status)) ?
				 sigabbrev_np(WTERMSIG(status)) : "?",
			 WTERMSIG(status));
	else
		snprintf(buf, sizeof buf, "status 0x%x", status);
	return buf;
}

/* Read both pipes until EOF; -1 fd means unused. */
static void drain(int efd, char *ebuf, size_t *elen, int ofd, char *obuf,
		  size_t *olen, size_t cap)
{
	struct pollfd pf[2];
	char junk[4096];

	*elen = 0;
	*olen = 0;
	while (efd >= 0 || ofd >= 0) {
		int n = 0;
		if (efd >= 0)
			pf[n++] = (struct pollfd){ .fd = efd, .events = POLLIN };
		if (ofd >= 0)
			pf[n++] = (struct pollfd){ .fd = ofd, .events = POLLIN };
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < n; i++) {
			int fd = pf[i].fd;
			char *buf = fd == efd ? ebuf : obuf;
			size_t *len = fd == efd ? elen : olen;
			ssize_t r;

			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (*len + 1 < cap)
				r = read(fd, buf + *len, cap - 1 - *len);
			else
				r = read(fd, junk, sizeof junk);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(fd);
				if (fd == efd)
					efd = -1;
				else
					ofd = -1;
				continue;
			}
			if (*len + 1 < cap)
				*len += (size_t)r;
		}
	}
	ebuf[*elen] = 0;
	if (obuf)
		obuf[*olen] = 0;
}

static void child_setup(unsigned seconds)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
	signal(SIGALRM, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	alarm(seconds);
}

int tu_run_child(int (*fn)(void *), void *arg, unsigned seconds,
		 struct tu_child *res)
{
	int ep[2];
	pid_t pid;

	memset(res, 0, sizeof *res);
	fflush(NULL);
	if (pipe2(ep, O_CLOEXEC) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if (pid == 0) {
		child_setup(seconds);
		dup2(ep[1], 2);
		close(ep[0]);
		_exit(fn(arg));
	}
	close(ep[1]);
	drain(ep[0], res->err, &res->errlen, -1, NULL, &res->outlen,
	      sizeof res->err);
	while (waitpid(pid, &res->status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

int tu_run_cmd(char *const argv[], const char *const envset[],
	       unsigned seconds, struct tu_child *res)
{
	int ep[2], op[2];
	pid_t pid;

	memset(res, 0, sizeof *res);
	fflush(NULL);
	if (pipe2(ep, O_CLOEXEC) < 0)
		return -1;
	if (pipe2(op, O_CLOEXEC) < 0) {
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		child_setup(seconds);
		dup2(ep[1], 2);
		dup2(op[1], 1);
		for (const char *const *e = envset; e && *e; e++) {
			const char *eq = strchr(*e, '=');
			if (eq) {
				char name[256];
				size_t n = (size_t)(eq - *e);
				if (n >= sizeof name)
					_exit(127);
				memcpy(name, *e, n);
				name[n] = 0;
				setenv(name, eq + 1, 1);
			} else {
				unsetenv(*e);
			}
		}
		execv(argv[0], argv);
		dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(ep[1]);
	close(op[1]);
	drain(ep[0], res->err, &res->errlen, op[0], res->out, &res->outlen,
	      sizeof res->err);
	while (waitpid(pid, &res->status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

#ifdef TU_STATIC
/* statically linked with libxpfo.a (the QEMU guest): direct references,
 * which also make the linker take the API's objects from the archive */
#define RESOLVE(field, name) tu_x.field = xpfo_##field
#else
#define RESOLVE(field, name) \
	*(void **)(&tu_x.field) = dlsym(RTLD_DEFAULT, name)
#endif

void tu_xpfo_init(int require)
{
	memset(&tu_x, 0, sizeof tu_x);
	RESOLVE(stats_get, "xpfo_stats_get");
	RESOLVE(stats_print, "xpfo_stats_print");
	RESOLVE(flush, "xpfo_flush");
	RESOLVE(owner, "xpfo_owner");
	RESOLVE(root, "xpfo_root");
	RESOLVE(current, "xpfo_current");
	RESOLVE(compartment_name, "xpfo_compartment_name");
	RESOLVE(backend, "xpfo_backend");
	tu_x.present = tu_x.stats_get && tu_x.stats_print && tu_x.flush &&
		       tu_x.owner && tu_x.root && tu_x.current &&
		       tu_x.compartment_name && tu_x.backend;
	if (!tu_x.present && (tu_x.stats_get || tu_x.flush || tu_x.owner))
		tu_hard_error("xpfo's API is only partly exported");
	if (require && !tu_x.present)
		tu_hard_error("xpfo is not loaded (not linked, not preloaded)");
	if (tu_x.present)
		fprintf(stderr, "%s: running on xpfo (backend %s)\n", tu_prog,
			tu_x.backend());
	else
		fprintf(stderr, "%s: xpfo absent: running on the system malloc "
				"(validating the test itself)\n", tu_prog);
}

void tu_stats(struct xpfo_stats *s)
{
	memset(s, 0, sizeof *s);
	if (!tu_x.present)
		return;
	if (tu_x.stats_get(s, sizeof *s) != 0)
		tu_hard_error("xpfo_stats_get failed: %s", strerror(errno));
	if (s->size != sizeof *s)
		tu_hard_error("xpfo_stats_get filled %llu bytes, expected %zu",
			      (unsigned long long)s->size, sizeof *s);
}

void tu_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	size_t k;

	for (k = 0; (k + 1) * 8 <= n; k++) {
		uint64_t w = tu_pattern_word(seed, k);
		memcpy(b + k * 8, &w, 8);
	}
	if (k * 8 < n) {
		uint64_t w = tu_pattern_word(seed, k);
		memcpy(b + k * 8, &w, n - k * 8);
	}
}

size_t tu_verify(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	size_t k;

	for (k = 0; k * 8 < n; k++) {
		uint64_t w = tu_pattern_word(seed, k);
		size_t len = n - k * 8 < 8 ? n - k * 8 : 8;
		if (memcmp(b + k * 8, &w, len) != 0) {
			for (size_t i = 0; i < len; i++)
				if (b[k * 8 + i] != ((unsigned char *)&w)[i])
					return k * 8 + i;
		}
	}
	return (size_t)-1;
}

int tu_has_arg(int argc, char **argv, const char *flag)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], flag) == 0)
			return 1;
	return 0;
}
