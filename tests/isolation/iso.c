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
	argv[n++] = "-qq";
	argv[n++] = "-e";
	argv[n++] = "trace=mprotect,pkey_mprotect,madvise,process_madvise,mmap";
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

/* A line of strace's output that starts a protection change (a call
 * resumed after another thread's is counted where it started). */
static bool protect_line(const char *l)
{
	if (strstr(l, "resumed>"))
		return false;
	l += strspn(l, "0123456789 "); /* the thread's id (-f) */
	if (!strncmp(l, "mprotect(", 9) || !strncmp(l, "pkey_mprotect(", 14))
		return true;
	if (strncmp(l, "madvise(", 8) && strncmp(l, "process_madvise(", 16))
		return false;
	/* MADV_GUARD_INSTALL and _REMOVE, by name or, where strace does not
	 * know them, by number */
	return strstr(l, "MADV_GUARD_") || strstr(l, ", 0x66 ") || strstr(l, ", 0x67 ");
}

/* MAP_FIXED among the flags of an mmap line (not MAP_FIXED_NOREPLACE,
 * which replaces nothing). */
static bool map_fixed(const char *l)
{
	for (const char *m = l; (m = strstr(m, "MAP_FIXED")); m += 9)
		if (m[9] != '_')
			return true;
	return false;
}

/* A line of strace's output that starts an mmap call (fixed_none: one
 * that maps no-access anonymous memory at a fixed place, replacing what
 * was there). */
static bool mmap_line(const char *l, bool fixed_none)
{
	if (strstr(l, "resumed>"))
		return false;
	l += strspn(l, "0123456789 ");
	if (strncmp(l, "mmap(", 5))
		return false;
	return !fixed_none ||
	       (strstr(l, ", PROT_NONE, ") && map_fixed(l) && strstr(l, "MAP_ANONYMOUS"));
}

/* The lines of the trace in file that count (protects: protect_line,
 * else mmap_line with fixed_none), or -1. */
static long strace_count(const char *file, bool protects, bool fixed_none)
{
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	char *line = NULL;
	size_t cap = 0;
	long calls = 0;
	while (getline(&line, &cap, f) >= 0)
		calls += protects ? protect_line(line) : mmap_line(line, fixed_none);
	free(line);
	fclose(f);
	return calls;
}

long iso_strace_protects(const char *file)
{
	return strace_count(file, true, false);
}

long iso_strace_mmaps(const char *file, bool fixed_none)
{
	return strace_count(file, false, fixed_none);
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
