/*
 * libFuzzer harness of lib/token: fs_token_verify_bearer with fixed keys,
 * at a fixed time. The first byte picks what the rest is (its value modulo
 * 8, so that seeds can start with a digit):
 *   bits 0-1: 0 or 3, an Authorization header value as a client sends it;
 *     1 or 2, "HEADER\nCLAIMS" JSON (no newline: CLAIMS only, under the
 *     algorithm's usual header) that the harness signs with the HS256 (1)
 *     or the Ed25519 (2) key, so that the claim checks past the signature
 *     get fuzzed too;
 *   bit 2: the keys also require an issuer and an audience.
 * Both key sets also hold a JWK Set of the same two keys under the kids
 * "fuzz-ed" and "fuzz-hs", and of an RSA and a P-256 key made at start
 * ("fuzz-rs", "fuzz-es"), so that a header with a kid reaches that lookup
 * and RS256, PS256 and ES256 signatures of any shape reach libcrypto.
 * A token that verifies must carry a subject the API can use as it is, and
 * minting a token for that subject must give one that verifies.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "b64url.h"
#include "token.h"

#define FUZZ_NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fs_token_keys *keys_plain;	/* no issuer, no audience */
static fs_token_keys *keys_claims;	/* iss "fuzz-issuer", aud "fuzz-audience" */
static unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES];
static unsigned char ed_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char hs_key[FS_TOKEN_HS256_KEY_MIN];
static char jwks_path[] = "/tmp/fuzz_token_jwks.XXXXXX";

static void
fuzz_remove_jwks(void)
{
	unlink(jwks_path);
}

/* The base64url of big number name of pkey, padded to pad bytes (0: not); 0 or -1. */
static int
fuzz_bn(EVP_PKEY *pkey, const char *name, int pad, char *out, size_t max)
{
	unsigned char bin[512];
	BIGNUM *bn = NULL;
	int n, rc;

	if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1)
		return -1;
	n = pad > 0 ? BN_bn2binpad(bn, bin, pad) : BN_bn2bin(bn, bin);
	rc = n > 0 && fs_b64url_encode(out, max, bin, (size_t)n, NULL) == FS_B64URL_OK ? 0 : -1;
	BN_free(bn);
	return rc;
}

/* Writes the JWK Set of the fixed keys and loads it into keys; -1 on failure. */
static int
fuzz_load_jwks(fs_token_keys *keys)
{
	char x[64], k[64], n[400], e[16], ex[64], ey[64], err[256];
	EVP_PKEY *rsa = NULL, *ec = NULL;
	FILE *f;
	int fd;

	if (jwks_path[sizeof(jwks_path) - 2] == 'X') {
		if ((fd = mkstemp(jwks_path)) == -1 || (f = fdopen(fd, "w")) == NULL ||
		    fs_b64url_encode(x, sizeof(x), ed_pk, sizeof(ed_pk), NULL) != FS_B64URL_OK ||
		    fs_b64url_encode(k, sizeof(k), hs_key, sizeof(hs_key), NULL) != FS_B64URL_OK ||
		    (rsa = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)) == NULL ||
		    (ec = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL ||
		    fuzz_bn(rsa, OSSL_PKEY_PARAM_RSA_N, 0, n, sizeof(n)) != 0 ||
		    fuzz_bn(rsa, OSSL_PKEY_PARAM_RSA_E, 0, e, sizeof(e)) != 0 ||
		    fuzz_bn(ec, OSSL_PKEY_PARAM_EC_PUB_X, 32, ex, sizeof(ex)) != 0 ||
		    fuzz_bn(ec, OSSL_PKEY_PARAM_EC_PUB_Y, 32, ey, sizeof(ey)) != 0)
			return -1;
		EVP_PKEY_free(rsa);
		EVP_PKEY_free(ec);
		fprintf(f, "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"fuzz-ed\","
		    "\"x\":\"%s\"},{\"kty\":\"oct\",\"kid\":\"fuzz-hs\",\"k\":\"%s\"},"
		    "{\"kty\":\"RSA\",\"kid\":\"fuzz-rs\",\"n\":\"%s\",\"e\":\"%s\"},"
		    "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"fuzz-es\",\"x\":\"%s\",\"y\":\"%s\"}]}\n",
		    x, k, n, e, ex, ey);
		if (fclose(f) != 0)
			return -1;
		atexit(fuzz_remove_jwks);
	}
	return fs_token_keys_load_jwks(keys, jwks_path, err, sizeof(err));
}

/* The fixed keys: an Ed25519 pair from the seed 0x01 .. 0x20, HS256 0x40 .. 0x5f. */
static void
fuzz_init(void)
{
	unsigned char seed[crypto_sign_SEEDBYTES];
	size_t i;

	for (i = 0; i < sizeof(seed); i++)
		seed[i] = (unsigned char)(i + 1);
	for (i = 0; i < sizeof(hs_key); i++)
		hs_key[i] = (unsigned char)(0x40 + i);
	if (sodium_init() < 0 || crypto_sign_seed_keypair(ed_pk, ed_sk, seed) != 0 ||
	    (keys_plain = fs_token_keys_new()) == NULL ||
	    (keys_claims = fs_token_keys_new()) == NULL ||
	    fs_token_keys_set(keys_plain, ed_pk, ed_sk, hs_key, sizeof(hs_key)) != 0 ||
	    fs_token_keys_set(keys_claims, ed_pk, ed_sk, hs_key, sizeof(hs_key)) != 0 ||
	    fs_token_keys_set_claims(keys_claims, "fuzz-issuer", "fuzz-audience") != 0 ||
	    fuzz_load_jwks(keys_plain) != 0 || fuzz_load_jwks(keys_claims) != 0)
		abort();
}

