/* flashsale-load: the HTTP/1.1 response parser. */
#include "load.h"

/*
 * The HTTP/1.1 response parser.  It is fed whatever recv() returned and
 * keeps its state across calls, so a response may arrive in any pieces.
 */

void
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
	r->kept = 0;
	r->errstr[0] = '\0';
}

/* Keeps the body's first LD_BODY_KEEP bytes, for the answers it reads. */
static void
ld_rsp_keep(struct ld_rsp *r, const char *p, size_t n)
{
	size_t room = sizeof(r->kbody) - r->kept;

	if (n > room)
		n = room;
	memcpy(r->kbody + r->kept, p, n);
	r->kept += n;
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

/* What the headers say about the body and the connection. */
struct ld_framing {
	int		 has_cl;	/* Content-Length given */
	int		 has_te;	/* Transfer-Encoding given */
	int		 chunked;	/* ... and chunked is its last coding */
	int		 conn_close;
	int		 conn_ka;
	uint64_t	 cl;
};

/*
 * HTTP-version SP 3DIGIT [SP reason]; the end of line is CRLF or LF.
 * *next gets the start of the next line.
 */
static enum ld_prs
ld_rsp_status_line(struct ld_rsp *r, const char **next, int *status, int *minor)
{
	const char *p = r->head, *end = r->head + r->head_len, *eol, *le;

	eol = memchr(p, '\n', (size_t)(end - p));
	if (eol == NULL)
		return ld_rsp_error(r, "no status line");
	le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
	if (le - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 ||
	    (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
	    p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' ||
	    p[11] < '0' || p[11] > '9' || (le - p > 12 && p[12] != ' '))
		return ld_rsp_error(r, "malformed status line");
	*minor = p[7] - '0';
	*status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	*next = eol + 1;
	return LD_PRS_MORE;
}

/* One header NAME: VAL (trimmed): the ones that frame the body count. */
static enum ld_prs
ld_rsp_header(struct ld_rsp *r, const char *name, size_t nlen, const char *val,
    const char *vend, struct ld_framing *fr)
{
	uint64_t v;
	int any, last;

	if (ld_token_is(name, nlen, "content-length")) {
		if (ld_parse_digits(val, (size_t)(vend - val), UINT64_MAX / 2,
		    &v) == -1)
			return ld_rsp_error(r, "bad Content-Length");
		if (fr->has_cl && v != fr->cl)
			return ld_rsp_error(r, "conflicting Content-Length");
		fr->has_cl = 1;
		fr->cl = v;
	} else if (ld_token_is(name, nlen, "transfer-encoding")) {
		ld_list_find(val, vend, "chunked", &any, &last);
		fr->has_te = 1;
		fr->chunked = last;
	} else if (ld_token_is(name, nlen, "connection")) {
		ld_list_find(val, vend, "close", &any, &last);
		fr->conn_close |= any;
		ld_list_find(val, vend, "keep-alive", &any, &last);
		fr->conn_ka |= any;
	} else if (ld_token_is(name, nlen, "retry-after")) {
		/* A date, not seconds: fall back to the backoff. */
		if (ld_parse_digits(val, (size_t)(vend - val), 1000000000,
		    &v) == 0)
			r->retry_after = v > LD_RETRY_AFTER_MAX_S ?
			    LD_RETRY_AFTER_MAX_S : (int)v;
		else
			r->retry_after = -1;
	}
	return LD_PRS_MORE;
}

/* The header lines from p to the empty line. */
static enum ld_prs
ld_rsp_headers(struct ld_rsp *r, const char *p, struct ld_framing *fr)
{
	const char *end = r->head + r->head_len, *eol, *le, *colon, *val, *vend, *q;
	enum ld_prs rc;

	for (; p < end; p = eol + 1) {
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
		rc = ld_rsp_header(r, p, (size_t)(colon - p), val, vend, fr);
		if (rc != LD_PRS_MORE)
			return rc;
	}
	return LD_PRS_MORE;
}

/* The head is complete: read the status and what frames the body. */
static enum ld_prs
ld_rsp_head_done(struct ld_rsp *r)
{
	struct ld_framing fr = { 0, 0, 0, 0, 0, 0 };
	const char *next;
	int status, minor;

	if (ld_rsp_status_line(r, &next, &status, &minor) != LD_PRS_MORE ||
	    ld_rsp_headers(r, next, &fr) != LD_PRS_MORE)
		return LD_PRS_ERROR;
	if (status < 200) {
		if (status == 101)
			return ld_rsp_error(r, "unexpected 101 response");
		/* An interim answer: the final one follows on the stream. */
		ld_rsp_reset(r);
		return LD_PRS_MORE;
	}
	r->status = status;
	r->keep_alive = minor == 1 ? !fr.conn_close : fr.conn_ka && !fr.conn_close;
	if (status == 204 || status == 304) {
		r->state = LD_RSP_DONE;
		return LD_PRS_DONE;
	}
	if (fr.has_te) {
		/* RFC 9112 6.3: chunked wins over a length, then close. */
		if (fr.has_cl || !fr.chunked)
			r->keep_alive = 0;
		r->state = fr.chunked ? LD_RSP_CHUNK_SIZE : LD_RSP_UNTIL_CLOSE;
		return LD_PRS_MORE;
	}
	if (fr.has_cl) {
		if (fr.cl > LD_BODY_MAX)
			return ld_rsp_error(r, "response body too big");
		r->body = fr.cl;
		r->remaining = fr.cl;
		r->state = fr.cl == 0 ? LD_RSP_DONE : LD_RSP_LENGTH;
		return fr.cl == 0 ? LD_PRS_DONE : LD_PRS_MORE;
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

/* One byte of the chunk framing (sizes, data ends, trailers). */
static enum ld_prs
ld_rsp_chunk_byte(struct ld_rsp *r, int c)
{
	enum ld_prs rc = LD_PRS_MORE;
	int d;

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
	return rc;
}

/* Chunk framing, byte by byte except for the data it skips in bulk. */
static enum ld_prs
ld_rsp_feed_chunked(struct ld_rsp *r, const char *p, size_t n, size_t *used)
{
	enum ld_prs rc = LD_PRS_MORE;
	size_t i = 0, k;

	while (i < n && rc == LD_PRS_MORE) {
		if (r->state == LD_RSP_CHUNK_DATA) {
			k = n - i < r->remaining ? n - i : (size_t)r->remaining;
			ld_rsp_keep(r, p + i, k);
			r->remaining -= k;
			i += k;
			if (r->remaining == 0)
				r->state = LD_RSP_CHUNK_DATA_CR;
			continue;
		}
		/* Only chunk states get here: size lines, then trailers. */
		if (r->state <= LD_RSP_CHUNK_SIZE_LF &&
		    ++r->line > LD_CHUNK_LINE_MAX) {
			rc = ld_rsp_error(r, "chunk-size line too long");
			i++;
			break;
		}
		if (r->state >= LD_RSP_TRAILER_START &&
		    ++r->line > LD_TRAILER_MAX) {
			rc = ld_rsp_error(r, "trailer section too big");
			i++;
			break;
		}
		rc = ld_rsp_chunk_byte(r, (unsigned char)p[i++]);
	}
	*used = i;
	return rc;
}

/*
 * Feeds n bytes.  DONE means one whole response was read; *used tells
 * how many bytes it took, and anything after them is not part of it.
 */
enum ld_prs
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
			ld_rsp_keep(r, p + off, k);
			r->remaining -= k;
			if (r->remaining == 0) {
				r->state = LD_RSP_DONE;
				rc = LD_PRS_DONE;
			}
			break;
		case LD_RSP_UNTIL_CLOSE:
			k = n - off;
			ld_rsp_keep(r, p + off, k);
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
enum ld_prs
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
