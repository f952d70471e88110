/*
 * flashsale-provider: a payment provider simulator for the local stack,
 * the demo and the tests (not part of the product). It speaks the wire
 * formats of lib/provider.h from the provider's side:
 *
 *   POST /v1/checkout/sessions   (API key) opens a session, idempotent by
 *                                Idempotency-Key; {"id","paymentId","url"}
 *   GET  /checkout/{id}          the hosted page: amount, Pay, Decline
 *   POST /checkout/{id}/pay      the payment succeeds (until the session
 *                                expires), 303 back to the shop
 *   POST /checkout/{id}/decline  the payment fails, 303 back to the shop
 *   POST /v1/refunds             (API key) refunds a payment once, idempotent
 *   GET  /v1/payments/{id}       (API key) {"status","refunds","refundsRefused",
 *                                "deliveries","attempts"}
 *   POST /v1/test/mode           (API key) {"delayMs","duplicate","reorder","drop",
 *                                "refuseRefunds"}: how the next webhooks travel,
 *                                and how many refund requests to come are refused
 *                                (503, as a provider in trouble answers)
 *   GET  /healthz
 *
 * Webhooks go to the shop signed (Provider-Signature), from a thread of
 * their own, retried with exponential backoff (250 ms doubling, 8 tries)
 * until the shop answers 2xx.
 *
 *   flashsale-provider serve     environment: FLASHSALE_PROVIDER_LISTEN
 *                                (127.0.0.1:PORT), FLASHSALE_PROVIDER_PUBLIC_URL,
 *                                FLASHSALE_PROVIDER_WEBHOOK_URL (http://IPv4:PORT/path),
 *                                FLASHSALE_PAYMENT_API_KEY,
 *                                FLASHSALE_PAYMENT_WEBHOOK_SECRET
 *   flashsale-provider sign [T]  prints the signature header value of the
 *                                body on stdin at time T (now), for tests
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "httpc.h"
#include "jsonread.h"
#include "provider.h"

#define SESSIONS_MAX	20000
#define QUEUE_MAX	4096
#define REQ_MAX		8192
#define MAX_ATTEMPTS	8
#define BACKOFF_MS	250

enum state { OPEN, PAID, DECLINED };

struct session {
	char id[FS_PROVIDER_ID_MAX + 1];
	char payment[FS_PROVIDER_ID_MAX + 1];
	char order[37];
	char currency[4];
	char return_url[FS_PROVIDER_URL_MAX + 1];
	char refund[FS_PROVIDER_ID_MAX + 1];
	int64_t amount, expires_ms;
	enum state state;
	int refunds, refused, deliveries, attempts, events;
};

struct delivery {
	char body[1024];
	size_t len;
	int64_t due_ms;
	int attempt;
	int held;	/* reorder: waits for the next event */
	struct session *s;
};

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct session *sessions;
	int nsessions;
	struct delivery queue[QUEUE_MAX];
	int nqueue;
	int64_t delay_ms;
	int duplicate, reorder, drop;
	int refuse_refunds;	/* refund requests still to be refused */
	char public_url[256];
	char hook_host[64], hook_path[256];
	int hook_port;
	char api_key[128];
	char secret[FS_PROVIDER_SECRET_MAX + 1];
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "flashsale-provider: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* --- webhooks ---------------------------------------------------------- */

/* Queues one event of s (under g.mu), as the test mode says. */
static void
queue_event(struct session *s, enum fs_provider_event_type type)
{
	struct fs_provider_event ev;
	int copies = 1 + g.duplicate, n;
	char body[1024];

	memset(&ev, 0, sizeof(ev));
	s->events++;
	snprintf(ev.id, sizeof(ev.id), "evt_%s_%d", s->payment, s->events);
	ev.type = type;
	ev.created = now_ms() / 1000;
	snprintf(ev.payment, sizeof(ev.payment), "%s", s->payment);
	snprintf(ev.session, sizeof(ev.session), "%s", s->id);
	snprintf(ev.order, sizeof(ev.order), "%s", s->order);
	ev.amount_minor = s->amount;
	snprintf(ev.currency, sizeof(ev.currency), "%s", s->currency);
	if ((n = fs_provider_event_json(&ev, body, sizeof(body))) < 0)
		return;
	if (g.drop) {
		say("dropped %s (%s)", ev.id, fs_provider_event_type_name(type));
		return;
	}
	for (int c = 0; c < copies && g.nqueue < QUEUE_MAX; c++) {
		struct delivery *d = &g.queue[g.nqueue++];

		memcpy(d->body, body, (size_t)n);
		d->len = (size_t)n;
		d->attempt = 0;
		d->s = s;
		d->due_ms = now_ms() + g.delay_ms;
		d->held = 0;
	}
	if (g.reorder) {
		int held = -1;

		for (int i = 0; i < g.nqueue - copies; i++)
			if (g.queue[i].held)
				held = i;
		if (held >= 0) {
			/* The newer event goes first, the held one right after. */
			g.queue[held].held = 0;
			g.queue[held].due_ms = now_ms() + g.delay_ms + 300;
		} else {
			for (int i = g.nqueue - copies; i < g.nqueue; i++)
				g.queue[i].held = 1;
		}
	}
	pthread_cond_signal(&g.cv);
}

