/*
 * A sale made from its description (the sale file of `flashsale-admin sale
 * create`): the description read and checked member by member, then the
 * sale, its items and, for a sale with a waiting room, its settings and the
 * draw's seed, written in one transaction. Part of the sales module
 * (lib/sales.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "clock.h"
#include "jsonread.h"
#include "log.h"
#include "queue.h"
#include "sales.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)
/* The database failed: its text, in the caller's err. */
#define DB_ERR() ERR("database: %s", pg->errstr)

#define STR_(x) #x
#define STR(x) STR_(x)

static int
has_member(json_object *o, const char *name)
{
	return json_object_object_get_ex(o, name, NULL);
}

/* One end of the sale: an absolute time string or seconds relative to now. */
static int
sale_time(json_object *doc, const char *abs_name, const char *rel_name, char *out, size_t outlen,
    char *err, size_t errlen)
{
	const char *abs = fs_jsonread_string(doc, abs_name, 64);
	int64_t rel;

	if (abs != NULL && !has_member(doc, rel_name)) {
		snprintf(out, outlen, "%s", abs);
		return 0;
	}
	if (abs == NULL && !has_member(doc, abs_name) &&
	    fs_jsonread_int(doc, rel_name, -315360000, 315360000, &rel) == 0) {
		snprintf(out, outlen, "@%" PRId64, rel);
		return 0;
	}
	ERR("give exactly one of \"%s\" (ISO 8601 time) and \"%s\" (integer seconds)", abs_name,
	    rel_name);
	return -1;
}

/* One item of a sale description, validated. */
struct item_desc {
	const char *name;
	const char *currency;
	int64_t price_minor;
	int64_t quantity;
	int64_t shards; /* stock keys (Redis masters) its units are spread over */
};

/* A sale description, validated once; its strings live in doc. */
struct sale_desc {
	json_object *doc;
	const char *name;
	char starts[72], ends[72]; /* a timestamp, or "@N": N seconds from now */
	int64_t window_s;
	int has_queue;
	struct fs_queue_settings queue;
	size_t nitems;
	struct item_desc items[FS_SALES_ITEMS_MAX];
};

/* Refuses members other than the known ones; 0 or -1. */
static int
only_known_members(json_object *doc, char *err, size_t errlen)
{
	static const char *const known[] = { "name", "startsAt", "startsInSeconds", "endsAt",
		"durationSeconds", "paymentWindowSeconds", "items", "queue", NULL };

	json_object_object_foreach(doc, key, val) {
		int ok = 0;

		(void)val;
		for (int i = 0; known[i] != NULL; i++)
			ok |= strcmp(key, known[i]) == 0;
		if (!ok) {
			ERR("unknown member \"%.64s\"", key);
			return -1;
		}
	}
	return 0;
}

