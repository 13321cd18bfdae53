/* harness.c - the driver shared by the hardening tests (see harness.h). */
#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- child side -------------------------------------------------------- */

/* Written with write(2) from a stack buffer: stdio would allocate. */
static void out_line(char tag, const char *fmt, va_list ap)
{
	char buf[1024];
	buf[0] = tag;
	buf[1] = ' ';
	int n = vsnprintf(buf + 2, sizeof buf - 3, fmt, ap);
	if (n < 0 || (size_t)n >= sizeof buf - 3)
		_exit(98);
	n += 2;
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) != n)
		_exit(98);
}

void h_expect(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	out_line('E', fmt, ap);
	va_end(ap);
}

void h_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	out_line('N', fmt, ap);
	va_end(ap);
}

void *h_opaque(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

void h_expect_violation(const char *access, const void *a, const char *owner)
{
	h_expect("xpfo: violation: %s of %p %s from thread %d in compartment \"root\"", access, a,
		 owner, (int)gettid());
}

size_t h_page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

void h_maps_foreach(void (*fn)(unsigned long lo, unsigned long hi, const char *prot,
			       const char *path, void *arg), void *arg)
{
	static char buf[1 << 18];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t r;
	if (fd < 0)
		_exit(97);
	while (len < sizeof buf - 1 && (r = read(fd, buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	close(fd);
	if (len == sizeof buf - 1)
		_exit(97);
	buf[len] = 0;
	for (char *line = buf; *line;) {
		char *nl = strchr(line, '\n'), *end, prot[8] = "", *path;
		if (nl)
			*nl = 0;
		unsigned long lo = strtoul(line, &end, 16), hi = 0;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 16);
		while (*end == ' ')
			end++;
		memcpy(prot, end, 4);
		prot[4] = 0;
		path = strchr(end, '/');
		fn(lo, hi, prot, path ? path : "", arg);
		if (!nl)
			break;
		line = nl + 1;
	}
}

struct find {
	unsigned long a, lo, hi;
	char prot[8];
};

static void find_one(unsigned long lo, unsigned long hi, const char *prot, const char *path,
		     void *arg)
{
	struct find *f = arg;
	(void)path;
	if (f->a >= lo && f->a < hi) {
		f->lo = lo;
		f->hi = hi;
		snprintf(f->prot, sizeof f->prot, "%s", prot);
	}
}

static struct find find_mapping(const void *p)
{
	struct find f = { (unsigned long)p, 0, 0, "" };
	h_maps_foreach(find_one, &f);
	return f;
}

unsigned long h_mapping_start(const void *p) { return find_mapping(p).lo; }
unsigned long h_mapping_end(const void *p) { return find_mapping(p).hi; }

const char *h_mapping_prot(const void *p)
{
	static char prot[8];
	snprintf(prot, sizeof prot, "%s", find_mapping(p).prot);
	return prot;
}

long h_arg_long(const char *arg, const char *key, long dflt)
{
	size_t k = strlen(key);
	for (const char *s = arg; s && *s;) {
		if (!strncmp(s, key, k) && s[k] == '=')
			return strtol(s + k + 1, NULL, 10);
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return dflt;
}

/* ---- parent side ------------------------------------------------------- */

/* `pat` with at most one '*' (any text) against the whole of s[0..n). */
static int glob1(const char *pat, const char *s, size_t n)
{
	const char *star = strchr(pat, '*');
	if (!star)
		return strlen(pat) == n && !memcmp(pat, s, n);
	size_t pre = (size_t)(star - pat), post = strlen(star + 1);
	return n >= pre + post && !memcmp(pat, s, pre) && !memcmp(star + 1, s + n - post, post);
}

/* The "E " line of the child's stdout (without "E "), into want. */
static int find_expect(const char *out, char *want, size_t cap)
{
	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n >= 2 && l[0] == 'E' && l[1] == ' ') {
			if (n - 2 + 2 > cap)
				return 0;
			memcpy(want, l + 2, n - 2);
			want[n - 2] = '\n';
			want[n - 1] = 0;
			return 1;
		}
		if (!nl)
			break;
		l = nl + 1;
	}
	return 0;
}

static const char *one_line(const char *s)
{
	static char buf[600];
	size_t n = strcspn(s, "\n");
	if (n >= sizeof buf)
		n = sizeof buf - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	return buf;
}

static int run_one(const char *self, const struct hrun *r, const char *prog)
{
	char *argv[] = { (char *)self, (char *)"--case", (char *)r->name,
			 (char *)(r->arg ? r->arg : ""), NULL };
	char env[512];
	const char *envset[2] = { env, NULL };
	struct tu_child c;
	char want[1024] = "";
	int have_want, ok = 1;
	const char *opts = r->options ? r->options : "(unset)";

	if (r->options)
		snprintf(env, sizeof env, "XPFO_OPTIONS=%s", r->options);
	else
		snprintf(env, sizeof env, "XPFO_OPTIONS");
	if (tu_run_cmd(argv, envset, 30, &c) != 0)
		tu_hard_error("cannot run %s: %s", self, strerror(errno));
	if (WIFEXITED(c.status) && WEXITSTATUS(c.status) >= 97 && WEXITSTATUS(c.status) <= 99)
		tu_hard_error("%s [%s]: the case could not run (%s): %s", r->name, opts,
			      tu_status_str(c.status), c.err);
	have_want = find_expect(c.out, want, sizeof want);

	/* the warning the run expects, if any, comes first */
	const char *rest = c.err;
	if (r->warn) {
		size_t n = strcspn(rest, "\n");
		if (strncmp(rest, "xpfo: warning: ", 15) || !glob1(r->warn, rest, n)) {
			CHECK(0, "%s [%s]: expected the warning \"%s\", stderr is \"%s\"", r->name,
			      opts, r->warn, c.err);
			ok = 0;
		} else {
			fprintf(stderr, "  warning as expected: %s\n", one_line(rest));
			rest += n + (rest[n] == '\n');
		}
	}
	if (ok && !strncmp(rest, "xpfo: warning: ", 15)) {
		CHECK(0, "%s [%s]: unexpected warning: %s", r->name, opts, one_line(rest));
		ok = 0;
	}

	switch (r->expect) {
	case HX_DETECT:
		if (!have_want) {
			CHECK(0, "%s [%s]: the child ended (%s) before it misbehaved: %s", r->name,
			      opts, tu_status_str(c.status), c.err);
			return 0;
		}
		CHECK(WIFSIGNALED(c.status) && WTERMSIG(c.status) == r->value,
		      "%s [%s]: ended by %s, expected %s", r->name, opts, tu_status_str(c.status),
		      sigabbrev_np(r->value));
		CHECK(!strcmp(rest, want),
		      "%s [%s]: stderr is\n    \"%s\"\n  expected exactly\n    \"%s\"", r->name,
		      opts, rest, want);
		ok = ok && WIFSIGNALED(c.status) && WTERMSIG(c.status) == r->value &&
		     !strcmp(rest, want);
		break;
	case HX_SILENT:
	case HX_EXIT: {
		int code = r->expect == HX_SILENT ? 0 : r->value;
		CHECK(WIFEXITED(c.status) && WEXITSTATUS(c.status) == code,
		      "%s [%s]: ended by %s, expected exit %d; stderr: %s", r->name, opts,
		      tu_status_str(c.status), code, c.err);
		CHECK(!*rest, "%s [%s]: expected nothing on stderr, got \"%s\"", r->name, opts, rest);
		ok = ok && WIFEXITED(c.status) && WEXITSTATUS(c.status) == code && !*rest;
		break;
	}
	case HX_NOT:
		if (!have_want) {
			CHECK(0, "%s [%s]: the child ended (%s) before it misbehaved: %s", r->name,
			      opts, tu_status_str(c.status), c.err);
			return 0;
		}
		CHECK(!strstr(rest, want), "%s [%s]: the message appeared with the mitigation off: %s",
		      r->name, opts, rest);
		ok = ok && !strstr(rest, want);
		break;
	}
	if (ok)
		fprintf(stderr, "ok: %s: %s [%s]: %s%s%s\n", prog, r->name, opts,
			tu_status_str(c.status), *rest ? ": " : "", *rest ? one_line(rest) : "");
	if (ok && r->why)
		fprintf(stderr, "    (%s)\n", r->why);
	/* the child's notes */
	for (const char *l = c.out; ok && *l;) {
		size_t n = strcspn(l, "\n");
		if (n >= 2 && l[0] == 'N' && l[1] == ' ')
			fprintf(stderr, "    note: %.*s\n", (int)(n - 2), l + 2);
		l += n + (l[n] == '\n');
	}
	return ok;
}

int h_main(int argc, char **argv, const char *prog, const struct hcase *cases, size_t ncases,
	   const struct hrun *runs, size_t nruns)
{
	tu_prog = prog;
	/* a direct call: the program links libxpfo even if it calls nothing
	 * else of it (--as-needed) */
	if (!xpfo_backend())
		tu_hard_error("xpfo_backend() returned NULL");
	if (argc >= 3 && !strcmp(argv[1], "--case")) {
		for (size_t i = 0; i < ncases; i++)
			if (!strcmp(cases[i].name, argv[2]))
				exit(cases[i].fn(argc > 3 ? argv[3] : ""));
		fprintf(stderr, "%s: no case \"%s\"\n", prog, argv[2]);
		exit(99);
	}
	if (argc != 1)
		tu_hard_error("usage: %s (runs every case) | %s --case NAME [ARG]", argv[0], argv[0]);
	tu_timeout(300);
	tu_xpfo_init(1);

	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		tu_hard_error("readlink /proc/self/exe: %s", strerror(errno));
	self[n] = 0;
	/* every run names a case that exists */
	for (size_t i = 0; i < nruns; i++) {
		size_t j = 0;
		while (j < ncases && strcmp(cases[j].name, runs[i].name))
			j++;
		if (j == ncases)
			tu_hard_error("run %zu names no case: %s", i, runs[i].name);
	}
	for (size_t i = 0; i < nruns; i++)
		run_one(self, &runs[i], prog);
	tu_exit();
}
