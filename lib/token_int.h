/*
 * What the token family shares behind token.h: token.c verifies and mints
 * JWTs, token_jwks.c keeps the keys of a JWK Set file, token_sig.c knows
 * the algorithms. Calls go one way: token.c to the other two, token_jwks.c
 * to token_sig.c. Not for other modules.
 */
#ifndef FS_TOKEN_INT_H
#define FS_TOKEN_INT_H

#include <stddef.h>

#include <openssl/evp.h>

#include "token.h"

/*
 * One verification key: the algorithm it serves and its bytes (EdDSA: a
 * 32-byte public key; HS256: the secret), or for RS256, PS256 and ES256 the
 * key parsed once when the JWK Set was read. A copy handed out holds a
 * reference of pkey, given back with fs_token_vkey_release.
 */
struct fs_token_vkey {
	enum fs_token_alg alg;
	unsigned char key[FS_TOKEN_HS256_KEY_MAX];
	size_t len;
	EVP_PKEY *pkey;		/* NULL but for RS256, PS256 and ES256 */
};

/* Wipes a key copy and gives back its reference of pkey. */
void fs_token_vkey_release(struct fs_token_vkey *);

/* The keys of one JWK Set file and what is needed to re-read it. */
struct fs_token_jwks;

/* Loads the file at path; 0, or -1 with err set (never a key). */
int fs_token_jwks_open(struct fs_token_jwks **, const char *path, char *err, size_t errlen);
void fs_token_jwks_free(struct fs_token_jwks *);

/* Re-reads the file if it changed; 0, or -1 when the new file was refused. */
int fs_token_jwks_reload(struct fs_token_jwks *);

/*
 * Copies the key of this kid (kidlen bytes) into *key, first re-reading the
 * file when it is due. 1 when found (release *key after use), 0 when no
 * key has that kid.
 */
int fs_token_jwks_find(struct fs_token_jwks *, const char *kid, size_t kidlen,
    struct fs_token_vkey *key);

/*
 * Logs one line naming a kid that no key has, at most 5 at once and then
 * one a second per process (the next line counts the ones left out); never
 * the token.
 */
void fs_token_log_unknown_kid(const char *kid, size_t kidlen);

/* token_sig.c: the algorithms, used by token.c and token_jwks.c. */

/*
 * Whether len bytes at s are 1 to max printable ASCII characters without
 * space, quotes or backslash: safe in a log line, a Redis field or JSON.
 */
int fs_token_name_ok(const char *s, size_t len, size_t max);

/* HMAC-SHA256 of msg with a key of any length (RFC 7518 wants at least 32). */
void fs_token_hs256(const unsigned char *key, size_t keylen, const void *msg, size_t len,
    unsigned char mac[32]);

/* Whether sig (siglen bytes) is key's signature of the len bytes at msg, by key->alg. */
int fs_token_signature_ok(const struct fs_token_vkey *key, const unsigned char *msg, size_t len,
    const unsigned char *sig, size_t siglen);

#endif
