#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "metrics.h"
#include "push.h"

#define REQUEST_MAX (FS_PUSH_URL_MAX + FS_PUSH_CHANNEL_MAX + FS_PUSH_BODY_MAX + 256)
#define OUT_MAX (FS_PUSH_PIPELINE * REQUEST_MAX)

static void set_err(fs_push *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
set_err(fs_push *p, const char *fmt, ...)
{
	va_list ap;

	p->err = 1;
	va_start(ap, fmt);
	vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
	va_end(ap);
}

/* "/SOCKET:/PATH" (after unix:): the socket into p, *path the path. 0, or -1 with err set. */
static int
parse_unix(fs_push *p, const char *sock, const char **path, char *err, size_t errlen)
{
	const char *colon;

	if (*sock != '/' || (colon = strchr(sock, ':')) == NULL || colon[1] != '/' ||
	    (size_t)(colon - sock) >= sizeof(p->sock)) {
		snprintf(err, errlen, "push URL: want unix:/SOCKET:/PATH (socket path under %zu bytes)",
		    sizeof(p->sock));
		return -1;
	}
	memcpy(p->sock, sock, (size_t)(colon - sock));
	p->sock[colon - sock] = '\0';
	strcpy(p->host, "localhost");
	*path = colon + 1;
	return 0;
}

/*
 * "A.B.C.D:PORT[/PATH]" (after http://): the address into p, *path the
 * path. 0, or -1 with err set.
 */
static int
parse_http(fs_push *p, const char *host, const char **path, char *err, size_t errlen)
{
	const char *colon;
	struct in_addr a;
	size_t hostlen;
	char *end;
	long port;

	if ((colon = strchr(host, ':')) == NULL) {
		snprintf(err, errlen, "push URL needs an explicit port");
		return -1;
	}
	hostlen = (size_t)(colon - host);
	if (hostlen == 0 || hostlen >= sizeof(p->host)) {
		snprintf(err, errlen, "push URL host too long or empty");
		return -1;
	}
	memcpy(p->host, host, hostlen);
	p->host[hostlen] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || port < 1 || port > 65535 ||
	    (*end != '/' && *end != '\0')) {
		snprintf(err, errlen, "push URL port is not a number from 1 to 65535");
		return -1;
	}
	p->port = (int)port;
	if (inet_pton(AF_INET, p->host, &a) != 1) {
		snprintf(err, errlen, "push URL host must be a numeric IPv4 address");
		return -1;
	}
	*path = end;
	return 0;
}

