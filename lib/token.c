#include "config.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include "b64url.h"
#include "keyfile.h"
#include "token_int.h"

/* Headers and claims are flat; an aud array is the deepest we expect. */
#define TOKEN_JSON_DEPTH	8

struct fs_token_keys {
	unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char ed_sk[crypto_sign_SECRETKEYBYTES];
	unsigned char hs_key[FS_TOKEN_HS256_KEY_MAX];
	size_t hs_keylen;	/* 0: HS256 not configured */
	int has_ed_pk;
	int has_ed_sk;
	unsigned char demo_pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char demo_sk[crypto_sign_SECRETKEYBYTES];
	int has_demo_pk;
	int has_demo_sk;
	char *issuer;		/* NULL: not checked */
	char *audience;		/* NULL: not checked, and none accepted */
	struct fs_token_jwks *jwks;	/* NULL: no JWK Set file */
};

static const char *const token_errors[FS_TOKEN__MAX] = {
	[FS_TOKEN_OK] = "ok",
	[FS_TOKEN_MISSING] = "no bearer token",
	[FS_TOKEN_TOO_LONG] = "token too long",
	[FS_TOKEN_MALFORMED] = "malformed token",
	[FS_TOKEN_BAD_ALG] = "algorithm not accepted",
	[FS_TOKEN_BAD_SIGNATURE] = "bad signature",
	[FS_TOKEN_EXPIRED] = "token expired",
	[FS_TOKEN_NOT_YET_VALID] = "token not yet valid",
	[FS_TOKEN_BAD_ISSUER] = "wrong issuer",
	[FS_TOKEN_BAD_AUDIENCE] = "wrong audience",
	[FS_TOKEN_BAD_SUBJECT] = "bad subject",
	[FS_TOKEN_UNKNOWN_KEY] = "unknown key id",
};

/* The JWS "alg" of each algorithm (RFC 7518 3.1, RFC 8037 3.1). */
static const char *const token_alg_names[FS_TOKEN_ALG__MAX] = {
	[FS_TOKEN_ALG_EDDSA] = "EdDSA",
	[FS_TOKEN_ALG_HS256] = "HS256",
	[FS_TOKEN_ALG_EDDSA_DEMO] = "EdDSA",
	[FS_TOKEN_ALG_RS256] = "RS256",
	[FS_TOKEN_ALG_PS256] = "PS256",
	[FS_TOKEN_ALG_ES256] = "ES256",
};

/* Protected headers that fs_token_mint writes, by algorithm. */
static const char *const token_headers[FS_TOKEN_ALG__MAX] = {
	[FS_TOKEN_ALG_EDDSA] = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}",
	[FS_TOKEN_ALG_HS256] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}",
	[FS_TOKEN_ALG_EDDSA_DEMO] = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"" FS_TOKEN_DEMO_KID "\"}",
};

const char *
fs_token_alg_name(enum fs_token_alg alg)
{
	if ((unsigned)alg >= FS_TOKEN_ALG__MAX)
		return "unknown";
	return token_alg_names[alg];
}

void
fs_token_vkey_release(struct fs_token_vkey *key)
{
	EVP_PKEY_free(key->pkey);
	sodium_memzero(key, sizeof(*key));
}

const char *
fs_token_strerror(enum fs_token_status st)
{
	if ((unsigned)st >= FS_TOKEN__MAX)
		return "unknown token status";
	return token_errors[st];
}

fs_token_keys *
fs_token_keys_new(void)
{
	if (sodium_init() < 0)
		return NULL;
	return calloc(1, sizeof(fs_token_keys));
}

void
fs_token_keys_free(fs_token_keys *keys)
{
	if (keys == NULL)
		return;
	free(keys->issuer);
	free(keys->audience);
	fs_token_jwks_free(keys->jwks);
	sodium_memzero(keys, sizeof(*keys));
	free(keys);
}

