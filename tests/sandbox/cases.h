/* cases.h - the runner of tests/sandbox's attack programs (fds, records,
 * handlers): each case runs in a forked child with stdout and stderr in
 * one pipe; its end (exit code or signal) and every line it wrote are
 * checked, and the secret must never be among them (an attack that got
 * through writes what it read, with leak()).  Header-only: one copy per
 * program. */
#ifndef XPFO_SANDBOX_CASES_H
#define XPFO_SANDBOX_CASES_H

#include "testutil.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "API-KEY-7f3c9e21d"
#define NLINES 10

/* The lines xpfo writes. */
#define DENIED(n) "xpfo: sandbox: denied " n " from thread * in compartment \"parser\""
#define VIOLATION "xpfo: violation: read of 0x* owned by compartment \"root\" from thread * in compartment \"parser\""

struct scase {
	const char *name;
	int (*fn)(void *);
	int want_sig;              /* 0: exit with want_exit */
	int want_exit;
	const char *lines[NLINES]; /* every line, in order; '*' matches any run */
	int pkeys_only;
};

/* What an attack that got through does with what it read: loads, then a
 * write(2) of the copy. */
static inline void leak(const void *p, size_t n)
{
	char buf[64];
	for (size_t i = 0; i < n && i < sizeof buf; i++)
		buf[i] = ((const volatile char *)p)[i];
	write(2, buf, n < sizeof buf ? n : sizeof buf);
	write(2, "\n", 1);
}

static inline void *page_of(const void *p)
{
	return (void *)((uintptr_t)p & ~(uintptr_t)4095);
}

static inline bool sc_glob(const char *p, const char *s)
{
	if (*p == '*')
		return sc_glob(p + 1, s) || (*s && sc_glob(p, s + 1));
	return *p ? *p == *s && sc_glob(p + 1, s + 1) : !*s;
}

/* Fork, stdout and stderr into one pipe, the case, its status. */
static inline int sc_run(const struct scase *c, char *out, size_t n)
{
	int p[2];
	if (pipe(p))
		tu_hard_error("pipe: %s", strerror(errno));
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		tu_hard_error("fork: %s", strerror(errno));
	if (pid == 0) {
		struct rlimit rl = { 0, 0 };
		setrlimit(RLIMIT_CORE, &rl);
		alarm(60);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		close(p[1]);
		setvbuf(stdout, NULL, _IONBF, 0);
		_exit(c->fn(NULL));
	}
	close(p[1]);
	size_t got = 0;
	ssize_t r;
	while ((r = read(p[0], out + got, n - 1 - got)) > 0)
		got += (size_t)r;
	out[got] = 0;
	close(p[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));
	return st;
}

static inline void sc_check(const struct scase *c)
{
	static char out[16384];
	int st = sc_run(c, out, sizeof out);
	bool ok = c->want_sig ? WIFSIGNALED(st) && WTERMSIG(st) == c->want_sig
			      : WIFEXITED(st) && WEXITSTATUS(st) == c->want_exit;
	unsigned long before = tu_failures;
	CHECK(ok, "%s: ended with %s", c->name, tu_status_str(st));
	CHECK(!memmem(out, strlen(out), SECRET, strlen(SECRET)), "%s: the secret got out", c->name);
	char *save, *line = strtok_r(out, "\n", &save);
	int i = 0;
	for (; line; line = strtok_r(NULL, "\n", &save), i++) {
		const char *want = i < NLINES ? c->lines[i] : NULL;
		CHECK(want && sc_glob(want, line), "%s: unexpected line \"%s\"", c->name, line);
	}
	CHECK(i >= NLINES || !c->lines[i], "%s: expected line \"%s\" missing", c->name,
	      i < NLINES ? c->lines[i] : "");
	printf("%s %s\n", tu_failures == before ? "ok  " : "FAIL", c->name);
}

static inline bool sc_pkeys(void)
{
	return strcmp(xpfo_backend(), "pkeys") == 0;
}

static inline void sc_check_all(const struct scase *c, size_t n)
{
	bool pkeys = sc_pkeys();
	for (size_t i = 0; i < n; i++) {
		if (c[i].pkeys_only && !pkeys)
			printf("skip %s (pkeys backend only: the QEMU rig)\n", c[i].name);
		else
			sc_check(&c[i]);
	}
}

#endif
