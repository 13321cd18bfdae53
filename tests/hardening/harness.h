/* harness.h - the driver shared by the hardening tests (issue 6).
 *
 * Each test program holds the cases of one bug class and a table of runs.
 * A run is one case under one XPFO_OPTIONS value: the program re-executes
 * itself as `prog --case NAME ARG` with XPFO_OPTIONS set (options are read
 * once, at start), captures the child's stdout and stderr, and checks how it
 * ended (testutil.h's tu_run_case).  Before it misbehaves, the child
 * announces the exact line xpfo must print with tu_expect(), so addresses
 * and thread ids are the child's own.  Expectations:
 *
 *   HX_DETECT  killed by `sig`, stderr is exactly the expected line (after
 *              the one warning line the run may expect);
 *   HX_SILENT  exit 0 and nothing on stderr (besides that warning): the bug
 *              went undetected, as it must with its mitigation off;
 *   HX_EXIT    exit `code` and nothing on stderr: for mitigations that have
 *              no message (fills, randomisation), the child measures what
 *              the mitigation does and says so by its exit code;
 *   HX_NOT     the expected line must not appear; any ending is accepted
 *              and logged (a mitigation off, the bug caught by another one).
 *
 * A run may expect one "xpfo: warning: " line starting with `warn` that ends
 * with "keeping the default" (bad option values) or as given.
 */
#ifndef XPFO_HARDENING_HARNESS_H
#define XPFO_HARDENING_HARNESS_H

#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "testutil.h"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wuse-after-free"
#endif
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define ROOT " (compartment \"root\")"

/* ---- child side -------------------------------------------------------- */

/* The exact line xpfo must write: testutil.h's tu_expect(). */
/* A note for the log ("N <text>"). */
void h_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Hide a pointer from the compiler, so misuse is not folded away. */
void *h_opaque(void *p);
/* The violation line fault.c writes for a write at `a` described as
 * `owner` (e.g. "owned by the allocator (guard page)"), from this thread. */
void h_expect_violation(const char *access, const void *a, const char *owner);
/* Start and end of the mapping that contains p, and its permissions
 * ("rw-p"), from /proc/self/maps (0 and "" if none). */
unsigned long h_mapping_start(const void *p);
unsigned long h_mapping_end(const void *p);
const char *h_mapping_prot(const void *p);
/* Calls fn(lo, hi, prot, path, arg) for each line of /proc/self/maps. */
void h_maps_foreach(void (*fn)(unsigned long lo, unsigned long hi, const char *prot,
			       const char *path, void *arg), void *arg);
/* A 64 KiB run freed (still queued), then a 32 KiB one: 0 with both in
 * *p and *q when the new run took the freed one's tail (q == p + 32 KiB,
 * alloc/revoke.c take_at), 96 when it did not, 97 when malloc failed. */
int h_run_tail(char **p, char **q);
/* Page size. */
size_t h_page(void);
/* The case's argument ("" when none), and a numeric one. */
long h_arg_long(const char *arg, const char *key, long dflt);

struct hcase {
	const char *name;
	int (*fn)(const char *arg); /* the child's exit status */
};

/* ---- parent side ------------------------------------------------------- */

enum hx { HX_DETECT, HX_SILENT, HX_EXIT, HX_NOT };

struct hrun {
	const char *name;    /* case */
	const char *options; /* XPFO_OPTIONS; NULL: unset */
	enum hx expect;
	int value;           /* HX_DETECT: signal; HX_EXIT: exit code */
	const char *arg;     /* passed to the case; NULL: "" */
	const char *warn;    /* one warning line starting with this; NULL: none */
	const char *why;     /* what the run shows, for the log */
};

/* The test's main: child mode with `--case`, else every run.  Exits. */
int h_main(int argc, char **argv, const char *prog, const struct hcase *cases, size_t ncases,
	   const struct hrun *runs, size_t nruns) __attribute__((noreturn));

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

#endif
