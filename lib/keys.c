#include "config.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "keyfile.h"
#include "keys.h"

int
fs_keys_load_demo_signer(const struct fs_cfg *cfg, fs_token_keys **tokens, char *err,
    size_t errlen)
{
	const char *dir = fs_cfg_get(cfg, FS_CFG_KEYS_DIR);
	fs_token_keys *t = NULL;

	if (sodium_init() < 0 || (t = fs_token_keys_new()) == NULL) {
		snprintf(err, errlen, "libsodium failed to start");
		return -1;
	}
	if (*dir == '\0') {
		snprintf(err, errlen, "FLASHSALE_KEYS_DIR is not set");
		goto fail;
	}
	if (fs_token_keys_load_demo(t, dir, 1, err, errlen) != 0)
		goto fail;
	if (fs_token_keys_set_claims(t, fs_cfg_get(cfg, FS_CFG_JWT_ISSUER),
		fs_cfg_get(cfg, FS_CFG_JWT_AUDIENCE)) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	*tokens = t;
	return 0;
fail:
	fs_token_keys_free(t);
	return -1;
}

int
fs_keys_load(const struct fs_cfg *cfg, fs_token_keys **tokens, fs_urlsig_key **url, char *err,
    size_t errlen)
{
	const char *dir = fs_cfg_get(cfg, FS_CFG_KEYS_DIR);
	fs_token_keys *t = NULL;
	fs_urlsig_key *u = NULL;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to start");
		return -1;
	}
	if (*dir == '\0') {
		snprintf(err, errlen, "FLASHSALE_KEYS_DIR is not set");
		return -1;
	}
	if ((tokens != NULL && (t = fs_token_keys_new()) == NULL) ||
	    (url != NULL && (u = fs_urlsig_key_new()) == NULL)) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	/* First the JWK Set: with it, the directory's token keys are optional. */
	if (t != NULL && *fs_cfg_get(cfg, FS_CFG_JWKS_FILE) != '\0' &&
	    fs_token_keys_load_jwks(t, fs_cfg_get(cfg, FS_CFG_JWKS_FILE), err, errlen) != 0)
		goto fail;
	if (t != NULL && fs_token_keys_load_dir(t, dir, err, errlen) != 0)
		goto fail;
	/* Demo tokens pass only while the demo sign-in is on. */
	if (t != NULL && strcmp(fs_cfg_get(cfg, FS_CFG_DEMO_SIGNIN), "1") == 0 &&
	    fs_token_keys_load_demo(t, dir, 0, err, errlen) != 0)
		goto fail;
	if (t != NULL && fs_token_keys_set_claims(t, fs_cfg_get(cfg, FS_CFG_JWT_ISSUER),
			     fs_cfg_get(cfg, FS_CFG_JWT_AUDIENCE)) != 0) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (u != NULL && fs_urlsig_key_load_dir(u, dir, err, errlen) != 0)
		goto fail;
	if (tokens != NULL)
		*tokens = t;
	if (url != NULL)
		*url = u;
	return 0;
fail:
	fs_token_keys_free(t);
	fs_urlsig_key_free(u);
	return -1;
}

int
fs_keys_load_queue(const struct fs_cfg *cfg, fs_queue_keys **queue, char *err, size_t errlen)
{
	const char *dir = fs_cfg_get(cfg, FS_CFG_KEYS_DIR);
	fs_queue_keys *q;

	if ((q = fs_queue_keys_new()) == NULL) {
		snprintf(err, errlen, "libsodium failed to start or out of memory");
		return -1;
	}
	if (*dir == '\0') {
		snprintf(err, errlen, "FLASHSALE_KEYS_DIR is not set");
		goto fail;
	}
	if (fs_queue_keys_load_dir(q, dir, err, errlen) != 0)
		goto fail;
	*queue = q;
	return 0;
fail:
	fs_queue_keys_free(q);
	return -1;
}

int
fs_keys_load_orders(const struct fs_cfg *cfg, fs_ordertopic *t, char *err, size_t errlen)
{
	const char *path = fs_cfg_get(cfg, FS_CFG_ORDER_KEYS_FILE);
	char text[FS_ORDERTOPIC_KEYFILE_MAX], why[160];
	size_t len;
	int rc = -1;

	if (sodium_init() < 0) {
		snprintf(err, errlen, "libsodium failed to start");
		return -1;
	}
	if (*path == '\0') {
		snprintf(err, errlen, "FLASHSALE_ORDER_KEYS_FILE is not set: order messages cannot "
				      "be signed nor checked");
		return -1;
	}
	if (fs_keyfile_read_text(path, text, sizeof(text), &len, err, errlen) != 0)
		return -1;
	if (fs_ordertopic_set_keys(t, text, len, why, sizeof(why)) != 0)
		snprintf(err, errlen, "%s: %s", path, why);
	else
		rc = 0;
	sodium_memzero(text, sizeof(text));
	return rc;
}
