/* forkcomp.c - fork while other threads use compartments.
 *
 * Worker threads create compartments, enter and leave them, allocate in
 * them from outside (xpfo_malloc_in), transfer root blocks into them, free
 * across owners and destroy them, without pause; another frees and
 * allocates page runs so flushes are in flight.  The main thread forks again
 * and again; each child (alarm of --timeout seconds) allocates, creates and
 * enters a compartment, allocates there, starts a thread that allocates,
 * destroys the compartment and exits 0.  The parent counts children that
 * hung (killed by the alarm), crashed (another signal) or failed (exit not
 * 0): all must be 0.  A child that is still there after the timeout is
 * killed by the parent and counted as hung (one blocked in the fork
 * handlers never gets to set its alarm).
 *
 * It runs three times (re-executing itself): default options, with
 * XPFO_OPTIONS=batch=1 (a flush at every free: flushes in flight at fork
 * time) and with compartments=thread (every thread but the first in a
 * compartment of its own).
 *
 * Usage: forkcomp [--forks N] [--timeout S] [--run]
 * (400 forks per run, 1,200 in the three runs; 100 per run with
 * XPFO_SKIP_SLOW set; --forks 1000 for the long check; 10 s per child;
 * --run does one run under the current XPFO_OPTIONS and prints its counts).
 */
#include "iso.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NWORKERS 3

static atomic_int stop;
static atomic_ulong rounds;

static void *comp_worker(void *arg)
{
	uint64_t r = 77 + (uintptr_t)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		xpfo_compartment_t *c = xpfo_compartment_create("worker", 0);
		if (!c)
			continue; /* out of ids for a moment */
		xpfo_compartment_t *prev = xpfo_enter(c);
		size_t n = 16 + tu_rand(&r) % 20000;
		char *p = malloc(n);
		if (p)
			memset(p, 1, n);
		if (prev)
			xpfo_leave(prev);
		char *q = xpfo_malloc_in(c, 100 + tu_rand(&r) % 9000);
		char *big = malloc(16384);
		if (big) {
			memset(big, 2, 64);
			xpfo_transfer(big, c); /* closed now: nobody inside */
		}
		free(p);
		free(q);
		free(big);
		xpfo_compartment_destroy(c);
		atomic_fetch_add(&rounds, 1);
	}
	return NULL;
}

static void *flush_worker(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		void *p = malloc(12288);
		if (p)
			memset(p, 3, 12288);
		free(p);
		xpfo_flush();
	}
	return NULL;
}

static void *child_thread(void *arg)
{
	(void)arg;
	for (size_t n = 8; n < (1u << 20); n *= 3) {
		char *p = malloc(n);
		if (!p)
			return (void *)1;
		memset(p, 4, n);
		free(p);
	}
	return NULL;
}

static void child(unsigned timeout)
{
	signal(SIGALRM, SIG_DFL);
	alarm(timeout);
	char *a = malloc(5000);
	xpfo_compartment_t *c = xpfo_compartment_create("child", 0);
	if (!a || !c)
		_exit(2);
	xpfo_compartment_t *prev = xpfo_enter(c);
	char *p = malloc(300);
	if (!prev || !p)
		_exit(3);
	memset(p, 5, 300);
	xpfo_leave(prev);
	free(p);
	pthread_t t;
	void *res = (void *)1;
	if (pthread_create(&t, NULL, child_thread, NULL) || pthread_join(t, &res) || res)
		_exit(4);
	if (xpfo_compartment_destroy(c) || xpfo_flush())
		_exit(5);
	free(a);
	_exit(0);
}

/* Wait for pid up to timeout seconds (a child hung in the fork handlers
 * has not set its alarm yet: the parent kills it, SIGKILL). */
static int wait_child(pid_t pid, unsigned timeout)
{
	int st;
	struct timespec ms = { 0, 1000000 };
	for (unsigned long t = 0; t < timeout * 1000ul; t++) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));
		nanosleep(&ms, NULL);
	}
	kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			tu_hard_error("waitpid: %s", strerror(errno));
	return st;
}

/* One run under the current options: prints "forks=.. hung=.. crashed=..
 * failed=..". */
static int run(int forks, unsigned timeout)
{
	pthread_t w[NWORKERS + 1];
	for (uintptr_t i = 0; i < NWORKERS; i++)
		if (pthread_create(&w[i], NULL, comp_worker, (void *)i))
			tu_hard_error("pthread_create");
	if (pthread_create(&w[NWORKERS], NULL, flush_worker, NULL))
		tu_hard_error("pthread_create");
	int hung = 0, crashed = 0, failed = 0;
	for (int i = 0; i < forks; i++) {
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			tu_hard_error("fork: %s", strerror(errno));
		if (pid == 0)
			child(timeout);
		int st = wait_child(pid, timeout);
		if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGALRM || WTERMSIG(st) == SIGKILL))
			hung++;
		else if (WIFSIGNALED(st))
			crashed++;
		else if (WEXITSTATUS(st))
			failed++;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i <= NWORKERS; i++)
		pthread_join(w[i], NULL);
	printf("forks=%d hung=%d crashed=%d failed=%d rounds=%lu\n", forks, hung, crashed, failed,
	       atomic_load(&rounds));
	return 0;
}

int main(int argc, char **argv)
{
	int forks = iso_skip_slow() ? 100 : 400, self = 0;
	unsigned timeout = 10;
	tu_prog = "forkcomp";
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--forks") && i + 1 < argc)
			forks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
			timeout = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--run"))
			self = 1;
		else
			tu_hard_error("usage: forkcomp [--forks N] [--timeout S] [--run]");
	}
	if (self)
		return run(forks, timeout);
	tu_xpfo_init(1);
	static const char *const modes[] = { NULL, "batch=1", "compartments=thread" };
	char nf[16], nt[16];
	snprintf(nf, sizeof nf, "%d", forks);
	snprintf(nt, sizeof nt, "%u", timeout);
	const char *const args[] = { "--run", "--forks", nf, "--timeout", nt, NULL };
	for (int m = 0; m < 3; m++) {
		static struct tu_child res;
		const char *name = modes[m] ? modes[m] : "default options";
		/* generous: every child may use its whole alarm and still be counted */
		if (iso_run_self(modes[m], args, 60 + (unsigned)forks * timeout, &res))
			tu_hard_error("cannot run %s", argv[0]);
		long long hung = iso_find_num(res.out, "hung"), crashed = iso_find_num(res.out, "crashed");
		long long failed = iso_find_num(res.out, "failed");
		CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0 && hung == 0 &&
			      crashed == 0 && failed == 0,
		      "%s: %s, %s%s", name, tu_status_str(res.status), res.out, res.err);
		fprintf(stderr, "%s %s: %s", tu_failures ? "    " : "ok  ", name, res.out);
	}
	tu_exit();
}
