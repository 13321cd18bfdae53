/* options.c - the run-time options table and its parser.  Runs before the
 * heap exists, so it allocates nothing. */
#include "base.h"

#define GATHER_MAX_RUNS 4096 /* GATHER_MAX in internal.h */

#include <stddef.h>
#include <string.h>

union sealed_page xpfo_sealed __attribute__((aligned(4096))) = { .g = { .options = {
	.backend = BACKEND_AUTO,
	.revoke = REVOKE_BATCHED,
	.batch = 1024,
	.batch_pages = 4096,
	.purge = 65536,
	.retain = 4ul << 20, /* 32 MiB cost hash and python 6-14 MiB of RSS */
	.reserve_gib = 64,
	.stats = 0,
	.verbose = 0,
	.report = 1,
	.compartments = COMP_MODE_OFF,
	.seal_metadata = 1,
	.root_key = 1,
	.lock_segments = 64,
	.thp = 1,
} } };

/* What each profile turns on; options given after it override it. */
static void profile_apply(struct options *o, unsigned p)
{
	bool strict = p == PROFILE_STRICT, light = p == PROFILE_LIGHT;
	o->profile = p;
	o->canary = !light;
	o->zero_on_free = !light;
	o->junk = 0;
	o->waf_check = !light; /* default: sampled (waf_bytes) */
	o->waf_bytes = strict ? 0 : 64;
	/* strict only: a random slot hands objects allocated one
	 * after another scattered places in their slab, and programs that
	 * walk them in allocation order pay for it: python 60000 3.0-3.3 s
	 * against 1.9-2.0 in order (glibc 1.9-2.1), hash -t 2 0.43-0.47 s
	 * against 0.35-0.37; choosing among only the two lowest free slots of
	 * a word still took 2.5 s, so there is no cheap middle */
	o->random_slots = strict;
	o->random_bases = !light;
	o->guard_slabs = strict ? 1 : light ? 0 : 64;
	o->guard_large = !light;
	o->quarantine = strict ? 1024 : 0;
	o->quarantine_large = strict ? 64 : 0;
	/* at 64 pages hash -t 2 faults its slabs in again each round
	 * (28,700 faults against glibc's 11,200) */
	o->keep_empty = strict ? 64 : 4096;
	o->seal = 1;
}

enum opt_type { T_BOOL, T_UINT, T_ULONG, T_ENUM };

struct opt_desc {
	const char *name;
	enum opt_type type;
	size_t offset;
	unsigned long min, max;
	const char *const *names; /* T_ENUM: value i is names[i] */
	const char *help;
};

static const char *const backend_names[] = { "auto", "mprotect", "pkeys", NULL };
static const char *const revoke_names[] = { "batched", "eager", "off", NULL };
static const char *const comp_names[] = { "off", "thread", NULL };
static const char *const release_names[] = { "auto", "mprotect", "uffd", "guard", NULL };
static const char *const profile_names[] = { "default", "strict", "light", NULL };
/* an on/off option with more values: a bare "stats" is "stats=1" */
static const char *const stats_names[] = { "0", "1", "json", NULL };

