#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
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

/* Where a request goes: parsed from its URL. */
struct target {
	int tls;			/* https:// */
	int resolve;			/* name is a DNS name for getaddrinfo */
	int ip;				/* name is a numeric IPv4 address */
	struct sockaddr_in sa;		/* the address, unless resolve */
	char name[256];			/* the host as the URL gives it (SNI, verification) */
	char port[8];
	char host[272];			/* for Host: name[:port] */
	const char *path;
};

/*
 * Splits "http://A.B.C.D:PORT/path" (or localhost) into an address, the
 * path and the authority for Host ("A.B.C.D:PORT": RFC 9110 wants the port
 * when it is not 80, and a server that builds URLs from Host, as an OpenID
 * provider's discovery document does, needs it); 0 or -1.
 */
static int
parse_url(const char *url, struct sockaddr_in *sa, char host[272], const char **path)
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

/*
 * Splits "https://HOST[:PORT]/path" into t: HOST a DNS name, a numeric
 * IPv4 address or localhost (no IPv6 literal, no user info), PORT 443 by
 * default and named in Host only when it is not 443; 0 or -1.
 */
static int
parse_https(const char *url, struct target *t)
{
	const char *p = url + 8;
	size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-");
	long port = 443;
	char *end;

	if (strlen(url) > FS_HTTPC_URL_MAX || n == 0 || n > 253 || p[0] == '.' || p[0] == '-')
		return -1;
	memcpy(t->name, p, n);
	t->name[n] = '\0';
	p += n;
	if (*p == ':') {
		errno = 0;
		port = strtol(p + 1, &end, 10);
		if (errno != 0 || end == p + 1 || port < 1 || port > 65535)
			return -1;
		p = end;
	}
	if (*p != '/' && *p != '\0')
		return -1;
	t->path = *p == '\0' ? "/" : p;
	t->tls = 1;
	snprintf(t->port, sizeof(t->port), "%ld", port);
	if (port == 443)
		snprintf(t->host, sizeof(t->host), "%s", t->name);
	else
		snprintf(t->host, sizeof(t->host), "%s:%ld", t->name, port);
	memset(&t->sa, 0, sizeof(t->sa));
	t->sa.sin_family = AF_INET;
	t->sa.sin_port = htons((unsigned short)port);
	/* localhost without a resolver, as on http://; a dotted quad as it is. */
	if (strcmp(t->name, "localhost") == 0)
		t->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, t->name, &t->sa.sin_addr) == 1)
		t->ip = 1;
	else
		t->resolve = 1;
	return 0;
}

