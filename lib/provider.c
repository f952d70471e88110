#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "httpc.h"
#include "jsonread.h"
#include "provider.h"
#include "uuid.h"

#define HEX_MAC (crypto_auth_hmacsha256_BYTES * 2)

static const char *const type_names[FS_PROVIDER_EVENT__MAX] = {
	[FS_PROVIDER_PAYMENT_SUCCEEDED] = "payment.succeeded",
	[FS_PROVIDER_PAYMENT_FAILED] = "payment.failed",
};

static const char *const verdict_texts[FS_PROVIDER_SIG__MAX] = {
	[FS_PROVIDER_SIG_OK] = "ok",
	[FS_PROVIDER_SIG_MISSING] = "no signature header",
	[FS_PROVIDER_SIG_MALFORMED] = "malformed signature header",
	[FS_PROVIDER_SIG_STALE] = "signature timestamp outside the tolerance",
	[FS_PROVIDER_SIG_BAD] = "signature does not match",
};

const char *
fs_provider_event_type_name(enum fs_provider_event_type t)
{
	return t < FS_PROVIDER_EVENT__MAX ? type_names[t] : "unknown";
}

const char *
fs_provider_verdict_text(enum fs_provider_verdict v)
{
	return v < FS_PROVIDER_SIG__MAX ? verdict_texts[v] : "unknown verdict";
}

