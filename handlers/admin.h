/*
 * flashsale-admin, the operator's tool: one family of files behind this
 * header. admin.c holds the command table and main; each topic's commands
 * live beside it (admin_keys.c: keys and tokens; admin_sale.c: creating,
 * warming, showing and ending sales; admin_watch.c: the live view;
 * admin_ops.c: topics, configuration, reconcile and dead letters;
 * admin_queue.c: the waiting room's verify and status), and
 * admin_common.c what they share. The rules live in lib/; these files
 * parse arguments, call them and print.
 *
 * Every command gets the arguments after its words (after the sale id for
 * the commands that take one) and returns the exit status: 0, or 1 once
 * admin_fail has said what went wrong.
 */
#ifndef FS_ADMIN_H
#define FS_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "clock.h"
#include "orders.h"
#include "sales.h"
#include "stores.h"

/* Says what went wrong on standard error; returns the exit status 1. */
int admin_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Loads the configuration with the settings need lists; 0, or 1 said. */
int admin_load_cfg(struct fs_cfg *, unsigned need);

/* The configuration and the stores (lib/stores) of a command. */
struct admin_stores {
	struct fs_cfg cfg;
	struct fs_stores st;
};

/*
 * Loads the configuration (PostgreSQL, Redis and what more lists) and opens
 * the stores; 0, or 1 said. admin_stores_close closes them either way.
 */
int admin_stores_open(struct admin_stores *, unsigned more);
void admin_stores_close(struct admin_stores *);
/*
 * How long after a reservation its purchase may still be putting the order
 * on the topic: the producer's delivery timeout, and a second to spare.
 */
int64_t admin_inflight_ms(const struct fs_cfg *);
/*
 * The orders on their way (on the topic, not yet committed by the
 * consumer) of one sale, 0: of all; *orders is the caller's to free. 0, or
 * -1 said.
 */
int admin_on_their_way(const struct fs_cfg *, uint64_t sale, struct fs_order **orders, size_t *n);
/* ms as the time it is (lib/clock), in buf; returns buf. */
const char *admin_when(int64_t ms, char buf[FS_CLOCK_TIME_LEN]);
/* "sale S: what (N live holds, ...)" of a warm or a repair. */
void admin_print_warm(uint64_t sale, const char *what, const struct fs_sales_warm_report *);

/* admin_keys.c */
int admin_keys_generate(int argc, char **argv);
int admin_queue_pass(uint64_t sale, int argc, char **argv);
int admin_token_mint(int argc, char **argv);

/* admin_sale.c */
int admin_sale_create(int argc, char **argv);
int admin_sale_list(int argc, char **argv);
int admin_sale_warm(uint64_t sale, int argc, char **argv);
int admin_sale_show(uint64_t sale, int argc, char **argv);
int admin_sale_urls(uint64_t sale, int argc, char **argv);
int admin_sale_close(uint64_t sale, int argc, char **argv);
int admin_sale_extend(uint64_t sale, int argc, char **argv);

/* admin_watch.c */
int admin_sale_watch(uint64_t sale, int argc, char **argv);

/* admin_ops.c */
int admin_kafka_topics(int argc, char **argv);
int admin_kafka_grants(int argc, char **argv);
int admin_config(int argc, char **argv);
int admin_reconcile(int argc, char **argv);
int admin_dlq_replay(int argc, char **argv);

/* admin_queue.c */
int admin_queue_verify(uint64_t sale, int argc, char **argv);
int admin_queue_status(uint64_t sale, int argc, char **argv);

#endif