/* POSTs one signed event; the shop's HTTP status, or 0 when none came. */
static int
post_event(const char *body, size_t len)
{
	char sig[FS_PROVIDER_SIG_MAX], url[FS_HTTPC_URL_MAX + 1], headers[FS_PROVIDER_SIG_MAX + 64],
	    why[128];
	struct fs_httpc_answer a;
	int status;

	if (fs_provider_sign(g.secret, strlen(g.secret), now_ms() / 1000, body, len, sig, sizeof(sig)) < 0)
		return 0;
	snprintf(url, sizeof(url), "http://%s:%d%s", g.hook_host, g.hook_port, g.hook_path);
	snprintf(headers, sizeof(headers), "Content-Type: application/json\r\nProvider-Signature: %s\r\n",
	    sig);
	if (fs_httpc_send("POST", url, headers, body, len, 5000, &a, why, sizeof(why)) != 0)
		return 0;
	status = a.status;
	fs_httpc_answer_free(&a);
	return status;
}

/* Sends due events, one at a time, retrying failures with backoff. */
static void *
deliver(void *unused)
{
	(void)unused;
	pthread_mutex_lock(&g.mu);
	for (;;) {
		int64_t now = now_ms(), next = now + 1000;
		int pick = -1;

		for (int i = 0; i < g.nqueue; i++) {
			/* A held event that nothing overtook goes out after 10 s. */
			int64_t due = g.queue[i].held ? g.queue[i].due_ms + 10000 : g.queue[i].due_ms;

			if (due <= now && (pick < 0 || due < g.queue[pick].due_ms))
				pick = i;
			else if (due < next)
				next = due;
		}
		if (pick < 0) {
			struct timespec ts = { (time_t)(next / 1000), (long)(next % 1000) * 1000000 };

			pthread_cond_timedwait(&g.cv, &g.mu, &ts);
			continue;
		}
		struct delivery d = g.queue[pick];

		g.queue[pick] = g.queue[--g.nqueue];
		pthread_mutex_unlock(&g.mu);
		int status = post_event(d.body, d.len);
		pthread_mutex_lock(&g.mu);
		d.s->attempts++;
		if (status >= 200 && status <= 299) {
			d.s->deliveries++;
		} else if (++d.attempt < MAX_ATTEMPTS && g.nqueue < QUEUE_MAX) {
			say("webhook answered %d; retry %d in %d ms", status, d.attempt,
			    BACKOFF_MS << (d.attempt - 1));
			d.due_ms = now_ms() + (BACKOFF_MS << (d.attempt - 1));
			d.held = 0;
			g.queue[g.nqueue++] = d;
		} else {
			say("webhook given up after %d attempts: %.*s", d.attempt, (int)d.len, d.body);
		}
	}
	return NULL;
}

/* --- HTTP ------------------------------------------------------------- */

struct req {
	char method[8];
	char path[512];
	char auth[256];
	char idem[128];
	char *body;
	size_t len;
};

static void
reply(int fd, int status, const char *type, const char *extra, const char *body)
{
	char head[1024];
	const char *text = status == 200 ? "OK" : status == 303 ? "See Other" :
	    status == 400 ? "Bad Request" : status == 401 ? "Unauthorized" :
	    status == 404 ? "Not Found" : status == 409 ? "Conflict" : status == 410 ? "Gone" :
	    status == 413 ? "Payload Too Large" : "Error";
	size_t len = strlen(body);
	int n = snprintf(head, sizeof(head),
	    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
	    "Connection: close\r\n%s\r\n",
	    status, text, type, len, extra == NULL ? "" : extra);

	if (send(fd, head, (size_t)n, MSG_NOSIGNAL) == n)
		(void)!send(fd, body, len, MSG_NOSIGNAL);
}

