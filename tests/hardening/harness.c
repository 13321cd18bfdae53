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

int h_run_tail(char **p, char **q)
{
	if (!(*p = malloc(65536)))
		return 97;
	memset(*p, 1, 65536);
	free(*p);
	if (!(*q = malloc(32768)))
		return 97;
	return *q == *p + 32768 ? 0 : 96;
}

void h_expect_violation(const char *access, const void *a, const char *owner)
{
	tu_expect("xpfo: violation: %s of %p %s from thread %d in compartment \"root\"", access, a,
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

/* One run: its case re-executed with the run's XPFO_OPTIONS, through
 * testutil's case runner. */
static int run_one(const char *self, const struct hrun *r, const char *prog)
{
	char *argv[] = { (char *)self, (char *)"--case", (char *)r->name,
			 (char *)(r->arg ? r->arg : ""), NULL };
	char env[512], name[600];
	const char *envset[2] = { env, NULL };
	const char *opts = r->options ? r->options : "(unset)";
	static const int sig[] = { [HX_DETECT] = 0, [HX_SILENT] = 0, [HX_EXIT] = 0, [HX_NOT] = -1 };
	static const enum tu_err err[] = { [HX_DETECT] = TU_ERR_LINE, [HX_SILENT] = TU_ERR_EMPTY,
					   [HX_EXIT] = TU_ERR_EMPTY, [HX_NOT] = TU_ERR_NOT };
	struct tu_case c = { .name = name, .argv = argv, .envset = envset, .lead = r->warn,
			     .err = err[r->expect], .signal = sig[r->expect] };
	struct tu_child res;

	if (r->expect == HX_DETECT)
		c.signal = r->value;
	else if (r->expect == HX_EXIT)
		c.code = r->value;
	snprintf(name, sizeof name, "%s: %s [%s]", prog, r->name, opts);
	if (r->options)
		snprintf(env, sizeof env, "XPFO_OPTIONS=%s", r->options);
	else
		snprintf(env, sizeof env, "XPFO_OPTIONS");
	if (tu_run_case(&c, 30, &res))
		return 0;
	if (r->why)
		fprintf(stderr, "    (%s)\n", r->why);
	/* the child's notes */
	for (const char *l = res.out; *l;) {
		size_t n = strcspn(l, "\n");
		if (n >= 2 && l[0] == 'N' && l[1] == ' ')
			fprintf(stderr, "    note: %.*s\n", (int)(n - 2), l + 2);
		l += n + (l[n] == '\n');
	}
	return 1;
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
