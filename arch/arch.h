/* arch.h - the one per-CPU interface.  Each arch/<cpu>/arch.h defines the
 * same inlines; this header picks one.  Protection keys have their own
 * header, arch/pkeys.h. */
#ifndef XPFO_ARCH_H
#define XPFO_ARCH_H

#if defined(__x86_64__)
#include "x86_64/arch.h"
#elif defined(__aarch64__)
#include "arm64/arch.h"
#else
#include "generic/arch.h"
#endif

#endif
