/*
 * flashsale-admin, running a sale:
 *   sale list                     every sale (the latest 1000) and its state
 *   sale close SALE_ID            stop selling now
 *   sale extend SALE_ID SECONDS   move the end later
 *   sale watch SALE_ID [--once] [--origin URL]...
 *                                 the live view, refreshed every second
 *   dlq replay [--sale SALE_ID]   dead letters back on the order topic
 * The rules live in lib/salectl, lib/watch and lib/dlq; this file parses
 * the arguments and prints.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin_ops.h"
#include "cfg.h"
#include "clock.h"
#include "dlq.h"
#include "ordertopic.h"
#include "pg.h"
#include "route.h"
#include "salectl.h"
#include "sales.h"
#include "stock.h"
#include "watch.h"

const char admin_ops_usage[] =
    "  sale list                         every sale (the latest 1000): state, window, units\n"
    "  sale close SALE_ID                stop selling now (the sale ends at this instant)\n"
    "  sale extend SALE_ID SECONDS       move the end of a sale that has not ended\n"
    "  sale watch SALE_ID [--once] [--origin http://A.B.C.D:PORT]...\n"
    "                                    the live view, every second (--once: one frame)\n"
    "  dlq replay [--sale SALE_ID]       dead letters back on the order topic, each with its\n"
    "                                    unit taken again; idempotent\n";

/* The stores these commands use: PostgreSQL and Redis (with the scripts for a replay). */
struct stores {
	struct fs_cfg cfg;
	fs_pg *pg;
	fs_stock *stock;
};

static int
open_stores(struct stores *s, unsigned more, int scripts)
{
	char err[256];

	memset(s, 0, sizeof(*s));
	if (fs_cfg_load(&s->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_REDIS) | more) != 0)
		return fail("%s", s->cfg.errstr);
	if ((s->pg = fs_pg_new(fs_cfg_get(&s->cfg, FS_CFG_PG))) == NULL)
		return fail("%s", "out of memory or address too long");
	if ((s->stock = fs_stock_new(&s->cfg, scripts ? fs_cfg_get(&s->cfg, FS_CFG_DATADIR) : NULL,
		 err, sizeof(err))) == NULL)
		return fail("%s", err);
	return 0;
}

static void
close_stores(struct stores *s)
{
	fs_pg_free(s->pg);
	fs_stock_free(s->stock);
}

static const char *
when(int64_t ms, char buf[FS_CLOCK_TIME_LEN])
{
	fs_clock_format(ms, buf);
	return buf;
}

static int
cmd_list(void)
{
	struct fs_salectl_sale *sales = NULL;
	struct stores st;
	char err[512], t0[FS_CLOCK_TIME_LEN], t1[FS_CLOCK_TIME_LEN];
	int64_t now = fs_clock_now_ms();
	int n, rc = 1;

	if (open_stores(&st, 0, 0) != 0)
		goto out;
	if ((sales = calloc(FS_SALECTL_LIST_MAX, sizeof(*sales))) == NULL)
		goto out;
	if ((n = fs_salectl_list(st.pg, sales, FS_SALECTL_LIST_MAX, err, sizeof(err))) < 0) {
		fail("%s", err);
		goto out;
	}
	printf("%-8s %-9s %-24s %-24s %6s %5s %9s %9s %s\n", "sale", "state", "starts", "ends",
	    "window", "items", "quantity", "sold", "name");
	for (int i = 0; i < n; i++)
		printf("%-8" PRIu64 " %-9s %-24s %-24s %6ld %5ld %9ld %9ld %s\n", sales[i].id,
		    fs_salectl_state_name(fs_salectl_state_at(&sales[i], now)),
		    when(sales[i].starts_ms, t0), when(sales[i].ends_ms, t1), sales[i].window_s,
		    sales[i].items, sales[i].quantity, sales[i].sold, sales[i].name);
	rc = 0;
out:
	free(sales);
	close_stores(&st);
	return rc;
}

