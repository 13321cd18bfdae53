/* stdio.c - stdio in a locked thread (issue 34, README "stdio in a locked
 * thread").  Once a program printed, stdout's buffer is root's; a locked
 * thread's printf into it was a violation.  xpfo_lock_thread flushes stdout
 * and makes it unbuffered, unless its buffer is the compartment's or
 * outside xpfo's heap (or it is unbuffered already).
 *
 *   fork: a process prints (buffer in root), forks; the child locks itself
 *     and prints with printf, puts and fputs: every line arrives, the child
 *     exits 0, nothing on stderr.
 *   refused: a lock that fails at once (root, a bogus handle) leaves stdout
 *     buffered.
 *   thread (pkeys, the QEMU rig): the main thread printed; a worker locks
 *     itself and prints; the main thread prints again after: every line
 *     arrives in order.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run fn in a child with stdout a pipe; its output into out. */
static int with_stdout(int (*fn)(void *), char *out, size_t n, struct tu_child *res)
{
	int fds[2];
	if (pipe(fds))
		tu_hard_error("pipe: %s", strerror(errno));
	int saved = dup(1);
	fflush(stdout);
	dup2(fds[1], 1);
	close(fds[1]);
	int r = tu_run_child(fn, NULL, 60, res);
	dup2(saved, 1);
	close(saved);
	size_t got = 0;
	ssize_t k;
	while (got + 1 < n && (k = read(fds[0], out + got, n - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = 0;
	close(fds[0]);
	return r;
}

static int stdout_buffered(void)
{
	return stdout->_IO_buf_base != NULL && stdout->_IO_buf_base != stdout->_shortbuf;
}

static int locked_child(void *arg)
{
	(void)arg;
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	if (!c || xpfo_lock_thread(c, 0))
		return 2;
	printf("child %d\n", 42);
	puts("child puts");
	fputs("child fputs\n", stdout);
	fflush(stdout);
	/* still buffered only where the buffer is the compartment's or not
	 * in xpfo's heap (a static glibc's own) */
	xpfo_compartment_t *o = stdout_buffered() ? xpfo_owner(stdout->_IO_buf_base) : NULL;
	return o && o != c ? 3 : 0;
}

static int fork_case(void *arg)
{
	(void)arg;
	printf("parent before\n"); /* stdout's buffer: root's */
	fflush(stdout);
	if (!stdout_buffered())
		return 10;
	pid_t pid = fork();
	if (pid == 0)
		_exit(locked_child(NULL));
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st))
		return 11;
	printf("parent after\n");
	fflush(stdout);
	return WEXITSTATUS(st);
}

static int refused_case(void *arg)
{
	(void)arg;
	printf("buffered\n");
	if (xpfo_lock_thread(xpfo_root(), 0) != -1 || errno != EINVAL)
		return 2;
	char bogus[64];
	if (xpfo_lock_thread((xpfo_compartment_t *)bogus, 0) != -1 || errno != EINVAL)
		return 3;
	int buffered = stdout_buffered();
	fflush(stdout);
	return buffered ? 0 : 4;
}

static void *worker(void *arg)
{
	xpfo_compartment_t *c = arg;
	if (xpfo_lock_thread(c, 0))
		return (void *)1;
	printf("worker %d\n", 7);
	fflush(stdout);
	return NULL;
}

static int thread_case(void *arg)
{
	(void)arg;
	printf("main before\n");
	fflush(stdout);
	xpfo_compartment_t *c = xpfo_compartment_create("worker", 0);
	pthread_t th;
	void *r;
	if (!c || pthread_create(&th, NULL, worker, c) || pthread_join(th, &r))
		return 2;
	if (r)
		return 3;
	printf("main after\n");
	fflush(stdout);
	return 0;
}

static void run(const char *name, int (*fn)(void *), const char *expect)
{
	struct tu_child res;
	char out[4096];
	if (with_stdout(fn, out, sizeof out, &res))
		tu_hard_error("%s: cannot run the child", name);
	CHECK(WIFEXITED(res.status) && WEXITSTATUS(res.status) == 0, "%s: %s, stderr: %s", name,
	      tu_status_str(res.status), res.err);
	/* nothing on stderr: a locked thread's exit makes no call its filter
	 * refuses (its thread state's metadata is not purged) */
	CHECK(res.errlen == 0, "%s: stderr: %s", name, res.err);
	CHECK(strcmp(out, expect) == 0, "%s: stdout was \"%s\"", name, out);
}

int main(void)
{
	tu_prog = "sandbox/stdio";
	run("fork", fork_case, "parent before\nchild 42\nchild puts\nchild fputs\nparent after\n");
	run("refused", refused_case, "buffered\n");
	if (strcmp(xpfo_backend(), "pkeys") == 0)
		run("thread", thread_case, "main before\nworker 7\nmain after\n");
	tu_exit();
}
