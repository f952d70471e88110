#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

#ifndef FS_PKGDATADIR
#define FS_PKGDATADIR "/usr/local/share/flashsale"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

static const struct {
	const char *name;
	const char *def;
	const char *meaning;
} cfg_table[FS_CFG__MAX] = {
	[FS_CFG_REDIS] = { "FLASHSALE_REDIS", NULL,
	    "Redis address: a unix socket path (starts with /) or host:port; a Redis Cluster: "
	    "seed nodes host:port[,host:port...]" },
	[FS_CFG_REDIS_USER] = { "FLASHSALE_REDIS_USER", "",
	    "Redis ACL user to AUTH as (empty: the default user)" },
	[FS_CFG_REDIS_PASSWORD_FILE] = { "FLASHSALE_REDIS_PASSWORD_FILE", "",
	    "file holding that user's Redis password, mode 0600 (empty: no AUTH)" },
	[FS_CFG_REDIS_WAIT_MS] = { "FLASHSALE_REDIS_WAIT_MS", "0",
	    "a purchase (a waiting room's new place or pass too) waits this long for a replica "
	    "of its Redis to have the hold (WAIT 1), else answers 503 (0: no wait)" },
	[FS_CFG_REDIS_TIMEOUT_MS] = { "FLASHSALE_REDIS_TIMEOUT_MS", "1000",
	    "how long one Redis command (a reservation's pipeline, its connect and retries "
	    "included) may take before the program gives up on it (a purchase answers 503); "
	    "200 to 10000, and above FLASHSALE_REDIS_WAIT_MS by 100" },
	[FS_CFG_PG] = { "FLASHSALE_PG", NULL, "PostgreSQL libpq connection string (the password in a passfile= it names)" },
	[FS_CFG_KAFKA_BROKERS] = { "FLASHSALE_KAFKA_BROKERS", NULL,
	    "Kafka bootstrap servers, host:port[,host:port]" },
	[FS_CFG_KAFKA_TOPIC] = { "FLASHSALE_KAFKA_TOPIC", "flash-sale-orders",
	    "order topic; dead letters go to <topic>.dlq" },
	[FS_CFG_KAFKA_USER] = { "FLASHSALE_KAFKA_USER", "",
	    "Kafka principal (SCRAM-SHA-512 user) to authenticate as over SASL_SSL (empty: "
	    "PLAINTEXT, for the unit tests' in-process mock broker only)" },
	[FS_CFG_KAFKA_PASSWORD_FILE] = { "FLASHSALE_KAFKA_PASSWORD_FILE", "",
	    "file holding that principal's SCRAM password, mode 0600" },
	[FS_CFG_KAFKA_CA_FILE] = { "FLASHSALE_KAFKA_CA_FILE", "",
	    "PEM file of the authority that signed the brokers' certificates; each broker's "
	    "certificate must name the address it is reached at" },
	[FS_CFG_KEYS_DIR] = { "FLASHSALE_KEYS_DIR", NULL,
	    "directory of key files (jwt-ed25519.pub/.key, jwt-hs256.key, url.key)" },
	[FS_CFG_JWT_ISSUER] = { "FLASHSALE_JWT_ISSUER", "",
	    "required `iss` of shopper tokens (empty: not checked)" },
	[FS_CFG_JWT_AUDIENCE] = { "FLASHSALE_JWT_AUDIENCE", "",
	    "required `aud` of shopper tokens (empty: not checked)" },
	[FS_CFG_JWKS_FILE] = { "FLASHSALE_JWKS_FILE", "",
	    "JWK Set file of the keys of shopper tokens that carry a `kid` (Ed25519 and HS256), "
	    "re-read when it changes (empty: none)" },
	[FS_CFG_ORDER_KEYS_FILE] = { "FLASHSALE_ORDER_KEYS_FILE", "",
	    "file of the order keys, mode 0600: lines kid:base64url(32 bytes); the first signs the "
	    "order messages a purchase makes, every line verifies them (the purchase handlers, the "
	    "consumer and the operator's tools need it)" },
	[FS_CFG_DATADIR] = { "FLASHSALE_DATADIR", FS_PKGDATADIR,
	    "where lua/, sql/ and static/ are" },
	[FS_CFG_SOLDOUT_DIR] = { "FLASHSALE_SOLDOUT_DIR", "",
	    "directory of sold-out marker files that nginx checks (empty: none)" },
	[FS_CFG_SOLDOUT_RECHECK_MS] = { "FLASHSALE_SOLDOUT_RECHECK_MS", "1000",
	    "every this many ms a purchase process asks Redis the units left of the items it "
	    "remembers sold out, and forgets those with a unit again (a restock message lost)" },
	[FS_CFG_NCHAN_PUB] = { "FLASHSALE_NCHAN_PUB", "",
	    "nchan publisher base URL for order status pushes, one per origin host separated by spaces (empty: none)" },
	[FS_CFG_DEMO_SIGNIN] = { "FLASHSALE_DEMO_SIGNIN", "0",
	    "1 enables the demo sign-in endpoint" },
	[FS_CFG_KAFKA_TIMEOUT_MS] = { "FLASHSALE_KAFKA_TIMEOUT_MS", "3000",
	    "how long a purchase waits for the broker's acknowledgement" },
	[FS_CFG_KAFKA_LINGER_MS] = { "FLASHSALE_KAFKA_LINGER_MS", "2",
	    "how long the producer gathers concurrent orders into one batch" },
	[FS_CFG_PURCHASE_THREADS] = { "FLASHSALE_PURCHASE_THREADS", "2",
	    "event loops per purchase process (each holds any number of requests)" },
	[FS_CFG_HOLD_MAX_AGE] = { "FLASHSALE_HOLD_MAX_AGE", "120",
	    "seconds after which an unconfirmed hold counts as a ghost" },
	[FS_CFG_EXPIRE_TOKEN] = { "FLASHSALE_EXPIRE_TOKEN", "",
	    "secret that the operator expiry endpoint requires (empty: endpoint off)" },
	[FS_CFG_PAYMENT_URL] = { "FLASHSALE_PAYMENT_URL", NULL,
	    "payment provider's API base URL, http://IPv4:PORT or https://HOST[:PORT] (flashsale-payment)" },
	[FS_CFG_PAYMENT_API_KEY] = { "FLASHSALE_PAYMENT_API_KEY", NULL,
	    "secret API key of the payment provider (flashsale-payment)" },
	[FS_CFG_PAYMENT_WEBHOOK_SECRET] = { "FLASHSALE_PAYMENT_WEBHOOK_SECRET", NULL,
	    "shared secret of the provider's webhook signatures, 16-256 bytes (flashsale-payment)" },
	[FS_CFG_SHOP_URL] = { "FLASHSALE_SHOP_URL", NULL,
	    "the shop's public URL, where the provider sends shoppers back (flashsale-payment)" },
	[FS_CFG_REFUND_BACKOFF] = { "FLASHSALE_REFUND_BACKOFF", "60",
	    "seconds flashsale-expire waits before it asks again for a refund the provider refused; doubled after each failure, 6 h at most" },
	[FS_CFG_REFUND_ALERT_AFTER] = { "FLASHSALE_REFUND_ALERT_AFTER", "5",
	    "failed tries of one refund after which it counts as failing (flashsale_refunds_failing, an error log line)" },
	[FS_CFG_QUEUE_PACER] = { "FLASHSALE_QUEUE_PACER", "1",
	    "1: flashsale-queue runs the waiting rooms' pacer (one process leads each sale by a "
	    "Redis lease); 0: it only serves" },
	[FS_CFG_QUEUE_STEP_MS] = { "FLASHSALE_QUEUE_STEP_MS", "250",
	    "milliseconds between two steps of the pacer: each admits a step's share of "
	    "capacityPerSecond (50 to 5000)" },
	[FS_CFG_QUEUE_THREADS] = { "FLASHSALE_QUEUE_THREADS", "2",
	    "event loops per flashsale-queue process (the joins of a loop's round share one "
	    "Redis pipeline)" },
	[FS_CFG_FCGI_READ_TIMEOUT_MS] = { "FLASHSALE_FCGI_READ_TIMEOUT_MS",
	    STR(FS_CFG_FCGI_READ_TIMEOUT_MS_DEFAULT),
	    "a FastCGI request whose first byte came must be whole within this many ms, and an "
	    "answer must be taken within it, or the handler closes the connection (100 to 60000)" },
	[FS_CFG_FCGI_IDLE_TIMEOUT_MS] = { "FLASHSALE_FCGI_IDLE_TIMEOUT_MS",
	    STR(FS_CFG_FCGI_IDLE_TIMEOUT_MS_DEFAULT),
	    "a FastCGI connection with nothing of a request on it closes after this many ms "
	    "(1000 to 3600000; longer than nginx's upstream keepalive_timeout, 400 ms)" },
	[FS_CFG_TEST_CLOCK_OFFSET_MS] = { "FLASHSALE_TEST_CLOCK_OFFSET_MS", "0",
	    "TESTS ONLY, never in production: milliseconds added to flashsale-queue's own clock "
	    "(-60000 to 60000; -2000: an origin 2 s slow), so that a test can show the waiting "
	    "room's opening decided by Redis' clock, not the handler's" },
};

