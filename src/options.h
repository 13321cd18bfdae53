/* options.h - run-time options, read once from XPFO_OPTIONS=key=value,...
 * The table in options.c is the only list of options: name, type, range,
 * default and help text. */
#ifndef XPFO_OPTIONS_H
#define XPFO_OPTIONS_H

enum revoke_mode { REVOKE_BATCHED, REVOKE_EAGER, REVOKE_OFF };
enum backend_kind { BACKEND_AUTO, BACKEND_MPROTECT, BACKEND_PKEYS };
enum comp_mode { COMP_MODE_OFF, COMP_MODE_THREAD };

struct options {
	unsigned backend;     /* enum backend_kind */
	unsigned revoke;      /* enum revoke_mode */
	unsigned batch;       /* runs a gather holds before it is applied */
	unsigned batch_pages; /* pages a gather holds before it is applied */
	unsigned long purge;  /* under retain pressure, spans this long are released */
	unsigned long retain; /* bytes of revoked pages kept resident for reuse */
	unsigned reserve_gib; /* heap reservation, GiB (power of two) */
	unsigned stats;       /* print statistics at exit */
	unsigned verbose;
	unsigned report;      /* report faults in the heap (SIGSEGV handler) */
	unsigned compartments; /* enum comp_mode */
	unsigned long max_vmas; /* VMA budget; 0: half of vm.max_map_count */
};

extern struct options opt;

/* Parse XPFO_OPTIONS from the environment; warns about bad entries. */
void options_init(void);
/* Write the option table (name, default, range, help) to fd. */
void options_print_help(int fd);

#endif
