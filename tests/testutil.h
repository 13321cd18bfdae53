/* testutil.h - shared helpers for xpfo's test programs.
 *
 * Checks: CHECK(cond, fmt, ...) records a failure with file:line and goes
 * on; tu_exit() ends the program with automake's codes (0 pass, 1 fail).
 * Children: tu_run_child() runs a function in a forked child with stderr
 * captured, and reports how it ended; tu_run_case() runs a misuse or fault
 * case there and checks its end and its exact stderr line.
 * xpfo's API is looked up with dlsym() at run time, so one test source runs
 * linked against libxpfo, under LD_PRELOAD, and (to validate the test
 * itself) against glibc's malloc.
 */
#ifndef XPFO_TESTUTIL_H
#define XPFO_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "xpfo.h"

/* ---- checks ---------------------------------------------------------- */

extern unsigned long tu_failures;
extern unsigned long tu_checks;
extern const char *tu_prog;

void tu_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define CHECK(cond, ...)                                                \
	do {                                                            \
		tu_checks++;                                            \
		if (!(cond))                                            \
			tu_fail(__FILE__, __LINE__, __VA_ARGS__);       \
	} while (0)

/* Exit 99 (hard error: the test itself could not run) with a message. */
void tu_hard_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* Exit 77 (skip) with a reason. */
void tu_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/* A test of the mprotect backend's behaviour on another backend (a host
 * with protection keys): runs the program again (argv) with
 * XPFO_OPTIONS=...,backend=mprotect; skips (77) where that cannot be done
 * (XPFO_OPTIONS names a backend already, or the exec failed).  backend:
 * xpfo_backend()'s answer; `why`: what
 * the test needs of mprotect. */
void tu_on_mprotect(char **argv, const char *backend, const char *why);
/* Print a summary and exit 0 when no check failed, 1 otherwise. */
void tu_exit(void) __attribute__((noreturn));

/* Kill the whole test after this many seconds (SIGALRM, default action). */
void tu_timeout(unsigned seconds);

/* ---- children ---------------------------------------------------------- */

struct tu_child {
	int status;        /* from waitpid */
	char err[8192];    /* captured stderr, NUL-terminated (truncated) */
	size_t errlen;
	char out[8192];    /* captured stdout (tu_run_cmd only) */
	size_t outlen;
};

/* Fork; in the child, stderr goes to a pipe, core dumps are off, an alarm
 * of `seconds` is set, and fn(arg)'s return value is the exit status.
 * Returns 0, or -1 when fork/pipe failed. */
int tu_run_child(int (*fn)(void *), void *arg, unsigned seconds,
		 struct tu_child *res);

/* Run argv (execv of argv[0]) with `envset` ("NAME=value" or "NAME" to
 * unset, NULL-terminated, may be NULL) applied to the environment, stdout
 * and stderr captured.  Returns 0, or -1 when it could not be started. */
int tu_run_cmd(char *const argv[], const char *const envset[],
	       unsigned seconds, struct tu_child *res);

/* Run fn(arg) in a child (tu_run_child, 30 s) and check that it died by
 * SIGSEGV; prints what it saw. */
void tu_must_segv(const char *what, int (*fn)(void *), void *arg);

/* "exit 0", "killed by SIGSEGV", ... for messages. */
const char *tu_status_str(int status);

/* ---- one case in a child, checked ------------------------------------- */

/* The runner of the misuse, isolation and hardening suites.  A case runs in
 * a child: fn(arg) in a fork (xpfo's signal handlers kept: a fault must be
 * reported), or argv executed (a re-execution of the test with other
 * XPFO_OPTIONS, which xpfo reads once at start).  Core dumps are off and an
 * alarm of `seconds` ends a hang.  Before it misbehaves, the child announces
 * the exact stderr line it is about to cause with tu_expect(), so addresses
 * and thread ids are its own.  In that line "<N>" matches a decimal number,
 * "<N:lo-hi>" one in [lo, hi], "<N:a|b|c>" one of those. */