static void
json(int fd, int status, const char *body)
{
	reply(fd, status, "application/json", NULL, body);
}

/* Reads one request (head and Content-Length body, REQ_MAX in all); -1 on nonsense. */
static int
read_req(int fd, char *buf, struct req *rq)
{
	size_t got = 0, need = 0;
	char *end = NULL, *line, *save;
	ssize_t r;

	memset(rq, 0, sizeof(*rq));
	while (got < REQ_MAX) {
		if ((r = recv(fd, buf + got, REQ_MAX - got, 0)) <= 0)
			return -1;
		got += (size_t)r;
		buf[got] = '\0';
		if (end == NULL && (end = strstr(buf, "\r\n\r\n")) != NULL) {
			char *cl = strcasestr(buf, "\r\ncontent-length:");

			need = (size_t)(end + 4 - buf) + (cl != NULL && cl < end ? strtoul(cl + 17, NULL, 10) : 0);
			if (need > REQ_MAX)
				return -1;
		}
		if (end != NULL && got >= need)
			break;
	}
	if (end == NULL)
		return -1;
	*end = '\0';
	rq->body = end + 4;
	rq->len = need - (size_t)(end + 4 - buf);
	rq->body[rq->len] = '\0';
	line = strtok_r(buf, "\r\n", &save);
	if (line == NULL || sscanf(line, "%7s %511s", rq->method, rq->path) != 2)
		return -1;
	while ((line = strtok_r(NULL, "\r\n", &save)) != NULL) {
		if (strncasecmp(line, "Authorization: ", 15) == 0)
			snprintf(rq->auth, sizeof(rq->auth), "%s", line + 15);
		else if (strncasecmp(line, "Idempotency-Key: ", 17) == 0)
			snprintf(rq->idem, sizeof(rq->idem), "%s", line + 17);
	}
	return 0;
}

static int
authorised(const struct req *rq)
{
	char want[160];

	snprintf(want, sizeof(want), "Bearer %s", g.api_key);
	return strlen(rq->auth) == strlen(want) &&
	    sodium_memcmp(rq->auth, want, strlen(want)) == 0;
}

static struct session *
find(const char *what, int by_payment)
{
	for (int i = 0; i < g.nsessions; i++)
		if (strcmp(by_payment ? g.sessions[i].payment : g.sessions[i].id, what) == 0)
			return &g.sessions[i];
	return NULL;
}

static void
session_json(int fd, const struct session *s)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"id\":\"%s\",\"paymentId\":\"%s\",\"url\":\"%s/checkout/%s\"}",
	    s->id, s->payment, g.public_url, s->id);
	json(fd, 200, body);
}

static void
open_session(int fd, const struct req *rq)
{
	const char *order, *currency, *ret;
	char why[64];
	int64_t amount, expires;
	json_object *doc;
	struct session *s;

	if ((doc = fs_jsonread_object(rq->body, rq->len, 3, why, sizeof(why))) == NULL) {
		json(fd, 400, "{\"error\":\"bad json\"}");
		return;
	}
	order = fs_jsonread_string(doc, "orderId", 36);
	currency = fs_jsonread_string(doc, "currency", 3);
	ret = fs_jsonread_string(doc, "returnUrl", FS_PROVIDER_URL_MAX);
	if (order == NULL || currency == NULL || ret == NULL || strlen(currency) != 3 ||
	    fs_jsonread_int(doc, "amountMinor", 0, INT64_MAX, &amount) != 0 ||
	    fs_jsonread_int(doc, "expiresAt", 0, INT64_MAX, &expires) != 0 ||
	    strcmp(rq->idem, order) != 0) {
		json(fd, 400, "{\"error\":\"session needs orderId (= Idempotency-Key), amountMinor, currency, expiresAt, returnUrl\"}");
		json_object_put(doc);
		return;
	}
	pthread_mutex_lock(&g.mu);
	s = NULL;
	for (int i = 0; i < g.nsessions && s == NULL; i++)
		if (strcmp(g.sessions[i].order, order) == 0)
			s = &g.sessions[i];
	if (s == NULL && g.nsessions < SESSIONS_MAX) {
		s = &g.sessions[g.nsessions++];
		memset(s, 0, sizeof(*s));
		snprintf(s->id, sizeof(s->id), "cs_%d_%08" PRIx32, g.nsessions, randombytes_random());
		snprintf(s->payment, sizeof(s->payment), "pi_%d_%08" PRIx32, g.nsessions, randombytes_random());
		snprintf(s->order, sizeof(s->order), "%s", order);
		snprintf(s->currency, sizeof(s->currency), "%s", currency);
		snprintf(s->return_url, sizeof(s->return_url), "%s", ret);
		s->amount = amount;
		s->expires_ms = expires;
		say("session %s for order %s: %" PRId64 " %s", s->id, order, amount, currency);
	}
	if (s == NULL)
		json(fd, 409, "{\"error\":\"too many sessions\"}");
	else
		session_json(fd, s);
	pthread_mutex_unlock(&g.mu);
	json_object_put(doc);
}

