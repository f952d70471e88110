/*
 * flashsale-load: the load generator of the sale rehearsal.
 *
 * It reads one line per shopper ("<bearer token> <purchase path>"), opens
 * keep-alive connections to a loopback server before the opening instant,
 * then sends every shopper's POST as fast as the connections allow, retrying
 * 503s and network errors the way real shoppers do.  Every request is
 * recorded, so the percentiles it prints are exact, not estimated.
 *
 * One file, libc only, so that it builds anywhere:
 *	gcc -O2 -std=c11 -D_GNU_SOURCE -o flashsale-load flashsale-load.c
 * Run it with --help for the options; --self-test checks the HTTP parser.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/* epoll, getrusage and friends are outside C11: ask for POSIX 2008 + XSI. */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LD_NAME			"flashsale-load"
#define LD_LINE_MAX		4096	/* token-file line, without CR LF */
#define LD_SHOPPERS_MAX		1000000
#define LD_ARENA_MAX		((size_t)1 << 31)	/* rendered requests */
#define LD_READ_BUF		(1 << 20)	/* token-file read buffer */
#define LD_HEAD_MAX		8192	/* response status line and headers */
#define LD_CHUNK_LINE_MAX	1024	/* chunk-size line with extensions */
#define LD_TRAILER_MAX		8192
#define LD_BODY_MAX		((uint64_t)64 << 20)	/* skipped; bounded */
#define LD_RECV_BUF		65536
#define LD_EVENTS_MAX		1024
#define LD_CONNECTIONS_MAX	20000
#define LD_RETRIES_MAX		10
#define LD_REQUESTS_MAX		(LD_SHOPPERS_MAX * (1LL + LD_RETRIES_MAX))
#define LD_DURATION_MAX_S	3600	/* record times fit uint32 us */
#define LD_TIMEOUT_MAX_MS	600000
#define LD_BACKOFF_MAX_MS	10000
#define LD_BACKOFF_CAP_MS	2000	/* longest network-error backoff */
#define LD_RETRY_AFTER_MAX_S	60
#define LD_JITTER_US		250000	/* spread after a Retry-After */
#define LD_WARMUP_MAX_US	2000000	/* connecting, without --start-at */
#define LD_START_AHEAD_MAX_MS	(24 * 3600 * 1000LL)
#define LD_SWEEP_US		50000	/* request timeout granularity */
#define LD_SECOND_US		1000000

/* Outcomes, as counted, reported and plotted. */
enum ld_cat {
	LD_CAT_202,
	LD_CAT_409,
	LD_CAT_410,
	LD_CAT_429,
	LD_CAT_503,
	LD_CAT_OTHER,
	LD_CAT_NETERR,
	LD_CAT__MAX
};

static const char *const ld_cat_names[LD_CAT__MAX] = {
	"202", "409", "410", "429", "503", "other", "neterr"
};

/* Why a request got no HTTP answer. */
enum ld_neterr {
	LD_NE_NONE,
	LD_NE_CONNECT,
	LD_NE_SEND,
	LD_NE_RECV,
	LD_NE_CLOSED,
	LD_NE_TIMEOUT,
	LD_NE_PROTOCOL,
	LD_NE__MAX
};

static const char *const ld_neterr_names[LD_NE__MAX] = {
	"none", "connect", "send", "recv", "closed", "timeout", "protocol"
};

/* Where the incremental response parser stands. */
enum ld_rsp_state {
	LD_RSP_HEAD,		/* status line and headers, kept in head[] */
	LD_RSP_LENGTH,		/* Content-Length body, skipped */
	LD_RSP_CHUNK_SIZE,
	LD_RSP_CHUNK_EXT,
	LD_RSP_CHUNK_SIZE_LF,
	LD_RSP_CHUNK_DATA,
	LD_RSP_CHUNK_DATA_CR,
	LD_RSP_CHUNK_DATA_LF,
	LD_RSP_TRAILER_START,
	LD_RSP_TRAILER_LINE,
	LD_RSP_TRAILER_LF,
	LD_RSP_UNTIL_CLOSE,	/* no length given: the body ends at EOF */
	LD_RSP_DONE,
	LD_RSP__MAX
};

enum ld_prs {
	LD_PRS_MORE,
	LD_PRS_DONE,
	LD_PRS_ERROR,
	LD_PRS__MAX
};

static const char *const ld_prs_names[LD_PRS__MAX] = {
	"more", "done", "error"
};

struct ld_rsp {
	enum ld_rsp_state state;
	int		 status;
	int		 keep_alive;
	int		 retry_after;	/* seconds; -1 when absent or a date */
	uint64_t	 remaining;	/* body or chunk bytes left to skip */
	uint64_t	 body;		/* body bytes announced or seen */
	size_t		 line;		/* bytes of a chunk line or trailers */
	unsigned	 digits;	/* hex digits of the chunk size */
	size_t		 head_len;
	size_t		 line_start;	/* current header line in head[] */
	char		 errstr[96];
	char		 head[LD_HEAD_MAX];
};

struct ld_opts {
	const char	*tokens;
	const char	*host;
	const char	*csv;
	int64_t		 port;
	int64_t		 connections;
	int64_t		 duration_max;	/* seconds from the opening */
	int64_t		 requests_max;	/* 0: shoppers * (1 + retries) */
	int64_t		 retries;
	int64_t		 backoff_ms;
	int64_t		 timeout_ms;
	int64_t		 start_at;	/* unix ms; 0: open after the warm-up */
	int64_t		 expect_202;
	int64_t		 seed;
	int		 progress;
	int		 self_test;
	int		 help;
};

struct ld_retry {
	int64_t		 due_us;
	uint32_t	 shopper;
};

struct ld_record {
	uint32_t	 t_us;		/* completion, from the opening */
	uint32_t	 latency_us;
	int16_t		 status;	/* 0: network error */
	uint8_t		 attempt;
	uint8_t		 neterr;	/* enum ld_neterr */
};

struct ld_conn {
	int		 fd;
	uint32_t	 gen;		/* tells stale epoll events apart */
	int		 connecting;
	int		 want_out;	/* EPOLLOUT is registered */
	int64_t		 shopper;	/* -1 while free */
	unsigned	 attempt;
	size_t		 sent;		/* request bytes written */
	int64_t		 dispatch_us;
	int64_t		 write_us;	/* first write: latency starts here */
	struct ld_rsp	 rsp;
};

struct ld_run {
	struct ld_opts	 o;
	struct sockaddr_storage addr;
	socklen_t	 addrlen;
	char		 hosthdr[80];

	/* Shoppers: their requests rendered once, in one arena. */
	char		*arena;
	size_t		 arena_len;
	size_t		 arena_cap;
	uint32_t	*req_off;
	uint16_t	*req_len;
	uint8_t		*attempts;
	uint8_t		*outcome;	/* enum ld_cat + 1; 0: unfinished */
	size_t		 nshoppers;
	size_t		 shoppers_cap;

	/* Shoppers waiting for a connection, first come first served. */
	uint32_t	*ready;
	size_t		 ready_head;
	size_t		 ready_len;

	/* Shoppers waiting to retry: a min-heap on the due time. */
	struct ld_retry	*heap;
	size_t		 heap_len;

	struct ld_conn	*conns;
	size_t		 nconns;
	uint32_t	*free_open;	/* free connections with a socket */
	size_t		 nfree_open;
	uint32_t	*free_closed;	/* free connections to reconnect */
	size_t		 nfree_closed;

	struct ld_record *recs;
	size_t		 nrecs;
	size_t		 recs_cap;

	int		 ep;
	uint64_t	 rng;
	int64_t		 t0_us;		/* monotonic time of the opening */
	int64_t		 t0_unix_ms;
	int64_t		 deadline_us;
	int64_t		 end_us;
	const char	*stop_reason;
	struct rusage	 ru0;

	uint64_t	 sent;		/* requests handed to a connection */
	uint64_t	 inflight;
	uint64_t	 done;		/* shoppers with a final outcome */
	uint64_t	 cat[LD_CAT__MAX];
	uint64_t	 neterr[LD_NE__MAX];
	uint64_t	 status[600];
	uint64_t	 connects;
	uint64_t	 idle_closes;
	uint64_t	 warm_fails;
	uint64_t	 cut;		/* in flight at the stop */
	uint64_t	 late_retries;	/* a retry would fall after the stop */
	uint64_t	 prev_completed;
	int64_t		 prev_us;
	int		 last_errno;
	char		 last_proto[96];
};

static volatile sig_atomic_t ld_stop_signal;

static void ld_warn(const char *, ...) __attribute__((format(printf, 1, 2)));

