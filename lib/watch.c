#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "httpc.h"
#include "ordertopic.h"
#include "orders.h"
#include "watch.h"

static const char *const gate_names[FS_WATCH_GATE__MAX] = {
	[FS_WATCH_GATE_UNKNOWN] = "?",
	[FS_WATCH_GATE_OPEN] = "open",
	[FS_WATCH_GATE_SOLD_OUT] = "sold-out",
};

const char *
fs_watch_gate_name(enum fs_watch_gate g)
{
	return g >= 0 && g < FS_WATCH_GATE__MAX ? gate_names[g] : "?";
}

/* Asks one origin's nginx about one item's gate. */
static enum fs_watch_gate
ask_gate(struct fs_watch_origin *o, uint64_t item)
{
	struct fs_httpc_answer a;
	char url[FS_HTTPC_URL_MAX], by[32], err[128];
	enum fs_watch_gate g = FS_WATCH_GATE_UNKNOWN;

	snprintf(url, sizeof(url), "%s/api/flash-sales/items/%" PRIu64 "/purchase", o->url, item);
	if (fs_httpc_request("GET", url, FS_WATCH_TIMEOUT_MS, &a, err, sizeof(err)) != 0) {
		snprintf(o->error, sizeof(o->error), "%s", err);
		return g;
	}
	if (a.status == 410 && fs_httpc_header(&a, "X-Flashsale-Answered-By", by, sizeof(by)) &&
	    strcmp(by, "nginx") == 0)
		g = FS_WATCH_GATE_SOLD_OUT;
	else if (a.status == 405)
		g = FS_WATCH_GATE_OPEN;
	else
		snprintf(o->error, sizeof(o->error), "unexpected answer %d", a.status);
	fs_httpc_answer_free(&a);
	return g;
}

/* The value of label name in a label set "a=\"x\",b=\"y\"" into out; 0 or -1. */
static int
label(const char *labels, size_t len, const char *name, char *out, size_t outlen)
{
	size_t nlen = strlen(name);

	for (const char *p = labels; p < labels + len;) {
		const char *q;

		if ((size_t)(labels + len - p) > nlen + 2 && strncmp(p, name, nlen) == 0 &&
		    p[nlen] == '=' && p[nlen + 1] == '"') {
			p += nlen + 2;
			if ((q = memchr(p, '"', (size_t)(labels + len - p))) == NULL ||
			    (size_t)(q - p) >= outlen)
				return -1;
			memcpy(out, p, (size_t)(q - p));
			out[q - p] = '\0';
			return 0;
		}
		if ((q = memchr(p, ',', (size_t)(labels + len - p))) == NULL)
			break;
		p = q + 1;
	}
	return -1;
}

int
fs_watch_parse_counts(const char *text, struct fs_watch_count *counts, int max)
{
	static const char handler[] = "flashsale_http_requests_total{",
			  edge[] = "flashsale_answers_without_handler_total{";
	int n = 0;

	for (const char *line = text; line != NULL && *line != '\0' && n < max;) {
		const char *eol = strchr(line, '\n'), *close;
		size_t len = eol != NULL ? (size_t)(eol - line) : strlen(line);
		char a[24], b[24], name[32] = "";
		int is_handler = strncmp(line, handler, sizeof(handler) - 1) == 0,
		    is_edge = strncmp(line, edge, sizeof(edge) - 1) == 0;
		const char *labels = line + (is_handler ? sizeof(handler) : sizeof(edge)) - 1;

		if ((is_handler || is_edge) &&
		    (close = memchr(labels, '}', len - (size_t)(labels - line))) != NULL) {
			size_t llen = (size_t)(close - labels);

			if (is_handler && label(labels, llen, "program", a, sizeof(a)) == 0 &&
			    strcmp(a, "flashsale-purchase") == 0 &&
			    label(labels, llen, "code", b, sizeof(b)) == 0)
				snprintf(name, sizeof(name), "%s", b);
			else if (is_edge && label(labels, llen, "by", a, sizeof(a)) == 0 &&
			    label(labels, llen, "answer", b, sizeof(b)) == 0)
				snprintf(name, sizeof(name), "%s:%s", a, b);
			if (name[0] != '\0') {
				snprintf(counts[n].name, sizeof(counts[n].name), "%s", name);
				counts[n].value = strtod(close + 1, NULL);
				counts[n].rate = -1;
				n++;
			}
		}
		line = eol != NULL ? eol + 1 : NULL;
	}
	return n;
}

