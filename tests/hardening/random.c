/* random.c - randomisation.  random_slots (strict; since issue 11 not the
 * default) hands out the slots of a slab in random order; random_bases
 * (default, strict) places
 * segments at random in the heap reservation.  No message: the child
 * measures and exits 0 when the layout is random, 3 when it is the
 * predictable one (the mitigation off).
 *
 * Slot order: 40 blocks of one size in a row; in order, the address goes up
 * at every step but at a change of slab; at random, it goes down about half
 * of the time.  Placement: the heap is one reservation aligned to its size
 * (64 GiB by default: `reserve`); without randomisation, segments are taken
 * from its start, so blocks of a few new size classes all sit in its first
 * 256 MiB; at random, one of four lands there with probability 1/256.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static int c_slot_order(const char *a)
{
	(void)a;
	char *p[40];
	int down = 0;
	for (int i = 0; i < 40; i++) {
		p[i] = malloc(72);
		if (!p[i])
			return 97;
		if (i && p[i] < p[i - 1])
			down++;
	}
	h_note("%d of 39 steps went down", down);
	return down >= 5 ? 0 : down <= 2 ? 3 : 4;
}

static int c_segment_placement(const char *a)
{
	unsigned long reserve = (unsigned long)h_arg_long(a, "reserve", 64) << 30;
	size_t sizes[] = { 3000, 5000, 9000, 200000 };
	unsigned long far = 0;
	for (size_t i = 0; i < NELEM(sizes); i++) {
		char *p = malloc(sizes[i]);
		if (!p)
			return 97;
		unsigned long off = (unsigned long)p & (reserve - 1);
		h_note("%zu bytes at offset %#lx of the reservation", sizes[i], off);
		if (off >= 256ul << 20)
			far++;
	}
	return far ? 0 : 3;
}

static const struct hcase cases[] = {
	{ "slot-order", c_slot_order },
	{ "segment-placement", c_segment_placement },
};

#define WARN(opt) "xpfo: warning: option " opt ": *keeping the default"

static const struct hrun runs[] = {
	{ "slot-order", "profile=default", HX_EXIT, 3, NULL, NULL,
	  "random_slots off in the default: in order" },
	{ "slot-order", "profile=default,random_slots=1", HX_EXIT, 0, NULL, NULL, "random_slots on" },
	{ "slot-order", "profile=strict", HX_EXIT, 0, NULL, NULL, "random_slots on" },
	{ "slot-order", "profile=light,random_slots=1", HX_EXIT, 0, NULL, NULL, "random_slots on" },
	{ "slot-order", "profile=light", HX_EXIT, 3, NULL, NULL, "random_slots off: in order" },
	{ "slot-order", "profile=strict,random_slots=0", HX_EXIT, 3, NULL, NULL,
	  "random_slots off: in order" },
	{ "slot-order", "profile=strict,random_slots=2", HX_EXIT, 0, NULL, WARN("random_slots"),
	  "bad value: the profile's value (on) kept" },
	{ "slot-order", "profile=default,random_slots=2", HX_EXIT, 3, NULL, WARN("random_slots"),
	  "bad value: the profile's value (off) kept" },
	{ "segment-placement", "profile=default", HX_EXIT, 0, NULL, NULL, "random_bases on" },
	{ "segment-placement", "profile=strict", HX_EXIT, 0, NULL, NULL, "random_bases on" },
	{ "segment-placement", "profile=light,random_bases=1", HX_EXIT, 0, NULL, NULL,
	  "random_bases on" },
	{ "segment-placement", "profile=light", HX_EXIT, 3, NULL, NULL, "random_bases off" },
	{ "segment-placement", "profile=default,random_bases=0", HX_EXIT, 3, NULL, NULL,
	  "random_bases off" },
	{ "segment-placement", "profile=strict,random_bases=0", HX_EXIT, 3, NULL, NULL,
	  "random_bases off" },
	{ "segment-placement", "profile=light,random_bases=yes", HX_EXIT, 3, NULL,
	  WARN("random_bases"), "bad value: light's default (off) kept" },
};

int main(int argc, char **argv)
{
	h_main(argc, argv, "random", cases, NELEM(cases), runs, NELEM(runs));
}