/* Whether sk is a well-formed Ed25519 secret key (seed, then its pk). */
static int
token_ed25519_sk_ok(const unsigned char *sk, unsigned char *pk)
{
	unsigned char seed[crypto_sign_SEEDBYTES];
	unsigned char sk2[crypto_sign_SECRETKEYBYTES];
	int ok;

	crypto_sign_ed25519_sk_to_seed(seed, sk);
	ok = crypto_sign_seed_keypair(pk, sk2, seed) == 0 &&
	    sodium_memcmp(sk, sk2, sizeof(sk2)) == 0;
	sodium_memzero(seed, sizeof(seed));
	sodium_memzero(sk2, sizeof(sk2));
	return ok;
}

int
fs_token_keys_set(fs_token_keys *keys, const unsigned char *ed_pk,
    const unsigned char *ed_sk, const unsigned char *hs_key, size_t hs_keylen)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];

	if (ed_pk == NULL && ed_sk == NULL && hs_key == NULL)
		return -1;
	if (hs_key != NULL && (hs_keylen < FS_TOKEN_HS256_KEY_MIN ||
	    hs_keylen > FS_TOKEN_HS256_KEY_MAX))
		return -1;
	if (ed_sk != NULL && (!token_ed25519_sk_ok(ed_sk, pk) ||
	    (ed_pk != NULL && sodium_memcmp(pk, ed_pk, sizeof(pk)) != 0)))
		return -1;

	sodium_memzero(keys->ed_pk, sizeof(keys->ed_pk));
	sodium_memzero(keys->ed_sk, sizeof(keys->ed_sk));
	sodium_memzero(keys->hs_key, sizeof(keys->hs_key));
	keys->has_ed_pk = ed_pk != NULL || ed_sk != NULL;
	keys->has_ed_sk = ed_sk != NULL;
	keys->hs_keylen = hs_key != NULL ? hs_keylen : 0;
	if (ed_sk != NULL) {
		memcpy(keys->ed_sk, ed_sk, sizeof(keys->ed_sk));
		memcpy(keys->ed_pk, pk, sizeof(keys->ed_pk));
	} else if (ed_pk != NULL)
		memcpy(keys->ed_pk, ed_pk, sizeof(keys->ed_pk));
	if (hs_key != NULL)
		memcpy(keys->hs_key, hs_key, hs_keylen);
	return 0;
}

int
fs_token_keys_load_dir(fs_token_keys *keys, const char *dir, char *err,
    size_t errlen)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES];
	unsigned char sk[crypto_sign_SECRETKEYBYTES];
	unsigned char hs[FS_TOKEN_HS256_KEY_MIN];
	enum fs_keyfile_status pkst, skst, hsst;
	int rc = -1;

	if ((pkst = fs_keyfile_read(dir, FS_TOKEN_ED25519_PUB_FILE, pk,
	    sizeof(pk), err, errlen)) == FS_KEYFILE_ERROR ||
	    (skst = fs_keyfile_read(dir, FS_TOKEN_ED25519_KEY_FILE, sk,
	    sizeof(sk), err, errlen)) == FS_KEYFILE_ERROR ||
	    (hsst = fs_keyfile_read(dir, FS_TOKEN_HS256_KEY_FILE, hs,
	    sizeof(hs), err, errlen)) == FS_KEYFILE_ERROR)
		goto fail;
	if (pkst == FS_KEYFILE_ABSENT && skst == FS_KEYFILE_ABSENT &&
	    hsst == FS_KEYFILE_ABSENT) {
		/* Tokens with a kid alone are enough where a JWK Set is loaded. */
		if (keys->jwks != NULL) {
			rc = 0;
			goto fail;
		}
		snprintf(err, errlen, "%s: no JWT key (%s or %s)", dir,
		    FS_TOKEN_ED25519_PUB_FILE, FS_TOKEN_HS256_KEY_FILE);
		goto fail;
	}
	if (fs_token_keys_set(keys, pkst == FS_KEYFILE_OK ? pk : NULL,
	    skst == FS_KEYFILE_OK ? sk : NULL,
	    hsst == FS_KEYFILE_OK ? hs : NULL, sizeof(hs)) == -1) {
		snprintf(err, errlen, "%s/%s: not the secret key of %s", dir,
		    FS_TOKEN_ED25519_KEY_FILE, FS_TOKEN_ED25519_PUB_FILE);
		goto fail;
	}
	rc = 0;
