/* forkenter.c - fork while other threads are between entering and leaving
 * a compartment (issue 33, defect 2; mprotect backend).
 *
 * The main thread enters compartment "x" and stays there.  Worker threads
 * enter and leave without pause, each root -> "yN" -> "x" -> "yN" -> root
 * (yN is opened and closed for the process at every step but one; x is
 * open already, only the count of threads inside it changes).  Each
 * compartment holds a 64 KiB block with a marker.  The main thread forks
 * again and again; a child has one thread, inside "x", and:
 *
 *   1. reads x's block: it must not be killed by a false `xpfo:
 *      violation` naming "x" (a worker caught between its leave of x and
 *      the switch of its heap would be counted out of x a second time);
 *   2. every 4th child locks itself into "x" (xpfo_lock_thread, as the
 *      fork-per-request deployment does);
 *   3. probes every y's block with write(2) to a pipe: EFAULT if closed,
 *      which it must be (on main about 3% of the children found one open:
 *      a worker caught between its enter and the switch of its heap left
 *      it open with nobody inside);
 *   4. then one of: reads one y's block for real, which must end the child
 *      by SIGSEGV with exactly `xpfo: violation: read of 0x... owned by
 *      compartment "yN" from thread T in compartment "x"`; or (every 3rd
 *      child that did not lock) enters every y and reads its block, which
 *      must not be killed (on main: a worker caught between its close of
 *      y and the switch of its heap left y's count at -1, so the child's
 *      enter did not open it), then destroys every y, which must work
 *      (nobody inside them in the child), and exits 0.
 *
 * Usage: forkenter [--forks N] (1,500 by default, 300 with XPFO_SKIP_SLOW).
 */
#include "iso.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define NY 3
#define BLOCK 65536
#define MARK "compartment block"

static xpfo_compartment_t *x, *y[NY];
static char *xblock, *yblock[NY];
static atomic_int stop;
static atomic_ulong switches;

/* root -> y_i -> x -> y_i -> root, without pause: every step but one
 * opens or closes y_i for the process (mprotect, under y_i's lock), and
 * the steps into and out of x change x's count next to it.  The y's are
 * created before x (lower ids: fork_prepare takes their locks first). */
static void *worker(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		xpfo_compartment_t *root = xpfo_enter(y[i]);
		if (!root || yblock[i][0] != MARK[0])
			abort();
		xpfo_compartment_t *prev = xpfo_enter(x);
		if (prev != y[i] || xblock[0] != MARK[0])
			abort();
		xpfo_leave(prev);
		if (yblock[i][0] != MARK[0])
			abort();
		xpfo_leave(root);
		atomic_fetch_add_explicit(&switches, 4, memory_order_relaxed);
	}
	return NULL;
}

/* Child exit codes: 0 ok (destroy branch), 10+k a y's block k was
 * readable, 20+k y k could not be destroyed, 30 the lock failed, 31 x's
 * block is wrong, 32 the touch of a closed y did not fault. */
static int child(unsigned idx, int errfd)
{
	struct rlimit rl = { 0, 0 };
	setrlimit(RLIMIT_CORE, &rl);
	alarm(20);
	dup2(errfd, 2);
	if (memcmp(xblock, MARK, sizeof MARK)) /* a false report ends it here */
		return 31;
	int p[2];
	if (pipe(p)) /* before the lock, which denies pipe2 */
		return 33;
	bool locked = idx % 4 == 0;
	if (locked && (xpfo_leave(xpfo_root()), xpfo_lock_thread(x, 0))) {
		fprintf(stderr, "lock: %s\n", strerror(errno));
		return 30;
	}
	for (unsigned k = 0; k < NY; k++)
		if (write(p[1], yblock[k], 1) != -1 || errno != EFAULT) {
			fprintf(stderr, "y%u's block: %s\n", k, strerror(errno));
			return 10 + (int)k;
		}
	if (!locked && idx % 3 == 0) {
		for (unsigned k = 0; k < NY; k++) { /* a false report ends it here */
			xpfo_compartment_t *prev = xpfo_enter(y[k]);
			if (!prev || memcmp(yblock[k], MARK, sizeof MARK))
				return 35;
			xpfo_leave(prev);
		}
		for (unsigned k = 0; k < NY; k++)
			if (xpfo_compartment_destroy(y[k]))
				return 20 + (int)k;
		return 0;
	}
	unsigned k = idx % NY;
	char line[256];
	snprintf(line, sizeof line,
		 "xpfo: violation: read of %p owned by compartment \"y%u\" from thread %d in "
		 "compartment \"x\"\n", (void *)yblock[k], k, (int)getpid());
	if (write(3, line, strlen(line)) < 0) /* the line it must print, for the parent */
		return 33;
	return ((volatile char *)yblock[k])[0] == MARK[0] ? 32 : 34;
}

