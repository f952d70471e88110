/*
 * flashsale-admin's waiting room (docs/QUEUE.md): queue verify (the whole
 * order checked from PostgreSQL alone) and queue status (the pacer's state
 * in Redis beside PostgreSQL's counts), each also as one JSON document
 * (--json). The rules live in lib/queue_verify.c and lib/queue_pacer.c.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "pg.h"
#include "queue.h"

/* Violations listed in --json at most (the count is always whole). */
#define JSON_VIOLATIONS_MAX 1000

/* Reads [--json] as the only argument; 0, or -1 said. */
static int
json_flag(int argc, char **argv, const char *cmd, int *as_json)
{
	*as_json = argc == 1 && strcmp(argv[0], "--json") == 0;
	if (argc == 1 && !*as_json) {
		admin_fail("unknown option %s (%s SALE_ID [--json])", argv[0], cmd);
		return -1;
	}
	return 0;
}

/* Prints a violation as it comes (human output). */
static void
print_violation(void *arg, enum fs_queue_violation kind, const char *text)
{
	(void)arg;
	(void)kind;
	printf("%s\n", text);
}

/* Adds a violation to the --json list. */
static void
add_violation(void *arg, enum fs_queue_violation kind, const char *text)
{
	json_object *list = arg, *o;

	if (json_object_array_length(list) >= JSON_VIOLATIONS_MAX)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "kind", json_object_new_string(fs_queue_violation_name(kind)));
	json_object_object_add(o, "text", json_object_new_string(text));
	json_object_array_add(list, o);
}

/* The --json answer of queue verify. */
static void
print_verify_json(uint64_t sale, const struct fs_queue_verify_report *rep, json_object *list)
{
	json_object *doc = json_object_new_object();

	json_object_object_add(doc, "sale", json_object_new_int64((int64_t)sale));
	json_object_object_add(doc, "places", json_object_new_int64(rep->places));
	json_object_object_add(doc, "drawn", json_object_new_int64(rep->drawn));
	json_object_object_add(doc, "steps", json_object_new_int64(rep->steps));
	json_object_object_add(doc, "admitted", json_object_new_int64(rep->admitted));
	json_object_object_add(doc, "orders", json_object_new_int64(rep->orders));
	json_object_object_add(doc, "byOperator", json_object_new_int64(rep->by_operator));
	json_object_object_add(doc, "violations", json_object_new_int64(rep->violations));
	json_object_object_add(doc, "found", json_object_get(list));
	printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
}

/*
 * queue verify SALE_ID [--json]: every violation, then the summary line
 * "queue verify: N places, A admitted, V violations"; exit 1 on any.
 */
int
admin_queue_verify(uint64_t sale, int argc, char **argv)
{
	struct fs_queue_verify_report rep;
	struct fs_cfg cfg;
	json_object *list = NULL;
	fs_pg *pg = NULL;
	fs_stock *st;
	char err[512];
	long late = -1;
	int as_json, rc = 1;

	if (json_flag(argc, argv, "queue verify", &as_json) != 0 ||
	    admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_PG)) != 0)
		return 1;
	if ((pg = fs_pg_new(fs_cfg_get(&cfg, FS_CFG_PG))) == NULL)
		return admin_fail("%s", "FLASHSALE_PG is too long");
	list = json_object_new_array();
	/* Redis' count of late numbers, when it can say: a deleted last late place shows. */
	if ((st = fs_stock_new(&cfg, NULL, err, sizeof(err))) != NULL) {
		late = fs_queue_late_issued(st, sale);
		fs_stock_free(st);
	}
	if (fs_queue_verify(pg, sale, late, as_json ? add_violation : print_violation, list, &rep,
		err, sizeof(err)) != 0) {
		admin_fail("queue verify: %s", err);
		goto out;
	}
	if (as_json)
		print_verify_json(sale, &rep, list);
	else if (rep.by_operator > 0)
		printf("queue verify: %ld places, %ld admitted, %ld violations (%ld orders by "
		       "operators' recorded passes)\n", rep.places, rep.admitted, rep.violations,
		    rep.by_operator);
	else
		printf("queue verify: %ld places, %ld admitted, %ld violations\n", rep.places,
		    rep.admitted, rep.violations);
	rc = rep.violations > 0;
