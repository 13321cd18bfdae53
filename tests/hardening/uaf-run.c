/* uaf-run.c - use after free of a page run (> 16 KiB).  A freed run is
 * revoked (made inaccessible) when the freeing thread's queue is applied:
 * when it fills, at thread exit, at xpfo_flush(), or at once with
 * revoke=eager.  An access after that faults:
 *
 *   xpfo: violation: write of <p> owned by the allocator (free page, revoked 0 flushes ago) from thread <tid> in compartment "root"
 *
 * then SIGSEGV.  This is XPFO's revocation, on in every profile; revoke=off
 * (measurement only, warned about) turns it off and the write goes
 * unnoticed.  Before the queue is applied the run is still the program's
 * (batching's window, by design): that write is not caught.
 *
 * quarantine_large=N (strict: 64) keeps the last N freed runs revoked
 * before their pages may be handed out again; without it (light) the next
 * run of that size may get the same pages, and the stale pointer then
 * writes into a live block unnoticed.  Under it the state reported is the
 * quarantine's: "(quarantined page)".
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define FREE_PAGE "owned by the allocator (free page, revoked 0 flushes ago)"
#define QUAR_PAGE "owned by the allocator (quarantined page)"

static const char *state(const char *a)
{
	return h_arg_long(a, "quarantined", 0) ? QUAR_PAGE : FREE_PAGE;
}

static int uaf(const char *a, size_t n, int flush, int write)
{
	char *p = malloc(n);
	if (!p)
		return 97;
	memset(p, 1, n);
	free(p);
	if (flush)
		xpfo_flush();
	h_expect_violation(write ? "write" : "read", p + 100, state(a));
	if (write)
		((volatile char *)h_opaque(p))[100] = 'A';
	else if (((volatile char *)h_opaque(p))[100] == 'A')
		return 4;
	return 0;
}

static int c_flushed(const char *a) { return uaf(a, 65536, 1, 1); }
static int c_flushed_read(const char *a) { return uaf(a, 65536, 1, 0); }
static int c_huge(const char *a) { return uaf(a, 5u << 20, 1, 1); }
static int c_no_flush(const char *a) { return uaf(a, 65536, 0, 1); }

/* The freed run's pages, and the next run of the same size. */
static int c_reused(const char *a)
{
	char *p = malloc(65536);
	if (!p)
		return 97;
	memset(p, 1, 65536);
	free(p);
	xpfo_flush();
	char *q = malloc(65536);
	if (!q)
		return 97;
	memset(q, 2, 65536);
	h_expect_violation("write", p + 100, state(a));
	((volatile char *)h_opaque(p))[100] = 'A';
	h_note(q == p ? "the stale pointer wrote into the new block" : "not reused");
	return 0;
}

static const struct hcase cases[] = {
	{ "write-after-flush", c_flushed },
	{ "read-after-flush", c_flushed_read },
	{ "huge-write-after-flush", c_huge },
	{ "write-before-flush", c_no_flush },
	{ "reused", c_reused },
};

#define Q "quarantined=1"
#define OFFWARN "xpfo: warning: revoke=off: freed pages stay reachable; for measurement only"
#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"

static const struct hrun runs[] = {
	{ "write-after-flush", "profile=default", HX_DETECT, SIGSEGV, NULL, NULL, "revoked" },
	{ "write-after-flush", "profile=light", HX_DETECT, SIGSEGV, NULL, NULL, "revoked" },
	{ "write-after-flush", "profile=strict", HX_DETECT, SIGSEGV, Q, NULL, "revoked, quarantined" },
	{ "write-after-flush", "profile=default,revoke=off", HX_SILENT, 0, NULL, OFFWARN,
	  "revocation off: undetected" },
	{ "write-after-flush", "profile=strict,revoke=off", HX_SILENT, 0, NULL, OFFWARN,
	  "revocation off: undetected" },
	{ "read-after-flush", "profile=default", HX_DETECT, SIGSEGV, NULL, NULL, "revoked" },
	{ "read-after-flush", "profile=strict", HX_DETECT, SIGSEGV, Q, NULL, "revoked" },
	{ "read-after-flush", "profile=light,revoke=off", HX_SILENT, 0, NULL, OFFWARN,
	  "revocation off: undetected" },
	{ "huge-write-after-flush", "profile=default", HX_DETECT, SIGSEGV, NULL, NULL, "revoked" },
	{ "huge-write-after-flush", "profile=light", HX_DETECT, SIGSEGV, NULL, NULL, "revoked" },
	{ "huge-write-after-flush", "profile=strict", HX_DETECT, SIGSEGV, Q, NULL, "revoked" },
	{ "huge-write-after-flush", "profile=default,revoke=off", HX_SILENT, 0, NULL, OFFWARN,
	  "revocation off: undetected" },
	{ "write-before-flush", "profile=default,revoke=eager", HX_DETECT, SIGSEGV, NULL, NULL,
	  "eager revocation" },
	{ "write-before-flush", "profile=light,revoke=eager", HX_DETECT, SIGSEGV, NULL, NULL,
	  "eager revocation" },
	{ "write-before-flush", "profile=default", HX_SILENT, 0, NULL, NULL,
	  "by design: batched revocation not applied yet" },
	{ "reused", "profile=strict", HX_DETECT, SIGSEGV, Q, NULL, "quarantine_large on" },
	{ "reused", "profile=light,quarantine_large=4", HX_DETECT, SIGSEGV, Q, NULL,
	  "quarantine_large on" },
	{ "reused", "profile=default,quarantine_large=1", HX_DETECT, SIGSEGV, Q, NULL,
	  "quarantine_large on" },
	{ "reused", "profile=light", HX_SILENT, 0, NULL, NULL,
	  "quarantine_large off: the pages were reused, the write went into the new block" },
	{ "reused", "profile=strict,quarantine_large=4097", HX_DETECT, SIGSEGV, Q,
	  WARN("quarantine_large"), "out of range: strict's 64 kept" },
	{ "reused", "profile=light,quarantine_large=x", HX_SILENT, 0, NULL,
	  WARN("quarantine_large"), "bad value: light's 0 kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "uaf-run", cases, NELEM(cases), runs, NELEM(runs));
}
