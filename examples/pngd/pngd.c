/* pngd - a PNG decoding service whose decoder (libpng) runs in a locked
 * compartment (xpfo_lock_thread).
 *
 *   pngd [--mode=fork|thread] [--no-lock] [--print-secrets] SOCKET
 *   pngd [--mode=fork|thread] [--no-lock] --stdin       (one request, the reply on stdout)
 *   pngd [--mode=fork|thread] --self-test N             (N valid and N malformed files)
 *   pngd [--mode=fork|thread] --self-test-exploit       (pngd-bug only)
 *
 * Each connection on the Unix socket SOCKET carries one PNG file (the client
 * shuts down its side when done); the reply is one line (examples/pngd/
 * decode.h):
 *   ok WxH depth=D color=C interlace=I crc=XXXXXXXX label=TEXT
 *   error: MESSAGE
 * The main thread reads the request into a block of root's; the decode runs
 * in compartment "decoder":
 *   --mode=fork (the default on the mprotect backend): a child per request
 *     moves the request into the compartment (xpfo_move), locks itself,
 *     decodes, and sends the reply with xpfo_send over a pipe; the parent
 *     takes it with xpfo_recv.  The child holds the request and the pipe,
 *     no other descriptor.
 *   --mode=thread (the default on pkeys, where other threads keep root):
 *     root moves the request into the compartment, a worker thread locks
 *     itself and decodes, and once it is gone root moves the reply out
 *     (xpfo_move to root) and destroys the compartment.
 * Root holds a secret (PNGD_SECRET) in a small block and in a page run;
 * no request may get it.  --no-lock enters the compartment without the
 * lock (the benchmark's middle column).
 *
 * Built with -DPNGD_BUG (pngd-bug): the label chunk overflows into the
 * pointer the reply echoes (decode.c), a read of any address the input
 * names.  Built with -DPNGD_NO_XPFO (pngd-plain): glibc's malloc, a forked
 * child per request, no compartment (the baseline).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode.h"
#include "../common/service.h"
#ifndef PNGD_NO_XPFO
#include "xpfo.h"
#endif

#define SECRET_DEFAULT "PNGD-SECRET-0123456789abcdef"

static int lock_on = 1;
static int listen_fd = -1;
static char *secret_block, *secret_run; /* root's secret */

static char *say(const char *fmt, const char *arg)
{
	char *out = malloc(PNGD_REPLY_MAX);
	if (out)
		snprintf(out, PNGD_REPLY_MAX, fmt, arg);
	return out;
}

static size_t read_all(int fd, char *buf, size_t max)
{
	size_t got = 0;
	ssize_t r;
	while (got < max && ((r = read(fd, buf + got, max - got)) > 0 || (r < 0 && errno == EINTR)))
		if (r > 0)
			got += (size_t)r;
	return got;
}

static void write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t r = write(fd, buf, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		buf += r;
		n -= (size_t)r;
	}
}

/* ---- --mode=fork -------------------------------------------------------------- */

/* In the child: the request in, locked, decoded, the reply out.  Never
 * returns. */
static void child_decode(char *req, size_t n, int out)
{
#ifdef PNGD_NO_XPFO
	char *reply = pngd_decode((unsigned char *)req, n);
	if (reply)
		write_all(out, reply, strlen(reply));
#else
	xpfo_compartment_t *c = xpfo_compartment_create("decoder", XPFO_COMPARTMENT_STRICT);
	char *in = c ? xpfo_move(req, c) : NULL;
	if (!in || (lock_on ? xpfo_lock_thread(c, 0) : !xpfo_enter(c))) {
		char msg[128]; /* still root's thread: xpfo_send takes any memory */
		snprintf(msg, sizeof msg, "error: cannot lock the decoder: %s\n", strerror(errno));
		_exit(xpfo_send(out, msg, strlen(msg) + 1) ? 1 : 0);
	}
	char *reply = pngd_decode((unsigned char *)in, n);
	if (!reply || xpfo_send(out, reply, strlen(reply) + 1))
		_exit(1);
#endif
	_exit(0);
}

