/* spawn.c - xb-spawn: run a command and report what it used.
 *
 *	xb-spawn REPORT-FILE command [args...]
 *
 * Forks, execs the command, waits for it with wait4 and writes one line to
 * REPORT-FILE:
 *
 *	wall=S user=S sys=S maxrss_kb=N nvcsw=N nivcsw=N minflt=N majflt=N status=N
 *
 * status is the exit status, or 128+signal.  xb-spawn exits with the same
 * status.  Why not measure from the runner itself: a process forked from
 * the runner (a Python interpreter) inherits the runner's resident set as
 * its peak RSS (ru_maxrss survives exec), so every benchmark would show at
 * least the runner's size.  This small program forks the benchmark from a
 * small address space instead.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double tv(struct timeval t)
{
	return (double)t.tv_sec + (double)t.tv_usec * 1e-6;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	int status, code;
	pid_t pid;
	double t0, t1;
	FILE *f;

	if (argc < 3) {
		fputs("usage: xb-spawn REPORT-FILE command [args...]\n", stderr);
		return 2;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		fprintf(stderr, "xb-spawn: cannot write %s: %s\n", argv[1], strerror(errno));
		return 2;
	}
	t0 = now();
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "xb-spawn: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "xb-spawn: cannot run %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "xb-spawn: wait4: %s\n", strerror(errno));
			return 2;
		}
	}
	t1 = now();
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	fprintf(f, "wall=%.6f user=%.6f sys=%.6f maxrss_kb=%ld nvcsw=%ld nivcsw=%ld minflt=%ld "
		"majflt=%ld status=%d\n",
		t1 - t0, tv(ru.ru_utime), tv(ru.ru_stime), ru.ru_maxrss, ru.ru_nvcsw,
		ru.ru_nivcsw, ru.ru_minflt, ru.ru_majflt, code);
	if (fclose(f) != 0) {
		fprintf(stderr, "xb-spawn: writing %s failed\n", argv[1]);
		return 2;
	}
	return code;
}
