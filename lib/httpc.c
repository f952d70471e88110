#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <sodium.h>

#include "clock.h"
#include "httpc.h"

/* Waits for events on fd until the deadline; 0 ready, -1 timed out or failed. */
static int
wait_until(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left;
	int n;

	do {
		if ((left = deadline - fs_clock_mono_ms()) <= 0)
			return -1;
		n = poll(&p, 1, (int)left);
	} while (n < 0 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

/*
 * Splits "http://A.B.C.D:PORT/path" (or localhost) into an address, the
 * path and the authority for Host ("A.B.C.D:PORT": RFC 9110 wants the port
 * when it is not 80, and a server that builds URLs from Host, as an OpenID
 * provider's discovery document does, needs it); 0 or -1.
 */
static int
parse_url(const char *url, struct sockaddr_in *sa, char host[72], const char **path)
{
	const char *p, *colon;
	char *end;
	long port;
	size_t n;

	if (strncmp(url, "http://", 7) != 0 || strlen(url) > FS_HTTPC_URL_MAX)
		return -1;
	p = url + 7;
	if ((colon = strchr(p, ':')) == NULL || (n = (size_t)(colon - p)) == 0 || n >= 64)
		return -1;
	memcpy(host, p, n);
	host[n] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno != 0 || end == colon + 1 || port < 1 || port > 65535 || (*end != '/' && *end != '\0'))
		return -1;
	*path = *end == '\0' ? "/" : end;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((unsigned short)port);
	/* The one name known without a resolver: an issuer on this host may use it. */
	if (inet_pton(AF_INET, strcmp(host, "localhost") == 0 ? "127.0.0.1" : host, &sa->sin_addr) != 1)
		return -1;
	snprintf(host + n, 72 - n, ":%ld", port);
	return 0;
}

/* Connects without blocking past the deadline; the socket, or -1. */
static int
dial(const struct sockaddr_in *sa, long long deadline)
{
	int fd, soerr = 0;
	socklen_t len = sizeof(soerr);

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) != 0) {
		if (errno != EINPROGRESS || wait_until(fd, POLLOUT, deadline) != 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Reads until the server closes; the bytes in *buf (NUL-terminated), or -1. */
static ssize_t
read_all(int fd, long long deadline, char **buf, char *err, size_t errlen)
{
	size_t cap = 16384, have = 0, max = FS_HTTPC_HEAD_MAX + FS_HTTPC_BODY_MAX;
	char *b = malloc(cap + 1), *nb;
	ssize_t n;

	if (b == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (;;) {
		if (have == cap) {
			if (cap >= max) {
				snprintf(err, errlen, "answer larger than %zu bytes", max);
				goto fail;
			}
			cap = cap * 2 > max ? max : cap * 2;
			if ((nb = realloc(b, cap + 1)) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto fail;
			}
			b = nb;
		}
		if (wait_until(fd, POLLIN, deadline) != 0) {
			snprintf(err, errlen, "timed out reading the answer");
			goto fail;
		}
		if ((n = read(fd, b + have, cap - have)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			snprintf(err, errlen, "read: %s", strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		have += (size_t)n;
	}
	b[have] = '\0';
	*buf = b;
	return (ssize_t)have;
fail:
	free(b);
	return -1;
}

int
fs_httpc_request(const char *method, const char *url, int timeout_ms, struct fs_httpc_answer *a,
    char *err, size_t errlen)
{
	return fs_httpc_send(method, url, NULL, NULL, 0, timeout_ms, a, err, errlen);
}

/*
 * The request's bytes, head then body, in a new buffer of *cap bytes that
 * the caller wipes (the headers may hold an API key) and frees; *len of
 * them are used. NULL with err set.
 */
static char *
request_bytes(const char *method, const char *host, const char *path, const char *headers,
    const char *body, size_t bodylen, size_t *cap, size_t *len, char *err, size_t errlen)
{
	size_t hlen = headers != NULL ? strlen(headers) : 0;
	char *req;
	int n;

	if (hlen > FS_HTTPC_REQ_HEAD_MAX || bodylen > FS_HTTPC_REQ_BODY_MAX) {
		snprintf(err, errlen, "request headers over %d or body over %d bytes", FS_HTTPC_REQ_HEAD_MAX,
		    FS_HTTPC_REQ_BODY_MAX);
		return NULL;
	}
	*cap = FS_HTTPC_URL_MAX + 256 + hlen + bodylen;
	if ((req = malloc(*cap)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	n = snprintf(req, *cap,
	    "%s %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: flashsale\r\nConnection: close\r\n"
	    "%sContent-Length: %zu\r\n\r\n",
	    method, path, host, headers != NULL ? headers : "", bodylen);
	if (n < 0 || (size_t)n + bodylen > *cap) {
		snprintf(err, errlen, "request too long");
		sodium_memzero(req, *cap);
		free(req);
		return NULL;
	}
	if (bodylen > 0)
		memcpy(req + n, body, bodylen);
	*len = (size_t)n + bodylen;
	return req;
}

/* Sends the len bytes at buf before the deadline; 0, or -1 with err set. */
static int
send_all(int fd, const char *buf, size_t len, long long deadline, const char *url, char *err,
    size_t errlen)
{
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		if (wait_until(fd, POLLOUT, deadline) != 0) {
			snprintf(err, errlen, "timed out sending to %s", url);
			return -1;
		}
		if ((n = send(fd, buf + off, len - off, MSG_NOSIGNAL)) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			snprintf(err, errlen, "write: %s", strerror(errno));
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/*
 * Splits raw, the len bytes of an answer (NUL-terminated), into a's
 * status and head, and moves the body to the front of raw, which becomes
 * a->body: one allocation to free. 0, or -1 with err set and raw still
 * the caller's.
 */
static int
take_answer(char *raw, size_t len, struct fs_httpc_answer *a, const char *url, char *err,
    size_t errlen)
{
	char *sep;
	size_t headlen;

	if ((sep = strstr(raw, "\r\n\r\n")) == NULL ||
	    (headlen = (size_t)(sep - raw)) > FS_HTTPC_HEAD_MAX ||
	    sscanf(raw, "HTTP/1.%*1[01] %3d", &a->status) != 1 || a->status < 100 ||
	    a->status > 599) {
		snprintf(err, errlen, "not an HTTP answer from %s", url);
		return -1;
	}
	memcpy(a->head, raw, headlen);
	a->head[headlen] = '\0';
	a->len = len - headlen - 4;
	if (a->len > FS_HTTPC_BODY_MAX) {
		snprintf(err, errlen, "body larger than %d bytes", FS_HTTPC_BODY_MAX);
		return -1;
	}
	memmove(raw, sep + 4, a->len + 1);
	a->body = raw;
	return 0;
}

int
fs_httpc_send(const char *method, const char *url, const char *headers, const char *body,
    size_t bodylen, int timeout_ms, struct fs_httpc_answer *a, char *err, size_t errlen)
{
	long long deadline = fs_clock_mono_ms() + timeout_ms;
	struct sockaddr_in sa;
	char host[72], *req, *raw = NULL;
	const char *path;
	size_t cap = 0, reqlen = 0;
	ssize_t len;
	int fd = -1, rc = -1;

	memset(a, 0, sizeof(*a));
	if (parse_url(url, &sa, host, &path) != 0) {
		snprintf(err, errlen, "not a URL http://A.B.C.D:PORT/path (or localhost): %.200s", url);
		return -1;
	}
	if ((req = request_bytes(method, host, path, headers, body, bodylen, &cap, &reqlen, err,
		 errlen)) == NULL)
		return -1;
	if ((fd = dial(&sa, deadline)) < 0) {
		snprintf(err, errlen, "cannot connect to %s", url);
		goto out;
	}
	if (send_all(fd, req, reqlen, deadline, url, err, errlen) != 0 ||
	    (len = read_all(fd, deadline, &raw, err, errlen)) < 0 ||
	    take_answer(raw, (size_t)len, a, url, err, errlen) != 0)
		goto out;
	raw = NULL;
	rc = 0;
out:
	sodium_memzero(req, cap);
	free(req);
	free(raw);
	if (fd >= 0)
		close(fd);
	return rc;
}

void
fs_httpc_answer_free(struct fs_httpc_answer *a)
{
	if (a == NULL)
		return;
	free(a->body);
	a->body = NULL;
	a->len = 0;
}

int
fs_httpc_header(const struct fs_httpc_answer *a, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);
	const char *line = strstr(a->head, "\r\n");

	while (line != NULL) {
		const char *next, *v;
		size_t vlen;

		line += 2;
		next = strstr(line, "\r\n");
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			v = line + nlen + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			vlen = next != NULL ? (size_t)(next - v) : strlen(v);
			snprintf(out, outlen, "%.*s", (int)vlen, v);
			return 1;
		}
		line = next;
	}
	return 0;
}
