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
