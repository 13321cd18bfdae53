/* pngd-send - send PNG files to pngd and print (or check) the replies.
 *
 *   pngd-send SOCKET [FILE]             one request (FILE, or stdin); prints the reply
 *   pngd-send --load N KIND SOCKET      N generated files of KIND (valid, malformed;
 *                                       decode.c's generator, seeds 1..N); checks each
 *                                       reply; prints "N ok, N errors, N died,
 *                                       N failed, N wrong, RATE req/s"
 *   pngd-send --write N KIND DIR        the same files into DIR (KIND-SEED.png), and
 *                                       for valid ones the expected reply (.txt)
 *   pngd-send --exploit ADDR SOCKET     the overflow of pngd-bug, aimed at ADDR
 *
 * A valid file's reply must be the one the generator computed from the
 * pixels it wrote (else "wrong"); a malformed file's must be an "error: "
 * line from the decoder (a died decoder counts as "died").
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

#include "decode.h"

/* One request; the reply into buf (NUL-terminated).  -1: no connection. */
static int request(const char *path, const void *req, size_t n, char *buf, size_t max)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, (const char *)req + off, n - off);
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
	close(fd);
	return 0;
}

static unsigned char *make(int malformed, unsigned long seed, size_t *len, char *expect)
{
	return malformed ? pngd_make_malformed(seed, len) : pngd_make(seed, len, expect, PNGD_REPLY_MAX);
}

static int kind_of(const char *k)
{
	if (!strcmp(k, "valid"))
		return 0;
	if (!strcmp(k, "malformed"))
		return 1;
	fprintf(stderr, "pngd-send: KIND is valid or malformed, not %s\n", k);
	exit(2);
}

static int load(unsigned long n, int malformed, const char *path)
{
	unsigned long ok = 0, errors = 0, died = 0, failed = 0, wrong = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned long i = 1; i <= n; i++) {
		char expect[PNGD_REPLY_MAX], reply[4096];
		size_t len;
		unsigned char *png = make(malformed, i, &len, expect);
		if (!png || request(path, png, len, reply, sizeof reply)) {
			failed++;
		} else if (strstr(reply, "the decoder died")) {
			died++;
		} else if (!strncmp(reply, "error: ", 7)) {
			errors++;
			if (!malformed && wrong++ < 3)
				fprintf(stderr, "pngd-send: valid file %lu: %s", i, reply);
		} else if (!malformed && !strcmp(reply, expect)) {
			ok++;
		} else {
			ok += !strncmp(reply, "ok ", 3);
			if (wrong++ < 3)
				fprintf(stderr, "pngd-send: file %lu: got %s", i, reply);
		}
		free(png);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%lu ok, %lu errors, %lu died, %lu failed, %lu wrong, %.0f req/s\n", ok, errors, died, failed,
	       wrong, s > 0 ? (double)n / s : 0.0);
	return failed || wrong;
}

static int write_files(unsigned long n, int malformed, const char *dir)
{
	for (unsigned long i = 1; i <= n; i++) {
		char expect[PNGD_REPLY_MAX], name[4096];
		size_t len;
		unsigned char *png = make(malformed, i, &len, expect);
		snprintf(name, sizeof name, "%s/%s-%lu.png", dir, malformed ? "malformed" : "valid", i);
		FILE *f = png ? fopen(name, "w") : NULL;
		if (!f || fwrite(png, 1, len, f) != len || fclose(f)) {
			perror(name);
			return 1;
		}
		free(png);
		if (malformed)
			continue;
		snprintf(name, sizeof name, "%s/valid-%lu.txt", dir, i);
		f = fopen(name, "w");
		if (!f || fputs(expect, f) < 0 || fclose(f)) {
			perror(name);
			return 1;
		}
	}
	return 0;
}

static int one(const char *path, FILE *in)
{
	size_t cap = 1 << 16, n = 0, r;
	char *req = malloc(cap), reply[4096];
	while (req && (r = fread(req + n, 1, cap - n, in)) > 0)
		if ((n += r) == cap && !(req = realloc(req, cap *= 2)))
			break;
	if (!req || request(path, req, n, reply, sizeof reply)) {
		fprintf(stderr, "pngd-send: %s: %s\n", path, strerror(errno));
		return 1;
	}
	fputs(reply, stdout);
	free(req);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "--load"))
		return load(strtoul(argv[2], NULL, 10), kind_of(argv[3]), argv[4]);
	if (argc == 5 && !strcmp(argv[1], "--write"))
		return write_files(strtoul(argv[2], NULL, 10), kind_of(argv[3]), argv[4]);
	if (argc == 4 && !strcmp(argv[1], "--exploit")) {
		size_t len;
		char reply[4096];
		unsigned char *png = pngd_make_exploit(strtoul(argv[2], NULL, 0), &len);
		if (!png || request(argv[3], png, len, reply, sizeof reply))
			return 1;
		fputs(reply, stdout);
		free(png);
		return 0;
	}
	if (argc == 2 || (argc == 3 && argv[1][0] != '-')) {
		FILE *in = argc == 3 ? fopen(argv[2], "r") : stdin;
		if (!in) {
			perror(argv[2]);
			return 1;
		}
		return one(argv[1], in);
	}
	fprintf(stderr, "usage: pngd-send SOCKET [FILE]\n"
			"       pngd-send --load N valid|malformed SOCKET\n"
			"       pngd-send --write N valid|malformed DIR\n"
			"       pngd-send --exploit ADDR SOCKET\n");
	return 2;
}
