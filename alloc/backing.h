/* backing.h - heap pages that are not plain private anonymous memory:
 * secret compartments' pages (alloc/secret.c: memfd_secret) and alias views
 * (alloc/alias.c: memfd); alloc/backing.c knows which segments may hold
 * them and purges and copies such ranges.  The rest of the allocator calls in through the
 * hooks below at four points: grant (new frames for a secret compartment),
 * purge (a special range gets a new anonymous mapping, never MADV_DONTNEED,
 * which would leave a shared file's pages in place), transfer and segment
 * release (every alias of the range is revoked first). */
#ifndef XPFO_BACKING_H
#define XPFO_BACKING_H

#include "alloc.h"
#include "owner.h"

/* ---- secret.c ---------------------------------------------------------- */
static inline bool secret_comp(const struct xpfo_compartment *c)
{
	return c && (c->flags & XPFO_COMPARTMENT_SECRET);
}
/* Can a secret compartment be made?  0, or the errno to fail with (the
 * first failure says why in one warning). */
int secret_create_check(void);
/* grant hook: a secret compartment's run gets its own memfd_secret file
 * (inaccessible until the grant opens it).  0 when c is not secret. */
int secret_back(struct xpfo_compartment *c, uintptr_t a, size_t len);
/* A transfer's fresh copy into a secret compartment: [a, +len) gets a
 * secret file of its own with the run's bytes (os_fresh_copy_secret). */
int secret_copy_in(uintptr_t a, size_t len, bool readable, enum os_prot prot, int key);
/* Secret memory mapped and resident (stats), zero if none was ever made. */
void secret_usage(uint64_t *mapped, uint64_t *resident);

/* ---- backing.c --------------------------------------------------------- */
/* Segments [a, a+len) may hold special backing from now on. */
void backing_mark(uintptr_t a, size_t len);
/* Does [a, a+len) touch a segment that may hold special backing? */
bool backing_special(uintptr_t a, size_t len);
/* os_purge for heap pages: in a special segment, revoke the range's
 * aliases and map fresh anonymous memory over it (PROT_NONE). */
int backing_purge(uintptr_t a, size_t len);
/* Purge n >= 2 ranges of plain anonymous heap pages (the caller checked
 * backing_special) in one process_madvise(MADV_DONTNEED) (os_purge_vec):
 * 0 or the errno, *done the bytes purged (in order: the rest untouched,
 * for the caller to purge range by range).  ECANCELED: not tried (one
 * range, a locked thread, an injected purge failure, or a kernel that
 * refused the call before: EINVAL before 6.13, or no pidfd). */
int backing_purge_vec(const uintptr_t *a, const size_t *len, unsigned n, size_t *done);
/* Would such a call be tried, and flush the TLBs once for all its ranges
 * (os_purge_vec_one_flush), not refused before? */
bool backing_purge_vec_batched(void);
/* transfer hook: the in-place fresh copy of a run whose old or new owner
 * is secret or which has an alias; -1: nothing special, use os_fresh_copy. */
int backing_transfer(struct xpfo_compartment *from, struct xpfo_compartment *to, uintptr_t a,
		     size_t len, bool readable, enum os_prot prot, int key);

/* ---- alias.c ----------------------------------------------------------- */
/* Revoke every alias inside [a, a+len): truncated (or that part
 * punched), counted; the caller remaps the range. */
void alias_revoke_range(uintptr_t a, size_t len);
bool alias_in(uintptr_t a, size_t len);

#endif
