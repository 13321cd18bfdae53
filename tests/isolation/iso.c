/* iso.c - helpers shared by the compartment isolation tests (see iso.h). */
#include "iso.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int expect_fd = -1;

void iso_expect(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof buf - 1)
		_exit(98);
	buf[n++] = '\n';
	if (expect_fd < 0 || write(expect_fd, buf, (size_t)n) != n)
		_exit(98);
}

bool iso_line_matches(const char *line, const char *pat)
{
	while (*pat) {
		if (!strncmp(pat, "<N>", 3)) {
			if (*line < '0' || *line > '9')
				return false;
			while (*line >= '0' && *line <= '9')
				line++;
			pat += 3;
			continue;
		}
		if (*line++ != *pat++)
			return false;
	}
	return *line == 0;
}

static size_t read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	char junk[4096];
	for (;;) {
		ssize_t r = len + 1 < cap ? read(fd, buf + len, cap - 1 - len)
					  : read(fd, junk, sizeof junk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (len + 1 < cap)
			len += (size_t)r;
	}
	buf[len] = 0;
	close(fd);
	return len;
}

/* Split text into lines in place; returns how many (at most max). */
static int split_lines(char *text, char **lines, int max)
{
	int n = 0;
	char *s = text;
	while (*s && n < max) {
		char *nl = strchr(s, '\n');
		lines[n++] = s;
		if (!nl)
			break;
		*nl = 0;
		s = nl + 1;
	}
	return n;
}

int iso_run_case(const struct iso_case *c, unsigned seconds)
{
	int ep[2], xp[2];
	static char err[8192], exp[2048];
	int status;

	fflush(NULL);
	if (pipe2(ep, O_CLOEXEC) || pipe2(xp, O_CLOEXEC))
		tu_hard_error("pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0)
		tu_hard_error("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);
		signal(SIGALRM, SIG_DFL);
		alarm(seconds);
		dup2(ep[1], 2);
		close(ep[0]);
		close(xp[0]);
		expect_fd = xp[1];
		_exit(c->fn(c->arg));
	}
	close(ep[1]);
	close(xp[1]);
	read_all(ep[0], err, sizeof err);
	read_all(xp[0], exp, sizeof exp);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));

	char errcopy[sizeof err];
	memcpy(errcopy, err, sizeof err);
	char *lines[64], *want[4];
	int nl = split_lines(err, lines, 64);
	int nw = split_lines(exp, want, 4);
	unsigned long before = tu_failures;

	if (c->want_signal) {
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == c->want_signal,
		      "%s: child ended with %s, expected death by %s", c->name,
		      tu_status_str(status), sigabbrev_np(c->want_signal));
		CHECK(nw == 1, "%s: the child announced %d expected lines (before it "
			       "got to the bad access?)", c->name, nw);
		CHECK(nl == 1, "%s: %d stderr lines, expected exactly one", c->name, nl);
		if (nw == 1 && nl >= 1)
			CHECK(iso_line_matches(lines[0], want[0]),
			      "%s: report line\n  got:  %s\n  want: %s", c->name, lines[0], want[0]);
	} else {
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s: child ended with %s, expected exit 0", c->name, tu_status_str(status));
		CHECK(!strstr(errcopy, "xpfo: violation"), "%s: unexpected violation report",
		      c->name);
	}
	if (tu_failures != before) {
		if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
			fprintf(stderr, "     %s: timed out after %u s: a hang or a deadlock\n",
				c->name, seconds);
		fprintf(stderr, "---- %s: child stderr ----\n%s---- end ----\n", c->name, errcopy);
		return 1;
	}
	fprintf(stderr, "ok   %s (%s)%s%s\n", c->name, tu_status_str(status),
		c->want_signal ? ": " : "", c->want_signal ? lines[0] : "");
	if (!c->want_signal)
		for (int i = 0; i < nl; i++)
			if (*lines[i])
				fprintf(stderr, "       %s\n", lines[i]);
	return 0;
}

pid_t iso_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

long iso_count_vmas(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[65536];
	long n = 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++)
			n += buf[i] == '\n';
	}
	close(fd);
	return n;
}

bool iso_skip_slow(void)
{
	const char *s = getenv("XPFO_SKIP_SLOW");
	return s && *s && strcmp(s, "0") != 0;
}

void iso_stdio_warmup(void)
{
	printf("%s", "");
	fflush(stdout);
	fprintf(stderr, "%s", "");
}

int iso_run_self(const char *options, const char *const args[], unsigned seconds,
		 struct tu_child *res)
{
	char *argv[32];
	int n = 0;
	static char self[4096];
	ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
	if (l < 0)
		tu_hard_error("readlink /proc/self/exe: %s", strerror(errno));
	self[l] = 0;
	argv[n++] = self;
	for (int i = 0; args && args[i] && n < 31; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	char opt[512];
	const char *env[2] = { "XPFO_OPTIONS", NULL };
	if (options) {
		snprintf(opt, sizeof opt, "XPFO_OPTIONS=%s", options);
		env[0] = opt;
	}
	return tu_run_cmd(argv, env, seconds, res);
}

static const char *find_strace(void)
{
	static const char *const where[] = { "/usr/bin/strace", "/bin/strace",
					     "/usr/local/bin/strace", NULL };
	for (int i = 0; where[i]; i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

int iso_run_self_strace(const char *options, const char *const args[], unsigned seconds,
			struct tu_child *res, const char *outfile)
{
	const char *st = find_strace();
	if (!st)
		return 1;
	char *argv[40];
	int n = 0;
	static char self[4096];
	ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
	if (l < 0)
		tu_hard_error("readlink /proc/self/exe: %s", strerror(errno));
	self[l] = 0;
	argv[n++] = (char *)st;
	argv[n++] = "-f";
	argv[n++] = "-c";
	argv[n++] = "-e";
	argv[n++] = "trace=mprotect";
	argv[n++] = "-o";
	argv[n++] = (char *)outfile;
	argv[n++] = self;
	for (int i = 0; args && args[i] && n < 39; i++)
		argv[n++] = (char *)args[i];
	argv[n] = NULL;
	char opt[512];
	const char *env[2] = { "XPFO_OPTIONS", NULL };
	if (options) {
		snprintf(opt, sizeof opt, "XPFO_OPTIONS=%s", options);
		env[0] = opt;
	}
	return tu_run_cmd(argv, env, seconds, res) ? -1 : 0;
}

long iso_strace_calls(const char *file, const char *syscall_name)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char line[512];
	long calls = -1;
	while (fgets(line, sizeof line, f)) {
		/* % time  seconds  usecs/call  calls  [errors]  syscall */
		char *tok[8];
		int nt = 0;
		for (char *s = strtok(line, " \t\n"); s && nt < 8; s = strtok(NULL, " \t\n"))
			tok[nt++] = s;
		if (nt >= 5 && !strcmp(tok[nt - 1], syscall_name))
			calls = strtol(tok[3], NULL, 10);
	}
	fclose(f);
	return calls;
}

long long iso_find_num(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *s = text; (s = strstr(s, key)); s++) {
		if ((s == text || s[-1] == ' ' || s[-1] == '\n') && s[kl] == '=')
			return strtoll(s + kl + 1, NULL, 10);
	}
	return -1;
}

size_t iso_count_byte(const unsigned char *p, size_t n, unsigned char b)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += p[i] == b;
	return c;
}
