/*
 * The keys of a JWK Set file (RFC 7517), selected by a token's kid: parsed
 * with json-c within fixed bounds, re-read when the file changes, swapped
 * in for every thread at once under a writer-first lock.
 */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <sodium.h>

#include "b64url.h"
#include "clock.h"
#include "lock.h"
#include "log.h"
#include "token_int.h"

/* {"keys":[{"key_ops":["verify"]}]} is as deep as a JWK Set goes. */
#define JWKS_JSON_DEPTH 5

/* The keys of one version of the file; immutable once swapped in. */
struct jwks_set {
	size_t n;
	struct jwks_key {
		char kid[FS_TOKEN_KID_MAX + 1];
		struct fs_token_vkey vkey;
	} key[FS_TOKEN_JWKS_KEYS_MAX];
};

/*
 * What tells one version of the file from another: a hash of its bytes, as
 * an edit in place can keep the inode, the size and (within a clock tick)
 * the times. Reading a file this small once a second costs microseconds.
 */
struct jwks_id {
	int readable;
	unsigned char hash[crypto_generichash_BYTES];
};

struct fs_token_jwks {
	char *path;
	pthread_rwlock_t lock;	/* guards set: readers copy a key out */
	struct jwks_set *set;
	pthread_mutex_t reload;	/* one re-reader at a time; guards seen */
	struct jwks_id seen;	/* the version last read, loaded or refused */
	int refused;		/* whether that version was refused */
	_Atomic int64_t next_check_ms;
};

/* Gives back the set's parsed keys and wipes it. */
static void
jwks_set_clear(struct jwks_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		EVP_PKEY_free(set->key[i].vkey.pkey);
	sodium_memzero(set, sizeof(*set));
}

static void
jwks_set_free(struct jwks_set *set)
{
	if (set == NULL)
		return;
	jwks_set_clear(set);
	free(set);
}

static int
jwks_id_same(const struct jwks_id *a, const struct jwks_id *b)
{
	return a->readable == b->readable && memcmp(a->hash, b->hash, sizeof(a->hash)) == 0;
}

/* The member name of obj; NULL when absent. */
static struct json_object *
jwks_member(struct json_object *obj, const char *name)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, name, &v))
		return NULL;
	return v;
}

/*
 * Whether a key says it is for verifying signatures, or says nothing: "use"
 * absent or "sig", "key_ops" absent or listing "verify" (RFC 7517 4.2, 4.3).
 */
static int
jwks_for_verify(struct json_object *jwk)
{
	struct json_object *use = jwks_member(jwk, "use"), *ops = jwks_member(jwk, "key_ops");
	size_t i, n;

	if (use != NULL && !fs_token_string_is(use, "sig"))
		return 0;
	if (ops == NULL)
		return 1;
	if (!json_object_is_type(ops, json_type_array))
		return 0;
	n = json_object_array_length(ops);
	for (i = 0; i < n; i++)
		if (fs_token_string_is(json_object_array_get_idx(ops, i), "verify"))
			return 1;
	return 0;
}

/*
 * Decodes the base64url string member name of jwk into buf (bufsize bytes):
 * *n bytes, within min to max. 0, -1 with the reason (never the value) in
 * err, or 1 when the value decodes to more than bufsize bytes (err set).
 */
static int
jwks_b64_member(struct json_object *jwk, const char *name, unsigned char *buf, size_t bufsize,
    size_t min, size_t max, size_t *n, const char *kid, char *err, size_t errlen)
{
	struct json_object *v = jwks_member(jwk, name);
	enum fs_b64url_status st;

	*n = 0;
	if (v == NULL || !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "key \"%s\": no \"%s\"", kid, name);
		return -1;
	}
	st = fs_b64url_decode(buf, bufsize, json_object_get_string(v),
	    (size_t)json_object_get_string_len(v), n);
	if (st == FS_B64URL_OK && *n >= min && *n <= max)
		return 0;
	sodium_memzero(buf, bufsize);
	if (min == max)
		snprintf(err, errlen, "key \"%s\": \"%s\" is not %zu bytes of base64url", kid, name, min);
	else
		snprintf(err, errlen, "key \"%s\": \"%s\" is not %zu to %zu bytes of base64url", kid,
		    name, min, max);
	return st == FS_B64URL_TOO_BIG ? 1 : -1;
}