void tu_expect(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

enum tu_err {
	TU_ERR_AUTO,  /* TU_ERR_LINE when the case must die by a signal, else TU_ERR_ANY */
	TU_ERR_LINE,  /* stderr is exactly the announced line */
	TU_ERR_EMPTY, /* stderr is empty */
	TU_ERR_ANY,   /* anything but an "xpfo: violation" line */
	TU_ERR_NOT,   /* the announced line does not appear */
};

struct tu_case {
	const char *name;
	int (*fn)(void *);  /* runs in the child; its return is the exit status */
	void *arg;
	int signal;         /* > 0: must die by it; 0: must exit with `code`; < 0: any end */
	int code;
	enum tu_err err;
	/* One leading line of stderr ("xpfo: warning: ..." or "xpfo: error: ...")
	 * matching this ('*' stands for any text), NULL: none.  Without one, a
	 * warning line fails the case (except with TU_ERR_ANY). */
	const char *lead;
	char *const *argv;  /* set: execute it instead of fn */
	const char *const *envset; /* for argv, as tu_run_cmd's */
};

/* Run c, check its end and its stderr (CHECK), log "ok" or the child's
 * stderr.  res (may be NULL) gets the child's status and output; exit 97-99
 * of the child (it could not run) is a hard error.  Returns 0 when passed. */
int tu_run_case(const struct tu_case *c, unsigned seconds, struct tu_child *res);
/* Does `line` match `pattern` (the "<N>" forms above)? */
int tu_line_matches(const char *line, const char *pattern);

/* ---- xpfo, looked up at run time ------------------------------------- */

struct tu_xpfo {
	int present;
	int (*stats_get)(struct xpfo_stats *, size_t);
	void (*stats_print)(int);
	int (*flush)(void);
	xpfo_compartment_t *(*owner)(const void *);
	xpfo_compartment_t *(*root)(void);
	xpfo_compartment_t *(*current)(void);
	const char *(*compartment_name)(const xpfo_compartment_t *);
	const char *(*backend)(void);
};
extern struct tu_xpfo tu_x;

/* Resolve xpfo's API.  With `require` set, a missing xpfo is a hard error
 * (exit 99): the linked and preloaded test builds pass it. */
void tu_xpfo_init(int require);
/* Stats snapshot; a hard error when xpfo is present and the call fails,
 * zeroes when xpfo is absent. */
void tu_stats(struct xpfo_stats *s);
/* Does this kernel install guard markers (MADV_GUARD_INSTALL, 6.13)?  And
 * with process_madvise on PIDFD_SELF (several ranges in one call)? */
int tu_guard_markers(void);
int tu_guard_markers_batched(void);
/* XPFO_OPTIONS for a child run: the backend= setting of this process's own
 * XPFO_OPTIONS, if it has one and `options` has none (so that a test run
 * with backend=mprotect runs its children there too), then `options`
 * (NULL: none), in a static buffer; `options` itself when there is no
 * setting to add. */
const char *tu_child_options(const char *options);

/* Fault injection into xpfo's OS layer (src/os.h, os_inject): the next
 * `count` calls of op fail with err after `skip` that succeed.  Linked test
 * builds only (the symbol is xpfo's test seam).  ops as in src/os.h: */
enum { TU_OS_RESERVE, TU_OS_PROTECT, TU_OS_PURGE, TU_OS_MEM, TU_OS_SECRET, TU_OS_ALIAS, TU_OS_UFFD,
       TU_OS_SANDBOX, TU_OS_EXECUTOR, TU_OS_SELF };
int xpfo__test_inject(int op, int err, unsigned skip, unsigned count);

/* ---- misc --------------------------------------------------------------- */

/* Deterministic PRNG (xorshift64*). */
static inline uint64_t tu_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* One generation of a thread churn (tests/genleak, tests/orphan): n blocks
 * of pick() bytes allocated and written, the n the generation before left
 * (NULL: none) freed, then a random half of the new ones left in left[]
 * for the next generation and the rest freed. */
static inline void tu_generation(void **left, int n, uint64_t *seed, size_t (*pick)(void))
{
	void *mine[n];
	for (int i = 0; i < n; i++) {
		size_t sz = pick();
		mine[i] = xpfo_malloc(sz);
		if (!mine[i])
			tu_hard_error("xpfo_malloc failed");
		memset(mine[i], 0x5a, sz);
	}
	for (int i = 0; i < n; i++) {
		xpfo_free(left[i]);
		left[i] = NULL;
	}
	for (int i = 0; i < n; i++) {
		if (tu_rand(seed) % 2)
			left[i] = mine[i];
		else
			xpfo_free(mine[i]);
	}
}

/* The pattern tu_fill writes: 8-byte word k of a block filled with seed
 * (never a zero byte, so calloc'ed or purged memory never matches). */
static inline uint64_t tu_pattern_word(uint64_t seed, size_t k)
{
	uint64_t x = seed ^ ((uint64_t)k * 0x9E3779B97F4A7C15ULL);
	x ^= x >> 29;
	return x | 0x0101010101010101ULL;
}

/* Fill / check n bytes at p with a pattern derived from seed. */
void tu_fill(void *p, size_t n, uint64_t seed);
/* Returns the offset of the first wrong byte, or (size_t)-1. */
size_t tu_verify(const void *p, size_t n, uint64_t seed);

/* Does argv contain this flag? */
int tu_has_arg(int argc, char **argv, const char *flag);

#endif
