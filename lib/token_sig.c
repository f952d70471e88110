/*
 * The token family's algorithms (behind lib/token.h): their JWS names, the
 * checks of names (kids, subjects), and the signature checks: HS256 and
 * EdDSA with libsodium, RS256, PS256 and ES256 with OpenSSL's libcrypto.
 * token.c and token_jwks.c use it; it uses neither.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <sodium.h>

#include "token_int.h"

/* The JWS "alg" of each algorithm (RFC 7518 3.1, RFC 8037 3.1). */
static const char *const token_alg_names[FS_TOKEN_ALG__MAX] = {
	[FS_TOKEN_ALG_EDDSA] = "EdDSA",
	[FS_TOKEN_ALG_HS256] = "HS256",
	[FS_TOKEN_ALG_EDDSA_DEMO] = "EdDSA",
	[FS_TOKEN_ALG_RS256] = "RS256",
	[FS_TOKEN_ALG_PS256] = "PS256",
	[FS_TOKEN_ALG_ES256] = "ES256",
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

void
fs_token_hs256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
    unsigned char mac[crypto_auth_hmacsha256_BYTES])
{
	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, msg, len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
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

int
fs_token_signature_ok(const struct fs_token_vkey *key, const unsigned char *msg, size_t len,
    const unsigned char *sig, size_t siglen)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	int ok;

	switch (key->alg) {
	case FS_TOKEN_ALG_HS256:
		fs_token_hs256(key->key, key->len, msg, len, mac);
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