fail:
	sodium_memzero(sk, sizeof(sk));
	sodium_memzero(hs, sizeof(hs));
	return rc;
}

int
fs_token_keys_load_demo(fs_token_keys *keys, const char *dir, int with_secret, char *err,
    size_t errlen)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	unsigned char derived[crypto_sign_PUBLICKEYBYTES];
	enum fs_keyfile_status st;
	int rc = -1;

	if ((st = fs_keyfile_read(dir, FS_TOKEN_DEMO_PUB_FILE, pk, sizeof(pk), err, errlen)) !=
	    FS_KEYFILE_OK) {
		if (st == FS_KEYFILE_ABSENT)
			snprintf(err, errlen, "%s/%s: no demo key (flashsale-admin keys generate %s)",
			    dir, FS_TOKEN_DEMO_PUB_FILE, dir);
		goto fail;
	}
	if (with_secret) {
		if ((st = fs_keyfile_read(dir, FS_TOKEN_DEMO_KEY_FILE, sk, sizeof(sk), err, errlen)) !=
		    FS_KEYFILE_OK) {
			if (st == FS_KEYFILE_ABSENT)
				snprintf(err, errlen, "%s/%s: no demo secret key", dir,
				    FS_TOKEN_DEMO_KEY_FILE);
			goto fail;
		}
		if (!token_ed25519_sk_ok(sk, derived) ||
		    sodium_memcmp(derived, pk, sizeof(pk)) != 0) {
			snprintf(err, errlen, "%s/%s: not the secret key of %s", dir,
			    FS_TOKEN_DEMO_KEY_FILE, FS_TOKEN_DEMO_PUB_FILE);
			goto fail;
		}
		memcpy(keys->demo_sk, sk, sizeof(sk));
		keys->has_demo_sk = 1;
	}
	memcpy(keys->demo_pk, pk, sizeof(pk));
	keys->has_demo_pk = 1;
	rc = 0;
fail:
	sodium_memzero(sk, sizeof(sk));
	return rc;
}

int
fs_token_keys_load_jwks(fs_token_keys *keys, const char *path, char *err, size_t errlen)
{
	struct fs_token_jwks *j;

	if (fs_token_jwks_open(&j, path, err, errlen) != 0)
		return -1;
	fs_token_jwks_free(keys->jwks);
	keys->jwks = j;
	return 0;
}

int
fs_token_keys_reload(const fs_token_keys *keys)
{
	return keys->jwks != NULL ? fs_token_jwks_reload(keys->jwks) : 0;
}

/* Copies s, or NULL for NULL and "" (not configured); -1 when out of memory. */
static int
token_set_string(char **dst, const char *s)
{
	char *copy = NULL;

	if (s != NULL && *s != '\0' && (copy = strdup(s)) == NULL)
		return -1;
	free(*dst);
	*dst = copy;
	return 0;
}

int
fs_token_keys_set_claims(fs_token_keys *keys, const char *issuer,
    const char *audience)
{
	if (token_set_string(&keys->issuer, issuer) == -1 ||
	    token_set_string(&keys->audience, audience) == -1)
		return -1;
	return 0;
}

