/* decode.h - pngd's PNG decoder and generator (examples/pngd/README.md). */
#ifndef PNGD_DECODE_H
#define PNGD_DECODE_H
#include <stddef.h>

#define PNGD_REPLY_MAX 256     /* a reply line, with its newline and NUL */
#define PNGD_REQ_MAX (8 << 20) /* the largest request a service reads */

/* Decode the PNG png[0..n) and return a reply line allocated with malloc
 * (so in the caller's compartment):
 *   ok WxH depth=D color=C interlace=I crc=XXXXXXXX text=TEXT
 *   error: MESSAGE
 * crc is zlib's crc32 of the decoded rows (libpng's unfiltered bytes, no
 * transformation), TEXT the first 40 bytes of the first tEXt chunk's text.
 * Every libpng warning counts as an error.  NULL when out of memory. */
char *pngd_decode(const unsigned char *png, size_t n);

/* A PNG made by libpng's writer from seed (sizes, colour type, depth,
 * interlacing, pixels, an optional tEXt chunk all derived from it), in a
 * malloc'd buffer (*len bytes); *expect gets the reply pngd_decode must give
 * (computed from the pixels written, not by decoding).  NULL when out of
 * memory or libpng failed. */
unsigned char *pngd_make(unsigned long seed, size_t *len, char *expect, size_t max);

/* The same PNG, malformed: cut short (to fewer bytes) or 1 to 3 distinct
 * bits flipped.  Every such file is invalid: each chunk's CRC (and the
 * signature and IEND) cover every byte pngd_make writes. */
unsigned char *pngd_make_malformed(unsigned long seed, size_t *len);

/* A PNG whose tEXt text is 32 bytes of filler then the 8 bytes of addr:
 * with -DPNGD_BUG, the decoder's text field overflows into the pointer the
 * reply echoes (the injected bug). */
unsigned char *pngd_make_exploit(unsigned long addr, size_t *len);

#endif
