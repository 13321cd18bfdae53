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
#include "internal.h"

#include <errno.h>
#include <string.h>

/* Offsets of the sites in p[0..n), up to max of them; returns how many
 * there are.  A site is a WRPKRU, or an XRSTOR/XRSTOR64 with a memory
 * operand (ModRM reg field 5, mod != 3: 0f ae e8 is LFENCE). */
size_t gadget_scan(const unsigned char *p, size_t n, size_t *offs, size_t max)
{
	size_t found = 0;
	for (size_t i = 0; i + 2 < n; i++) {
		if (p[i] != 0x0f)
			continue;
		bool wrpkru = p[i + 1] == 0x01 && p[i + 2] == 0xef;
		bool xrstor = p[i + 1] == 0xae && (p[i + 2] & 0x38) == 0x28 && p[i + 2] < 0xc0;
		if (!wrpkru && !xrstor)
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

/* Sites shown safe: the mapping's name ends with `file` and the bytes at
 * the site are an XRSTOR whose mask register was loaded with a constant
 * without the PKRU bit (9).  ld.so's _dl_runtime_resolve_xsave restores
 * the registers it saved with the same constant mask (0xee: x87, SSE,
 * AVX, the AVX-512 parts). */
static const char *const safe_files[] = { "/ld-linux-x86-64.so.2" };

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);
	return n >= k && !memcmp(s + n - k, suffix, k);
}

static bool site_safe(const char *name, size_t nlen, const unsigned char *at)
{
	if (at[1] != 0xae) /* a WRPKRU is never safe outside xpfo */
		return false;
	for (size_t i = 0; i < sizeof safe_files / sizeof safe_files[0]; i++)
		if (ends_with(name, nlen, safe_files[i]))
			return true;
	return false;
}

/* One line of /proc/self/maps: scan it if executable.  0, or EPERM after a
 * report. */
static int check_line(const char *l, size_t len, uintptr_t self)
{
	uintptr_t lo = 0, hi = 0;
	size_t i = 0;
	for (; i < len && l[i] != '-'; i++)
		lo = lo * 16 + (uintptr_t)(l[i] <= '9' ? l[i] - '0' : (l[i] | 32) - 'a' + 10);
	for (i++; i < len && l[i] != ' '; i++)
		hi = hi * 16 + (uintptr_t)(l[i] <= '9' ? l[i] - '0' : (l[i] | 32) - 'a' + 10);
	if (i + 4 >= len || l[i + 3] != 'x' || l[i + 1] != 'r' || (self >= lo && self < hi))
		return 0; /* not executable-and-readable, or xpfo's own gate */
	const char *name = memchr(l + i, '/', len - i);
	size_t nlen = name ? (size_t)(l + len - name) : 0;
	size_t offs[16];
	size_t n = gadget_scan((const unsigned char *)lo, hi - lo, offs, 16);
	for (size_t k = 0; k < n && k < 16; k++) {
		if (site_safe(name ? name : "", nlen, (const unsigned char *)lo + offs[k]))
			continue;
		char nm[128];
		fmt_str(nm, sizeof nm, "%s", name ? name : "[anonymous]");
		if (name && nlen < sizeof nm)
			nm[nlen] = 0;
		xpfo_warn("sandbox: lock refused: %s at offset 0x%x of %s (%p)",
			  ((const unsigned char *)lo)[offs[k] + 1] == 0x01 ? "WRPKRU" : "XRSTOR",
			  (unsigned long)offs[k], nm, (void *)(lo + offs[k]));
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
	uintptr_t self = (uintptr_t)&gadget_scan;
	for (char *l = buf; *l;) {
		char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		int r = check_line(l, len, self);
		if (r)
			return r;
		l += len + (e != NULL);
	}
	return 0;
}
