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

static void
jwks_set_free(struct jwks_set *set)
{
	if (set == NULL)
		return;
	sodium_memzero(set, sizeof(*set));
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
 * Decodes the base64url string member name of jwk into key: exactly min to
 * max bytes. 0, or -1 with the reason (never the value) in err.
 */
static int
jwks_key_bytes(struct json_object *jwk, const char *name, size_t min, size_t max,
    struct fs_token_vkey *key, const char *kid, char *err, size_t errlen)
{
	struct json_object *v = jwks_member(jwk, name);
	size_t n = 0;

	if (v == NULL || !json_object_is_type(v, json_type_string)) {
		snprintf(err, errlen, "key \"%s\": no \"%s\"", kid, name);
		return -1;
	}
	if (fs_b64url_decode(key->key, sizeof(key->key), json_object_get_string(v),
		(size_t)json_object_get_string_len(v), &n) != FS_B64URL_OK ||
	    n < min || n > max) {
		sodium_memzero(key->key, sizeof(key->key));
		if (min == max)
			snprintf(err, errlen, "key \"%s\": \"%s\" is not %zu bytes of base64url",
			    kid, name, min);
		else
			snprintf(err, errlen, "key \"%s\": \"%s\" is not %zu to %zu bytes of base64url",
			    kid, name, min, max);
		return -1;
	}
	key->len = n;
	return 0;
}

/*
 * Reads one JWK into *out. 1 when it is a key of ours, 0 when it is to be
 * ignored (another type, curve, algorithm or use), -1 when it is a key of
 * ours that is wrong, with the reason in err.
 */
static int
jwks_parse_key(struct json_object *jwk, size_t i, struct jwks_key *out, char *err,
    size_t errlen)
{
	struct json_object *kty, *kid, *alg, *crv;
	const char *s;
	size_t len;

	if (!json_object_is_type(jwk, json_type_object)) {
		snprintf(err, errlen, "keys[%zu] is not an object", i);
		return -1;
	}
	if ((kty = jwks_member(jwk, "kty")) == NULL || !json_object_is_type(kty, json_type_string)) {
		snprintf(err, errlen, "keys[%zu] has no \"kty\"", i);
		return -1;
	}
	alg = jwks_member(jwk, "alg");
	crv = jwks_member(jwk, "crv");
	if (fs_token_string_is(kty, "OKP") && fs_token_string_is(crv, "Ed25519"))
		out->vkey.alg = FS_TOKEN_ALG_EDDSA;
	else if (fs_token_string_is(kty, "oct"))
		out->vkey.alg = FS_TOKEN_ALG_HS256;
	else
		return 0;
	if (!jwks_for_verify(jwk) || (alg != NULL && !fs_token_string_is(alg,
	    out->vkey.alg == FS_TOKEN_ALG_EDDSA ? "EdDSA" : "HS256")))
		return 0;

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
	if (out->vkey.alg == FS_TOKEN_ALG_HS256)
		return jwks_key_bytes(jwk, "k", FS_TOKEN_HS256_KEY_MIN, FS_TOKEN_HS256_KEY_MAX,
			   &out->vkey, out->kid, err, errlen) == 0 ? 1 : -1;
	/* A verifier needs the public key only: a private one must not be here. */
	if (jwks_member(jwk, "d") != NULL) {
		snprintf(err, errlen, "key \"%s\": holds the private key \"d\"", out->kid);
		return -1;
	}
	return jwks_key_bytes(jwk, "x", crypto_sign_PUBLICKEYBYTES, crypto_sign_PUBLICKEYBYTES,
		   &out->vkey, out->kid, err, errlen) == 0 ? 1 : -1;
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

/* Parses len bytes of JSON text as a JWK Set into set; 0, or -1 with err. */
static int
jwks_parse(const char *buf, size_t len, struct jwks_set *set, char *err, size_t errlen)
{
	struct json_object *root, *keys;
	size_t i, j, n;
	int rc = -1, got;

	if ((root = fs_token_json(buf, len, JWKS_JSON_DEPTH)) == NULL) {
		snprintf(err, errlen, "not one JSON object of at most depth %d", JWKS_JSON_DEPTH);
		goto fail;
	}
	if ((keys = jwks_member(root, "keys")) == NULL || !json_object_is_type(keys, json_type_array)) {
		snprintf(err, errlen, "no \"keys\" array");
		goto fail;
	}
	if ((n = json_object_array_length(keys)) > FS_TOKEN_JWKS_KEYS_MAX) {
		snprintf(err, errlen, "%zu keys, more than %d", n, FS_TOKEN_JWKS_KEYS_MAX);
		goto wipe;
	}
	memset(set, 0, sizeof(*set));
	for (i = 0; i < n; i++) {
		struct jwks_key *k = &set->key[set->n];

		if ((got = jwks_parse_key(json_object_array_get_idx(keys, i), i, k, err,
		    errlen)) == -1)
			goto wipe;
		if (got == 0)
			continue;
		for (j = 0; j < set->n; j++)
			if (strcmp(set->key[j].kid, k->kid) == 0) {
				snprintf(err, errlen, "kid \"%s\" is there twice", k->kid);
				goto wipe;
			}
		set->n++;
	}
	if (set->n == 0) {
		snprintf(err, errlen, "no Ed25519 (OKP) or HS256 (oct) signature key");
		goto wipe;
	}
	rc = 0;
wipe:
	jwks_wipe_secrets(keys);
fail:
	json_object_put(root);
	return rc;
}

/*
 * Reads the file at path, at most FS_TOKEN_JWKS_FILE_MAX bytes, into a new
 * set and says which version it read in *id (not readable: a missing,
 * unreadable or oversized file). 0, or -1 with err set.
 */
static int
jwks_read(const char *path, struct jwks_set **out, struct jwks_id *id, char *err, size_t errlen)
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
	    (set = malloc(sizeof(*set))) == NULL) {
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
	if (jwks_parse(buf, len, set, err, errlen) == -1)
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
	if (jwks_read(path, &j->set, &j->seen, why, sizeof(why)) == -1) {
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

	rc = jwks_read(j->path, &set, &id, why, sizeof(why));
	if (jwks_id_same(&id, &j->seen)) {
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
