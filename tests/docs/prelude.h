/* prelude.h - what the documentation's C fragments use without defining
 * (tests/docs/blocks.py wraps each fragment: this file, the fragment's
 * #include lines, then its other lines as the body of main()).
 *
 * README.md, "Compartments": parse(untrusted_input) returns a struct doc
 * whose buffer is a page run allocated by the parser (in the current
 * compartment).  README.md, "Alias views": buf is a page run of root's,
 * send_fd() hands a descriptor to worker_socket (here: checks it is open).
 */
#ifndef DOCS_PRELUDE_H
#define DOCS_PRELUDE_H
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xpfo.h> /* for the fragments that leave it out */

static const char *untrusted_input = "key=value";

struct doc {
	char *buffer; /* 4096 bytes or more: a page run */
	size_t len;
};

static struct doc *parse(const char *in)
{
	struct doc *d = malloc(sizeof *d);
	if (!d || !(d->buffer = malloc(8192)))
		exit(3);
	d->len = strlen(in);
	memcpy(d->buffer, in, d->len + 1);
	return d;
}

static int worker_socket = -1;
static void send_fd(int sock, int fd)
{
	(void)sock;
	if (fcntl(fd, F_GETFD) == -1)
		exit(4);
}

static char *buf;
__attribute__((constructor)) static void prelude_buf(void)
{
	buf = aligned_alloc(4096, 8192);
	if (!buf)
		exit(5);
	memset(buf, 'b', 8192);
}
#endif