/* sale close / sale extend: the verdict in words, and the exit status. */
static int
say_end(enum fs_salectl_result r, const char *verb, uint64_t sale,
    const struct fs_salectl_sale *s, int64_t ends_ms, const char *err)
{
	char t0[FS_CLOCK_TIME_LEN], t1[FS_CLOCK_TIME_LEN];

	switch (r) {
	case FS_SALECTL_OK:
		printf("sale %" PRIu64 " %s: it ends at %s (it was to end at %s)\n", sale, verb,
		    when(ends_ms, t1), when(s->ends_ms, t0));
		return 0;
	case FS_SALECTL_NOT_STARTED:
		return fail("sale %" PRIu64 " has not started (it starts at %s): a sale cannot end "
			    "before it starts",
		    sale, when(s->starts_ms, t0));
	case FS_SALECTL_ALREADY_ENDED:
		if (strcmp(verb, "closed") == 0) {
			printf("sale %" PRIu64 " already ended at %s\n", sale, when(s->ends_ms, t0));
			return 0;
		}
		return fail("sale %" PRIu64 " ended at %s: an ended sale is never reopened; create "
			    "a new one",
		    sale, when(s->ends_ms, t0));
	case FS_SALECTL_BAD_SECONDS:
		return fail("SECONDS must be an integer from 1 to %ld", FS_SALECTL_EXTEND_MAX);
	default:
		return fail("%s", err);
	}
}

static int
cmd_close_or_extend(uint64_t sale, long seconds)
{
	struct fs_salectl_sale s;
	struct stores st;
	enum fs_salectl_result r;
	char err[512] = "";
	int64_t ends = 0;
	int rc = 1;

	if (open_stores(&st, 0, 0) != 0)
		goto out;
	if (seconds == 0)
		r = fs_salectl_close(st.pg, st.stock, sale, fs_clock_now_ms(), &s, &ends, err,
		    sizeof(err));
	else
		r = fs_salectl_extend(st.pg, st.stock, sale, seconds, fs_clock_now_ms(), &s, &ends,
		    err, sizeof(err));
	rc = say_end(r, seconds == 0 ? "closed" : "extended", sale, &s, ends, err);
out:
	close_stores(&st);
	return rc;
}

static volatile sig_atomic_t watch_stop;

static void
on_interrupt(int sig)
{
	(void)sig;
	watch_stop = 1;
}

/* "1h 02m 03s" from now to ms (or "-" when past). */
static const char *
until(int64_t now_ms, int64_t ms, char buf[32])
{
	long s = (long)((ms - now_ms) / 1000);

	if (s < 0)
		snprintf(buf, 32, "-");
	else if (s >= 3600)
		snprintf(buf, 32, "%ldh %02ldm %02lds", s / 3600, s / 60 % 60, s % 60);
	else
		snprintf(buf, 32, "%ldm %02lds", s / 60, s % 60);
	return buf;
}

/* The refunds owed for the sale's late payments, the oldest first; FAILING: an operator must look. */
static void
print_refunds(const struct fs_watch_frame *f)
{
	if (f->refunds_owed < 0) {
		printf("refunds owed: ?\n");
		return;
	}
	printf("refunds owed: %ld (%ld failing: %ld failed tries or more)\n", f->refunds_owed,
	    f->refunds_failing, f->refund_alert_after);
	for (long i = 0; i < f->refunds_owed && i < FS_WATCH_OWED_MAX; i++) {
		const struct fs_payments_owed *o = &f->owed[i];

		printf("  %-8s payment %s order %s %" PRId64 " %s, %ld failed tries%s%s\n",
		    o->attempts >= f->refund_alert_after ? "FAILING" : "owed", o->ev.payment, o->ev.order,
		    o->ev.amount_minor, o->ev.currency, o->attempts, o->error[0] != '\0' ? ", last: " : "",
		    o->error);
	}
}

