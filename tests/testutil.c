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
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

void tu_on_mprotect(char **argv, const char *backend, const char *why)
{
	if (!strcmp(backend, "mprotect"))
		return;
	const char *o = getenv("XPFO_OPTIONS");
	if (!getenv("TU_ON_MPROTECT") && (!o || !strstr(o, "backend="))) {
		char opts[512];
		snprintf(opts, sizeof opts, "%s%sbackend=mprotect", o ? o : "", o && *o ? "," : "");
		setenv("XPFO_OPTIONS", opts, 1);
		setenv("TU_ON_MPROTECT", "1", 1);
		fprintf(stderr, "%s: backend %s; run again with backend=mprotect (%s)\n", tu_prog,
			backend, why);
		fflush(NULL);
		execv("/proc/self/exe", argv);
	}
	tu_skip("backend %s, and no run on mprotect: %s", backend, why);
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

/* In a child about to exec: "NAME=value" sets, "NAME" unsets. */
static void apply_env(const char *const envset[])
{
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
		apply_env(envset);
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

/* ---- one case in a child, checked ------------------------------------ */

/* The announcement pipe: set in a forked child, or named by TU_EXPECT_FD
 * in an executed one. */
static int expect_fd = -1;

/* Written with write(2) from a stack buffer: stdio could allocate, and the
 * child may be about to corrupt the heap. */
void tu_expect(const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	if (expect_fd < 0 && getenv("TU_EXPECT_FD"))
		expect_fd = atoi(getenv("TU_EXPECT_FD"));
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof buf - 1)
		_exit(98);
	buf[n++] = '\n';
	if (expect_fd < 0 || write(expect_fd, buf, (size_t)n) != n)
		_exit(98);
}

/* The number at *line against "<N>", "<N:lo-hi>" or "<N:a|b>" at *pat;
 * both advance past it. */
static int match_num(const char **line, const char **pat)
{
	const char *p = *pat + 2, *end = strchr(p, '>');
	char *e;
	if (**line < '0' || **line > '9' || !end)
		return 0;
	unsigned long long v = strtoull(*line, &e, 10);
	*line = e;
	*pat = end + 1;
	if (*p == '>')
		return 1;
	const char *dash = memchr(p, '-', (size_t)(end - p));
	if (dash)
		return v >= strtoull(p + 1, NULL, 10) && v <= strtoull(dash + 1, NULL, 10);
	for (p++; p < end; p = e + 1)
		if (strtoull(p, &e, 10) == v)
			return 1;
	return 0;
}

int tu_line_matches(const char *line, const char *pat)
{
	while (*pat) {
		if (!strncmp(pat, "<N", 2) && (pat[2] == '>' || pat[2] == ':')) {
			if (!match_num(&line, &pat))
				return 0;
			continue;
		}
		if (*line++ != *pat++)
			return 0;
	}
	return *line == 0;
}

/* `pat` with at most one '*' (any text) against the whole of s[0..n). */
static int glob1(const char *pat, const char *s, size_t n)
{
	const char *star = strchr(pat, '*');
	if (!star)
		return strlen(pat) == n && !memcmp(pat, s, n);
	size_t pre = (size_t)(star - pat), post = strlen(star + 1);
	return n >= pre + post && !memcmp(pat, s, pre) && !memcmp(star + 1, s + n - post, post);
}

/* Fork the case's child; fds: its stderr, stdout (argv only), and the
 * announcement pipe. */
static pid_t case_start(const struct tu_case *c, unsigned seconds, int fds[3])
{
	int ep[2], op[2], xp[2];
	fflush(NULL);
	if (pipe2(ep, O_CLOEXEC) || pipe2(op, O_CLOEXEC) || pipe2(xp, O_CLOEXEC))
		tu_hard_error("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		tu_hard_error("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);
		signal(SIGALRM, SIG_DFL); /* xpfo's own handlers stay */
		alarm(seconds);
		dup2(ep[1], 2);
		expect_fd = xp[1];
		if (!c->argv)
			_exit(c->fn(c->arg));
		char fd[16];
		dup2(op[1], 1);
		expect_fd = dup(xp[1]); /* without close-on-exec */
		snprintf(fd, sizeof fd, "%d", expect_fd);
		setenv("TU_EXPECT_FD", fd, 1);
		apply_env(c->envset);
		execv(c->argv[0], c->argv);
		dprintf(2, "exec %s: %s\n", c->argv[0], strerror(errno));
		_exit(99);
	}
	close(ep[1]);
	close(op[1]);
	close(xp[1]);
	fds[0] = ep[0];
	fds[1] = op[0];
	fds[2] = xp[0];
	return pid;
}

static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (len += (size_t)r) == cap - 1)
			break;
	}
	buf[len] = 0;
	close(fd);
	return len;
}

/* Copy line `text`'s first line into buf; returns the next line or NULL. */
static const char *line_at(const char *text, char *buf, size_t cap)
{
	size_t n = strcspn(text, "\n");
	snprintf(buf, cap, "%.*s", (int)n, text);
	return text[n] && text[n + 1] ? text + n + 1 : NULL;
}

/* What is wrong with stderr after the lead line, or NULL. */
static const char *err_problem(enum tu_err m, const char *rest, const char *want, int nwant)
{
	char line[1024];
	if ((m == TU_ERR_LINE || m == TU_ERR_NOT) && nwant != 1)
		return nwant ? "the child announced more than one line"
			     : "the child ended before it misbehaved (no line announced)";
	if (m == TU_ERR_EMPTY)
		return *rest ? "stderr is not empty" : NULL;
	if (m == TU_ERR_LINE)
		return line_at(rest, line, sizeof line) ? "more than one line on stderr"
		       : !tu_line_matches(line, want) ? "stderr is not the announced line" : NULL;
	for (const char *l = *rest ? rest : NULL; l;) {
		l = line_at(l, line, sizeof line);
		if (m == TU_ERR_NOT && tu_line_matches(line, want))
			return "the announced line appeared";
		if (m == TU_ERR_ANY && !strncmp(line, "xpfo: violation", 15))
			return "unexpected violation report";
	}
	return NULL;
}

