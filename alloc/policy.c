/* policy.c - a failed protection change or purge is quarantined, counted
 * and reported (see policy.h). */
#include "alloc.h"
#include "owner.h"
#include "policy.h"

void policy_quarantine(uintptr_t addr, size_t npages, uint16_t owner)
{
	owner_set_quarantined(addr, npages, owner);
}

void policy_failed(const char *what, int err, uintptr_t addr, size_t npages)
{
	stat_inc(revoke_failures);
	stat_add(pages_quarantined, npages);
	xpfo_error("cannot %s %u pages at %p (errno %d): quarantined, never handed to another "
		   "owner", what, (unsigned long)npages, (void *)addr, (long)err);
}

void policy_fail_run(const char *what, int err, uintptr_t addr, size_t npages, uint16_t owner)
{
	policy_quarantine(addr, npages, owner);
	policy_failed(what, err, addr, npages);
}