static void
print_frame(const struct fs_watch_frame *f)
{
	char t0[FS_CLOCK_TIME_LEN], t1[FS_CLOCK_TIME_LEN], in[32];

	printf("sale %" PRIu64 " \"%s\"  %s  ends %s (in %s)  at %s\n", f->sale.id, f->sale.name,
	    fs_salectl_state_name(f->state), when(f->sale.ends_ms, t0),
	    until(f->now_ms, f->sale.ends_ms, in), when(f->now_ms, t1));
	printf("%-8s %-24s %9s %9s %9s %9s %9s %9s\n", "item", "name", "quantity", "left", "held",
	    "sold", "pending", "paid");
	for (int i = 0; i < f->nitems; i++) {
		const struct fs_sales_figures *it = &f->items[i];
		char left[24];

		if (it->redis_left < 0)
			snprintf(left, sizeof(left), "-");
		else
			snprintf(left, sizeof(left), "%ld", it->redis_left);
		printf("%-8" PRIu64 " %-24.24s %9ld %9s %9ld %9ld %9ld %9ld\n", it->item, it->name,
		    it->quantity, left, it->redis_holds, it->sold, it->pending, it->paid);
	}
	if (f->expiring < 0)
		printf("expiring within 60 s: ?\n");
	else
		printf("expiring within 60 s: %ld orders\n", f->expiring);
	print_refunds(f);
	if (f->lag < 0)
		printf("consumer lag: ? (%s)\n", f->lag_error);
	else
		printf("consumer lag: %lld messages\n", f->lag);
	for (int o = 0; o < f->norigins; o++) {
		const struct fs_watch_origin *org = &f->origins[o];

		printf("gate %s:", org->url);
		for (int i = 0; i < f->nitems && i < FS_WATCH_GATE_ITEMS_MAX; i++)
			printf(" %" PRIu64 "=%s", f->items[i].item, fs_watch_gate_name(org->gate[i]));
		if (org->error[0] != '\0')
			printf(" (%s)", org->error);
		printf("\n");
		printf("purchases/s %s:", org->url);
		if (!org->has_metrics)
			printf(" ? (%s)", org->metrics_error);
		for (int i = 0; org->has_metrics && i < org->ncounts; i++)
			if (org->counts[i].rate < 0)
				printf(" %s=?", org->counts[i].name);
			else
				printf(" %s=%.1f", org->counts[i].name, org->counts[i].rate);
		printf("\n");
	}
}

static int
cmd_watch(uint64_t sale, int argc, char **argv)
{
	struct fs_watch_frame *f = NULL;
	struct stores st;
	char err[512];
	int once = 0, rc = 1;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->items = calloc(FS_SALES_ITEMS_MAX, sizeof(*f->items))) == NULL)
		goto fail_mem;
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0) {
			once = 1;
		} else if (strcmp(argv[i], "--origin") == 0 && i + 1 < argc) {
			if (f->norigins == FS_WATCH_ORIGINS_MAX) {
				rc = fail("at most %d origins", FS_WATCH_ORIGINS_MAX);
				goto out;
			}
			if (strncmp(argv[i + 1], "http://", 7) != 0 ||
			    strlen(argv[i + 1]) >= sizeof(f->origins[0].url)) {
				rc = fail("--origin wants http://A.B.C.D:PORT, not %s", argv[i + 1]);
				goto out;
			}
			snprintf(f->origins[f->norigins++].url, sizeof(f->origins[0].url), "%s",
			    argv[++i]);
		} else {
			rc = fail("unknown option %s", argv[i]);
			goto out;
		}
	}
	if (open_stores(&st, 0, 0) != 0)
		goto out;
	f->refund_alert_after = fs_cfg_long(&st.cfg, FS_CFG_REFUND_ALERT_AFTER);
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	/* Rates need two readings: --once takes one a second before its frame. */
	if (once && f->norigins > 0) {
		struct timespec second = { 1, 0 };

		if (fs_watch_read(st.pg, st.stock, NULL, fs_cfg_get(&st.cfg, FS_CFG_KAFKA_TOPIC), sale,
			f, err, sizeof(err)) != 0) {
			rc = fail("%s", err);
			goto done;
		}
		nanosleep(&second, NULL);
	}
	while (!watch_stop) {
		const char *brokers = fs_cfg_get(&st.cfg, FS_CFG_KAFKA_BROKERS);
		int64_t started = fs_clock_now_ms(), left;

		if (fs_watch_read(st.pg, st.stock, brokers[0] != '\0' ? brokers : NULL,
			fs_cfg_get(&st.cfg, FS_CFG_KAFKA_TOPIC), sale, f, err, sizeof(err)) != 0) {
			rc = fail("%s", err);
			break;
		}
		/* A plain terminal over SSH: home, clear, the frame. */
		if (!once)
			fputs("\033[H\033[2J", stdout);
		print_frame(f);
		fflush(stdout);
		if (once) {
			rc = 0;
			break;
		}
		for (left = 1000 - (fs_clock_now_ms() - started); left > 0 && !watch_stop;
		     left -= 100) {
			struct timespec ts = { 0, (left < 100 ? left : 100) * 1000000L };

			nanosleep(&ts, NULL);
		}
		rc = 0;
	}