/* HMAC-SHA256 with a key of any length (RFC 7518 wants at least 32). */
static void
token_hs256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
    unsigned char mac[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, msg, len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

struct json_object *
fs_token_json(const void *buf, size_t len, int depth)
{
	struct json_tokener *tok;
	struct json_object *obj;
	const char *s = buf;
	size_t end;

	/* json-c stops at a NUL; it has no place in a token's JSON. */
	if (len > INT_MAX || memchr(s, '\0', len) != NULL)
		return NULL;
	if ((tok = json_tokener_new_ex(depth)) == NULL)
		return NULL;
	json_tokener_set_flags(tok,
	    JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
	    JSON_TOKENER_VALIDATE_UTF8);
	obj = json_tokener_parse_ex(tok, s, (int)len);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (s[end] == ' ' || s[end] == '\t' ||
	    s[end] == '\r' || s[end] == '\n'))
		end++;
	if (obj != NULL && (end != len ||
	    !json_object_is_type(obj, json_type_object))) {
		json_object_put(obj);
		obj = NULL;
	}
	return obj;
}

int
fs_token_string_is(struct json_object *v, const char *s)
{
	size_t len = strlen(s);

	return json_object_is_type(v, json_type_string) &&
	    (size_t)json_object_get_string_len(v) == len &&
	    memcmp(json_object_get_string(v), s, len) == 0;
}

/* Copies a configured key into *key for alg. */
static void
token_vkey(enum fs_token_alg alg, const unsigned char *bytes, size_t len, struct fs_token_vkey *key)
{
	key->alg = alg;
	memcpy(key->key, bytes, len);
	key->len = len;
	key->pkey = NULL;
}

/*
 * Picks the key from a protected header with a kid: the demo key for "demo"
 * where it is loaded, else the JWK Set's key of that kid, which must serve
 * the header's alg.
 */
static enum fs_token_status
token_header_kid(const fs_token_keys *keys, struct json_object *alg, struct json_object *kid,
    struct fs_token_vkey *key)
{
	const char *s = json_object_get_string(kid);
	size_t len = (size_t)json_object_get_string_len(kid);

	if (fs_token_string_is(kid, FS_TOKEN_DEMO_KID) && keys->has_demo_pk) {
		if (!fs_token_string_is(alg, "EdDSA"))
			return FS_TOKEN_BAD_ALG;
		token_vkey(FS_TOKEN_ALG_EDDSA_DEMO, keys->demo_pk, sizeof(keys->demo_pk), key);
		return FS_TOKEN_OK;
	}
	if (keys->jwks == NULL || !fs_token_jwks_find(keys->jwks, s, len, key)) {
		fs_token_log_unknown_kid(s, len);
		return FS_TOKEN_UNKNOWN_KEY;
	}
	if (!fs_token_string_is(alg, fs_token_alg_name(key->alg))) {
		fs_token_vkey_release(key);
		return FS_TOKEN_BAD_ALG;
	}
	return FS_TOKEN_OK;
}

/* Picks the key from the protected header; the keys must allow its alg. */
static enum fs_token_status
token_header_key(const fs_token_keys *keys, const void *hdr, size_t len,
    struct fs_token_vkey *key)
{
	struct json_object *obj, *v, *kid;
	enum fs_token_status st = FS_TOKEN_BAD_ALG;

	if ((obj = fs_token_json(hdr, len, TOKEN_JSON_DEPTH)) == NULL)
		return FS_TOKEN_MALFORMED;
	/* We understand no extension, so a "crit" header must be refused. */
	if (!json_object_object_get_ex(obj, "alg", &v) ||
	    json_object_object_get_ex(obj, "crit", NULL))
		st = FS_TOKEN_MALFORMED;
	else if (json_object_object_get_ex(obj, "kid", &kid))
		st = json_object_is_type(kid, json_type_string) ?
		    token_header_kid(keys, v, kid, key) : FS_TOKEN_MALFORMED;
	else if (fs_token_string_is(v, "EdDSA") && keys->has_ed_pk) {
		token_vkey(FS_TOKEN_ALG_EDDSA, keys->ed_pk, sizeof(keys->ed_pk), key);
		st = FS_TOKEN_OK;
	} else if (fs_token_string_is(v, "HS256") && keys->hs_keylen > 0) {
		token_vkey(FS_TOKEN_ALG_HS256, keys->hs_key, keys->hs_keylen, key);
		st = FS_TOKEN_OK;
	}
	json_object_put(obj);
	return st;
}