/* Appends the base64url of len bytes at out + *pos; 0, or -1 when out is full. */
static int
append_b64(char *out, size_t max, size_t *pos, const void *p, size_t len)
{
	size_t n;

	if (fs_b64url_encode(out + *pos, max - *pos, p, len, &n) != FS_B64URL_OK)
		return -1;
	*pos += n;
	return 0;
}

/* Appends one character at out + *pos, keeping the NUL; 0 or -1. */
static int
append_char(char *out, size_t max, size_t *pos, char c)
{
	if (*pos + 2 > max)
		return -1;
	out[(*pos)++] = c;
	out[*pos] = '\0';
	return 0;
}

/*
 * Writes "Bearer header.claims.signature" into out from "HEADER\nCLAIMS",
 * signed with the fixed HS256 or Ed25519 key; its length, or 0 when it
 * does not fit.
 */
static size_t
sign_token(int hs256, const uint8_t *data, size_t size, char *out, size_t max)
{
	static const char hs_header[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
	static const char ed_header[] = "{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}";
	static const char scheme[] = "Bearer ";
	unsigned char sig[crypto_sign_BYTES];
	const uint8_t *nl = memchr(data, '\n', size);
	const void *hdr = hs256 ? hs_header : ed_header;
	size_t hdrlen = strlen(hdr), pos = sizeof(scheme) - 1, input, siglen;

	if (nl != NULL) {
		hdr = data;
		hdrlen = (size_t)(nl - data);
		size -= hdrlen + 1;
		data = nl + 1;
	}
	memcpy(out, scheme, pos);
	input = pos;
	if (append_b64(out, max, &pos, hdr, hdrlen) == -1 ||
	    append_char(out, max, &pos, '.') == -1 ||
	    append_b64(out, max, &pos, data, size) == -1)
		return 0;
	if (hs256) {
		crypto_auth_hmacsha256_state st;

		crypto_auth_hmacsha256_init(&st, hs_key, sizeof(hs_key));
		crypto_auth_hmacsha256_update(&st, (const unsigned char *)out + input, pos - input);
		crypto_auth_hmacsha256_final(&st, sig);
		siglen = crypto_auth_hmacsha256_BYTES;
	} else {
		crypto_sign_detached(sig, NULL, (const unsigned char *)out + input, pos - input,
		    ed_sk);
		siglen = crypto_sign_BYTES;
	}
	if (append_char(out, max, &pos, '.') == -1 ||
	    append_b64(out, max, &pos, sig, siglen) == -1)
		return 0;
	return pos;
}

/* What fs_token_verify promises of a subject. */
static int
subject_ok(const char *sub)
{
	size_t len = strlen(sub);

	if (len == 0 || len > FS_TOKEN_SUB_MAX)
		return 0;
	for (; *sub != '\0'; sub++)
		if ((unsigned char)*sub <= ' ' || (unsigned char)*sub >= 0x7f ||
		    *sub == '"' || *sub == '\'' || *sub == '\\')
			return 0;
	return 1;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char token[2 * FS_TOKEN_MAX];
	char sub[FS_TOKEN_SUB_MAX + 1], again[FS_TOKEN_SUB_MAX + 1];
	const fs_token_keys *keys;
	enum fs_token_status st;
	const char *value;
	char *copy = NULL;
	unsigned mode;

	if (keys_plain == NULL)
		fuzz_init();
	if (size == 0)
		return 0;
	mode = data[0] % 8;
	keys = mode & 4 ? keys_claims : keys_plain;
	value = (const char *)data + 1;
	size--;
	if ((mode & 3) == 1 || (mode & 3) == 2) {
		if ((size = sign_token((mode & 3) == 1, data + 1, size, token,
		    sizeof(token))) == 0)
			return 0;
		/* An exact-size copy without the NUL: a read past the end is caught. */
		if ((copy = malloc(size)) == NULL)
			abort();
		memcpy(copy, token, size);
		value = copy;
	}
	st = fs_token_verify_bearer(keys, value, size, FUZZ_NOW, sub, sizeof(sub));
	if (fs_token_strerror(st) == NULL)
		abort();
	if (st == FS_TOKEN_OK) {
		if (!subject_ok(sub))
			abort();
		if (fs_token_mint(keys, FS_TOKEN_ALG_HS256, sub, FUZZ_NOW, 60, token,
		    sizeof(token)) != FS_TOKEN_OK ||
		    fs_token_verify(keys, token, strlen(token), FUZZ_NOW, again,
		    sizeof(again)) != FS_TOKEN_OK || strcmp(sub, again) != 0)
			abort();
	}
	free(copy);
	return 0;
}