/* The integer settings' ranges; {0, 0}: not an integer setting. */
static const struct {
	long min, max;
} cfg_range[FS_CFG__MAX] = {
	[FS_CFG_DEMO_SIGNIN] = { 0, 1 },
	[FS_CFG_REDIS_WAIT_MS] = { 0, 900 },
	[FS_CFG_REDIS_TIMEOUT_MS] = { 200, 10000 },
	[FS_CFG_SOLDOUT_RECHECK_MS] = { 100, 10000 },
	[FS_CFG_KAFKA_TIMEOUT_MS] = { 100, 300000 },
	[FS_CFG_KAFKA_LINGER_MS] = { 0, 1000 },
	[FS_CFG_PURCHASE_THREADS] = { 1, 64 },
	[FS_CFG_HOLD_MAX_AGE] = { 1, 86400 },
	[FS_CFG_REFUND_BACKOFF] = { 1, 86400 },
	[FS_CFG_REFUND_ALERT_AFTER] = { 1, 1000 },
	[FS_CFG_QUEUE_PACER] = { 0, 1 },
	[FS_CFG_QUEUE_STEP_MS] = { 50, 5000 },
	[FS_CFG_QUEUE_THREADS] = { 1, 64 },
	[FS_CFG_FCGI_READ_TIMEOUT_MS] = { 100, 60000 },
	[FS_CFG_FCGI_IDLE_TIMEOUT_MS] = { 1000, 3600000 },
};

