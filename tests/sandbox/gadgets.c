/* gadgets.c - the WRPKRU/XRSTOR scanner that xpfo_lock_thread runs over
 * every executable mapping on the pkeys backend (src/gadgets.c): planted
 * encodings are found at their offsets, look-alikes are not, and a planted
 * WRPKRU in an executable mapping of this process is found there. */
#include "testutil.h"

#include <string.h>
#include <sys/mman.h>

size_t xpfo__gadget_scan(const void *p, size_t n, size_t *offs, size_t max);
int xpfo__gadget_site_safe(const void *map, size_t off);

/* ld.so's resolver: mov $0xee,%eax; xor %edx,%edx; xrstor 0x40(%rsp) */
static void check_safe_list(void)
{
	unsigned char a[] = "\x90\xb8\xee\x00\x00\x00\x31\xd2\x0f\xae\x6c\x24\x40";
	CHECK(xpfo__gadget_site_safe(a, 8), "ld.so's XRSTOR (mask 0xee) is on the safe list");
	a[3] = 0x02; /* mask 0x2ee: the PKRU bit */
	CHECK(!xpfo__gadget_site_safe(a, 8), "a mask with the PKRU bit is not safe");
	unsigned char b[] = "\x90\x90\x90\x90\x90\x90\x90\x90\x0f\xae\x6c\x24\x40";
	CHECK(!xpfo__gadget_site_safe(b, 8), "an XRSTOR without a constant mask is not safe");
	unsigned char c[] = "\x90\xb8\xee\x00\x00\x00\x31\xd2\x0f\x01\xef";
	CHECK(!xpfo__gadget_site_safe(c, 8), "a WRPKRU is never safe");
	unsigned char d[] = "\xb8\xee\x00\x00\x00\x31\xd2\x48\x0f\xae\x6c\x24\x40";
	CHECK(xpfo__gadget_site_safe(d, 8), "the XRSTOR64 form");
}

int main(void)
{
	tu_prog = "sandbox/gadgets";
	check_safe_list();
	unsigned char buf[64];
	size_t offs[8];
	memset(buf, 0x90, sizeof buf);
	CHECK(xpfo__gadget_scan(buf, sizeof buf, offs, 8) == 0, "nops hold no site");
	memcpy(buf + 3, "\x0f\x01\xef", 3);                  /* wrpkru */
	memcpy(buf + 17, "\x0f\xae\x2f", 3);                 /* xrstor (%rdi) */
	memcpy(buf + 30, "\x48\x0f\xae\x6c\x24\x08", 6);     /* xrstor64 0x8(%rsp) */
	memcpy(buf + 40, "\x0f\xae\xe8", 3);                 /* lfence: not one */
	memcpy(buf + 45, "\x0f\x01\xee", 3);                 /* rdpkru: not one */
	memcpy(buf + 50, "\x0f\xae\x27", 3);                 /* xsave (%rdi): not one */
	memcpy(buf + 55, "\xf3\x48\x0f\xae\xd7", 5);         /* wrfsbase %rdi */
	memcpy(buf + 10, "\x48\x0f\xae\xd7", 4);             /* no f3: not one */
	size_t n = xpfo__gadget_scan(buf, sizeof buf, offs, 8);
	CHECK(n == 4, "%zu sites, expected 4", n);
	CHECK(n >= 4 && offs[0] == 3 && offs[1] == 17 && offs[2] == 31 && offs[3] == 57,
	      "offsets %zu %zu %zu %zu", offs[0], offs[1], offs[2], offs[3]);
	/* the encoding across the end of the buffer is not read past it */
	CHECK(xpfo__gadget_scan(buf + 3, 2, offs, 8) == 0, "a cut site is no site");
	/* an executable mapping with a WRPKRU inside an instruction's bytes */
	unsigned char *x = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(x, 0xc3, 4096);
	memcpy(x + 1000, "\xb8\x0f\x01\xef\x00", 5); /* mov $0xef010f,%eax */
	mprotect(x, 4096, PROT_READ | PROT_EXEC);
	n = xpfo__gadget_scan(x, 4096, offs, 8);
	CHECK(n == 1 && offs[0] == 1001, "%zu sites in the mapping (offset %zu)", n, n ? offs[0] : 0);
	tu_exit();
}
