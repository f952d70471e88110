#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "b64url.h"
#include "keyfile.h"
#include "queue.h"
#include "token.h"

_Static_assert(FS_QUEUE_KEYBYTES == crypto_kdf_KEYBYTES, "queue.key is a crypto_kdf key");
_Static_assert(FS_QUEUE_SEEDBYTES == crypto_auth_hmacsha256_KEYBYTES,
    "the seed is an HMAC-SHA256 key");

/* Both derived keys come from queue.key under this context (8 bytes). */
#define QUEUE_KDF_CONTEXT	"fsqueue1"
#define QUEUE_KDF_PASS		1
#define QUEUE_KDF_TICKET	2

/* "p1|", a 20-digit sale, a subject, a 20-digit expiry, separators, a NUL. */
#define QUEUE_MSG_MAX	(3 + 20 + 1 + FS_TOKEN_SUB_MAX + 1 + 20 + 1)

_Static_assert(FS_B64URL_ENCODED_LEN(QUEUE_MSG_MAX) + 1 +
	FS_B64URL_ENCODED_LEN(crypto_auth_BYTES) < FS_QUEUE_TOKEN_MAX,
    "every pass and ticket fits FS_QUEUE_TOKEN_MAX");

struct fs_queue_keys {
	unsigned char pass[crypto_auth_KEYBYTES];
	unsigned char ticket[crypto_auth_KEYBYTES];
};

static const char *const queue_errors[FS_QUEUE__MAX] = {
	[FS_QUEUE_OK] = "ok",
	[FS_QUEUE_MALFORMED] = "malformed",
	[FS_QUEUE_BAD_TAG] = "bad signature",
	[FS_QUEUE_EXPIRED] = "expired",
	[FS_QUEUE_OTHER_SALE] = "for another sale",
	[FS_QUEUE_WEAK] = "proof of work too weak",
};

const char *
fs_queue_strerror(enum fs_queue_status st)
{
	if ((unsigned)st >= FS_QUEUE__MAX)
		return "unknown queue status";
	return queue_errors[st];
}

fs_queue_keys *
fs_queue_keys_new(void)
{
	if (sodium_init() < 0)
		return NULL;
	return calloc(1, sizeof(fs_queue_keys));
}

void
fs_queue_keys_free(fs_queue_keys *keys)
{
	if (keys == NULL)
		return;
	sodium_memzero(keys, sizeof(*keys));
	free(keys);
}

void
fs_queue_keys_set(fs_queue_keys *keys, const unsigned char raw[FS_QUEUE_KEYBYTES])
{
	crypto_kdf_derive_from_key(keys->pass, sizeof(keys->pass), QUEUE_KDF_PASS,
	    QUEUE_KDF_CONTEXT, raw);
	crypto_kdf_derive_from_key(keys->ticket, sizeof(keys->ticket), QUEUE_KDF_TICKET,
	    QUEUE_KDF_CONTEXT, raw);
}

int
fs_queue_keys_load_dir(fs_queue_keys *keys, const char *dir, char *err, size_t errlen)
{
	unsigned char raw[FS_QUEUE_KEYBYTES];

	switch (fs_keyfile_read(dir, FS_QUEUE_KEY_FILE, raw, sizeof(raw), err, errlen)) {
	case FS_KEYFILE_OK:
		fs_queue_keys_set(keys, raw);
		sodium_memzero(raw, sizeof(raw));
		return 0;
	case FS_KEYFILE_ABSENT:
		snprintf(err, errlen,
		    "%s/%s: no such file (the waiting room's key: flashsale-admin keys generate %s "
		    "adds it)",
		    dir, FS_QUEUE_KEY_FILE, dir);
		return -1;
	default:
		return -1;
	}
}

int64_t
fs_queue_draw(const unsigned char seed[FS_QUEUE_SEEDBYTES], const char *sub, size_t sublen)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	uint64_t v = 0;
	int i;

	crypto_auth_hmacsha256(mac, (const unsigned char *)sub, sublen, seed);
	for (i = 0; i < 7; i++)
		v = v << 8 | mac[i];
	/* 56 bits read; the first 52 are the draw. */
	return (int64_t)(v >> 4);
}

void
fs_queue_seed_commit(const unsigned char seed[FS_QUEUE_SEEDBYTES], char hex[65])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, seed, FS_QUEUE_SEEDBYTES);
	sodium_bin2hex(hex, 65, h, sizeof(h));
}