/*
 * An ES256 signature, R and S of 32 bytes each (RFC 7518 3.4), as the DER
 * ECDSA-Sig-Value that EVP verifies into der (dermax bytes); its length,
 * or 0.
 */
static size_t
token_es256_der(const unsigned char *sig, unsigned char *der, size_t dermax)
{
	ECDSA_SIG *es;
	BIGNUM *r, *s;
	unsigned char *p = der;
	int len = 0;

	if ((es = ECDSA_SIG_new()) == NULL)
		return 0;
	r = BN_bin2bn(sig, 32, NULL);
	s = BN_bin2bn(sig + 32, 32, NULL);
	if (r == NULL || s == NULL || ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
	} else if ((len = i2d_ECDSA_SIG(es, NULL)) > 0 && (size_t)len <= dermax)
		len = i2d_ECDSA_SIG(es, &p);
	else
		len = 0;
	ECDSA_SIG_free(es);
	return len > 0 ? (size_t)len : 0;
}

/* Verifies an RS256, PS256 or ES256 signature of msg with key->pkey. */
static int
token_pkey_ok(const struct fs_token_vkey *key, const unsigned char *msg, size_t len,
    const unsigned char *sig, size_t siglen)
{
	/* A P-256 signature in DER: two INTEGERs of up to 33 bytes and headers. */
	unsigned char der[80];
	EVP_MD_CTX *md = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	int ok = 0;

	if (key->pkey == NULL)
		return 0;
	if (key->alg == FS_TOKEN_ALG_ES256) {
		if (siglen != 64 || (siglen = token_es256_der(sig, der, sizeof(der))) == 0)
			return 0;
		sig = der;
	} else if (siglen != (size_t)EVP_PKEY_get_size(key->pkey))
		return 0;
	if ((md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, key->pkey) != 1)
		goto out;
	/* RFC 7518 3.5: MGF1 with SHA-256, a salt as long as the hash. */
	if (key->alg == FS_TOKEN_ALG_PS256 &&
	    (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1))
		goto out;
	ok = EVP_DigestVerify(md, sig, siglen, msg, len) == 1;
out:
	EVP_MD_CTX_free(md);
	/* A refused signature leaves errors in this thread's queue. */
	ERR_clear_error();
	return ok;
}

/* Whether sig (siglen bytes) is key's signature of the len bytes at msg. */
static int
token_signature_ok(const struct fs_token_vkey *key, const unsigned char *msg, size_t len,
    const unsigned char *sig, size_t siglen)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	int ok;

	switch (key->alg) {
	case FS_TOKEN_ALG_HS256:
		token_hs256(key->key, key->len, msg, len, mac);
		ok = siglen == sizeof(mac) && sodium_memcmp(mac, sig, sizeof(mac)) == 0;
		sodium_memzero(mac, sizeof(mac));
		return ok;
	case FS_TOKEN_ALG_EDDSA:
	case FS_TOKEN_ALG_EDDSA_DEMO:
		return siglen == crypto_sign_BYTES &&
		    crypto_sign_verify_detached(sig, msg, len, key->key) == 0;
	case FS_TOKEN_ALG_RS256:
	case FS_TOKEN_ALG_PS256:
	case FS_TOKEN_ALG_ES256:
		return token_pkey_ok(key, msg, len, sig, siglen);
	default:
		return 0;
	}
}

