/*
 * Shopper tokens: JWTs (RFC 7519) in JWS compact form, signed with EdDSA
 * (Ed25519, RFC 8037) or HS256, verified with libsodium, or with RS256,
 * PS256 or ES256 (RFC 7518 3.3-3.5), verified with OpenSSL's libcrypto.
 * The configured keys decide which algorithm a token may use; "none" and
 * every other algorithm are refused.
 */
#ifndef FS_TOKEN_H
#define FS_TOKEN_H

#include <stddef.h>
#include <time.h>

#define FS_TOKEN_MAX		4096	/* bytes in a whole token */
#define FS_TOKEN_SUB_MAX	64	/* bytes in `sub`, without the NUL */
#define FS_TOKEN_LEEWAY		30	/* seconds of clock skew tolerated */
#define FS_TOKEN_HS256_KEY_MIN	32	/* RFC 7518 3.2: at least the hash size */
#define FS_TOKEN_HS256_KEY_MAX	64	/* the HMAC-SHA256 block size */

/* Key files in the keys directory; all raw bytes. */
#define FS_TOKEN_ED25519_PUB_FILE	"jwt-ed25519.pub"	/* 32 bytes */
#define FS_TOKEN_ED25519_KEY_FILE	"jwt-ed25519.key"	/* 64, libsodium sk */
#define FS_TOKEN_HS256_KEY_FILE		"jwt-hs256.key"		/* 32 bytes */
/*
 * The demo sign-in's own Ed25519 pair: its tokens say "kid":"demo" and are
 * verified with this key only, and only where it is loaded (the demo flag
 * is on), so turning the flag off ends every demo token.
 */
#define FS_TOKEN_DEMO_PUB_FILE		"demo-ed25519.pub"	/* 32 bytes */
#define FS_TOKEN_DEMO_KEY_FILE		"demo-ed25519.key"	/* 64, libsodium sk */
#define FS_TOKEN_DEMO_KID		"demo"

/*
 * A JWK Set file (RFC 7517) holds the keys of tokens that carry a key id
 * (`kid`), as an identity provider publishes them: Ed25519 public keys
 * (kty OKP, crv Ed25519) for EdDSA, secrets (kty oct) for HS256, RSA public
 * keys (kty RSA, n and e) for RS256 (or PS256 where the key says "alg":
 * "PS256") and P-256 public keys (kty EC, crv P-256, x and y) for ES256,
 * several at once so that a rotation never refuses a valid token. Each key
 * serves one algorithm, its own. Keys of other types, curves, algorithms or
 * uses are ignored (RFC 7517 5); an RSA key of fewer than
 * FS_TOKEN_RSA_BITS_MIN or more than FS_TOKEN_RSA_BITS_MAX bits is refused
 * with a log line while the file's other keys load; a key of ours that is
 * malformed, holds a private member or repeats a kid refuses the whole
 * file. "demo" is reserved for the demo key.
 */
#define FS_TOKEN_JWKS_FILE_MAX	65536	/* bytes in a JWK Set file */
#define FS_TOKEN_JWKS_KEYS_MAX	32	/* keys in it, ignored ones included */
#define FS_TOKEN_KID_MAX	64	/* bytes in a `kid` */
#define FS_TOKEN_JWKS_RECHECK_MS 1000	/* how often verification looks at the file */
#define FS_TOKEN_RSA_BITS_MIN	2048	/* RFC 7518 3.3: 2048 bits or more */
#define FS_TOKEN_RSA_BITS_MAX	8192	/* a bound on the cost of one verification */

/* Keys and expected claims; the keys are wiped when freed. */
typedef struct fs_token_keys fs_token_keys;

enum fs_token_alg {
	FS_TOKEN_ALG_EDDSA,
	FS_TOKEN_ALG_HS256,
	FS_TOKEN_ALG_EDDSA_DEMO,	/* EdDSA under the demo key, "kid":"demo" */
	FS_TOKEN_ALG_RS256,	/* RSA PKCS#1 v1.5 with SHA-256; JWK Set keys only */
	FS_TOKEN_ALG_PS256,	/* RSA-PSS with SHA-256; JWK Set keys only */
	FS_TOKEN_ALG_ES256,	/* ECDSA P-256 with SHA-256; JWK Set keys only */
	FS_TOKEN_ALG__MAX
};

enum fs_token_status {
	FS_TOKEN_OK = 0,
	FS_TOKEN_MISSING,	/* no token, or no "Bearer" credentials */
	FS_TOKEN_TOO_LONG,	/* over FS_TOKEN_MAX, or an output buffer too small */
	FS_TOKEN_MALFORMED,	/* bad structure, base64url or JSON; exp missing */
	FS_TOKEN_BAD_ALG,	/* none, unknown, or no key configured for it */
	FS_TOKEN_BAD_SIGNATURE,
	FS_TOKEN_EXPIRED,
	FS_TOKEN_NOT_YET_VALID,	/* nbf or iat in the future */
	FS_TOKEN_BAD_ISSUER,
	FS_TOKEN_BAD_AUDIENCE,
	FS_TOKEN_BAD_SUBJECT,	/* sub missing, empty, too long, bad characters */
	FS_TOKEN_UNKNOWN_KEY,	/* a kid that no loaded key has */
	FS_TOKEN__MAX
};

const char *fs_token_strerror(enum fs_token_status);

/* Returns keys with nothing configured, or NULL when out of memory. */
fs_token_keys *fs_token_keys_new(void);
void fs_token_keys_free(fs_token_keys *);

/*
 * Loads the key files from dir. Each is optional, but a file that exists
 * must have the exact size, the secret key must match the public key, and
 * at least one verification key must be there (or a JWK Set loaded before). Returns 0, or -1 with the
 * reason in err (errlen bytes).
 */
