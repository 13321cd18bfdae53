/* stats.h - process-wide counters.  Slow-path counters are relaxed atomics in
 * one global struct; fast-path counts (allocations and frees per class) live
 * in each thread's state and are summed when read. */
#ifndef XPFO_STATS_H
#define XPFO_STATS_H

#include <stdint.h>

/* The fields of struct xpfo_stats that are plain global counters. */
#define XPFO_GLOBAL_COUNTERS(X)                                            \
	X(reallocs_in_place) X(revoke_queued) X(pages_queued)              \
	X(pages_cancelled) X(pages_revoked) X(revoke_syscalls)             \
	X(grant_syscalls) X(flushes) X(flush_full) X(flush_explicit)       \
	X(flush_thread_exit) X(flush_reuse) X(flush_eager) X(flush_other)  \
	X(revoke_failures) X(purges) X(pages_purged) X(mmap_syscalls)      \
	X(munmap_syscalls) X(madvise_syscalls) X(flush_switch)          \
	X(compartment_opens) X(compartment_closes) X(transfers) X(violations) \
	X(spans_released_unprotected) X(key_evictions) X(compartment_switches) X(guards_skipped) \
	X(touches_skipped) \
	X(close_failures) X(alias_revocations) X(regrants_soon) \
	X(spans_released_uffd) X(uffd_faults) X(uffd_fills) X(uffd_syscalls) \
	X(touches_locked) X(spans_guarded) X(pages_populated) \
	X(pages_shed) X(flush_rounds) X(flush_rounds_shared) \
	X(flush_rounds_protect) X(flush_rounds_purge) X(flush_rounds_guard) \
	X(flush_rounds_vector) X(flush_rounds_unmap) \
	X(pages_orphaned) X(pages_adopted) X(spans_remapped) X(spans_zapped)

/* Gauges (current values) with a peak where one is kept. */
#define XPFO_GLOBAL_GAUGES(X)                                              \
	X(pages_quarantined) X(mapped_pages) X(peak_mapped_pages)          \
	X(resident_pages) X(peak_resident_pages) X(metadata_bytes)         \
	X(segments) X(large_live_bytes) X(compartments) X(degraded) X(vma_budget) X(keys_in_use) X(live_guards) \
	X(aliases) X(uffd_armed) X(spare_pages) X(threads_known) X(huge_kept_pages)

/* Every field of struct xpfo_stats (include/xpfo.h), in its order: the one
 * list both reports walk.  T(name): a scalar the text report's summary lines
 * show (size: the struct's own length, not a counter); N(name): a scalar
 * they do not, which the text report lists by name on its "more" line;
 * A(name): a per-class array.  The JSON report writes every field by name.
 * stats.c checks at compile time that the list covers the whole struct, so
 * a field added there and not here does not build. */
#define XPFO_STATS_FIELDS(T, N, A)                                               \
	T(size) T(allocs) T(frees) T(allocs_small) T(allocs_large)               \
	N(reallocs_in_place) T(live_bytes) T(revoke_queued) T(pages_queued)      \
	T(pages_cancelled) T(pages_revoked) T(revoke_syscalls) T(grant_syscalls) \
	T(flushes) T(flush_full) T(flush_explicit) T(flush_thread_exit)          \
	T(flush_reuse) T(flush_eager) T(flush_other) T(revoke_failures)          \
	T(pages_quarantined) T(purges) T(pages_purged) T(mmap_syscalls)          \
	T(munmap_syscalls) T(madvise_syscalls) T(mapped_bytes)                   \
	T(peak_mapped_bytes) T(resident_bytes) T(peak_resident_bytes)            \
	T(metadata_bytes) T(segments) T(vmas) T(vma_limit)                       \
	A(class_size) A(class_allocs) A(class_frees)                             \
	T(flush_switch) T(compartments) T(compartment_opens)                     \
	T(compartment_closes) T(transfers) T(violations) T(vma_budget)           \
	T(degraded) N(spans_released_unprotected) T(keys_in_use)                 \
	T(key_evictions) T(compartment_switches) T(live_guards) T(guards_skipped)  \
	T(touches_skipped) T(close_failures) T(sandbox_denied) T(sandbox_granted) T(sandbox_passed) \
	T(secret_mapped_bytes) T(secret_resident_bytes) T(aliases) T(alias_revocations) \
	N(regrants_soon) T(uffd_armed) T(spans_released_uffd) T(uffd_faults) T(uffd_fills) T(uffd_syscalls) \
	N(touches_locked) N(spare_bytes) N(spans_guarded) N(pages_populated) \
	N(pages_shed) T(flush_rounds) T(flush_rounds_shared) \
	T(flush_rounds_protect) T(flush_rounds_purge) T(flush_rounds_guard) \
	T(flush_rounds_vector) T(flush_rounds_unmap) N(pages_orphaned) N(pages_adopted)  \
	N(spans_remapped) N(spans_zapped)

struct stats_global {
#define X(n) uint64_t n;
	XPFO_GLOBAL_COUNTERS(X)
	XPFO_GLOBAL_GAUGES(X)
#undef X
};

extern struct stats_global g_stats;

#define stat_add(field, v) \
	__atomic_fetch_add(&g_stats.field, (uint64_t)(v), __ATOMIC_RELAXED)
#define stat_sub(field, v) \
	__atomic_fetch_sub(&g_stats.field, (uint64_t)(v), __ATOMIC_RELAXED)
#define stat_inc(field) stat_add(field, 1)

/* A system call that takes access or frames away from mapped pages (a
 * protection lowered, a key changed, frames released, a mapping removed or
 * replaced): the kernel flushes the TLB of every CPU that may hold the old
 * entries, one shootdown round, sent to the other CPUs when another thread
 * of the process may run there (counted as shared when xpfo knows of more
 * than one thread).  An upper bound: a range none of whose pages were ever
 * touched needs no flush.  Counted by the OS layer only (src/os.c,
 * src/memfd.c), by mechanism: stat_flush_round(protect) counts one in
 * flush_rounds_protect as well (include/xpfo.h says which calls are
 * which), so the mechanisms' counts sum to flush_rounds. */
#define stat_flush_round(mech) stat_flush_round_in(&g_stats.flush_rounds_##mech)

static inline void stat_flush_round_in(uint64_t *mech)
{
	__atomic_fetch_add(mech, 1, __ATOMIC_RELAXED);
	stat_inc(flush_rounds);
	if (__atomic_load_n(&g_stats.threads_known, __ATOMIC_RELAXED) > 1)
		stat_inc(flush_rounds_shared);
}

/* Add v pages to a gauge and raise its peak. */
void stat_gauge_add(uint64_t *gauge, uint64_t *peak, int64_t v);

#endif
