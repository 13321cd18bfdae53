/* options.c - libFuzzer target: the XPFO_OPTIONS parser (src/options.c,
 * options_parse) on any string.  It must never crash, never write outside
 * the struct, and leave every option inside its range (options_invalid);
 * every warning must format (the sink formats it as xpfo_warn would). */
#include "internal.h"
#include "fuzz.h"

#include <string.h>

static unsigned long warnings;

static void sink(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	size_t n = fmt_buf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	FZ_CHECK(n < sizeof buf && strlen(buf) == n, "warning of %zu bytes", n);
	warnings++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[4096];
	if (size >= sizeof s)
		size = sizeof s - 1;
	memcpy(s, data, size);
	s[size] = 0;
	/* a canary on each side: the parser writes only inside the struct */
	struct { uint64_t before; struct options o; uint64_t after; } box;
	box.before = box.after = 0x5a5a5a5a5a5a5a5aull;
	box.o = opt; /* the defaults the library started with */
	options_parse(s, &box.o, sink, -1);
	FZ_CHECK(box.before == 0x5a5a5a5a5a5a5a5aull && box.after == box.before, "struct overrun");
	const char *bad = options_invalid(&box.o);
	FZ_CHECK(!bad, "option %s out of its range after \"%s\"", bad, s);
	return 0;
}
