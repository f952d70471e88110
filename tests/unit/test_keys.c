/*
 * Unit test of lib/keys: the keys a program loads as the configuration
 * names them, from real key files in a directory of the test's own: what
 * each file gives (checked by verifying tokens and URLs signed here with
 * the other half of each key), the claims from the configuration, the JWK
 * Set file, the demo keys only while the demo sign-in is on, and each way
 * a directory can be wrong (no key, a missing URL key, a file of the wrong
 * size, a directory where a key file should be, a secret key of another
 * pair, a JWK Set file missing or malformed). The key files' mode is not
 * checked by lib/keyfile (the keys directory is), so no case here; the
 * order keys' file is a secret file of its own, whose mode is checked.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "b64url.h"
#include "keys.h"
#include "log.h"
#include "expect.h"

static char dir[] = "/tmp/flashsale-test-keys.XXXXXX";
static char jwks_path[600];

/* The key pairs the test signs with; their public halves go into files. */
static unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES], ed_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char other_pk[crypto_sign_PUBLICKEYBYTES], other_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char demo_pk[crypto_sign_PUBLICKEYBYTES], demo_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char jwk_pk[crypto_sign_PUBLICKEYBYTES], jwk_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char hs[32], url_raw[FS_URLSIG_KEYBYTES];

/* Writes len bytes into dir/name (mode 0600), replacing what was there. */
static void
put(const char *name, const void *bytes, size_t len)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    write(fd, bytes, len) != (ssize_t)len || close(fd) != 0) {
		perror(path);
		exit(99);
	}
}

static void
drop(const char *name)
{
	char path[600];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) != 0 && rmdir(path) != 0) {
		perror(path);
		exit(99);
	}
}

/* The configuration of a program run with these variables (NULL: unset). */
static struct fs_cfg *
cfg_with(const char *keys_dir, const char *jwks, const char *demo, const char *iss,
    const char *aud)
{
	static struct fs_cfg cfg;
	const char *names[] = { "FLASHSALE_KEYS_DIR", "FLASHSALE_JWKS_FILE",
		"FLASHSALE_DEMO_SIGNIN", "FLASHSALE_JWT_ISSUER", "FLASHSALE_JWT_AUDIENCE" };
	const char *values[] = { keys_dir, jwks, demo, iss, aud };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (values[i] == NULL)
			unsetenv(names[i]);
		else
			setenv(names[i], values[i], 1);
	if (fs_cfg_load(&cfg, 0) != 0) {
		fprintf(stderr, "configuration: %s\n", cfg.errstr);
		exit(99);
	}
	return &cfg;
}

/* Mints with a signer of the test's own: Ed25519 secret key sk, or the HS256 key. */
static const char *
mint(const unsigned char *sk, const char *iss, const char *aud, enum fs_token_alg alg)
{
	static char tok[1024];
	fs_token_keys *signer = fs_token_keys_new();
	int ok;

	ok = signer != NULL &&
	    fs_token_keys_set(signer, NULL, sk, sk == NULL ? hs : NULL, sizeof(hs)) == 0 &&
	    fs_token_keys_set_claims(signer, iss, aud) == 0 &&
	    fs_token_mint(signer, alg, "kim", time(NULL), 60, tok, sizeof(tok)) == FS_TOKEN_OK;
	fs_token_keys_free(signer);
	if (!ok)
		exit(99);
	return tok;
}

/* A token whose header names kid, signed with sk by libsodium directly. */
static const char *
mint_kid(const unsigned char *sk, const char *kid)
{
	static char tok[1024];
	char header[128], claims[128];
	unsigned char sig[crypto_sign_BYTES];
	size_t used;

	snprintf(header, sizeof(header), "{\"alg\":\"EdDSA\",\"typ\":\"JWT\",\"kid\":\"%s\"}", kid);
	snprintf(claims, sizeof(claims), "{\"sub\":\"kim\",\"exp\":%lld}",
	    (long long)time(NULL) + 60);
	if (fs_b64url_encode(tok, sizeof(tok), header, strlen(header), NULL) != FS_B64URL_OK)
		exit(99);
	strcat(tok, ".");
	used = strlen(tok);
	if (fs_b64url_encode(tok + used, sizeof(tok) - used, claims, strlen(claims), NULL) !=
	    FS_B64URL_OK)
		exit(99);
	crypto_sign_detached(sig, NULL, (const unsigned char *)tok, strlen(tok), sk);
	strcat(tok, ".");
	used = strlen(tok);
	if (fs_b64url_encode(tok + used, sizeof(tok) - used, sig, sizeof(sig), NULL) !=
	    FS_B64URL_OK)
		exit(99);
	return tok;
}