/*
 * The signed message of a pass ("p1|<sale>|<sub>|<expires>") or, when
 * expires_s < 0, of a ticket ("t1|<sale>|<sub>"); its length, or 0 when
 * sub is not a subject.
 */
static size_t
queue_message(char msg[QUEUE_MSG_MAX], uint64_t sale, const char *sub, size_t sublen,
    int64_t expires_s)
{
	int n;

	if (!fs_token_sub_ok(sub, sublen))
		return 0;
	if (expires_s < 0)
		n = snprintf(msg, QUEUE_MSG_MAX, "t1|%" PRIu64 "|%.*s", sale, (int)sublen, sub);
	else
		n = snprintf(msg, QUEUE_MSG_MAX, "p1|%" PRIu64 "|%.*s|%" PRId64, sale,
		    (int)sublen, sub, expires_s);
	return n < 0 || n >= QUEUE_MSG_MAX ? 0 : (size_t)n;
}

/* b64url(msg) "." b64url(crypto_auth tag of msg under key) into out; 0 or -1. */
static int
queue_token_write(const unsigned char *key, const char *msg, size_t msglen, char *out,
    size_t outmax)
{
	unsigned char tag[crypto_auth_BYTES];
	size_t n = 0;

	crypto_auth(tag, (const unsigned char *)msg, msglen, key);
	if (msglen == 0 || fs_b64url_encode(out, outmax, msg, msglen, &n) != FS_B64URL_OK ||
	    n + 1 >= outmax)
		goto fail;
	out[n] = '.';
	if (fs_b64url_encode(out + n + 1, outmax - n - 1, tag, sizeof(tag), NULL) !=
	    FS_B64URL_OK)
		goto fail;
	return 0;
fail:
	if (outmax > 0)
		out[0] = '\0';
	return -1;
}

/*
 * Decodes a pass or ticket (len bytes, never read past) and checks its tag
 * under key: its message into msg, NUL-terminated, length *msglen.
 */
static enum fs_queue_status
queue_token_open(const unsigned char *key, const char *tok, size_t len,
    char msg[QUEUE_MSG_MAX], size_t *msglen)
{
	unsigned char tag[crypto_auth_BYTES];
	const char *dot;
	size_t taglen;

	if (tok == NULL || len >= FS_QUEUE_TOKEN_MAX || (dot = memchr(tok, '.', len)) == NULL ||
	    fs_b64url_decode(msg, QUEUE_MSG_MAX - 1, tok, (size_t)(dot - tok), msglen) !=
		FS_B64URL_OK ||
	    fs_b64url_decode(tag, sizeof(tag), dot + 1, len - (size_t)(dot - tok) - 1,
		&taglen) != FS_B64URL_OK ||
	    taglen != sizeof(tag))
		return FS_QUEUE_MALFORMED;
	msg[*msglen] = '\0';
	if (crypto_auth_verify(tag, (const unsigned char *)msg, *msglen, key) != 0)
		return FS_QUEUE_BAD_TAG;
	return FS_QUEUE_OK;
}

/*
 * Reads sale, subject and (for a pass, pass != 0) expiry out of a checked
 * message; 0 only when writing them again gives the same bytes, so every
 * token has one spelling (no leading zero, no sign, no space).
 */
static int
queue_message_read(const char *msg, size_t len, int pass, uint64_t *sale, const char **sub,
    size_t *sublen, int64_t *expires_s)
{
	char again[QUEUE_MSG_MAX];
	const char *p, *last;
	char *end;

	*expires_s = -1;
	if (len < 3 || memcmp(msg, pass ? "p1|" : "t1|", 3) != 0)
		return -1;
	*sale = strtoull(msg + 3, &end, 10);
	if (*end != '|')
		return -1;
	*sub = end + 1;
	last = msg + len;
	if (pass) {
		for (p = msg + len - 1; p > *sub && *p != '|'; p--)
			;
		if (p <= *sub)
			return -1;
		last = p;
		*expires_s = strtoll(p + 1, &end, 10);
		if (*expires_s < 0)
			return -1;
	}
	*sublen = (size_t)(last - *sub);
	return queue_message(again, *sale, *sub, *sublen, *expires_s) == len &&
		memcmp(again, msg, len) == 0 ?
	    0 :
	    -1;
}

