/* policy.h - what xpfo does when a protection change or a purge fails.
 *
 * One decision for every caller (hardened_malloc keeps its own in
 * memory.c): pages whose access could not be taken away, or whose frames
 * could not be replaced while they change owner, are quarantined (their
 * entries say so: never handed to another owner, a second free of them is a
 * double free), counted (revoke_failures, pages_quarantined) and reported in
 * one "xpfo: error: " line.  A failure is never ignored.
 */
#ifndef XPFO_POLICY_H
#define XPFO_POLICY_H

#include <stddef.h>
#include <stdint.h>

/* Mark [addr, +npages) quarantined for owner (the caller holds what its
 * page-entry writes need); the count and the report are policy_failed's. */
void policy_quarantine(uintptr_t addr, size_t npages, uint16_t owner);
/* Count and report a failed `what` ("revoke", "purge", ...) of the npages
 * at addr, quarantined by the caller. */
void policy_failed(const char *what, int err, uintptr_t addr, size_t npages);
/* Both, for one run of one owner. */
void policy_fail_run(const char *what, int err, uintptr_t addr, size_t npages, uint16_t owner);

#endif
