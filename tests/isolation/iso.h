/* iso.h - helpers shared by the compartment isolation tests (issue 3).
 *
 * Fault cases run in a forked child that keeps xpfo's SIGSEGV handler (the
 * generic tu_run_child resets SIGSEGV to the default action, which would
 * hide the report).  The child states what it expects with iso_expect()
 * before misbehaving, so addresses and thread ids are the child's own.
 */
#ifndef XPFO_ISO_H
#define XPFO_ISO_H

#include "testutil.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#define ISO_PAGE 4096u

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

/* ---- fault cases ------------------------------------------------------- */

struct iso_case {
	const char *name;
	int (*fn)(void *);  /* runs in the child; its return is the exit status */
	void *arg;
	int want_signal;    /* 0: must exit 0; else must die by this signal */
	/* The child must write exactly one xpfo line (want_signal != 0), equal
	 * to what it announced with iso_expect().  "<N>" in the announced line
	 * matches one or more decimal digits. */
};

/* In the child: announce the exact stderr line it is about to cause. */
void iso_expect(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Run one case in a child (fork; stderr captured; alarm of `seconds`) and
 * check how it ended and what it wrote.  Returns 0 when the case passed. */
int iso_run_case(const struct iso_case *c, unsigned seconds);

/* Does `line` match `pattern` where "<N>" stands for [0-9]+? */
bool iso_line_matches(const char *line, const char *pattern);

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
/* Same, under `strace -f -c -e trace=mprotect -o <file>` when strace is
 * installed; returns 1 without running anything when it is not. */
int iso_run_self_strace(const char *options, const char *const args[], unsigned seconds,
			struct tu_child *res, const char *outfile);
/* "calls" column of the mprotect row of a strace -c summary, or -1. */
long iso_strace_calls(const char *file, const char *syscall);

/* Find "key=<number>" in text; -1 when absent. */
long long iso_find_num(const char *text, const char *key);

/* Fill / check with a byte (for the pipe tests). */
size_t iso_count_byte(const unsigned char *p, size_t n, unsigned char b);

#endif