/* Opens and reads a pass or ticket for sale; the subject into sub (submax bytes). */
static enum fs_queue_status
queue_token_check(const unsigned char *key, int pass, const char *tok, size_t len,
    uint64_t sale, char *sub, size_t submax, int64_t *expires_s)
{
	char msg[QUEUE_MSG_MAX];
	const char *s;
	size_t msglen, slen;
	uint64_t got;
	enum fs_queue_status st;

	if (sub != NULL && submax > 0)
		sub[0] = '\0';
	if ((st = queue_token_open(key, tok, len, msg, &msglen)) != FS_QUEUE_OK)
		return st;
	if (queue_message_read(msg, msglen, pass, &got, &s, &slen, expires_s) != 0)
		return FS_QUEUE_MALFORMED;
	if (got != sale)
		return FS_QUEUE_OTHER_SALE;
	if (sub != NULL) {
		if (slen >= submax)
			return FS_QUEUE_MALFORMED;
		memcpy(sub, s, slen);
		sub[slen] = '\0';
	}
	return FS_QUEUE_OK;
}

int
fs_queue_pass_mint(const fs_queue_keys *keys, uint64_t sale, const char *sub, int64_t expires_s,
    char *out, size_t outmax)
{
	char msg[QUEUE_MSG_MAX];

	if (expires_s <= 0)
		return -1;
	return queue_token_write(keys->pass, msg,
	    queue_message(msg, sale, sub, strlen(sub), expires_s), out, outmax);
}

enum fs_queue_status
fs_queue_pass_check(const fs_queue_keys *keys, const char *pass, size_t len, uint64_t sale,
    int64_t now_s, char *sub, size_t submax, int64_t *expires_s)
{
	int64_t exp;
	enum fs_queue_status st;

	st = queue_token_check(keys->pass, 1, pass, len, sale, sub, submax, &exp);
	if (st == FS_QUEUE_OK && now_s >= exp)
		st = FS_QUEUE_EXPIRED;
	if (st != FS_QUEUE_OK && sub != NULL && submax > 0)
		sub[0] = '\0';
	if (st == FS_QUEUE_OK && expires_s != NULL)
		*expires_s = exp;
	return st;
}

int
fs_queue_ticket_mint(const fs_queue_keys *keys, uint64_t sale, const char *sub, char *out,
    size_t outmax)
{
	char msg[QUEUE_MSG_MAX];

	return queue_token_write(keys->ticket, msg, queue_message(msg, sale, sub, strlen(sub), -1),
	    out, outmax);
}

enum fs_queue_status
fs_queue_ticket_check(const fs_queue_keys *keys, const char *ticket, size_t len, uint64_t sale,
    char *sub, size_t submax)
{
	int64_t exp;
	enum fs_queue_status st;

	st = queue_token_check(keys->ticket, 0, ticket, len, sale, sub, submax, &exp);
	if (st != FS_QUEUE_OK && sub != NULL && submax > 0)
		sub[0] = '\0';
	return st;
}

/* Whether the len bytes at nonce are 1 to FS_QUEUE_NONCE_MAX of [A-Za-z0-9_-]. */
static int
queue_nonce_ok(const char *nonce, size_t len)
{
	size_t i;

	if (nonce == NULL || len == 0 || len > FS_QUEUE_NONCE_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (!(nonce[i] >= 'a' && nonce[i] <= 'z') && !(nonce[i] >= 'A' && nonce[i] <= 'Z') &&
		    !(nonce[i] >= '0' && nonce[i] <= '9') && nonce[i] != '_' && nonce[i] != '-')
			return 0;
	return 1;
}

enum fs_queue_status
fs_queue_pow_check(uint64_t sale, const char *sub, const char *nonce, size_t len, unsigned bits)
{
	crypto_hash_sha256_state st;
	unsigned char h[crypto_hash_sha256_BYTES];
	char head[QUEUE_MSG_MAX];
	unsigned i;
	int n;

	if (bits == 0)
		return FS_QUEUE_OK;
	if (bits > FS_QUEUE_POW_BITS_MAX || sub == NULL || !fs_token_sub_ok(sub, strlen(sub)) ||
	    !queue_nonce_ok(nonce, len))
		return FS_QUEUE_MALFORMED;
	n = snprintf(head, sizeof(head), "fsq1|%" PRIu64 "|%s|", sale, sub);
	if (n < 0 || (size_t)n >= sizeof(head))
		return FS_QUEUE_MALFORMED;
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)head, (unsigned long long)n);
	crypto_hash_sha256_update(&st, (const unsigned char *)nonce, len);
	crypto_hash_sha256_final(&st, h);
	for (i = 0; i < bits; i++)
		if (h[i / 8] & (0x80u >> (i % 8)))
			return FS_QUEUE_WEAK;
	return FS_QUEUE_OK;
}