int fs_token_keys_load_dir(fs_token_keys *, const char *dir, char *err,
    size_t errlen) __attribute__((warn_unused_result));

/*
 * Replaces the keys; NULL leaves that key unconfigured. ed_pk is 32 bytes,
 * ed_sk is 64 (a libsodium secret key; it alone also gives the public key),
 * hs_key is FS_TOKEN_HS256_KEY_MIN to _MAX bytes. Returns -1, changing
 * nothing, when no verification key results, a length is out of range or
 * ed_sk does not match ed_pk.
 */
int fs_token_keys_set(fs_token_keys *, const unsigned char *ed_pk,
    const unsigned char *ed_sk, const unsigned char *hs_key, size_t hs_keylen)
    __attribute__((warn_unused_result));

/*
 * Loads the demo pair from dir: the public key, and with_secret the secret
 * key too (the demo sign-in mints). The keys' other keys stay. Returns 0,
 * or -1 with the reason in err.
 */
int fs_token_keys_load_demo(fs_token_keys *, const char *dir, int with_secret, char *err,
    size_t errlen) __attribute__((warn_unused_result));

/*
 * Verifies tokens that carry a kid other than the demo key's with the keys
 * of the JWK Set file at path, loaded now. Verification then re-reads the
 * file when its inode, size or times change, looking at most once every
 * FS_TOKEN_JWKS_RECHECK_MS, and swaps the new keys in for every thread at
 * once; a new file that is refused keeps the keys before it and logs one
 * line. A token whose kid no key has is FS_TOKEN_UNKNOWN_KEY, logged in one
 * line naming the kid (a burst of 5 such lines, then one a second per
 * process). Call
 * before the keys are shared. Returns 0, or -1 with the reason in err
 * (never a key) and nothing changed.
 */
int fs_token_keys_load_jwks(fs_token_keys *, const char *path, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * A JWK Set file made from an identity provider's JWK Set (len bytes at
 * json, fetched from its jwks_uri, where naming it in log lines): the keys
 * tokens can be verified with, by the rules above, each with its public
 * members and its algorithm only; secrets (kty oct) are never taken from a
 * provider. 0 with the file's text in *out (NUL-terminated, the caller
 * frees it) and the number of keys in *kept (at least one), or -1 with the
 * reason in err: not a JWK Set, a key of ours malformed, no key to use.
 */
int fs_token_jwks_usable(const char *json, size_t len, const char *where, char **out,
    size_t *kept, char *err, size_t errlen) __attribute__((warn_unused_result));

/*
 * Re-reads the JWK Set file now if it changed, as verification does by
 * itself at most once a second (a SIGHUP handler or a test may want it at
 * once). 0 when the keys are the file's, -1 when it was refused (the keys
 * before it stay). Safe against concurrent verification.
 */
int fs_token_keys_reload(const fs_token_keys *);

/*
 * Sets the required `iss` and `aud`; NULL or "" means not checked. When no
 * audience is configured, a token that names one is refused (RFC 7519
 * 4.1.3). Returns 0, or -1 when out of memory.
 */
int fs_token_keys_set_claims(fs_token_keys *, const char *issuer,
    const char *audience) __attribute__((warn_unused_result));

/*
 * Verifies the len bytes at jwt (no NUL needed, never read past len) at
 * time now: signature, then exp (required), nbf, iat, iss, aud and sub.
 * On FS_TOKEN_OK, sub (submax bytes, at least FS_TOKEN_SUB_MAX + 1) holds
 * the subject: 1 to 64 printable ASCII characters without space, quotes or
 * backslash, safe as a Redis field and inside JSON strings.
 */
enum fs_token_status fs_token_verify(const fs_token_keys *, const char *jwt,
    size_t len, time_t now, char *sub, size_t submax)
    __attribute__((warn_unused_result));

/*
 * Same, from an Authorization header value: "Bearer" (any case), spaces,
 * the token. Anything else is FS_TOKEN_MISSING.
 */
enum fs_token_status fs_token_verify_bearer(const fs_token_keys *,
    const char *value, size_t len, time_t now, char *sub, size_t submax)
    __attribute__((warn_unused_result));

/*
 * The signature layer of fs_token_verify, exposed for tests against the
 * RFC examples: checks the header's alg and the signature of a JWS compact
 * serialization and decodes its payload (not necessarily a claims set) into
 * payload (payloadmax bytes, not NUL-terminated).
 */
enum fs_token_status fs_token_jws_verify(const fs_token_keys *,
    const char *jws, size_t len, void *payload, size_t payloadmax,
    size_t *payloadlen) __attribute__((warn_unused_result));

/*
 * Whether the len bytes at sub are a subject fs_token_verify accepts, for
 * the modules that carry a verified subject in their own signed formats.
 */
int fs_token_sub_ok(const char *sub, size_t len);

/* The JWS "alg" name of an algorithm ("EdDSA", "RS256", ...). */
const char *fs_token_alg_name(enum fs_token_alg);

/*
 * Mints a token for sub issued at iat and valid for ttl seconds (> 0),
 * with iss and aud when configured, into out (outmax bytes, NUL included).
 * EdDSA, HS256 and the demo key only: the RSA and EC keys are a provider's.
 * Returns FS_TOKEN_BAD_ALG without the signing key, FS_TOKEN_BAD_SUBJECT
 * for a sub that verification would refuse, FS_TOKEN_MALFORMED for a bad
 * ttl, FS_TOKEN_TOO_LONG when out is too small.
 */
enum fs_token_status fs_token_mint(const fs_token_keys *, enum fs_token_alg,
    const char *sub, time_t iat, long ttl, char *out, size_t outmax)
    __attribute__((warn_unused_result));

#endif