done:
	close_stores(&st);
	goto out;
fail_mem:
	fail("%s", "out of memory");
out:
	if (f != NULL)
		free(f->items);
	free(f);
	return rc;
}

static void
print_letter(void *arg, const struct fs_dlq_entry *e)
{
	const char *id = e->order.id[0] != '\0' ? e->order.id : "-";

	(void)arg;
	if (e->verdict == FS_DLQ_OTHER_SALE)
		return;
	if (e->detail[0] == '\0')
		printf("%-36s %-12s %s\n", id, e->reason, fs_dlq_verdict_name(e->verdict));
	else
		printf("%-36s %-12s %-13s %s\n", id, e->reason, fs_dlq_verdict_name(e->verdict),
		    e->detail);
}

static int
cmd_dlq_replay(int argc, char **argv)
{
	fs_ordertopic topic = { 0 };
	struct fs_dlq_summary sum;
	struct stores st;
	uint64_t sale = 0;
	char err[512];
	int rc = 1;

	if (argc == 2 && strcmp(argv[0], "--sale") == 0) {
		if (fs_route_parse_id(argv[1], &sale) != 0)
			return fail("%s", "--sale wants a sale id (a positive integer)");
	} else if (argc != 0) {
		return fail("%s", "usage: flashsale-admin dlq replay [--sale SALE_ID]");
	}
	if (open_stores(&st, FS_CFG_NEED(FS_CFG_KAFKA_BROKERS), 1) != 0)
		goto out;
	if (fs_ordertopic_init(&topic, fs_cfg_get(&st.cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&st.cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_ordertopic_open_producer(&topic, 10000, 5, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	if (fs_dlq_replay(st.pg, st.stock, &topic, sale, print_letter, NULL, &sum, err,
		sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	/* "dead letters: 3 (replayed 1, sold-out 2)", those of other sales left out. */
	printf("dead letters: %ld (", sum.letters - sum.count[FS_DLQ_OTHER_SALE]);
	for (int v = 0, first = 1; v < FS_DLQ__MAX; v++) {
		if (v == FS_DLQ_OTHER_SALE || sum.count[v] == 0)
			continue;
		printf("%s%s %ld", first ? "" : ", ", fs_dlq_verdict_name((enum fs_dlq_verdict)v),
		    sum.count[v]);
		first = 0;
	}
	printf(")\n");
	/* Something to try again: a script must notice. */
	rc = sum.count[FS_DLQ_NOT_DELIVERED] > 0;
out:
	fs_ordertopic_close(&topic);
	close_stores(&st);
	return rc;
}

int
admin_ops_main(int argc, char **argv)
{
	uint64_t sale;
	char *end;
	long seconds;

	if (argc == 3 && strcmp(argv[1], "sale") == 0 && strcmp(argv[2], "list") == 0)
		return cmd_list();
	if (argc >= 3 && strcmp(argv[1], "dlq") == 0 && strcmp(argv[2], "replay") == 0)
		return cmd_dlq_replay(argc - 3, argv + 3);
	if (argc < 4 || strcmp(argv[1], "sale") != 0 ||
	    (strcmp(argv[2], "close") != 0 && strcmp(argv[2], "extend") != 0 &&
		strcmp(argv[2], "watch") != 0))
		return -1;
	if (fs_route_parse_id(argv[3], &sale) != 0)
		return fail("%s", "expected a sale id (a positive integer)");
	if (strcmp(argv[2], "close") == 0 && argc == 4)
		return cmd_close_or_extend(sale, 0);
	if (strcmp(argv[2], "extend") == 0 && argc == 5) {
		errno = 0;
		seconds = strtol(argv[4], &end, 10);
		if (errno != 0 || *end != '\0' || end == argv[4] || seconds < 1 ||
		    seconds > FS_SALECTL_EXTEND_MAX)
			return fail("SECONDS must be an integer from 1 to %ld", FS_SALECTL_EXTEND_MAX);
		return cmd_close_or_extend(sale, seconds);
	}
	if (strcmp(argv[2], "watch") == 0)
		return cmd_watch(sale, argc - 4, argv + 4);
	return -1;
}