/* FLASHSALE_TEST_CLOCK_OFFSET_MS at most this far either way (a minute). */
#define TEST_CLOCK_OFFSET_MAX_MS 60000L

#define EXPIRE_TOKEN_MIN 16 /* bytes: a shorter operator secret is guessable */
#define TOPIC_MAX 240	    /* Kafka's 249, less ".dlq" and some room */

static int
invalid(struct fs_cfg *cfg, enum fs_cfg_key k, const char *why)
{
	cfg->err = 1;
	snprintf(cfg->errstr, sizeof(cfg->errstr), "%s=%.64s: %s", cfg_table[k].name, cfg->value[k],
	    why);
	return -1;
}

/* Empty, a socket path, or host:port with a port of 1-65535. */
static int
address_ok(const char *v)
{
	const char *colon = strrchr(v, ':');
	long port;

	if (*v == '\0' || *v == '/')
		return 1;
	if (colon == NULL || colon == v || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5)
		return 0;
	port = strtol(colon + 1, NULL, 10);
	return port >= 1 && port <= 65535;
}

/* One address, or a comma-separated list of at most 16 (a cluster's seeds). */
static int
addresses_ok(const char *v)
{
	char one[512];
	int n = 0;

	if (strchr(v, ',') == NULL)
		return address_ok(v);
	for (;;) {
		size_t len = strcspn(v, ",");

		if (len == 0 || len >= sizeof(one) || ++n > 16)
			return 0;
		memcpy(one, v, len);
		one[len] = '\0';
		if (!address_ok(one))
			return 0;
		if (v[len] == '\0')
			return 1;
		v += len + 1;
	}
}

