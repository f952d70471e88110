/*
 * Signed purchase URLs. The server signs "v1|<itemId>|<saleId>|<start>|<end>"
 * with crypto_auth (HMAC-SHA512-256) under url.key; the query string
 * carries the sale, the window and the tag in base64url:
 * sale=S&start=T0&end=T1&sig=X. The URL cannot be made without the key,
 * and it is refused before T0 and from T1 on. The URL of a sale with a
 * waiting room (docs/QUEUE.md) signs "v1|<itemId>|<saleId>|<start>|<end>|q"
 * and carries sale=S&start=T0&end=T1&q=1&sig=X: the flag is inside the
 * signature, so neither removing nor adding it leaves a valid URL.
 */
#ifndef FS_URLSIG_H
#define FS_URLSIG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define FS_URLSIG_KEYBYTES	32	/* crypto_auth_KEYBYTES */
#define FS_URLSIG_KEY_FILE	"url.key"
#define FS_URLSIG_QUERY_MAX	512	/* bytes of query string checked */
#define FS_URLSIG_SIGNED_MAX	136	/* fs_urlsig_sign's output, NUL included */

/* The URL key; wiped when freed. */
typedef struct fs_urlsig_key fs_urlsig_key;

enum fs_urlsig_status {
	FS_URLSIG_OK = 0,
	FS_URLSIG_TOO_LONG,	/* query string over FS_URLSIG_QUERY_MAX */
	FS_URLSIG_MALFORMED,	/* not exactly sale, start, end, [q=1,] sig, once each */
	FS_URLSIG_BAD_SIGNATURE,
	FS_URLSIG_NOT_STARTED,	/* genuine, but before start: 425 */
	FS_URLSIG_EXPIRED,	/* genuine, but at or after end */
	FS_URLSIG__MAX
};

const char *fs_urlsig_strerror(enum fs_urlsig_status);

/* Returns an unset key, or NULL when out of memory or libsodium fails. */
fs_urlsig_key *fs_urlsig_key_new(void);
void fs_urlsig_key_free(fs_urlsig_key *);

/*
 * Reads dir/url.key, exactly FS_URLSIG_KEYBYTES raw bytes. Returns 0, or
 * -1 with the reason in err (errlen bytes).
 */
int fs_urlsig_key_load_dir(fs_urlsig_key *, const char *dir, char *err,
    size_t errlen) __attribute__((warn_unused_result));
void fs_urlsig_key_set(fs_urlsig_key *,
    const unsigned char raw[FS_URLSIG_KEYBYTES]);

/*
 * Writes the signed query string for item in sale, valid from start to
 * end (unix seconds), into out (outmax bytes, FS_URLSIG_SIGNED_MAX is
 * always enough); queue != 0 for a sale with a waiting room (q=1). Returns
 * 0, or -1 when out is too small or the window is empty or negative.
 */
int fs_urlsig_sign(const fs_urlsig_key *, uint64_t item, uint64_t sale,
    time_t start, time_t end, int queue, char *out, size_t outmax)
    __attribute__((warn_unused_result));

/*
 * Checks the query string (len bytes, no NUL needed, never read past len)
 * of a purchase of item at time now. Numbers are plain decimal without
 * leading zeros, so one window has one spelling. The signature is checked
 * before the window, so a forged URL is never told "not started". On
 * FS_URLSIG_OK, *sale is the signed sale id, *end (unless NULL) the
 * signed end of the window and *queue 1 for a waiting room's URL (q=1,
 * whose purchase needs a pass), else 0.
 */
enum fs_urlsig_status fs_urlsig_check(const fs_urlsig_key *, uint64_t item,
    const char *query, size_t len, time_t now, uint64_t *sale, time_t *end, int *queue)
    __attribute__((warn_unused_result));

/*
 * Event tickets: what the shopper's page puts in the URL of an order's
 * status stream instead of its bearer token (EventSource sends no
 * headers). "<expires>.<tag>", the tag crypto_auth over "ev1|<orderId>|<expires>"
 * under the same key: it opens that order's stream only, until it expires,
 * and is worth nothing else. The order handler gives one to the order's
 * shopper; nchan's authorization subrequest checks it.
 */
#define FS_URLSIG_ORDER_ID_MAX	36	/* a UUID */
#define FS_URLSIG_TICKET_MAX	80	/* bytes of a ticket, without the NUL */

/* Writes the ticket of order_id valid until expires into out; 0 or -1. */
int fs_urlsig_ticket(const fs_urlsig_key *, const char *order_id, time_t expires, char *out,
    size_t outmax) __attribute__((warn_unused_result));
/* Checks a ticket (len bytes) for order_id at now: OK, MALFORMED, TOO_LONG, BAD_SIGNATURE, EXPIRED. */
enum fs_urlsig_status fs_urlsig_ticket_check(const fs_urlsig_key *, const char *order_id,
    const char *ticket, size_t len, time_t now) __attribute__((warn_unused_result));

#endif