int
fs_provider_id_ok(const char *id)
{
	size_t n = strlen(id);

	return n >= 1 && n <= FS_PROVIDER_ID_MAX &&
	    strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

/* HMAC-SHA256 of "<t>.<body>" with the secret. */
static void
mac_of(const void *secret, size_t secretlen, int64_t t, const char *body, size_t len,
    unsigned char mac[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;
	char ts[24];
	int n = snprintf(ts, sizeof(ts), "%" PRId64 ".", t);

	crypto_auth_hmacsha256_init(&st, secret, secretlen);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)ts, (unsigned long long)n);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

int
fs_provider_sign(const void *secret, size_t secretlen, int64_t t, const char *body, size_t len,
    char *out, size_t outlen)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char hex[HEX_MAC + 1];
	int n;

	mac_of(secret, secretlen, t, body, len, mac);
	sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
	n = snprintf(out, outlen, "t=%" PRId64 ",v1=%s", t, hex);
	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

/*
 * Checks "t=<digits>,v1=<64 hex>[,v1=...]" (other schemes ignored, as
 * providers add new ones): a match of any v1 is enough, so that a secret
 * being rotated can be signed with twice.
 */
enum fs_provider_verdict
fs_provider_verify(const void *secret, size_t secretlen, const char *header, const char *body,
    size_t len, int64_t now)
{
	unsigned char want[crypto_auth_hmacsha256_BYTES], got[crypto_auth_hmacsha256_BYTES];
	enum fs_provider_verdict v = FS_PROVIDER_SIG_MALFORMED;
	const char *p;
	int64_t t = -1;
	int sigs = 0, match = 0;

	if (header == NULL || *header == '\0')
		return FS_PROVIDER_SIG_MISSING;
	if (strlen(header) > FS_PROVIDER_SIG_MAX)
		return FS_PROVIDER_SIG_MALFORMED;
	for (p = header; *p != '\0';) {
		size_t item = strcspn(p, ","), digits;

		if (strncmp(p, "t=", 2) == 0) {
			digits = strspn(p + 2, "0123456789");
			if (t >= 0 || digits == 0 || digits > 12 || digits != item - 2)
				return FS_PROVIDER_SIG_MALFORMED;
			t = strtoll(p + 2, NULL, 10);
		} else if (strncmp(p, "v1=", 3) == 0) {
			if (item != 3 + HEX_MAC || strspn(p + 3, "0123456789abcdef") < HEX_MAC)
				return FS_PROVIDER_SIG_MALFORMED;
			sigs++;
		} else if (item == 0) {
			return FS_PROVIDER_SIG_MALFORMED;
		}
		p += item;
		if (*p == ',')
			p++;
	}
	if (t < 0 || sigs == 0)
		return FS_PROVIDER_SIG_MALFORMED;
	if (t < now - FS_PROVIDER_TOLERANCE_S || t > now + FS_PROVIDER_TOLERANCE_S)
		return FS_PROVIDER_SIG_STALE;
	mac_of(secret, secretlen, t, body, len, want);
	for (p = header; *p != '\0';) {
		size_t item = strcspn(p, ",");

		if (strncmp(p, "v1=", 3) == 0 &&
		    sodium_hex2bin(got, sizeof(got), p + 3, HEX_MAC, NULL, NULL, NULL) == 0 &&
		    sodium_memcmp(got, want, sizeof(want)) == 0)
			match = 1;
		p += item;
		if (*p == ',')
			p++;
	}
	v = match ? FS_PROVIDER_SIG_OK : FS_PROVIDER_SIG_BAD;
	sodium_memzero(want, sizeof(want));
	return v;
}

/* Copies a string member of 1 to max bytes; -1 when absent or not that. */
static int
copy_string(json_object *o, const char *name, char *out, size_t max)
{
	const char *s = fs_jsonread_string(o, name, max);

	if (s == NULL)
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

int
fs_provider_parse_event(const char *body, size_t len, struct fs_provider_event *ev,
    char *err, size_t errlen)
{
	json_object *doc, *data;
	const char *why;
	char type[32], jerr[64];
	int rc = -1;

	memset(ev, 0, sizeof(*ev));
	if (len > FS_PROVIDER_EVENT_MAX) {
		snprintf(err, errlen, "event too big");
		return -1;
	}
	if ((doc = fs_jsonread_object(body, len, 4, jerr, sizeof(jerr))) == NULL) {
		snprintf(err, errlen, "event is not one JSON object: %s", jerr);
		return -1;
	}
	why = "event needs id, type, created and data";
	if (copy_string(doc, "id", ev->id, FS_PROVIDER_ID_MAX) != 0 || !fs_provider_id_ok(ev->id) ||
	    copy_string(doc, "type", type, sizeof(type) - 1) != 0 ||
	    fs_jsonread_int(doc, "created", 0, INT64_C(1) << 40, &ev->created) != 0 ||
	    !json_object_object_get_ex(doc, "data", &data) ||
	    !json_object_is_type(data, json_type_object))
		goto out;
	why = "unknown event type";
	ev->type = FS_PROVIDER_EVENT__MAX;
	for (int i = 0; i < FS_PROVIDER_EVENT__MAX; i++)
		if (strcmp(type, type_names[i]) == 0)
			ev->type = (enum fs_provider_event_type)i;
	if (ev->type == FS_PROVIDER_EVENT__MAX)
		goto out;
	why = "event data needs paymentId, sessionId, orderId, amountMinor and currency";
	if (copy_string(data, "paymentId", ev->payment, FS_PROVIDER_ID_MAX) != 0 ||
	    !fs_provider_id_ok(ev->payment) ||
	    copy_string(data, "sessionId", ev->session, FS_PROVIDER_ID_MAX) != 0 ||
	    !fs_provider_id_ok(ev->session) ||
	    copy_string(data, "orderId", ev->order, sizeof(ev->order) - 1) != 0 ||
	    fs_uuid_parse(ev->order, strlen(ev->order), NULL) != 0 ||
	    fs_jsonread_int(data, "amountMinor", 0, INT64_MAX, &ev->amount_minor) != 0 ||
	    copy_string(data, "currency", ev->currency, 3) != 0 || strlen(ev->currency) != 3 ||
	    strspn(ev->currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 3)
		goto out;
	why = NULL;
	rc = 0;
out:
	if (why != NULL)
		snprintf(err, errlen, "%s", why);
	json_object_put(doc);
	return rc;
}

int
fs_provider_event_json(const struct fs_provider_event *ev, char *out, size_t outlen)
{
	int n = snprintf(out, outlen,
	    "{\"id\":\"%s\",\"type\":\"%s\",\"created\":%" PRId64 ",\"data\":{\"paymentId\":\"%s\","
	    "\"sessionId\":\"%s\",\"orderId\":\"%s\",\"amountMinor\":%" PRId64 ",\"currency\":\"%s\"}}",
	    ev->id, fs_provider_event_type_name(ev->type), ev->created, ev->payment, ev->session,
	    ev->order, ev->amount_minor, ev->currency);

	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

/* --- the API client ------------------------------------------------- */

static void set_err(fs_provider *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
set_err(fs_provider *p, const char *fmt, ...)
{
	va_list ap;

	p->err = 1;
	va_start(ap, fmt);
	vsnprintf(p->errstr, sizeof(p->errstr), fmt, ap);
	va_end(ap);
}

fs_provider *
fs_provider_new(const char *base, const char *api_key, char *err, size_t errlen)
{
	const char *host, *colon;
	struct in_addr addr;
	char hostbuf[64];
	fs_provider *p;
	char *end;
	long port;

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (strncmp(base, "https://", 8) == 0) {
		size_t n = strlen(base);

		/* Any host httpc takes, no path: the calls add theirs. */
		if (n > 8 && base[n - 1] == '/')
			n--;
		if (n >= sizeof(p->base) || strcspn(base + 8, "/") != n - 8 ||
		    fs_httpc_url_ok(base, err, errlen) != 0) {
			snprintf(err, errlen, "provider URL must be https://HOST[:PORT]");
			goto fail;
		}
		memcpy(p->base, base, n);
		p->base[n] = '\0';
		goto key;
	}
	if (strncmp(base, "http://", 7) != 0 || (colon = strchr(base + 7, ':')) == NULL) {
		snprintf(err, errlen, "provider URL must be http://HOST:PORT or https://HOST[:PORT]");
		goto fail;
	}
	host = base + 7;
	if ((size_t)(colon - host) >= sizeof(hostbuf)) {
		snprintf(err, errlen, "provider URL host too long");
		goto fail;
	}
	memcpy(hostbuf, host, (size_t)(colon - host));
	hostbuf[colon - host] = '\0';
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (inet_pton(AF_INET, hostbuf, &addr) != 1 || errno != 0 || end == colon + 1 ||
	    port < 1 || port > 65535 || (*end != '\0' && strcmp(end, "/") != 0)) {
		snprintf(err, errlen, "provider URL must be http://IPv4:PORT");
		goto fail;
	}
	snprintf(p->base, sizeof(p->base), "http://%s:%ld", hostbuf, port);
key:
	if (strlen(api_key) < FS_PROVIDER_SECRET_MIN || strlen(api_key) >= sizeof(p->api_key) ||
	    strspn(api_key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") !=
		strlen(api_key)) {
		snprintf(err, errlen, "provider API key must be %d to %zu characters of [A-Za-z0-9_]",
		    FS_PROVIDER_SECRET_MIN, sizeof(p->api_key) - 1);
		goto fail;
	}
	strcpy(p->api_key, api_key);
	return p;
fail:
	free(p);
	return NULL;
}

void
fs_provider_free(fs_provider *p)
{
	if (p == NULL)
		return;
	sodium_memzero(p->api_key, sizeof(p->api_key));
	free(p);
}

/*
 * One API call: POSTs body to path with the API key and the idempotency
 * key and parses the JSON of a 2xx answer (at most FS_PROVIDER_REPLY_MAX
 * bytes). The document (the caller puts it), or NULL with errstr.
 */
static json_object *
call(fs_provider *p, const char *path, const char *idem, const char *body, size_t len)
{
	char url[FS_PROVIDER_URL_MAX + 64], headers[256], why[FS_HTTPC_URL_MAX];
	struct fs_httpc_answer a;
	json_object *doc = NULL;
	int n;

	snprintf(url, sizeof(url), "%s%s", p->base, path);
	n = snprintf(headers, sizeof(headers),
	    "Authorization: Bearer %s\r\nIdempotency-Key: %s\r\nContent-Type: application/json\r\n",
	    p->api_key, idem);
	if (n < 0 || (size_t)n >= sizeof(headers)) {
		set_err(p, "provider request headers too long");
		goto out;
	}
	if (fs_httpc_send("POST", url, headers, body, len, FS_PROVIDER_TIMEOUT_MS, &a, why,
		sizeof(why)) != 0) {
		set_err(p, "provider: %s", why);
		goto out;
	}
	if (a.status < 200 || a.status > 299)
		set_err(p, "provider answered %d: %.80s", a.status, a.body);
	else if (a.len > FS_PROVIDER_REPLY_MAX)
		set_err(p, "provider answer over %d bytes", FS_PROVIDER_REPLY_MAX);
	else if ((doc = fs_jsonread_object(a.body, a.len, 4, why, sizeof(why))) == NULL)
		set_err(p, "provider answer: %s", why);
	fs_httpc_answer_free(&a);
out:
	sodium_memzero(headers, sizeof(headers));
	return doc;
}

int
fs_provider_open_session(fs_provider *p, const char *order_id, int64_t amount_minor,
    const char *currency, int64_t expires_ms, const char *return_url,
    struct fs_provider_session *out)
{
	char body[FS_PROVIDER_URL_MAX + 256];
	json_object *doc;
	int n, rc = -1;

	p->err = 0;
	memset(out, 0, sizeof(*out));
	/* The return URL is ours (configuration and ids): nothing to escape but we check. */
	if (strlen(return_url) > FS_PROVIDER_URL_MAX || strpbrk(return_url, "\"\\") != NULL) {
		set_err(p, "return URL too long or not plain");
		return -1;
	}
	n = snprintf(body, sizeof(body),
	    "{\"orderId\":\"%s\",\"amountMinor\":%" PRId64 ",\"currency\":\"%s\","
	    "\"expiresAt\":%" PRId64 ",\"returnUrl\":\"%s\"}",
	    order_id, amount_minor, currency, expires_ms, return_url);
	if (n < 0 || (size_t)n >= sizeof(body)) {
		set_err(p, "session request too big");
		return -1;
	}
	if ((doc = call(p, "/v1/checkout/sessions", order_id, body, (size_t)n)) == NULL)
		return -1;
	if (copy_string(doc, "id", out->id, FS_PROVIDER_ID_MAX) != 0 || !fs_provider_id_ok(out->id) ||
	    copy_string(doc, "paymentId", out->payment, FS_PROVIDER_ID_MAX) != 0 ||
	    !fs_provider_id_ok(out->payment) ||
	    copy_string(doc, "url", out->url, FS_PROVIDER_URL_MAX) != 0 ||
	    (strncmp(out->url, "http://", 7) != 0 && strncmp(out->url, "https://", 8) != 0) ||
	    strpbrk(out->url, "\"\\<> ") != NULL)
		set_err(p, "provider session answer lacks id, paymentId or url");
	else
		rc = 0;
	json_object_put(doc);
	return rc;
}

int
fs_provider_refund(fs_provider *p, const char *payment_id, int64_t amount_minor,
    const char *currency, char refund_id[FS_PROVIDER_ID_MAX + 1])
{
	char body[256], idem[FS_PROVIDER_ID_MAX + 8];
	json_object *doc;
	int n, rc = -1;

	p->err = 0;
	if (!fs_provider_id_ok(payment_id)) {
		set_err(p, "bad payment id");
		return -1;
	}
	n = snprintf(body, sizeof(body),
	    "{\"paymentId\":\"%s\",\"amountMinor\":%" PRId64 ",\"currency\":\"%s\"}", payment_id,
	    amount_minor, currency);
	snprintf(idem, sizeof(idem), "refund_%s", payment_id);
	if (n < 0 || (size_t)n >= sizeof(body)) {
		set_err(p, "refund request too big");
		return -1;
	}
	if ((doc = call(p, "/v1/refunds", idem, body, (size_t)n)) == NULL)
		return -1;
	if (copy_string(doc, "id", refund_id, FS_PROVIDER_ID_MAX) != 0 || !fs_provider_id_ok(refund_id))
		set_err(p, "provider refund answer lacks an id");
	else
		rc = 0;
	json_object_put(doc);
	return rc;
}