#define OFF(f) offsetof(struct options, f)
static const struct opt_desc table[] = {
	{ "backend", T_ENUM, OFF(backend), 0, 2, backend_names,
	  "protection backend: auto (pkeys when the CPU and kernel have them), mprotect, pkeys" },
	{ "revoke", T_ENUM, OFF(revoke), 0, 2, revoke_names,
	  "batched: queue revocations per thread and apply them in coalesced batches; "
	  "eager: apply each at once (the baseline); off: never revoke (measurement only, unsafe)" },
	{ "batch", T_UINT, OFF(batch), 1, GATHER_MAX_RUNS, NULL,
	  "frees a thread queues before its gather is applied (those taken back by its next "
	  "malloc count too)" },
	{ "batch_pages", T_UINT, OFF(batch_pages), 1, 1u << 20, NULL,
	  "freed pages a thread queues before its gather is applied" },
	{ "purge", T_ULONG, OFF(purge), 4096, 1ul << 40, NULL,
	  "bytes: once more than `retain` bytes of revoked pages are resident, revoked spans "
	  "at least this long are released to the OS (spans of 1 MiB or more always are)" },
	{ "retain", T_ULONG, OFF(retain), 0, 1ul << 40, NULL,
	  "bytes of revoked free pages kept resident for reuse; past it a flush purges them all "
	  "(default 4 MiB)" },
	/* at most 2^45 bytes: the reservation is aligned to its size, and
	 * 2^46 aligned (mapping size + align for a moment) cannot be placed in
	 * x86-64's 47-bit user address space */
	{ "reserve", T_UINT, OFF(reserve_gib), 1, 32768, NULL,
	  "GiB of address space reserved for the heap (a power of two); a smaller one, down "
	  "to 16 MiB, is taken when it does not fit, as under ulimit -v (a warning when "
	  "given or under 1 GiB)" },
	{ "stats", T_ENUM, OFF(stats), 0, 2, stats_names,
	  "print statistics to stderr at exit: 1 as text, json as one JSON object" },
	{ "verbose", T_BOOL, OFF(verbose), 0, 1, NULL, "print what xpfo decides at start" },
	{ "report", T_BOOL, OFF(report), 0, 1, NULL,
	  "report faults on heap pages (owner, thread, compartment) before the default action" },
	{ "max_vmas", T_ULONG, OFF(max_vmas), 0, 1ul << 31, NULL,
	  "VMAs the process may reach before small revocations degrade to releases "
	  "(0: half of vm.max_map_count)" },
	{ "release", T_ENUM, OFF(release), 0, 3, release_names,
	  "how a revoked span is taken away: mprotect (PROT_NONE: each boundary splits a VMA); "
	  "uffd (its frames released, the pages watched by a userfaultfd: a stale access is "
	  "reported, no VMA is split); guard (root's spans: guard markers installed, frames "
	  "released, no VMA split, one call; Linux 6.13, else mprotect); auto: guard where the "
	  "kernel has it, else mprotect, the userfaultfd armed only when the VMA budget is "
	  "exceeded, to watch what is released there (unavailable: spans stay protected)" },
	{ "thp", T_BOOL, OFF(thp), 0, 1, NULL,
	  "huge blocks (over 2 MiB) may be backed by transparent huge pages (MADV_HUGEPAGE): "
	  "such a block ends on a 2 MiB boundary, its guard after it, and the pages before it "
	  "in its first 2 MiB are its owner's too, unused, so that a revocation and a grant "
	  "change whole huge pages (no page-by-page faults after them)" },
	{ "profile", T_ENUM, OFF(profile), 0, 2, profile_names,
	  "mitigation set: default (what costs little), strict (everything), light (the "
	  "fewest); the mitigation options below override it" },
	{ "canary", T_BOOL, OFF(canary), 0, 1, NULL,
	  "a random canary (leading zero byte) ends every small slot, checked at free and realloc" },
	{ "zero_on_free", T_BOOL, OFF(zero_on_free), 0, 1, NULL, "zero small slots when they are freed" },
	{ "junk", T_BOOL, OFF(junk), 0, 1, NULL,
	  "fill new small allocations with 0xdb and freed ones with 0xdf (instead of zero)" },
	{ "waf_check", T_BOOL, OFF(waf_check), 0, 1, NULL,
	  "check that a freed small slot was not written before it is reused (needs zero_on_free)" },
	{ "waf_bytes", T_UINT, OFF(waf_bytes), 0, 1u << 16, NULL,
	  "waf_check looks at the first N bytes and the last 8 of a freed slot (0: every byte; "
	  "default profile 64, strict 0)" },
	{ "random_slots", T_BOOL, OFF(random_slots), 0, 1, NULL,
	  "random slot order within slabs (strict profile; default and light: in address order)" },
	{ "random_bases", T_BOOL, OFF(random_bases), 0, 1, NULL,
	  "random placement of the heap and of segments in it" },
	{ "guard_slabs", T_UINT, OFF(guard_slabs), 0, 1u << 16, NULL,
	  "an inaccessible guard page after every Nth slab (0: none)" },
	{ "guard_large", T_BOOL, OFF(guard_large), 0, 1, NULL,
	  "an inaccessible guard page after every page-run allocation" },
	{ "quarantine", T_UINT, OFF(quarantine), 0, 65536, NULL,
	  "freed small slots each thread holds back before reuse (random eviction; 0: none)" },
	{ "quarantine_large", T_UINT, OFF(quarantine_large), 0, 4096, NULL,
	  "freed page runs each thread holds back, revoked, before reuse (0: none)" },
	{ "keep_empty", T_UINT, OFF(keep_empty), 0, 65536, NULL,
	  "pages of empty slabs each thread keeps, accessible to its compartment, for its next "
	  "slabs of their class (past 64, fresh pages it takes retire as many)" },
	{ "seal", T_BOOL, OFF(seal), 0, 1, NULL,
	  "make the options and the allocator's global table read-only after start-up" },
	{ "seal_metadata", T_BOOL, OFF(seal_metadata), 0, 1, NULL,
	  "pkeys backend: the metadata carries the allocator's key, open only inside xpfo's "
	  "entry points (hardened_malloc's seal_metadata)" },
	{ "root_key", T_BOOL, OFF(root_key), 0, 1, NULL,
	  "pkeys backend: reserve a protection key at start for root's pages, so that "
	  "xpfo_lock_thread can confine one thread while others run (0: one more key for "
	  "compartments, and the lock needs a single thread)" },
	{ "lock_segments", T_UINT, OFF(lock_segments), 1, 65536, NULL,
	  "segments (4 MiB of address space each) reserved for a compartment at its first "
	  "xpfo_lock_thread: its only ones from then on (its allocations fail with ENOMEM past "
	  "them), and no one else's" },
	{ "compartments", T_ENUM, OFF(compartments), 0, 1, comp_names,
	  "thread: every thread but the first runs in a compartment of its own (a diagnostic "
	  "for share-nothing programs; most programs share memory between threads and trip it)" },
};
#define NOPT (sizeof table / sizeof table[0])

