/*
 * flashsale-admin's sales: sale create (--json), sale list, sale warm,
 * sale show, sale urls, sale close, sale extend. The rules live in
 * lib/sales and lib/salectl.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "admin.h"
#include "clock.h"
#include "jsonread.h"
#include "keys.h"
#include "pg.h"
#include "salectl.h"
#include "sales.h"
#include "stock.h"
#include "urlsig.h"

/*
 * A queue sale's waiting room in sale create --json: its settings as
 * stored (every member) and the commitment to its seed.
 */
static json_object *
created_queue(const struct fs_sale *s)
{
	char text[FS_QUEUE_SETTINGS_JSON_MAX], commit[65], why[64];
	json_object *q;

	if (fs_queue_settings_json(&s->queue, text, sizeof(text)) < 0 ||
	    (q = fs_jsonread_object(text, strlen(text), 2, why, sizeof(why))) == NULL)
		return NULL;
	fs_queue_seed_commit(s->seed, commit);
	json_object_object_add(q, "seedCommit", json_object_new_string(commit));
	return q;
}

/*
 * The machine-readable answer of sale create --json, read back from
 * PostgreSQL: {"saleId","name","startsAt","endsAt","paymentWindowSeconds",
 * "itemIds":[...],"items":[{"itemId","name","priceMinor","currency",
 * "quantity"}]}, items in the file's order; a queue sale also "queue"
 * (its settings and "seedCommit").
 */
static int
print_created(fs_pg *pg, uint64_t sale)
{
	struct fs_sale s = { 0 };
	char err[512], t0[FS_CLOCK_TIME_LEN], t1[FS_CLOCK_TIME_LEN];
	json_object *doc = NULL, *ids, *items;
	int rc = -1;

	if ((s.items = calloc(FS_SALES_ITEMS_MAX, sizeof(*s.items))) == NULL) {
		admin_fail("%s", "out of memory");
		return -1;
	}
	if (fs_sales_read(pg, NULL, sale, &s, err, sizeof(err)) != 0 || !s.found) {
		admin_fail("sale %" PRIu64 " was created but cannot be read back: %s", sale,
		    s.found ? err : "not found");
		goto out;
	}
	fs_clock_format(s.starts_ms, t0);
	fs_clock_format(s.ends_ms, t1);
	doc = json_object_new_object();
	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)sale));
	json_object_object_add(doc, "name", json_object_new_string(s.name));
	json_object_object_add(doc, "startsAt", json_object_new_string(t0));
	json_object_object_add(doc, "endsAt", json_object_new_string(t1));
	json_object_object_add(doc, "paymentWindowSeconds", json_object_new_int64(s.window_s));
	json_object_object_add(doc, "itemIds", ids = json_object_new_array());
	json_object_object_add(doc, "items", items = json_object_new_array());
	for (int i = 0; i < s.nitems; i++) {
		json_object *it = json_object_new_object();

		json_object_array_add(ids, json_object_new_int64((int64_t)s.items[i].id));
		json_object_object_add(it, "itemId", json_object_new_int64((int64_t)s.items[i].id));
		json_object_object_add(it, "name", json_object_new_string(s.items[i].name));
		json_object_object_add(it, "priceMinor", json_object_new_int64(s.items[i].price_minor));
		json_object_object_add(it, "currency", json_object_new_string(s.items[i].currency));
		json_object_object_add(it, "quantity", json_object_new_int64(s.items[i].quantity));
		json_object_array_add(items, it);
	}
	if (s.has_queue)
		json_object_object_add(doc, "queue", created_queue(&s));
	printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	rc = 0;
out:
	json_object_put(doc);
	free(s.items);
	return rc;
}