/* Skip the lead line c expects; *problem when it is missing, or when an
 * unexpected warning comes first. */
static const char *lead_skip(const struct tu_case *c, enum tu_err m, const char *err,
			     const char **problem)
{
	size_t n = strcspn(err, "\n");
	if (c->lead) {
		if (glob1(c->lead, err, n))
			return err + n + (err[n] == '\n');
		*problem = "the expected leading line is missing";
	} else if (m != TU_ERR_ANY && !strncmp(err, "xpfo: warning: ", 15)) {
		*problem = "an unexpected warning";
	}
	return err;
}

static int ending_ok(const struct tu_case *c, int st, char *want, size_t cap)
{
	if (c->signal > 0) {
		snprintf(want, cap, "death by %s", sigabbrev_np(c->signal));
		return WIFSIGNALED(st) && WTERMSIG(st) == c->signal;
	}
	snprintf(want, cap, c->signal ? "any ending" : "exit %d", c->code);
	return c->signal || (WIFEXITED(st) && WEXITSTATUS(st) == c->code);
}

static int case_check(const struct tu_case *c, unsigned seconds, struct tu_child *r, char *xbuf)
{
	enum tu_err m = c->err != TU_ERR_AUTO ? c->err : c->signal > 0 ? TU_ERR_LINE : TU_ERR_ANY;
	int nwant = 0;
	for (const char *l = xbuf; (l = strchr(l, '\n')); l++)
		nwant++;
	xbuf[strcspn(xbuf, "\n")] = 0;
	const char *problem = NULL, *rest = lead_skip(c, m, r->err, &problem);
	if (!problem)
		problem = err_problem(m, rest, xbuf, nwant);
	char want[64];
	int end = ending_ok(c, r->status, want, sizeof want);
	CHECK(end, "%s: the child ended with %s, expected %s", c->name, tu_status_str(r->status),
	      want);
	CHECK(!problem, "%s: %s\n  announced: %s", c->name, problem, nwant ? xbuf : "(nothing)");
	if (!end || problem) {
		if (WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGALRM)
			fprintf(stderr, "     %s: timed out after %u s: a hang or a deadlock\n",
				c->name, seconds);
		fprintf(stderr, "---- %s: child stderr ----\n%s---- end ----\n", c->name, r->err);
		return 1;
	}
	char line[1024];
	const char *l = line_at(rest, line, sizeof line);
	fprintf(stderr, "ok   %s (%s)%s%s\n", c->name, tu_status_str(r->status), *line ? ": " : "",
		line);
	while (l) {
		l = line_at(l, line, sizeof line);
		fprintf(stderr, "       %s\n", line);
	}
	return 0;
}

int tu_run_case(const struct tu_case *c, unsigned seconds, struct tu_child *res)
{
	static struct tu_child own;
	static char xbuf[2048];
	struct tu_child *r = res ? res : &own;
	int fds[3];
	memset(r, 0, sizeof *r);
	pid_t pid = case_start(c, seconds, fds);
	drain(fds[0], r->err, &r->errlen, fds[1], r->out, &r->outlen, sizeof r->err);
	read_all(fds[2], xbuf, sizeof xbuf);
	while (waitpid(pid, &r->status, 0) < 0)
		if (errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));
	if (WIFEXITED(r->status) && WEXITSTATUS(r->status) >= 97 && WEXITSTATUS(r->status) <= 99)
		tu_hard_error("%s: the case could not run (%s): %s", c->name,
			      tu_status_str(r->status), r->err);
	return case_check(c, seconds, r, xbuf);
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

int tu_guard_markers(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	int ok = madvise(p, 4096, 102 /* MADV_GUARD_INSTALL */) == 0;
	munmap(p, 4096);
	return ok;
}

int tu_guard_markers_batched(void)
{
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	struct iovec v[2] = { { p, 4096 }, { p + 4096, 4096 } };
	long n = syscall(SYS_process_madvise, -10000 /* PIDFD_SELF */, v, 2, 102, 0u);
	munmap(p, 8192);
	return n == 8192;
}

/* The "backend=..." setting in a comma-separated option list: its start
 * and length (0: none). */
static const char *backend_setting(const char *o, int *len)
{
	const char *b = o;
	while (b && (b = strstr(b, "backend=")) && b != o && b[-1] != ',')
		b++;
	*len = b ? (int)strcspn(b, ",") : 0;
	return b;
}

const char *tu_child_options(const char *options)
{
	static char buf[512];
	int n, mine;
	const char *b = backend_setting(getenv("XPFO_OPTIONS"), &n);
	backend_setting(options, &mine);
	if (!n || mine)
		return options;
	snprintf(buf, sizeof buf, "%.*s%s%s", n, b, options && *options ? "," : "",
		 options ? options : "");
	return buf;
}

void tu_must_segv(const char *what, int (*fn)(void *), void *arg)
{
	struct tu_child res;
	if (tu_run_child(fn, arg, 30, &res))
		tu_hard_error("fork failed");
	CHECK(WIFSIGNALED(res.status) && WTERMSIG(res.status) == SIGSEGV, "%s: %s, want SIGSEGV",
	      what, tu_status_str(res.status));
	printf("%s: %s\n", what, tu_status_str(res.status));
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
