/* sandbox.h - between the locked side (sandbox.c) and the executor
 * (executor.c) of xpfo_lock_thread. */
#ifndef XPFO_SANDBOX_H
#define XPFO_SANDBOX_H

#include "gate.h"

#include <stdint.h>
#include <sys/types.h>

/* One page shared (MAP_SHARED) by the process and its executors: counters
 * and the names already reported.  The locked thread can write it; nothing
 * the executor decides depends on it. */
struct sandbox_shared {
	uint64_t denied;           /* filter (SIGSYS) and executor refusals */
	uint64_t granted;          /* heap calls the executor let through */
	uint64_t passed;           /* memory calls outside the heap and metadata */
	uint64_t grants, closes, purges, remaps;
	uint64_t pagemap_reads;    /* reads of the page map for pending pages */
};
extern struct sandbox_shared *sandbox_shared;

const char *sandbox_syscall_name(long nr, char *buf, size_t n);
/* Count a denied call and report it once per syscall number (reported:
 * the reporter's own bitmap of 1024 bits). */
void sandbox_report(long nr, long tid, const char *comp, uint64_t reported[16]);
/* Fork the executor for the thread being locked into c; sv: a socketpair
 * (the executor keeps sv[1], the caller sv[0]).  Returns its pid or -errno. */
pid_t executor_start(struct xpfo_compartment *c, unsigned flags, int sv[2]);

#endif