/* sale create FILE [--json]: {"saleId","itemIds"}, or with --json the whole sale. */
int
admin_sale_create(int argc, char **argv)
{
	const char *file = argv[0];
	int as_json = argc == 2 && strcmp(argv[1], "--json") == 0;
	struct fs_cfg cfg;
	char out[32768], err[512];
	fs_pg *pg = NULL;
	char *json = NULL;
	FILE *fp = NULL;
	size_t n;
	uint64_t sale;
	int rc = 1;

	if (argc == 2 && !as_json)
		return admin_fail("unknown option %s (sale create FILE [--json])", argv[1]);
	if (admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_PG)) != 0)
		return 1;
	if ((fp = fopen(file, "r")) == NULL) {
		admin_fail("cannot open %s", file);
		goto out;
	}
	if ((json = malloc(FS_SALES_JSON_MAX + 1)) == NULL)
		goto out;
	n = fread(json, 1, FS_SALES_JSON_MAX + 1, fp);
	if (n > FS_SALES_JSON_MAX) {
		admin_fail("%s is too big", file);
		goto out;
	}
	if ((pg = fs_pg_new(fs_cfg_get(&cfg, FS_CFG_PG))) == NULL)
		goto out;
	if (fs_sales_create(pg, json, n, out, sizeof(out), err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	if (!as_json) {
		printf("%s\n", out);
		rc = 0;
	} else if (sscanf(out, "{\"saleId\":%" SCNu64, &sale) == 1 && print_created(pg, sale) == 0) {
		rc = 0;
	}
out:
	if (fp != NULL)
		fclose(fp);
	free(json);
	fs_pg_free(pg);
	return rc;
}

int
admin_sale_list(int argc, char **argv)
{
	struct fs_salectl_sale *sales = NULL;
	struct admin_stores st;
	char err[512], t0[FS_CLOCK_TIME_LEN], t1[FS_CLOCK_TIME_LEN];
	int64_t now = fs_clock_now_ms();
	int n, rc = 1;

	(void)argc;
	(void)argv;
	if (admin_stores_open(&st, 0) != 0)
		goto out;
	if ((sales = calloc(FS_SALECTL_LIST_MAX, sizeof(*sales))) == NULL)
		goto out;
	if ((n = fs_salectl_list(st.st.pg, sales, FS_SALECTL_LIST_MAX, err, sizeof(err))) < 0) {
		admin_fail("%s", err);
		goto out;
	}
	printf("%-8s %-9s %-24s %-24s %6s %5s %9s %9s %s\n", "sale", "state", "starts", "ends",
	    "window", "items", "quantity", "sold", "name");
	for (int i = 0; i < n; i++)
		printf("%-8" PRIu64 " %-9s %-24s %-24s %6ld %5ld %9ld %9ld %s\n", sales[i].id,
		    fs_salectl_state_name(fs_salectl_state_at(&sales[i], now)),
		    admin_when(sales[i].starts_ms, t0), admin_when(sales[i].ends_ms, t1), sales[i].window_s,
		    sales[i].items, sales[i].quantity, sales[i].sold, sales[i].name);
	rc = 0;
out:
	free(sales);
	admin_stores_close(&st);
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
		    admin_when(ends_ms, t1), admin_when(s->ends_ms, t0));
		return 0;
	case FS_SALECTL_NOT_STARTED:
		return admin_fail("sale %" PRIu64 " has not started (it starts at %s): a sale cannot end "
			    "before it starts",
		    sale, admin_when(s->starts_ms, t0));
	case FS_SALECTL_ALREADY_ENDED:
		if (strcmp(verb, "closed") == 0) {
			printf("sale %" PRIu64 " already ended at %s\n", sale, admin_when(s->ends_ms, t0));
			return 0;
		}
		return admin_fail("sale %" PRIu64 " ended at %s: an ended sale is never reopened; create "
			    "a new one",
		    sale, admin_when(s->ends_ms, t0));
	case FS_SALECTL_BAD_SECONDS:
		return admin_fail("SECONDS must be an integer from 1 to %ld", FS_SALECTL_EXTEND_MAX);
	default:
		return admin_fail("%s", err);
	}
}

static int
cmd_close_or_extend(uint64_t sale, long seconds)
{
	struct fs_salectl_sale s;
	struct admin_stores st;
	enum fs_salectl_result r;
	char err[512] = "";
	int64_t ends = 0;
	int rc = 1;

	if (admin_stores_open(&st, 0) != 0)
		goto out;
	if (seconds == 0)
		r = fs_salectl_close(st.st.pg, st.st.stock, sale, fs_clock_now_ms(), &s, &ends, err,
		    sizeof(err));
	else
		r = fs_salectl_extend(st.st.pg, st.st.stock, sale, seconds, fs_clock_now_ms(), &s, &ends,
		    err, sizeof(err));
	rc = say_end(r, seconds == 0 ? "closed" : "extended", sale, &s, ends, err);
out:
	admin_stores_close(&st);
	return rc;
}

int
admin_sale_close(uint64_t sale, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cmd_close_or_extend(sale, 0);
}

