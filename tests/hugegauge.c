/* hugegauge.c - the mapped and resident gauges come back when huge blocks
 * are resized in place and reused (issue 16: in the soak's stress they
 * wrapped below zero, and the retain policy reads resident - mapped).
 * A 5 MiB block grows in place to 7 MiB and is freed; another 5 MiB block
 * then takes the freed one back before its revocation; after a flush and
 * every free, mapped_bytes is where it started. */
#include "testutil.h"

#include <string.h>

int main(void)
{
	tu_prog = "hugegauge";
	tu_xpfo_init(1);
	struct xpfo_stats s0, s1;
	xpfo_flush();
	tu_stats(&s0);
	for (int i = 0; i < 50; i++) {
		char *p = xpfo_malloc(5u << 20);
		char *q = p ? xpfo_realloc(p, 7u << 20) : NULL;
		if (!q)
			tu_hard_error("allocation failed");
		memset(q, 1, 7u << 20);
		xpfo_free(q);
		char *r = xpfo_malloc(5u << 20);
		if (!r)
			tu_hard_error("allocation failed");
		xpfo_free(r);
	}
	xpfo_flush();
	tu_stats(&s1);
	if (s1.mapped_bytes != s0.mapped_bytes || s1.resident_bytes > (1ull << 40)) {
		fprintf(stderr, "FAIL: mapped %llu bytes before, %llu after; resident %llu after\n",
			(unsigned long long)s0.mapped_bytes, (unsigned long long)s1.mapped_bytes,
			(unsigned long long)s1.resident_bytes);
		return 1;
	}
	printf("hugegauge: ok\n");
	return 0;
}
