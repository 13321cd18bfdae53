/* service.h - the Unix-socket plumbing of the example services (parsed,
 * pngd): one request per connection, served one at a time, a locked child
 * forked per request.  Each of these was a bug in one of them first.
 */
#ifndef EXAMPLES_SERVICE_H
#define EXAMPLES_SERVICE_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The listening socket at path.  It gets its name only once it listens:
 * bound under a name of its own, then renamed to path (which replaces an
 * old one), so a client that finds path can connect.  Bound to path
 * itself, it refuses a client that comes between the bind and the listen:
 * most likely what made two CI runs of tests/sandbox/service.sh lose 191
 * and 302 of 1,000 requests, the server held up there by the load.
 * Exits on failure. */
static inline int service_listen(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int n = snprintf(a.sun_path, sizeof a.sun_path, "%s.%ld", path, (long)getpid());
	if (n < 0 || (size_t)n >= sizeof a.sun_path) {
		fprintf(stderr, "%s: the path is too long for a socket\n", path);
		exit(1);
	}
	unlink(a.sun_path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 64) ||
	    rename(a.sun_path, path)) {
		perror(path);
		unlink(a.sun_path);
		exit(1);
	}
	return fd;
}

/* accept failed (errno): out of descriptors or memory, the connection
 * waits in the backlog.  Said once, then a pause: not a loop at full
 * speed until a descriptor comes free. */
static inline void service_accept_failed(const char *name)
{
	static int said;
	if (errno == EINTR || errno == ECONNABORTED)
		return;
	if (!said++)
		fprintf(stderr, "%s: accept: %s (retrying every 100 ms)\n", name, strerror(errno));
	usleep(100000);
}

/* What the client sent and nobody read, read before the reply: a socket
 * closed with unread bytes resets the connection, and the client loses the
 * reply (a request refused, cut at the size limit, or a child that failed
 * before it read).  The client shuts its side down after the request. */
static inline void service_drain(int cfd)
{
	char buf[4096];
	ssize_t r;
	while ((r = read(cfd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
		;
}

/* A locked child's executor (the process xpfo_lock_thread starts) is
 * killed when the child exits; its parent gone, it is reaped by init, or
 * here when the service is process 1 (a container without an init: one
 * zombie a request otherwise).  After the request's own child was waited
 * for. */
static inline void service_reap_orphans(void)
{
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

#endif /* EXAMPLES_SERVICE_H */