/* The hosted checkout page. */
static void
page(int fd, const struct session *s)
{
	char body[4096], when[64];
	time_t t = (time_t)(s->expires_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S UTC", &tm);
	snprintf(body, sizeof(body),
	    "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	    "<title>Checkout · Payment provider (simulator)</title><style>"
	    "body{font-family:system-ui,sans-serif;background:#eef1f6;margin:0;padding:2rem}"
	    "main{max-width:28rem;margin:auto;background:#fff;border-radius:12px;padding:1.5rem;"
	    "box-shadow:0 2px 12px #0002}h1{font-size:1.2rem}.amount{font-size:2rem;font-weight:700}"
	    "button{font-size:1rem;padding:.7rem 1.4rem;border-radius:8px;border:0;margin-right:.5rem;"
	    "cursor:pointer}#pay{background:#1a7f37;color:#fff}#decline{background:#ddd}"
	    ".muted{color:#666;font-size:.9rem}</style></head><body><main>"
	    "<h1>Payment provider <span class=\"muted\">(local simulator)</span></h1>"
	    "<p class=\"muted\">Order %s</p><p class=\"amount\" id=\"amount\">%" PRId64 " %s</p>"
	    "<p class=\"muted\">minor units; this session expires at %s</p>"
	    "<p id=\"state\" data-state=\"%s\">%s</p>"
	    "<form method=\"post\" action=\"/checkout/%s/pay\" style=\"display:inline\">"
	    "<button id=\"pay\" type=\"submit\">Pay</button></form>"
	    "<form method=\"post\" action=\"/checkout/%s/decline\" style=\"display:inline\">"
	    "<button id=\"decline\" type=\"submit\">Decline</button></form>"
	    "</main></body></html>",
	    s->order, s->amount, s->currency, when,
	    s->state == PAID ? "paid" : s->state == DECLINED ? "declined" : "open",
	    s->state == PAID ? "Paid." : s->state == DECLINED ? "The last attempt was declined." : "",
	    s->id, s->id);
	reply(fd, 200, "text/html; charset=utf-8", NULL, body);
}

static void
act(int fd, struct session *s, int pay)
{
	char loc[FS_PROVIDER_URL_MAX + 32];

	if (s->state == PAID) {
		/* Paid already: back to the shop, nothing new. */
	} else if (now_ms() >= s->expires_ms) {
		reply(fd, 410, "text/html; charset=utf-8", NULL,
		    "<!doctype html><title>Expired</title><p id=\"state\" data-state=\"expired\">"
		    "This checkout session has expired.</p>");
		return;
	} else {
		s->state = pay ? PAID : DECLINED;
		say("%s %s", s->payment, pay ? "succeeded" : "declined");
		queue_event(s, pay ? FS_PROVIDER_PAYMENT_SUCCEEDED : FS_PROVIDER_PAYMENT_FAILED);
	}
	snprintf(loc, sizeof(loc), "Location: %s\r\n", s->return_url);
	reply(fd, 303, "text/plain", loc, "");
}

static void
refund(int fd, const struct req *rq)
{
	const char *pid;
	char why[64];
	json_object *doc;
	struct session *s;
	int64_t amount;
	char body[256];

	if ((doc = fs_jsonread_object(rq->body, rq->len, 3, why, sizeof(why))) == NULL ||
	    (pid = fs_jsonread_string(doc, "paymentId", FS_PROVIDER_ID_MAX)) == NULL ||
	    fs_jsonread_int(doc, "amountMinor", 0, INT64_MAX, &amount) != 0) {
		json(fd, 400, "{\"error\":\"refund needs paymentId and amountMinor\"}");
		json_object_put(doc);
		return;
	}
	pthread_mutex_lock(&g.mu);
	if ((s = find(pid, 1)) == NULL || s->state != PAID) {
		json(fd, 409, "{\"error\":\"no succeeded payment by that id\"}");
	} else if (amount != s->amount) {
		json(fd, 400, "{\"error\":\"refund amount differs from the payment\"}");
	} else if (g.refuse_refunds > 0) {
		g.refuse_refunds--;
		s->refused++;
		say("refund of %s refused (test mode; %d more to refuse)", s->payment, g.refuse_refunds);
		json(fd, 503, "{\"error\":\"refunds are unavailable, try again later\"}");
	} else {
		if (s->refund[0] == '\0') {
			snprintf(s->refund, sizeof(s->refund), "re_%s", s->payment + 3);
			s->refunds++;
			say("refunded %s", s->payment);
		}
		snprintf(body, sizeof(body), "{\"id\":\"%s\",\"status\":\"succeeded\"}", s->refund);
		json(fd, 200, body);
	}
	pthread_mutex_unlock(&g.mu);
	json_object_put(doc);
}

static void
test_mode(int fd, const struct req *rq)
{
	json_object *doc, *v;
	char why[64];
	int64_t n;

	if ((doc = fs_jsonread_object(rq->body, rq->len, 2, why, sizeof(why))) == NULL) {
		json(fd, 400, "{\"error\":\"bad json\"}");
		return;
	}
	pthread_mutex_lock(&g.mu);
	g.delay_ms = fs_jsonread_int(doc, "delayMs", 0, 600000, &n) == 0 ? n : 0;
	g.duplicate = fs_jsonread_int(doc, "duplicate", 0, 20, &n) == 0 ? (int)n : 0;
	g.reorder = json_object_object_get_ex(doc, "reorder", &v) && json_object_get_boolean(v);
	g.drop = json_object_object_get_ex(doc, "drop", &v) && json_object_get_boolean(v);
	g.refuse_refunds = fs_jsonread_int(doc, "refuseRefunds", 0, 1000, &n) == 0 ? (int)n : 0;
	say("mode: delay %" PRId64 " ms, %d duplicates, reorder %d, drop %d, refuse %d refunds",
	    g.delay_ms, g.duplicate, g.reorder, g.drop, g.refuse_refunds);
	pthread_mutex_unlock(&g.mu);
	json_object_put(doc);
	json(fd, 200, "{\"ok\":true}");
}

static void
route(int fd, const struct req *rq)
{
	char id[FS_PROVIDER_ID_MAX + 1], verb[16], body[512];
	struct session *s;
	int post = strcmp(rq->method, "POST") == 0;

	if (strcmp(rq->path, "/healthz") == 0) {
		json(fd, 200, "{\"ok\":true}");
	} else if (strncmp(rq->path, "/checkout/", 10) == 0) {
		verb[0] = '\0';
		if (sscanf(rq->path + 10, "%64[A-Za-z0-9_]/%15s", id, verb) < 1) {
			reply(fd, 404, "text/plain", NULL, "no such session\n");
			return;
		}
		pthread_mutex_lock(&g.mu);
		if ((s = find(id, 0)) == NULL)
			reply(fd, 404, "text/plain", NULL, "no such session\n");
		else if (verb[0] == '\0' && !post)
			page(fd, s);
		else if (post && (strcmp(verb, "pay") == 0 || strcmp(verb, "decline") == 0))
			act(fd, s, strcmp(verb, "pay") == 0);
		else
			reply(fd, 404, "text/plain", NULL, "no such page\n");
		pthread_mutex_unlock(&g.mu);
	} else if (!authorised(rq)) {
		json(fd, 401, "{\"error\":\"bad API key\"}");
	} else if (post && strcmp(rq->path, "/v1/checkout/sessions") == 0) {
		open_session(fd, rq);
	} else if (post && strcmp(rq->path, "/v1/refunds") == 0) {
		refund(fd, rq);
	} else if (post && strcmp(rq->path, "/v1/test/mode") == 0) {
		test_mode(fd, rq);
	} else if (!post && strncmp(rq->path, "/v1/payments/", 13) == 0) {
		pthread_mutex_lock(&g.mu);
		if ((s = find(rq->path + 13, 1)) == NULL) {
			json(fd, 404, "{\"error\":\"no such payment\"}");
		} else {
			snprintf(body, sizeof(body),
			    "{\"id\":\"%s\",\"orderId\":\"%s\",\"status\":\"%s\",\"refunds\":%d,"
			    "\"refundsRefused\":%d,\"deliveries\":%d,\"attempts\":%d}",
			    s->payment, s->order,
			    s->state == PAID ? "succeeded" : s->state == DECLINED ? "failed" : "open",
			    s->refunds, s->refused, s->deliveries, s->attempts);
			json(fd, 200, body);
		}
		pthread_mutex_unlock(&g.mu);
	} else {
		json(fd, 404, "{\"error\":\"not found\"}");
	}
}

static void *
serve_one(void *arg)
{
	int fd = (int)(intptr_t)arg;
	struct timeval tv = { 5, 0 };
	static __thread char buf[REQ_MAX + 1];
	struct req rq;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (read_req(fd, buf, &rq) == 0)
		route(fd, &rq);
	else
		json(fd, 400, "{\"error\":\"malformed or too big\"}");
	close(fd);
	return NULL;
}

/* "http://IPv4:PORT/path" into the webhook target. */
static int
parse_hook(const char *url)
{
	const char *h = url + 7, *colon, *slash;

	if (strncmp(url, "http://", 7) != 0 || (colon = strchr(h, ':')) == NULL ||
	    (slash = strchr(colon, '/')) == NULL || (size_t)(colon - h) >= sizeof(g.hook_host))
		return -1;
	memcpy(g.hook_host, h, (size_t)(colon - h));
	g.hook_port = atoi(colon + 1);
	snprintf(g.hook_path, sizeof(g.hook_path), "%s", slash);
	return g.hook_port > 0 ? 0 : -1;
}

static const char *
need(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0') {
		say("%s is not set", name);
		exit(2);
	}
	return v;
}

