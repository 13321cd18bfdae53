# tests: the test suite (make check).  See tests/README for what each checks.
#
# C tests come in two builds from one source: linked against libxpfo.la
# (xpfo required), and "-plain" (not linked, tests/preload/local.mk) for the
# LD_PRELOAD runs; the plain builds also run against glibc to validate the
# checks themselves.

TEST_EXTENSIONS = .sh
SH_LOG_COMPILER = $(SHELL)
AM_TESTS_ENVIRONMENT = \
	top_srcdir='$(abs_top_srcdir)'; export top_srcdir; \
	top_builddir='$(abs_top_builddir)'; export top_builddir; \
	XPFO_LIB='$(abs_top_builddir)/.libs/libxpfo.so'; export XPFO_LIB; \
	XPFO_RUN='$(abs_top_builddir)/LD_PRELOAD/xpfo-run'; export XPFO_RUN; \
	XPFO_SKIP_SLOW='$(XPFO_SKIP_SLOW)'; export XPFO_SKIP_SLOW; \
	unset XPFO_OPTIONS;

tests_common = tests/testutil.c tests/testutil.h
# -fno-builtin: the compiler must not fold or drop malloc/free pairs the
# tests make on purpose.
tests_cflags = $(AM_CFLAGS) -fno-builtin
tests_linked_cppflags = $(AM_CPPFLAGS) -DTU_REQUIRE_XPFO=1
tests_linked_ldadd = libxpfo.la
# -no-install: a real executable, not a libtool wrapper script (the tests
# re-execute themselves and run under strace).
tests_linked_ldflags = -no-install

check_PROGRAMS += tests/api tests/misuse tests/revoke tests/stress tests/forkalloc

tests_api_CFLAGS = $(tests_cflags)
tests_api_SOURCES = tests/api.c $(tests_common)
tests_api_CPPFLAGS = $(tests_linked_cppflags)
tests_api_LDADD = $(tests_linked_ldadd)
tests_api_LDFLAGS = $(tests_linked_ldflags)

tests_misuse_CFLAGS = $(tests_cflags)
tests_misuse_SOURCES = tests/misuse.c $(tests_common)
tests_misuse_CPPFLAGS = $(tests_linked_cppflags)
tests_misuse_LDADD = $(tests_linked_ldadd)
tests_misuse_LDFLAGS = $(tests_linked_ldflags)

tests_revoke_CFLAGS = $(tests_cflags)
tests_revoke_SOURCES = tests/revoke.c $(tests_common)
tests_revoke_CPPFLAGS = $(tests_linked_cppflags)
tests_revoke_LDADD = $(tests_linked_ldadd)
tests_revoke_LDFLAGS = $(tests_linked_ldflags)

tests_stress_CFLAGS = $(tests_cflags)
tests_stress_SOURCES = tests/stress.c $(tests_common)
tests_stress_CPPFLAGS = $(tests_linked_cppflags)
tests_stress_LDADD = $(tests_linked_ldadd)
tests_stress_LDFLAGS = $(tests_linked_ldflags)

tests_forkalloc_CFLAGS = $(tests_cflags)
tests_forkalloc_SOURCES = tests/forkalloc.c $(tests_common)
tests_forkalloc_CPPFLAGS = $(tests_linked_cppflags)
tests_forkalloc_LDADD = $(tests_linked_ldadd)
tests_forkalloc_LDFLAGS = $(tests_linked_ldflags)

TESTS += tests/api tests/misuse tests/revoke tests/stress tests/forkalloc \
	tests/revoke-strace.sh tests/options.sh tests/reserve.sh tests/fdlimit.sh

EXTRA_DIST += tests/lib.sh tests/README \
	tests/revoke-strace.sh tests/options.sh tests/reserve.sh tests/fdlimit.sh

