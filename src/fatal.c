#include "base.h"

#include <stdint.h>

static size_t put_u(char *b, size_t n, size_t at, unsigned long v, unsigned base)
{
	char tmp[24];
	int k = 0;
	do {
		tmp[k++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (k && at + 1 < n)
		b[at++] = tmp[--k];
	return at;
}

size_t fmt_buf(char *b, size_t n, const char *f, va_list ap)
{
	size_t at = 0;
	if (!n)
		return 0;
	for (; *f && at + 1 < n; f++) {
		if (*f != '%') {
			b[at++] = *f;
			continue;
		}
		switch (*++f) {
		case 's': {
			const char *s = va_arg(ap, const char *);
			if (!s)
				s = "(null)";
			while (*s && at + 1 < n)
				b[at++] = *s++;
			break;
		}
		case 'p': {
			uintptr_t v = (uintptr_t)va_arg(ap, const void *);
			if (at + 3 < n) {
				b[at++] = '0';
				b[at++] = 'x';
			}
			at = put_u(b, n, at, v, 16);
			break;
		}
		case 'x':
			at = put_u(b, n, at, va_arg(ap, unsigned long), 16);
			break;
		case 'u':
			at = put_u(b, n, at, va_arg(ap, unsigned long), 10);
			break;
		case 'z':
			at = put_u(b, n, at, va_arg(ap, size_t), 10);
			break;
		case 'd': {
			long v = va_arg(ap, long);
			if (v < 0) {
				b[at++] = '-';
				v = -v;
			}
			at = put_u(b, n, at, (unsigned long)v, 10);
			break;
		}
		case '%':
			b[at++] = '%';
			break;
		default:
			f--; /* print the lone % and go on */
			b[at++] = '%';
			break;
		}
		if (!*f)
			break;
	}
	b[at] = 0;
	return at;
}

size_t fmt_str(char *buf, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t r = fmt_buf(buf, n, fmt, ap);
	va_end(ap);
	return r;
}

static void report(const char *prefix, const char *fmt, va_list ap)
{
	char buf[512];
	size_t at = 0;
	while (*prefix)
		buf[at++] = *prefix++;
	at += fmt_buf(buf + at, sizeof buf - at - 1, fmt, ap);
	buf[at++] = '\n';
	os_write(2, buf, at);
}

void xpfo_fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("xpfo: fatal: ", fmt, ap);
	va_end(ap);
	os_abort();
}

void xpfo_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("xpfo: error: ", fmt, ap);
	va_end(ap);
}

void xpfo_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	report("xpfo: warning: ", fmt, ap);
	va_end(ap);
}

void xpfo_verbose(const char *fmt, ...)
{
	if (!opt.verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	report("xpfo: ", fmt, ap);
	va_end(ap);
}