/* Decodes a key's bytes (x of OKP, k of oct) into key; 0, or -1 with err. */
static int
jwks_key_bytes(struct json_object *jwk, const char *name, size_t min, size_t max,
    struct fs_token_vkey *key, const char *kid, char *err, size_t errlen)
{
	return jwks_b64_member(jwk, name, key->key, sizeof(key->key), min, max, &key->len, kid, err,
		   errlen) == 0 ? 0 : -1;
}

/* What jwks_parse_key found. */
enum jwks_verdict {
	JWKS_BAD = -1,		/* a key of ours that is malformed: the file is refused */
	JWKS_IGNORED = 0,	/* not ours: another type, curve, algorithm or use */
	JWKS_KEY = 1,		/* a key to verify with */
	JWKS_REFUSED = 2	/* ours, but refused alone (an RSA size out of bounds) */
};

/* The public key of params (an RSA or EC key, by name) into *pkey; 0 or -1. */
static int
jwks_pkey(const char *type, OSSL_PARAM *params, EVP_PKEY **pkey)
{
	EVP_PKEY_CTX *ctx = NULL, *check = NULL;
	int rc = -1;

	*pkey = NULL;
	if ((ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL)) == NULL ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
		goto fail;
	/* For EC: the point is on the curve and not the point at infinity. */
	if (strcmp(type, "EC") == 0 &&
	    ((check = EVP_PKEY_CTX_new_from_pkey(NULL, *pkey, NULL)) == NULL ||
	    EVP_PKEY_public_check(check) != 1))
		goto fail;
	rc = 0;
fail:
	EVP_PKEY_CTX_free(check);
	EVP_PKEY_CTX_free(ctx);
	if (rc != 0) {
		EVP_PKEY_free(*pkey);
		*pkey = NULL;
	}
	ERR_clear_error();
	return rc;
}

/*
 * An RSA public key from n and e (RFC 7518 6.3.1): n of FS_TOKEN_RSA_BITS_MIN
 * to _MAX bits (else refused alone), e odd and at least 3 in up to 8 bytes.
 */
static enum jwks_verdict
jwks_rsa(struct json_object *jwk, struct jwks_key *out, char *err, size_t errlen)
{
	/* One byte more than the largest modulus: a leading zero is tolerated. */
	unsigned char n[FS_TOKEN_RSA_BITS_MAX / 8 + 1], e[8];
	size_t nlen, elen;
	BIGNUM *bn_n = NULL, *bn_e = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	enum jwks_verdict v = JWKS_BAD;
	int bits, got;

	if ((got = jwks_b64_member(jwk, "n", n, sizeof(n), 1, sizeof(n), &nlen, out->kid, err,
	    errlen)) != 0) {
		if (got == 1)
			snprintf(err, errlen, "key \"%s\": an RSA key of more than %d bits", out->kid,
			    FS_TOKEN_RSA_BITS_MAX);
		return got == 1 ? JWKS_REFUSED : JWKS_BAD;
	}
	if (jwks_b64_member(jwk, "e", e, sizeof(e), 1, sizeof(e), &elen, out->kid, err, errlen) != 0)
		return JWKS_BAD;
	if ((bn_n = BN_bin2bn(n, (int)nlen, NULL)) == NULL ||
	    (bn_e = BN_bin2bn(e, (int)elen, NULL)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (!BN_is_odd(bn_e) || BN_num_bits(bn_e) < 2 || !BN_is_odd(bn_n)) {
		snprintf(err, errlen, "key \"%s\": not an RSA public key (n and e must be odd, e >= 3)",
		    out->kid);
		goto fail;
	}
	bits = BN_num_bits(bn_n);
	if (bits < FS_TOKEN_RSA_BITS_MIN || bits > FS_TOKEN_RSA_BITS_MAX) {
		snprintf(err, errlen, "key \"%s\": an RSA key of %d bits, not %d to %d", out->kid, bits,
		    FS_TOKEN_RSA_BITS_MIN, FS_TOKEN_RSA_BITS_MAX);
		v = JWKS_REFUSED;
		goto fail;
	}
	if ((bld = OSSL_PARAM_BLD_new()) == NULL ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e) != 1 ||
	    (params = OSSL_PARAM_BLD_to_param(bld)) == NULL ||
	    jwks_pkey("RSA", params, &out->vkey.pkey) != 0) {
		snprintf(err, errlen, "key \"%s\": OpenSSL refused the RSA key", out->kid);
		goto fail;
	}
	v = JWKS_KEY;
fail:
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn_n);
	BN_free(bn_e);
	return v;
}

