#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "b64url.h"
#include "keyfile.h"
#include "urlsig.h"

_Static_assert(FS_URLSIG_KEYBYTES == crypto_auth_KEYBYTES,
    "FS_URLSIG_KEYBYTES must be crypto_auth_KEYBYTES");

/* "v1|", four 20-digit numbers with their separators and "|q". */
#define URLSIG_MSG_MAX	96

struct fs_urlsig_key {
	unsigned char raw[crypto_auth_KEYBYTES];
};

/* The query parameters, in the order fs_urlsig_sign writes them. */
enum urlsig_param {
	URLSIG_SALE,
	URLSIG_START,
	URLSIG_END,
	URLSIG_Q,
	URLSIG_SIG,
	URLSIG__MAX
};

/* Every parameter but q is required. */
#define URLSIG_REQUIRED	(((1u << URLSIG__MAX) - 1) & ~(1u << URLSIG_Q))

static const char *const urlsig_names[URLSIG__MAX] = {
	[URLSIG_SALE] = "sale",
	[URLSIG_START] = "start",
	[URLSIG_END] = "end",
	[URLSIG_Q] = "q",
	[URLSIG_SIG] = "sig",
};

static const char *const urlsig_errors[FS_URLSIG__MAX] = {
	[FS_URLSIG_OK] = "ok",
	[FS_URLSIG_TOO_LONG] = "purchase URL too long",
	[FS_URLSIG_MALFORMED] = "malformed purchase URL",
	[FS_URLSIG_BAD_SIGNATURE] = "bad purchase URL signature",
	[FS_URLSIG_NOT_STARTED] = "sale not started",
	[FS_URLSIG_EXPIRED] = "purchase URL expired",
};

const char *
fs_urlsig_strerror(enum fs_urlsig_status st)
{
	if ((unsigned)st >= FS_URLSIG__MAX)
		return "unknown purchase URL status";
	return urlsig_errors[st];
}

fs_urlsig_key *
fs_urlsig_key_new(void)
{
	if (sodium_init() < 0)
		return NULL;
	return calloc(1, sizeof(fs_urlsig_key));
}

void
fs_urlsig_key_free(fs_urlsig_key *key)
{
	if (key == NULL)
		return;
	sodium_memzero(key, sizeof(*key));
	free(key);
}

int
fs_urlsig_key_load_dir(fs_urlsig_key *key, const char *dir, char *err,
    size_t errlen)
{
	switch (fs_keyfile_read(dir, FS_URLSIG_KEY_FILE, key->raw,
	    sizeof(key->raw), err, errlen)) {
	case FS_KEYFILE_OK:
		return 0;
	case FS_KEYFILE_ABSENT:
		snprintf(err, errlen, "%s/%s: no such file", dir,
		    FS_URLSIG_KEY_FILE);
		return -1;
	default:
		return -1;
	}
}

void
fs_urlsig_key_set(fs_urlsig_key *key, const unsigned char raw[FS_URLSIG_KEYBYTES])
{
	memcpy(key->raw, raw, sizeof(key->raw));
}

/* Writes the signed message into msg and returns its length. */
static size_t
urlsig_message(char msg[URLSIG_MSG_MAX], uint64_t item, uint64_t sale,
    uint64_t start, uint64_t end, int queue)
{
	return (size_t)snprintf(msg, URLSIG_MSG_MAX,
	    "v1|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "|%" PRIu64 "%s",
	    item, sale, start, end, queue ? "|q" : "");
}