enum fs_token_status
fs_token_jws_verify(const fs_token_keys *keys, const char *jws, size_t len,
    void *payload, size_t payloadmax, size_t *payloadlen)
{
	/* Holds the header, then the signature: any part of a token fits. */
	unsigned char buf[FS_TOKEN_MAX];
	const char *dot1, *dot2, *end;
	size_t n;
	struct fs_token_vkey key = { .pkey = NULL };
	enum fs_token_status st;
	int ok;

	*payloadlen = 0;
	if (jws == NULL || len == 0)
		return FS_TOKEN_MISSING;
	if (len > FS_TOKEN_MAX)
		return FS_TOKEN_TOO_LONG;
	end = jws + len;
	if ((dot1 = memchr(jws, '.', len)) == NULL ||
	    (dot2 = memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1))) == NULL ||
	    memchr(dot2 + 1, '.', (size_t)(end - dot2 - 1)) != NULL)
		return FS_TOKEN_MALFORMED;

	if (fs_b64url_decode(buf, sizeof(buf), jws, (size_t)(dot1 - jws),
	    &n) != FS_B64URL_OK)
		return FS_TOKEN_MALFORMED;
	if ((st = token_header_key(keys, buf, n, &key)) != FS_TOKEN_OK)
		goto fail;

	st = FS_TOKEN_MALFORMED;
	if (fs_b64url_decode(buf, sizeof(buf), dot2 + 1,
	    (size_t)(end - dot2 - 1), &n) != FS_B64URL_OK)
		goto fail;
	/* The signing input is the header and payload as sent, dot included. */
	ok = token_signature_ok(&key, (const unsigned char *)jws, (size_t)(dot2 - jws), buf, n);
	fs_token_vkey_release(&key);
	if (!ok)
		return FS_TOKEN_BAD_SIGNATURE;

	switch (fs_b64url_decode(payload, payloadmax, dot1 + 1,
	    (size_t)(dot2 - dot1 - 1), payloadlen)) {
	case FS_B64URL_OK:
		return FS_TOKEN_OK;
	case FS_B64URL_TOO_BIG:
		return FS_TOKEN_TOO_LONG;
	default:
		return FS_TOKEN_MALFORMED;
	}
fail:
	fs_token_vkey_release(&key);
	return st;
}

/*
 * Reads the NumericDate claim name into *out: 1 when present, 0 when
 * absent, -1 when not a number. Fractions are cut, huge values clamped.
 */
static int
token_date(struct json_object *claims, const char *name, int64_t *out)
{
	struct json_object *v;
	double d;

	if (!json_object_object_get_ex(claims, name, &v))
		return 0;
	switch (json_object_get_type(v)) {
	case json_type_int:
		*out = json_object_get_int64(v);
		return 1;
	case json_type_double:
		d = json_object_get_double(v);
		if (!isfinite(d))
			return -1;
		*out = d >= 9.2e18 ? INT64_MAX :
		    d <= -9.2e18 ? INT64_MIN : (int64_t)d;
		return 1;
	default:
		return -1;
	}
}

int
fs_token_name_ok(const char *s, size_t len, size_t max)
{
	size_t i;

	if (len == 0 || len > max)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= ' ' || c >= 0x7f || c == '"' || c == '\'' ||
		    c == '\\')
			return 0;
	}
	return 1;
}

int
fs_token_sub_ok(const char *sub, size_t len)
{
	return fs_token_name_ok(sub, len, FS_TOKEN_SUB_MAX);
}

/* Whether the aud claim, if any, names the configured audience. */
static int
token_audience_ok(const fs_token_keys *keys, struct json_object *claims)
{
	struct json_object *aud;
	size_t i, n;

	if (!json_object_object_get_ex(claims, "aud", &aud))
		return keys->audience == NULL;
	if (keys->audience == NULL)
		return 0;
	if (!json_object_is_type(aud, json_type_array))
		return fs_token_string_is(aud, keys->audience);
	n = json_object_array_length(aud);
	for (i = 0; i < n; i++)
		if (fs_token_string_is(json_object_array_get_idx(aud, i),
		    keys->audience))
			return 1;
	return 0;
}