/* Reads an origin's counters and the rates since the frame before. */
static void
read_counts(struct fs_watch_origin *o, int64_t now_ms)
{
	struct fs_watch_count prev[FS_WATCH_COUNTS_MAX];
	struct fs_httpc_answer a;
	char url[FS_HTTPC_URL_MAX];
	int nprev = o->has_metrics ? o->ncounts : 0;
	int64_t before = o->counted_ms;

	memcpy(prev, o->counts, sizeof(prev));
	o->has_metrics = 0;
	o->ncounts = 0;
	snprintf(url, sizeof(url), "%s/metrics", o->url);
	if (fs_httpc_request("GET", url, FS_WATCH_TIMEOUT_MS, &a, o->metrics_error,
		sizeof(o->metrics_error)) != 0)
		return;
	if (a.status != 200) {
		snprintf(o->metrics_error, sizeof(o->metrics_error), "GET /metrics answered %d",
		    a.status);
		fs_httpc_answer_free(&a);
		return;
	}
	o->has_metrics = 1;
	o->metrics_error[0] = '\0';
	o->counted_ms = now_ms;
	o->ncounts = fs_watch_parse_counts(a.body, o->counts, FS_WATCH_COUNTS_MAX);
	fs_httpc_answer_free(&a);
	for (int i = 0; i < o->ncounts; i++)
		for (int j = 0; j < nprev; j++)
			if (strcmp(o->counts[i].name, prev[j].name) == 0 && now_ms > before &&
			    o->counts[i].value >= prev[j].value)
				o->counts[i].rate = (o->counts[i].value - prev[j].value) * 1000.0 /
				    (double)(now_ms - before);
}

int
fs_watch_read(fs_pg *pg, fs_stock *st, const char *brokers, const char *topic, uint64_t sale,
    struct fs_watch_frame *f, char *err, size_t errlen)
{
	f->now_ms = fs_clock_now_ms();
	if (fs_salectl_get(pg, sale, &f->sale, err, errlen) != FS_SALECTL_OK)
		return -1;
	f->state = fs_salectl_state_at(&f->sale, f->now_ms);
	if ((f->nitems = fs_sales_figures(pg, st, sale, f->items, FS_SALES_ITEMS_MAX, err, errlen)) <
	    0)
		return -1;
	f->expiring = fs_orders_count_expiring(pg, sale, FS_WATCH_EXPIRING_MS);
	if (fs_payments_refunds_owed(pg, sale, f->refund_alert_after, f->owed, FS_WATCH_OWED_MAX,
		&f->refunds_owed, &f->refunds_failing) != FS_PAYMENTS_OK)
		f->refunds_owed = -1;
	f->lag = -1;
	f->lag_error[0] = '\0';
	if (brokers == NULL)
		snprintf(f->lag_error, sizeof(f->lag_error), "no FLASHSALE_KAFKA_BROKERS");
	else
		f->lag = fs_kafka_group_lag(brokers, FS_ORDERTOPIC_GROUP, topic, FS_WATCH_KAFKA_TIMEOUT_MS,
		    f->lag_error, sizeof(f->lag_error));
	for (int o = 0; o < f->norigins; o++) {
		struct fs_watch_origin *org = &f->origins[o];

		org->error[0] = '\0';
		for (int i = 0; i < FS_WATCH_GATE_ITEMS_MAX; i++) {
			org->gate[i] = FS_WATCH_GATE_UNKNOWN;
			if (i < f->nitems && org->error[0] == '\0')
				org->gate[i] = ask_gate(org, f->items[i].item);
		}
		read_counts(org, f->now_ms);
	}
	return 0;
}
