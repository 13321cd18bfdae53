/* stats.c - reading the counters: xpfo_stats_get, xpfo_stats_print (text) and
 * xpfo_stats_print_json. */
#include "internal.h"
#include "backing.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

static struct tstats merged; /* threads that exited (merge_lock) */
static pthread_mutex_t merge_lock = PTHREAD_MUTEX_INITIALIZER;

unsigned long xpfo_vma_limit(void);

/* XPFO_STATS_FIELDS (stats.h) must name every byte of struct xpfo_stats. */
#define STATS_SIZEOF(n) +sizeof(((struct xpfo_stats *)0)->n)
_Static_assert(0 XPFO_STATS_FIELDS(STATS_SIZEOF, STATS_SIZEOF, STATS_SIZEOF) ==
	       sizeof(struct xpfo_stats),
	       "a field of struct xpfo_stats is missing from XPFO_STATS_FIELDS");
#undef STATS_SIZEOF

static void add_tstats(struct tstats *to, const struct tstats *from)
{
	for (unsigned c = 0; c <= NCLASSES; c++) {
		to->allocs[c] += __atomic_load_n(&from->allocs[c], __ATOMIC_RELAXED);
		to->frees[c] += __atomic_load_n(&from->frees[c], __ATOMIC_RELAXED);
	}
	to->revoke_queued += __atomic_load_n(&from->revoke_queued, __ATOMIC_RELAXED);
	to->pages_queued += __atomic_load_n(&from->pages_queued, __ATOMIC_RELAXED);
	to->pages_cancelled += __atomic_load_n(&from->pages_cancelled, __ATOMIC_RELAXED);
	to->large_live_bytes += __atomic_load_n(&from->large_live_bytes, __ATOMIC_RELAXED);
}

void stats_merge_thread(struct tstate *t)
{
	pthread_mutex_lock(&merge_lock);
	add_tstats(&merged, &t->st);
	memset(&t->st, 0, sizeof t->st);
	pthread_mutex_unlock(&merge_lock);
}

void stats_fork_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&merge_lock);
	else
		pthread_mutex_unlock(&merge_lock);
}

static void sum_one(struct tstate *t, void *arg)
{
	add_tstats(arg, &t->st);
}

void stats_fill(struct xpfo_stats *s)
{
	memset(s, 0, sizeof *s);
	struct tstats sum;
	memset(&sum, 0, sizeof sum);
	pthread_mutex_lock(&merge_lock);
	add_tstats(&sum, &merged);
	pthread_mutex_unlock(&merge_lock);
	tstate_foreach(sum_one, &sum);
	uint64_t live = 0;
	for (unsigned c = 0; c < NCLASSES; c++) {
		s->class_size[c] = classes[c].size;
		s->class_allocs[c] = sum.allocs[c];
		s->class_frees[c] = sum.frees[c];
		s->allocs_small += sum.allocs[c];
		s->frees += sum.frees[c];
		live += (sum.allocs[c] - sum.frees[c]) * classes[c].size;
	}
	s->allocs_large = sum.allocs[NCLASSES];
	s->frees += sum.frees[NCLASSES];
	s->allocs = s->allocs_small + s->allocs_large;
#define L(f) __atomic_load_n(&g_stats.f, __ATOMIC_RELAXED)
#define X(n) s->n = L(n);
	XPFO_GLOBAL_COUNTERS(X)
#undef X
	s->revoke_queued += sum.revoke_queued;
	s->pages_queued += sum.pages_queued;
	s->pages_cancelled += sum.pages_cancelled;
	s->live_bytes = live + L(large_live_bytes) + sum.large_live_bytes;
	s->pages_quarantined = L(pages_quarantined);
	s->mapped_bytes = L(mapped_pages) << PAGE_SHIFT;
	s->peak_mapped_bytes = L(peak_mapped_pages) << PAGE_SHIFT;
	s->resident_bytes = L(resident_pages) << PAGE_SHIFT;
	s->peak_resident_bytes = L(peak_resident_pages) << PAGE_SHIFT;
	s->metadata_bytes = L(metadata_bytes);
	s->segments = L(segments);
	s->compartments = L(compartments);
	s->degraded = L(degraded);
	s->vma_budget = L(vma_budget);
	s->keys_in_use = L(keys_in_use);
	s->live_guards = L(live_guards);
	s->aliases = L(aliases);
	s->uffd_armed = L(uffd_armed);
	s->spare_bytes = L(spare_pages) << PAGE_SHIFT;
	secret_usage(&s->secret_mapped_bytes, &s->secret_resident_bytes);
#undef L
	long v = os_count_vmas(heap_base, heap_end);
	s->vmas = v > 0 ? (uint64_t)v : 0;
	s->vma_limit = xpfo_vma_limit();
	sandbox_stats_fill(s);
	s->size = sizeof *s;
}