out:
	json_object_put(list);
	fs_pg_free(pg);
	return rc;
}

/* The --json answer of queue status. */
static void
print_status_json(uint64_t sale, const struct fs_queue_figures *q)
{
	json_object *doc = json_object_new_object(), *r = json_object_new_object(),
		    *p = json_object_new_object();

	json_object_object_add(doc, "sale", json_object_new_int64((int64_t)sale));
	json_object_object_add(r, "joined", json_object_new_int64(q->joined));
	json_object_object_add(r, "admitted", json_object_new_int64(q->admitted));
	json_object_object_add(r, "through", json_object_new_int64(q->through));
	json_object_object_add(r, "rate", json_object_new_double(q->rate_milli / 1000.0));
	json_object_object_add(r, "at", json_object_new_int64(q->at_ms));
	json_object_object_add(r, "soldout", json_object_new_boolean(q->soldout));
	json_object_object_add(r, "multiple", q->mult_milli > 0 ?
	    json_object_new_double(q->mult_milli / 1000.0) : NULL);
	json_object_object_add(r, "journal", json_object_new_int64(q->journal));
	json_object_object_add(r, "passesOut", json_object_new_int64(q->passes_out));
	json_object_object_add(r, "lease", q->lease[0] != '\0' ? json_object_new_string(q->lease) :
								  NULL);
	json_object_object_add(p, "places", json_object_new_int64(q->pg_places));
	json_object_object_add(p, "drawn", json_object_new_int64(q->pg_drawn));
	json_object_object_add(p, "steps", json_object_new_int64(q->pg_steps));
	json_object_object_add(p, "admitted", json_object_new_int64(q->pg_admitted));
	json_object_object_add(doc, "redis", r);
	json_object_object_add(doc, "postgresql", p);
	printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
}

static void
print_status(uint64_t sale, const struct fs_queue_figures *q)
{
	char at[FS_CLOCK_TIME_LEN];

	printf("sale %" PRIu64 " waiting room\n", sale);
	printf("  redis:      %ld joined, %ld admitted (through %" PRId64 "), %.3f/s, %s\n", q->joined,
	    q->admitted, q->through, q->rate_milli / 1000.0, q->soldout ? "SOLD OUT" : "selling");
	printf("              last step %s, %ld passes outstanding, %ld journal entries to copy\n",
	    q->at_ms > 0 ? admin_when(q->at_ms, at) : "none", q->passes_out, q->journal);
	if (q->mult_milli > 0)
		printf("              admitting %.3f x the units left (effective multiple)\n",
		    q->mult_milli / 1000.0);
	printf("              pacer %s\n", q->lease[0] != '\0' ? q->lease : "none (no lease held)");
	printf("  postgresql: %ld places (%ld drawn), %ld steps, %ld admitted\n", q->pg_places,
	    q->pg_drawn, q->pg_steps, q->pg_admitted);
}

/* queue status SALE_ID [--json]: the pacer's state in Redis and PostgreSQL's counts. */
int
admin_queue_status(uint64_t sale, int argc, char **argv)
{
	struct admin_stores s;
	struct fs_queue_figures q;
	char err[512];
	int as_json, rc = 1;

	if (json_flag(argc, argv, "queue status", &as_json) != 0 || admin_stores_open(&s, 0) != 0)
		return 1;
	if (fs_queue_figures_read(s.st.pg, s.st.stock, sale, fs_clock_now_ms(), &q, err,
		sizeof(err)) != 0) {
		admin_fail("queue status: %s", err);
		goto out;
	}
	if (as_json)
		print_status_json(sale, &q);
	else
		print_status(sale, &q);
	rc = 0;
out:
	admin_stores_close(&s);
	return rc;
}