/* Connects without blocking past the deadline; the socket, or -1. */
static int
dial(const struct sockaddr *sa, socklen_t salen, long long deadline)
{
	int fd, soerr = 0;
	socklen_t len = sizeof(soerr);

	if ((fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	if (connect(fd, sa, salen) != 0) {
		if (errno != EINPROGRESS || wait_until(fd, POLLOUT, deadline) != 0 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0 || soerr != 0) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/*
 * What to wait for after an SSL call returned r: POLLIN or POLLOUT to call
 * it again, 0 for anything else (*e holds SSL_get_error's answer).
 */
static short
tls_wants(SSL *ssl, int r, int *e)
{
	*e = SSL_get_error(ssl, r);
	return *e == SSL_ERROR_WANT_READ ? POLLIN : *e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
}

/*
 * Reads up to len bytes from fd (or ssl over it) before the deadline: the
 * count, 0 at the end (*unclean set when a TLS peer closed the connection
 * without its close_notify), or -1 with err set.
 */
static ssize_t
read_some(int fd, SSL *ssl, char *buf, size_t len, long long deadline, int *unclean, char *err,
    size_t errlen)
{
	size_t got;
	ssize_t n;
	short ev;
	int e;

	if (ssl == NULL) {
		for (;;) {
			if (wait_until(fd, POLLIN, deadline) != 0) {
				snprintf(err, errlen, "timed out reading the answer");
				return -1;
			}
			if ((n = read(fd, buf, len)) >= 0)
				return n;
			if (errno != EINTR && errno != EAGAIN) {
				snprintf(err, errlen, "read: %s", strerror(errno));
				return -1;
			}
		}
	}
	for (;;) {
		ERR_clear_error();
		if (SSL_read_ex(ssl, buf, len, &got) == 1)
			return (ssize_t)got;
		if ((ev = tls_wants(ssl, 0, &e)) == 0)
			break;
		if (wait_until(fd, ev, deadline) != 0) {
			snprintf(err, errlen, "timed out reading the answer");
			return -1;
		}
	}
	if (e == SSL_ERROR_ZERO_RETURN)
		return 0;
	if (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
		*unclean = 1;
		return 0;
	}
	snprintf(err, errlen, "TLS read: %s",
	    ERR_peek_error() != 0 ? ERR_reason_error_string(ERR_peek_error()) : strerror(errno));
	return -1;
}

/* Reads until the server closes; the bytes in *buf (NUL-terminated), or -1. */
static ssize_t
read_all(int fd, SSL *ssl, long long deadline, char **buf, int *unclean, char *err, size_t errlen)
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
		if ((n = read_some(fd, ssl, b + have, cap - have, deadline, unclean, err, errlen)) < 0)
			goto fail;
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

/* Sends the len bytes at buf (over ssl if not NULL) before the deadline; 0, or -1 with err set. */
static int
send_all(int fd, SSL *ssl, const char *buf, size_t len, long long deadline, const char *url,
    char *err, size_t errlen)
{
	size_t off = 0, put;
	ssize_t n;
	short ev;
	int e;

	while (ssl == NULL && off < len) {
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
	/* Without partial writes SSL_write sends all or asks again with the same bytes. */
	while (ssl != NULL && off < len) {
		ERR_clear_error();
		if (SSL_write_ex(ssl, buf + off, len - off, &put) == 1) {
			off += put;
			continue;
		}
		if ((ev = tls_wants(ssl, 0, &e)) == 0) {
			snprintf(err, errlen, "TLS write to %s: %s", url,
			    ERR_peek_error() != 0 ? ERR_reason_error_string(ERR_peek_error()) : strerror(errno));
			return -1;
		}
		if (wait_until(fd, ev, deadline) != 0) {
			snprintf(err, errlen, "timed out sending to %s", url);
			return -1;
		}
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

/*
 * The client context, made once per process and kept (loading the system's
 * trust store costs about 20 ms) until FLASHSALE_HTTPC_CA_FILE names another
 * file; a context that could not be made is not kept.
 */
static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static SSL_CTX *tls_kept;
static char tls_kept_ca[1024];

/*
 * A client context: TLS 1.2 or later, the peer's chain verified against
 * FLASHSALE_HTTPC_CA_FILE when it is set, else the system's trust store.
 * The caller frees its reference; NULL with err set.
 */
static SSL_CTX *
tls_context(char *err, size_t errlen)
{
	const char *ca = getenv("FLASHSALE_HTTPC_CA_FILE");
	SSL_CTX *ctx = NULL;

	if (ca == NULL)
		ca = "";
	pthread_mutex_lock(&tls_lock);
	if (tls_kept != NULL && strcmp(tls_kept_ca, ca) == 0 && SSL_CTX_up_ref(tls_kept) == 1)
		ctx = tls_kept;
	pthread_mutex_unlock(&tls_lock);
	if (ctx != NULL)
		return ctx;
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
		snprintf(err, errlen, "TLS: cannot make a context");
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (*ca != '\0' ? SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1
			: SSL_CTX_set_default_verify_paths(ctx) != 1) {
		snprintf(err, errlen, "TLS: cannot read the certificate authorities of %.200s",
		    *ca != '\0' ? ca : "the system");
		SSL_CTX_free(ctx);
		return NULL;
	}
	pthread_mutex_lock(&tls_lock);
	if (strlen(ca) < sizeof(tls_kept_ca) && SSL_CTX_up_ref(ctx) == 1) {
		SSL_CTX_free(tls_kept);
		tls_kept = ctx;
		snprintf(tls_kept_ca, sizeof(tls_kept_ca), "%s", ca);
	}
	pthread_mutex_unlock(&tls_lock);
	return ctx;
}

/*
 * The TLS handshake with t over fd before the deadline: SNI and the name
 * (or address) the certificate must carry are the URL's host. The session,
 * or NULL with err set: a refused certificate is named with OpenSSL's
 * reason.
 */
static SSL *
tls_connect(SSL_CTX *ctx, int fd, const struct target *t, long long deadline, char *err,
    size_t errlen)
{
	SSL *ssl = SSL_new(ctx);
	long verify;
	short ev;
	int r, e;

	if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    (t->ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), t->name) != 1
		   : SSL_set_tlsext_host_name(ssl, t->name) != 1 || SSL_set1_host(ssl, t->name) != 1)) {
		snprintf(err, errlen, "TLS: cannot set up a session for %s", t->name);
		SSL_free(ssl);
		return NULL;
	}
	for (;;) {
		ERR_clear_error();
		if ((r = SSL_connect(ssl)) == 1)
			return ssl;
		if ((ev = tls_wants(ssl, r, &e)) == 0)
			break;
		if (wait_until(fd, ev, deadline) != 0) {
			snprintf(err, errlen, "timed out in the TLS handshake with %s", t->name);
			SSL_free(ssl);
			return NULL;
		}
	}
	if ((verify = SSL_get_verify_result(ssl)) != X509_V_OK)
		snprintf(err, errlen, "the certificate of %s is refused: %s", t->name,
		    X509_verify_cert_error_string(verify));
	else
		snprintf(err, errlen, "TLS handshake with %s failed: %s", t->name,
		    ERR_peek_error() != 0 ? ERR_reason_error_string(ERR_peek_error())
					  : "the connection closed");
	SSL_free(ssl);
	return NULL;
}

/*
 * Connects to t before the deadline: its address, or each address the
 * system's resolver gives for its name in turn. The resolver has no
 * deadline (getaddrinfo): its own timeouts bound it (resolv.conf's timeout
 * and attempts), and the time it takes counts against ours. The socket,
 * or -1 with err set.
 */
static int
connect_target(const struct target *t, const char *url, long long deadline, char *err,
    size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
		.ai_flags = AI_ADDRCONFIG },
			*res = NULL, *ai;
	int fd = -1, rc;

	if (!t->resolve) {
		if ((fd = dial((const struct sockaddr *)&t->sa, sizeof(t->sa), deadline)) < 0)
			snprintf(err, errlen, "cannot connect to %s", url);
		return fd;
	}
	if ((rc = getaddrinfo(t->name, t->port, &hints, &res)) != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", t->name, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL && fd < 0 && fs_clock_mono_ms() < deadline; ai = ai->ai_next)
		fd = dial(ai->ai_addr, ai->ai_addrlen, deadline);
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect to %s", url);
	return fd;
}

/*
 * A TLS peer that closed without its close_notify may have been cut short:
 * its answer stands only when it carries a Content-Length its body has.
 */
static int
whole_answer(const struct fs_httpc_answer *a, const char *url, char *err, size_t errlen)
{
	char v[32], *end;
	unsigned long long n;

	if (fs_httpc_header(a, "Content-Length", v, sizeof(v)) == 1) {
		errno = 0;
		n = strtoull(v, &end, 10);
		if (errno == 0 && end != v && *end == '\0' && n == a->len)
			return 0;
	}
	snprintf(err, errlen, "%s closed the connection without TLS close_notify and a Content-Length "
			      "its body has: the answer may be cut short", url);
	return -1;
}

/* Parses url into t; 0, or -1 with err set. */
static int
parse_target(const char *url, struct target *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (strncmp(url, "https://", 8) == 0) {
		if (parse_https(url, t) != 0) {
			snprintf(err, errlen, "not a URL https://HOST[:PORT]/path: %.200s", url);
			return -1;
		}
	} else if (parse_url(url, &t->sa, t->host, &t->path) != 0) {
		snprintf(err, errlen, "not a URL http://A.B.C.D:PORT/path (or localhost): %.200s", url);
		return -1;
	}
	return 0;
}

int
fs_httpc_url_ok(const char *url, char *err, size_t errlen)
{
	struct target t;

	return parse_target(url, &t, err, errlen);
}

int
fs_httpc_send(const char *method, const char *url, const char *headers, const char *body,
    size_t bodylen, int timeout_ms, struct fs_httpc_answer *a, char *err, size_t errlen)
{
	long long deadline = fs_clock_mono_ms() + timeout_ms;
	struct target t;
	char *req, *raw = NULL;
	size_t cap = 0, reqlen = 0;
	ssize_t len;
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd = -1, rc = -1, unclean = 0;

	memset(a, 0, sizeof(*a));
	if (parse_target(url, &t, err, errlen) != 0)
		return -1;
	if ((req = request_bytes(method, t.host, t.path, headers, body, bodylen, &cap, &reqlen, err,
		 errlen)) == NULL)
		return -1;
	if (t.tls && (ctx = tls_context(err, errlen)) == NULL)
		goto out;
	if ((fd = connect_target(&t, url, deadline, err, errlen)) < 0)
		goto out;
	if (t.tls && (ssl = tls_connect(ctx, fd, &t, deadline, err, errlen)) == NULL)
		goto out;
	if (send_all(fd, ssl, req, reqlen, deadline, url, err, errlen) != 0 ||
	    (len = read_all(fd, ssl, deadline, &raw, &unclean, err, errlen)) < 0 ||
	    take_answer(raw, (size_t)len, a, url, err, errlen) != 0)
		goto out;
	raw = NULL;
	if (unclean && whole_answer(a, url, err, errlen) != 0) {
		fs_httpc_answer_free(a);
		goto out;
	}
	rc = 0;
out:
	sodium_memzero(req, cap);
	free(req);
	free(raw);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
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
