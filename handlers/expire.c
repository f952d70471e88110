/*
 * flashsale-expire: gives back the units that nobody will pay for.
 *
 * One run expires every overdue PENDING order (the units return after the
 * commit), then sweeps the holds: ghosts (a hold whose order never reached
 * the database, older than FLASHSALE_HOLD_MAX_AGE) and holds of orders that
 * are closed already; and asks the payment provider again for the refunds
 * it refused or did not answer, with backoff (FLASHSALE_REFUND_BACKOFF), so
 * that no refund owed waits for a webhook that will never come again. It
 * prints the counts as JSON.
 *
 * Started by cron (stdin is not a socket) it runs once. Started by
 * spawn-fcgi it serves POST /api/flash-sales/admin/expire, for operators
 * only: the X-Expire-Token header must equal FLASHSALE_EXPIRE_TOKEN (an
 * empty token turns the endpoint off). Any number of runs may overlap.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "cfg.h"
#include "expiry.h"
#include "fcgi.h"
#include "ordertopic.h"
#include "log.h"
#include "metrics.h"
#include "payments.h"
#include "provider.h"
#include "stores.h"

#define EXPIRE_PATH "/api/flash-sales/admin/expire"

struct app {
	struct fs_cfg cfg;
	struct fs_stores stores;
	fs_expiry expiry;
	fs_provider *provider; /* NULL without FLASHSALE_PAYMENT_URL: no refund retried */
	unsigned char token_hash[crypto_generichash_BYTES];
	int token_set;
};

static const char retry_header[] = "Retry-After: 5\r\n";

/* True when fd 0 is a listening socket: spawn-fcgi started us. */
static int
under_fastcgi(void)
{
	int listening = 0;
	socklen_t len = sizeof(listening);

	return getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
}

/*
 * The consumer's backlog per partition, read once per run before the sweep
 * (the sweep's cut-off is taken from it): an old unconfirmed hold is a
 * ghost only when its item's partition had nothing left to record, else
 * its order may still be on its way (the consumer down or behind). NULL
 * when it could not be read: then no ghost is swept.
 */
static const struct fs_ordertopic_backlog *
read_backlog(struct app *app, struct fs_ordertopic_backlog *b)
{
	const char *brokers = fs_cfg_get(&app->cfg, FS_CFG_KAFKA_BROKERS);
	fs_ordertopic topic;
	char err[256];
	long long lag;

	if (*brokers == '\0') {
		fs_log_warn("FLASHSALE_KAFKA_BROKERS is not set: ghost holds are not swept");
		return NULL;
	}
	if (fs_ordertopic_init(&topic, brokers, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC), err,
		sizeof(err)) != 0 ||
	    fs_ordertopic_backlog(&topic, 5000, b, err, sizeof(err)) != 0) {
		fs_log_warn("consumer lag unknown (%s): ghost holds wait", err);
		return NULL;
	}
	if ((lag = fs_ordertopic_backlog_total(b)) > 0)
		fs_log_info("%lld order messages not yet recorded: ghost holds of their partitions wait",
		    lag);
	return b;
}

/* The refunds owed whose wait is over, asked of the provider again. 0, or -1 (logged). */
static int
retry_refunds(struct app *app, struct fs_payments_retry_counts *c)
{
	memset(c, 0, sizeof(*c));
	if (app->provider == NULL)
		return 0;
	if (fs_payments_retry_refunds(app->stores.pg, app->provider,
		fs_cfg_long(&app->cfg, FS_CFG_REFUND_BACKOFF),
		fs_cfg_long(&app->cfg, FS_CFG_REFUND_ALERT_AFTER), c) != FS_PAYMENTS_OK) {
		fs_log_error("refunds owed: %s", app->stores.pg->errstr);
		return -1;
	}
	fs_metrics_add(FS_M_REFUNDS_RETRIED, c->tried);
	fs_metrics_add(FS_M_REFUNDS_RETRIED_MADE, c->refunded);
	return 0;
}

/*
 * The run's counts as one JSON object: the expiry's (lib/expiry), then the
 * refunds' ("refundsTried", "refundsMade", "refundsFailed", "refundsFailing").
 * Its length, or -1 when out is too small.
 */
static int
counts_json(const struct fs_expiry_counts *e, const struct fs_payments_retry_counts *r, char *out,
    size_t outlen)
{
	int n = fs_expiry_counts_json(e, out, outlen), m;

	if (n < 2)
		return -1;
	m = snprintf(out + n - 1, outlen - (size_t)(n - 1),
	    ",\"refundsTried\":%lu,\"refundsMade\":%lu,\"refundsFailed\":%lu,\"refundsFailing\":%lu}",
	    r->tried, r->refunded, r->failed, r->alerting);
	return m < 0 || (size_t)m >= outlen - (size_t)(n - 1) ? -1 : n - 1 + m;
}