# Statistics as JSON: xpfo_stats_print_json from a linked program, and
# stats=json / xpfo-run --stats=json checked against struct xpfo_stats.
check_PROGRAMS += tests/statsprint
tests_statsprint_CFLAGS = $(tests_cflags)
tests_statsprint_SOURCES = tests/statsprint.c $(tests_common)
tests_statsprint_CPPFLAGS = $(tests_linked_cppflags)
tests_statsprint_LDADD = $(tests_linked_ldadd)
tests_statsprint_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/statsprint tests/stats-json.sh
EXTRA_DIST += tests/stats-json.sh

# README's build from source and its rpath line, from a temporary prefix;
# README's C programs, built and run as written.
TESTS += tests/prefix.sh tests/readme.sh
EXTRA_DIST += tests/prefix.sh tests/readme.sh

# XPFO_OPTIONS is ignored in a set-user-ID program (AT_SECURE).
check_PROGRAMS += tests/privileged
tests_privileged_SOURCES = tests/privileged.c
tests_privileged_CPPFLAGS = $(tests_linked_cppflags)
tests_privileged_LDADD = $(tests_linked_ldadd)
tests_privileged_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/privileged.sh
EXTRA_DIST += tests/privileged.sh

# Which backend is picked on this machine, and what it says.
TESTS += tests/backend.sh
EXTRA_DIST += tests/backend.sh

# The xpfo_-prefixed API beside the libc's malloc.  Its checks differ by
# build (TU_OVERRIDE); with --disable-override it is the suite's own test of
# the build (the other linked tests need malloc replaced: .ci/run runs only
# the tests of NO_OVERRIDE_TESTS there).
check_PROGRAMS += tests/prefixed tests/threadexit
tests_threadexit_CFLAGS = $(tests_cflags)
tests_threadexit_SOURCES = tests/threadexit.c $(tests_common)
tests_threadexit_CPPFLAGS = $(tests_linked_cppflags)
tests_threadexit_LDADD = $(tests_linked_ldadd)
tests_threadexit_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/threadexit
check_PROGRAMS += tests/keepempty
tests_keepempty_CFLAGS = $(tests_cflags)
tests_keepempty_SOURCES = tests/keepempty.c $(tests_common)
tests_keepempty_CPPFLAGS = $(tests_linked_cppflags)
tests_keepempty_LDADD = $(tests_linked_ldadd)
tests_keepempty_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/keepempty

check_PROGRAMS += tests/slabclean
tests_slabclean_CFLAGS = $(tests_cflags)
tests_slabclean_SOURCES = tests/slabclean.c $(tests_common)
tests_slabclean_CPPFLAGS = $(tests_linked_cppflags)
tests_slabclean_LDADD = $(tests_linked_ldadd)
tests_slabclean_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/slabclean
check_PROGRAMS += tests/populate
tests_populate_CFLAGS = $(tests_cflags)
tests_populate_SOURCES = tests/populate.c $(tests_common)
tests_populate_CPPFLAGS = $(tests_linked_cppflags)
tests_populate_LDADD = $(tests_linked_ldadd)
tests_populate_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/populate
check_PROGRAMS += tests/guardrel
tests_guardrel_CFLAGS = $(tests_cflags)
tests_guardrel_SOURCES = tests/guardrel.c $(tests_common)
tests_guardrel_CPPFLAGS = $(tests_linked_cppflags)
tests_guardrel_LDADD = $(tests_linked_ldadd)
tests_guardrel_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/guardrel
check_PROGRAMS += tests/retain
tests_retain_CFLAGS = $(tests_cflags)
tests_retain_SOURCES = tests/retain.c $(tests_common)
tests_retain_CPPFLAGS = $(tests_linked_cppflags)
tests_retain_LDADD = $(tests_linked_ldadd)
tests_retain_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/retain
check_PROGRAMS += tests/segchurn
tests_segchurn_CFLAGS = $(tests_cflags)
tests_segchurn_SOURCES = tests/segchurn.c $(tests_common)
tests_segchurn_CPPFLAGS = $(tests_linked_cppflags)
tests_segchurn_LDADD = $(tests_linked_ldadd)
tests_segchurn_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/segchurn
tests_prefixed_CFLAGS = $(tests_cflags)
tests_prefixed_SOURCES = tests/prefixed.c $(tests_common)
tests_prefixed_LDADD = $(tests_linked_ldadd)
tests_prefixed_LDFLAGS = $(tests_linked_ldflags)
if XPFO_OVERRIDE
tests_prefixed_CPPFLAGS = $(tests_linked_cppflags) -DTU_OVERRIDE=1
TESTS += tests/prefixed
else
tests_prefixed_CPPFLAGS = $(tests_linked_cppflags) -DTU_OVERRIDE=0
TESTS += tests/prefixed
endif

