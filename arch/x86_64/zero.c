/* zero.c - zeroing freed slots with AVX2 stores (x86_64/arch.h).
 *
 * The slot is in cache (the program just used it): stores at the core's
 * full width beat rep stosb there, which glibc's memset picks from 2 KiB.
 * arch_init asks the CPU (and the kernel, through XGETBV: the upper halves
 * of the vector registers must be saved) once, before the first malloc. */
#if defined(__x86_64__)
#include "arch.h"

#include <immintrin.h>

bool arch_zero_avx2;

void arch_init(void)
{
	__builtin_cpu_init();
	arch_zero_avx2 = __builtin_cpu_supports("avx2");
}

/* n >= 32: the tail is one store that overlaps the last full one. */
__attribute__((target("avx2"))) void arch_zero_vec(void *p, size_t n)
{
	char *c = p;
	const __m256i z = _mm256_setzero_si256();
	size_t i = 0;
	for (; i + 128 <= n; i += 128) {
		_mm256_storeu_si256((__m256i *)(c + i), z);
		_mm256_storeu_si256((__m256i *)(c + i + 32), z);
		_mm256_storeu_si256((__m256i *)(c + i + 64), z);
		_mm256_storeu_si256((__m256i *)(c + i + 96), z);
	}
	for (; i + 32 <= n; i += 32)
		_mm256_storeu_si256((__m256i *)(c + i), z);
	if (i < n)
		_mm256_storeu_si256((__m256i *)(c + n - 32), z);
}
#else
typedef int xpfo_zero_unused; /* not an empty file elsewhere */
#endif
