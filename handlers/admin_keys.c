/*
 * flashsale-admin's keys and tokens: keys generate, jwks fetch, token mint,
 * queue pass.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "admin.h"
#include "keys.h"
#include "oidc.h"
#include "queue.h"
#include "token.h"
#include "urlsig.h"

/* Writes a new secret file; refuses to replace one. */
static int
write_key(const char *dir, const char *name, const void *key, size_t len)
{
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (write(fd, key, len) != (ssize_t)len || fsync(fd) != 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	return close(fd);
}

/*
 * Which key files to write: all in a new directory; in a directory of an
 * older version that has the production keys, the later ones it lacks (the
 * demo pair, whole; queue.key). 0, or -1 when that is nothing or a partial set.
 */
static int
keys_missing(const char *dir, const char *const *names, int n, int nproduction, int *want)
{
	char path[1024];
	int exists[16], nexisting = 0, production = 1;

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		exists[i] = access(path, F_OK) == 0;
		nexisting += exists[i];
		production &= i >= nproduction || exists[i];
		want[i] = !exists[i];
	}
	if (nexisting == 0)
		return 0;
	/* The demo pair is the last two: both or neither. */
	if (!production || nexisting == n || exists[n - 1] != exists[n - 2])
		return -1;
	return 0;
}

/*
 * Writes every key file, all or nothing; in a directory of an older version
 * that has the production keys only, adds the later ones (keys_missing).
 */
int
admin_keys_generate(int argc, char **argv)
{
	enum { NKEYS = 7, NPRODUCTION = 4 };
	static const char *const names[NKEYS] = { FS_TOKEN_ED25519_PUB_FILE,
		FS_TOKEN_ED25519_KEY_FILE, FS_TOKEN_HS256_KEY_FILE, FS_URLSIG_KEY_FILE,
		FS_QUEUE_KEY_FILE, FS_TOKEN_DEMO_PUB_FILE, FS_TOKEN_DEMO_KEY_FILE };
	unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES], ed_sk[crypto_sign_SECRETKEYBYTES];
	unsigned char demo_pk[crypto_sign_PUBLICKEYBYTES], demo_sk[crypto_sign_SECRETKEYBYTES];
	unsigned char hs[32], url[crypto_auth_KEYBYTES], queue[FS_QUEUE_KEYBYTES];
	const void *keys[NKEYS] = { ed_pk, ed_sk, hs, url, queue, demo_pk, demo_sk };
	const size_t lens[NKEYS] = { sizeof(ed_pk), sizeof(ed_sk), sizeof(hs), sizeof(url),
		sizeof(queue), sizeof(demo_pk), sizeof(demo_sk) };
	const char *dir = argv[0];
	char path[1024];
	int rc = 1, written, want[NKEYS], nwanted = 0;

	(void)argc; /* one: the table says so */

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return admin_fail("cannot create %s", dir);
	if (keys_missing(dir, names, NKEYS, NPRODUCTION, want) != 0)
		return admin_fail("%s has keys already; refusing to replace them", dir);
	for (int i = 0; i < NKEYS; i++)
		nwanted += want[i];
	crypto_sign_keypair(ed_pk, ed_sk);
	crypto_sign_keypair(demo_pk, demo_sk);
	randombytes_buf(hs, sizeof(hs));
	crypto_auth_keygen(url);
	crypto_kdf_keygen(queue);
	for (written = 0; written < NKEYS; written++)
		if (want[written] && write_key(dir, names[written], keys[written], lens[written]) != 0)
			break;
	if (written == NKEYS) {
		printf(nwanted == NKEYS ? "keys written to %s\n" : "missing keys added to %s\n", dir);
		rc = 0;
	} else {
		/* All or nothing: remove what this run wrote. */
		admin_fail("cannot write keys in %s", dir);
		while (written-- > 0) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[written]);
			if (want[written])
				unlink(path);
		}
	}
	sodium_memzero(ed_sk, sizeof(ed_sk));
	sodium_memzero(demo_sk, sizeof(demo_sk));
	sodium_memzero(hs, sizeof(hs));
	sodium_memzero(url, sizeof(url));
	sodium_memzero(queue, sizeof(queue));
	return rc;
}

/*
 * jwks fetch [ISSUER_URL] [--out FILE] [--via http://A.B.C.D:PORT]: the
 * identity provider's signing keys into the JWK Set file (FILE, else
 * FLASHSALE_JWKS_FILE), replaced only by a set with a key to use; a failed
 * fetch keeps the file and exits 1 saying why. The issuer defaults to
 * FLASHSALE_JWT_ISSUER, the one tokens must name.
 */