/* A P-256 public key from x and y (RFC 7518 6.2.1), each exactly 32 bytes. */
static enum jwks_verdict
jwks_ec(struct json_object *jwk, struct jwks_key *out, char *err, size_t errlen)
{
	/* The uncompressed point: 0x04, x, y (SEC 1 2.3.3). */
	unsigned char point[1 + 2 * 32];
	char group[] = "P-256";
	size_t n;
	OSSL_PARAM params[3];

	point[0] = 0x04;
	if (jwks_b64_member(jwk, "x", point + 1, 32, 32, 32, &n, out->kid, err, errlen) != 0 ||
	    jwks_b64_member(jwk, "y", point + 33, 32, 32, 32, &n, out->kid, err, errlen) != 0)
		return JWKS_BAD;
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, group, 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point, sizeof(point));
	params[2] = OSSL_PARAM_construct_end();
	if (jwks_pkey("EC", params, &out->vkey.pkey) != 0) {
		snprintf(err, errlen, "key \"%s\": x and y are not a point of P-256", out->kid);
		return JWKS_BAD;
	}
	return JWKS_KEY;
}

/*
 * The algorithm a key of type kty serves: its own "alg" where it names one
 * we know for that type (PS256 for RSA), else the type's (RS256 for RSA).
 * 0 when the key is not ours: another type or curve, or an "alg" that is
 * not that one (RFC 7517 4.4: a key is for one algorithm).
 */
static int
jwks_key_alg(struct json_object *jwk, struct json_object *kty, enum fs_token_alg *alg)
{
	struct json_object *crv = jwks_member(jwk, "crv"), *a = jwks_member(jwk, "alg");

	if (fs_token_string_is(kty, "OKP") && fs_token_string_is(crv, "Ed25519"))
		*alg = FS_TOKEN_ALG_EDDSA;
	else if (fs_token_string_is(kty, "oct"))
		*alg = FS_TOKEN_ALG_HS256;
	else if (fs_token_string_is(kty, "RSA"))
		*alg = fs_token_string_is(a, "PS256") ? FS_TOKEN_ALG_PS256 : FS_TOKEN_ALG_RS256;
	else if (fs_token_string_is(kty, "EC") && fs_token_string_is(crv, "P-256"))
		*alg = FS_TOKEN_ALG_ES256;
	else
		return 0;
	return a == NULL || fs_token_string_is(a, fs_token_alg_name(*alg));
}

/* Reads the kid of keys[i] into out->kid; 0, or -1 with err. */
static int
jwks_kid(struct json_object *jwk, size_t i, struct jwks_key *out, char *err, size_t errlen)
{
	struct json_object *kid;
	const char *s;
	size_t len;

	if ((kid = jwks_member(jwk, "kid")) == NULL || !json_object_is_type(kid, json_type_string)) {
		snprintf(err, errlen, "keys[%zu] has no \"kid\"", i);
		return -1;
	}
	s = json_object_get_string(kid);
	len = (size_t)json_object_get_string_len(kid);
	if (!fs_token_name_ok(s, len, FS_TOKEN_KID_MAX)) {
		snprintf(err, errlen, "keys[%zu]: a kid is 1 to %d printable characters", i,
		    FS_TOKEN_KID_MAX);
		return -1;
	}
	memcpy(out->kid, s, len);
	out->kid[len] = '\0';
	if (strcmp(out->kid, FS_TOKEN_DEMO_KID) == 0) {
		snprintf(err, errlen, "key \"%s\": that kid is the demo key's", out->kid);
		return -1;
	}
	return 0;
}