static void
ld_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(LD_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int64_t
ld_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
ld_unix_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
ld_cpu_us(const struct rusage *ru)
{
	return (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
	    ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

/* xorshift64*: jitter only needs to be cheap and spread, not secret. */
static uint64_t
ld_rand(struct ld_run *run)
{
	run->rng ^= run->rng >> 12;
	run->rng ^= run->rng << 25;
	run->rng ^= run->rng >> 27;
	return run->rng * 0x2545F4914F6CDD1DULL;
}

static int64_t
ld_rand_below(struct ld_run *run, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(ld_rand(run) % (uint64_t)n);
}

static void
ld_on_signal(int sig)
{
	(void)sig;
	ld_stop_signal = 1;
}

/*
 * The HTTP/1.1 response parser.  It is fed whatever recv() returned and
 * keeps its state across calls, so a response may arrive in any pieces.
 */

static void
ld_rsp_reset(struct ld_rsp *r)
{
	r->state = LD_RSP_HEAD;
	r->status = 0;
	r->keep_alive = 0;
	r->retry_after = -1;
	r->remaining = 0;
	r->body = 0;
	r->line = 0;
	r->digits = 0;
	r->head_len = 0;
	r->line_start = 0;
	r->errstr[0] = '\0';
}

static enum ld_prs
ld_rsp_error(struct ld_rsp *r, const char *why)
{
	snprintf(r->errstr, sizeof(r->errstr), "%s", why);
	return LD_PRS_ERROR;
}

static int
ld_token_is(const char *p, size_t n, const char *tok)
{
	return strlen(tok) == n && strncasecmp(p, tok, n) == 0;
}

/* All digits, no sign, no overflow past max: what HTTP numbers are. */
static int
ld_parse_digits(const char *p, size_t n, uint64_t max, uint64_t *v)
{
	uint64_t x = 0, d;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		d = (uint64_t)(p[i] - '0');
		if (x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*v = x;
	return 0;
}

static void
ld_trim(const char **p, const char **end)
{
	while (*p < *end && (**p == ' ' || **p == '\t'))
		(*p)++;
	while (*end > *p && ((*end)[-1] == ' ' || (*end)[-1] == '\t'))
		(*end)--;
}

/*
 * Walks a comma-separated header value; calls back nothing, it just
 * reports whether tok is among the items and whether it is the last one.
 */
static void
ld_list_find(const char *p, const char *end, const char *tok, int *any,
    int *last)
{
	const char *item, *comma, *item_end;

	*any = *last = 0;
	while (p < end) {
		comma = memchr(p, ',', (size_t)(end - p));
		item_end = comma != NULL ? comma : end;
		item = p;
		ld_trim(&item, &item_end);
		if (item < item_end) {
			*last = ld_token_is(item, (size_t)(item_end - item),
			    tok);
			*any |= *last;
		}
		p = comma != NULL ? comma + 1 : end;
	}
}

/* The head is complete: read the status and what frames the body. */
static enum ld_prs
ld_rsp_head_done(struct ld_rsp *r)
{
	const char *p = r->head, *end = r->head + r->head_len;
	const char *eol, *le, *colon, *val, *vend, *q;
	int status, minor, has_cl = 0, has_te = 0, chunked = 0;
	int conn_close = 0, conn_ka = 0, any, last;
	uint64_t cl = 0, v;

	/* HTTP-version SP 3DIGIT [SP reason], the end of line is CRLF or LF. */
	eol = memchr(p, '\n', (size_t)(end - p));
	if (eol == NULL)
		return ld_rsp_error(r, "no status line");
	le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
	if (le - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' || (le - p > 12 && p[12] != ' '))
		return ld_rsp_error(r, "malformed status line");
	minor = p[7] - '0';
	status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');

	for (p = eol + 1; p < end; p = eol + 1) {
		eol = memchr(p, '\n', (size_t)(end - p));
		if (eol == NULL)
			return ld_rsp_error(r, "unterminated header line");
		le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (le == p)
			break;
		if (*p == ' ' || *p == '\t')
			return ld_rsp_error(r, "folded header line");
		colon = memchr(p, ':', (size_t)(le - p));
		if (colon == NULL || colon == p)
			return ld_rsp_error(r, "malformed header line");
		for (q = p; q < colon; q++)
			if (*q == ' ' || *q == '\t')
				return ld_rsp_error(r, "space in header name");
		val = colon + 1;
		vend = le;
		ld_trim(&val, &vend);
		if (ld_token_is(p, (size_t)(colon - p), "content-length")) {
			if (ld_parse_digits(val, (size_t)(vend - val),
			    UINT64_MAX / 2, &v) == -1)
				return ld_rsp_error(r, "bad Content-Length");
			if (has_cl && v != cl)
				return ld_rsp_error(r,
				    "conflicting Content-Length");
			has_cl = 1;
			cl = v;
		} else if (ld_token_is(p, (size_t)(colon - p),
		    "transfer-encoding")) {
			ld_list_find(val, vend, "chunked", &any, &last);
			has_te = 1;
			chunked = last;
		} else if (ld_token_is(p, (size_t)(colon - p), "connection")) {
			ld_list_find(val, vend, "close", &any, &last);
			conn_close |= any;
			ld_list_find(val, vend, "keep-alive", &any, &last);
			conn_ka |= any;
		} else if (ld_token_is(p, (size_t)(colon - p), "retry-after")) {
			/* A date, not seconds: fall back to the backoff. */
			if (ld_parse_digits(val, (size_t)(vend - val),
			    1000000000, &v) == 0)
				r->retry_after = v > LD_RETRY_AFTER_MAX_S ?
				    LD_RETRY_AFTER_MAX_S : (int)v;
			else
				r->retry_after = -1;
		}
	}

	if (status < 200) {
		if (status == 101)
			return ld_rsp_error(r, "unexpected 101 response");
		/* An interim answer: the final one follows on the stream. */
		ld_rsp_reset(r);
		return LD_PRS_MORE;
	}
	r->status = status;
	r->keep_alive = minor == 1 ? !conn_close : conn_ka && !conn_close;
	if (status == 204 || status == 304) {
		r->state = LD_RSP_DONE;
		return LD_PRS_DONE;
	}
	if (has_te) {
		/* RFC 9112 6.3: chunked wins over a length, then close. */
		if (has_cl || !chunked)
			r->keep_alive = 0;
		r->state = chunked ? LD_RSP_CHUNK_SIZE : LD_RSP_UNTIL_CLOSE;
		return LD_PRS_MORE;
	}
	if (has_cl) {
		if (cl > LD_BODY_MAX)
			return ld_rsp_error(r, "response body too big");
		r->body = cl;
		r->remaining = cl;
		r->state = cl == 0 ? LD_RSP_DONE : LD_RSP_LENGTH;
		return cl == 0 ? LD_PRS_DONE : LD_PRS_MORE;
	}
	r->keep_alive = 0;
	r->state = LD_RSP_UNTIL_CLOSE;
	return LD_PRS_MORE;
}

/* Copies head bytes until the empty line; *used says how many it took. */
static enum ld_prs
ld_rsp_feed_head(struct ld_rsp *r, const char *p, size_t n, size_t *used)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		if (r->head_len == sizeof(r->head)) {
			*used = i;
			return ld_rsp_error(r, "response head too big");
		}
		r->head[r->head_len++] = p[i];
		if (p[i] != '\n')
			continue;
		len = r->head_len - 1 - r->line_start;
		if (len > 0 && r->head[r->head_len - 2] == '\r')
			len--;
		if (len > 0) {
			r->line_start = r->head_len;
			continue;
		}
		/* RFC 9112 2.2: empty lines before the status line. */
		if (r->line_start == 0) {
			r->head_len = 0;
			continue;
		}
		*used = i + 1;
		return ld_rsp_head_done(r);
	}
	*used = n;
	return LD_PRS_MORE;
}

static int
ld_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The chunk-size line ended: a zero size starts the trailer section. */
static enum ld_prs
ld_rsp_chunk_size_done(struct ld_rsp *r)
{
	r->line = 0;
	r->digits = 0;
	if (r->remaining == 0) {
		r->state = LD_RSP_TRAILER_START;
		return LD_PRS_MORE;
	}
	r->body += r->remaining;
	if (r->body > LD_BODY_MAX)
		return ld_rsp_error(r, "response body too big");
	r->state = LD_RSP_CHUNK_DATA;
	return LD_PRS_MORE;
}

/* Chunk framing, byte by byte except for the data it skips in bulk. */
static enum ld_prs
ld_rsp_feed_chunked(struct ld_rsp *r, const char *p, size_t n, size_t *used)
{
	enum ld_prs rc = LD_PRS_MORE;
	size_t i = 0, k;
	int c, d;

	while (i < n && rc == LD_PRS_MORE) {
		c = (unsigned char)p[i];
		if (r->state == LD_RSP_CHUNK_DATA) {
			k = n - i < r->remaining ? n - i : (size_t)r->remaining;
			r->remaining -= k;
			i += k;
			if (r->remaining == 0)
				r->state = LD_RSP_CHUNK_DATA_CR;
			continue;
		}
		i++;
		/* Only chunk states get here: size lines, then trailers. */
		if (r->state <= LD_RSP_CHUNK_SIZE_LF &&
		    ++r->line > LD_CHUNK_LINE_MAX) {
			rc = ld_rsp_error(r, "chunk-size line too long");
			break;
		}
		if (r->state >= LD_RSP_TRAILER_START &&
		    ++r->line > LD_TRAILER_MAX) {
			rc = ld_rsp_error(r, "trailer section too big");
			break;
		}
		switch (r->state) {
		case LD_RSP_CHUNK_SIZE:
			d = ld_hexval(c);
			/* 15 hex digits stay far below overflow. */
			if (d >= 0 && r->digits == 15)
				rc = ld_rsp_error(r, "chunk size too big");
			else if (d >= 0) {
				r->remaining = r->remaining * 16 + (unsigned)d;
				r->digits++;
			} else if (r->digits == 0)
				rc = ld_rsp_error(r, "malformed chunk size");
			else if (c == ';' || c == ' ' || c == '\t')
				r->state = LD_RSP_CHUNK_EXT;
			else if (c == '\r')
				r->state = LD_RSP_CHUNK_SIZE_LF;
			else if (c == '\n')
				rc = ld_rsp_chunk_size_done(r);
			else
				rc = ld_rsp_error(r, "malformed chunk size");
			break;
		case LD_RSP_CHUNK_EXT:
			if (c == '\n')
				rc = ld_rsp_chunk_size_done(r);
			break;
		case LD_RSP_CHUNK_SIZE_LF:
			if (c == '\n')
				rc = ld_rsp_chunk_size_done(r);
			else
				rc = ld_rsp_error(r,
				    "malformed chunk-size line");
			break;
		case LD_RSP_CHUNK_DATA_CR:
			if (c == '\r')
				r->state = LD_RSP_CHUNK_DATA_LF;
			else if (c == '\n')
				r->state = LD_RSP_CHUNK_SIZE;
			else
				rc = ld_rsp_error(r, "chunk data too long");
			break;
		case LD_RSP_CHUNK_DATA_LF:
			if (c == '\n')
				r->state = LD_RSP_CHUNK_SIZE;
			else
				rc = ld_rsp_error(r, "chunk data too long");
			break;
		case LD_RSP_TRAILER_START:
			if (c == '\n') {
				r->state = LD_RSP_DONE;
				rc = LD_PRS_DONE;
			} else
				r->state = c == '\r' ? LD_RSP_TRAILER_LF :
				    LD_RSP_TRAILER_LINE;
			break;
		case LD_RSP_TRAILER_LINE:
			if (c == '\n')
				r->state = LD_RSP_TRAILER_START;
			break;
		case LD_RSP_TRAILER_LF:
			if (c == '\n') {
				r->state = LD_RSP_DONE;
				rc = LD_PRS_DONE;
			} else
				rc = ld_rsp_error(r, "malformed trailer end");
			break;
		default:
			rc = ld_rsp_error(r, "chunk parser in a bad state");
			break;
		}
	}
	*used = i;
	return rc;
}

/*
 * Feeds n bytes.  DONE means one whole response was read; *used tells
 * how many bytes it took, and anything after them is not part of it.
 */
static enum ld_prs
ld_rsp_feed(struct ld_rsp *r, const char *p, size_t n, size_t *used)
{
	enum ld_prs rc = LD_PRS_MORE;
	size_t off = 0, k;

	while (off < n && rc == LD_PRS_MORE) {
		k = 0;
		switch (r->state) {
		case LD_RSP_HEAD:
			rc = ld_rsp_feed_head(r, p + off, n - off, &k);
			break;
		case LD_RSP_LENGTH:
			k = n - off < r->remaining ? n - off :
			    (size_t)r->remaining;
			r->remaining -= k;
			if (r->remaining == 0) {
				r->state = LD_RSP_DONE;
				rc = LD_PRS_DONE;
			}
			break;
		case LD_RSP_UNTIL_CLOSE:
			k = n - off;
			r->body += k;
			if (r->body > LD_BODY_MAX)
				rc = ld_rsp_error(r, "response body too big");
			break;
		case LD_RSP_DONE:
			rc = LD_PRS_DONE;
			break;
		default:
			rc = ld_rsp_feed_chunked(r, p + off, n - off, &k);
			break;
		}
		off += k;
	}
	*used = off;
	return rc;
}

/* The server closed the stream: only a body without a length ends so. */
static enum ld_prs
ld_rsp_eof(struct ld_rsp *r)
{
	if (r->state == LD_RSP_UNTIL_CLOSE) {
		r->state = LD_RSP_DONE;
		return LD_PRS_DONE;
	}
	if (r->state == LD_RSP_DONE)
		return LD_PRS_DONE;
	return ld_rsp_error(r, "connection closed before the response ended");
}

/*
 * Command line.
 */

static void
ld_usage(FILE *f)
{
	fputs("usage: " LD_NAME " --tokens FILE --port N [options]\n"
	    "  --tokens FILE       a line a shopper: <bearer token> <path>\n"
	    "  --host ADDR         127.0.0.0/8 or ::1 only (127.0.0.1)\n"
	    "  --port N            server port\n"
	    "  --connections C     keep-alive connections (256)\n"
	    "  --duration-max S    hard stop after the opening (60)\n"
	    "  --requests-max N    in all (shoppers * (1 + retries))\n"
	    "  --retries R         after a 503 or a network error (0)\n"
	    "  --backoff-ms MS     first backoff after a network error (100)\n"
	    "  --timeout-ms MS     a request unanswered by then fails (10000)\n"
	    "  --start-at UNIX_MS  the opening instant (once connected)\n"
	    "  --expect-202 N      time from the opening to the Nth 202\n"
	    "  --csv FILE          t_ms,status,latency_us,attempt a request\n"
	    "                      (status 0: a network error)\n"
	    "  --progress          a line a second on stderr\n"
	    "  --seed N            seed of the retry jitter (the clock)\n"
	    "  --self-test         check the response parser, then exit\n"
	    "Defaults in parentheses.\n", f);
}

static int
ld_opts_parse(struct ld_opts *o, int argc, char **argv)
{
	struct {
		const char	*name;
		const char	**sval;
		int64_t		*ival;
		int		*flag;
		int64_t		 min;
		int64_t		 max;
	} tab[] = {
		{ "tokens", &o->tokens, NULL, NULL, 0, 0 },
		{ "host", &o->host, NULL, NULL, 0, 0 },
		{ "csv", &o->csv, NULL, NULL, 0, 0 },
		{ "port", NULL, &o->port, NULL, 1, 65535 },
		{ "connections", NULL, &o->connections, NULL, 1,
		    LD_CONNECTIONS_MAX },
		{ "duration-max", NULL, &o->duration_max, NULL, 1,
		    LD_DURATION_MAX_S },
		{ "requests-max", NULL, &o->requests_max, NULL, 1,
		    LD_REQUESTS_MAX },
		{ "retries", NULL, &o->retries, NULL, 0, LD_RETRIES_MAX },
		{ "backoff-ms", NULL, &o->backoff_ms, NULL, 1,
		    LD_BACKOFF_MAX_MS },
		{ "timeout-ms", NULL, &o->timeout_ms, NULL, 1,
		    LD_TIMEOUT_MAX_MS },
		/* From 2001 on: a value in seconds is refused, not waited. */
		{ "start-at", NULL, &o->start_at, NULL, 1000000000000LL,
		    100000000000000LL },
		{ "expect-202", NULL, &o->expect_202, NULL, 1,
		    LD_REQUESTS_MAX },
		{ "seed", NULL, &o->seed, NULL, 1, INT64_MAX },
		{ "progress", NULL, NULL, &o->progress, 0, 0 },
		{ "self-test", NULL, NULL, &o->self_test, 0, 0 },
		{ "help", NULL, NULL, &o->help, 0, 0 },
	};
	const char *arg, *val, *eq;
	char *end;
	size_t i, nlen;
	long long v;
	int a;

	for (a = 1; a < argc; a++) {
		arg = argv[a];
		if (strncmp(arg, "--", 2) != 0) {
			ld_warn("unexpected argument '%s'", arg);
			return -1;
		}
		arg += 2;
		eq = strchr(arg, '=');
		nlen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
		for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
			if (strlen(tab[i].name) == nlen &&
			    strncmp(tab[i].name, arg, nlen) == 0)
				break;
		if (i == sizeof(tab) / sizeof(tab[0])) {
			ld_warn("unknown option '--%.*s'", (int)nlen, arg);
			return -1;
		}
		if (tab[i].flag != NULL) {
			if (eq != NULL) {
				ld_warn("--%s takes no value", tab[i].name);
				return -1;
			}
			*tab[i].flag = 1;
			continue;
		}
		if (eq != NULL)
			val = eq + 1;
		else if (a + 1 < argc)
			val = argv[++a];
		else {
			ld_warn("--%s needs a value", tab[i].name);
			return -1;
		}
		if (tab[i].sval != NULL) {
			if (*val == '\0') {
				ld_warn("--%s: empty value", tab[i].name);
				return -1;
			}
			*tab[i].sval = val;
			continue;
		}
		errno = 0;
		v = strtoll(val, &end, 10);
		if (errno != 0 || end == val || *end != '\0' ||
		    v < tab[i].min || v > tab[i].max) {
			ld_warn("--%s: '%s' is not an integer in %" PRId64
			    "..%" PRId64, tab[i].name, val, tab[i].min,
			    tab[i].max);
			return -1;
		}
		*tab[i].ival = v;
	}
	return 0;
}

/* Loopback literals only: this tool must never load anyone else. */
static int
ld_addr_parse(struct ld_run *run)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&run->addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&run->addr;
	char host[64];
	size_t n = strlen(run->o.host);
	int port = (int)run->o.port;

	if (n >= 2 && run->o.host[0] == '[' && run->o.host[n - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(n - 2),
		    run->o.host + 1);
	else if (strcmp(run->o.host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	else if (n < sizeof(host))
		snprintf(host, sizeof(host), "%s", run->o.host);
	else
		goto fail;
	memset(&run->addr, 0, sizeof(run->addr));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
			goto fail;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		run->addrlen = sizeof(*sin);
		snprintf(run->hosthdr, sizeof(run->hosthdr), "%s:%d", host,
		    port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
			goto fail;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		run->addrlen = sizeof(*sin6);
		snprintf(run->hosthdr, sizeof(run->hosthdr), "[%s]:%d", host,
		    port);
		return 0;
	}
fail:
	ld_warn("--host %s: only loopback addresses (127.0.0.0/8, ::1) are "
	    "allowed, and names are not resolved", run->o.host);
	return -1;
}

/*
 * Token file.
 */

static int
ld_visible(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
			return 0;
	return 1;
}

static void
ld_put(struct ld_run *run, const char *p, size_t n)
{
	memcpy(run->arena + run->arena_len, p, n);
	run->arena_len += n;
}

/* Renders one shopper's request; a line is "<token> <path>". */
static int
ld_tokens_line(struct ld_run *run, const char *line, size_t len,
    size_t lineno)
{
	static const char m1[] = "POST ", m2[] = " HTTP/1.1\r\nHost: ",
	    m3[] = "\r\nAuthorization: Bearer ",
	    m4[] = "\r\nContent-Length: 0\r\n\r\n";
	const char *path;
	size_t toklen, pathlen, need, cap, i;
	void *p;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0 || line[0] == '#')
		return 0;
	if (len > LD_LINE_MAX) {
		ld_warn("%s:%zu: line too long (over %d bytes)", run->o.tokens,
		    lineno, LD_LINE_MAX);
		return -1;
	}
	for (toklen = 0; toklen < len && line[toklen] != ' ' &&
	    line[toklen] != '\t'; toklen++)
		;
	for (i = toklen; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	path = line + i;
	for (pathlen = len - i; pathlen > 0 && (path[pathlen - 1] == ' ' ||
	    path[pathlen - 1] == '\t'); pathlen--)
		;
	if (pathlen == 0 || path[0] != '/' || !ld_visible(line, toklen) ||
	    !ld_visible(path, pathlen)) {
		ld_warn("%s:%zu: expected '<token> </path?query>' in "
		    "printable ASCII", run->o.tokens, lineno);
		return -1;
	}
	if (run->nshoppers == LD_SHOPPERS_MAX) {
		ld_warn("%s: more than %d shoppers", run->o.tokens,
		    LD_SHOPPERS_MAX);
		return -1;
	}
	if (run->nshoppers == run->shoppers_cap) {
		cap = run->shoppers_cap == 0 ? 4096 : run->shoppers_cap * 2;
		if (cap > LD_SHOPPERS_MAX)
			cap = LD_SHOPPERS_MAX;
		if ((p = realloc(run->req_off, cap * sizeof(uint32_t))) == NULL)
			goto fail;
		run->req_off = p;
		if ((p = realloc(run->req_len, cap * sizeof(uint16_t))) == NULL)
			goto fail;
		run->req_len = p;
		run->shoppers_cap = cap;
	}
	need = sizeof(m1) - 1 + pathlen + sizeof(m2) - 1 +
	    strlen(run->hosthdr) + sizeof(m3) - 1 + toklen + sizeof(m4) - 1;
	if (run->arena_len + need > run->arena_cap) {
		cap = run->arena_cap == 0 ? (size_t)1 << 20 :
		    run->arena_cap * 2;
		if (cap > LD_ARENA_MAX)
			cap = LD_ARENA_MAX;
		if (run->arena_len + need > cap) {
			ld_warn("%s: requests too big in all (over %zu MiB)",
			    run->o.tokens, LD_ARENA_MAX >> 20);
			return -1;
		}
		if ((p = realloc(run->arena, cap)) == NULL)
			goto fail;
		run->arena = p;
		run->arena_cap = cap;
	}
	run->req_off[run->nshoppers] = (uint32_t)run->arena_len;
	run->req_len[run->nshoppers] = (uint16_t)need;
	ld_put(run, m1, sizeof(m1) - 1);
	ld_put(run, path, pathlen);
	ld_put(run, m2, sizeof(m2) - 1);
	ld_put(run, run->hosthdr, strlen(run->hosthdr));
	ld_put(run, m3, sizeof(m3) - 1);
	ld_put(run, line, toklen);
	ld_put(run, m4, sizeof(m4) - 1);
	run->nshoppers++;
	return 0;
fail:
	ld_warn("out of memory reading %s", run->o.tokens);
	return -1;
}

/* Reads the file in big blocks; a line never outgrows the block. */
static int
ld_tokens_load(struct ld_run *run)
{
	char *buf = NULL;
	const char *nl;
	size_t have = 0, start, len, lineno = 0;
	ssize_t n;
	int fd = -1, eof = 0;

	if ((buf = malloc(LD_READ_BUF)) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	if ((fd = open(run->o.tokens, O_RDONLY | O_CLOEXEC)) == -1) {
		ld_warn("%s: %s", run->o.tokens, strerror(errno));
		goto fail;
	}
	while (!eof) {
		n = read(fd, buf + have, LD_READ_BUF - have);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			ld_warn("%s: %s", run->o.tokens, strerror(errno));
			goto fail;
		}
		eof = n == 0;
		have += (size_t)n;
		start = 0;
		while (start < have) {
			nl = memchr(buf + start, '\n', have - start);
			if (nl == NULL && !eof)
				break;
			len = nl != NULL ? (size_t)(nl - (buf + start)) :
			    have - start;
			lineno++;
			if (memchr(buf + start, '\0', len) != NULL) {
				ld_warn("%s:%zu: NUL byte", run->o.tokens,
				    lineno);
				goto fail;
			}
			if (ld_tokens_line(run, buf + start, len, lineno) == -1)
				goto fail;
			start += len + (nl != NULL);
		}
		/* The line being read, plus CR, must fit what a line may be. */
		if (have - start > LD_LINE_MAX + 1) {
			ld_warn("%s:%zu: line too long (over %d bytes)",
			    run->o.tokens, lineno + 1, LD_LINE_MAX);
			goto fail;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	if (run->nshoppers == 0) {
		ld_warn("%s: no shoppers", run->o.tokens);
		goto fail;
	}
	close(fd);
	free(buf);
	return 0;
fail:
	if (fd != -1)
		close(fd);
	free(buf);
	return -1;
}

/*
 * Retry heap.
 */

static void
ld_heap_push(struct ld_run *run, int64_t due_us, uint32_t shopper)
{
	struct ld_retry t = { due_us, shopper };
	size_t i = run->heap_len++, parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (run->heap[parent].due_us <= due_us)
			break;
		run->heap[i] = run->heap[parent];
		i = parent;
	}
	run->heap[i] = t;
}

static uint32_t
ld_heap_pop(struct ld_run *run)
{
	struct ld_retry last;
	uint32_t top = run->heap[0].shopper;
	size_t i = 0, child, n;

	n = --run->heap_len;
	last = run->heap[n];
	while ((child = 2 * i + 1) < n) {
		if (child + 1 < n &&
		    run->heap[child + 1].due_us < run->heap[child].due_us)
			child++;
		if (last.due_us <= run->heap[child].due_us)
			break;
		run->heap[i] = run->heap[child];
		i = child;
	}
	if (n > 0)
		run->heap[i] = last;
	return top;
}

static void
ld_ready_push(struct ld_run *run, uint32_t shopper)
{
	run->ready[(run->ready_head + run->ready_len) % run->nshoppers] =
	    shopper;
	run->ready_len++;
}

static uint32_t
ld_ready_pop(struct ld_run *run)
{
	uint32_t s = run->ready[run->ready_head];

	run->ready_head = (run->ready_head + 1) % run->nshoppers;
	run->ready_len--;
	return s;
}

/*
 * Connections.
 */

static uint64_t
ld_conn_key(struct ld_run *run, const struct ld_conn *c)
{
	return (uint64_t)c->gen << 32 | (uint32_t)(c - run->conns);
}

static int
ld_conn_open(struct ld_run *run, struct ld_conn *c)
{
	struct epoll_event ev;
	int fd = -1, one = 1;

	fd = socket(run->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto fail;
	/* One small write per request: never let Nagle hold it back. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->connecting = 0;
	if (connect(fd, (struct sockaddr *)&run->addr, run->addrlen) == -1) {
		if (errno != EINPROGRESS)
			goto fail;
		c->connecting = 1;
	}
	c->gen++;
	memset(&ev, 0, sizeof(ev));
	/* EPOLLOUT tells when the connect ends or the first write can go. */
	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.u64 = ld_conn_key(run, c);
	if (epoll_ctl(run->ep, EPOLL_CTL_ADD, fd, &ev) == -1)
		goto fail;
	c->fd = fd;
	c->want_out = 1;
	run->connects++;
	return 0;
fail:
	run->last_errno = errno;
	if (fd != -1)
		close(fd);
	c->connecting = 0;
	return -1;
}

static void
ld_conn_close(struct ld_conn *c)
{
	if (c->fd == -1)
		return;
	close(c->fd);
	c->fd = -1;
	c->connecting = 0;
	c->want_out = 0;
}

static int
ld_conn_want_out(struct ld_run *run, struct ld_conn *c, int on)
{
	struct epoll_event ev;

	if (c->want_out == on)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.u64 = ld_conn_key(run, c);
	if (epoll_ctl(run->ep, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		return -1;
	c->want_out = on;
	return 0;
}

static void
ld_conn_free(struct ld_run *run, struct ld_conn *c)
{
	uint32_t ci = (uint32_t)(c - run->conns);

	c->shopper = -1;
	if (c->fd != -1)
		run->free_open[run->nfree_open++] = ci;
	else
		run->free_closed[run->nfree_closed++] = ci;
}

static enum ld_cat
ld_cat_of(int status)
{
	switch (status) {
	case 0:
		return LD_CAT_NETERR;
	case 202:
		return LD_CAT_202;
	case 409:
		return LD_CAT_409;
	case 410:
		return LD_CAT_410;
	case 429:
		return LD_CAT_429;
	case 503:
		return LD_CAT_503;
	default:
		return LD_CAT_OTHER;
	}
}

/* After a Retry-After, its seconds plus jitter; else equal-jitter backoff. */
static int64_t
ld_retry_delay_us(struct ld_run *run, unsigned attempt, int retry_after)
{
	int64_t base;

	if (retry_after >= 0)
		return (int64_t)retry_after * LD_SECOND_US +
		    ld_rand_below(run, LD_JITTER_US + 1);
	base = run->o.backoff_ms << (attempt - 1);
	if (base > LD_BACKOFF_CAP_MS)
		base = LD_BACKOFF_CAP_MS;
	base *= 1000;
	return base / 2 + ld_rand_below(run, base / 2 + 1);
}

/*
 * Records one finished request (status 0: no answer) and decides whether
 * its shopper tries again.  The caller has closed the socket if needed.
 */
static void
ld_complete(struct ld_run *run, struct ld_conn *c, int status,
    enum ld_neterr ne, int64_t now)
{
	struct ld_record *rec;
	uint32_t s = (uint32_t)c->shopper;
	int64_t start = c->write_us != 0 ? c->write_us : c->dispatch_us;
	int64_t due;
	enum ld_cat cat = ld_cat_of(status);
	int retry;

	if (run->nrecs < run->recs_cap) {
		rec = &run->recs[run->nrecs++];
		rec->t_us = (uint32_t)(now - run->t0_us);
		rec->latency_us = (uint32_t)(now - start);
		rec->status = (int16_t)status;
		rec->attempt = (uint8_t)c->attempt;
		rec->neterr = (uint8_t)ne;
	}
	run->cat[cat]++;
	if (status > 0)
		run->status[status]++;
	else
		run->neterr[ne]++;
	if (ne == LD_NE_PROTOCOL)
		snprintf(run->last_proto, sizeof(run->last_proto), "%s",
		    c->rsp.errstr);
	run->inflight--;

	retry = (cat == LD_CAT_503 || cat == LD_CAT_NETERR) &&
	    c->attempt <= (unsigned)run->o.retries && !ld_stop_signal &&
	    run->sent < (uint64_t)run->o.requests_max;
	if (retry) {
		due = now + ld_retry_delay_us(run, c->attempt,
		    cat == LD_CAT_503 ? c->rsp.retry_after : -1);
		if (due < run->deadline_us)
			ld_heap_push(run, due, s);
		else {
			run->late_retries++;
			retry = 0;
		}
	}
	if (!retry) {
		run->outcome[s] = (uint8_t)(cat + 1);
		run->done++;
	}
	ld_conn_free(run, c);
}

/* Writes what is left of the request; EPOLLOUT calls back when it can. */
static void
ld_conn_send(struct ld_run *run, struct ld_conn *c, int64_t now)
{
	const char *req = run->arena + run->req_off[c->shopper];
	size_t len = run->req_len[c->shopper];
	ssize_t n;

	if (c->write_us == 0)
		c->write_us = now;
	while (c->sent < len) {
		n = send(c->fd, req + c->sent, len - c->sent, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (ld_conn_want_out(run, c, 1) == -1)
				goto fail;
			return;
		}
		if (n == -1)
			goto fail;
		c->sent += (size_t)n;
	}
	if (ld_conn_want_out(run, c, 0) == -1)
		goto fail;
	return;
fail:
	run->last_errno = errno;
	ld_conn_close(c);
	ld_complete(run, c, 0, LD_NE_SEND, now);
}

static void
ld_conn_read(struct ld_run *run, struct ld_conn *c, char *buf, size_t bufsz)
{
	enum ld_neterr ne = LD_NE_NONE;
	enum ld_prs rc;
	ssize_t n;
	size_t used;
	int64_t now;

	n = recv(c->fd, buf, bufsz, 0);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	now = ld_now_us();
	if (c->shopper == -1) {
		/* The server closed an idle connection, or spoke unasked. */
		run->idle_closes++;
		ld_conn_close(c);
		return;
	}
	if (n == -1) {
		run->last_errno = errno;
		ne = LD_NE_RECV;
		goto fail;
	}
	if (n == 0) {
		if (ld_rsp_eof(&c->rsp) != LD_PRS_DONE) {
			ne = LD_NE_CLOSED;
			goto fail;
		}
		ld_conn_close(c);
		ld_complete(run, c, c->rsp.status, LD_NE_NONE, now);
		return;
	}
	rc = ld_rsp_feed(&c->rsp, buf, (size_t)n, &used);
	if (rc == LD_PRS_MORE)
		return;
	if (rc == LD_PRS_ERROR) {
		ne = LD_NE_PROTOCOL;
		goto fail;
	}
	/* No pipelining: extra bytes, or an early answer, break the stream. */
	if (!c->rsp.keep_alive || used != (size_t)n ||
	    c->sent < run->req_len[c->shopper])
		ld_conn_close(c);
	ld_complete(run, c, c->rsp.status, LD_NE_NONE, now);
	return;
fail:
	ld_conn_close(c);
	ld_complete(run, c, 0, ne, now);
}

static void
ld_conn_event(struct ld_run *run, const struct epoll_event *ev, char *buf,
    size_t bufsz)
{
	struct ld_conn *c;
	uint32_t ci = (uint32_t)ev->data.u64;
	socklen_t len = sizeof(int);
	int err = 0;

	if (ci >= run->nconns)
		return;
	c = &run->conns[ci];
	/* Closed, maybe reopened, earlier in this batch of events. */
	if (c->fd == -1 || c->gen != (uint32_t)(ev->data.u64 >> 32))
		return;
	if (c->connecting) {
		if ((ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0)
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0) {
			run->last_errno = err;
			ld_conn_close(c);
			if (c->shopper == -1)
				run->warm_fails++;
			else
				ld_complete(run, c, 0, LD_NE_CONNECT,
				    ld_now_us());
			return;
		}
		c->connecting = 0;
	}
	if (ev->events & EPOLLOUT) {
		if (c->shopper != -1 && c->sent < run->req_len[c->shopper])
			ld_conn_send(run, c, ld_now_us());
		else if (ld_conn_want_out(run, c, 0) == -1)
			ld_conn_close(c);
	}
	if (c->fd != -1 && (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		ld_conn_read(run, c, buf, bufsz);
}

/*
 * The run.
 */

/* Hands waiting shoppers to free connections, reconnecting as needed. */
static void
ld_dispatch(struct ld_run *run, int64_t now)
{
	struct ld_conn *c;
	uint32_t ci, s;

	while (run->heap_len > 0 && run->heap[0].due_us <= now)
		ld_ready_push(run, ld_heap_pop(run));
	while (run->ready_len > 0 &&
	    run->sent < (uint64_t)run->o.requests_max) {
		if (run->nfree_open > 0)
			ci = run->free_open[--run->nfree_open];
		else if (run->nfree_closed > 0)
			ci = run->free_closed[--run->nfree_closed];
		else
			break;
		s = ld_ready_pop(run);
		c = &run->conns[ci];
		c->shopper = s;
		c->attempt = ++run->attempts[s];
		c->sent = 0;
		c->dispatch_us = now;
		c->write_us = 0;
		ld_rsp_reset(&c->rsp);
		run->sent++;
		run->inflight++;
		if (c->fd == -1 && ld_conn_open(run, c) == -1) {
			ld_complete(run, c, 0, LD_NE_CONNECT, now);
			continue;
		}
		if (!c->connecting)
			ld_conn_send(run, c, now);
	}
}

static void
ld_sweep_timeouts(struct ld_run *run, int64_t now)
{
	int64_t limit = run->o.timeout_ms * 1000;
	size_t i;

	for (i = 0; i < run->nconns; i++) {
		if (run->conns[i].shopper == -1 ||
		    now - run->conns[i].dispatch_us < limit)
			continue;
		ld_conn_close(&run->conns[i]);
		ld_complete(run, &run->conns[i], 0, LD_NE_TIMEOUT, now);
	}
}

static void
ld_progress(struct ld_run *run, int64_t now)
{
	uint64_t completed = run->nrecs;
	double dt = (double)(now - run->prev_us) / 1e6;

	fprintf(stderr, "[%8.3fs] sent=%" PRIu64 " answered=%" PRIu64
	    " 202=%" PRIu64 " 409=%" PRIu64 " 410=%" PRIu64 " 429=%" PRIu64
	    " 503=%" PRIu64 " other=%" PRIu64 " neterr=%" PRIu64
	    " inflight=%" PRIu64 " rps=%.0f\n",
	    (double)(now - run->t0_us) / 1e6, run->sent,
	    completed - run->cat[LD_CAT_NETERR], run->cat[LD_CAT_202],
	    run->cat[LD_CAT_409], run->cat[LD_CAT_410], run->cat[LD_CAT_429],
	    run->cat[LD_CAT_503], run->cat[LD_CAT_OTHER],
	    run->cat[LD_CAT_NETERR], run->inflight,
	    dt > 0 ? (double)(completed - run->prev_completed) / dt : 0.0);
	run->prev_completed = completed;
	run->prev_us = now;
}

static int
ld_wait_events(struct ld_run *run, struct epoll_event *evs, char *buf,
    int64_t wait_us)
{
	int i, n, ms;

	ms = wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000);
	n = epoll_wait(run->ep, evs, LD_EVENTS_MAX, ms);
	if (n == -1 && errno == EINTR)
		return 0;
	if (n == -1) {
		ld_warn("epoll_wait: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++)
		ld_conn_event(run, &evs[i], buf, LD_RECV_BUF);
	return 0;
}

/*
 * Opens every connection before the opening, as the shoppers' browsers
 * are connected while the countdown runs, then waits for the instant.
 */
static int
ld_warmup(struct ld_run *run, struct epoll_event *evs, char *buf)
{
	struct timespec ts;
	int64_t now, end, next_reconnect, left;
	size_t i, connecting;
	int err;

	for (i = 0; i < run->nconns; i++)
		if (ld_conn_open(run, &run->conns[i]) == -1)
			run->warm_fails++;
	now = ld_now_us();
	end = now + LD_WARMUP_MAX_US;
	if (run->o.start_at != 0) {
		left = run->o.start_at * 1000 - ld_unix_us();
		if (left > LD_START_AHEAD_MAX_MS * 1000) {
			ld_warn("--start-at is more than a day ahead");
			return -1;
		}
		if (left < 0)
			ld_warn("--start-at is %.3f s in the past: opening now",
			    (double)-left / 1e6);
		end = now + (left > 0 ? left : 0);
	}
	next_reconnect = now + LD_SECOND_US;
	for (;;) {
		now = ld_now_us();
		if (ld_stop_signal) {
			ld_warn("interrupted before the opening");
			return -1;
		}
		for (i = connecting = 0; i < run->nconns; i++)
			connecting += run->conns[i].connecting;
		if (run->o.start_at == 0 && connecting == 0)
			break;
		/* The last 2 ms are slept on the wall clock, to the instant. */
		left = end - now;
		if (left <= 2000)
			break;
		if (ld_wait_events(run, evs, buf,
		    left - 2000 < 100000 ? left - 2000 : 100000) == -1)
			return -1;
		/* A server may drop idle connections during a long wait. */
		if (run->o.start_at != 0 && now >= next_reconnect) {
			for (i = 0; i < run->nconns; i++)
				if (run->conns[i].fd == -1 &&
				    ld_conn_open(run, &run->conns[i]) == -1)
					run->warm_fails++;
			next_reconnect = now + LD_SECOND_US;
		}
	}
	if (run->o.start_at != 0) {
		ts.tv_sec = (time_t)(run->o.start_at / 1000);
		ts.tv_nsec = (long)(run->o.start_at % 1000) * 1000000;
		while ((err = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME,
		    &ts, NULL)) == EINTR)
			if (ld_stop_signal) {
				ld_warn("interrupted before the opening");
				return -1;
			}
		if (err != 0) {
			ld_warn("clock_nanosleep: %s", strerror(err));
			return -1;
		}
	}
	run->t0_us = ld_now_us();
	run->t0_unix_ms = ld_unix_us() / 1000;
	run->deadline_us = run->t0_us + run->o.duration_max * LD_SECOND_US;
	run->prev_us = run->t0_us;
	getrusage(RUSAGE_SELF, &run->ru0);
	/* Reversed, so that connection 0 serves the first shopper. */
	for (i = run->nconns; i-- > 0;)
		ld_conn_free(run, &run->conns[i]);
	return 0;
}

static int
ld_loop(struct ld_run *run, struct epoll_event *evs, char *buf)
{
	int64_t now, wait_us, next_progress, next_sweep;

	next_progress = run->t0_us + LD_SECOND_US;
	next_sweep = run->t0_us + LD_SWEEP_US;
	for (;;) {
		now = ld_now_us();
		ld_dispatch(run, now);
		if (ld_stop_signal)
			run->stop_reason = "signal";
		else if (now >= run->deadline_us)
			run->stop_reason = "duration-max";
		else if (run->done == run->nshoppers)
			run->stop_reason = "all-finished";
		else if (run->inflight == 0 &&
		    run->sent >= (uint64_t)run->o.requests_max)
			run->stop_reason = "requests-max";
		if (run->stop_reason != NULL)
			break;
		wait_us = run->deadline_us - now;
		if (run->o.progress && next_progress - now < wait_us)
			wait_us = next_progress - now;
		if (run->inflight > 0 && next_sweep - now < wait_us)
			wait_us = next_sweep - now;
		if (run->heap_len > 0 && run->heap[0].due_us - now < wait_us)
			wait_us = run->heap[0].due_us - now;
		if (ld_wait_events(run, evs, buf, wait_us) == -1)
			return -1;
		now = ld_now_us();
		if (now >= next_sweep) {
			ld_sweep_timeouts(run, now);
			next_sweep = now + LD_SWEEP_US;
		}
		if (run->o.progress && now >= next_progress) {
			ld_progress(run, now);
			while (next_progress <= now)
				next_progress += LD_SECOND_US;
		}
	}
	run->end_us = now;
	run->cut = run->inflight;
	return 0;
}

/*
 * Results.
 */

static int
ld_csv_write(const struct ld_run *run)
{
	const struct ld_record *r;
	FILE *f = NULL;
	size_t i;

	if ((f = fopen(run->o.csv, "w")) == NULL)
		goto fail;
	fputs("t_ms,status,latency_us,attempt\n", f);
	for (i = 0; i < run->nrecs; i++) {
		r = &run->recs[i];
		fprintf(f, "%u.%03u,%d,%u,%u\n", r->t_us / 1000,
		    r->t_us % 1000, r->status, r->latency_us, r->attempt);
	}
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto fail;
	}
	return 0;
fail:
	ld_warn("%s: %s", run->o.csv, strerror(errno));
	if (f != NULL)
		fclose(f);
	return -1;
}

static int
ld_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with p/10000 of them at or below it. */
static uint32_t
ld_pct(const uint32_t *v, size_t n, uint64_t p)
{
	uint64_t rank;

	if (n == 0)
		return 0;
	rank = (p * n + 9999) / 10000;
	return v[rank > 0 ? rank - 1 : 0];
}

struct ld_dist {
	uint64_t	 n;
	uint32_t	 p50, p90, p99, p999, max;
};

static void
ld_dist_of(uint32_t *v, size_t n, struct ld_dist *d)
{
	qsort(v, n, sizeof(*v), ld_cmp_u32);
	d->n = n;
	d->p50 = ld_pct(v, n, 5000);
	d->p90 = ld_pct(v, n, 9000);
	d->p99 = ld_pct(v, n, 9900);
	d->p999 = ld_pct(v, n, 9990);
	d->max = n > 0 ? v[n - 1] : 0;
}

static int
ld_summary(struct ld_run *run)
{
	struct ld_dist dist[LD_CAT__MAX + 1];
	struct rusage ru;
	uint32_t *lat = NULL;
	uint64_t *bins = NULL, final[LD_CAT__MAX + 1], win, peak = 0;
	size_t i, k, off[LD_CAT__MAX + 1], fill[LD_CAT__MAX], nbins;
	int64_t nth_us = -1, cpu_us, cpu_all_us;
	double el = (double)(run->end_us - run->t0_us) / 1e6, per;
	uint64_t n202 = 0, unsent;
	int code, first;

	if (el <= 0)
		el = 1e-6;
	getrusage(RUSAGE_SELF, &ru);
	cpu_us = ld_cpu_us(&ru) - ld_cpu_us(&run->ru0);
	cpu_all_us = ld_cpu_us(&ru);

	/* Latencies grouped by outcome, then each group sorted. */
	if ((lat = malloc((run->nrecs + 1) * sizeof(*lat))) == NULL)
		goto fail;
	off[0] = 0;
	for (k = 0; k < LD_CAT__MAX; k++)
		off[k + 1] = off[k] + run->cat[k];
	memcpy(fill, off, sizeof(fill));
	for (i = 0; i < run->nrecs; i++)
		lat[fill[ld_cat_of(run->recs[i].status)]++] =
		    run->recs[i].latency_us;
	for (k = 0; k < LD_CAT__MAX; k++)
		ld_dist_of(lat + off[k], off[k + 1] - off[k], &dist[k]);
	for (i = 0; i < run->nrecs; i++)
		lat[i] = run->recs[i].latency_us;
	ld_dist_of(lat, run->nrecs, &dist[LD_CAT__MAX]);

	/* Records are in completion order, so the Nth 202 is the Nth seen. */
	for (i = 0; i < run->nrecs && run->o.expect_202 > 0; i++)
		if (run->recs[i].status == 202 &&
		    ++n202 == (uint64_t)run->o.expect_202) {
			nth_us = run->recs[i].t_us;
			break;
		}

	/* The best second, from 100 ms bins. */
	nbins = (size_t)((run->end_us - run->t0_us) / 100000) + 2;
	if ((bins = calloc(nbins, sizeof(*bins))) == NULL)
		goto fail;
	for (i = 0; i < run->nrecs; i++)
		if (run->recs[i].t_us / 100000 < nbins)
			bins[run->recs[i].t_us / 100000]++;
	for (i = win = 0; i < nbins; i++) {
		win += bins[i] - (i >= 10 ? bins[i - 10] : 0);
		if (win > peak)
			peak = win;
	}

	memset(final, 0, sizeof(final));
	for (i = 0; i < run->nshoppers; i++)
		final[run->outcome[i] == 0 ? LD_CAT__MAX :
		    run->outcome[i] - 1U]++;
	unsent = run->ready_len + run->heap_len;

	printf("%s: %zu shoppers, %zu connections to %s, retries %" PRId64
	    ", opening at %" PRId64 " ms, stopped: %s\n", LD_NAME,
	    run->nshoppers, run->nconns, run->hosthdr, run->o.retries,
	    run->t0_unix_ms, run->stop_reason);
	printf("elapsed %.3f s from the opening; %" PRIu64 " requests sent, "
	    "%zu completed, %" PRIu64 " cut at the stop, %" PRIu64
	    " shoppers left waiting\n", el, run->sent, run->nrecs, run->cut,
	    unsent);
	printf("requests/s %.1f overall, %" PRIu64 " in the best second\n",
	    (double)run->nrecs / el, peak);
	printf("%-8s %10s %10s %10s %10s %10s %10s %10s   (latency us, "
	    "nearest rank)\n", "outcome", "count", "req/s", "p50", "p90",
	    "p99", "p99.9", "max");
	for (k = 0; k <= LD_CAT__MAX; k++)
		printf("%-8s %10" PRIu64 " %10.1f %10u %10u %10u %10u %10u\n",
		    k < LD_CAT__MAX ? ld_cat_names[k] : "all", dist[k].n,
		    (double)dist[k].n / el, dist[k].p50, dist[k].p90,
		    dist[k].p99, dist[k].p999, dist[k].max);
	first = 1;
	for (code = 100; code < 600; code++) {
		if (run->status[code] == 0 ||
		    ld_cat_of(code) != LD_CAT_OTHER)
			continue;
		printf("%s%d=%" PRIu64, first ? "other statuses: " : " ", code,
		    run->status[code]);
		first = 0;
	}
	if (!first)
		putchar('\n');
	if (run->cat[LD_CAT_NETERR] > 0 || run->warm_fails > 0) {
		printf("network errors:");
		for (k = 1; k < LD_NE__MAX; k++)
			printf(" %s=%" PRIu64, ld_neterr_names[k],
			    run->neterr[k]);
		printf(" (warm-up connect failures %" PRIu64 ")",
		    run->warm_fails);
		if (run->last_errno != 0)
			printf("; last system error: %s",
			    strerror(run->last_errno));
		if (run->last_proto[0] != '\0')
			printf("; last protocol error: %s", run->last_proto);
		putchar('\n');
	}
	printf("connects started %" PRIu64 ", idle connections closed by the "
	    "server %" PRIu64 "\n", run->connects, run->idle_closes);
	printf("shoppers' final outcome:");
	for (k = 0; k < LD_CAT__MAX; k++)
		printf(" %s=%" PRIu64, ld_cat_names[k], final[k]);
	printf(" unfinished=%" PRIu64 " (retries past the stop %" PRIu64 ")\n",
	    final[LD_CAT__MAX], run->late_retries);
	if (run->o.expect_202 > 0) {
		if (nth_us >= 0)
			printf("opening to the 202 number %" PRId64
			    ": %.3f ms\n", run->o.expect_202,
			    (double)nth_us / 1000);
		else
			printf("opening to the 202 number %" PRId64 ": never "
			    "(%" PRIu64 " 202s)\n", run->o.expect_202,
			    run->cat[LD_CAT_202]);
	}
	per = run->nrecs > 0 ? (double)cpu_us / (double)run->nrecs : 0;
	printf("own CPU %.3f s during the run: %.2f us per request "
	    "(%.3f s with loading and CSV)\n", (double)cpu_us / 1e6, per,
	    (double)cpu_all_us / 1e6);

	/* One line for scripts: stable keys, no spaces inside values. */
	printf("summary shoppers=%zu connections=%zu retries=%" PRId64
	    " stop=%s sent=%" PRIu64 " completed=%zu cut=%" PRIu64
	    " unsent=%" PRIu64 " elapsed_ms=%.3f rps=%.1f peak_rps_1s=%"
	    PRIu64, run->nshoppers, run->nconns, run->o.retries,
	    run->stop_reason, run->sent, run->nrecs, run->cut, unsent,
	    el * 1000, (double)run->nrecs / el, peak);
	for (k = 0; k <= LD_CAT__MAX; k++) {
		const char *name = k < LD_CAT__MAX ? ld_cat_names[k] : "all";

		printf(" n_%s=%" PRIu64 " rps_%s=%.1f p50_%s_us=%u p90_%s_us=%u"
		    " p99_%s_us=%u p999_%s_us=%u max_%s_us=%u", name,
		    dist[k].n, name, (double)dist[k].n / el, name, dist[k].p50,
		    name, dist[k].p90, name, dist[k].p99, name, dist[k].p999,
		    name, dist[k].max);
	}
	for (k = 0; k < LD_CAT__MAX; k++)
		printf(" final_%s=%" PRIu64, ld_cat_names[k], final[k]);
	printf(" final_unfinished=%" PRIu64, final[LD_CAT__MAX]);
	for (k = 1; k < LD_NE__MAX; k++)
		printf(" neterr_%s=%" PRIu64, ld_neterr_names[k],
		    run->neterr[k]);
	printf(" expect_202=%" PRId64 " t_nth_202_ms=%.3f cpu_us=%" PRId64
	    " cpu_us_per_req=%.3f\n", run->o.expect_202,
	    nth_us >= 0 ? (double)nth_us / 1000 : -1.0, cpu_us, per);
	fflush(stdout);
	free(bins);
	free(lat);
	return 0;
fail:
	ld_warn("out of memory for the summary");
	free(bins);
	free(lat);
	return -1;
}

/*
 * Self-test of the parser: each case is fed whole, byte by byte, and cut
 * in two at every offset, and must give the same answer every time.
 */

struct ld_case {
	const char	*name;
	const char	*in;
	enum ld_prs	 want;
	int		 eof;		/* the server closes after in */
	int		 status;
	int		 keep_alive;
	int		 retry_after;
	size_t		 leftover;
};

/* Feeds in as pieces of step bytes (cut first after split bytes). */
static enum ld_prs
ld_case_run(struct ld_rsp *r, const char *in, size_t len, size_t split,
    size_t step, int eof, size_t *consumed)
{
	enum ld_prs rc = LD_PRS_MORE;
	size_t off = 0, n, used;

	ld_rsp_reset(r);
	while (off < len && rc == LD_PRS_MORE) {
		n = off == 0 && split > 0 ? split : step;
		if (n > len - off)
			n = len - off;
		rc = ld_rsp_feed(r, in + off, n, &used);
		off += used;
	}
	*consumed = off;
	if (rc == LD_PRS_MORE && eof)
		rc = ld_rsp_eof(r);
	return rc;
}

static int
ld_case_check(const struct ld_case *t, size_t len)
{
	struct ld_rsp *r = NULL;
	enum ld_prs rc;
	size_t mode, consumed;
	int ok = 0;

	if ((r = malloc(sizeof(*r))) == NULL)
		goto fail;
	/* Mode 0: whole; 1: byte by byte; 2 + k: cut after k bytes. */
	for (mode = 0; mode < len + 2; mode++) {
		rc = ld_case_run(r, t->in, len, mode >= 2 ? mode - 2 : 0,
		    mode == 1 ? 1 : len, t->eof, &consumed);
		if (rc != t->want || (rc == LD_PRS_DONE &&
		    (r->status != t->status ||
		    r->keep_alive != t->keep_alive ||
		    r->retry_after != t->retry_after ||
		    len - consumed != t->leftover))) {
			printf("# %s (mode %zu): %s status %d keep-alive %d "
			    "retry-after %d leftover %zu %s\n", t->name, mode,
			    ld_prs_names[rc], r->status, r->keep_alive,
			    r->retry_after, len - consumed, r->errstr);
			goto fail;
		}
	}
	ok = 1;
fail:
	free(r);
	return ok;
}

static void
ld_case_tap(const struct ld_case *t, size_t len, size_t *pass, size_t *fail)
{
	if (ld_case_check(t, len))
		printf("ok %zu - %s\n", ++*pass + *fail, t->name);
	else
		printf("not ok %zu - %s\n", *pass + ++*fail, t->name);
}

static int
ld_self_test(void)
{
	static const struct ld_case cases[] = {
		{ "content-length",
		    "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\n"
		    "Content-Length: 20\r\n\r\n{\"error\":\"SOLD_OUT\"}",
		    LD_PRS_DONE, 0, 410, 1, -1, 0 },
		{ "chunked with extension and trailer",
		    "HTTP/1.1 202 Accepted\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n"
		    "5;name=val\r\nhello\r\n"
		    "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
		    "0\r\nX-Trailer: 1\r\n\r\n",
		    LD_PRS_DONE, 0, 202, 1, -1, 0 },
		{ "chunked, bare LF",
		    "HTTP/1.1 202 Accepted\n"
		    "Transfer-Encoding: gzip, chunked\n\n"
		    "3\nabc\n0\n\n",
		    LD_PRS_DONE, 0, 202, 1, -1, 0 },
		{ "503 retry-after close",
		    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\n"
		    "CONNECTION: Close\r\ncontent-length: 2\r\n\r\nno",
		    LD_PRS_DONE, 0, 503, 0, 2, 0 },
		{ "retry-after date and cap",
		    "HTTP/1.1 503 x\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 "
		    "GMT\r\nContent-Length: 0\r\n\r\n",
		    LD_PRS_DONE, 0, 503, 1, -1, 0 },
		{ "retry-after capped",
		    "HTTP/1.1 503 x\r\nRetry-After: 86400\r\n"
		    "Content-Length: 0\r\n\r\n",
		    LD_PRS_DONE, 0, 503, 1, LD_RETRY_AFTER_MAX_S, 0 },
		{ "http/1.0 closes",
		    "HTTP/1.0 429 Too Many Requests\r\n"
		    "Content-Length: 1\r\n\r\nx",
		    LD_PRS_DONE, 0, 429, 0, -1, 0 },
		{ "http/1.0 keep-alive",
		    "HTTP/1.0 409 Conflict\r\nConnection: keep-alive\r\n"
		    "Content-Length: 1\r\n\r\nx",
		    LD_PRS_DONE, 0, 409, 1, -1, 0 },
		{ "body until close",
		    "HTTP/1.1 200 OK\r\n\r\nsome body", LD_PRS_DONE, 1, 200, 0,
		    -1, 0 },
		{ "body until close, cut off",
		    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
		    LD_PRS_ERROR, 1, 0, 0, -1, 0 },
		{ "100 continue first",
		    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\n"
		    "Content-Length: 0\r\n\r\n",
		    LD_PRS_DONE, 0, 409, 1, -1, 0 },
		{ "204 and leftover bytes",
		    "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nXYZ",
		    LD_PRS_DONE, 0, 204, 1, -1, 3 },
		{ "blank lines before the status line",
		    "\r\n\r\nHTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n",
		    LD_PRS_DONE, 0, 410, 1, -1, 0 },
		{ "status without reason",
		    "HTTP/1.1 410\r\nContent-Length: 0\r\n\r\n",
		    LD_PRS_DONE, 0, 410, 1, -1, 0 },
		{ "chunked and length: close after",
		    "HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		    LD_PRS_DONE, 0, 202, 0, -1, 0 },
		{ "same length twice",
		    "HTTP/1.1 410 Gone\r\nContent-Length: 1\r\n"
		    "Content-Length: 1\r\n\r\nx",
		    LD_PRS_DONE, 0, 410, 1, -1, 0 },
		{ "http/2 status", "HTTP/2 200 OK\r\n\r\n", LD_PRS_ERROR, 0,
		    0, 0, -1, 0 },
		{ "two-digit status", "HTTP/1.1 20 OK\r\n\r\n", LD_PRS_ERROR,
		    0, 0, 0, -1, 0 },
		{ "not http", "SSH-2.0-OpenSSH\r\n\r\n", LD_PRS_ERROR, 0, 0, 0,
		    -1, 0 },
		{ "switching protocols",
		    "HTTP/1.1 101 Switching Protocols\r\n\r\n", LD_PRS_ERROR,
		    0, 0, 0, -1, 0 },
		{ "conflicting lengths",
		    "HTTP/1.1 410 Gone\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\nxx",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "negative length",
		    "HTTP/1.1 410 Gone\r\nContent-Length: -1\r\n\r\n",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "huge length",
		    "HTTP/1.1 410 Gone\r\nContent-Length: "
		    "99999999999999999999999\r\n\r\n",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "folded header",
		    "HTTP/1.1 410 Gone\r\nX-A: 1\r\n  2\r\n\r\n", LD_PRS_ERROR,
		    0, 0, 0, -1, 0 },
		{ "space before colon",
		    "HTTP/1.1 410 Gone\r\nContent-Length : 0\r\n\r\n",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "bad chunk size",
		    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "zz\r\n",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "chunk size overflow",
		    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "FFFFFFFFFFFFFFFFF\r\n", LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "chunk longer than said",
		    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "3\r\nabcd\r\n0\r\n\r\n", LD_PRS_ERROR, 0, 0, 0, -1, 0 },
		{ "chunked cut off",
		    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
		    "3\r\nab", LD_PRS_ERROR, 1, 0, 0, -1, 0 },
		{ "head cut off", "HTTP/1.1 410 Gone\r\nContent-Len",
		    LD_PRS_ERROR, 1, 0, 0, -1, 0 },
		{ "body too big",
		    "HTTP/1.1 200 OK\r\nContent-Length: 67108865\r\n\r\n",
		    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	};
	struct ld_case big = { "head too big", NULL, LD_PRS_ERROR, 0, 0, 0,
	    -1, 0 };
	size_t i, len, ncases = sizeof(cases) / sizeof(cases[0]);
	size_t pass = 0, fail = 0;
	char *in = NULL;

	/* TAP, for make check's driver, and a plain count at the end. */
	printf("1..%zu\n", ncases + 2);
	for (i = 0; i < ncases; i++)
		ld_case_tap(&cases[i], strlen(cases[i].in), &pass, &fail);
	/* A head one byte over the limit, built here: too long to list. */
	len = LD_HEAD_MAX + 1;
	if ((in = malloc(len + 1)) == NULL) {
		printf("not ok %zu - %s # out of memory\n", ++fail + pass,
		    big.name);
		printf("not ok %zu - head at the limit # out of memory\n",
		    ++fail + pass);
		goto fail;
	}
	memset(in, 'a', len);
	memcpy(in, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(in + len - 4, "\r\n\r\n", 4);
	in[len] = '\0';
	big.in = in;
	ld_case_tap(&big, len, &pass, &fail);
	/* Exactly at the limit it is accepted. */
	big.name = "head at the limit";
	big.want = LD_PRS_DONE;
	big.status = 200;
	big.keep_alive = 0;
	big.eof = 1;
	big.in = in + 1;
	memcpy(in + 1, "HTTP/1.1 200 OK\r\nX: ", 20);
	ld_case_tap(&big, len - 1, &pass, &fail);
fail:
	free(in);
	printf("self-test: %zu passed, %zu failed\n", pass, fail);
	return fail == 0 ? 0 : 1;
}

/*
 * Setup and teardown.
 */

static int
ld_fd_limit(size_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
		    rl.rlim_max > want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur < want) {
			ld_warn("%zu connections need %zu file descriptors; "
			    "the limit is %llu", want - 64, want,
			    (unsigned long long)rl.rlim_cur);
			return -1;
		}
	}
	return 0;
}

static int
ld_run_setup(struct ld_run *run)
{
	size_t i;

	if (run->o.requests_max == 0)
		run->o.requests_max = (int64_t)run->nshoppers *
		    (1 + run->o.retries);
	run->nconns = (size_t)run->o.connections;
	run->recs_cap = (size_t)run->o.requests_max;
	run->attempts = calloc(run->nshoppers, sizeof(*run->attempts));
	run->outcome = calloc(run->nshoppers, sizeof(*run->outcome));
	run->ready = malloc(run->nshoppers * sizeof(*run->ready));
	run->heap = malloc(run->nshoppers * sizeof(*run->heap));
	run->conns = calloc(run->nconns, sizeof(*run->conns));
	run->free_open = malloc(run->nconns * sizeof(*run->free_open));
	run->free_closed = malloc(run->nconns * sizeof(*run->free_closed));
	run->recs = malloc(run->recs_cap * sizeof(*run->recs));
	if (run->attempts == NULL || run->outcome == NULL ||
	    run->ready == NULL || run->heap == NULL || run->conns == NULL ||
	    run->free_open == NULL || run->free_closed == NULL ||
	    run->recs == NULL) {
		ld_warn("out of memory");
		return -1;
	}
	for (i = 0; i < run->nconns; i++) {
		run->conns[i].fd = -1;
		run->conns[i].shopper = -1;
	}
	for (i = 0; i < run->nshoppers; i++)
		ld_ready_push(run, (uint32_t)i);
	if ((run->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		ld_warn("epoll_create1: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void
ld_run_free(struct ld_run *run)
{
	size_t i;

	if (run == NULL)
		return;
	for (i = 0; run->conns != NULL && i < run->nconns; i++)
		ld_conn_close(&run->conns[i]);
	if (run->ep != -1)
		close(run->ep);
	free(run->arena);
	free(run->req_off);
	free(run->req_len);
	free(run->attempts);
	free(run->outcome);
	free(run->ready);
	free(run->heap);
	free(run->conns);
	free(run->free_open);
	free(run->free_closed);
	free(run->recs);
	free(run);
}

static void
ld_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = ld_on_signal;
	/* No SA_RESTART: epoll_wait must return so that the loop stops. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int
main(int argc, char **argv)
{
	struct epoll_event *evs = NULL;
	struct ld_run *run = NULL;
	char *buf = NULL;
	int rc = 1;

	if ((run = calloc(1, sizeof(*run))) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	run->ep = -1;
	run->o.host = "127.0.0.1";
	run->o.connections = 256;
	run->o.duration_max = 60;
	run->o.backoff_ms = 100;
	run->o.timeout_ms = 10000;
	if (ld_opts_parse(&run->o, argc, argv) == -1) {
		ld_warn("--help lists the options");
		goto fail;
	}
	if (run->o.help) {
		ld_usage(stdout);
		rc = 0;
		goto fail;
	}
	if (run->o.self_test) {
		rc = ld_self_test();
		goto fail;
	}
	if (run->o.tokens == NULL || run->o.port == 0) {
		ld_warn("--tokens and --port are required; --help lists the "
		    "options");
		goto fail;
	}
	run->rng = run->o.seed != 0 ? (uint64_t)run->o.seed :
	    (uint64_t)ld_unix_us() ^ (uint64_t)getpid() << 32;
	if (ld_addr_parse(run) == -1 ||
	    ld_fd_limit((size_t)run->o.connections + 64) == -1 ||
	    ld_tokens_load(run) == -1 || ld_run_setup(run) == -1)
		goto fail;
	if ((evs = calloc(LD_EVENTS_MAX, sizeof(*evs))) == NULL ||
	    (buf = malloc(LD_RECV_BUF)) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	ld_signals();
	if (ld_warmup(run, evs, buf) == -1 || ld_loop(run, evs, buf) == -1)
		goto fail;
	if (run->o.csv != NULL && ld_csv_write(run) == -1)
		goto fail;
	if (ld_summary(run) == -1)
		goto fail;
	rc = 0;
fail:
	free(buf);
	free(evs);
	ld_run_free(run);
	return rc;
}