/* Each value on its own: ranges and forms, so a typo stops the start. */
static int
check_values(struct fs_cfg *cfg)
{
	const char *v;
	char why[96];

	for (int k = 0; k < FS_CFG__MAX; k++) {
		long n;

		if (cfg_range[k].min == 0 && cfg_range[k].max == 0)
			continue;
		n = fs_cfg_long(cfg, (enum fs_cfg_key)k);
		if (n < cfg_range[k].min || n > cfg_range[k].max) {
			snprintf(why, sizeof(why), "must be an integer from %ld to %ld", cfg_range[k].min,
			    cfg_range[k].max);
			return invalid(cfg, (enum fs_cfg_key)k, why);
		}
	}
	if (fs_cfg_test_clock_offset_ms(cfg) < -TEST_CLOCK_OFFSET_MAX_MS ||
	    fs_cfg_test_clock_offset_ms(cfg) > TEST_CLOCK_OFFSET_MAX_MS)
		return invalid(cfg, FS_CFG_TEST_CLOCK_OFFSET_MS,
		    "must be an integer from -60000 to 60000 (tests only)");
	v = cfg->value[FS_CFG_KAFKA_TOPIC];
	if (*v == '\0' || strlen(v) > TOPIC_MAX ||
	    strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
		strlen(v))
		return invalid(cfg, FS_CFG_KAFKA_TOPIC,
		    "a Kafka topic name is 1-240 of a-z A-Z 0-9 . _ -");
	if (!addresses_ok(cfg->value[FS_CFG_REDIS]))
		return invalid(cfg, FS_CFG_REDIS,
		    "expected a socket path (/...) or host:port[,host:port...] (at most 16)");
	v = cfg->value[FS_CFG_NCHAN_PUB];
	if (*v != '\0' && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0 &&
	    strncmp(v, "unix:/", 6) != 0)
		return invalid(cfg, FS_CFG_NCHAN_PUB,
		    "expected an http:// or https:// URL, or unix:/SOCKET:/PATH");
	v = cfg->value[FS_CFG_SOLDOUT_DIR];
	if (*v != '\0' && *v != '/')
		return invalid(cfg, FS_CFG_SOLDOUT_DIR, "expected an absolute path (nginx reads it too)");
	v = cfg->value[FS_CFG_EXPIRE_TOKEN];
	if (*v != '\0' && strlen(v) < EXPIRE_TOKEN_MIN) {
		cfg->err = 1;
		snprintf(cfg->errstr, sizeof(cfg->errstr),
		    "FLASHSALE_EXPIRE_TOKEN is shorter than %d bytes: too easy to guess",
		    EXPIRE_TOKEN_MIN);
		return -1;
	}
	return 0;
}

