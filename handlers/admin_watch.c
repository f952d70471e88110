/*
 * flashsale-admin sale watch: the live view of a sale, refreshed every
 * second (lib/watch reads each frame; this file prints it).
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "admin.h"
#include "clock.h"
#include "salectl.h"
#include "watch.h"

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
	    fs_salectl_state_name(f->state), admin_when(f->sale.ends_ms, t0),
	    until(f->now_ms, f->sale.ends_ms, in), admin_when(f->now_ms, t1));
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

/* --once, and --origin URL up to FS_WATCH_ORIGINS_MAX times: 0, or 1 said. */
static int
watch_options(struct fs_watch_frame *f, int argc, char **argv, int *once)
{
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--once") == 0) {
			*once = 1;
		} else if (strcmp(argv[i], "--origin") == 0 && i + 1 < argc) {
			if (f->norigins == FS_WATCH_ORIGINS_MAX)
				return admin_fail("at most %d origins", FS_WATCH_ORIGINS_MAX);
			if (strncmp(argv[i + 1], "http://", 7) != 0 ||
			    strlen(argv[i + 1]) >= sizeof(f->origins[0].url))
				return admin_fail("--origin wants http://A.B.C.D:PORT, not %s",
				    argv[i + 1]);
			snprintf(f->origins[f->norigins++].url, sizeof(f->origins[0].url), "%s",
			    argv[++i]);
		} else {
			return admin_fail("unknown option %s", argv[i]);
		}
	}
	return 0;
}

/* Sleeps out the second that began at started_ms, waking early when interrupted. */
static void
rest_of_second(int64_t started_ms)
{
	for (int64_t left = 1000 - (fs_clock_now_ms() - started_ms); left > 0 && !watch_stop;
	     left -= 100) {
		struct timespec ts = { 0, (left < 100 ? left : 100) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/*
 * Prints the sale's frame every second until interrupted, or once (after a
 * reading a second before it, as rates need two). 0, or 1 said.
 */
static int
watch_frames(struct admin_stores *st, uint64_t sale, struct fs_watch_frame *f, int once)
{
	const char *brokers = fs_cfg_get(&st->cfg, FS_CFG_KAFKA_BROKERS);
	const char *topic = fs_cfg_get(&st->cfg, FS_CFG_KAFKA_TOPIC);
	char err[512];
	int rc = 1;

	if (once && f->norigins > 0) {
		struct timespec second = { 1, 0 };

		if (fs_watch_read(st->st.pg, st->st.stock, NULL, topic, sale, f, err, sizeof(err)) !=
		    0)
			return admin_fail("%s", err);
		nanosleep(&second, NULL);
	}
	while (!watch_stop) {
		int64_t started = fs_clock_now_ms();

		if (fs_watch_read(st->st.pg, st->st.stock, brokers[0] != '\0' ? brokers : NULL, topic,
			sale, f, err, sizeof(err)) != 0)
			return admin_fail("%s", err);
		/* A plain terminal over SSH: home, clear, the frame. */
		if (!once)
			fputs("\033[H\033[2J", stdout);
		print_frame(f);
		fflush(stdout);
		if (once)
			return 0;
		rest_of_second(started);
		rc = 0;
	}
	return rc;
}

/* sale watch SALE [--once] [--origin URL]... */
int
admin_sale_watch(uint64_t sale, int argc, char **argv)
{
	struct fs_watch_frame *f = NULL;
	struct admin_stores st;
	int once = 0, rc = 1;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->items = calloc(FS_SALES_ITEMS_MAX, sizeof(*f->items))) == NULL) {
		admin_fail("%s", "out of memory");
		goto out;
	}
	if ((rc = watch_options(f, argc, argv, &once)) != 0)
		goto out;
	if (admin_stores_open(&st, 0) != 0) {
		rc = 1;
		goto done;
	}
	f->refund_alert_after = fs_cfg_long(&st.cfg, FS_CFG_REFUND_ALERT_AFTER);
	signal(SIGINT, on_interrupt);
	signal(SIGTERM, on_interrupt);
	rc = watch_frames(&st, sale, f, once);
done:
	admin_stores_close(&st);
out:
	if (f != NULL)
		free(f->items);
	free(f);
	return rc;
}
