/*
 * What the token family shares behind token.h: token.c verifies and mints
 * JWTs, token_jwks.c keeps the keys of a JWK Set file. Not for other modules.
 */
#ifndef FS_TOKEN_INT_H
#define FS_TOKEN_INT_H

#include <stddef.h>

#include <json-c/json.h>
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

/*
 * Whether len bytes at s are 1 to max printable ASCII characters without
 * space, quotes or backslash: safe in a log line, a Redis field or JSON.
 */
int fs_token_name_ok(const char *s, size_t len, size_t max);

/*
 * Parses len bytes as one JSON object of at most depth levels with nothing
 * but whitespace after it; NULL otherwise. The caller frees it with
 * json_object_put.
 */
struct json_object *fs_token_json(const void *buf, size_t len, int depth);

/* Whether v is a JSON string equal to s, embedded NULs included. */
int fs_token_string_is(struct json_object *v, const char *s);

#endif