int main(int argc, char **argv)
{
	tu_prog = "isolation/forkenter";
	long forks = iso_skip_slow() ? 300 : 1500;
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--forks"))
			forks = atol(argv[i + 1]);
	tu_timeout(1200);
	tu_xpfo_init(1);
	if (strcmp(xpfo_backend(), "mprotect"))
		tu_on_mprotect(argv, xpfo_backend(),
			       "the fork case is the mprotect backend's (pkeys: per thread)");
	iso_stdio_warmup();
	for (unsigned k = 0; k < NY; k++) {
		char name[8];
		snprintf(name, sizeof name, "y%u", k);
		if (!(y[k] = xpfo_compartment_create(name, 0)) ||
		    !(yblock[k] = xpfo_malloc_in(y[k], BLOCK)))
			tu_hard_error("compartment %s: %s", name, strerror(errno));
		xpfo_compartment_t *prev = xpfo_enter(y[k]);
		memcpy(yblock[k], MARK, sizeof MARK);
		xpfo_leave(prev);
	}
	x = xpfo_compartment_create("x", 0);
	if (!x || !(xblock = xpfo_malloc_in(x, BLOCK)))
		tu_hard_error("compartment x: %s", strerror(errno));
	if (!xpfo_enter(x))
		tu_hard_error("enter x: %s", strerror(errno));
	memcpy(xblock, MARK, sizeof MARK);
	pthread_t th[NY];
	for (unsigned k = 0; k < NY; k++)
		if (pthread_create(&th[k], NULL, worker, (void *)(uintptr_t)k))
			tu_hard_error("pthread_create");
	while (atomic_load(&switches) < 100)
		sched_yield();

	long false_report = 0, open_y = 0, no_fault = 0, bad_line = 0, destroy_failed = 0,
	     lock_failed = 0, other = 0, faulted = 0, destroyed = 0;
	char first_bad[512] = "";
	for (long i = 0; i < forks; i++) {
		int e[2], want[2];
		if (pipe(e) || pipe(want))
			tu_hard_error("pipe: %s", strerror(errno));
		pid_t pid = fork();
		if (pid < 0)
			tu_hard_error("fork: %s", strerror(errno));
		if (pid == 0) {
			close(e[0]);
			close(want[0]);
			dup2(want[1], 3);
			_exit(child((unsigned)i, e[1]));
		}
		close(e[1]);
		close(want[1]);
		char out[1024], exp[512];
		size_t got = 0, wgot = 0;
		ssize_t r;
		while (got < sizeof out - 1 && (r = read(e[0], out + got, sizeof out - 1 - got)) > 0)
			got += (size_t)r;
		out[got] = 0;
		while (wgot < sizeof exp - 1 && (r = read(want[0], exp + wgot, sizeof exp - 1 - wgot)) > 0)
			wgot += (size_t)r;
		exp[wgot] = 0;
		close(e[0]);
		close(want[0]);
		int st;
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				tu_hard_error("waitpid: %s", strerror(errno));
		const char *what = NULL;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV && wgot) {
			faulted++;
			if (strcmp(out, exp)) {
				bad_line++;
				what = "wrong report";
			}
		} else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) {
			false_report++;
			what = "killed by a false report";
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			destroyed++;
		} else if (WIFEXITED(st) && WEXITSTATUS(st) >= 10 && WEXITSTATUS(st) < 20) {
			open_y++;
			what = "a closed y's block was readable";
		} else if (WIFEXITED(st) && WEXITSTATUS(st) >= 20 && WEXITSTATUS(st) < 30) {
			destroy_failed++;
			what = "destroy of a y failed";
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 30) {
			lock_failed++;
			what = "lock failed";
		} else if (WIFEXITED(st) && WEXITSTATUS(st) == 32) {
			no_fault++;
			what = "a closed y's block read without a fault";
		} else {
			other++;
			what = "other";
		}
		if (what && !first_bad[0])
			snprintf(first_bad, sizeof first_bad, "child %ld: %s (%s): %s", i, what,
				 tu_status_str(st), out);
	}
	atomic_store(&stop, 1);
	for (unsigned k = 0; k < NY; k++)
		pthread_join(th[k], NULL);
	printf("forkenter: %ld forks, %lu switches by the workers: %ld faulted as they must, %ld "
	       "destroyed every y; %ld killed by a false report, %ld found a y open, %ld read a y "
	       "without a fault, %ld wrong report lines, %ld failed destroys, %ld failed locks, "
	       "%ld other\n", forks, atomic_load(&switches), faulted, destroyed, false_report,
	       open_y, no_fault, bad_line, destroy_failed, lock_failed, other);
	if (first_bad[0])
		printf("first: %s\n", first_bad);
	CHECK(false_report == 0, "%ld children killed by a false report", false_report);
	CHECK(open_y == 0, "%ld children found a closed compartment open", open_y);
	CHECK(no_fault == 0, "%ld children read a closed compartment", no_fault);
	CHECK(bad_line == 0, "%ld children printed a wrong report", bad_line);
	CHECK(destroy_failed == 0, "%ld children could not destroy a compartment", destroy_failed);
	CHECK(lock_failed == 0 && other == 0, "%ld failed locks, %ld other endings", lock_failed,
	      other);
	CHECK(faulted + destroyed == forks, "not every child ended as it must");
	tu_exit();
}
