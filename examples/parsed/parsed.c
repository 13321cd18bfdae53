/* parsed - an XML summary service that parses untrusted input in a locked
 * compartment (xpfo_lock_thread).
 *
 *   parsed [--mode=fork|thread] [--no-lock] [--print-secrets] SOCKET
 *
 * Each connection on the Unix socket SOCKET carries one XML document (the
 * client shuts down its side when done); the reply is one line:
 *   ok root=NAME elements=N attributes=N depth=N text=N [echo=...]
 *   error: MESSAGE
 * The parse (expat) runs in compartment "parser": in a forked child that
 * locks itself (--mode=fork, the default on the mprotect backend), or in a
 * worker thread that locks itself (--mode=thread, pkeys only).  The result
 * is a block of the compartment: the thread mode gives it to root with
 * xpfo_transfer and the main thread sends it; the fork mode writes it to a
 * pipe (another address space) and the parent sends it.  Root holds an API
 * key, in a small block and in a page run, that no request may get.
 *
 * Built with -DPARSED_BUG (parsed-bug): the start-element callback decodes
 * a hex "id" attribute into a 32-byte field without checking its length,
 * and the field after it points at what the reply echoes: an overflow that
 * becomes an arbitrary read.  Built with -DPARSED_NO_XPFO (parsed-plain):
 * glibc's malloc, no compartment, fork per request (the baseline).
 */
#include <errno.h>
#include <expat.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PARSED_NO_XPFO
#include "xpfo.h"
#endif
#include "../common/service.h"

#define REQ_MAX (1 << 20)
#define REPLY_MAX 4096 /* a page run: xpfo_transfer takes it */

static int lock_on = 1;
static int listen_fd = -1;
static char *key_block, *key_run; /* root's secret */

/* ---- the parse (runs inside the compartment) -------------------------------- */

struct summary {
#ifdef PARSED_BUG
	unsigned char id[32];   /* decoded "id" attribute */
#endif
	const char *echo;       /* what the reply echoes (a name from the document) */
	char root[64];
	unsigned long elements, attributes, depth, max_depth, text;
};

#ifdef PARSED_BUG
static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The injected bug: no bound on the decoded length. */
static void decode_id(struct summary *s, const char *hex)
{
	for (size_t i = 0; hexval(hex[2 * i]) >= 0 && hexval(hex[2 * i + 1]) >= 0; i++)
		s->id[i] = (unsigned char)(hexval(hex[2 * i]) << 4 | hexval(hex[2 * i + 1]));
}
#endif

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **attr)
{
	struct summary *s = ud;
	if (s->elements++ == 0) {
		snprintf(s->root, sizeof s->root, "%s", name);
		s->echo = s->root;
	}
	if (++s->depth > s->max_depth)
		s->max_depth = s->depth;
	for (; attr[0]; attr += 2) {
		s->attributes++;
#ifdef PARSED_BUG
		if (!strcmp(attr[0], "id"))
			decode_id(s, attr[1]);
#endif
	}
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	((struct summary *)ud)->depth--;
}

static void XMLCALL on_text(void *ud, const XML_Char *t, int n)
{
	((struct summary *)ud)->text += (unsigned long)n;
}

/* Parse req[0..n) into a reply of REPLY_MAX bytes (allocated here). */
static char *parse(const char *req, size_t n)
{
	struct summary *s = calloc(1, sizeof *s);
	char *reply = malloc(REPLY_MAX);
	XML_Parser p = XML_ParserCreate(NULL);
	if (!s || !reply || !p) {
		free(s);
		if (p)
			XML_ParserFree(p);
		return reply ? strcpy(reply, "error: out of memory\n") : NULL;
	}
	XML_SetUserData(p, s);
	XML_SetElementHandler(p, on_start, on_end);
	XML_SetCharacterDataHandler(p, on_text);
	if (XML_Parse(p, req, (int)n, 1) == XML_STATUS_ERROR)
		snprintf(reply, REPLY_MAX, "error: %s at line %lu\n", XML_ErrorString(XML_GetErrorCode(p)),
			 (unsigned long)XML_GetCurrentLineNumber(p));
	else
		snprintf(reply, REPLY_MAX, "ok root=%s elements=%lu attributes=%lu depth=%lu text=%lu echo=%.40s\n",
			 s->root, s->elements, s->attributes, s->max_depth, s->text,
			 s->echo ? s->echo : "");
	XML_ParserFree(p);
	free(s);
	return reply;
}

/* ---- plumbing ----------------------------------------------------------------- */

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

/* In the worker (child or thread): into the compartment (*cp), locked;
 * read the request from the client; parse.  NULL when the lock failed. */
