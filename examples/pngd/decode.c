/* decode.c - pngd's PNG decoder (libpng) and its test-file generator.
 *
 * The decoder is what runs in the locked compartment: every allocation it
 * and libpng make lands there.  It reads the whole image (any colour type,
 * depth and interlacing, no transformation), checks the file to its IEND,
 * and answers with the header, a crc32 of the rows and the label of a
 * private chunk.  With -DPNGD_BUG the label is copied without a bound into
 * a 32-byte field followed by the pointer the reply echoes: an overflow the
 * input controls, which becomes a read of any address (the injected bug of
 * examples/pngd/README.md).
 */
#include <png.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "decode.h"

#define MAX_SIDE 4096           /* png_set_user_limits */
#define MAX_IMAGE (64u << 20)   /* bytes of decoded rows */
#define LABEL_CHUNK "xpFo"      /* ancillary, private, safe to copy */

struct result {
	char label[32];         /* the xpFo chunk's bytes */
	const char *echo;       /* what the reply echoes as label= */
	char error[96];         /* libpng's message */
};

struct source {
	const unsigned char *p;
	size_t n, off;
};

static void PNGCBAPI on_error(png_structp png, png_const_charp msg)
{
	struct result *r = png_get_error_ptr(png);
	snprintf(r->error, sizeof r->error, "%s", msg);
	png_longjmp(png, 1);
}

/* A warning is an error here: a file that needs one is rejected. */
static void PNGCBAPI on_warning(png_structp png, png_const_charp msg)
{
	on_error(png, msg);
}

static void PNGCBAPI on_read(png_structp png, png_bytep out, size_t n)
{
	struct source *s = png_get_io_ptr(png);
	if (n > s->n - s->off)
		png_error(png, "file cut short");
	memcpy(out, s->p + s->off, n);
	s->off += n;
}

static int PNGCBAPI on_chunk(png_structp png, png_unknown_chunkp c)
{
	struct result *r = png_get_user_chunk_ptr(png);
	if (memcmp(c->name, LABEL_CHUNK, 4))
		return 0; /* libpng's default: skip an unknown ancillary chunk */
#ifdef PNGD_BUG
	memcpy(r->label, c->data, c->size); /* the bug: no bound */
#else
	size_t n = c->size < sizeof r->label ? c->size : sizeof r->label - 1;
	memcpy(r->label, c->data, n);
	r->label[n] = 0;
#endif
	return 1;
}

static char *reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *reply(const char *fmt, ...)
{
	char *out = malloc(PNGD_REPLY_MAX);
	if (!out)
		return NULL;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, PNGD_REPLY_MAX, fmt, ap);
	va_end(ap);
	return out;
}

/* Read the image in r's png and return crc32 of its rows (*ok = 0 on a
 * libpng error: it longjmps to the caller's setjmp). */
static unsigned long read_rows(png_structp png, png_infop info, png_bytepp rows, png_bytep image,
			       size_t rowbytes, png_uint_32 h)
{
	for (png_uint_32 y = 0; y < h; y++)
		rows[y] = image + (size_t)y * rowbytes;
	png_read_image(png, rows);
	png_read_end(png, info);
	unsigned long crc = crc32(0, Z_NULL, 0);
	for (png_uint_32 y = 0; y < h; y++)
		crc = crc32(crc, rows[y], (uInt)rowbytes);
	return crc;
}

