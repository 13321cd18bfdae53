/* main.c - xb-work: run one allocation workload.
 *
 *	xb-work list
 *	xb-work NAME [-t threads] [-n count] [-r rounds] [-a min] [-b max] [-s seed]
 *	             [-w window] [-l big-every] [-c big-min] [-d big-max]
 *
 * -w, -l, -c, -d apply to the workloads whose help names them: a window of
 * live objects per thread, and one object in -l of -c..-d bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xbw.h"

static const struct xbw_workload *const workloads[] = {
	&xbw_larson, &xbw_xmalloc, &xbw_scratch, &xbw_tree, &xbw_hash, &xbw_frag,
	&xbw_prodcons, &xbw_threadchurn, &xbw_bigblock, &xbw_crossmix,
};
#define NWORK (sizeof workloads / sizeof workloads[0])

void xbw_die(const char *fmt, ...)
{
	va_list ap;

	fputs("xb-work: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void xbw_metric(const char *key, const char *fmt, ...)
{
	va_list ap;

	printf("xbw: %s=", key);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

double xbw_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

long xbw_rss_kb(void)
{
	long size = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &rss) != 2)
		rss = -1;
	fclose(f);
	return rss < 0 ? -1 : rss * (sysconf(_SC_PAGESIZE) / 1024);
}

long xbw_vmas(void)
{
	char buf[4096];
	long lines = 0;
	size_t got;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while ((got = fread(buf, 1, sizeof buf, f)) > 0)
		for (size_t i = 0; i < got; i++)
			lines += buf[i] == '\n';
	fclose(f);
	return lines;
}

void xbw_stamp(void *p, size_t n, uint64_t tag)
{
	char *c = p;

	if (n <= 256) {
		for (size_t i = 0; i + 8 <= n; i += 8)
			memcpy(c + i, &tag, 8);
	} else {
		for (size_t i = 4096; i + 8 <= n; i += 4096)
			memcpy(c + i, &tag, 8);
	}
	memcpy(c + n - 8, &tag, 8);
	memcpy(c, &tag, 8); /* last: it wins where the two overlap (n < 16) */
}

void xbw_check(const char *who, const void *p, size_t n, uint64_t tag)
{
	uint64_t a, b;

	memcpy(&a, p, 8);
	memcpy(&b, (const char *)p + n - 8, 8);
	if (n < 16)
		b = tag; /* overlaps the first word: checked through it */
	if (a != tag || b != tag)
		xbw_die("%s: corrupted object %p (%zu bytes): tag %016llx, found "
			"%016llx / %016llx",
			who, p, n, (unsigned long long)tag, (unsigned long long)a,
			(unsigned long long)b);
}

void *xbw_alloc(const char *who, size_t n)
{
	void *p = malloc(n);

	if (!p)
		xbw_die("%s: malloc(%zu) failed: %s", who, n, strerror(errno));
	return p;
}

/* Each thread runs on its own copy of its argument, alone in its cache
 * lines, copied back after the join: the workers write their state (a
 * random generator's, counters) at every step, and side by side in the
 * caller's array those writes bounced the lines between CPUs, so a run's
 * time depended on where the allocator had put that small array (larson:
 * 64% of its worker function's samples were on these lines, under glibc
 * and xpfo alike). */
#define XBW_LINE 128

void xbw_start_threads(int n, void *(*fn)(void *), void *args, size_t argsize)
{
	size_t stride = (argsize + XBW_LINE - 1) & ~(size_t)(XBW_LINE - 1);
	pthread_t *th = xbw_alloc("threads", (size_t)n * sizeof *th + 8);
	char *raw = xbw_alloc("threads", (size_t)n * stride + XBW_LINE);
	char *own = (char *)(((uintptr_t)raw + XBW_LINE - 1) & ~(uintptr_t)(XBW_LINE - 1));

	for (int i = 0; i < n; i++) {
		memcpy(own + (size_t)i * stride, (char *)args + (size_t)i * argsize, argsize);
		int e = pthread_create(&th[i], NULL, fn, own + (size_t)i * stride);
		if (e)
			xbw_die("pthread_create: %s", strerror(e));
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < n; i++)
		memcpy((char *)args + (size_t)i * argsize, own + (size_t)i * stride, argsize);
	free(raw);
	free(th);
}

