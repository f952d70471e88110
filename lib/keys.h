/*
 * The keys a program needs, as the configuration names them: the shopper
 * token keys with the issuer and audience tokens must carry, the purchase
 * URL key and the waiting room's key, all from FLASHSALE_KEYS_DIR, and the
 * JWK Set file of tokens with a key id (FLASHSALE_JWKS_FILE).
 */
#ifndef FS_KEYS_H
#define FS_KEYS_H

#include <stddef.h>

#include "cfg.h"
#include "ordertopic.h"
#include "queue.h"
#include "token.h"
#include "urlsig.h"

/*
 * Starts libsodium and loads the token keys into *tokens when tokens is
 * not NULL (the JWK Set file's too, when one is set; with the demo public key while FLASHSALE_DEMO_SIGNIN is 1, so
 * demo tokens pass only then) and the URL key into *url when url is not NULL. Returns 0, or
 * -1 with the reason in err and nothing allocated. The caller frees them
 * with fs_token_keys_free and fs_urlsig_key_free.
 */
int fs_keys_load(const struct fs_cfg *, fs_token_keys **tokens, fs_urlsig_key **url, char *err,
    size_t errlen) __attribute__((warn_unused_result));

/*
 * The waiting room's pass and ticket keys from FLASHSALE_KEYS_DIR's
 * queue.key, which every program that checks or makes passes needs (the
 * purchase handlers check the passes of every waiting room's URL): 0, or -1
 * with err naming the file and nothing allocated. Freed with
 * fs_queue_keys_free.
 */
int fs_keys_load_queue(const struct fs_cfg *, fs_queue_keys **queue, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * The order keys of the file FLASHSALE_ORDER_KEYS_FILE names (mode 0600)
 * into t: the purchase handlers sign order messages with the first, the
 * consumer and the operator's tools check them with all. 0, or -1 with err
 * naming the file (never a key) and no key set.
 */
int fs_keys_load_orders(const struct fs_cfg *, fs_ordertopic *t, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * The demo sign-in's keys: the demo pair only (never the production secret
 * key), with the configured issuer and audience. 0, or -1 with err set.
 */
int fs_keys_load_demo_signer(const struct fs_cfg *, fs_token_keys **tokens, char *err,
    size_t errlen) __attribute__((warn_unused_result));

#endif
