/* stats.c - the process-wide counters (stats.h).  Reading and printing them
 * (xpfo_stats_get, xpfo_stats_print) is api/stats.c's: it sums the threads'
 * states, which live above this layer. */
#include "stats.h"

#include <stdbool.h>

struct stats_global g_stats;

void stat_gauge_add(uint64_t *gauge, uint64_t *peak, int64_t v)
{
	uint64_t now = __atomic_add_fetch(gauge, (uint64_t)v, __ATOMIC_RELAXED);
	uint64_t p = __atomic_load_n(peak, __ATOMIC_RELAXED);
	while (now > p && !__atomic_compare_exchange_n(peak, &p, now, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}
