/* pkeys-backend: the pkeys backend, run in the QEMU guest (backend=pkeys).
 * On a host without keys it exits 77.  Each check prints "ok: ..." or
 * "FAIL: ..."; the exit status is the number of failures (capped). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "xpfo.h"

static int failures;
#define CHECK(c, ...) do { if (c) { printf("ok: "); printf(__VA_ARGS__); printf("\n"); } \
	else { failures++; printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } fflush(stdout); } while (0)

static void *metadata(void) { extern void *xpfo__test_metadata_address(void); return xpfo__test_metadata_address(); }

/* Run fn(arg) in a child; returns its signal (0 if it exited) and the si_code
 * and si_pkey of its SIGSEGV when own_handler is set (else xpfo reports). */
static volatile sig_atomic_t got_code, got_key;
static void seg(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)uc;
	got_code = si->si_code;
	got_key = *(const int *)((const char *)&si->si_addr + 2 * sizeof(void *));
	char buf[64];
	int n = snprintf(buf, sizeof buf, "SEGV code %d key %d\n", (int)got_code, (int)got_key);
	write(1, buf, n);
	_exit(100 + (int)got_code);
}
static int in_child(void (*fn)(void *), void *arg, int own_handler, char *err, size_t errn)
{
	int pfd[2];
	pipe(pfd);
	fflush(stdout);
	pid_t pid = fork();
	if (!pid) {
		dup2(pfd[1], 2);
		if (own_handler) {
			struct sigaction sa = { 0 };
			sa.sa_sigaction = seg;
			sa.sa_flags = SA_SIGINFO;
			sigaction(SIGSEGV, &sa, NULL);
		}
		fn(arg);
		_exit(0);
	}
	close(pfd[1]);
	ssize_t n = read(pfd[0], err, errn - 1);
	err[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	int st;
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st))
		return WTERMSIG(st);
	return -WEXITSTATUS(st);
}
static void rd(void *p) { volatile char c = *(volatile char *)p; (void)c; }
static void wr(void *p) { *(volatile char *)p = 1; }

struct owner { xpfo_compartment_t *c; char *small, *large; volatile int stop, writes; pthread_barrier_t *b; };
static void *owner_thread(void *arg)
{
	struct owner *o = arg;
	xpfo_compartment_t *prev = xpfo_enter(o->c);
	o->small = malloc(100);
	o->large = malloc(100000);
	strcpy(o->small, "owned");
	memset(o->large, 'L', 100000);
	pthread_barrier_wait(o->b);
	while (!o->stop) { o->small[10] = (char)o->writes; o->large[50000] = 'M'; o->writes++; }
	xpfo_leave(prev);
	return NULL;
}

struct turn { xpfo_compartment_t **c; int n, start; };
static void *taker(void *arg)
{
	struct turn *t = arg;
	for (int r = 0; r < 3; r++)
		for (int i = t->start; i < t->n; i += 2) {
			xpfo_compartment_t *prev = xpfo_enter(t->c[i]);
			char *p = malloc(64);
			snprintf(p, 64, "c%d", i);
			if (strcmp(p, (char[64]){0}) == 0) abort();
			free(p);
			xpfo_leave(prev);
		}
	return NULL;
}

static volatile int handler_ok;
static void usr1(int sig)
{
	(void)sig;
	char *p = malloc(200);
	if (p) { memset(p, 7, 200); handler_ok = p[199] == 7; free(p); }
}