char *pngd_decode(const unsigned char *p, size_t n)
{
	struct result *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->echo = r->label;
	struct source src = { p, n, 0 };
	png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, on_error, on_warning);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	/* volatile: changed after setjmp, read after a longjmp */
	png_bytep volatile image = NULL;
	png_bytepp volatile rows = NULL;
	char *out = NULL;
	if (!info) {
		out = reply("error: out of memory\n");
		goto done;
	}
	if (setjmp(png_jmpbuf(png))) {
		out = reply("error: %s\n", r->error);
		goto done;
	}
	png_set_read_fn(png, &src, on_read);
	png_set_user_limits(png, MAX_SIDE, MAX_SIDE);
	png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, (png_const_bytep)LABEL_CHUNK, 1);
	png_set_read_user_chunk_fn(png, r, on_chunk);
	png_read_info(png, info);
	png_uint_32 w, h;
	int depth, color, interlace;
	png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
	png_set_interlace_handling(png);
	png_read_update_info(png, info);
	size_t rowbytes = png_get_rowbytes(png, info);
	if ((uint64_t)rowbytes * h > MAX_IMAGE)
		png_error(png, "image too large");
	image = calloc(h, rowbytes); /* zeros: libpng leaves the padding bits of a row as they were */
	rows = malloc(h * sizeof *rows);
	if (!image || !rows)
		png_error(png, "out of memory");
	unsigned long crc = read_rows(png, info, rows, image, rowbytes, h);
	out = reply("ok %lux%lu depth=%d color=%d interlace=%d crc=%08lx label=%.40s\n", (unsigned long)w,
		    (unsigned long)h, depth, color, interlace, crc, r->echo);
done:
	png_destroy_read_struct(png ? &png : NULL, info ? &info : NULL, NULL);
	free(image);
	free(rows);
	free(r);
	return out;
}

/* ---- the generator (the tests' files; runs in root, not in the decoder) ---- */

struct sink {
	unsigned char *p;
	size_t n, cap;
	int failed;
};

static void PNGCBAPI on_write(png_structp png, png_bytep data, size_t n)
{
	struct sink *s = png_get_io_ptr(png);
	if (s->n + n > s->cap) {
		size_t cap = (s->n + n) * 2;
		unsigned char *q = realloc(s->p, cap);
		if (!q)
			png_error(png, "out of memory");
		s->p = q;
		s->cap = cap;
	}
	memcpy(s->p + s->n, data, n);
	s->n += n;
}

static void PNGCBAPI on_flush(png_structp png)
{
	(void)png;
}

static void PNGCBAPI on_write_error(png_structp png, png_const_charp msg)
{
	(void)msg;
	png_longjmp(png, 1);
}

static uint64_t rnd(uint64_t *s) /* splitmix64 */
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

struct shape {
	png_uint_32 w, h;
	int color, depth, interlace, channels;
	char label[32];
	size_t label_len;
};

static void shape_pick(uint64_t *s, struct shape *sh)
{
	static const int colors[] = { PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_PALETTE,
				      PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB_ALPHA };
	static const int channels[] = { 1, 3, 1, 2, 4 };
	int k = (int)(rnd(s) % 5);
	sh->color = colors[k];
	sh->channels = channels[k];
	if (sh->color == PNG_COLOR_TYPE_GRAY)
		sh->depth = 1 << (rnd(s) % 5); /* 1, 2, 4, 8, 16 */
	else if (sh->color == PNG_COLOR_TYPE_PALETTE)
		sh->depth = 1 << (rnd(s) % 4); /* 1, 2, 4, 8 */
	else
		sh->depth = 8 << (rnd(s) % 2); /* 8, 16 */
	sh->w = 1 + (png_uint_32)(rnd(s) % 64);
	sh->h = 1 + (png_uint_32)(rnd(s) % 64);
	sh->interlace = rnd(s) % 3 == 0 ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE;
	sh->label_len = rnd(s) % 2 ? (size_t)snprintf(sh->label, sizeof sh->label, "img-%llu",
						      (unsigned long long)(rnd(s) % 100000))
				   : 0;
}

