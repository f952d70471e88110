/*
 * The live view of a sale (rules): one frame of what an operator watches
 * while it runs, read from the stores and the origins. Per item: units left
 * and held (Redis), sold, PENDING and PAID (PostgreSQL); the orders whose
 * payment window ends within the next minute; the refunds owed for the
 * sale's late payments, those that keep failing marked; the consumer group's lag;
 * and per origin, the sold-out gate of each item (does nginx answer a
 * purchase of it from its marker file?) and the purchase answers per second
 * by outcome, from the origin's GET /metrics (the handler's answers by
 * status, and those nginx and the edge gave without it, by kind) between
 * this frame and the one before. Reading a frame changes nothing:
 * the gate is asked with a GET, which nginx answers itself (410 from the
 * marker, else 405) without calling a handler.
 */
#ifndef FS_WATCH_H
#define FS_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "payments.h"
#include "pg.h"
#include "salectl.h"
#include "sales.h"
#include "stock.h"

#define FS_WATCH_ORIGINS_MAX	8	/* origins asked per frame */
#define FS_WATCH_GATE_ITEMS_MAX	32	/* items whose gate is asked (the first ones) */
#define FS_WATCH_EXPIRING_MS	60000	/* "expiring soon": within a minute */
#define FS_WATCH_TIMEOUT_MS	500	/* per question to an origin */
/*
 * Per question to Kafka: each frame opens a new client, and a TLS + SCRAM
 * connection costs it ~20 ms of CPU, so on a loaded host 500 ms left the
 * lag unknown ("?") while the brokers were fine.
 */
#define FS_WATCH_KAFKA_TIMEOUT_MS	2000

#define FS_WATCH_COUNTS_MAX	24	/* purchase outcomes followed per origin */
#define FS_WATCH_OWED_MAX	8	/* refunds owed shown (the oldest) */

/* One purchase outcome of an origin: "202", "410" ... or "nginx:sold_out". */
struct fs_watch_count {
	char name[32];
	double value;		/* the counter now */
	double rate;		/* per second since the frame before; -1 unknown */
};

enum fs_watch_gate {
	FS_WATCH_GATE_UNKNOWN,	/* not asked, or the origin did not answer */
	FS_WATCH_GATE_OPEN,	/* nginx passes purchases on to the handler */
	FS_WATCH_GATE_SOLD_OUT,	/* nginx answers 410 from its marker file */
	FS_WATCH_GATE__MAX
};

struct fs_watch_origin {
	char url[256];		/* base URL, http://A.B.C.D:PORT */
	char error[128];	/* why its gates are unknown, or "" */
	enum fs_watch_gate gate[FS_WATCH_GATE_ITEMS_MAX];
	int has_metrics;	/* its /metrics answered */
	char metrics_error[128];
	int64_t counted_ms;	/* when the counts were read */
	int ncounts;
	struct fs_watch_count counts[FS_WATCH_COUNTS_MAX];
};

struct fs_watch_frame {
	int64_t now_ms;
	struct fs_salectl_sale sale;
	enum fs_salectl_state state;
	struct fs_sales_figures *items;	/* the caller's, room for FS_SALES_ITEMS_MAX */
	int nitems;
	long expiring;			/* PENDING orders ending within FS_WATCH_EXPIRING_MS; -1 unknown */
	long refund_alert_after;	/* set by the caller: failed tries that make a refund failing */
	long refunds_owed;		/* refunds owed for the sale's payments; -1 unknown */
	long refunds_failing;		/* of them, failed refund_alert_after times or more */
	struct fs_payments_owed owed[FS_WATCH_OWED_MAX]; /* the oldest min(refunds_owed, MAX) */
	long long lag;			/* consumer group backlog; -1 unknown (lag_error says why) */
	char lag_error[128];
	int norigins;
	struct fs_watch_origin origins[FS_WATCH_ORIGINS_MAX];
};

const char *fs_watch_gate_name(enum fs_watch_gate);
/*
 * Fills f for the sale. f->items and f->norigins with each origin's url
 * are set by the caller; brokers may be NULL (lag unknown). The rates need
 * the frame before in f (a first frame has them unknown). 0, or -1 with
 * err set when PostgreSQL or Redis cannot answer or the sale is unknown;
 * an origin or Kafka that does not answer only leaves its part unknown.
 */
int fs_watch_read(fs_pg *, fs_stock *, const char *brokers, const char *topic, uint64_t sale,
    struct fs_watch_frame *f, char *err, size_t errlen);

/*
 * Reads the purchase outcomes of a Prometheus text exposition into counts
 * (at most max): flashsale_http_requests_total of flashsale-purchase by
 * code, flashsale_answers_without_handler_total by "by:answer". The count.
 */
int fs_watch_parse_counts(const char *text, struct fs_watch_count *counts, int max);

#endif
