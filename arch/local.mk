# arch: one per-CPU header, arch/arch.h, picks arch/<cpu>/arch.h
libxpfo_la_SOURCES += arch/arch.h arch/generic/arch.h arch/x86_64/arch.h
