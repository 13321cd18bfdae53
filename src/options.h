/* options.h - run-time options, read once from XPFO_OPTIONS=key=value,...
 * The table in options.c is the only list of options: name, type, range,
 * default and help text. */
#ifndef XPFO_OPTIONS_H
#define XPFO_OPTIONS_H

enum revoke_mode { REVOKE_BATCHED, REVOKE_EAGER, REVOKE_OFF };
enum backend_kind { BACKEND_AUTO, BACKEND_MPROTECT, BACKEND_PKEYS };
enum comp_mode { COMP_MODE_OFF, COMP_MODE_THREAD };
enum profile { PROFILE_DEFAULT, PROFILE_STRICT, PROFILE_LIGHT };
enum release_mode { RELEASE_AUTO, RELEASE_MPROTECT, RELEASE_UFFD, RELEASE_GUARD };

struct options {
	unsigned backend;     /* enum backend_kind */
	unsigned revoke;      /* enum revoke_mode */
	unsigned batch;       /* runs a gather holds before it is applied */
	unsigned batch_pages; /* pages a gather holds before it is applied */
	unsigned long purge;  /* under retain pressure, spans this long are released */
	unsigned long retain; /* bytes of revoked pages kept resident for reuse */
	unsigned reserve_gib; /* heap reservation, GiB (power of two) */
	unsigned reserve_given; /* reserve= was given: a smaller one is warned about */
	unsigned stats;       /* print statistics at exit */
	unsigned verbose;
	unsigned report;      /* report faults in the heap (SIGSEGV handler) */
	unsigned compartments; /* enum comp_mode */
	unsigned long max_vmas; /* VMA budget; 0: half of vm.max_map_count */
	unsigned release;     /* enum release_mode */
	unsigned release_given; /* release= was given: its failure is warned about */
	unsigned thp;         /* huge blocks on transparent huge pages, ending on 2 MiB */

	/* mitigations (set by the profile, each switchable) */
	unsigned profile;        /* enum profile */
	unsigned canary;         /* canary at the end of small slots */
	unsigned zero_on_free;   /* small slots zeroed when freed */
	unsigned junk;           /* fill new small allocations with 0xdb and freed ones with 0xdf */
	unsigned waf_check;      /* check freed slots stayed zero when reused */
	unsigned waf_bytes;      /* waf_check: the first N bytes and the last 8 (0: all) */
	unsigned random_slots;   /* random slot order in slabs */
	unsigned random_bases;   /* random heap base and segment placement */
	unsigned guard_slabs;    /* a guard page after every Nth slab (0: none) */
	unsigned guard_large;    /* a guard page after every page run */
	unsigned quarantine;     /* freed small slots a thread holds back */
	unsigned quarantine_large; /* freed page runs a thread holds back, revoked */
	unsigned keep_empty;     /* pages of empty slabs a thread heap keeps for reuse */
	unsigned seal;           /* the sealed page read-only after start */
	unsigned seal_metadata;  /* pkeys: metadata tagged with the allocator's key */
	unsigned root_key;       /* pkeys: a key reserved for root's pages (xpfo_lock_thread) */
	unsigned lock_segments;  /* segments reserved for a compartment at its lock */
};

/* the options live in the sealed page (internal.h) */
#define opt (xpfo_sealed.g.options)

/* Parse XPFO_OPTIONS from the environment; warns about bad entries. */
void options_init(void);
/* Where the parser's warnings go (xpfo_warn's format, src/fatal.h). */
typedef void (*options_warn_fn)(const char *fmt, ...);
/* Parse s ("key=value,...", may be NULL) into *out, which holds the
 * defaults: bad entries go to warn and keep the value; "help" writes the
 * table to help_fd (-1: nowhere).  Never allocates. */
void options_parse(const char *s, struct options *out, options_warn_fn warn, int help_fd);
/* The name of the first option whose value is outside its range, or NULL
 * (the invariant the parser keeps; the fuzzer checks it). */
const char *options_invalid(const struct options *o);
/* Write the option table (name, default, range, help) to fd. */
void options_print_help(int fd);

#endif