/* Checks a verified claims set at time now and copies out sub. */
static enum fs_token_status
token_claims(const fs_token_keys *keys, struct json_object *claims,
    time_t now, char *sub, size_t submax)
{
	struct json_object *v;
	int64_t t, exp, nbf, iat;
	const char *s;
	size_t len;

	/* Clamping keeps the leeway arithmetic below from overflowing. */
	t = (int64_t)now;
	if (t < FS_TOKEN_LEEWAY)
		t = FS_TOKEN_LEEWAY;
	if (t > INT64_MAX - FS_TOKEN_LEEWAY)
		t = INT64_MAX - FS_TOKEN_LEEWAY;

	if (token_date(claims, "exp", &exp) != 1)
		return FS_TOKEN_MALFORMED;
	if (exp <= t - FS_TOKEN_LEEWAY)
		return FS_TOKEN_EXPIRED;
	switch (token_date(claims, "nbf", &nbf)) {
	case -1:
		return FS_TOKEN_MALFORMED;
	case 1:
		if (nbf > t + FS_TOKEN_LEEWAY)
			return FS_TOKEN_NOT_YET_VALID;
		break;
	}
	switch (token_date(claims, "iat", &iat)) {
	case -1:
		return FS_TOKEN_MALFORMED;
	case 1:
		if (iat > t + FS_TOKEN_LEEWAY)
			return FS_TOKEN_NOT_YET_VALID;
		break;
	}

	if (keys->issuer != NULL &&
	    (!json_object_object_get_ex(claims, "iss", &v) ||
	    !fs_token_string_is(v, keys->issuer)))
		return FS_TOKEN_BAD_ISSUER;
	if (!token_audience_ok(keys, claims))
		return FS_TOKEN_BAD_AUDIENCE;

	if (!json_object_object_get_ex(claims, "sub", &v) ||
	    !json_object_is_type(v, json_type_string))
		return FS_TOKEN_BAD_SUBJECT;
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (!fs_token_name_ok(s, len, FS_TOKEN_SUB_MAX) || len >= submax)
		return FS_TOKEN_BAD_SUBJECT;
	memcpy(sub, s, len);
	sub[len] = '\0';
	return FS_TOKEN_OK;
}

enum fs_token_status
fs_token_verify(const fs_token_keys *keys, const char *jwt, size_t len,
    time_t now, char *sub, size_t submax)
{
	unsigned char payload[FS_TOKEN_MAX];
	struct json_object *claims;
	enum fs_token_status st;
	size_t plen;

	if (submax > 0)
		sub[0] = '\0';
	st = fs_token_jws_verify(keys, jwt, len, payload, sizeof(payload),
	    &plen);
	if (st != FS_TOKEN_OK)
		return st;
	if ((claims = fs_token_json(payload, plen, TOKEN_JSON_DEPTH)) == NULL)
		return FS_TOKEN_MALFORMED;
	st = token_claims(keys, claims, now, sub, submax);
	json_object_put(claims);
	return st;
}

enum fs_token_status
fs_token_verify_bearer(const fs_token_keys *keys, const char *value,
    size_t len, time_t now, char *sub, size_t submax)
{
	static const char scheme[] = "bearer";
	size_t i, n = sizeof(scheme) - 1;

	if (submax > 0)
		sub[0] = '\0';
	if (value == NULL)
		return FS_TOKEN_MISSING;
	/* Whitespace around a field value is not part of it (RFC 9110 5.5). */
	while (len > 0 && (value[0] == ' ' || value[0] == '\t')) {
		value++;
		len--;
	}
	while (len > 0 && (value[len - 1] == ' ' || value[len - 1] == '\t'))
		len--;
	if (len <= n || value[n] != ' ')
		return FS_TOKEN_MISSING;
	for (i = 0; i < n; i++)
		if ((value[i] | 0x20) != scheme[i])
			return FS_TOKEN_MISSING;
	while (i < len && value[i] == ' ')
		i++;
	return fs_token_verify(keys, value + i, len - i, now, sub, submax);
}

