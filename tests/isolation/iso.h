/* iso.h - helpers shared by the compartment isolation tests (issue 3).
 *
 * Fault cases run through testutil.h's tu_run_case (a forked child that
 * keeps xpfo's SIGSEGV handler; the child announces its line with
 * tu_expect() before misbehaving).
 */
#ifndef XPFO_ISO_H
#define XPFO_ISO_H

#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#define ISO_PAGE 4096u

/* Case tables list name, fn, arg and signal of struct tu_case; the other
 * fields keep their defaults. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* In a child case: a step that must work, or the case ends with code and
 * says which step failed and why. */
#define NEED(cond, code)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "step failed: %s (errno %s)\n",     \
				#cond, strerrorname_np(errno));             \
			return code;                                        \
		}                                                           \
	} while (0)

/* ---- the process -------------------------------------------------------- */

pid_t iso_gettid(void);
/* Lines of /proc/self/maps (the process's VMAs), or -1. */
long iso_count_vmas(void);
/* XPFO_SKIP_SLOW set to something other than "" or "0". */
bool iso_skip_slow(void);
/* Make sure stdout/stderr buffers exist before any compartment is entered
 * (stdio allocates its buffer at the first print, in the compartment the
 * thread is in). */
void iso_stdio_warmup(void);

/* Run this program again (/proc/self/exe) with argv[1..] = args and
 * XPFO_OPTIONS=options (NULL: unset), capturing stdout and stderr. */
int iso_run_self(const char *options, const char *const args[], unsigned seconds,
		 struct tu_child *res);
/* Same, under `strace -f -qq -e trace=mprotect,pkey_mprotect,madvise,
 * process_madvise,mmap -o <file>` when strace is installed; returns 1
 * without running anything when it is not. */
int iso_run_self_strace(const char *options, const char *const args[], unsigned seconds,
			struct tu_child *res, const char *outfile);
/* The protection changes in that trace: mprotect and pkey_mprotect calls,
 * and madvise or process_madvise calls that install or remove guard
 * markers (purges are not); -1 when it cannot be read. */
long iso_strace_protects(const char *file);
/* The mmap calls in that trace (all, or with fixed_none only those that
 * map no-access anonymous memory over a given place, MAP_FIXED: the
 * remaps that revoke heap pages or release segments); -1 when it cannot
 * be read. */
long iso_strace_mmaps(const char *file, bool fixed_none);

/* Find "key=<number>" in text; -1 when absent. */
long long iso_find_num(const char *text, const char *key);

/* Fill / check with a byte (for the pipe tests). */
size_t iso_count_byte(const unsigned char *p, size_t n, unsigned char b);

#endif
