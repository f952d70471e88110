/*
 * flashsale-signin: POST /api/flash-sales/signin, for the demo only.
 *
 * Gives a shopper a token for the user id in the body ({"userId":"..."}),
 * or for a random one when there is none. Production tokens come from the
 * shop's own identity provider: unless FLASHSALE_DEMO_SIGNIN is 1 this
 * program answers 404 to everything and needs no key. It signs with the
 * demo key (lib/token: "kid":"demo"), never the production one, and the
 * other handlers accept such tokens only while the flag is on.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <sodium.h>

#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "jsonread.h"
#include "keys.h"
#include "log.h"
#include "token.h"

/* How long a demo token lasts: a sale and its payment window fit in it. */
#define TOKEN_TTL_S (6 * 3600)
#define USER_ID_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;	/* NULL when the sign-in is off */
};

/* 1 to FS_TOKEN_SUB_MAX characters of [A-Za-z0-9._-]. */
static int
valid_user_id(const char *s)
{
	size_t n = strlen(s);

	return n >= 1 && n <= FS_TOKEN_SUB_MAX && strspn(s, USER_ID_CHARS) == n;
}

static void
random_user_id(char out[FS_TOKEN_SUB_MAX + 1])
{
	unsigned char r[6];
	char hex[sizeof(r) * 2 + 1];

	randombytes_buf(r, sizeof(r));
	sodium_bin2hex(hex, sizeof(hex), r, sizeof(r));
	snprintf(out, FS_TOKEN_SUB_MAX + 1, "shopper-%s", hex);
}

/*
 * The user id the body asks for, or a random one for an empty body or one
 * without "userId". 0, or -1 when the body is malformed or the id invalid.
 */
static int
requested_user(const char *body, size_t len, char out[FS_TOKEN_SUB_MAX + 1])
{
	json_object *doc, *v;
	char why[64];
	int rc = -1;

	if (strspn(body, " \t\r\n") == len) {
		random_user_id(out);
		return 0;
	}
	if ((doc = fs_jsonread_object(body, len, 8, why, sizeof(why))) == NULL)
		return -1;
	if (!json_object_object_get_ex(doc, "userId", &v) || json_object_is_type(v, json_type_null)) {
		random_user_id(out);
		rc = 0;
		goto fail;
	}
	if (!json_object_is_type(v, json_type_string) || !valid_user_id(json_object_get_string(v)))
		goto fail;
	snprintf(out, FS_TOKEN_SUB_MAX + 1, "%s", json_object_get_string(v));
	rc = 0;
fail:
	json_object_put(doc);
	return rc;
}

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	char user[FS_TOKEN_SUB_MAX + 1], token[FS_TOKEN_MAX + 1], expires[FS_CLOCK_TIME_LEN];
	char answer[FS_TOKEN_MAX + 256];
	enum fs_token_status ts;
	const char *body;
	time_t now;
	size_t len;
	int n;

	if (app->keys == NULL) {
		fs_fcgi_error(fcgi, FS_ERR_NOT_FOUND, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	if (fs_fcgi_body_or_answer(fcgi, &body, &len) != 0)
		return;
	if (strlen(body) != len || requested_user(body, len, user) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_BAD_REQUEST,
		    "\"detail\":\"userId must be 1 to 64 characters of A-Z a-z 0-9 . _ -\"", NULL);
		return;
	}
	now = time(NULL);
	ts = fs_token_mint(app->keys, FS_TOKEN_ALG_EDDSA_DEMO, user, now, TOKEN_TTL_S, token, sizeof(token));
	if (ts != FS_TOKEN_OK) {
		fs_log_error("cannot mint a token: %s", fs_token_strerror(ts));
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_clock_format(((int64_t)now + TOKEN_TTL_S) * 1000, expires);
	/* The user id and the token are plain ASCII without quotes: no escaping. */
	n = snprintf(answer, sizeof(answer), "{\"token\":\"%s\",\"userId\":\"%s\",\"expiresAt\":\"%s\"}",
	    token, user, expires);
	sodium_memzero(token, sizeof(token));
	fs_fcgi_answer(fcgi, FS_HTTP_OK, NULL, answer, (size_t)n);
	sodium_memzero(answer, sizeof(answer));
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];

	if (fs_cfg_load(&app->cfg, 0) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (strcmp(fs_cfg_get(&app->cfg, FS_CFG_DEMO_SIGNIN), "1") == 0) {
		if (fs_keys_load_demo_signer(&app->cfg, &app->keys, err, sizeof(err)) != 0) {
			fs_log_error("keys: %s (the demo sign-in signs tokens)", err);
			return -1;
		}
		fs_log_info("demo sign-in enabled");
	}
	return 1;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_token_keys_free(app->keys);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-signin", setup, teardown, NULL, NULL, handle, NULL, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}