XPFO_EXPORT int xpfo_stats_get(struct xpfo_stats *out, size_t size)
{
	XPFO_ENTRY;
	if (!out || size < sizeof out->size)
		return fail_int(EINVAL);
	tstate_get();
	struct xpfo_stats s;
	stats_fill(&s);
	if (size > sizeof s)
		size = sizeof s;
	s.size = size;
	memcpy(out, &s, size);
	return 0;
}

static void line(int fd, const char *fmt, ...)
{
	char buf[400];
	va_list ap;
	va_start(ap, fmt);
	size_t n = fmt_buf(buf, sizeof buf - 1, fmt, ap);
	va_end(ap);
	buf[n++] = '\n';
	os_write(fd, buf, n);
}

/* x / y with two decimals, as text */
static const char *ratio(char *buf, size_t n, uint64_t x, uint64_t y)
{
	if (!y)
		return "-";
	uint64_t c = x * 100 / y;
	fmt_str(buf, n, "%u.%u%u", (unsigned long)(c / 100), (unsigned long)(c / 10 % 10),
		(unsigned long)(c % 10));
	return buf;
}

static const char *revoke_name(void)
{
	return opt.revoke == REVOKE_BATCHED ? "batched" : opt.revoke == REVOKE_EAGER ? "eager" : "off";
}

/* The classes that were used, five to a line: size B: allocs/frees. */
static void print_classes(int fd, const struct xpfo_stats *s)
{
	char buf[256];
	size_t at = 0;
	unsigned on_line = 0;
	for (unsigned c = 0; c <= NCLASSES; c++) {
		if (c < NCLASSES && s->class_allocs[c]) {
			at += fmt_str(buf + at, sizeof buf - at, "%s%u B: %u/%u", on_line ? ", " : "",
				      s->class_size[c], s->class_allocs[c], s->class_frees[c]);
			on_line++;
		}
		if (on_line && (on_line == 5 || c == NCLASSES)) {
			line(fd, "xpfo:   classes      %s", buf);
			at = 0;
			on_line = 0;
		}
	}
}

/* The fields no summary line shows (N in XPFO_STATS_FIELDS), by name. */
static void print_more(int fd, const struct xpfo_stats *s)
{
	char buf[320];
	size_t at = 0;
#define NONE(n)
#define MORE(n) at += fmt_str(buf + at, sizeof buf - at, "%s" #n " %u", at ? ", " : "", s->n);
	XPFO_STATS_FIELDS(NONE, MORE, NONE)
#undef MORE
#undef NONE
	if (at)
		line(fd, "xpfo:   more         %s", buf);
}

static void print_summary(int fd, const struct xpfo_stats *s)
{
	char r1[32];
	line(fd, "xpfo:   allocations  %u (small %u, page runs %u), frees %u, live %u bytes",
	     s->allocs, s->allocs_small, s->allocs_large, s->frees, s->live_bytes);
	line(fd, "xpfo:   revocation   queued %u runs / %u pages, cancelled %u pages, revoked %u pages",
	     s->revoke_queued, s->pages_queued, s->pages_cancelled, s->pages_revoked);
	line(fd, "xpfo:   syscalls     revoke %u (%s pages each), grant %u, madvise %u, mmap %u, munmap %u",
	     s->revoke_syscalls, ratio(r1, sizeof r1, s->pages_revoked, s->revoke_syscalls),
	     s->grant_syscalls, s->madvise_syscalls, s->mmap_syscalls, s->munmap_syscalls);
	line(fd, "xpfo:   flush rounds %u (%u with another thread live): protect %u, purge %u, "
	     "guard %u, vector %u, unmap %u", s->flush_rounds, s->flush_rounds_shared,
	     s->flush_rounds_protect, s->flush_rounds_purge, s->flush_rounds_guard,
	     s->flush_rounds_vector, s->flush_rounds_unmap);
	line(fd, "xpfo:   flushes      %u (full %u, explicit %u, thread exit %u, reuse %u, eager %u, other %u)",
	     s->flushes, s->flush_full, s->flush_explicit, s->flush_thread_exit, s->flush_reuse,
	     s->flush_eager, s->flush_other);
	line(fd, "xpfo:   compartments %u live, %u opened, %u closed, %u transfers, %u switch flushes, %u violations reported",
	     s->compartments, s->compartment_opens, s->compartment_closes, s->transfers, s->flush_switch,
	     s->violations);
	if (pkeys_on)
		line(fd, "xpfo:   pkeys        %u keys held by compartments, %u evictions, %u enters/leaves",
		     s->keys_in_use, s->key_evictions, s->compartment_switches);
	sandbox_stats_print(fd);
	line(fd, "xpfo:   failures     %u revocations failed, %u pages quarantined, %u slot checks skipped, "
	     "%u compartment closes failed", s->revoke_failures, s->pages_quarantined,
	     s->touches_skipped, s->close_failures);
	line(fd, "xpfo:   memory       mapped %u KiB (peak %u), resident %u KiB (peak %u), purged %u pages in %u calls, metadata %u KiB",
	     s->mapped_bytes >> 10, s->peak_mapped_bytes >> 10, s->resident_bytes >> 10,
	     s->peak_resident_bytes >> 10, s->pages_purged, s->purges, s->metadata_bytes >> 10);
	line(fd, "xpfo:   address      %u segments, %u VMAs in the heap (vm.max_map_count %u, budget %u%s), %u live guard pages (%u not made)",
	     s->segments, s->vmas, s->vma_limit, s->vma_budget, s->degraded ? ", over it: degraded" : "",
	     s->live_guards, s->guards_skipped);
	if (s->secret_mapped_bytes || s->aliases || s->alias_revocations)
		line(fd, "xpfo:   secret       %u KiB mapped, %u KiB resident; %u runs shared, %u alias revocations",
		     s->secret_mapped_bytes >> 10, s->secret_resident_bytes >> 10, s->aliases,
		     s->alias_revocations);
	if (s->uffd_armed || s->spans_released_uffd || s->uffd_faults)
		line(fd, "xpfo:   uffd         %s; %u spans released watched, %u faults on missing pages "
		     "(%u filled), %u userfaultfd calls", s->uffd_armed ? "armed" : "not armed",
		     s->spans_released_uffd, s->uffd_faults, s->uffd_fills, s->uffd_syscalls);
}