# ThreadSanitizer over the remote-free and compartment paths (not in make
# check: it needs clang and takes its own build of the library, without the
# libc names so that TSan keeps its malloc).  make check-tsan builds and
# runs it (.ci/run too); tests/tsan.supp says why each suppression is there.
TSAN_CC = clang-14
TSAN_CFLAGS = -g -O1 -fsanitize=thread -pthread -D_GNU_SOURCE -fvisibility=hidden \
	-I$(top_builddir) -I$(top_srcdir)/include -I$(top_srcdir)/src -I$(top_srcdir)/alloc -I$(top_srcdir)/api \
	-I$(top_srcdir)/arch
TSAN_ARGS = 4 6
tests/tsan-remote: $(top_srcdir)/tests/tsan-remote.c $(fuzz_lib_sources) config.h
	$(AM_V_CC)$(TSAN_CC) $(TSAN_CFLAGS) -o $@ $< $(fuzz_lib_sources) $(SECCOMP_LIBS)
.PHONY: check-tsan
check-tsan: tests/tsan-remote
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(abs_top_srcdir)/tests/tsan.supp $(TSAN_OPTIONS)" \
		./tests/tsan-remote $(TSAN_ARGS)
CLEANFILES += tests/tsan-remote
EXTRA_DIST += tests/tsan-remote.c tests/tsan.supp

# make soak MINUTES=N [SOAK_CSV=path]: tests/soak.sh (not in make check).
MINUTES = 60
SOAK_CSV = bench/results/soak.csv
.PHONY: soak
soak:
	top_srcdir='$(abs_top_srcdir)' $(SHELL) $(top_srcdir)/tests/soak.sh $(MINUTES) $(SOAK_CSV)
EXTRA_DIST += tests/soak.sh tests/soak.gp
# Unit test of the ownership module, built from its own sources (no
# libxpfo: the segment table lives in plain memory).  See tests/unit/owner.c.
check_PROGRAMS += tests/unit/owner
TESTS += tests/unit/owner
tests_unit_owner_SOURCES = tests/unit/owner.c alloc/owner.c alloc/sizeclass.c src/options.c \
	src/fatal.c src/os.c src/memfd.c src/uffd.c src/stats.c $(tests_common)
tests_unit_owner_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_unit_owner_CFLAGS = $(tests_cflags)
# The same for the metadata pool (alloc/meta.c).
check_PROGRAMS += tests/unit/meta
TESTS += tests/unit/meta
tests_unit_meta_SOURCES = tests/unit/meta.c alloc/meta.c src/options.c \
	src/fatal.c src/os.c src/memfd.c src/uffd.c src/stats.c $(tests_common)
tests_unit_meta_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_unit_meta_CFLAGS = $(tests_cflags)
# The same for the thread streams (src/random.c).
check_PROGRAMS += tests/unit/random
TESTS += tests/unit/random
tests_unit_random_SOURCES = tests/unit/random.c src/random.c src/options.c \
	src/fatal.c src/os.c src/memfd.c src/uffd.c src/stats.c $(tests_common)
tests_unit_random_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_unit_random_CFLAGS = $(tests_cflags)

# The code's shape (tools/metrics.py --check): functions <= 60 lines, no
# reference to a higher layer (directories, and the layers inside alloc/),
# no circle across directories; no history in library comments or
# docs/design.md.
TESTS += tests/metrics.sh
EXTRA_DIST += tests/metrics.sh tools/metrics.py

