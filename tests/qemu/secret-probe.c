/* tests/qemu/secret-probe: what xpfo_compartment_create(...,
 * XPFO_COMPARTMENT_SECRET) does on the kernel it runs on, for a check by
 * hand on real kernels (tests/secret/README, "Checked on real kernels").
 *
 * Asks the kernel directly (memfd_secret(0)), then creates three SECRET
 * compartments with stderr caught in a file, and prints each result, its
 * errno and every stderr line with their count.  Exit 0 when xpfo agrees
 * with the kernel: without memfd_secret every create fails with ENOSYS and
 * exactly one "xpfo: warning:" line appears; with it every create succeeds
 * and nothing is printed.  Exit 1 otherwise.  Statically linked, for
 * tests/qemu/run.sh and kernel/test.sh --extra DIR. */

#include "xpfo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_memfd_secret
#define SYS_memfd_secret 447
#endif

/* count_lines: print the caught stderr lines, return their number and
 * how many are xpfo warnings. */
static int count_lines(FILE *f, int *warnings)
{
	char line[512];
	int n = 0;
	rewind(f);
	while (fgets(line, sizeof line, f)) {
		printf("secret-probe: stderr: %s", line);
		n++;
		*warnings += !strncmp(line, "xpfo: warning:", 14);
	}
	return n;
}

int main(void)
{
	long fd = syscall(SYS_memfd_secret, 0);
	int kerr = fd < 0 ? errno : 0;
	printf("secret-probe: memfd_secret(0): %s\n", fd < 0 ? strerrorname_np(kerr) : "ok");
	if (fd >= 0)
		close((int)fd);
	fflush(stdout);

	FILE *caught = tmpfile();
	int saved = dup(2);
	if (!caught || saved < 0 || dup2(fileno(caught), 2) < 0)
		return perror("secret-probe: catching stderr"), 1;
	int ok = 0;
	for (int i = 0; i < 3; i++) {
		errno = 0;
		xpfo_compartment_t *c = xpfo_compartment_create("probe", XPFO_COMPARTMENT_SECRET);
		int e = errno;
		printf("secret-probe: create %d: %s errno=%s\n", i + 1, c ? "ok" : "NULL",
		       c ? "-" : strerrorname_np(e));
		ok += kerr ? !c && e == ENOSYS : c != NULL;
	}
	fflush(stderr);
	dup2(saved, 2);
	int warnings = 0, lines = count_lines(caught, &warnings);
	printf("secret-probe: %d stderr line(s), %d xpfo warning(s)\n", lines, warnings);
	int want = kerr ? 1 : 0;
	int pass = ok == 3 && lines == want && warnings == want;
	printf("secret-probe: %s\n", pass ? "as expected" : "NOT as expected");
	return pass ? 0 : 1;
}