static enum fs_token_status
verify(const fs_token_keys *keys, const char *tok)
{
	char sub[FS_TOKEN_SUB_MAX + 1];

	return fs_token_verify(keys, tok, strlen(tok), time(NULL), sub, sizeof(sub));
}

/* True when the loaded URL key checks a URL signed with the test's url_raw. */
static int
url_key_is_ours(const fs_urlsig_key *loaded)
{
	fs_urlsig_key *ours = fs_urlsig_key_new();
	char query[FS_URLSIG_SIGNED_MAX];
	time_t now = time(NULL);
	uint64_t sale = 0;
	int ok, queue;

	if (ours == NULL)
		exit(99);
	fs_urlsig_key_set(ours, url_raw);
	ok = fs_urlsig_sign(ours, 11, 7, now - 10, now + 60, 0, query, sizeof(query)) == 0 &&
	    fs_urlsig_check(loaded, 11, query, strlen(query), now, &sale, NULL, &queue) ==
		FS_URLSIG_OK &&
	    sale == 7;
	fs_urlsig_key_free(ours);
	return ok;
}

/*
 * Loads with both outputs wanted; returns fs_keys_load's result and leaves
 * err set. The outputs start as a marker: a failure must leave them alone.
 */
static int
load(const struct fs_cfg *cfg, fs_token_keys **t, fs_urlsig_key **u, char *err, size_t errlen)
{
	static char marker;
	int rc;

	*t = (fs_token_keys *)&marker;
	*u = (fs_urlsig_key *)&marker;
	err[0] = '\0';
	rc = fs_keys_load(cfg, t, u, err, errlen);
	if (rc != 0 && (*t != (fs_token_keys *)&marker || *u != (fs_urlsig_key *)&marker)) {
		fprintf(stderr, "a refused load changed the outputs\n");
		exit(1);
	}
	if (rc != 0)
		*t = NULL, *u = NULL;
	return rc;
}

/* The directory's keys: the Ed25519 pair, the HS256 key, the URL key and the claims. */
static void
test_directory(void)
{
	fs_token_keys *t;
	fs_urlsig_key *u;
	char err[512];

	put("jwt-ed25519.pub", ed_pk, sizeof(ed_pk));
	put("url.key", url_raw, sizeof(url_raw));
	check(load(cfg_with(dir, NULL, NULL, "shop", "api"), &t, &u, err, sizeof(err)) == 0,
	    "the public key and the URL key: loaded");
	check(t != NULL && verify(t, mint(ed_sk, "shop", "api", FS_TOKEN_ALG_EDDSA)) == FS_TOKEN_OK,
	    "a token signed with the file's pair verifies");
	check(t != NULL &&
		verify(t, mint(other_sk, "shop", "api", FS_TOKEN_ALG_EDDSA)) ==
		    FS_TOKEN_BAD_SIGNATURE,
	    "a token of another pair does not");
	check(t != NULL &&
		verify(t, mint(ed_sk, "elsewhere", "api", FS_TOKEN_ALG_EDDSA)) ==
		    FS_TOKEN_BAD_ISSUER,
	    "FLASHSALE_JWT_ISSUER is required of tokens");
	check(t != NULL &&
		verify(t, mint(ed_sk, "shop", "other", FS_TOKEN_ALG_EDDSA)) ==
		    FS_TOKEN_BAD_AUDIENCE,
	    "FLASHSALE_JWT_AUDIENCE is required of tokens");
	check(t != NULL && verify(t, mint(NULL, "shop", "api", FS_TOKEN_ALG_HS256)) ==
		FS_TOKEN_BAD_ALG,
	    "without jwt-hs256.key, HS256 is refused");
	check(u != NULL && url_key_is_ours(u), "the URL key is url.key's");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);

	put("jwt-hs256.key", hs, sizeof(hs));
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == 0 &&
		verify(t, mint(NULL, NULL, NULL, FS_TOKEN_ALG_HS256)) == FS_TOKEN_OK &&
		verify(t, mint(ed_sk, NULL, NULL, FS_TOKEN_ALG_EDDSA)) == FS_TOKEN_OK,
	    "with jwt-hs256.key beside the pair, both algorithms verify");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);
	drop("jwt-hs256.key");

	check(fs_keys_load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, NULL, err, sizeof(err)) == 0 &&
		t != NULL,
	    "the token keys alone (no URL key wanted)");
	fs_token_keys_free(t);
	drop("jwt-ed25519.pub");
	check(fs_keys_load(cfg_with(dir, NULL, NULL, NULL, NULL), NULL, &u, err, sizeof(err)) == 0 &&
		u != NULL && url_key_is_ours(u),
	    "the URL key alone needs no token key");
	fs_urlsig_key_free(u);
}