# make bench-check's guard flags a target figure 25% worse, not 20%
# (synthetic runs against bench/xpfobench/baseline.py, no timing).
TESTS += tests/benchguard.sh
EXTRA_DIST += tests/benchguard.sh

check_PROGRAMS += tests/genleak
TESTS += tests/genleak
tests_genleak_CFLAGS = $(tests_cflags)
tests_genleak_SOURCES = tests/genleak.c $(tests_common)
tests_genleak_CPPFLAGS = $(tests_linked_cppflags)
tests_genleak_LDADD = $(tests_linked_ldadd)
tests_genleak_LDFLAGS = $(tests_linked_ldflags)

# The runs an exiting thread leaves queued: taken back by the next thread
# (counts), and revoked by xpfo_flush and malloc_trim.
check_PROGRAMS += tests/orphan
TESTS += tests/orphan
tests_orphan_CFLAGS = $(tests_cflags)
tests_orphan_SOURCES = tests/orphan.c $(tests_common)
tests_orphan_CPPFLAGS = $(tests_linked_cppflags)
tests_orphan_LDADD = $(tests_linked_ldadd)
tests_orphan_LDFLAGS = $(tests_linked_ldflags)

check_PROGRAMS += tests/hugegauge
TESTS += tests/hugegauge
tests_hugegauge_CFLAGS = $(tests_cflags)
tests_hugegauge_SOURCES = tests/hugegauge.c $(tests_common)
tests_hugegauge_CPPFLAGS = $(tests_linked_cppflags)
tests_hugegauge_LDADD = $(tests_linked_ldadd)
tests_hugegauge_LDFLAGS = $(tests_linked_ldflags)

# flush rounds (issue 37): counted per call that takes access away, shared
# while another thread lives
check_PROGRAMS += tests/flushrounds
tests_flushrounds_CFLAGS = $(tests_cflags)
tests_flushrounds_SOURCES = tests/flushrounds.c $(tests_common)
tests_flushrounds_CPPFLAGS = $(tests_linked_cppflags)
tests_flushrounds_LDADD = $(tests_linked_ldadd)
tests_flushrounds_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/flushrounds

# flush rounds of a two-thread free/reallocate loop: at most a bound a
# 1,000 frees, the mechanisms summing to the total
check_PROGRAMS += tests/crossrounds
tests_crossrounds_CFLAGS = $(tests_cflags)
tests_crossrounds_SOURCES = tests/crossrounds.c $(tests_common)
tests_crossrounds_CPPFLAGS = $(tests_linked_cppflags)
tests_crossrounds_LDADD = $(tests_linked_ldadd)
tests_crossrounds_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/crossrounds

# huge blocks of as many segments reuse a freed one's segments and frames
# (taken back from the queue, or kept revoked for the same compartment)
check_PROGRAMS += tests/hugereuse
tests_hugereuse_CFLAGS = $(tests_cflags)
tests_hugereuse_SOURCES = tests/hugereuse.c $(tests_common)
tests_hugereuse_CPPFLAGS = $(tests_linked_cppflags)
tests_hugereuse_LDADD = $(tests_linked_ldadd)
tests_hugereuse_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/hugereuse

# huge blocks on transparent huge pages: placed to end on 2 MiB, their
# slack no block's, revoked and reused by whole huge pages; thp=0 too
check_PROGRAMS += tests/hugethp
tests_hugethp_CFLAGS = $(tests_cflags)
tests_hugethp_SOURCES = tests/hugethp.c $(tests_common)
tests_hugethp_CPPFLAGS = $(tests_linked_cppflags)
tests_hugethp_LDADD = $(tests_linked_ldadd)
tests_hugethp_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/hugethp
check_PROGRAMS += tests/freshslot
tests_freshslot_CFLAGS = $(tests_cflags)
tests_freshslot_SOURCES = tests/freshslot.c $(tests_common)
tests_freshslot_CPPFLAGS = $(tests_linked_cppflags)
tests_freshslot_LDADD = $(tests_linked_ldadd)
tests_freshslot_LDFLAGS = $(tests_linked_ldflags)
TESTS += tests/freshslot