enum fs_token_status
fs_token_mint(const fs_token_keys *keys, enum fs_token_alg alg,
    const char *sub, time_t iat, long ttl, char *out, size_t outmax)
{
	unsigned char sig[crypto_sign_BYTES];
	struct json_object *claims = NULL;
	const char *hdr, *body;
	size_t hdrlen, bodylen, siglen, need, pos, n;
	enum fs_token_status st;

	if (outmax > 0)
		out[0] = '\0';
	if ((unsigned)alg >= FS_TOKEN_ALG__MAX || token_headers[alg] == NULL ||
	    (alg == FS_TOKEN_ALG_EDDSA && !keys->has_ed_sk) ||
	    (alg == FS_TOKEN_ALG_EDDSA_DEMO && !keys->has_demo_sk) ||
	    (alg == FS_TOKEN_ALG_HS256 && keys->hs_keylen == 0))
		return FS_TOKEN_BAD_ALG;
	if (sub == NULL || !fs_token_name_ok(sub, strnlen(sub,
	    FS_TOKEN_SUB_MAX + 1), FS_TOKEN_SUB_MAX))
		return FS_TOKEN_BAD_SUBJECT;
	if (ttl <= 0 || (int64_t)iat > INT64_MAX - ttl)
		return FS_TOKEN_MALFORMED;

	st = FS_TOKEN_TOO_LONG;
	if ((claims = json_object_new_object()) == NULL ||
	    json_object_object_add(claims, "sub",
	    json_object_new_string(sub)) != 0 ||
	    json_object_object_add(claims, "iat",
	    json_object_new_int64((int64_t)iat)) != 0 ||
	    json_object_object_add(claims, "exp",
	    json_object_new_int64((int64_t)iat + ttl)) != 0 ||
	    (keys->issuer != NULL && json_object_object_add(claims, "iss",
	    json_object_new_string(keys->issuer)) != 0) ||
	    (keys->audience != NULL && json_object_object_add(claims, "aud",
	    json_object_new_string(keys->audience)) != 0) ||
	    (body = json_object_to_json_string_length(claims,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
	    &bodylen)) == NULL)
		goto fail;

	hdr = token_headers[alg];
	hdrlen = strlen(hdr);
	siglen = alg == FS_TOKEN_ALG_HS256 ? crypto_auth_hmacsha256_BYTES : crypto_sign_BYTES;
	need = FS_B64URL_ENCODED_LEN(hdrlen) + 1 +
	    FS_B64URL_ENCODED_LEN(bodylen) + 1 + FS_B64URL_ENCODED_LEN(siglen);
	if (need > FS_TOKEN_MAX || need >= outmax)
		goto fail;

	/* Every length was checked above, so the encodings cannot fail. */
	(void)fs_b64url_encode(out, outmax, hdr, hdrlen, &pos);
	out[pos++] = '.';
	(void)fs_b64url_encode(out + pos, outmax - pos, body, bodylen, &n);
	pos += n;
	if (alg == FS_TOKEN_ALG_EDDSA || alg == FS_TOKEN_ALG_EDDSA_DEMO)
		crypto_sign_detached(sig, NULL, (const unsigned char *)out, pos,
		    alg == FS_TOKEN_ALG_EDDSA_DEMO ? keys->demo_sk : keys->ed_sk);
	else
		token_hs256(keys->hs_key, keys->hs_keylen, out, pos, sig);
	out[pos++] = '.';
	(void)fs_b64url_encode(out + pos, outmax - pos, sig, siglen, NULL);
	st = FS_TOKEN_OK;
fail:
	json_object_put(claims);
	return st;
}