static int
serve(void)
{
	const char *listen_at = need("FLASHSALE_PROVIDER_LISTEN");
	struct sockaddr_in sa;
	pthread_attr_t attr;
	pthread_t t;
	char host[64];
	int fd, one = 1, port;

	snprintf(g.public_url, sizeof(g.public_url), "%s", need("FLASHSALE_PROVIDER_PUBLIC_URL"));
	snprintf(g.api_key, sizeof(g.api_key), "%s", need("FLASHSALE_PAYMENT_API_KEY"));
	snprintf(g.secret, sizeof(g.secret), "%s", need("FLASHSALE_PAYMENT_WEBHOOK_SECRET"));
	if (parse_hook(need("FLASHSALE_PROVIDER_WEBHOOK_URL")) != 0 ||
	    sscanf(listen_at, "%63[0-9.]:%d", host, &port) != 2) {
		say("FLASHSALE_PROVIDER_WEBHOOK_URL is http://IPv4:PORT/path, _LISTEN IPv4:PORT");
		return 2;
	}
	if ((g.sessions = calloc(SESSIONS_MAX, sizeof(*g.sessions))) == NULL)
		return 1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
	    (fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 128) != 0) {
		say("cannot listen on %s: %s", listen_at, strerror(errno));
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, deliver, NULL) != 0)
		return 1;
	say("listening on %s, webhooks to %s:%d%s", listen_at, g.hook_host, g.hook_port, g.hook_path);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			say("accept: %s", strerror(errno));
			return 1;
		}
		if (pthread_create(&t, &attr, serve_one, (void *)(intptr_t)c) != 0)
			close(c);
	}
}

/* Signs stdin (at most FS_PROVIDER_EVENT_MAX + 1024 bytes) for tests. */
static int
sign(int argc, char **argv)
{
	static char body[FS_PROVIDER_EVENT_MAX + 1024];
	const char *secret = need("FLASHSALE_PAYMENT_WEBHOOK_SECRET");
	char out[FS_PROVIDER_SIG_MAX];
	size_t len = fread(body, 1, sizeof(body), stdin);
	int64_t t = argc > 2 ? strtoll(argv[2], NULL, 10) : now_ms() / 1000;

	if (fs_provider_sign(secret, strlen(secret), t, body, len, out, sizeof(out)) < 0)
		return 1;
	puts(out);
	return 0;
}

int
main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 1;
	if (argc >= 2 && strcmp(argv[1], "serve") == 0)
		return serve();
	if (argc >= 2 && strcmp(argv[1], "sign") == 0)
		return sign(argc, argv);
	fprintf(stderr, "usage: flashsale-provider serve | sign [T] <BODY\n");
	return 2;
}
