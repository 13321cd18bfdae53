/* generic/pkeys.h - no protection keys on this CPU architecture (as far as
 * xpfo knows): the probe says so, and nothing else is ever called.  The
 * register functions exist so that callers compile everywhere; they must
 * not be reached (arch_pkey_probe() never returns ARCH_PKEY_OK here). */
#ifndef XPFO_ARCH_GENERIC_PKEYS_H
#define XPFO_ARCH_GENERIC_PKEYS_H

#include <stdint.h>

#endif
