/* statsprint.c - xpfo_stats_print_json to a pipe, from a linked program.
 *
 * Checks that the JSON report is one line, one object, brackets balanced
 * outside strings; that it names the fields it should with the values
 * xpfo_stats_get gives for the ones that cannot change in between (the
 * class sizes, vm.max_map_count, the VMA budget); that printing it does not
 * allocate (xpfo's own allocation counter does not move); and that a bad fd
 * is harmless.  stats-json.sh checks the full field list against xpfo.h.
 * The text report's flush-rounds line names the mechanisms; a caller built
 * before the per-mechanism fields (a smaller size) gets the struct up to
 * its size and nothing written past it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static char out[65536];

/* Print into a pipe and read it all back (the report is far below a pipe's
 * capacity, so one thread can do both). */
static size_t capture(void (*print)(int))
{
	int p[2];
	if (pipe(p))
		tu_hard_error("pipe: %s", strerror(errno));
	print(p[1]);
	close(p[1]);
	size_t n = 0;
	ssize_t r;
	while (n < sizeof out - 1 && (r = read(p[0], out + n, sizeof out - 1 - n)) > 0)
		n += (size_t)r;
	close(p[0]);
	out[n] = 0;
	return n;
}

/* One line; {} and [] balance outside strings and never go negative. */
static void check_shape(size_t n)
{
	int depth = 0, bad = 0, in_str = 0;
	CHECK(n > 2 && out[0] == '{' && out[n - 2] == '}' && out[n - 1] == '\n',
	      "not one object and a newline: %.80s ... %.20s", out, n > 20 ? out + n - 20 : out);
	for (size_t i = 0; i < n; i++) {
		char c = out[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
			continue;
		}
		in_str = c == '"';
		depth += (c == '{' || c == '[') - (c == '}' || c == ']');
		bad |= depth < 0 || (c == '\n' && i != n - 1);
	}
	CHECK(!bad && depth == 0 && !in_str, "unbalanced or multi-line JSON: %s", out);
}

/* "key": value as the report writes it (value: text to match exactly). */
static void check_value(const char *key, const char *value)
{
	char want[1024];
	snprintf(want, sizeof want, "\"%s\": %s", key, value);
	CHECK(strstr(out, want) != NULL, "no %s in the JSON report: %s", want, out);
}

static void check_values(const struct xpfo_stats *s)
{
	char v[1024];
	size_t at = 0;
	at += (size_t)snprintf(v, sizeof v, "[");
	for (unsigned c = 0; c < XPFO_STATS_CLASSES; c++)
		at += (size_t)snprintf(v + at, sizeof v - at, "%s%llu", c ? ", " : "",
				       (unsigned long long)s->class_size[c]);
	snprintf(v + at, sizeof v - at, "]");
	check_value("class_size", v);
	snprintf(v, sizeof v, "%llu,", (unsigned long long)s->vma_limit);
	check_value("vma_limit", v);
	snprintf(v, sizeof v, "%llu,", (unsigned long long)s->vma_budget);
	check_value("vma_budget", v);
	snprintf(v, sizeof v, "\"%s\",", xpfo_backend());
	check_value("backend", v);
	check_value("size", "");
	check_value("class_allocs", "[");
	check_value("guards_skipped", "");
	check_value("flush_rounds_protect", "");
	check_value("flush_rounds_unmap", "");
}

static void check_text(void)
{
	capture(xpfo_stats_print);
	const char *l = strstr(out, "xpfo:   flush rounds ");
	CHECK(l != NULL, "no flush rounds line in the text report: %s", out);
	const char *end = l ? strchr(l, '\n') : NULL;
	static const char *const mech[] = { "protect ", "purge ", "guard ", "vector ", "unmap " };
	for (unsigned k = 0; end && k < sizeof mech / sizeof *mech; k++) {
		const char *m = strstr(l, mech[k]);
		CHECK(m && m < end, "the flush rounds line names no %s: %.*s", mech[k],
		      (int)(end - l), l);
	}
}

/* An older caller's struct: up to flush_rounds_shared. */
static void check_old_size(void)
{
	struct xpfo_stats s;
	size_t old = offsetof(struct xpfo_stats, flush_rounds_protect);
	memset(&s, 0xee, sizeof s);
	CHECK(xpfo_stats_get(&s, old) == 0, "xpfo_stats_get of %zu bytes failed: %s", old,
	      strerror(errno));
	CHECK(s.size == old, "xpfo_stats_get of %zu bytes set size %llu", old,
	      (unsigned long long)s.size);
	const unsigned char *past = (const unsigned char *)&s + old;
	size_t bad = 0;
	for (size_t i = 0; i < sizeof s - old; i++)
		bad += past[i] != 0xee;
	CHECK(bad == 0, "xpfo_stats_get of %zu bytes wrote %zu bytes past them", old, bad);
}

int main(void)
{
	tu_prog = "statsprint";
	tu_timeout(60);
	void *keep[64];
	for (unsigned i = 0; i < 64; i++)
		keep[i] = malloc(16u << (i % 12));
	struct xpfo_stats a, b;
	if (xpfo_stats_get(&a, sizeof a))
		tu_hard_error("xpfo_stats_get: %s", strerror(errno));
	size_t n = capture(xpfo_stats_print_json);
	if (xpfo_stats_get(&b, sizeof b))
		tu_hard_error("xpfo_stats_get: %s", strerror(errno));
	CHECK(b.allocs == a.allocs, "xpfo_stats_print_json allocated: %llu allocations, then %llu",
	      (unsigned long long)a.allocs, (unsigned long long)b.allocs);
	fprintf(stderr, "statsprint: %zu bytes of JSON\n", n);
	check_shape(n);
	check_values(&a);
	check_text();
	check_old_size();
	xpfo_stats_print_json(-1); /* fd closed or never open: nothing happens */
	for (unsigned i = 0; i < 64; i++)
		free(keep[i]);
	tu_exit();
}
