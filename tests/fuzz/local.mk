# tests/fuzz: libFuzzer targets (clang -fsanitize=fuzzer), not part of make
# check.  make fuzz FUZZ_SECONDS=N runs each for N seconds (default 60) and
# prints its corpus size, coverage and executions; a crash fails it.
# FUZZ_JOBS=N runs N targets at a time (default 1; each target is one
# process on one CPU, so up to the number of CPUs each gets as many
# executions as alone: compare the executions printed).  Each
# target is one clang link of the library's sources without
# LD_PRELOAD/override.c (the --disable-override build), so libFuzzer's own
# malloc stays glibc's, plus AddressSanitizer and UBSan on both.
FUZZ_CC = clang-14
FUZZ_SECONDS = 60
FUZZ_JOBS = 1
FUZZ_TARGETS = ops options threads
FUZZ_CFLAGS = -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -pthread -D_GNU_SOURCE -fvisibility=hidden \
	-I$(top_builddir) -I$(top_srcdir)/include -I$(top_srcdir)/src -I$(top_srcdir)/alloc -I$(top_srcdir)/api \
	-I$(top_srcdir)/arch -I$(top_srcdir)/tests/fuzz
fuzz_lib_sources = $(addprefix $(top_srcdir)/,$(filter %.c,$(filter-out LD_PRELOAD/override.c \
	api/prefixed.c,$(libxpfo_la_SOURCES)) api/prefixed.c))
fuzz_bins = $(addprefix tests/fuzz/fuzz-,$(FUZZ_TARGETS))

tests/fuzz/fuzz-%: $(top_srcdir)/tests/fuzz/%.c $(top_srcdir)/tests/fuzz/fuzz.h $(fuzz_lib_sources) config.h
	@mkdir -p tests/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(fuzz_lib_sources) $(SECCOMP_LIBS)

.PHONY: fuzz fuzz-build
fuzz-build: $(fuzz_bins)
# every target runs (xargs goes on after a failure, and then exits non-zero)
fuzz: fuzz-build
	@printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I '{}' \
		$(SHELL) $(top_srcdir)/tests/fuzz/run.sh tests/fuzz/fuzz-'{}' \
			$(top_srcdir)/tests/fuzz/corpus/'{}' $(FUZZ_SECONDS)

CLEANFILES += $(fuzz_bins)
EXTRA_DIST += tests/fuzz/fuzz.h tests/fuzz/ops.c tests/fuzz/options.c tests/fuzz/threads.c \
	tests/fuzz/run.sh tests/fuzz/corpus