/* Values against those they depend on. */
static int
check_dependencies(struct fs_cfg *cfg)
{
	long age_ms = fs_cfg_long(cfg, FS_CFG_HOLD_MAX_AGE) * 1000,
	     in_flight_ms = fs_cfg_long(cfg, FS_CFG_KAFKA_TIMEOUT_MS) +
	    fs_cfg_long(cfg, FS_CFG_KAFKA_LINGER_MS);

	if (*cfg->value[FS_CFG_KAFKA_USER] != '\0' &&
	    (*cfg->value[FS_CFG_KAFKA_PASSWORD_FILE] == '\0' || *cfg->value[FS_CFG_KAFKA_CA_FILE] == '\0')) {
		cfg->err = 1;
		snprintf(cfg->errstr, sizeof(cfg->errstr),
		    "FLASHSALE_KAFKA_USER is set without FLASHSALE_KAFKA_PASSWORD_FILE and "
		    "FLASHSALE_KAFKA_CA_FILE: the brokers take SASL_SSL only");
		return -1;
	}
	if (age_ms < in_flight_ms + FS_CFG_HOLD_MARGIN_MS) {
		cfg->err = 1;
		snprintf(cfg->errstr, sizeof(cfg->errstr),
		    "FLASHSALE_HOLD_MAX_AGE (%ld s) must exceed FLASHSALE_KAFKA_TIMEOUT_MS + "
		    "FLASHSALE_KAFKA_LINGER_MS (%ld ms) by %d s: an order may be on its way to the "
		    "broker that long, and the sweeper would fail it as a ghost",
		    age_ms / 1000, in_flight_ms, FS_CFG_HOLD_MARGIN_MS / 1000);
		return -1;
	}
	/* A WAIT's answer must come before the connection's own timeout (lib/redis). */
	if (fs_cfg_long(cfg, FS_CFG_REDIS_WAIT_MS) + FS_CFG_REDIS_WAIT_MARGIN_MS >
	    fs_cfg_long(cfg, FS_CFG_REDIS_TIMEOUT_MS)) {
		cfg->err = 1;
		snprintf(cfg->errstr, sizeof(cfg->errstr),
		    "FLASHSALE_REDIS_WAIT_MS (%ld) must stay %d ms below FLASHSALE_REDIS_TIMEOUT_MS "
		    "(%ld): the answer of a WAIT comes within the command's timeout",
		    fs_cfg_long(cfg, FS_CFG_REDIS_WAIT_MS), FS_CFG_REDIS_WAIT_MARGIN_MS,
		    fs_cfg_long(cfg, FS_CFG_REDIS_TIMEOUT_MS));
		return -1;
	}
	return 0;
}

int
fs_cfg_load(struct fs_cfg *cfg, unsigned need)
{
	memset(cfg, 0, sizeof(*cfg));
	for (int k = 0; k < FS_CFG__MAX; k++) {
		const char *v = getenv(cfg_table[k].name);

		if (v == NULL || *v == '\0')
			v = cfg_table[k].def;
		if (v == NULL) {
			if (need & FS_CFG_NEED(k)) {
				cfg->err = 1;
				snprintf(cfg->errstr, sizeof(cfg->errstr), "%s is not set (%s)",
				    cfg_table[k].name, cfg_table[k].meaning);
				return -1;
			}
			v = "";
		}
		if (strlen(v) >= sizeof(cfg->value[k])) {
			cfg->err = 1;
			snprintf(cfg->errstr, sizeof(cfg->errstr), "%s is too long", cfg_table[k].name);
			return -1;
		}
		strcpy(cfg->value[k], v);
	}
	return check_values(cfg) == 0 && check_dependencies(cfg) == 0 ? 0 : -1;
}

const char *
fs_cfg_get(const struct fs_cfg *cfg, enum fs_cfg_key k)
{
	return cfg->value[k];
}

long
fs_cfg_long(const struct fs_cfg *cfg, enum fs_cfg_key k)
{
	const char *s = cfg->value[k];
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return -1;
	return v;
}

long
fs_cfg_test_clock_offset_ms(const struct fs_cfg *cfg)
{
	const char *s = cfg->value[FS_CFG_TEST_CLOCK_OFFSET_MS];
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno != 0 || end == s || *end != '\0' ? LONG_MIN : v;
}

int
fs_cfg_datapath(const struct fs_cfg *cfg, const char *rel, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", cfg->value[FS_CFG_DATADIR], rel);

	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

const char *
fs_cfg_name(enum fs_cfg_key k)
{
	return cfg_table[k].name;
}

const char *
fs_cfg_meaning(enum fs_cfg_key k)
{
	return cfg_table[k].meaning;
}

const char *
fs_cfg_default(enum fs_cfg_key k)
{
	return cfg_table[k].def;
}
