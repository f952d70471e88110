/*
 * Unit test of lib/payments against a real PostgreSQL and Redis
 * (tests/unit/sale_fixture.h) and the stack's payment provider simulator
 * (deploy/provider/flashsale-provider, on a loopback port of its own): one
 * checkout session per order; events applied once each; a payment the
 * order cannot take is refunded through the provider; the payment rules'
 * check. Exact statuses, payment states and row counts throughout.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "payments.h"
#include "expect.h"
#include "sale_fixture.h"

#define API_KEY "unit_test_api_key_0123456789"
#define SHOP "http://127.0.0.1:9/shop"

struct provider_server {
	pid_t pid;
	char url[64];
};

/* The simulator's base URL: its pages' URLs start with it. */
static char provider_url[64];

/*
 * Starts the simulator on a loopback port below the ephemeral range and
 * outside the stacks' (10000-16999, by our PID; the next on a clash) and
 * polls /healthz (10 s). Webhooks go to the discard port: nobody listens.
 */
static int
provider_start(struct provider_server *p, const char *bindir)
{
	struct timespec step = { 0, 20 * 1000000L };
	char bin[512], listen_at[32];

	snprintf(bin, sizeof(bin), "%s/deploy/provider/flashsale-provider", bindir);
	for (int attempt = 0; attempt < 5; attempt++) {
		int port = 10000 + (int)((getpid() + attempt * 997) % 7000);

		snprintf(listen_at, sizeof(listen_at), "127.0.0.1:%d", port);
		snprintf(p->url, sizeof(p->url), "http://%s", listen_at);
		if ((p->pid = fork()) < 0)
			return -1;
		if (p->pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			if (freopen("/dev/null", "w", stderr) == NULL ||
			    setenv("FLASHSALE_PROVIDER_LISTEN", listen_at, 1) != 0 ||
			    setenv("FLASHSALE_PROVIDER_PUBLIC_URL", p->url, 1) != 0 ||
			    setenv("FLASHSALE_PROVIDER_WEBHOOK_URL", "http://127.0.0.1:9/webhook", 1) != 0 ||
			    setenv("FLASHSALE_PAYMENT_API_KEY", API_KEY, 1) != 0 ||
			    setenv("FLASHSALE_PAYMENT_WEBHOOK_SECRET", "unit-test-webhook-secret", 1) != 0)
				_exit(126);
			execl(bin, "flashsale-provider", "serve", (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 500; i++) {
			struct fs_httpc_answer a;
			char url[128], err[128];
			int up;

			snprintf(url, sizeof(url), "%s/healthz", p->url);
			if (fs_httpc_request("GET", url, 500, &a, err, sizeof(err)) == 0) {
				up = a.status == 200;
				fs_httpc_answer_free(&a);
			} else
				up = 0;
			if (up)
				return 0;
			if (waitpid(p->pid, NULL, WNOHANG) == p->pid)
				break; /* the port was taken: try the next */
			nanosleep(&step, NULL);
		}
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = -1;
	return -1;
}

static void
provider_stop(struct provider_server *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGTERM);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = -1;
}

/* The shopper presses Pay on the provider's hosted page of redirect. */
static int
press_pay(const char *redirect)
{
	struct fs_httpc_answer a;
	char url[FS_PROVIDER_URL_MAX + 16], err[128];
	int ok;

	snprintf(url, sizeof(url), "%s/pay", redirect);
	if (fs_httpc_request("POST", url, 3000, &a, err, sizeof(err)) != 0)
		return -1;
	ok = a.status == 303;
	fs_httpc_answer_free(&a);
	return ok ? 0 : -1;
}

/* The event the provider would send about the order's payment. */
static int
event_of(struct fixture *f, const char *order_id, const char *event_id,
    enum fs_provider_event_type type, int64_t amount, struct fs_provider_event *ev)
{
	const char *params[1] = { order_id };
	PGresult *r = fs_pg_exec(f->pg, "SELECT payment_id, session_id FROM payments "
	    "WHERE order_id = $1", 1, params);
	int ok = r != NULL && PQntuples(r) == 1;

	memset(ev, 0, sizeof(*ev));
	if (ok) {
		snprintf(ev->id, sizeof(ev->id), "%s", event_id);
		ev->type = type;
		ev->created = fs_clock_now_ms() / 1000;
		snprintf(ev->payment, sizeof(ev->payment), "%s", PQgetvalue(r, 0, 0));
		snprintf(ev->session, sizeof(ev->session), "%s", PQgetvalue(r, 0, 1));
		snprintf(ev->order, sizeof(ev->order), "%s", order_id);
		ev->amount_minor = amount;
		snprintf(ev->currency, sizeof(ev->currency), "VND");
	}
	PQclear(r);
	return ok ? 0 : -1;
}

/* The state of the order's payment ("" when none). */
static const char *
payment_state(struct fixture *f, const char *order_id)
{
	return fixture_text(f, "SELECT state FROM payments WHERE order_id = $1", order_id);
}

struct problems {
	size_t n;
	char first[128];
};

static void
note_problem(void *arg, const char *order_id, const char *problem)
{
	struct problems *p = arg;

	if (p->n++ == 0)
		snprintf(p->first, sizeof(p->first), "%s", order_id);
	printf("#   %s: %s\n", order_id, problem);
}

static size_t
problems(struct fixture *f, struct problems *p)
{
	size_t n = 99;

	memset(p, 0, sizeof(*p));
	if (fs_payments_check(f->pg, note_problem, p, &n) != FS_PAYMENTS_OK)
		return 99;
	return n;
}

static void
test_checkout(struct fixture *f, fs_provider *prov, const struct fs_order *o,
    char redirect[FS_PROVIDER_URL_MAX + 1])
{
	char again[FS_PROVIDER_URL_MAX + 1];
	enum fs_order_status st = FS_ORDER_STATUS__MAX;

	check(fs_payments_checkout(f->pg, prov, o->id, "u1", SHOP, redirect, &st) == FS_PAYMENTS_OK &&
	    strncmp(redirect, provider_url, strlen(provider_url)) == 0 &&
	    strlen(redirect) > strlen(provider_url) &&
	    strcmp(payment_state(f, o->id), "OPEN") == 0,
	    "checkout: a session at the provider, its page's URL, one OPEN payment");
	check(fs_payments_checkout(f->pg, prov, o->id, "u1", SHOP, again, &st) == FS_PAYMENTS_OK &&
	    strcmp(again, redirect) == 0 &&
	    fixture_long(f, "SELECT count(*) FROM payments WHERE order_id = $1", o->id) == 1,
	    "checkout: again, the same page and still one payment");
	check(fs_payments_checkout(f->pg, prov, o->id, "u2", SHOP, again, &st) ==
	    FS_PAYMENTS_NOT_FOUND && fs_payments_checkout(f->pg, prov,
	    "01900000-0000-7000-8000-000000000009", "u1", SHOP, again, &st) == FS_PAYMENTS_NOT_FOUND,
	    "checkout: another shopper's order, or none, is not found");
}

static void
test_pay(struct fixture *f, fs_provider *prov, const struct fs_order *o, const char *redirect)
{
	struct fs_provider_event ev;
	enum fs_payment_verdict v = FS_PAYMENT_VERDICT__MAX;
	enum fs_order_status st = FS_ORDER_STATUS__MAX;
	struct fs_order got;
	char again[FS_PROVIDER_URL_MAX + 1];
	struct problems p;

	check(press_pay(redirect) == 0 && event_of(f, o->id, "evt_mismatch",
	    FS_PROVIDER_PAYMENT_SUCCEEDED, 1, &ev) == 0 &&
	    fs_payments_apply(f->pg, &ev, &v, &got) == FS_PAYMENTS_MISMATCH &&
	    strcmp(fixture_status(f, o->id), "PENDING") == 0 &&
	    strcmp(payment_state(f, o->id), "OPEN") == 0,
	    "apply: an amount other than the item's price changes nothing");
	check(event_of(f, o->id, "evt_paid", FS_PROVIDER_PAYMENT_SUCCEEDED, 1990000, &ev) == 0 &&
	    fs_payments_apply(f->pg, &ev, &v, &got) == FS_PAYMENTS_OK && v == FS_PAYMENT_PAID &&
	    got.status == FS_ORDER_PAID && strcmp(got.id, o->id) == 0 &&
	    strcmp(fixture_status(f, o->id), "PAID") == 0 &&
	    strcmp(payment_state(f, o->id), "SUCCEEDED") == 0,
	    "apply: payment.succeeded makes the order PAID and the payment SUCCEEDED");
	check(fs_payments_apply(f->pg, &ev, &v, &got) == FS_PAYMENTS_OK &&
	    v == FS_PAYMENT_DUPLICATE && strcmp(fixture_status(f, o->id), "PAID") == 0 &&
	    fixture_long(f, "SELECT count(*) FROM payment_events WHERE payment_id = $1",
	    ev.payment) == 1, "apply: the same event again is a duplicate, recorded once");
	check(fs_payments_checkout(f->pg, prov, o->id, "u1", SHOP, again, &st) ==
	    FS_PAYMENTS_NOT_PENDING && st == FS_ORDER_PAID,
	    "checkout: a PAID order has no checkout; its status is said");
	check(problems(f, &p) == 0, "check: no payment rule broken");
}

/* A payment that comes for an order that cancelled meanwhile is refunded. */
static void
test_refund(struct fixture *f, fs_provider *prov, struct fs_order *o)
{
	char redirect[FS_PROVIDER_URL_MAX + 1];
	enum fs_order_status st;
	enum fs_payment_verdict v = FS_PAYMENT_VERDICT__MAX;
	struct fs_provider_event ev;
	struct fs_order got;
	struct problems p;

	check(fs_payments_checkout(f->pg, prov, o->id, "u2", SHOP, redirect, &st) == FS_PAYMENTS_OK &&
	    press_pay(redirect) == 0 && fs_orders_cancel(f->pg, o) == FS_ORDERS_OK &&
	    o->status == FS_ORDER_CANCELLED,
	    "refund: u2 opens a checkout, pays at the provider, and the order is cancelled");
	check(event_of(f, o->id, "evt_late", FS_PROVIDER_PAYMENT_SUCCEEDED, 1990000, &ev) == 0 &&
	    fs_payments_apply(f->pg, &ev, &v, &got) == FS_PAYMENTS_OK && v == FS_PAYMENT_REFUND &&
	    strcmp(fixture_status(f, o->id), "CANCELLED") == 0 &&
	    strcmp(payment_state(f, o->id), "REFUND_PENDING") == 0,
	    "refund: the late payment's verdict is a refund; the order stays CANCELLED");
	check(problems(f, &p) == 1 && strcmp(p.first, o->id) == 0,
	    "check: the refund owed is the one rule broken, naming the order");
	check(fs_payments_refund(f->pg, prov, &ev) == FS_PAYMENTS_OK &&
	    strcmp(payment_state(f, o->id), "REFUNDED") == 0 &&
	    fs_payments_refund(f->pg, prov, &ev) == FS_PAYMENTS_OK &&
	    strcmp(payment_state(f, o->id), "REFUNDED") == 0,
	    "refund: through the provider, REFUNDED; a second refund changes nothing");
	check(problems(f, &p) == 0, "check: nothing owed any more");
}

static void
test_declined(struct fixture *f, fs_provider *prov, const struct fs_order *o)
{
	char redirect[FS_PROVIDER_URL_MAX + 1];
	enum fs_order_status st;
	enum fs_payment_verdict v = FS_PAYMENT_VERDICT__MAX;
	struct fs_provider_event ev;
	struct fs_order got;

	check(fs_payments_checkout(f->pg, prov, o->id, "u3", SHOP, redirect, &st) == FS_PAYMENTS_OK &&
	    event_of(f, o->id, "evt_declined", FS_PROVIDER_PAYMENT_FAILED, 1990000, &ev) == 0 &&
	    fs_payments_apply(f->pg, &ev, &v, &got) == FS_PAYMENTS_OK && v == FS_PAYMENT_DECLINED &&
	    strcmp(fixture_status(f, o->id), "PENDING") == 0 &&
	    strcmp(payment_state(f, o->id), "FAILED") == 0,
	    "apply: payment.failed leaves the order PENDING (the shopper may pay again)");
}

int
main(void)
{
	const char *bindir = getenv("FLASHSALE_BINDIR");
	struct provider_server ps = { -1, "" };
	char redirect[FS_PROVIDER_URL_MAX + 1], err[256];
	struct fixture f;
	struct fs_order o[3];
	fs_provider *prov = NULL;
	uint64_t sale, item;
	int ok = 1;

	check(strcmp(fs_payments_strerror(FS_PAYMENTS_MISMATCH), "") != 0 &&
	    strcmp(fs_payments_verdict_name(FS_PAYMENT_REFUND), "") != 0,
	    "every result and verdict has a name");
	err[0] = '\0';
	if (bindir == NULL || fixture_start(&f, getenv("top_srcdir")) != 0 ||
	    provider_start(&ps, bindir) != 0 ||
	    (prov = fs_provider_new(ps.url, API_KEY, err, sizeof(err))) == NULL ||
	    fixture_sale(&f, -5, 3600, 600, 5, &sale, &item) != 0) {
		printf("Bail out! needs FLASHSALE_BINDIR (the provider simulator), top_srcdir, "
		       "PostgreSQL 15 and redis-server (%s; provider %s)\n", err,
		    ps.pid > 0 ? ps.url : "not started");
		provider_stop(&ps);
		fixture_finish(&f);
		return 1;
	}
	snprintf(provider_url, sizeof(provider_url), "%s/", ps.url);
	for (int i = 0; i < 3; i++) {
		char user[8];

		snprintf(user, sizeof(user), "u%d", i + 1);
		ok &= fixture_buy(&f, sale, item, user, 0, 1, &o[i]) == 0;
	}
	check(ok, "three PENDING orders of 1,990,000 VND each");
	test_checkout(&f, prov, &o[0], redirect);
	test_pay(&f, prov, &o[0], redirect);
	test_refund(&f, prov, &o[1]);
	test_declined(&f, prov, &o[2]);
	fs_provider_free(prov);
	provider_stop(&ps);
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}
