/* gadget-survey.c - what xpfo_lock_thread's scan (src/gadgets.c) finds in
 * the executable mappings of a process that loaded the given libraries:
 * one line per mapping with a site, its kind and offset.  For
 * docs/security.md.  Build: make, then
 *   cc -Iinclude tools/gadget-survey.c -o gadget-survey -L.libs -lxpfo -ldl
 *   LD_LIBRARY_PATH=.libs ./gadget-survey libstdc++.so.6 libexpat.so.1 ... */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

size_t xpfo__gadget_scan(const void *p, size_t n, size_t *offs, size_t max);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW))
			fprintf(stderr, "%s: %s\n", argv[i], dlerror());
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	while (f && fgets(line, sizeof line, f)) {
		uintptr_t lo, hi;
		char perm[8], path[400] = "";
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %399s", &lo, &hi, perm, path) < 3 ||
		    perm[0] != 'r' || perm[2] != 'x')
			continue;
		size_t offs[64];
		size_t n = xpfo__gadget_scan((void *)lo, hi - lo, offs, 64);
		printf("%-50s %7zu KiB: %zu site(s)", path[0] ? path : "[anon]", (hi - lo) >> 10, n);
		for (size_t k = 0; k < n && k < 64; k++)
			printf(" %s+0x%zx", ((unsigned char *)lo)[offs[k] + 1] == 1 ? "WRPKRU" : "XRSTOR",
			       offs[k]);
		printf("\n");
	}
	return 0;
}
