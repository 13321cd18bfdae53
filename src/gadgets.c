/* gadgets.c - WRPKRU and XRSTOR sites in executable mappings (pkeys).
 *
 * On the pkeys backend the rights register is written by an instruction,
 * not a system call: any WRPKRU (0f 01 ef) in executable memory, or any
 * XRSTOR (0f ae /5, memory operand) with the PKRU bit in its mask, can open
 * every key for a thread whose instruction pointer an attacker controls.
 * Like ERIM (USENIX Security 2019), xpfo_lock_thread scans every executable
 * mapping for the byte sequences, at any offset (x86 decodes from any
 * byte), and refuses the lock when one lies outside xpfo's own library or
 * the short list of sites known safe below.  docs/security.md gives the
 * measured counts and what a chain that jumps to an allowed site can do.
 */
#include "base.h"

#include <errno.h>
#include <string.h>

/* WRFSBASE: f3 [REX] 0f ae /2 with a register operand (mod 3).  A locked
 * thread that could move its TLS base would pass for another thread at
 * xpfo's gate (gate_check). */
static bool wrfsbase_at(const unsigned char *p, size_t i)
{
	bool prefixed = (i >= 1 && p[i - 1] == 0xf3) ||
			(i >= 2 && (p[i - 1] & 0xf0) == 0x40 && p[i - 2] == 0xf3);
	return prefixed && p[i + 1] == 0xae && (p[i + 2] & 0xf8) == 0xd0;
}

/* Offsets of the sites in p[0..n), up to max of them; returns how many
 * there are.  A site is a WRPKRU, an XRSTOR/XRSTOR64 with a memory operand
 * (ModRM reg field 5, mod != 3: 0f ae e8 is LFENCE), or a WRFSBASE (the
 * offset of its 0f byte). */
size_t gadget_scan(const unsigned char *p, size_t n, size_t *offs, size_t max)
{
	size_t found = 0;
	for (size_t i = 0; i + 2 < n; i++) {
		if (p[i] != 0x0f)
			continue;
		bool wrpkru = p[i + 1] == 0x01 && p[i + 2] == 0xef;
		bool xrstor = p[i + 1] == 0xae && (p[i + 2] & 0x38) == 0x28 && p[i + 2] < 0xc0;
		if (!wrpkru && !xrstor && !wrfsbase_at(p, i))
			continue;
		if (found < max)
			offs[found] = i;
		found++;
	}
	return found;
}

/* Test seam: the scanner over a buffer (tests/sandbox/gadgets.c). */
XPFO_EXPORT size_t xpfo__gadget_scan(const void *p, size_t n, size_t *offs, size_t max);
XPFO_EXPORT size_t xpfo__gadget_scan(const void *p, size_t n, size_t *offs, size_t max)
{
	return gadget_scan(p, n, offs, max);
}

/* Sites shown safe: an XRSTOR right after `mov $imm32, %eax; xor %edx,
 * %edx` with bit 9 (PKRU) clear in imm32: whoever reaches it by its entry
 * restores no rights register.  This is ld.so's _dl_runtime_resolve_xsave
 * and _dl_runtime_resolve_xsavec (mask 0xee: x87, SSE, AVX, AVX-512), in
 * ld-linux-x86-64.so.2 and in static binaries alike.  A jump straight to
 * the XRSTOR with EAX of the attacker's is not stopped (docs/security.md). */
static bool site_safe(const unsigned char *map, const unsigned char *at)
{
	if (at[1] != 0xae || (at[2] & 0xf8) == 0xd0) /* WRPKRU, WRFSBASE: never */
		return false;
	const unsigned char *p = at > map && (at[-1] & 0xf0) == 0x40 ? at - 1 : at; /* REX.W */
	if (p - map < 7 || p[-7] != 0xb8 || p[-2] != 0x31 || p[-1] != 0xd2)
		return false;
	uint32_t mask = (uint32_t)p[-6] | (uint32_t)p[-5] << 8 | (uint32_t)p[-4] << 16 |
			(uint32_t)p[-3] << 24;
	return !(mask & (1u << 9));
}

/* Test seam (tests/sandbox/gadgets.c): is the site at map + off safe? */
XPFO_EXPORT int xpfo__gadget_site_safe(const void *map, size_t off);
XPFO_EXPORT int xpfo__gadget_site_safe(const void *map, size_t off)
{
	return site_safe(map, (const unsigned char *)map + off);
}

static const char *site_kind(const unsigned char *at)
{
	return at[1] == 0x01 ? "WRPKRU" : (at[2] & 0xf8) == 0xd0 ? "WRFSBASE" : "XRSTOR";
}