/* Each way the directory or the configuration can be wrong, with the reason given. */
static void
test_refusals(void)
{
	unsigned char big[33] = { 1 };
	fs_token_keys *t;
	fs_urlsig_key *u;
	char err[512], want[700];

	check(load(cfg_with(NULL, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, "FLASHSALE_KEYS_DIR is not set") == 0,
	    "no FLASHSALE_KEYS_DIR: refused, saying so");
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strstr(err, ": no JWT key (jwt-ed25519.pub or jwt-hs256.key)") != NULL,
	    "a directory with no token key: refused, naming the files");

	put("jwt-ed25519.pub", ed_pk, sizeof(ed_pk));
	drop("url.key");
	snprintf(want, sizeof(want), "%s/url.key: no such file", dir);
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "no url.key: refused, naming it");
	put("url.key", url_raw, sizeof(url_raw) - 1);
	snprintf(want, sizeof(want), "%s/url.key: expected exactly 32 bytes", dir);
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "a url.key one byte short: refused");
	put("url.key", big, sizeof(big));
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "a url.key one byte long: refused");
	put("url.key", url_raw, sizeof(url_raw));

	put("jwt-ed25519.pub", big, sizeof(big));
	snprintf(want, sizeof(want), "%s/jwt-ed25519.pub: expected exactly 32 bytes", dir);
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "a public key of the wrong size: refused");
	put("jwt-ed25519.pub", ed_pk, sizeof(ed_pk));
	put("jwt-ed25519.key", other_sk, sizeof(other_sk));
	snprintf(want, sizeof(want), "%s/jwt-ed25519.key: not the secret key of jwt-ed25519.pub",
	    dir);
	check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "a secret key of another pair: refused");
	drop("jwt-ed25519.key");

	{
		char path[600];

		snprintf(path, sizeof(path), "%s/jwt-hs256.key", dir);
		if (mkdir(path, 0700) != 0)
			exit(99);
		snprintf(want, sizeof(want), "%s: not a regular file", path);
		check(load(cfg_with(dir, NULL, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
			strcmp(err, want) == 0,
		    "a directory where a key file should be: refused");
		drop("jwt-hs256.key");
	}
}

/* The JWK Set file: tokens with a kid, and the directory's token keys optional. */
static void
test_jwks(void)
{
	char b64[64], text[512], err[512], want[700];
	fs_token_keys *t;
	fs_urlsig_key *u;
	FILE *f;

	drop("jwt-ed25519.pub");
	if (fs_b64url_encode(b64, sizeof(b64), jwk_pk, sizeof(jwk_pk), NULL) != FS_B64URL_OK)
		exit(99);
	snprintf(text, sizeof(text),
	    "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"k1\",\"x\":\"%s\"}]}\n", b64);
	if ((f = fopen(jwks_path, "w")) == NULL || fputs(text, f) == EOF || fclose(f) != 0)
		exit(99);
	check(load(cfg_with(dir, jwks_path, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == 0,
	    "jwks: with the set, no token key in the directory is needed");
	check(t != NULL && verify(t, mint_kid(jwk_sk, "k1")) == FS_TOKEN_OK,
	    "jwks: a token of kid k1 verifies with the set's key");
	check(t != NULL && verify(t, mint_kid(jwk_sk, "k2")) == FS_TOKEN_UNKNOWN_KEY,
	    "jwks: a kid the set does not have is unknown");
	check(t != NULL && verify(t, mint(jwk_sk, NULL, NULL, FS_TOKEN_ALG_EDDSA)) ==
		FS_TOKEN_BAD_ALG,
	    "jwks: a token without kid has no key to verify it");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);

	put("jwt-ed25519.pub", ed_pk, sizeof(ed_pk));
	check(load(cfg_with(dir, jwks_path, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == 0 &&
		verify(t, mint_kid(jwk_sk, "k1")) == FS_TOKEN_OK &&
		verify(t, mint(ed_sk, NULL, NULL, FS_TOKEN_ALG_EDDSA)) == FS_TOKEN_OK,
	    "jwks: beside the directory's key, both kinds of token verify");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);

	if ((f = fopen(jwks_path, "w")) == NULL || fputs("{\"keys\":[\n", f) == EOF ||
	    fclose(f) != 0)
		exit(99);
	snprintf(want, sizeof(want), "JWK Set %s: ", jwks_path);
	check(load(cfg_with(dir, jwks_path, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strncmp(err, want, strlen(want)) == 0,
	    "jwks: a malformed file is refused, naming it");
	unlink(jwks_path);
	check(load(cfg_with(dir, jwks_path, NULL, NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strncmp(err, want, strlen(want)) == 0,
	    "jwks: a missing file is refused, naming it");
}

/* Demo tokens pass only while the demo sign-in is on; its signer has the demo pair only. */
static void
test_demo(void)
{
	fs_token_keys *t, *signer = NULL;
	fs_urlsig_key *u;
	char err[512], want[700], tok[1024];

	snprintf(want, sizeof(want),
	    "%s/demo-ed25519.pub: no demo key (flashsale-admin keys generate %s)", dir, dir);
	check(load(cfg_with(dir, NULL, "1", NULL, NULL), &t, &u, err, sizeof(err)) == -1 &&
		strcmp(err, want) == 0,
	    "demo on without the demo key: refused, saying how to make it");
	check(fs_keys_load_demo_signer(cfg_with(dir, NULL, "1", NULL, NULL), &signer, err,
		  sizeof(err)) == -1 &&
		strcmp(err, want) == 0 && signer == NULL,
	    "demo signer without the demo key: refused");

	put("demo-ed25519.pub", demo_pk, sizeof(demo_pk));
	snprintf(want, sizeof(want), "%s/demo-ed25519.key: no demo secret key", dir);
	check(fs_keys_load_demo_signer(cfg_with(dir, NULL, "1", NULL, NULL), &signer, err,
		  sizeof(err)) == -1 &&
		strcmp(err, want) == 0 && signer == NULL,
	    "demo signer without the demo secret key: refused");
	put("demo-ed25519.key", demo_sk, sizeof(demo_sk));
	put("jwt-ed25519.key", ed_sk, sizeof(ed_sk));
	check(fs_keys_load_demo_signer(cfg_with(dir, NULL, "1", "shop", "api"), &signer, err,
		  sizeof(err)) == 0 &&
		fs_token_mint(signer, FS_TOKEN_ALG_EDDSA_DEMO, "kim", time(NULL), 60, tok,
		    sizeof(tok)) == FS_TOKEN_OK,
	    "demo signer: mints demo tokens");
	check(signer != NULL &&
		fs_token_mint(signer, FS_TOKEN_ALG_EDDSA, "kim", time(NULL), 60, tok,
		    sizeof(tok)) == FS_TOKEN_BAD_ALG,
	    "demo signer: never the production secret key, though it is in the directory");
	if (signer == NULL ||
	    fs_token_mint(signer, FS_TOKEN_ALG_EDDSA_DEMO, "kim", time(NULL), 60, tok,
		sizeof(tok)) != FS_TOKEN_OK)
		exit(99);
	fs_token_keys_free(signer);

	check(load(cfg_with(dir, NULL, "1", "shop", "api"), &t, &u, err, sizeof(err)) == 0 &&
		verify(t, tok) == FS_TOKEN_OK,
	    "demo on: the demo signer's token verifies, with the configured claims");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);
	check(load(cfg_with(dir, NULL, "0", "shop", "api"), &t, &u, err, sizeof(err)) == 0 &&
		verify(t, tok) == FS_TOKEN_UNKNOWN_KEY,
	    "demo off: the same token is refused");
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);
	drop("demo-ed25519.pub");
	drop("demo-ed25519.key");
	drop("jwt-ed25519.key");
}

/* The waiting room's key: loaded from queue.key, refused clearly when missing or short. */
static void
test_queue(void)
{
	unsigned char raw[FS_QUEUE_KEYBYTES];
	char err[512], want[600], pass[FS_QUEUE_TOKEN_MAX], sub[80];
	fs_queue_keys *q = NULL, *same = fs_queue_keys_new();

	if (same == NULL)
		exit(99);
	randombytes_buf(raw, sizeof(raw));
	fs_queue_keys_set(same, raw);
	snprintf(want, sizeof(want),
	    "%s/queue.key: no such file (the waiting room's key: flashsale-admin keys generate %s "
	    "adds it)",
	    dir, dir);
	check(fs_keys_load_queue(cfg_with(dir, NULL, NULL, NULL, NULL), &q, err, sizeof(err)) ==
		    -1 &&
		q == NULL && strcmp(err, want) == 0,
	    "queue: a missing queue.key is refused, naming the file and how to make it");
	check(fs_keys_load_queue(cfg_with(NULL, NULL, NULL, NULL, NULL), &q, err, sizeof(err)) ==
		    -1 &&
		q == NULL && strcmp(err, "FLASHSALE_KEYS_DIR is not set") == 0,
	    "queue: no key directory is refused");
	put("queue.key", raw, sizeof(raw) - 1);
	check(fs_keys_load_queue(cfg_with(dir, NULL, NULL, NULL, NULL), &q, err, sizeof(err)) ==
		    -1 &&
		q == NULL && strstr(err, "queue.key") != NULL,
	    "queue: a short queue.key is refused");
	put("queue.key", raw, sizeof(raw));
	check(fs_keys_load_queue(cfg_with(dir, NULL, NULL, NULL, NULL), &q, err, sizeof(err)) ==
		    0 &&
		q != NULL && fs_queue_pass_mint(same, 7, "ann", 2000000000, pass, sizeof(pass)) == 0 &&
		fs_queue_pass_check(q, pass, strlen(pass), 7, 1700000000, sub, sizeof(sub), NULL) ==
		    FS_QUEUE_OK,
	    "queue: the loaded keys check a pass made from the same queue.key");
	fs_queue_keys_free(q);
	fs_queue_keys_free(same);
	drop("queue.key");
}

/*
 * The order keys (issue 33): the file FLASHSALE_ORDER_KEYS_FILE names, a
 * key ring of 0600; no setting, a missing file, one others may read or a
 * malformed ring each refuse, and the error never holds a key.
 */
static void
test_order_keys(void)
{
	static const char ring[] = "new:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8\n"
				   "old:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n";
	char path[600], err[256];
	fs_ordertopic t;

	memset(&t, 0, sizeof(t));
	snprintf(path, sizeof(path), "%s/order.keys", dir);
	unsetenv("FLASHSALE_ORDER_KEYS_FILE");
	check(fs_keys_load_orders(cfg_with(dir, NULL, NULL, NULL, NULL), &t, err, sizeof(err)) == -1 &&
		strstr(err, "FLASHSALE_ORDER_KEYS_FILE") != NULL && t.nkeys == 0,
	    "order keys: no FLASHSALE_ORDER_KEYS_FILE, no start");
	setenv("FLASHSALE_ORDER_KEYS_FILE", path, 1);
	check(fs_keys_load_orders(cfg_with(dir, NULL, NULL, NULL, NULL), &t, err, sizeof(err)) == -1 &&
		t.nkeys == 0, "order keys: a missing file refuses");
	put("order.keys", ring, strlen(ring));
	check(fs_keys_load_orders(cfg_with(dir, NULL, NULL, NULL, NULL), &t, err, sizeof(err)) == 0 &&
		t.nkeys == 2 && strcmp(t.keys[0].kid, "new") == 0 && strcmp(t.keys[1].kid, "old") == 0,
	    "order keys: the ring loads, the first line first");
	fs_ordertopic_close(&t);
	chmod(path, 0640);
	check(fs_keys_load_orders(cfg_with(dir, NULL, NULL, NULL, NULL), &t, err, sizeof(err)) == -1 &&
		strstr(err, "0600") != NULL && t.nkeys == 0,
	    "order keys: a file the group may read refuses");
	put("order.keys", "new:ICEi\n", 9);
	chmod(path, 0600);
	check(fs_keys_load_orders(cfg_with(dir, NULL, NULL, NULL, NULL), &t, err, sizeof(err)) == -1 &&
		strstr(err, path) != NULL && strstr(err, "ICEi") == NULL && t.nkeys == 0,
	    "order keys: a malformed ring refuses, naming the file and not the key");
	unsetenv("FLASHSALE_ORDER_KEYS_FILE");
	drop("order.keys");
}

int
main(void)
{
	if (sodium_init() < 0 || mkdtemp(dir) == NULL)
		return 99;
	/* The unknown kids' log lines are lib/token's test's. */
	fs_log_set_level(FS_LOG_ERROR);
	snprintf(jwks_path, sizeof(jwks_path), "%s.jwks", dir);
	crypto_sign_keypair(ed_pk, ed_sk);
	crypto_sign_keypair(other_pk, other_sk);
	crypto_sign_keypair(demo_pk, demo_sk);
	crypto_sign_keypair(jwk_pk, jwk_sk);
	randombytes_buf(hs, sizeof(hs));
	randombytes_buf(url_raw, sizeof(url_raw));

	test_directory();
	test_refusals();
	test_jwks();
	test_demo();
	test_queue();
	test_order_keys();

	drop("jwt-ed25519.pub");
	drop("url.key");
	if (rmdir(dir) != 0)
		perror(dir);
	return failures == 0 ? 0 : 1;
}