int main(void)
{
	if (strcmp(xpfo_backend(), "pkeys")) {
		printf("backend is %s: no keys here (this test runs in the QEMU guest)\n", xpfo_backend());
		return 77;
	}
	printf("backend pkeys\n");
	char err[512];
	/* 1. cross-compartment read and write from another thread fault, the owner keeps working */
	pthread_barrier_t b;
	pthread_barrier_init(&b, NULL, 2);
	struct owner o = { .c = xpfo_compartment_create("parser", 0), .b = &b };
	pthread_t th;
	pthread_create(&th, NULL, owner_thread, &o);
	pthread_barrier_wait(&b);
	int sig = in_child(rd, o.small, 1, err, sizeof err);
	CHECK(sig == -(100 + 4), "root reading parser's small block: SEGV_PKUERR (child said: %s)", err);
	sig = in_child(wr, o.large + 4096, 0, err, sizeof err);
	CHECK(sig == SIGSEGV && strstr(err, "xpfo: violation: write of ") && strstr(err, "owned by compartment \"parser\"") && strstr(err, "in compartment \"root\""),
	      "root writing parser's page run: report \"%.*s\"", (int)strcspn(err, "\n"), err);
	int w0 = o.writes;
	usleep(20000);
	CHECK(o.writes > w0, "the owner thread kept writing (%d writes)", o.writes - w0);
	/* 2. enter/leave cost no syscall */
	struct xpfo_stats s0, s1;
	xpfo_compartment_t *q = xpfo_compartment_create("quick", 0);
	xpfo_compartment_t *pv = xpfo_enter(q); xpfo_leave(pv);
	xpfo_stats_get(&s0, sizeof s0);
	for (int i = 0; i < 1000; i++) { pv = xpfo_enter(q); xpfo_leave(pv); }
	xpfo_stats_get(&s1, sizeof s1);
	unsigned long sys = (s1.grant_syscalls - s0.grant_syscalls) + (s1.revoke_syscalls - s0.revoke_syscalls) + (s1.mmap_syscalls - s0.mmap_syscalls) + (s1.madvise_syscalls - s0.madvise_syscalls);
	CHECK(s1.compartment_switches - s0.compartment_switches == 2000 && sys == 0,
	      "1000 enter/leave pairs: %llu switches, %lu protection/mapping syscalls", (unsigned long long)(s1.compartment_switches - s0.compartment_switches), sys);
	o.stop = 1;
	pthread_join(th, NULL);
	/* 3. 64 compartments, entered in turn by two threads: keys are evicted, isolation holds */
	xpfo_compartment_t *c[64];
	char *mark[64];
	for (int i = 0; i < 64; i++) {
		char name[16];
		snprintf(name, sizeof name, "c%d", i);
		c[i] = xpfo_compartment_create(name, 0);
		mark[i] = xpfo_malloc_in(c[i], 32);
		xpfo_compartment_t *p = xpfo_enter(c[i]);
		snprintf(mark[i], 32, "mark %d", i);
		xpfo_leave(p);
	}
	struct turn t0 = { c, 64, 0 }, t1 = { c, 64, 1 };
	pthread_t a1, a2;
	pthread_create(&a1, NULL, taker, &t0);
	pthread_create(&a2, NULL, taker, &t1);
	pthread_join(a1, NULL);
	pthread_join(a2, NULL);
	xpfo_stats_get(&s1, sizeof s1);
	CHECK(s1.key_evictions > 0, "64 compartments: %llu key evictions, %llu keys in use", (unsigned long long)s1.key_evictions, (unsigned long long)s1.keys_in_use);
	int faults = 0, intact = 0;
	for (int i = 0; i < 64; i++) {
		if (in_child(rd, mark[i], 0, err, sizeof err) == SIGSEGV) faults++;
		xpfo_compartment_t *p = xpfo_enter(c[i]);
		char want[32];
		snprintf(want, sizeof want, "mark %d", i);
		intact += strcmp(mark[i], want) == 0;
		xpfo_leave(p);
	}
	CHECK(faults == 64, "root's read of each of the 64 compartments faults (%d of 64)", faults);
	CHECK(intact == 64, "each compartment's data survives eviction (%d of 64)", intact);
	/* 4. metadata sealed */
	const char *xo = getenv("XPFO_OPTIONS");
	sig = in_child(wr, metadata(), 1, err, sizeof err);
	if (xo && strstr(xo, "seal_metadata=0"))
		CHECK(sig == 0, "seal_metadata=0: a write into xpfo's metadata does not fault (status %d)", sig);
	else
		CHECK(sig == -(100 + 4), "a write into xpfo's metadata faults with SEGV_PKUERR (status %d)", sig);
	/* 5. a signal handler that allocates, inside a compartment; rights intact after */
	signal(SIGUSR1, usr1);
	pv = xpfo_enter(q);
	char *inq = malloc(50);
	raise(SIGUSR1);
	strcpy(inq, "still mine");
	CHECK(handler_ok && strcmp(inq, "still mine") == 0, "malloc in a signal handler works, rights restored after sigreturn");
	free(inq);
	xpfo_leave(pv);
	printf("%d failure(s)\n", failures);
	return failures > 50 ? 50 : failures;
}