/*
 * Reads one JWK into *out (its pkey, if any, is the caller's to free): a
 * key to verify with, one to ignore, one refused alone or a malformed one
 * (the reason in err for the last two).
 */
static enum jwks_verdict
jwks_parse_key(struct json_object *jwk, size_t i, struct jwks_key *out, char *err,
    size_t errlen)
{
	struct json_object *kty;

	if (!json_object_is_type(jwk, json_type_object)) {
		snprintf(err, errlen, "keys[%zu] is not an object", i);
		return JWKS_BAD;
	}
	if ((kty = jwks_member(jwk, "kty")) == NULL || !json_object_is_type(kty, json_type_string)) {
		snprintf(err, errlen, "keys[%zu] has no \"kty\"", i);
		return JWKS_BAD;
	}
	if (!jwks_key_alg(jwk, kty, &out->vkey.alg) || !jwks_for_verify(jwk))
		return JWKS_IGNORED;
	if (jwks_kid(jwk, i, out, err, errlen) != 0)
		return JWKS_BAD;
	if (out->vkey.alg == FS_TOKEN_ALG_HS256)
		return jwks_key_bytes(jwk, "k", FS_TOKEN_HS256_KEY_MIN, FS_TOKEN_HS256_KEY_MAX,
			   &out->vkey, out->kid, err, errlen) == 0 ? JWKS_KEY : JWKS_BAD;
	/* A verifier needs the public key only: a private one must not be here. */
	if (jwks_member(jwk, "d") != NULL) {
		snprintf(err, errlen, "key \"%s\": holds the private key \"d\"", out->kid);
		return JWKS_BAD;
	}
	switch (out->vkey.alg) {
	case FS_TOKEN_ALG_RS256:
	case FS_TOKEN_ALG_PS256:
		return jwks_rsa(jwk, out, err, errlen);
	case FS_TOKEN_ALG_ES256:
		return jwks_ec(jwk, out, err, errlen);
	default:
		return jwks_key_bytes(jwk, "x", crypto_sign_PUBLICKEYBYTES,
			   crypto_sign_PUBLICKEYBYTES, &out->vkey, out->kid, err, errlen) == 0 ?
		    JWKS_KEY : JWKS_BAD;
	}
}

/* Wipes a secret member's text before json-c frees it. */
static void
jwks_wipe_secrets(struct json_object *keys)
{
	size_t i, n = json_object_array_length(keys);

	for (i = 0; i < n; i++) {
		struct json_object *jwk = json_object_array_get_idx(keys, i), *v;

		if (!json_object_is_type(jwk, json_type_object))
			continue;
		if ((v = jwks_member(jwk, "k")) != NULL && json_object_is_type(v, json_type_string))
			sodium_memzero((char *)(uintptr_t)json_object_get_string(v),
			    (size_t)json_object_get_string_len(v));
		if ((v = jwks_member(jwk, "d")) != NULL && json_object_is_type(v, json_type_string))
			sodium_memzero((char *)(uintptr_t)json_object_get_string(v),
			    (size_t)json_object_get_string_len(v));
	}
}

/*
 * A copy of a key of ours with its public members only, its algorithm
 * named: what a fetched JWK Set file keeps of a provider's key. NULL when
 * out of memory.
 */