static char *serve_fork(char *req, size_t n)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return say("error: pipe: %s\n", strerror(errno));
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		if (listen_fd >= 0)
			close(listen_fd); /* the decoder gets the request and the pipe, nothing else */
		child_decode(req, n, p[1]);
	}
	close(p[1]);
	char *reply = NULL;
	if (pid > 0) {
#ifdef PNGD_NO_XPFO
		reply = calloc(1, PNGD_REPLY_MAX);
		if (reply && !read_all(p[0], reply, PNGD_REPLY_MAX - 1)) {
			free(reply);
			reply = NULL;
		}
#else
		size_t len;
		reply = xpfo_recv(p[0], NULL, PNGD_REPLY_MAX, &len);
		if (reply && (len == 0 || reply[len - 1])) { /* a reply is a string */
			free(reply);
			reply = NULL;
		}
#endif
	}
	int fork_errno = errno;
	close(p[0]);
	int st = 0;
	if (pid < 0)
		return say("error: fork: %s\n", strerror(fork_errno));
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	service_reap_orphans();
	if (WIFSIGNALED(st) || !reply) {
		free(reply);
		return say("error: the decoder died (%s)\n",
			   WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no reply");
	}
	return reply;
}

/* ---- --mode=thread ------------------------------------------------------------ */

#ifndef PNGD_NO_XPFO
struct job {
	xpfo_compartment_t *c;
	char *in;
	size_t n;
	char *reply; /* the compartment's */
	int err;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	if (lock_on ? xpfo_lock_thread(j->c, 0) : !xpfo_enter(j->c)) {
		j->err = errno;
		return NULL;
	}
	j->reply = pngd_decode((unsigned char *)j->in, j->n);
	return NULL;
}

static char *serve_thread(char *req, size_t n)
{
	struct job j = { .n = n };
	char *reply = NULL;
	pthread_t th;
	/* not STRICT: entering a STRICT compartment is refused while other
	 * threads are alive (EPERM, on pkeys too); on pkeys the lock itself
	 * closes root's pages to the locked thread (their own key, root_key) */
	j.c = xpfo_compartment_create("decoder", 0);
	if (!j.c)
		return say("error: compartment: %s\n", strerror(errno));
	j.in = xpfo_move(req, j.c);
	if (!j.in) {
		reply = say("error: cannot move the request in: %s\n", strerror(errno));
		free(req); /* still root's */
	} else if ((errno = pthread_create(&th, NULL, worker, &j)) != 0) {
		reply = say("error: thread: %s\n", strerror(errno));
	} else {
		pthread_join(th, NULL);
		if (!j.reply)
			reply = say("error: the decoder failed: %s\n", j.err ? strerror(j.err) : "no reply");
		else if (!(reply = xpfo_move(j.reply, xpfo_root())))
			reply = say("error: cannot move the reply out: %s\n", strerror(errno));
	}
	if (xpfo_compartment_destroy(j.c))
		fprintf(stderr, "pngd: cannot destroy the decoder's compartment: %s\n", strerror(errno));
	return reply;
}
#endif

/* ---- the service -------------------------------------------------------------- */

static int thread_mode;

/* Decode root's request block req[0..n) (given up: moved or freed) in the
 * mode chosen; the reply, root's. */
static char *serve(char *req, size_t n)
{
	char *reply;
#ifndef PNGD_NO_XPFO
	if (thread_mode)
		return serve_thread(req, n); /* req moved into the compartment */
#endif
	reply = serve_fork(req, n);
	free(req);
	return reply;
}

/* The request, in a block of root's that grows as it comes (up to
 * PNGD_REQ_MAX); NULL when out of memory. */
static char *request_read(int fd, size_t *n)
{
	size_t cap = 65536, got = 0, r;
	char *req = malloc(cap);
	while (req && (r = read_all(fd, req + got, cap - got)) == cap - got && cap < PNGD_REQ_MAX) {
		got += r;
		char *bigger = realloc(req, cap *= 2);
		if (!bigger)
			free(req);
		req = bigger;
	}
	if (req)
		*n = got + r;
	return req;
}

static void keep_secret(int print)
{
	const char *k = getenv("PNGD_SECRET");
	k = k ? k : SECRET_DEFAULT;
	secret_block = malloc(64);
	secret_run = malloc(65536);
	if (!secret_block || !secret_run) {
		perror("pngd: secret");
		exit(1);
	}
	snprintf(secret_block, 64, "%s", k);
	snprintf(secret_run, 65536, "%s", k);
	if (print)
		fprintf(stderr, "pngd: secret at %p and %p\n", (void *)secret_block, (void *)secret_run);
}

static void serve_socket(const char *path)
{
	listen_fd = service_listen(path);
	fprintf(stderr, "pngd: listening on %s (%s)\n", path, thread_mode ? "locked threads" : "forked children");
	for (;;) {
		int cfd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0) {
			service_accept_failed("pngd");
			continue;
		}
		size_t n = 0;
		char *req = request_read(cfd, &n);
		char *reply = req ? serve(req, n) : say("error: %s\n", "out of memory");
		service_drain(cfd); /* a request past PNGD_REQ_MAX, or no memory for it */
		if (reply)
			write_all(cfd, reply, strlen(reply));
		free(reply);
		close(cfd);
	}
}

