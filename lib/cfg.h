/*
 * Configuration from the environment: one table names every variable, its
 * meaning and its default, so programs, `flashsale-admin config` and
 * flashsale.conf(5) agree.
 */
#ifndef FS_CFG_H
#define FS_CFG_H

#include <stddef.h>

enum fs_cfg_key {
	FS_CFG_REDIS,
	FS_CFG_REDIS_USER,
	FS_CFG_REDIS_PASSWORD_FILE,
	FS_CFG_REDIS_WAIT_MS,
	FS_CFG_REDIS_TIMEOUT_MS,
	FS_CFG_PG,
	FS_CFG_KAFKA_BROKERS,
	FS_CFG_KAFKA_TOPIC,
	FS_CFG_KAFKA_USER,
	FS_CFG_KAFKA_PASSWORD_FILE,
	FS_CFG_KAFKA_CA_FILE,
	FS_CFG_KEYS_DIR,
	FS_CFG_JWT_ISSUER,
	FS_CFG_JWT_AUDIENCE,
	FS_CFG_JWKS_FILE,
	FS_CFG_ORDER_KEYS_FILE,
	FS_CFG_DATADIR,
	FS_CFG_SOLDOUT_DIR,
	FS_CFG_SOLDOUT_RECHECK_MS,
	FS_CFG_NCHAN_PUB,
	FS_CFG_DEMO_SIGNIN,
	FS_CFG_KAFKA_TIMEOUT_MS,
	FS_CFG_KAFKA_LINGER_MS,
	FS_CFG_PURCHASE_THREADS,
	FS_CFG_HOLD_MAX_AGE,
	FS_CFG_EXPIRE_TOKEN,
	FS_CFG_PAYMENT_URL,
	FS_CFG_PAYMENT_API_KEY,
	FS_CFG_PAYMENT_WEBHOOK_SECRET,
	FS_CFG_SHOP_URL,
	FS_CFG_REFUND_BACKOFF,
	FS_CFG_REFUND_ALERT_AFTER,
	FS_CFG_QUEUE_PACER,
	FS_CFG_QUEUE_STEP_MS,
	FS_CFG_QUEUE_THREADS,
	FS_CFG_FCGI_READ_TIMEOUT_MS,
	FS_CFG_FCGI_IDLE_TIMEOUT_MS,
	FS_CFG_TEST_CLOCK_OFFSET_MS,
	FS_CFG__MAX
};

/* Bit per key, for fs_cfg_load's list of what a program cannot run without. */
#define FS_CFG_NEED(k) (1u << (k))

struct fs_cfg {
	char value[FS_CFG__MAX][512];
	int err;
	char errstr[256];
};

/*
 * An unconfirmed hold may be an order still on its way to the broker for
 * FLASHSALE_KAFKA_TIMEOUT_MS + FLASHSALE_KAFKA_LINGER_MS; the ghost sweeper
 * must wait at least this much longer before it calls it a ghost.
 */
#define FS_CFG_HOLD_MARGIN_MS 10000
/*
 * The FastCGI connections' limits (lib/fcgi): a request begun must be
 * whole, and an answer taken, within the read timeout; a connection with
 * nothing of a request on it closes after the idle timeout, which must
 * outlast nginx's upstream keepalive_timeout (400 ms in
 * deploy/nginx.conf.in), so that nginx, not the handler, closes an idle
 * kept connection and never sends a request on one being closed.
 */
#define FS_CFG_FCGI_READ_TIMEOUT_MS_DEFAULT 10000
#define FS_CFG_FCGI_IDLE_TIMEOUT_MS_DEFAULT 60000
/* FLASHSALE_REDIS_WAIT_MS stays this far below FLASHSALE_REDIS_TIMEOUT_MS (lib/redis's WAIT margin). */
#define FS_CFG_REDIS_WAIT_MARGIN_MS 100

/*
 * Reads every variable (or its default) and checks each value, then each
 * against those it depends on. Returns -1 and says in errstr which variable
 * is missing, too long, out of its range or at odds with another, and why.
 */
int fs_cfg_load(struct fs_cfg *, unsigned need);
const char *fs_cfg_get(const struct fs_cfg *, enum fs_cfg_key);
/* An integer setting; the default when unset, -1 when malformed. */
long fs_cfg_long(const struct fs_cfg *, enum fs_cfg_key);
/*
 * FLASHSALE_TEST_CLOCK_OFFSET_MS (tests only: a handler's clock set off
 * from the real one, -60000 to 60000 once fs_cfg_load accepted it).
 */
long fs_cfg_test_clock_offset_ms(const struct fs_cfg *);
/* Joins the data directory and a relative path ("lua/reserve.lua"). */
int fs_cfg_datapath(const struct fs_cfg *, const char *rel, char *out, size_t outlen);
const char *fs_cfg_name(enum fs_cfg_key);
const char *fs_cfg_meaning(enum fs_cfg_key);
const char *fs_cfg_default(enum fs_cfg_key);

#endif
