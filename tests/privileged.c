/* privileged.c - a linked program that allocates once; tests/privileged.sh
 * runs it as a set-user-ID copy to check that XPFO_OPTIONS is ignored there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	char *p = malloc(64);
	if (!p)
		return 1;
	strcpy(p, "privileged: ran");
	puts(p);
	free(p);
	return 0;
}
