/* fatal.h - reports.  Everything here formats into a stack buffer and writes
 * with one write(2): it never allocates and is safe in any allocator state.
 *
 * Format directives: %s (string), %p (pointer as 0x...), %x (unsigned long,
 * hex), %u (unsigned long), %d (long), %z (size_t), %% .  Integers are passed
 * as their C type; the directive says how to read them.
 */
#ifndef XPFO_FATAL_H
#define XPFO_FATAL_H

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>

/* "xpfo: fatal: <msg>\n", then the abort hook (abort() by default). */
_Noreturn __attribute__((cold)) void xpfo_fatal(const char *fmt, ...);
/* "xpfo: error: <msg>\n": something failed and was contained (the
 * program goes on, with less than it asked for) */
__attribute__((cold)) void xpfo_error(const char *fmt, ...);
/* "xpfo: warning: <msg>\n" */
__attribute__((cold)) void xpfo_warn(const char *fmt, ...);
/* "xpfo: <msg>\n" when verbose=1 */
void xpfo_verbose(const char *fmt, ...);
/* Format into buf (always NUL-terminated); returns the length. */
size_t fmt_buf(char *buf, size_t n, const char *fmt, va_list ap);
size_t fmt_str(char *buf, size_t n, const char *fmt, ...);

/* API misuse and refusals: set errno to e, then the failure value of a
 * call returning a pointer (NULL) or an int (-1). */
static inline void *fail_null(int e)
{
	errno = e;
	return NULL;
}

static inline int fail_int(int e)
{
	errno = e;
	return -1;
}

#endif
