/*
 * Payment provider driver: the only module that knows the provider's wire
 * formats. Its webhook signature (header "Provider-Signature:
 * t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">" with the shared
 * webhook secret, libsodium crypto_auth_hmacsha256, compared in constant
 * time), its event document, and its API (create a checkout session,
 * refund a payment) over HTTP/1.1 to the provider's base URL with the API
 * key as a bearer token. A rule never sees any of it: it gets a parsed
 * event or a session.
 */
#ifndef FS_PROVIDER_H
#define FS_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#define FS_PROVIDER_ID_MAX		64	/* bytes in an event, payment, session or refund id */
#define FS_PROVIDER_URL_MAX		512	/* bytes in a URL we send or get back */
#define FS_PROVIDER_SIG_MAX		512	/* bytes in a signature header we read */
#define FS_PROVIDER_TOLERANCE_S		300	/* how far a signature's t may be from now */
#define FS_PROVIDER_EVENT_MAX		4096	/* bytes in an event document */
#define FS_PROVIDER_SECRET_MIN		16	/* bytes in a webhook secret, at least */
#define FS_PROVIDER_SECRET_MAX		256
#define FS_PROVIDER_REPLY_MAX		8192	/* bytes of an API answer we read */
#define FS_PROVIDER_TIMEOUT_MS		3000	/* per API call, connect to last byte */

enum fs_provider_verdict {
	FS_PROVIDER_SIG_OK = 0,
	FS_PROVIDER_SIG_MISSING,	/* no header */
	FS_PROVIDER_SIG_MALFORMED,	/* not t=...,v1=... or too long */
	FS_PROVIDER_SIG_STALE,		/* t outside the tolerance */
	FS_PROVIDER_SIG_BAD,		/* no v1 matches */
	FS_PROVIDER_SIG__MAX
};

enum fs_provider_event_type {
	FS_PROVIDER_PAYMENT_SUCCEEDED,
	FS_PROVIDER_PAYMENT_FAILED,
	FS_PROVIDER_EVENT__MAX
};

/* A provider event: {"id","type","created","data":{"paymentId","sessionId","orderId","amountMinor","currency"}}. */
struct fs_provider_event {
	char id[FS_PROVIDER_ID_MAX + 1];
	enum fs_provider_event_type type;
	int64_t created;
	char payment[FS_PROVIDER_ID_MAX + 1];
	char session[FS_PROVIDER_ID_MAX + 1];
	char order[37];
	int64_t amount_minor;
	char currency[4];
};

/* A checkout session at the provider. */
struct fs_provider_session {
	char id[FS_PROVIDER_ID_MAX + 1];
	char payment[FS_PROVIDER_ID_MAX + 1];
	char url[FS_PROVIDER_URL_MAX + 1];
};

/* "payment.succeeded" ... */
const char *fs_provider_event_type_name(enum fs_provider_event_type);
const char *fs_provider_verdict_text(enum fs_provider_verdict);

/*
 * The signature header's value for body at time t: "t=<t>,v1=<hex>".
 * Returns its length, or -1 when out is too small.
 */
int fs_provider_sign(const void *secret, size_t secretlen, int64_t t, const char *body,
    size_t len, char *out, size_t outlen);
/*
 * Checks header (NULL when absent) against body at time now: well formed,
 * t within FS_PROVIDER_TOLERANCE_S of now, and one v1 equal (in constant
 * time) to the HMAC of "t.body".
 */
enum fs_provider_verdict fs_provider_verify(const void *secret, size_t secretlen,
    const char *header, const char *body, size_t len, int64_t now)
    __attribute__((warn_unused_result));

/* Reads an event document; -1 with the reason in err when it is not one. */
int fs_provider_parse_event(const char *body, size_t len, struct fs_provider_event *ev,
    char *err, size_t errlen);
/* Writes an event document; its length, or -1 when out is too small. */
int fs_provider_event_json(const struct fs_provider_event *ev, char *out, size_t outlen);

/* True for 1 to FS_PROVIDER_ID_MAX bytes of [A-Za-z0-9_]. */
int fs_provider_id_ok(const char *id);

typedef struct fs_provider {
	char base[FS_PROVIDER_URL_MAX - 63];	/* scheme://host:port, no slash after */
	char api_key[128];
	int err;
	char errstr[128];
} fs_provider;

/*
 * base: "http://HOST:PORT" with a numeric IPv4 host, or
 * "https://HOST[:PORT]" (lib/httpc: a DNS name, the certificate verified);
 * api_key: the bearer token of the provider's API. NULL with err set when
 * malformed.
 */
fs_provider *fs_provider_new(const char *base, const char *api_key, char *err, size_t errlen);
/* Wipes the API key; NULL is fine. */
void fs_provider_free(fs_provider *);
/*
 * Opens (or, for the same order id, finds again: it is the idempotency
 * key) the checkout session of an order: amount in minor units, ISO
 * currency, the instant it must expire (ms since the epoch), and where the
 * provider sends the shopper back. 0, or -1 with err/errstr set.
 */
int fs_provider_open_session(fs_provider *, const char *order_id, int64_t amount_minor,
    const char *currency, int64_t expires_ms, const char *return_url,
    struct fs_provider_session *out);
/*
 * Refunds a payment in full (idempotent by payment id: asking twice makes
 * one refund). refund_id gets the provider's refund id. 0, or -1.
 */
int fs_provider_refund(fs_provider *, const char *payment_id, int64_t amount_minor,
    const char *currency, char refund_id[FS_PROVIDER_ID_MAX + 1]);

#endif