/* Write rows (and the label chunk: label_len bytes of label) as a PNG. */
static unsigned char *write_png(const struct shape *sh, png_bytepp rows, const void *label,
				size_t label_len, size_t *len)
{
	struct sink s = { 0 };
	png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, on_write_error, NULL);
	png_infop info = png ? png_create_info_struct(png) : NULL;
	if (!info || setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(png ? &png : NULL, info ? &info : NULL);
		free(s.p);
		return NULL;
	}
	png_set_write_fn(png, &s, on_write, on_flush);
	png_set_IHDR(png, info, sh->w, sh->h, sh->depth, sh->color, sh->interlace, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	if (sh->color == PNG_COLOR_TYPE_PALETTE) {
		png_color pal[256];
		for (int i = 0; i < 256; i++)
			pal[i] = (png_color){ (png_byte)i, (png_byte)(255 - i), (png_byte)(i * 7) };
		png_set_PLTE(png, info, pal, 1 << sh->depth);
	}
	if (label_len) {
		png_unknown_chunk c;
		memcpy(c.name, LABEL_CHUNK, 5);
		c.data = (png_bytep)label;
		c.size = label_len;
		c.location = PNG_HAVE_IHDR;
		png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, (png_const_bytep)LABEL_CHUNK, 1);
		png_set_unknown_chunks(png, info, &c, 1);
	}
	png_write_info(png, info);
	png_write_image(png, rows);
	png_write_end(png, info);
	png_destroy_write_struct(&png, &info);
	*len = s.n;
	return s.p;
}

unsigned char *pngd_make(unsigned long seed, size_t *len, char *expect, size_t max)
{
	uint64_t s = seed;
	struct shape sh;
	shape_pick(&s, &sh);
	size_t bits = (size_t)sh.w * (size_t)sh.channels * (size_t)sh.depth;
	size_t rowbytes = (bits + 7) / 8;
	unsigned char *image = malloc(rowbytes * sh.h);
	png_bytepp rows = malloc(sh.h * sizeof *rows);
	unsigned char *out = NULL;
	if (!image || !rows)
		goto done;
	unsigned long crc = crc32(0, Z_NULL, 0);
	for (png_uint_32 y = 0; y < sh.h; y++) {
		rows[y] = image + (size_t)y * rowbytes;
		for (size_t x = 0; x < rowbytes; x++)
			rows[y][x] = (unsigned char)rnd(&s);
		if (bits % 8) /* the padding bits of the last byte are zero */
			rows[y][rowbytes - 1] &= (unsigned char)(0xff00u >> (bits % 8));
		crc = crc32(crc, rows[y], (uInt)rowbytes);
	}
	snprintf(expect, max, "ok %lux%lu depth=%d color=%d interlace=%d crc=%08lx label=%s\n",
		 (unsigned long)sh.w, (unsigned long)sh.h, sh.depth, sh.color, sh.interlace, crc,
		 sh.label_len ? sh.label : "");
	out = write_png(&sh, rows, sh.label, sh.label_len, len);
done:
	free(image);
	free(rows);
	return out;
}

unsigned char *pngd_make_malformed(unsigned long seed, size_t *len)
{
	char expect[PNGD_REPLY_MAX];
	unsigned char *p = pngd_make(seed, len, expect, sizeof expect);
	if (!p)
		return NULL;
	uint64_t s = seed ^ 0x5eed;
	if (rnd(&s) % 2) {
		*len = (size_t)(rnd(&s) % *len); /* cut short */
		return p;
	}
	size_t at[3];
	int flips = 1 + (int)(rnd(&s) % 3);
	for (int i = 0; i < flips; i++) {
		int again; /* distinct bits only: two flips of one bit cancel */
		do {
			at[i] = (size_t)(rnd(&s) % (*len * 8));
			again = 0;
			for (int j = 0; j < i; j++)
				again |= at[j] == at[i];
		} while (again);
	}
	for (int i = 0; i < flips; i++)
		p[at[i] / 8] ^= (unsigned char)(1u << (at[i] % 8));
	return p;
}

unsigned char *pngd_make_exploit(unsigned long addr, size_t *len)
{
	struct shape sh = { .w = 1, .h = 1, .color = PNG_COLOR_TYPE_GRAY, .depth = 8, .channels = 1 };
	unsigned char pixel = 0, label[40];
	png_bytep rows[1] = { &pixel };
	memset(label, 'A', 32);
	memcpy(label + 32, &addr, sizeof addr); /* over the echo pointer */
	return write_png(&sh, rows, label, sizeof label, len);
}