static struct json_object *
jwks_public_copy(struct json_object *jwk, enum fs_token_alg alg)
{
	static const char *const members[] = { "kty", "kid", "use", "crv", "n", "e", "x", "y" };
	struct json_object *copy, *v;
	size_t i;

	if ((copy = json_object_new_object()) == NULL)
		return NULL;
	for (i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		if ((v = jwks_member(jwk, members[i])) != NULL &&
		    json_object_object_add(copy, members[i], json_object_get(v)) != 0)
			goto fail;
	if (json_object_object_add(copy, "alg", json_object_new_string(fs_token_alg_name(alg))) != 0)
		goto fail;
	return copy;
fail:
	json_object_put(copy);
	return NULL;
}

/*
 * Parses len bytes of JSON text as a JWK Set into set (zeroed first; free
 * its keys with jwks_set_clear even on failure), logging each key refused
 * alone with where (the file or URL it came from). With kept, appends the
 * public members of each key to verify with but the secrets (oct), as
 * jwks_public_copy makes them. 0, or -1 with err.
 */
static int
jwks_parse(const char *buf, size_t len, const char *where, struct jwks_set *set,
    struct json_object *kept, char *err, size_t errlen)
{
	struct json_object *root, *keys = NULL, *jwk, *copy;
	size_t i, j, n;
	int rc = -1;

	memset(set, 0, sizeof(*set));
	if ((root = fs_token_json(buf, len, JWKS_JSON_DEPTH)) == NULL) {
		snprintf(err, errlen, "not one JSON object of at most depth %d", JWKS_JSON_DEPTH);
		goto fail;
	}
	if ((keys = jwks_member(root, "keys")) == NULL || !json_object_is_type(keys, json_type_array)) {
		snprintf(err, errlen, "no \"keys\" array");
		keys = NULL;
		goto fail;
	}
	if ((n = json_object_array_length(keys)) > FS_TOKEN_JWKS_KEYS_MAX) {
		snprintf(err, errlen, "%zu keys, more than %d", n, FS_TOKEN_JWKS_KEYS_MAX);
		goto fail;
	}
	for (i = 0; i < n; i++) {
		struct jwks_key *k = &set->key[set->n];

		jwk = json_object_array_get_idx(keys, i);
		switch (jwks_parse_key(jwk, i, k, err, errlen)) {
		case JWKS_BAD:
			goto fail;
		case JWKS_IGNORED:
			continue;
		case JWKS_REFUSED:
			fs_log_warn("JWK Set %s: a key refused, the others stay: %s", where, err);
			continue;
		case JWKS_KEY:
			break;
		}
		set->n++;
		for (j = 0; j + 1 < set->n; j++)
			if (strcmp(set->key[j].kid, k->kid) == 0) {
				snprintf(err, errlen, "kid \"%s\" is there twice", k->kid);
				goto fail;
			}
		if (kept != NULL && k->vkey.alg != FS_TOKEN_ALG_HS256 &&
		    ((copy = jwks_public_copy(jwk, k->vkey.alg)) == NULL ||
		    json_object_array_add(kept, copy) != 0)) {
			json_object_put(copy);
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (set->n == 0) {
		snprintf(err, errlen, "no key to verify with (EdDSA, HS256, RS256, PS256 or ES256)");
		goto fail;
	}
	rc = 0;
fail:
	if (keys != NULL)
		jwks_wipe_secrets(keys);
	json_object_put(root);
	return rc;
}

/*
 * Reads the file at path, at most FS_TOKEN_JWKS_FILE_MAX bytes, into a new
 * set and says which version it read in *id (not readable: a missing,
 * unreadable or oversized file). The keys are parsed only when that version
 * is not seen (NULL: none seen yet). 0 with *out set, 1 when it is seen, or
 * -1 with err set.
 */
static int
jwks_read(const char *path, const struct jwks_id *seen, struct jwks_set **out,
    struct jwks_id *id, char *err, size_t errlen)
{
	char *buf = NULL;
	struct jwks_set *set = NULL;
	struct stat sb;
	size_t len = 0;
	ssize_t n;
	int fd, rc = -1;

	memset(id, 0, sizeof(*id));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) == -1 || fstat(fd, &sb) == -1) {
		snprintf(err, errlen, "%s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "not a regular file");
		goto fail;
	}
	if ((buf = malloc(FS_TOKEN_JWKS_FILE_MAX + 1)) == NULL ||
	    (set = calloc(1, sizeof(*set))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* One byte more than allowed tells a file that grew past the limit. */
	while (len <= FS_TOKEN_JWKS_FILE_MAX &&
	    (n = read(fd, buf + len, FS_TOKEN_JWKS_FILE_MAX + 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			snprintf(err, errlen, "%s", strerror(errno));
			goto fail;
		}
		len += (size_t)n;
	}
	if (len > FS_TOKEN_JWKS_FILE_MAX) {
		snprintf(err, errlen, "larger than %d bytes", FS_TOKEN_JWKS_FILE_MAX);
		goto fail;
	}
	id->readable = 1;
	crypto_generichash(id->hash, sizeof(id->hash), (unsigned char *)buf, len, NULL, 0);
	if (seen != NULL && jwks_id_same(id, seen)) {
		rc = 1;
		goto fail;
	}
	if (jwks_parse(buf, len, path, set, NULL, err, errlen) == -1)
		goto fail;
	*out = set;
	set = NULL;
	rc = 0;
fail:
	if (fd != -1)
		close(fd);
	if (buf != NULL) {
		sodium_memzero(buf, FS_TOKEN_JWKS_FILE_MAX + 1);
		free(buf);
	}
	jwks_set_free(set);
	return rc;
}

int
fs_token_jwks_open(struct fs_token_jwks **out, const char *path, char *err, size_t errlen)
{
	struct fs_token_jwks *j;
	char why[192];

	if ((j = calloc(1, sizeof(*j))) == NULL || (j->path = strdup(path)) == NULL) {
		free(j);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (fs_lock_rw_init(&j->lock) != 0 || pthread_mutex_init(&j->reload, NULL) != 0) {
		free(j->path);
		free(j);
		snprintf(err, errlen, "cannot create a lock");
		return -1;
	}
	if (jwks_read(path, NULL, &j->set, &j->seen, why, sizeof(why)) == -1) {
		snprintf(err, errlen, "JWK Set %s: %s", path, why);
		fs_token_jwks_free(j);
		return -1;
	}
	atomic_store(&j->next_check_ms, fs_clock_mono_ms() + FS_TOKEN_JWKS_RECHECK_MS);
	*out = j;
	return 0;
}

void
fs_token_jwks_free(struct fs_token_jwks *j)
{
	if (j == NULL)
		return;
	jwks_set_free(j->set);
	pthread_rwlock_destroy(&j->lock);
	pthread_mutex_destroy(&j->reload);
	free(j->path);
	free(j);
}

/*
 * The re-read itself; the caller holds j->reload. The same bytes as last
 * time change nothing: keys stay, a refused file is not logged again.
 */
static int
jwks_reload_locked(struct fs_token_jwks *j)
{
	struct jwks_set *set = NULL, *old;
	struct jwks_id id;
	char why[192];
	int rc;

	rc = jwks_read(j->path, &j->seen, &set, &id, why, sizeof(why));
	if (rc == 1 || jwks_id_same(&id, &j->seen)) {
		jwks_set_free(set);
		return j->refused ? -1 : 0;
	}
	j->seen = id;
	j->refused = rc == -1;
	if (rc == -1) {
		fs_log_error("JWK Set %s refused, the keys before it stay: %s", j->path, why);
		return -1;
	}
	pthread_rwlock_wrlock(&j->lock);
	old = j->set;
	j->set = set;
	pthread_rwlock_unlock(&j->lock);
	fs_log_info("JWK Set %s: %zu keys loaded", j->path, set->n);
	jwks_set_free(old);
	return 0;
}

int
fs_token_jwks_reload(struct fs_token_jwks *j)
{
	int rc;

	pthread_mutex_lock(&j->reload);
	rc = jwks_reload_locked(j);
	pthread_mutex_unlock(&j->reload);
	return rc;
}

/* Re-reads the file when a check is due; only one thread does, the others go on. */
static void
jwks_recheck(struct fs_token_jwks *j)
{
	int64_t now = fs_clock_mono_ms(), due = atomic_load(&j->next_check_ms);

	if (now < due ||
	    !atomic_compare_exchange_strong(&j->next_check_ms, &due, now + FS_TOKEN_JWKS_RECHECK_MS))
		return;
	if (pthread_mutex_trylock(&j->reload) != 0)
		return;
	(void)jwks_reload_locked(j);
	pthread_mutex_unlock(&j->reload);
}

int
fs_token_jwks_find(struct fs_token_jwks *j, const char *kid, size_t kidlen,
    struct fs_token_vkey *key)
{
	size_t i;
	int found = 0;

	jwks_recheck(j);
	pthread_rwlock_rdlock(&j->lock);
	for (i = 0; i < j->set->n && !found; i++)
		if (strlen(j->set->key[i].kid) == kidlen &&
		    memcmp(j->set->key[i].kid, kid, kidlen) == 0) {
			*key = j->set->key[i].vkey;
			/* The set may be swapped out while the caller verifies. */
			if (key->pkey != NULL && EVP_PKEY_up_ref(key->pkey) != 1)
				key->pkey = NULL;
			found = 1;
		}
	pthread_rwlock_unlock(&j->lock);
	return found;
}

/*
 * The unknown-kid lines' budget: a burst of UNKNOWN_BURST, then one a
 * second (GCRA: the time the budget is next full), and how many lines were
 * left out since the last one written.
 */
#define UNKNOWN_BURST 5
#define UNKNOWN_EVERY_MS 1000
static _Atomic int64_t unknown_tat_ms;
static _Atomic unsigned long unknown_dropped;

void
fs_token_log_unknown_kid(const char *kid, size_t kidlen)
{
	int64_t now = fs_clock_mono_ms(), tat = atomic_load(&unknown_tat_ms), from;
	char shown[FS_TOKEN_KID_MAX + 1];
	size_t i, n = kidlen < FS_TOKEN_KID_MAX ? kidlen : FS_TOKEN_KID_MAX;
	unsigned long dropped;

	do {
		from = tat > now ? tat : now;
		if (from - now > (UNKNOWN_BURST - 1) * UNKNOWN_EVERY_MS) {
			atomic_fetch_add(&unknown_dropped, 1);
			return;
		}
	} while (!atomic_compare_exchange_weak(&unknown_tat_ms, &tat, from + UNKNOWN_EVERY_MS));
	/* The kid is the sender's text: show it only as safe characters. */
	for (i = 0; i < n; i++)
		shown[i] = fs_token_name_ok(kid + i, 1, 1) ? kid[i] : '?';
	shown[n] = '\0';
	dropped = atomic_exchange(&unknown_dropped, 0);
	if (dropped > 0)
		fs_log_warn("token refused: unknown kid %s%s (%lu more unknown kids not logged)",
		    shown, kidlen > n ? "..." : "", dropped);
	else
		fs_log_warn("token refused: unknown kid %s%s", shown, kidlen > n ? "..." : "");
}

int
fs_token_jwks_usable(const char *json, size_t len, const char *where, char **out, size_t *kept,
    char *err, size_t errlen)
{
	struct jwks_set *set = NULL;
	struct json_object *doc = NULL, *keys = NULL;
	const char *text;
	size_t tlen;
	int rc = -1;

	*out = NULL;
	*kept = 0;
	if ((set = calloc(1, sizeof(*set))) == NULL || (doc = json_object_new_object()) == NULL ||
	    (keys = json_object_new_array()) == NULL ||
	    json_object_object_add(doc, "keys", keys) != 0) {
		json_object_put(keys);
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (jwks_parse(json, len, where, set, keys, err, errlen) != 0)
		goto fail;
	if ((*kept = json_object_array_length(keys)) == 0) {
		snprintf(err, errlen, "no public key to verify with (a provider's secrets are never taken)");
		goto fail;
	}
	text = json_object_to_json_string_length(doc,
	    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE, &tlen);
	if (text == NULL || tlen > FS_TOKEN_JWKS_FILE_MAX - 1) {
		snprintf(err, errlen, "the kept keys are more than %d bytes", FS_TOKEN_JWKS_FILE_MAX);
		goto fail;
	}
	/* What is written must load as it will be read: parse it again. */
	jwks_set_clear(set);
	if (jwks_parse(text, tlen, where, set, NULL, err, errlen) != 0)
		goto fail;
	if ((*out = malloc(tlen + 2)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	memcpy(*out, text, tlen);
	memcpy(*out + tlen, "\n", 2);
	rc = 0;
fail:
	if (rc != 0)
		*kept = 0;
	if (set != NULL)
		jwks_set_free(set);
	json_object_put(doc);
	return rc;
}
