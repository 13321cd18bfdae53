/* ipi.c - xb-vm-ipi: run one command and count the TLB-shootdown IPIs
 * around it (make bench-vm-ipi, bench/vm/ipi.sh; in the QEMU guest).
 *
 *	xb-vm-ipi COMMAND [ARG]...
 *
 * Reads the TLB ("TLB shootdowns") and CAL ("Function call interrupts")
 * rows of /proc/interrupts, summed over every CPU, runs COMMAND in a child
 * (environment inherited, output untouched), waits for it with wait4 and
 * reads them again.  Prints one line on stdout:
 *
 *	xb-vm-ipi: tlb=N cal=N minflt=N majflt=N status=N
 *
 * (the differences and the child's rusage; status is its exit code, or
 * 128 + the signal).  Static, so an LD_PRELOAD meant for COMMAND never
 * loads into it.  Not linked to xpfo.  Exit: 0 when the counts were read
 * (whatever the child did), 1 when they could not be.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* The sum over CPUs of the row named NAME ("TLB:"), or -1 when the file
 * cannot be read or has no such row (never a silent 0). */
static long long row_sum(const char *name)
{
	FILE *f = fopen("/proc/interrupts", "r");
	char line[8192];
	long long sum = -1;
	size_t len = strlen(name);

	if (!f) {
		fprintf(stderr, "xb-vm-ipi: /proc/interrupts: %s\n", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof line, f)) {
		char *p = line, *end;

		while (*p == ' ')
			p++;
		if (strncmp(p, name, len))
			continue;
		p += len;
		sum = 0;
		for (;;) {
			long long v = strtoll(p, &end, 10);
			if (end == p)
				break;
			sum += v;
			p = end;
		}
		break;
	}
	fclose(f);
	if (sum < 0)
		fprintf(stderr, "xb-vm-ipi: no %s row in /proc/interrupts\n", name);
	return sum;
}

int main(int argc, char **argv)
{
	long long tlb0, cal0, tlb1, cal1;
	struct rusage ru;
	int st, code;
	pid_t pid;

	if (argc < 2) {
		fputs("usage: xb-vm-ipi COMMAND [ARG]...\n", stderr);
		return 2;
	}
	tlb0 = row_sum("TLB:");
	cal0 = row_sum("CAL:");
	if (tlb0 < 0 || cal0 < 0)
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "xb-vm-ipi: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execvp(argv[1], argv + 1);
		fprintf(stderr, "xb-vm-ipi: %s: %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &st, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "xb-vm-ipi: wait4: %s\n", strerror(errno));
			return 1;
		}
	}
	tlb1 = row_sum("TLB:");
	cal1 = row_sum("CAL:");
	if (tlb1 < 0 || cal1 < 0)
		return 1;
	code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	printf("xb-vm-ipi: tlb=%lld cal=%lld minflt=%ld majflt=%ld status=%d\n",
	       tlb1 - tlb0, cal1 - cal0, ru.ru_minflt, ru.ru_majflt, code);
	return 0;
}