/* The members of "queue": their ranges, in the unit the settings keep. */
static const struct {
	const char *name;
	size_t off;	/* of the int in struct fs_queue_settings */
	int min, max, dflt;
	int milli;	/* a number of any kind, kept x1000; else an integer */
} queue_members[] = {
	{ "preQueueSeconds", offsetof(struct fs_queue_settings, pre_s), 60, 86400, 900, 0 },
	{ "passSeconds", offsetof(struct fs_queue_settings, pass_s), 30, 1800, 120, 0 },
	{ "powBits", offsetof(struct fs_queue_settings, pow_bits), 0, FS_QUEUE_POW_BITS_MAX, 14,
	    0 },
	{ "admitMultiple", offsetof(struct fs_queue_settings, mult_milli), 1000, 10000, 1500, 1 },
	{ "capacityPerSecond", offsetof(struct fs_queue_settings, cap_per_s), 1, 100000, 2000,
	    0 },
	{ "claimSeconds", offsetof(struct fs_queue_settings, claim_s), 5, 120, FS_QUEUE_CLAIM_S, 0 },
};
#define QUEUE_NMEMBERS	(sizeof(queue_members) / sizeof(queue_members[0]))

static int *
queue_member(struct fs_queue_settings *s, size_t i)
{
	return (int *)(void *)((char *)s + queue_members[i].off);
}

void
fs_queue_settings_default(struct fs_queue_settings *s)
{
	size_t i;

	for (i = 0; i < QUEUE_NMEMBERS; i++)
		*queue_member(s, i) = queue_members[i].dflt;
}

/* Member i's value from v into *out; 0, or -1 on a wrong type or out of range. */
static int
queue_member_read(size_t i, const struct json_object *v, int *out)
{
	double d;
	int64_t n;

	if (queue_members[i].milli) {
		if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double))
			return -1;
		d = json_object_get_double(v) * 1000.0;
		if (!(d >= queue_members[i].min && d <= queue_members[i].max))
			return -1;
		*out = (int)(d + 0.5);
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return -1;
	errno = 0;
	n = json_object_get_int64(v);
	if (errno != 0 || n < queue_members[i].min || n > queue_members[i].max)
		return -1;
	*out = (int)n;
	return 0;
}

int
fs_queue_settings_parse(const struct json_object *queue, struct fs_queue_settings *out,
    char *err, size_t errlen)
{
	struct fs_queue_settings s;
	size_t i;

	if (!json_object_is_type(queue, json_type_object)) {
		snprintf(err, errlen, "not a JSON object");
		return -1;
	}
	fs_queue_settings_default(&s);
	json_object_object_foreach((struct json_object *)(uintptr_t)queue, key, val) {
		for (i = 0; i < QUEUE_NMEMBERS && strcmp(key, queue_members[i].name) != 0; i++)
			;
		if (i == QUEUE_NMEMBERS) {
			snprintf(err, errlen, "unknown member \"%.64s\"", key);
			return -1;
		}
		if (queue_member_read(i, val, queue_member(&s, i)) != 0) {
			if (queue_members[i].milli)
				snprintf(err, errlen, "\"%s\" must be a number from %g to %g",
				    key, queue_members[i].min / 1000.0, queue_members[i].max / 1000.0);
			else
				snprintf(err, errlen,
				    "\"%s\" must be an integer from %d to %d", key,
				    queue_members[i].min, queue_members[i].max);
			return -1;
		}
	}
	*out = s;
	return 0;
}

int
fs_queue_settings_json(const struct fs_queue_settings *s, char *out, size_t outmax)
{
	char mult[24];
	int n;

	/* admitMultiple in its shortest decimal spelling: 1, 1.5, 2.25, 1.001. */
	n = snprintf(mult, sizeof(mult), "%d.%03d", s->mult_milli / 1000, s->mult_milli % 1000);
	while (n > 0 && mult[n - 1] == '0')
		mult[--n] = '\0';
	if (n > 0 && mult[n - 1] == '.')
		mult[n - 1] = '\0';
	n = snprintf(out, outmax,
	    "{\"preQueueSeconds\":%d,\"passSeconds\":%d,\"powBits\":%d,\"admitMultiple\":%s,"
	    "\"capacityPerSecond\":%d,\"claimSeconds\":%d}",
	    s->pre_s, s->pass_s, s->pow_bits, mult, s->cap_per_s, s->claim_s);
	if (n < 0 || (size_t)n >= outmax) {
		if (outmax > 0)
			out[0] = '\0';
		return -1;
	}
	return n;
}