/* One whole run; writes the counts as JSON into out. 0, or -1 (errors logged). */
static int
run_once(struct app *app, char *out, size_t outlen)
{
	struct fs_ordertopic_backlog backlog;
	struct fs_expiry_counts counts;
	struct fs_payments_retry_counts refunds;
	int rc = 0;

	memset(&counts, 0, sizeof(counts));
	if (fs_expiry_expire(&app->expiry, &counts) != 0) {
		fs_log_error("%s", app->expiry.errstr);
		rc = -1;
	}
	/* The sweep runs even when the expiry failed: ghosts need no expiry. */
	if (fs_expiry_sweep(&app->expiry, read_backlog(app, &backlog), &counts) != 0) {
		fs_log_error("%s", app->expiry.errstr);
		rc = -1;
	}
	if (retry_refunds(app, &refunds) != 0)
		rc = -1;
	fs_metrics_count(rc == 0 ? FS_M_EXPIRY_RUNS : FS_M_EXPIRY_FAILURES);
	fs_metrics_add(FS_M_ORDERS_EXPIRED, counts.expired);
	fs_metrics_add(FS_M_GHOSTS_SWEPT, counts.ghosts);
	if (counts_json(&counts, &refunds, out, outlen) < 0)
		snprintf(out, outlen, "{}");
	if (counts.expired > 0 || counts.ghosts > 0 || counts.repaired > 0 || refunds.tried > 0)
		fs_log_info("%s", out);
	return rc;
}

/*
 * Compares the request's token with the configured one through their
 * hashes, so the comparison takes the same time whatever the lengths.
 */
static int
token_ok(struct app *app, const char *given)
{
	unsigned char h[crypto_generichash_BYTES];

	if (!app->token_set || given == NULL)
		return 0;
	crypto_generichash(h, sizeof(h), (const unsigned char *)given, strlen(given), NULL, 0);
	return sodium_memcmp(h, app->token_hash, sizeof(h)) == 0;
}

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	const char *doc = fs_fcgi_param(fcgi, "DOCUMENT_URI");
	char body[512];

	if (doc == NULL || strcmp(doc, EXPIRE_PATH) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_NOT_FOUND, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	if (!token_ok(app, fs_fcgi_param(fcgi, "HTTP_X_EXPIRE_TOKEN"))) {
		fs_fcgi_error(fcgi, FS_ERR_FORBIDDEN, NULL, NULL);
		return;
	}
	if (run_once(app, body, sizeof(body)) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, retry_header);
		return;
	}
	fs_fcgi_answer(fcgi, FS_HTTP_OK, NULL, body, strlen(body));
}

/* GET /readyz: PostgreSQL and Redis answer. */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct app *app = arg;

	return fs_stores_ready(&app->stores, why, whylen);
}

static int
setup_app(struct app *app)
{
	const char *token;
	char err[512];
	long age;

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_PG)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	age = fs_cfg_long(&app->cfg, FS_CFG_HOLD_MAX_AGE); /* checked by fs_cfg_load */
	if (fs_stores_open(&app->stores, &app->cfg, err, sizeof(err)) != 0) {
		fs_log_error("%s", err);
		return -1;
	}
	token = fs_cfg_get(&app->cfg, FS_CFG_EXPIRE_TOKEN);
	if (*token != '\0') {
		crypto_generichash(app->token_hash, sizeof(app->token_hash),
		    (const unsigned char *)token, strlen(token), NULL, 0);
		app->token_set = 1;
	}
	fs_expiry_init(&app->expiry, app->stores.pg, app->stores.stock, app->stores.push, age);
	if (*fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_URL) == '\0') {
		fs_log_warn("FLASHSALE_PAYMENT_URL is not set: refunds owed are not retried");
		return 0;
	}
	if ((app->provider = fs_provider_new(fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_URL),
		 fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_API_KEY), err, sizeof(err))) == NULL) {
		fs_log_error("payment provider: %s", err);
		return -1;
	}
	sodium_memzero(app->cfg.value[FS_CFG_PAYMENT_API_KEY], sizeof(app->cfg.value[FS_CFG_PAYMENT_API_KEY]));
	return 0;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_stores_close(&app->stores);
	fs_provider_free(app->provider);
	app->provider = NULL;
	sodium_memzero(app->cfg.value[FS_CFG_EXPIRE_TOKEN],
	    sizeof(app->cfg.value[FS_CFG_EXPIRE_TOKEN]));
}

static int
setup(void *arg)
{
	struct app *app = arg;

	if (sodium_init() < 0) {
		fs_log_error("libsodium failed to start");
		return -1;
	}
	if (setup_app(app) != 0)
		return -1;
	if (!app->token_set)
		fs_log_warn("FLASHSALE_EXPIRE_TOKEN is empty: the endpoint refuses every request");
	return 1;
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-expire", setup, teardown, NULL, NULL, handle, ready, 0, NULL
	};
	static struct app app;
	char body[512];
	int rc = 1;

	if (under_fastcgi())
		return fs_fcgi_serve(&service, &app);
	/* Run by cron: one pass, its counts on standard output. */
	fs_log_init("flashsale-expire");
	fs_metrics_open("flashsale-expire");
	if (sodium_init() >= 0 && setup_app(&app) == 0) {
		rc = run_once(&app, body, sizeof(body)) == 0 ? 0 : 1;
		printf("%s\n", body);
	}
	teardown(&app);
	return rc;
}