int
admin_jwks_fetch(int argc, char **argv)
{
	const char *issuer = NULL, *out = NULL, *via = NULL;
	struct fs_oidc_result res;
	struct fs_cfg cfg;
	char err[768];
	int i = 0;

	if (argc > 0 && strncmp(argv[0], "--", 2) != 0)
		issuer = argv[i++];
	for (; i < argc; i += 2) {
		if (i + 1 >= argc)
			return admin_fail("%s needs a value", argv[i]);
		if (strcmp(argv[i], "--out") == 0)
			out = argv[i + 1];
		else if (strcmp(argv[i], "--via") == 0)
			via = argv[i + 1];
		else
			return admin_fail("unknown option %s", argv[i]);
	}
	if ((out == NULL || issuer == NULL) && admin_load_cfg(&cfg, 0) != 0)
		return 1;
	if (issuer == NULL && *(issuer = fs_cfg_get(&cfg, FS_CFG_JWT_ISSUER)) == '\0')
		return admin_fail("%s", "jwks fetch: no ISSUER_URL and FLASHSALE_JWT_ISSUER is not set");
	if (out == NULL && *(out = fs_cfg_get(&cfg, FS_CFG_JWKS_FILE)) == '\0')
		return admin_fail("%s", "jwks fetch: no --out FILE and FLASHSALE_JWKS_FILE is not set");
	if (fs_oidc_jwks_fetch(issuer, via, out, FS_OIDC_TIMEOUT_MS, &res, err, sizeof(err)) != 0)
		return admin_fail("jwks fetch %s: %s; %s kept as it was", issuer, err, out);
	printf("%s: %zu keys from %s (%s)%s\n", out, res.kept, issuer, res.jwks_uri,
	    res.unchanged ? ", unchanged" : "");
	return 0;
}

int
admin_token_mint(int argc, char **argv)
{
	enum fs_token_alg alg = FS_TOKEN_ALG_EDDSA;
	const char *user = NULL;
	long ttl = 3600, count = 0, age = 0;
	struct fs_cfg cfg;
	fs_token_keys *keys = NULL;
	char tok[FS_TOKEN_MAX + 1], sub[FS_TOKEN_SUB_MAX + 1], err[256];
	enum fs_token_status st;
	int rc = 1;

	for (int i = 0; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (val == NULL)
			return admin_fail("%s needs a value", opt);
		i++;
		if (strcmp(opt, "--user") == 0) {
			user = val;
		} else if (strcmp(opt, "--ttl") == 0 || strcmp(opt, "--count") == 0 ||
		    strcmp(opt, "--age") == 0) {
			long v;

			errno = 0;
			v = strtol(val, &end, 10);
			if (errno != 0 || *end != '\0' || v <= 0 || v > 100000000)
				return admin_fail("%s must be a positive integer", opt);
			*(opt[2] == 't' ? &ttl : opt[2] == 'c' ? &count : &age) = v;
		} else if (strcmp(opt, "--alg") == 0) {
			if (strcmp(val, "EdDSA") == 0)
				alg = FS_TOKEN_ALG_EDDSA;
			else if (strcmp(val, "HS256") == 0)
				alg = FS_TOKEN_ALG_HS256;
			else
				return admin_fail("unknown algorithm %s (EdDSA or HS256)", val);
		} else {
			return admin_fail("unknown option %s", opt);
		}
	}
	if (user == NULL)
		return admin_fail("%s", "token mint needs --user ID");
	if (admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0)
		return 1;
	if (fs_keys_load(&cfg, &keys, NULL, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	for (long i = count > 0 ? 1 : 0; i <= count; i++) {
		if (count > 0)
			snprintf(sub, sizeof(sub), "%s-%ld", user, i);
		else
			snprintf(sub, sizeof(sub), "%s", user);
		if ((st = fs_token_mint(keys, alg, sub, time(NULL) - age, ttl, tok, sizeof(tok))) != FS_TOKEN_OK) {
			admin_fail("cannot mint: %s", fs_token_strerror(st));
			goto out;
		}
		if (count > 0)
			printf("%s %s\n", sub, tok);
		else
			printf("%s\n", tok);
	}
	rc = 0;
out:
	fs_token_keys_free(keys);
	return rc;
}

/*
 * queue pass SALE SUB [--seconds N] [--age N]: a waiting room's pass for
 * SUB in SALE, valid N seconds (120) from now (or from N seconds ago, for
 * tests): support's way to let one shopper buy, and the tests'.
 */
int
admin_queue_pass(uint64_t sale, int argc, char **argv)
{
	long v, seconds = 120, age = 0;
	struct fs_cfg cfg;
	fs_queue_keys *keys = NULL;
	char pass[FS_QUEUE_TOKEN_MAX], err[256], *end;
	int rc = 1;

	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			return admin_fail("%s needs a value", argv[i]);
		if (strcmp(argv[i], "--seconds") != 0 && strcmp(argv[i], "--age") != 0)
			return admin_fail("unknown option %s", argv[i]);
		errno = 0;
		v = strtol(argv[i + 1], &end, 10);
		if (errno != 0 || *end != '\0' || v <= 0 || v > 86400)
			return admin_fail("%s must be an integer from 1 to 86400", argv[i]);
		*(argv[i][2] == 's' ? &seconds : &age) = v;
	}
	if (!fs_token_sub_ok(argv[0], strlen(argv[0])))
		return admin_fail("%s", "the shopper id is 1 to 64 printable characters, no space or quote");
	if (admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0)
		return 1;
	if (fs_keys_load_queue(&cfg, &keys, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	if (fs_queue_pass_mint(keys, sale, argv[0], (int64_t)time(NULL) - age + seconds, pass,
		sizeof(pass)) != 0) {
		admin_fail("%s", "cannot mint the pass");
		goto out;
	}
	printf("%s\n", pass);
	rc = 0;
out:
	fs_queue_keys_free(keys);
	return rc;
}