/* sale extend SALE SECONDS */
int
admin_sale_extend(uint64_t sale, int argc, char **argv)
{
	char *end;
	long seconds;

	(void)argc; /* one: the table says so */
	errno = 0;
	seconds = strtol(argv[0], &end, 10);
	if (errno != 0 || *end != '\0' || end == argv[0] || seconds < 1 ||
	    seconds > FS_SALECTL_EXTEND_MAX)
		return admin_fail("SECONDS must be an integer from 1 to %ld", FS_SALECTL_EXTEND_MAX);
	return cmd_close_or_extend(sale, seconds);
}
/* Where a warm put the sharded items of a sale: one line per item with shards. */
static void
print_shards(fs_pg *pg, fs_stock *r, uint64_t sale)
{
	struct fs_stock_shard shards[FS_STOCK_SHARDS_MAX];
	char err[256];
	uint64_t *items;
	int n;

	if ((items = calloc(FS_SALES_ITEMS_MAX, sizeof(*items))) == NULL)
		return;
	n = fs_sales_item_ids(pg, sale, items, err, sizeof(err));
	for (int i = 0; i < n; i++) {
		int k = fs_stock_shards(r, sale, items[i], shards, FS_STOCK_SHARDS_MAX);

		if (k <= 1)
			continue;
		printf("item %" PRIu64 ": %d shards:", items[i], k);
		for (int p = 0; p < k; p++)
			printf("%s {%s} slot %u on %s", p > 0 ? "," : "", shards[p].tag, shards[p].slot,
			    shards[p].master);
		printf("\n");
	}
	free(items);
}

/* sale warm SALE [--force] [--ignore-lag] */
int
admin_sale_warm(uint64_t sale, int argc, char **argv)
{
	struct fs_sales_warm_opts opts;
	struct fs_sales_warm_report rep;
	struct fs_order *pending = NULL;
	struct admin_stores st;
	char err[512];
	int rc = 1;

	memset(&opts, 0, sizeof(opts));
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0)
			opts.force = 1;
		else if (strcmp(argv[i], "--ignore-lag") == 0)
			opts.ignore_pending = 1;
		else
			return admin_fail("%s", "usage: sale warm SALE_ID [--force] [--ignore-lag]");
	}
	if (admin_stores_open(&st, 0) != 0)
		goto out;
	opts.inflight_ms = admin_inflight_ms(&st.cfg);
	if (!opts.ignore_pending && admin_on_their_way(&st.cfg, sale, &pending, &opts.npending) != 0)
		goto out;
	opts.pending = pending;
	if (fs_sales_warm(st.st.pg, st.st.stock, sale, &opts, &rep, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	admin_print_warm(sale, "loaded into Redis", &rep);
	print_shards(st.st.pg, st.st.stock, sale);
	rc = 0;
out:
	free(pending);
	admin_stores_close(&st);
	return rc;
}

int
admin_sale_show(uint64_t sale, int argc, char **argv)
{
	struct fs_sales_figures *figs = NULL;
	struct admin_stores st;
	char err[512];
	int n, rc = 1;

	(void)argc;
	(void)argv;
	if (admin_stores_open(&st, 0) != 0)
		goto out;
	if ((figs = calloc(FS_SALES_ITEMS_MAX, sizeof(*figs))) == NULL)
		goto out;
	if ((n = fs_sales_figures(st.st.pg, st.st.stock, sale, figs, FS_SALES_ITEMS_MAX, err, sizeof(err))) < 0) {
		admin_fail("%s", err);
		goto out;
	}
	printf("%-8s %-24s %9s %9s %9s %9s %11s %11s\n", "item", "name", "quantity", "sold",
	    "pending", "paid", "redis_left", "redis_holds");
	for (int i = 0; i < n; i++)
		printf("%-8" PRIu64 " %-24.24s %9ld %9ld %9ld %9ld %11ld %11ld\n", figs[i].item,
		    figs[i].name, figs[i].quantity, figs[i].sold, figs[i].pending, figs[i].paid,
		    figs[i].redis_left, figs[i].redis_holds);
	rc = 0;
out:
	free(figs);
	admin_stores_close(&st);
	return rc;
}

/* Prints a purchase path on its own line. */
static void
print_path(void *arg, uint64_t item, const char *path)
{
	(void)arg;
	(void)item;
	printf("%s\n", path);
}

int
admin_sale_urls(uint64_t sale, int argc, char **argv)
{
	struct fs_sale s = { 0 };
	fs_urlsig_key *key = NULL;
	struct fs_cfg cfg;
	fs_pg *pg = NULL;
	char err[512];
	int rc = 1;

	(void)argc;
	(void)argv;
	if (admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0)
		return 1;
	if (fs_keys_load(&cfg, NULL, &key, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	if ((pg = fs_pg_new(fs_cfg_get(&cfg, FS_CFG_PG))) == NULL ||
	    (s.items = calloc(FS_SALES_ITEMS_MAX, sizeof(*s.items))) == NULL)
		goto out;
	if (fs_sales_read(pg, NULL, sale, &s, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	if (s.nitems == 0) {
		admin_fail("no sale %" PRIu64 " (or it has no items)", sale);
		goto out;
	}
	if (fs_sales_purchase_paths(key, &s, print_path, NULL) != 0) {
		admin_fail("%s", "cannot sign");
		goto out;
	}
	rc = 0;
out:
	fs_urlsig_key_free(key);
	free(s.items);
	fs_pg_free(pg);
	return rc;
}
