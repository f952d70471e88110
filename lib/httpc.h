/*
 * The one HTTP client of the project (driver): one request, one answer, on
 * a new TCP connection, every wait bounded by one deadline and every part
 * of the request and the answer by a size. http:// reaches a numeric IPv4
 * address or localhost (127.0.0.1), no resolver. https:// (OpenSSL's
 * libssl: TLS 1.2 or later, SNI) reaches a DNS name (getaddrinfo, which
 * has its own timeouts, not the deadline), an IPv4 address or localhost,
 * port 443 by default; the certificate's chain is verified against
 * FLASHSALE_HTTPC_CA_FILE when it is set, else the system's trust store,
 * and it must name the URL's host.
 * HTTP/1.0, so the server closes the connection after its answer and never
 * chunks it. Used by the operator's tools (metrics, watch), the payment
 * provider's API calls, the provider simulator's webhooks and the fetch of
 * an identity provider's keys (flashsale-admin jwks fetch).
 */
#ifndef FS_HTTPC_H
#define FS_HTTPC_H

#include <stddef.h>

#define FS_HTTPC_URL_MAX	512		/* bytes in a URL */
#define FS_HTTPC_HEAD_MAX	8192		/* bytes in the answer's status line and headers */
#define FS_HTTPC_BODY_MAX	(4 * 1024 * 1024) /* bytes in the answer's body */
#define FS_HTTPC_REQ_HEAD_MAX	4096		/* bytes of extra header lines we send */
#define FS_HTTPC_REQ_BODY_MAX	65536		/* bytes of body we send */

struct fs_httpc_answer {
	int status;
	char head[FS_HTTPC_HEAD_MAX + 1];	/* status line and headers, NUL-terminated */
	char *body;				/* NUL-terminated; free with fs_httpc_answer_free */
	size_t len;
};

/*
 * Sends METHOD url ("http://A.B.C.D:PORT/path", http://localhost:PORT/path
 * or "https://HOST[:PORT]/path") without a body and reads the whole answer
 * within timeout_ms. 0 with a filled (the caller frees it), or -1 with err
 * set: a malformed URL, no connection, a refused certificate ("the
 * certificate of HOST is refused: REASON"), a timeout, an answer that is
 * not HTTP or larger than the limits, a TLS answer cut short.
 */
int fs_httpc_request(const char *method, const char *url, int timeout_ms,
    struct fs_httpc_answer *a, char *err, size_t errlen);
/*
 * The same with extra header lines (each "Name: value\r\n", or NULL) and a
 * body of len bytes (or NULL and 0). The request's bytes are wiped once
 * sent: its headers may carry a credential.
 */
int fs_httpc_send(const char *method, const char *url, const char *headers, const char *body,
    size_t len, int timeout_ms, struct fs_httpc_answer *a, char *err, size_t errlen);
/* 0 when url is one fs_httpc_send takes (parsed, not resolved nor dialled), else -1 with err set. */
int fs_httpc_url_ok(const char *url, char *err, size_t errlen);
void fs_httpc_answer_free(struct fs_httpc_answer *);
/* The value of header name (case-insensitive) into out; 1 found, 0 not. */
int fs_httpc_header(const struct fs_httpc_answer *, const char *name, char *out, size_t outlen);

#endif