static char *work(int cfd, const char **why, void **cp)
{
#ifndef PARSED_NO_XPFO
	xpfo_compartment_t *c = xpfo_compartment_create("parser", XPFO_COMPARTMENT_STRICT);
	*cp = c;
	if (!c || (lock_on ? xpfo_lock_thread(c, 0) : !xpfo_enter(c))) {
		*why = strerror(errno);
		return NULL;
	}
#endif
	char *req = malloc(REQ_MAX);
	if (!req)
		return NULL;
	size_t n = read_all(cfd, req, REQ_MAX);
	char *reply = parse(req, n);
	free(req);
	return reply;
}

/* The request cannot be served (a pipe, a fork or a thread could not be
 * made; errno says why): the client is told, and so is the operator. */
static void refuse(int cfd, const char *what)
{
	int e = errno;
	fprintf(stderr, "parsed: %s: %s\n", what, strerror(e));
	service_drain(cfd);
	dprintf(cfd, "error: the service cannot take the request now (%s: %s)\n", what, strerror(e));
}

/* --mode=fork: the child parses and writes the reply to a pipe. */
static void serve_fork(int cfd)
{
	int p[2];
	if (pipe(p)) {
		refuse(cfd, "pipe");
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		refuse(cfd, "fork");
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		close(listen_fd); /* the parser gets the request and the pipe, nothing else */
		const char *why = "?";
		void *c;
		char *reply = work(cfd, &why, &c);
		if (!reply)
			dprintf(p[1], "error: cannot lock the parser: %s\n", why);
		else
			write_all(p[1], reply, strlen(reply));
		_exit(0);
	}
	close(p[1]);
	char *reply = calloc(1, REPLY_MAX + 1); /* root's copy */
	if (!reply) { /* the child first: it may be reading the request */
		close(p[0]);
		waitpid(pid, NULL, 0);
		errno = ENOMEM;
		refuse(cfd, "calloc");
		return;
	}
	size_t n = read_all(p[0], reply, REPLY_MAX);
	close(p[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	service_reap_orphans();
	if (!WIFEXITED(st) || n == 0)
		n = (size_t)snprintf(reply, REPLY_MAX, "error: the parser died (%s)\n",
				     WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "no reply");
	service_drain(cfd);
	write_all(cfd, reply, n);
	free(reply);
}

#ifndef PARSED_NO_XPFO
/* --mode=thread: a worker thread per request parses, locked, and gives its
 * reply block to root. */
struct job {
	int cfd;
	char *reply;
	const char *why;
	void *comp; /* destroyed once the thread is gone (its reserved segments too) */
};

static void *worker(void *arg)
{
	struct job *j = arg;
	char *r = work(j->cfd, &j->why, &j->comp);
	if (r && xpfo_transfer(r, xpfo_root()) == 0)
		j->reply = r;
	return NULL;
}

static void serve_thread(int cfd)
{
	struct job j = { cfd, NULL, "no reply", NULL };
	pthread_t th;
	int e = pthread_create(&th, NULL, worker, &j);
	if (e) {
		errno = e;
		refuse(cfd, "pthread_create");
		return;
	}
	pthread_join(th, NULL);
	if (j.comp && xpfo_compartment_destroy(j.comp))
		fprintf(stderr, "parsed: cannot destroy the parser's compartment: %s\n", strerror(errno));
	service_drain(cfd); /* a worker that failed before it read the request */
	if (j.reply) {
		write_all(cfd, j.reply, strlen(j.reply));
		free(j.reply);
	} else {
		dprintf(cfd, "error: the parser failed: %s\n", j.why);
	}
}
#endif

static void keep_secret(int print)
{
	const char *k = getenv("PARSED_API_KEY");
	k = k ? k : "API-KEY-0123456789abcdef";
	key_block = malloc(64);
	key_run = malloc(65536);
	snprintf(key_block, 64, "%s", k);
	snprintf(key_run, 65536, "%s", k);
	if (print)
		fprintf(stderr, "parsed: secret at %p and %p\n", (void *)key_block, (void *)key_run);
}

int main(int argc, char **argv)
{
	int thread = 0, print = 0;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mode=thread"))
			thread = 1;
		else if (!strcmp(argv[i], "--mode=fork"))
			thread = 0;
		else if (!strcmp(argv[i], "--no-lock"))
			lock_on = 0;
		else if (!strcmp(argv[i], "--print-secrets"))
			print = 1;
		else
			path = argv[i];
	}
	if (!path) {
		fprintf(stderr, "usage: parsed [--mode=fork|thread] [--no-lock] [--print-secrets] SOCKET\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	keep_secret(print);
	int lfd = listen_fd = service_listen(path);
	fprintf(stderr, "parsed: listening on %s (%s)\n", path, thread ? "locked threads" : "forked children");
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0) {
			service_accept_failed("parsed");
			continue;
		}
#ifndef PARSED_NO_XPFO
		if (thread)
			serve_thread(cfd);
		else
#endif
			serve_fork(cfd);
		close(cfd);
	}
}