/* --self-test N: N files of pngd_make and N of pngd_make_malformed through
 * serve(); 0 when every valid one got its expected reply and every
 * malformed one an error. */
static int self_test(unsigned long count)
{
	unsigned long ok = 0, rejected = 0, wrong = 0, died = 0;
	for (unsigned long i = 1; i <= 2 * count; i++) {
		char expect[PNGD_REPLY_MAX];
		size_t len;
		int bad = i > count;
		unsigned char *png = bad ? pngd_make_malformed(i, &len) : pngd_make(i, &len, expect, sizeof expect);
		if (!png) {
			fprintf(stderr, "pngd: self-test: out of memory\n");
			return 1;
		}
		char *reply = serve((char *)png, len);
		if (reply && strstr(reply, "the decoder died"))
			died++;
		if (reply && (bad ? !strncmp(reply, "error: ", 7) : !strcmp(reply, expect)))
			bad ? rejected++ : ok++;
		else if (wrong++ < 5)
			fprintf(stderr, "pngd: self-test: file %lu: %s", i, reply ? reply : "no reply\n");
		free(reply);
	}
	printf("%lu ok, %lu rejected, %lu wrong, %lu died\n", ok, rejected, wrong, died);
	return wrong || died;
}

/* --self-test-exploit (pngd-bug): aim the injected overflow at both copies
 * of the secret, each from a child process that serves it (a violation in
 * a locked thread ends the whole process); prints what came back.  0 when
 * the secret did not, and each attempt ended in a dead decoder: "the
 * decoder died" (fork mode) or the serving process killed by a signal
 * (thread mode). */
static int self_test_exploit(void)
{
	char *aims[2] = { secret_block, secret_run };
	int bad = 0;
	for (int i = 0; i < 2; i++) {
		int p[2];
		if (pipe2(p, O_CLOEXEC))
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			size_t len;
			unsigned char *png = pngd_make_exploit((unsigned long)aims[i], &len);
			char *reply = png ? serve((char *)png, len) : NULL;
			if (reply)
				write_all(p[1], reply, strlen(reply));
			_exit(0);
		}
		close(p[1]);
		char out[PNGD_REPLY_MAX + 1];
		size_t n = pid > 0 ? read_all(p[0], out, PNGD_REPLY_MAX) : 0;
		out[n] = 0;
		close(p[0]);
		int st = 0;
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		int died = strstr(out, "the decoder died (Segmentation fault)") || (WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
		printf("exploit %d: %s%s", i, n ? out : "no reply\n",
		       WIFSIGNALED(st) ? "(the serving process was killed by a signal)\n" : "");
		bad |= pid < 0 || !died || strstr(out, secret_block) != NULL;
	}
	return bad;
}

int main(int argc, char **argv)
{
	int print = 0, use_stdin = 0, exploit = 0, mode_given = 0;
	unsigned long tests = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode=thread") || !strcmp(argv[i], "--mode=fork"))
			thread_mode = argv[i][7] == 't', mode_given = 1;
		else if (!strcmp(argv[i], "--no-lock"))
			lock_on = 0;
		else if (!strcmp(argv[i], "--print-secrets"))
			print = 1;
		else if (!strcmp(argv[i], "--stdin"))
			use_stdin = 1;
		else if (!strcmp(argv[i], "--self-test") && i + 1 < argc)
			tests = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--self-test-exploit"))
			exploit = 1;
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			path = NULL, use_stdin = tests = exploit = 0, i = argc;
	}
	if (!path && !use_stdin && !tests && !exploit) {
		fprintf(stderr, "usage: pngd [--mode=fork|thread] [--no-lock] [--print-secrets] SOCKET\n"
				"       pngd [--mode=fork|thread] [--no-lock] --stdin\n"
				"       pngd [--mode=fork|thread] --self-test N | --self-test-exploit\n");
		return 2;
	}
#ifndef PNGD_NO_XPFO
	if (!mode_given) /* pkeys confines one thread while others keep root */
		thread_mode = !strcmp(xpfo_backend(), "pkeys");
#else
	(void)mode_given;
#endif
	signal(SIGPIPE, SIG_IGN);
	keep_secret(print);
	if (tests)
		return self_test(tests);
	if (exploit)
		return self_test_exploit();
	if (use_stdin) {
		size_t n = 0;
		char *req = request_read(0, &n);
		char *reply = req ? serve(req, n) : NULL;
		if (reply)
			write_all(1, reply, strlen(reply));
		int bad = !reply || strncmp(reply, "ok ", 3);
		free(reply);
		return bad;
	}
	serve_socket(path);
	return 0;
}