/* Reads item i of the description into it; 0 or -1. */
static int
read_item(json_object *item, size_t i, struct item_desc *it, char *err, size_t errlen)
{
	if (!json_object_is_type(item, json_type_object) ||
	    (it->name = fs_jsonread_string(item, "name", 200)) == NULL ||
	    fs_jsonread_int(item, "priceMinor", 0, INT64_MAX, &it->price_minor) != 0 ||
	    (it->currency = fs_jsonread_string(item, "currency", 3)) == NULL ||
	    strlen(it->currency) != 3 || strspn(it->currency, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != 3 ||
	    fs_jsonread_int(item, "quantity", 0, 100000000, &it->quantity) != 0) {
		ERR("item %zu needs \"name\" (1-200 bytes), \"priceMinor\" (integer >= 0), "
		    "\"currency\" (3 capital letters) and \"quantity\" (integer 0-100000000)",
		    i);
		return -1;
	}
	it->shards = 1;
	if (has_member(item, "shards") &&
	    fs_jsonread_int(item, "shards", 1, FS_STOCK_SHARDS_MAX, &it->shards) != 0) {
		ERR("item %zu: \"shards\" must be an integer from 1 to %d", i, FS_STOCK_SHARDS_MAX);
		return -1;
	}
	return 0;
}

/* The waiting room of the description ("queue", optional) into d; 0 or -1. */
static int
read_queue_desc(struct sale_desc *d, char *err, size_t errlen)
{
	json_object *q;
	char why[160];

	if (!json_object_object_get_ex(d->doc, "queue", &q))
		return 0;
	if (!json_object_is_type(q, json_type_object)) {
		ERR("\"queue\" must be an object (docs/QUEUE.md)");
		return -1;
	}
	if (fs_queue_settings_parse(q, &d->queue, why, sizeof(why)) != 0) {
		ERR("\"queue\": %s", why);
		return -1;
	}
	d->has_queue = 1;
	return 0;
}

/* Parses and validates the whole description into d (d->doc to free); 0 or -1. */
static int
read_desc(const char *json, size_t len, struct sale_desc *d, char *err, size_t errlen)
{
	json_object *items;
	char why[128];

	if (len > FS_SALES_JSON_MAX) {
		ERR("sale description too big (over %d bytes)", FS_SALES_JSON_MAX);
		return -1;
	}
	if ((d->doc = fs_jsonread_object(json, len, 16, why, sizeof(why))) == NULL) {
		ERR("the sale description must be one JSON object: %s", why);
		return -1;
	}
	if (only_known_members(d->doc, err, errlen) != 0)
		return -1;
	if ((d->name = fs_jsonread_string(d->doc, "name", 200)) == NULL) {
		ERR("\"name\" must be a string of 1 to 200 bytes");
		return -1;
	}
	if (sale_time(d->doc, "startsAt", "startsInSeconds", d->starts, sizeof(d->starts), err,
		errlen) != 0 ||
	    sale_time(d->doc, "endsAt", "durationSeconds", d->ends, sizeof(d->ends), err, errlen) != 0)
		return -1;
	d->window_s = FS_STOCK_WINDOW_DEFAULT;
	if (has_member(d->doc, "paymentWindowSeconds") &&
	    fs_jsonread_int(d->doc, "paymentWindowSeconds", 10, 86400, &d->window_s) != 0) {
		ERR("\"paymentWindowSeconds\" must be an integer from 10 to 86400");
		return -1;
	}
	if (read_queue_desc(d, err, errlen) != 0)
		return -1;
	if (!json_object_object_get_ex(d->doc, "items", &items) ||
	    !json_object_is_type(items, json_type_array) ||
	    (d->nitems = json_object_array_length(items)) == 0 || d->nitems > FS_SALES_ITEMS_MAX) {
		ERR("\"items\" must be an array of 1 to %d items", FS_SALES_ITEMS_MAX);
		return -1;
	}
	for (size_t i = 0; i < d->nitems; i++)
		if (read_item(json_object_array_get_idx(items, i), i, &d->items[i], err, errlen) != 0)
			return -1;
	return 0;
}

int
fs_sales_check_description(const char *json, size_t len, char *err, size_t errlen)
{
	struct sale_desc *d;
	int rc;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		ERR("out of memory");
		return -1;
	}
	rc = read_desc(json, len, d, err, errlen);
	json_object_put(d->doc);
	free(d);
	return rc;
}

/*
 * The queue columns of a sale with a waiting room: its canonical settings
 * and a fresh seed (hex) drawn here; both NULL without one. 0, or -1.
 */
static int
queue_columns(const struct sale_desc *d, char json[FS_QUEUE_SETTINGS_JSON_MAX],
    char hex[2 * FS_QUEUE_SEEDBYTES + 1], const char **pjson, const char **phex)
{
	unsigned char seed[FS_QUEUE_SEEDBYTES];

	*pjson = *phex = NULL;
	if (!d->has_queue)
		return 0;
	if (fs_queue_settings_json(&d->queue, json, FS_QUEUE_SETTINGS_JSON_MAX) < 0)
		return -1;
	randombytes_buf(seed, sizeof(seed));
	sodium_bin2hex(hex, 2 * FS_QUEUE_SEEDBYTES + 1, seed, sizeof(seed));
	sodium_memzero(seed, sizeof(seed));
	*pjson = json;
	*phex = hex;
	return 0;
}