static int parse_ulong(const char *s, size_t n, unsigned long *out)
{
	unsigned long v = 0;
	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (~0ul - 9) / 10)
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = v;
	return 0;
}

static void set(struct options *o, const struct opt_desc *d, unsigned long v)
{
	char *base = (char *)o + d->offset;
	if (d->type == T_ULONG)
		*(unsigned long *)base = v;
	else
		*(unsigned *)base = (unsigned)v;
}

static void apply(struct options *o, const char *key, size_t klen, const char *val, size_t vlen,
		  options_warn_fn warn, int help_fd)
{
	char k[32], v[64];
	fmt_str(k, klen + 1 < sizeof k ? klen + 1 : sizeof k, "%s", key);
	fmt_str(v, vlen + 1 < sizeof v ? vlen + 1 : sizeof v, "%s", val);
	for (size_t i = 0; i < NOPT; i++) {
		const struct opt_desc *d = &table[i];
		if (strlen(d->name) != klen || memcmp(d->name, key, klen))
			continue;
		unsigned long x;
		if (d->type == T_ENUM && d->names == stats_names && vlen == 0 && val == key + klen) {
			set(o, d, 1);
			return;
		}
		if (d->type == T_ENUM) {
			for (unsigned j = 0; d->names[j]; j++)
				if (strlen(d->names[j]) == vlen && !memcmp(d->names[j], val, vlen)) {
					set(o, d, j);
					if (d->offset == OFF(release))
						o->release_given = 1;
					return;
				}
			warn("option %s: unknown value \"%s\", keeping the default", k, v);
			return;
		}
		if (d->type == T_BOOL && vlen == 0 && val == key + klen)
			x = 1; /* "stats" alone turns it on; "stats=" is a bad value */
		else if (parse_ulong(val, vlen, &x) || x < d->min || x > d->max) {
			warn("option %s: bad value \"%s\" (expected %u..%u), keeping the default",
				  k, v, d->min, d->max);
			return;
		}
		if (!strcmp(d->name, "profile"))
			return; /* applied first */
		if (!strcmp(d->name, "reserve") && (x & (x - 1))) {
			warn("option reserve: %u is not a power of two, keeping the default", x);
			return;
		}
		set(o, d, x);
		if (!strcmp(d->name, "reserve"))
			o->reserve_given = 1;
		return;
	}
	if (klen == 4 && !memcmp(key, "help", 4)) {
		if (help_fd >= 0)
			options_print_help(help_fd);
		return;
	}
	warn("unknown option \"%s\" ignored (XPFO_OPTIONS=help lists them)", k);
}

