# arch: one per-CPU header, arch/arch.h, picks arch/<cpu>/arch.h; arch/pkeys.h the same for keys
libxpfo_la_SOURCES += arch/arch.h arch/generic/arch.h arch/x86_64/arch.h arch/arm64/arch.h \
	arch/pkeys.h arch/x86_64/pkeys.h arch/arm64/pkeys.h arch/generic/pkeys.h \
	arch/x86_64/zero.c