int
fs_urlsig_sign(const fs_urlsig_key *key, uint64_t item, uint64_t sale,
    time_t start, time_t end, int queue, char *out, size_t outmax)
{
	unsigned char tag[crypto_auth_BYTES];
	char msg[URLSIG_MSG_MAX], sig[FS_B64URL_ENCODED_LEN(crypto_auth_BYTES) + 1];
	size_t len;
	int n;

	if (outmax > 0)
		out[0] = '\0';
	if (start < 0 || end <= start)
		return -1;
	len = urlsig_message(msg, item, sale, (uint64_t)start, (uint64_t)end, queue);
	crypto_auth(tag, (const unsigned char *)msg, len, key->raw);
	(void)fs_b64url_encode(sig, sizeof(sig), tag, sizeof(tag), NULL);
	n = snprintf(out, outmax,
	    "sale=%" PRIu64 "&start=%" PRIu64 "&end=%" PRIu64 "%s&sig=%s",
	    sale, (uint64_t)start, (uint64_t)end, queue ? "&q=1" : "", sig);
	if (n < 0 || (size_t)n >= outmax) {
		if (outmax > 0)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

/* Parses 1 to 20 decimal digits without a leading zero; -1 on overflow. */
static int
urlsig_u64(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0 || (s[0] == '0' && len > 1))
		return -1;
	for (i = 0; i < len; i++) {
		unsigned d = (unsigned)s[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

/*
 * Splits the query into its parameters, each present at most once, all but
 * q exactly once; q's one value is 1, and *queue says whether it came.
 */
static int
urlsig_parse(const char *q, size_t len, uint64_t num[URLSIG_Q],
    unsigned char tag[crypto_auth_BYTES], int *queue)
{
	const char *p = q, *end = q + len, *amp, *eq;
	unsigned seen = 0;
	size_t namelen, vallen, taglen;
	int i;

	for (;;) {
		if ((amp = memchr(p, '&', (size_t)(end - p))) == NULL)
			amp = end;
		if ((eq = memchr(p, '=', (size_t)(amp - p))) == NULL)
			return -1;
		namelen = (size_t)(eq - p);
		vallen = (size_t)(amp - eq - 1);
		for (i = 0; i < URLSIG__MAX; i++)
			if (strlen(urlsig_names[i]) == namelen &&
			    memcmp(urlsig_names[i], p, namelen) == 0)
				break;
		if (i == URLSIG__MAX || (seen & 1u << i))
			return -1;
		seen |= 1u << i;
		if (i == URLSIG_SIG) {
			if (fs_b64url_decode(tag, crypto_auth_BYTES, eq + 1,
			    vallen, &taglen) != FS_B64URL_OK ||
			    taglen != crypto_auth_BYTES)
				return -1;
		} else if (i == URLSIG_Q) {
			if (vallen != 1 || eq[1] != '1')
				return -1;
		} else if (urlsig_u64(eq + 1, vallen, &num[i]) == -1)
			return -1;
		if (amp == end)
			break;
		p = amp + 1;
	}
	*queue = (seen >> URLSIG_Q) & 1;
	return (seen & URLSIG_REQUIRED) == URLSIG_REQUIRED ? 0 : -1;
}

enum fs_urlsig_status
fs_urlsig_check(const fs_urlsig_key *key, uint64_t item, const char *query,
    size_t len, time_t now, uint64_t *sale, time_t *end, int *queue)
{
	unsigned char tag[crypto_auth_BYTES];
	char msg[URLSIG_MSG_MAX];
	uint64_t num[URLSIG_Q], t;
	size_t msglen;
	int q = 0;

	*queue = 0;
	if (query == NULL)
		return FS_URLSIG_MALFORMED;
	if (len > FS_URLSIG_QUERY_MAX)
		return FS_URLSIG_TOO_LONG;
	if (urlsig_parse(query, len, num, tag, &q) == -1)
		return FS_URLSIG_MALFORMED;
	msglen = urlsig_message(msg, item, num[URLSIG_SALE],
	    num[URLSIG_START], num[URLSIG_END], q);
	if (crypto_auth_verify(tag, (const unsigned char *)msg, msglen,
	    key->raw) != 0)
		return FS_URLSIG_BAD_SIGNATURE;
	t = now < 0 ? 0 : (uint64_t)now;
	if (t >= num[URLSIG_END])
		return FS_URLSIG_EXPIRED;
	if (t < num[URLSIG_START])
		return FS_URLSIG_NOT_STARTED;
	*sale = num[URLSIG_SALE];
	*queue = q;
	if (end != NULL)
		*end = num[URLSIG_END] > (uint64_t)INT64_MAX / 1000 ? (time_t)(INT64_MAX / 1000) :
								    (time_t)num[URLSIG_END];
	return FS_URLSIG_OK;
}

/* "ev1|", an order id and the expiry: the ticket's signed message. */
static size_t
ticket_message(char *msg, size_t max, const char *order_id, uint64_t exp)
{
	int n = snprintf(msg, max, "ev1|%s|%" PRIu64, order_id, exp);

	return n < 0 || (size_t)n >= max ? 0 : (size_t)n;
}

int
fs_urlsig_ticket(const fs_urlsig_key *key, const char *order_id, time_t expires, char *out,
    size_t outmax)
{
	unsigned char tag[crypto_auth_BYTES];
	char msg[URLSIG_MSG_MAX];
	size_t msglen, pos;
	int n;

	if (expires <= 0 || strlen(order_id) > FS_URLSIG_ORDER_ID_MAX ||
	    (msglen = ticket_message(msg, sizeof(msg), order_id, (uint64_t)expires)) == 0)
		return -1;
	crypto_auth(tag, (const unsigned char *)msg, msglen, key->raw);
	n = snprintf(out, outmax, "%" PRIu64 ".", (uint64_t)expires);
	if (n < 0 || (size_t)n >= outmax)
		return -1;
	pos = (size_t)n;
	if (fs_b64url_encode(out + pos, outmax - pos, tag, sizeof(tag), NULL) != FS_B64URL_OK)
		return -1;
	return 0;
}

enum fs_urlsig_status
fs_urlsig_ticket_check(const fs_urlsig_key *key, const char *order_id, const char *ticket,
    size_t len, time_t now)
{
	unsigned char tag[crypto_auth_BYTES];
	char msg[URLSIG_MSG_MAX];
	const char *dot;
	uint64_t exp;
	size_t msglen, taglen;

	if (ticket == NULL || order_id == NULL)
		return FS_URLSIG_MALFORMED;
	if (len > FS_URLSIG_TICKET_MAX)
		return FS_URLSIG_TOO_LONG;
	if ((dot = memchr(ticket, '.', len)) == NULL ||
	    urlsig_u64(ticket, (size_t)(dot - ticket), &exp) == -1 ||
	    fs_b64url_decode(tag, sizeof(tag), dot + 1, len - (size_t)(dot - ticket) - 1, &taglen) !=
		FS_B64URL_OK ||
	    taglen != sizeof(tag) || strlen(order_id) > FS_URLSIG_ORDER_ID_MAX ||
	    (msglen = ticket_message(msg, sizeof(msg), order_id, exp)) == 0)
		return FS_URLSIG_MALFORMED;
	if (crypto_auth_verify(tag, (const unsigned char *)msg, msglen, key->raw) != 0)
		return FS_URLSIG_BAD_SIGNATURE;
	if ((now < 0 ? 0 : (uint64_t)now) >= exp)
		return FS_URLSIG_EXPIRED;
	return FS_URLSIG_OK;
}