/* glibc's pkey_set writes whatever rights its caller passes: the one
 * WRPKRU of libc.so.6 (2.36), so of every dynamically linked program.  On
 * the pkeys backend xpfo holds every key of the process, so the lock turns
 * that WRPKRU into UD2 (0f 0b): a call to pkey_set afterwards traps
 * (SIGILL) instead of opening keys.  The bytes are written through
 * /proc/self/mem, which gives the process a private copy of the page and
 * leaves its protection (r-x) as it was; fork children inherit the copy.
 * A weak reference: a static program that never calls pkey_set has none
 * (NULL), and the range is then empty. */
extern int pkey_set(int key, unsigned int rights) __attribute__((weak));
#define PKEY_SET_BYTES 128 /* glibc 2.36's is 0x60 bytes long */

static bool in_pkey_set(uintptr_t a)
{
	uintptr_t f = (uintptr_t)&pkey_set;
	return f && a >= f && a - f < PKEY_SET_BYTES;
}

/* The WRPKRU at `at` made a trap; the bytes read back to be sure.  0 or
 * the errno (EIO: the write did not take). */
static int disable_site(unsigned char *at)
{
	static const unsigned char ud2[2] = {0x0f, 0x0b};
	int e = os_mem_write(at, ud2, sizeof ud2);
	const volatile unsigned char *v = at;
	if (!e && (v[0] != 0x0f || v[1] != 0x0b))
		e = EIO;
	return e;
}

/* xpfo's gate: the section pkeys_write lives in (alloc/pkeys.c). */
extern const char __start_xpfo_gate[] __attribute__((weak, visibility("hidden")));
extern const char __stop_xpfo_gate[] __attribute__((weak, visibility("hidden")));

static bool in_gate(uintptr_t a)
{
	return a >= (uintptr_t)__start_xpfo_gate && a < (uintptr_t)__stop_xpfo_gate;
}

/* One line of /proc/self/maps: scan it if executable.  0, or EPERM after a
 * report. */
static int check_line(const char *l, size_t len)
{
	uintptr_t lo = 0, hi = 0;
	size_t i = 0;
	for (; i < len && l[i] != '-'; i++)
		lo = lo * 16 + (uintptr_t)(l[i] <= '9' ? l[i] - '0' : (l[i] | 32) - 'a' + 10);
	for (i++; i < len && l[i] != ' '; i++)
		hi = hi * 16 + (uintptr_t)(l[i] <= '9' ? l[i] - '0' : (l[i] | 32) - 'a' + 10);
	if (i + 4 >= len || l[i + 3] != 'x' || l[i + 1] != 'r')
		return 0; /* not executable, or not readable (docs/security.md) */
	const char *name = memchr(l + i, '/', len - i);
	size_t nlen = name ? (size_t)(l + len - name) : 0;
	size_t offs[64];
	size_t n = gadget_scan((const unsigned char *)lo, hi - lo, offs, 64);
	if (n > 64)
		n = 64; /* the first of those not looked at is refused below */
	for (size_t k = 0; k <= n; k++) {
		if (k == n) {
			if (n < 64)
				break;
			xpfo_warn("sandbox: lock refused: more than 64 sites in a mapping");
			return EPERM;
		}
		unsigned char *at = (unsigned char *)lo + offs[k];
		if (in_gate(lo + offs[k]) || site_safe((const unsigned char *)lo, at))
			continue;
		if (at[1] == 0x01 && in_pkey_set(lo + offs[k])) {
			int e = disable_site(at);
			if (!e)
				continue;
			xpfo_warn("sandbox: lock refused: the WRPKRU of pkey_set (%p) could not be "
				  "disabled (errno %d: /proc/self/mem)", (void *)at, e);
			return EPERM;
		}
		char nm[128];
		fmt_str(nm, sizeof nm, "%s", name ? name : "[anonymous]");
		if (name && nlen < sizeof nm)
			nm[nlen] = 0;
		xpfo_warn("sandbox: lock refused: %s at offset 0x%x of %s (%p)",
			  site_kind((const unsigned char *)lo + offs[k]), (unsigned long)offs[k], nm,
			  (void *)(lo + offs[k]));
		return EPERM;
	}
	return 0;
}

int gadget_check_mappings(void)
{
	static char buf[1 << 16];
	long n = os_read_file("/proc/self/maps", buf, sizeof buf);
	if (n <= 0 || n >= (long)sizeof buf - 1)
		return EPERM; /* cannot be sure: fail closed */
	for (char *l = buf; *l;) {
		char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		int r = check_line(l, len);
		if (r)
			return r;
		l += len + (e != NULL);
	}
	return 0;
}