static void usage(FILE *f)
{
	fputs("usage: xb-work list\n"
	      "       xb-work NAME [-t threads] [-n count] [-r rounds] [-a min-size]\n"
	      "                    [-b max-size] [-s seed] [-w window] [-l big-every]\n"
	      "                    [-c big-min] [-d big-max]\n"
	      "Runs one fixed-size allocation workload and prints xbw: key=value\n"
	      "lines.  `xb-work list` describes every workload and its defaults.\n",
	      f);
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "xb-work: bad value for %s: '%s' (want %ld..%ld)\n",
			opt, s, lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const struct xbw_workload *w = NULL;
	struct xbw_args a;
	double t0, t1;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NWORK; i++) {
			const struct xbw_args *d = &workloads[i]->defaults;
			printf("%-8s %s\n         defaults: -t %d -n %ld -r %ld -a %zu -b %zu",
			       workloads[i]->name, workloads[i]->help, d->threads, d->n,
			       d->rounds, d->min, d->max);
			if (d->window)
				printf(" -w %ld", d->window);
			if (d->big_max)
				printf(" -l %ld -c %zu -d %zu", d->big_every, d->big_min,
				       d->big_max);
			putchar('\n');
		}
		return 0;
	}
	for (size_t i = 0; i < NWORK; i++)
		if (!strcmp(argv[1], workloads[i]->name))
			w = workloads[i];
	if (!w) {
		fprintf(stderr, "xb-work: unknown workload '%s' (try: xb-work list)\n",
			argv[1]);
		return 2;
	}
	a = w->defaults;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i];
		if (o[0] != '-' || !o[1] || o[2] || i + 1 >= argc) {
			fprintf(stderr, "xb-work: bad argument '%s'\n", o);
			usage(stderr);
			return 2;
		}
		const char *v = argv[++i];
		switch (o[1]) {
		case 't': a.threads = (int)parse_num(o, v, 1, 256); break;
		case 'n': a.n = parse_num(o, v, 1, 1L << 40); break;
		case 'r': a.rounds = parse_num(o, v, 1, 1L << 30); break;
		case 'a': a.min = (size_t)parse_num(o, v, 8, 1L << 30); break;
		case 'b': a.max = (size_t)parse_num(o, v, 8, 1L << 30); break;
		case 's': a.seed = (uint64_t)parse_num(o, v, 0, 1L << 62); break;
		case 'w': a.window = parse_num(o, v, 2, 1L << 24); break;
		case 'l': a.big_every = parse_num(o, v, 0, 1L << 30); break;
		case 'c': a.big_min = (size_t)parse_num(o, v, 8, 1L << 30); break;
		case 'd': a.big_max = (size_t)parse_num(o, v, 8, 1L << 30); break;
		default:
			fprintf(stderr, "xb-work: unknown option '%s'\n", o);
			return 2;
		}
	}
	if (a.min > a.max) {
		fprintf(stderr, "xb-work: -a %zu is larger than -b %zu\n", a.min, a.max);
		return 2;
	}
	if (a.big_every && a.big_min > a.big_max) {
		fprintf(stderr, "xb-work: -c %zu is larger than -d %zu\n", a.big_min, a.big_max);
		return 2;
	}
	printf("xbw: workload=%s\nxbw: args=-t %d -n %ld -r %ld -a %zu -b %zu -s %llu",
	       w->name, a.threads, a.n, a.rounds, a.min, a.max,
	       (unsigned long long)a.seed);
	if (a.window)
		printf(" -w %ld", a.window);
	if (a.big_every)
		printf(" -l %ld -c %zu -d %zu", a.big_every, a.big_min, a.big_max);
	putchar('\n');
	t0 = xbw_now();
	rc = w->run(&a);
	t1 = xbw_now();
	xbw_metric("seconds", "%.6f", t1 - t0);
	xbw_metric("rss_end_kb", "%ld", xbw_rss_kb());
	return rc;
}