/* One publisher: base is a single URL. */
static fs_push *
push_one_new(const char *base, char *err, size_t errlen)
{
	const char *path;
	fs_push *p;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->fd = -1;
	if (*base == '\0')
		return p;
	if (strncmp(base, "unix:", 5) == 0) {
		if (parse_unix(p, base + 5, &path, err, errlen) != 0)
			goto fail;
	} else if (strncmp(base, "http://", 7) != 0) {
		snprintf(err, errlen, "push URL must start with http:// or unix:");
		goto fail;
	} else if (parse_http(p, base + 7, &path, err, errlen) != 0)
		goto fail;
	if (strlen(path) >= sizeof(p->path)) {
		snprintf(err, errlen, "push URL path too long");
		goto fail;
	}
	strcpy(p->path, path);
	/* "/pub/" and "/pub" name the same place. */
	while (p->path[0] != '\0' && p->path[strlen(p->path) - 1] == '/')
		p->path[strlen(p->path) - 1] = '\0';
	if ((p->out = malloc(OUT_MAX)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	p->enabled = 1;
	return p;
fail:
	free(p);
	return NULL;
}

static void bg_free(struct fs_push_bg *);

static void
drop(fs_push *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

fs_push *
fs_push_new(const char *base, char *err, size_t errlen)
{
	char one[FS_PUSH_URL_MAX + 128];
	fs_push *first = NULL, **tail = &first;
	size_t len, n = 0;

	do {
		len = strcspn(base, " ");
		if (len >= sizeof(one)) {
			snprintf(err, errlen, "push URL too long");
			goto fail;
		}
		if (++n > FS_PUSH_TARGETS_MAX) {
			snprintf(err, errlen, "more than %d push URLs", FS_PUSH_TARGETS_MAX);
			goto fail;
		}
		memcpy(one, base, len);
		one[len] = '\0';
		if ((*tail = push_one_new(one, err, errlen)) == NULL)
			goto fail;
		tail = &(*tail)->next;
		base += len;
		base += strspn(base, " ");
	} while (*base != '\0');
	return first;
fail:
	fs_push_free(first);
	return NULL;
}

void
fs_push_free(fs_push *p)
{
	fs_push *next;

	for (; p != NULL; p = next) {
		next = p->next;
		bg_free(p->bg);
		drop(p);
		free(p->out);
		free(p);
	}
}

/* Waits until fd is ready for events; 0, or -1 on timeout or error. */
static int
wait_fd(int fd, short events)
{
	struct pollfd pfd = { fd, events, 0 };
	int n;

	do
		n = poll(&pfd, 1, FS_PUSH_TIMEOUT_MS);
	while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

static int
connect_now(fs_push *p)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_un un;
	} addr;
	socklen_t addrlen, len = sizeof(int);
	int one = 1, soerr = 0;

	if (p->fd >= 0)
		return 0;
	memset(&addr, 0, sizeof(addr));
	if (p->sock[0] != '\0') {
		addr.un.sun_family = AF_UNIX;
		memcpy(addr.un.sun_path, p->sock, strlen(p->sock) + 1);
		addrlen = sizeof(addr.un);
	} else {
		addr.in.sin_family = AF_INET;
		addr.in.sin_port = htons((uint16_t)p->port);
		inet_pton(AF_INET, p->host, &addr.in.sin_addr);
		addrlen = sizeof(addr.in);
	}
	if ((p->fd = socket(addr.sa.sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
		set_err(p, "push socket: %s", strerror(errno));
		return -1;
	}
	if (p->sock[0] == '\0')
		setsockopt(p->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(p->fd, &addr.sa, addrlen) != 0) {
		soerr = errno;
		if (soerr == EINPROGRESS && wait_fd(p->fd, POLLOUT) == 0 &&
		    getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
			return 0;
		set_err(p, "push connect %s: %s", p->sock[0] != '\0' ? p->sock : p->host,
		    soerr != 0 && soerr != EINPROGRESS ? strerror(soerr) : "timed out");
		drop(p);
		return -1;
	}
	return 0;
}

static int
send_all(fs_push *p, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = send(p->fd, buf, len, MSG_NOSIGNAL);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (wait_fd(p->fd, POLLOUT) != 0)
				return -1;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else {
			return -1;
		}
	}
	return 0;
}

/* The value of a header in a NUL-terminated header block, or NULL. */
static const char *
header_value(const char *head, const char *name)
{
	size_t nlen = strlen(name);

	for (const char *line = strstr(head, "\r\n"); line != NULL; line = strstr(line, "\r\n")) {
		line += 2;
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			line += nlen + 1;
			while (*line == ' ' || *line == '\t')
				line++;
			return line;
		}
	}
	return NULL;
}

/* Reads more of the answers into p->in; 1 read, 0 closed, -1 error. */
static int
fill(fs_push *p)
{
	for (;;) {
		ssize_t n = recv(p->fd, p->in + p->inlen, FS_PUSH_REPLY_MAX - p->inlen, 0);

		if (n > 0) {
			p->inlen += (size_t)n;
			return 1;
		}
		if (n == 0 || errno == ECONNRESET || errno == EPIPE)
			return 0;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_fd(p->fd, POLLIN) != 0) {
				set_err(p, "push: no answer within %d ms", FS_PUSH_TIMEOUT_MS);
				return -1;
			}
		} else if (errno != EINTR) {
			set_err(p, "push recv: %s", strerror(errno));
			return -1;
		}
	}
}

/*
 * Takes one answer off the connection: its status, and its body when a
 * Content-Length says how long it is (then the connection can carry the
 * next answer: *keep). Returns the status, 0 when the peer closed before
 * answering anything (a kept-alive connection that the server dropped),
 * -1 on errors.
 */
static int
read_answer(fs_push *p, int *keep)
{
	const char *cl, *conn;
	char *eoh, *end;
	size_t total;
	long clen;
	int status, got;

	*keep = 0;
	for (;;) {
		p->in[p->inlen] = '\0';
		if ((eoh = strstr(p->in, "\r\n\r\n")) != NULL)
			break;
		if (p->inlen == FS_PUSH_REPLY_MAX) {
			set_err(p, "push: answer headers too big");
			return -1;
		}
		if ((got = fill(p)) <= 0) {
			if (got == 0 && p->inlen == 0)
				return 0;
			if (got == 0)
				set_err(p, "push: connection closed mid-answer");
			return -1;
		}
	}
	if (strncmp(p->in, "HTTP/1.", 7) != 0 || p->inlen < 12 || p->in[8] != ' ') {
		set_err(p, "push: not an HTTP answer");
		return -1;
	}
	status = (int)strtol(p->in + 9, NULL, 10);
	*eoh = '\0';
	cl = header_value(p->in, "Content-Length");
	conn = header_value(p->in, "Connection");
	clen = cl != NULL ? strtol(cl, &end, 10) : -1;
	total = (size_t)(eoh + 4 - p->in) + (size_t)(clen > 0 ? clen : 0);
	if (clen < 0 || total > FS_PUSH_REPLY_MAX ||
	    (conn != NULL && strncasecmp(conn, "close", 5) == 0)) {
		/* Cannot tell where the next answer starts: this connection is done. */
		p->inlen = 0;
		return status;
	}
	while (p->inlen < total)
		if (fill(p) <= 0)
			return status;
	memmove(p->in, p->in + total, p->inlen - total);
	p->inlen -= total;
	*keep = 1;
	return status;
}

static const char channel_chars[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-";

/* Renders one request into out; its length, or 0 when the message is unfit. */
static size_t
render(fs_push *p, const struct fs_push_msg *m, char *out, size_t outlen)
{
	size_t clen = strlen(m->channel);
	int n;

	if (clen == 0 || clen > FS_PUSH_CHANNEL_MAX ||
	    strspn(m->channel, channel_chars) != clen) {
		set_err(p, "push: bad channel id");
		return 0;
	}
	if (m->len > FS_PUSH_BODY_MAX) {
		set_err(p, "push: message too big (over %d bytes)", FS_PUSH_BODY_MAX);
		return 0;
	}
	n = snprintf(out, outlen,
	    "POST %s/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%.*s",
	    p->path, m->channel, p->host, m->len, (int)m->len, m->body);
	if (n < 0 || (size_t)n >= outlen) {
		set_err(p, "push: request too big");
		return 0;
	}
	return (size_t)n;
}


/* What one exchange of pipelined requests came to. */
struct answers {
	size_t got;	/* answers read, in order */
	size_t ok;	/* of which 2xx */
	size_t refused;	/* of which another status */
	int closing;	/* the last one closed the connection: those after it were not read */
};

/*
 * Sends the k requests in req and reads their answers into *a. -1 when a
 * kept-alive connection turned out to be closed before anything was
 * answered (the caller may send them again), else 0.
 */
static int
exchange(fs_push *p, const char *req, size_t len, size_t k, struct answers *a)
{
	int fresh = p->fd < 0, keep = 1;

	memset(a, 0, sizeof(*a));
	if (connect_now(p) != 0)
		return 0;
	if (send_all(p, req, len) != 0) {
		set_err(p, "push send: %s", strerror(errno));
		drop(p);
		return fresh ? 0 : -1;
	}
	while (a->got < k) {
		int status = read_answer(p, &keep);

		if (status == 0 && a->got == 0 && !fresh) {
			drop(p);
			return -1;
		}
		if (status <= 0) {
			drop(p);
			break;
		}
		a->got++;
		if (status >= 200 && status <= 299) {
			a->ok++;
		} else {
			/* nchan's memory full: 507 (no room for a channel) or 500 (for a message). */
			a->refused++;
			set_err(p, "push: publisher answered %d", status);
		}
		if (!keep) {
			/* nginx closes after a 500: it reads none of the requests behind it. */
			a->closing = a->got < k;
			drop(p);
			break;
		}
	}
	return 0;
}

/* Publishes to one publisher; how many failed (refused ones included). */
static size_t
publish_one(fs_push *p, const struct fs_push_msg *msgs, size_t n)
{
	size_t failed = 0, refused = 0;
	char *req = p->out;

	if (!p->enabled)
		return 0;
	for (size_t i = 0; i < n; i += FS_PUSH_PIPELINE) {
		size_t k = n - i < FS_PUSH_PIPELINE ? n - i : FS_PUSH_PIPELINE, len = 0, sent = 0,
		       done = 0, ok = 0, at[FS_PUSH_PIPELINE + 1];
		struct answers a;
		int stale = 0;

		for (size_t j = 0; j < k; j++) {
			size_t one = render(p, &msgs[i + j], req + len, OUT_MAX - len);

			if (one == 0) {
				failed++;
				continue;
			}
			at[sent++] = len;
			len += one;
		}
		at[sent] = len;
		/*
		 * The rest after a closing answer go again on a new connection
		 * (each round answers one at least); a kept-alive connection that
		 * the server had closed gets one fresh try.
		 */
		while (done < sent) {
			p->inlen = 0;
			if (exchange(p, req + at[done], len - at[done], sent - done, &a) < 0) {
				if (stale++ > 0)
					break;
				continue;
			}
			done += a.got;
			ok += a.ok;
			refused += a.refused;
			if (!a.closing)
				break;
		}
		failed += sent - ok;
	}
	if (failed == 0)
		p->err = 0;
	fs_metrics_add(FS_M_PUSH_SENT, n - failed);
	fs_metrics_add(FS_M_PUSH_REFUSED, refused);
	fs_metrics_add(FS_M_PUSH_FAILED, failed - refused);
	return failed;
}

size_t
fs_push_publish_many(fs_push *p, const struct fs_push_msg *msgs, size_t n)
{
	size_t failed = publish_one(p, msgs, n), f;

	for (fs_push *q = p->next; q != NULL; q = q->next)
		if ((f = publish_one(q, msgs, n)) > 0) {
			memcpy(p->errstr, q->errstr, sizeof(p->errstr));
			p->err = 1;
			if (f > failed)
				failed = f;
		}
	return failed;
}

int
fs_push_publish(fs_push *p, const char *channel, const char *body, size_t len)
{
	struct fs_push_msg m = { channel, body, len };

	return fs_push_publish_many(p, &m, 1) == 0 ? 0 : -1;
}

/* The number after "NAME: " in nchan's status text, scaled by a K suffix; -1 when missing. */
static long long
status_number(const char *text, const char *name)
{
	const char *at = strstr(text, name);
	char *end;
	long long v;

	if (at == NULL || (at != text && at[-1] != '\n'))
		return -1;
	at += strlen(name);
	errno = 0;
	v = strtoll(at, &end, 10);
	if (errno != 0 || end == at || v < 0 || v > (1LL << 50))
		return -1;
	return *end == 'K' ? v * 1024 : v;
}

int
fs_push_memory_of(fs_push *p, struct fs_push_memory *m)
{
	static const char req[] = "GET " FS_PUSH_STATUS_PATH " HTTP/1.1\r\nHost: localhost\r\n"
				  "Connection: close\r\n\r\n";
	const char *body;

	if (!p->enabled) {
		set_err(p, "push: publishing is off");
		return -1;
	}
	drop(p); /* a connection of its own: nothing else in flight on it */
	p->inlen = 0;
	if (connect_now(p) != 0)
		return -1;
	if (send_all(p, req, sizeof(req) - 1) != 0) {
		set_err(p, "push status: send failed");
		drop(p);
		return -1;
	}
	/* Connection: close: the answer ends when the server closes. */
	while (p->inlen < FS_PUSH_REPLY_MAX && fill(p) > 0)
		;
	drop(p);
	p->in[p->inlen] = '\0';
	p->inlen = 0;
	if (strncmp(p->in, "HTTP/1.1 200 ", 13) != 0 || (body = strstr(p->in, "\r\n\r\n")) == NULL) {
		set_err(p, "push status: no 200 with a body");
		return -1;
	}
	body += 4;
	m->used = status_number(body, "shared memory used: ");
	m->limit = status_number(body, "shared memory limit: ");
	m->stored = status_number(body, "stored messages: ");
	if (m->used < 0 || m->limit <= 0 || m->stored < 0) {
		set_err(p, "push status: not nchan's status text");
		return -1;
	}
	return 0;
}

void
fs_push_where(const fs_push *p, char *out, size_t outlen)
{
	if (p->sock[0] != '\0')
		snprintf(out, outlen, "%s", p->sock);
	else
		snprintf(out, outlen, "%s:%d", p->host, p->port);
}

/* One background sender: its thread, its connection, its share of a batch. */
struct lane {
	pthread_t thread;
	fs_push *push;	/* a copy of the owner's settings, its own connection */
	size_t from, n, failed;
	int queued;	/* a share waits for this lane */
	struct fs_push_bg *bg;
};

struct fs_push_bg {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int quit;
	size_t busy;	/* lanes with a share not yet sent */
	struct lane lane[FS_PUSH_LANES];
	size_t lanes;	/* threads started */
	int started;	/* a batch is out (fs_push_finish has not seen it) */
	size_t failed_at_once;	/* of a batch published without the lanes */
	struct fs_push_msg *msgs;	/* copies of the batch's messages */
	char *data;	/* their channels and bodies */
	size_t msgs_cap, data_cap;
};

/* A lane's thread: publishes each share queued for it until told to quit. */
static void *
lane_main(void *arg)
{
	struct lane *l = arg;
	struct fs_push_bg *bg = l->bg;

	pthread_mutex_lock(&bg->mu);
	for (;;) {
		while (!l->queued && !bg->quit)
			pthread_cond_wait(&bg->cv, &bg->mu);
		if (!l->queued)
			break;
		pthread_mutex_unlock(&bg->mu);
		l->failed = fs_push_publish_many(l->push, bg->msgs + l->from, l->n);
		/* Only the first lane keeps its connection between batches. */
		if (l != &bg->lane[0])
			drop(l->push);
		pthread_mutex_lock(&bg->mu);
		l->queued = 0;
		bg->busy--;
		pthread_cond_broadcast(&bg->cv);
	}
	pthread_mutex_unlock(&bg->mu);
	return NULL;
}

static void
bg_free(struct fs_push_bg *bg)
{
	if (bg == NULL)
		return;
	pthread_mutex_lock(&bg->mu);
	bg->quit = 1;
	pthread_cond_broadcast(&bg->cv);
	pthread_mutex_unlock(&bg->mu);
	for (size_t i = 0; i < bg->lanes; i++)
		pthread_join(bg->lane[i].thread, NULL);
	for (size_t i = 0; i < FS_PUSH_LANES; i++)
		fs_push_free(bg->lane[i].push);
	pthread_cond_destroy(&bg->cv);
	pthread_mutex_destroy(&bg->mu);
	free(bg->msgs);
	free(bg->data);
	free(bg);
}

/* The lanes with their threads and connections' settings; NULL when short of them. */
static struct fs_push_bg *
bg_new(const fs_push *p)
{
	struct fs_push_bg *bg = calloc(1, sizeof(*bg));

	if (bg == NULL)
		return NULL;
	if (pthread_mutex_init(&bg->mu, NULL) != 0) {
		free(bg);
		return NULL;
	}
	if (pthread_cond_init(&bg->cv, NULL) != 0) {
		pthread_mutex_destroy(&bg->mu);
		free(bg);
		return NULL;
	}
	for (size_t i = 0; i < FS_PUSH_LANES; i++) {
		struct lane *l = &bg->lane[i];

		l->bg = bg;
		if ((l->push = calloc(1, sizeof(*l->push))) == NULL ||
		    (l->push->out = malloc(OUT_MAX)) == NULL)
			goto fail;
		memcpy(l->push->host, p->host, sizeof(p->host));
		memcpy(l->push->sock, p->sock, sizeof(p->sock));
		memcpy(l->push->path, p->path, sizeof(p->path));
		l->push->port = p->port;
		l->push->fd = -1;
		l->push->enabled = 1;
		if (pthread_create(&l->thread, NULL, lane_main, l) != 0)
			goto fail;
		bg->lanes++;
	}
	return bg;
fail:
	bg_free(bg);
	return NULL;
}

/* Copies the batch into bg (the strings NUL-terminated); 0 or -1. */
static int
bg_copy(struct fs_push_bg *bg, const struct fs_push_msg *msgs, size_t n)
{
	size_t bytes = 0, at = 0;
	void *nb;

	for (size_t i = 0; i < n; i++)
		bytes += strlen(msgs[i].channel) + 1 + msgs[i].len + 1;
	if (n > bg->msgs_cap) {
		if ((nb = realloc(bg->msgs, n * sizeof(*msgs))) == NULL)
			return -1;
		bg->msgs = nb;
		bg->msgs_cap = n;
	}
	if (bytes > bg->data_cap) {
		if ((nb = realloc(bg->data, bytes)) == NULL)
			return -1;
		bg->data = nb;
		bg->data_cap = bytes;
	}
	for (size_t i = 0; i < n; i++) {
		size_t clen = strlen(msgs[i].channel) + 1;
		char *channel = bg->data + at, *body = channel + clen;

		memcpy(channel, msgs[i].channel, clen);
		memcpy(body, msgs[i].body, msgs[i].len);
		body[msgs[i].len] = '\0';
		bg->msgs[i].channel = channel;
		bg->msgs[i].body = body;
		bg->msgs[i].len = msgs[i].len;
		at += clen + msgs[i].len + 1;
	}
	return 0;
}

/* fs_push_start for one publisher of the list. */
static void
start_one(fs_push *p, const struct fs_push_msg *msgs, size_t n)
{
	struct fs_push_bg *bg;
	size_t share;

	if (!p->enabled || n == 0)
		return;
	if (p->bg == NULL)
		p->bg = bg_new(p);
	if ((bg = p->bg) == NULL || bg_copy(bg, msgs, n) != 0) {
		/* No lanes or no room for the copy: at once, on our own connection. */
		size_t failed = publish_one(p, msgs, n);

		if (bg != NULL) {
			bg->failed_at_once = failed;
			bg->started = 1;
		}
		return;
	}
	/* Whole pipelines per lane, so that no lane sends a short one needlessly. */
	share = (n + FS_PUSH_LANES - 1) / FS_PUSH_LANES;
	share = (share + FS_PUSH_PIPELINE - 1) / FS_PUSH_PIPELINE * FS_PUSH_PIPELINE;
	pthread_mutex_lock(&bg->mu);
	for (size_t i = 0, from = 0; i < FS_PUSH_LANES && from < n; i++, from += share) {
		struct lane *l = &bg->lane[i];

		l->from = from;
		l->n = n - from < share ? n - from : share;
		l->failed = 0;
		l->queued = 1;
		bg->busy++;
	}
	bg->failed_at_once = 0;
	bg->started = 1;
	pthread_cond_broadcast(&bg->cv);
	pthread_mutex_unlock(&bg->mu);
}

/* fs_push_finish for one publisher of the list. */
static size_t
finish_one(fs_push *p)
{
	struct fs_push_bg *bg = p->bg;
	size_t failed;

	if (bg == NULL || !bg->started)
		return 0;
	pthread_mutex_lock(&bg->mu);
	while (bg->busy > 0)
		pthread_cond_wait(&bg->cv, &bg->mu);
	pthread_mutex_unlock(&bg->mu);
	failed = bg->failed_at_once;
	for (size_t i = 0; i < FS_PUSH_LANES; i++) {
		struct lane *l = &bg->lane[i];

		failed += l->failed;
		if (l->failed > 0)
			memcpy(p->errstr, l->push->errstr, sizeof(p->errstr));
		l->failed = 0;
	}
	bg->started = 0;
	bg->failed_at_once = 0;
	return failed;
}

void
fs_push_start(fs_push *p, const struct fs_push_msg *msgs, size_t n)
{
	fs_push_finish(p);
	for (fs_push *q = p; q != NULL; q = q->next)
		start_one(q, msgs, n);
}

size_t
fs_push_finish(fs_push *p)
{
	size_t failed = finish_one(p), f;

	for (fs_push *q = p->next; q != NULL; q = q->next)
		if ((f = finish_one(q)) > 0) {
			memcpy(p->errstr, q->errstr, sizeof(p->errstr));
			if (f > failed)
				failed = f;
		}
	return failed;
}