XPFO_EXPORT void xpfo_stats_print(int fd)
{
	XPFO_ENTRY;
	struct xpfo_stats s;
	tstate_get();
	stats_fill(&s);
	const char *note = xpfo_sealed.g.backend_note;
	line(fd, "xpfo: stats (pid %d, backend %s%s%s%s, revoke=%s, batch=%u)", (long)os_getpid(),
	     xpfo_backend(), note ? " (" : "", note ? note : "", note ? ")" : "", revoke_name(),
	     (unsigned long)opt.batch);
	print_summary(fd, &s);
	print_more(fd, &s);
	print_classes(fd, &s);
}

/* The JSON report is assembled in a stack buffer of PIPE_BUF bytes and
 * written when it is full or done: the whole object (under 2 KiB on a
 * typical run) is then one write, which a pipe keeps whole even when other
 * processes of the run write their reports to the same stderr at once. */
struct jout {
	int fd;
	size_t at;
	char buf[4096];
};

static void jout_flush(struct jout *j)
{
	os_write(j->fd, j->buf, j->at);
	j->at = 0;
}

static void jout_put(struct jout *j, const char *fmt, ...)
{
	char tmp[160];
	va_list ap;
	va_start(ap, fmt);
	size_t n = fmt_buf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (j->at + n > sizeof j->buf)
		jout_flush(j);
	memcpy(j->buf + j->at, tmp, n);
	j->at += n;
}

static void jout_char(struct jout *j, unsigned char c)
{
	if (c == '"' || c == '\\')
		jout_put(j, "\\%s", c == '"' ? "\"" : "\\");
	else if (c < 0x20)
		jout_put(j, "\\u00%s%x", c < 0x10 ? "0" : "", (unsigned long)c);
	else
		jout_put(j, "%s", (char[2]){ (char)c, 0 });
}

static void jout_quoted(struct jout *j, const char *s)
{
	jout_put(j, "\"");
	for (; *s; s++)
		jout_char(j, (unsigned char)*s);
	jout_put(j, "\"");
}

/* A JSON string, or null; quotes, backslashes and control bytes escaped. */
static void jout_str(struct jout *j, const char *s)
{
	if (s)
		jout_quoted(j, s);
	else
		jout_put(j, "null");
}

static void jout_array(struct jout *j, const char *name, const uint64_t *v)
{
	jout_put(j, ", \"%s\": [", name);
	for (unsigned c = 0; c < XPFO_STATS_CLASSES; c++)
		jout_put(j, "%s%u", c ? ", " : "", v[c]);
	jout_put(j, "]");
}

/* "xpfo_stats": the format's version, and a mark to find the line by. */
static void jout_header(struct jout *j)
{
	jout_put(j, "{\"xpfo_stats\": 1, \"pid\": %d, \"backend\": ", (long)os_getpid());
	jout_str(j, xpfo_backend());
	jout_put(j, ", \"backend_note\": ");
	jout_str(j, xpfo_sealed.g.backend_note);
	jout_put(j, ", \"revoke\": \"%s\", \"batch\": %u", revoke_name(),
		 (unsigned long)opt.batch);
}

XPFO_EXPORT void xpfo_stats_print_json(int fd)
{
	XPFO_ENTRY;
	struct xpfo_stats s;
	struct jout j = { .fd = fd, .at = 0 };
	tstate_get();
	stats_fill(&s);
	jout_header(&j);
#define SCALAR(n) jout_put(&j, ", \"" #n "\": %u", s.n);
#define ARRAY(n) jout_array(&j, #n, s.n);
	XPFO_STATS_FIELDS(SCALAR, SCALAR, ARRAY)
#undef SCALAR
#undef ARRAY
	jout_put(&j, "}\n");
	jout_flush(&j);
}
