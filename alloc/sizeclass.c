/* sizeclass.c - size classes: 16-byte steps to 128, then four classes per
 * doubling up to 16 KiB, and from 512 a fifth just past each power of two
 * (base + 64): a power-of-two request and its 8-byte canary would take
 * the next quarter step, 25% more than asked (sqlite's 1,032- and
 * 4,104-byte blocks in 1,280- and 5,120-byte slots: 4% more peak RSS).  Each
 * class gets a slab size chosen so that the slots fill the slab with
 * little waste. */
#include "alloc.h"


/* Pages per slab for a class: the smallest count that wastes at most 1/32
 * of the slab and holds at least 8 slots (or the slot limit), else the count
 * up to 16 pages with the least waste. */
static unsigned slab_pages(uint32_t size)
{
	unsigned best = 1;
	unsigned long best_waste = ~0ul;
	for (unsigned np = 1; np <= 16; np++) {
		unsigned long bytes = np * PAGE_SIZE;
		unsigned long slots = bytes / size;
		if (slots > SLAB_MAX_SLOTS)
			break;
		unsigned long waste = bytes - slots * size;
		if (slots >= 8 && waste * 32 <= bytes)
			return np;
		if (slots && waste * 1024 / bytes < best_waste) {
			best_waste = waste * 1024 / bytes;
			best = np;
		}
	}
	return best;
}

void sizeclass_init(void)
{
	unsigned c = 0;
	for (uint32_t s = 16; s <= 128; s += 16)
		classes[c++].size = s;
	for (uint32_t base = 128; base < SMALL_MAX; base *= 2) {
		if (base >= 512)
			classes[c++].size = base + 64;
		for (uint32_t k = 1; k <= 4; k++)
			classes[c++].size = base + k * (base / 4);
	}
	xpfo_assert(c == NCLASSES && classes[NCLASSES - 1].size == SMALL_MAX);
	for (c = 0; c < NCLASSES; c++) {
		struct size_class *k = &classes[c];
		k->npages = (uint16_t)slab_pages(k->size);
		unsigned long slots = k->npages * PAGE_SIZE / k->size;
		k->nslots = (uint16_t)(slots > SLAB_MAX_SLOTS ? SLAB_MAX_SLOTS : slots);
		k->recip = (uint32_t)(((1ull << 32) + k->size - 1) / k->size);
		/* slab_take_random picks a slab's first word with two random
		 * bits and wraps with a mask: 1, 2 or 4 words */
		unsigned nw = (k->nslots + 63) / 64;
		if (nw != 1 && nw != 2 && nw != 4)
			xpfo_fatal("size class %u has %u bitmap words", (unsigned long)k->size,
				   (unsigned long)nw);
	}
	c = 0;
	for (unsigned i = 0; i <= 64; i++) {
		size_t size = i * 16;
		while (classes[c].size < size)
			c++;
		class_lut_small[i] = (uint8_t)c;
	}
	c = 0;
	for (unsigned i = 0; i <= SMALL_MAX / 64; i++) {
		size_t size = i * 64;
		while (classes[c].size < size)
			c++;
		class_lut_mid[i] = (uint8_t)c;
	}
}