/* Inserts the sale (with its queue, if any); its id into sale_s. 0, or -1 (the database said why). */
static int
insert_sale(fs_pg *pg, const struct sale_desc *d, char sale_s[24])
{
	char window_s[24], qjson[FS_QUEUE_SETTINGS_JSON_MAX], qseed[2 * FS_QUEUE_SEEDBYTES + 1];
	/* "@N" means N seconds from now; anything else is a timestamp. */
	const char *p[6] = { d->name, d->starts, d->ends, window_s, NULL, NULL };
	PGresult *res;

	snprintf(window_s, sizeof(window_s), "%" PRId64, d->window_s);
	if (queue_columns(d, qjson, qseed, &p[4], &p[5]) != 0) {
		snprintf(pg->errstr, sizeof(pg->errstr), "queue settings do not fit");
		return -1;
	}
	res = fs_pg_exec(pg,
	    "INSERT INTO sales (name, starts_at, ends_at, payment_window_s, queue, queue_seed) "
	    "VALUES ($1, "
	    "CASE WHEN left($2, 1) = '@' THEN now() + make_interval(secs => substr($2, 2)::int) "
	    "ELSE $2::timestamptz END, "
	    "CASE WHEN left($3, 1) = '@' THEN "
	    "  (CASE WHEN left($2, 1) = '@' THEN now() + make_interval(secs => substr($2, 2)::int) "
	    "   ELSE $2::timestamptz END) + make_interval(secs => substr($3, 2)::int) "
	    "ELSE $3::timestamptz END, $4::int, $5::jsonb, decode($6, 'hex')) RETURNING id",
	    6, p);
	sodium_memzero(qseed, sizeof(qseed));
	if (res == NULL)
		return -1;
	snprintf(sale_s, 24, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* Inserts one item of the sale; its id into item_s. 0, or -1 (the database said why). */
static int
insert_item(fs_pg *pg, const char *sale_s, const struct item_desc *it, char item_s[24])
{
	char price_s[24], qty_s[24], shards_s[24];
	const char *p[6] = { sale_s, it->name, price_s, it->currency, qty_s, shards_s };
	PGresult *res;

	snprintf(price_s, sizeof(price_s), "%" PRId64, it->price_minor);
	snprintf(qty_s, sizeof(qty_s), "%" PRId64, it->quantity);
	snprintf(shards_s, sizeof(shards_s), "%" PRId64, it->shards);
	res = fs_pg_exec(pg,
	    "INSERT INTO items (sale_id, name, price_minor, currency, quantity, shards) "
	    "VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
	    6, p);
	if (res == NULL)
		return -1;
	snprintf(item_s, 24, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int
fs_sales_create(fs_pg *pg, const char *json, size_t len, char *out, size_t outlen, char *err,
    size_t errlen)
{
	struct sale_desc *d;
	char sale_s[24], item_s[24];
	size_t used;
	int rc = -1, in_tx = 0;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		ERR("out of memory");
		return -1;
	}
	if (read_desc(json, len, d, err, errlen) != 0)
		goto fail;
	if (fs_pg_run(pg, "BEGIN", 0, NULL) != 0) {
		DB_ERR();
		goto fail;
	}
	in_tx = 1;
	if (insert_sale(pg, d, sale_s) != 0) {
		DB_ERR();
		goto fail;
	}
	used = (size_t)snprintf(out, outlen, "{\"saleId\":%s,\"itemIds\":[", sale_s);
	for (size_t i = 0; i < d->nitems; i++) {
		if (insert_item(pg, sale_s, &d->items[i], item_s) != 0) {
			DB_ERR();
			goto fail;
		}
		if (used < outlen)
			used += (size_t)snprintf(out + used, outlen - used, "%s%s", i > 0 ? "," : "",
			    item_s);
	}
	if (used < outlen)
		used += (size_t)snprintf(out + used, outlen - used, "]}");
	if (used >= outlen) {
		ERR("answer buffer too small");
		goto fail;
	}
	if (fs_pg_run(pg, "COMMIT", 0, NULL) != 0) {
			DB_ERR();
			goto fail;
		}
	in_tx = 0;
	rc = 0;
	goto fail;
fail:
	if (in_tx)
		fs_pg_run(pg, "ROLLBACK", 0, NULL);
	json_object_put(d->doc);
	free(d);
	return rc;
}