extern char **environ;

/* the profile whose name v starts with (up to a comma) */
static void profile_named(struct options *o, const char *v)
{
	for (unsigned j = 0; profile_names[j]; j++) {
		size_t n = strlen(profile_names[j]);
		if (!strncmp(v, profile_names[j], n) && (v[n] == ',' || !v[n]))
			profile_apply(o, j);
	}
}

/* the profile first, whatever its place, so single options override it */
static void profile_find(struct options *o, const char *s)
{
	for (const char *p = s; *p; p++)
		if ((p == s || p[-1] == ',') && !strncmp(p, "profile=", 8))
			profile_named(o, p + 8);
}

void options_parse(const char *s, struct options *out, options_warn_fn warn, int help_fd)
{
	profile_apply(out, PROFILE_DEFAULT);
	if (!s)
		return;
	profile_find(out, s);
	while (*s) {
		const char *end = s;
		while (*end && *end != ',')
			end++;
		const char *eq = s;
		while (eq < end && *eq != '=')
			eq++;
		if (end > s)
			apply(out, s, (size_t)(eq - s), eq < end ? eq + 1 : eq,
			      eq < end ? (size_t)(end - eq - 1) : 0, warn, help_fd);
		s = *end ? end + 1 : end;
	}
}

const char *options_invalid(const struct options *o)
{
	for (size_t i = 0; i < NOPT; i++) {
		const struct opt_desc *d = &table[i];
		const char *p = (const char *)o + d->offset;
		unsigned long v = d->type == T_ULONG ? *(const unsigned long *)p
						     : *(const unsigned *)p;
		if (v < d->min || v > d->max)
			return d->name;
		if (d->type == T_ENUM && !d->names[v])
			return d->name; /* max must stay inside names[] */
	}
	if (o->reserve_gib & (o->reserve_gib - 1))
		return "reserve";
	return NULL;
}

void options_init(void)
{
	const char *s = NULL;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "XPFO_OPTIONS=", 13)) {
			s = *e + 13;
			break;
		}
	/* As glibc does with its tunables: whoever runs a set-user-ID program
	 * must not be able to turn its hardening off. */
	if (s && os_is_privileged()) {
		xpfo_warn("XPFO_OPTIONS ignored: privileged (set-user-ID or set-group-ID) program");
		s = NULL;
	}
	options_parse(s, &opt, xpfo_warn, 2);
	if (opt.revoke == REVOKE_OFF)
		xpfo_warn("revoke=off: freed pages stay reachable; for measurement only");
}

void options_print_help(int fd)
{
	char line[512];
	size_t n = fmt_str(line, sizeof line,
			   "XPFO_OPTIONS=key=value,... (comma separated)\n");
	os_write(fd, line, n);
	for (size_t i = 0; i < NOPT; i++) {
		const struct opt_desc *d = &table[i];
		char range[128];
		const char *p = (const char *)&opt + d->offset;
		unsigned long cur = d->type == T_ULONG ? *(const unsigned long *)p
						       : *(const unsigned *)p;
		if (d->type == T_ENUM) {
			size_t at = 0;
			for (unsigned j = 0; d->names[j]; j++)
				at += fmt_str(range + at, sizeof range - at, "%s%s",
					      j ? "|" : "", d->names[j]);
			n = fmt_str(line, sizeof line, "  %s=%s (default %s)\n      %s\n",
				    d->name, range, d->names[cur], d->help);
		} else {
			n = fmt_str(line, sizeof line, "  %s=%u..%u (default %u)\n      %s\n",
				    d->name, d->min, d->max, cur, d->help);
		}
		os_write(fd, line, n);
	}
}
