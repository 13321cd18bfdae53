/* lazylib.c - libseccomp is mapped only while a thread is being locked
 * (alloc/sandbox.c, "libseccomp"): not at the start of a program linked to
 * the shared libxpfo, and not in a locked thread's process after its lock
 * (it was closed before the filter went in; a locked thread that ends the
 * process must not meet its link map, root's memory, in the dynamic
 * linker's exit walk).  The child locks itself, says so through a pipe and
 * waits; this process reads the child's maps, then ends it.  Then a locked
 * thread that returns from main ends its process with status 0.
 * Fails with libseccomp linked (mapped from the start) or left open. */
#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* 1 when a line of /proc/PID/maps (0: self) names libseccomp, 0 when none,
 * -1 when it cannot be read */
static int maps_name_seccomp(pid_t pid)
{
	char path[64], line[512];
	snprintf(path, sizeof path, pid ? "/proc/%d/maps" : "/proc/self/maps", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = 0;
	while (fgets(line, sizeof line, f))
		found |= strstr(line, "libseccomp") != NULL;
	fclose(f);
	return found;
}

/* the child: lock, report the result (0 or errno) as one byte, wait */
static void locked_child(int wfd, bool wait_forever)
{
	xpfo_compartment_t *c = xpfo_compartment_create("parser", 0);
	unsigned char r = !c ? 255 : xpfo_lock_thread(c, 0) ? (unsigned char)errno : 0;
	if (write(wfd, &r, 1) != 1)
		_exit(3);
	if (!wait_forever)
		return; /* main returns: exit in a locked thread */
	for (;;) {
		struct timespec ts = { 1, 0 };
		nanosleep(&ts, NULL);
	}
}

int main(void)
{
	tu_prog = "sandbox/lazylib";
	tu_xpfo_init(1);
	int self = maps_name_seccomp(0);
	if (self < 0)
		tu_skip("no /proc/self/maps");
	CHECK(self == 0, "libseccomp is mapped at the start of a program linked to libxpfo");

	for (int round = 0; round < 2; round++) {
		int p[2];
		if (pipe(p))
			tu_hard_error("pipe: %s", strerror(errno));
		fflush(NULL);
		pid_t pid = fork();
		if (pid < 0)
			tu_hard_error("fork: %s", strerror(errno));
		if (pid == 0) {
			close(p[0]);
			locked_child(p[1], round == 0);
			return 0;
		}
		close(p[1]);
		unsigned char r = 254;
		ssize_t got = read(p[0], &r, 1);
		close(p[0]);
		if (got == 1 && r == ENOSYS) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			tu_skip("xpfo_lock_thread: ENOSYS (no seccomp user notification here)");
		}
		CHECK(got == 1 && r == 0, "round %d: the lock failed (%d)", round, got == 1 ? r : -1);
		if (round == 0) {
			int m = maps_name_seccomp(pid);
			CHECK(m == 0, "libseccomp still mapped in the locked process (%d)", m);
			kill(pid, SIGKILL);
		}
		int st;
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				tu_hard_error("waitpid: %s", strerror(errno));
		if (round == 1)
			CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "a locked thread returning from main: %s", tu_status_str(st));
	}
	tu_exit();
}
