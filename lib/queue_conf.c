/*
 * A sale's waiting room as PostgreSQL has it (sql/010_queue.sql): its
 * settings (sales.queue, read by fs_queue_settings_parse, their one
 * reader), its seed, its window and its items' counts; and a worker
 * thread's cache of them, kept a second, so that a join or a status
 * document costs PostgreSQL nothing while the cache is fresh.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "jsonread.h"
#include "metrics.h"
#include "pg.h"
#include "queue.h"

/* Items of one sale at most (lib/sales refuses more at creation). */
#define ITEMS_MAX 1000

struct fs_queue_conf_cache {
	struct {
		struct fs_queue_conf conf;
		int64_t read_ms; /* 0: the slot is empty */
	} slot[FS_QUEUE_CONF_SLOTS];
};

/* One row per item (or one with a NULL item for a sale without any). */
static const char conf_sql[] =
    "SELECT floor(extract(epoch FROM s.starts_at) * 1000)::bigint, "
    "floor(extract(epoch FROM s.ends_at) * 1000)::bigint, s.queue::text, "
    "encode(s.queue_seed, 'hex'), i.id, i.quantity - i.sold "
    "FROM sales s LEFT JOIN items i ON i.sale_id = s.id WHERE s.id = $1 ORDER BY i.id";

void
fs_queue_conf_clear(struct fs_queue_conf *c)
{
	free(c->items);
	free(c->pg_left);
	sodium_memzero(c, sizeof(*c));
}

/* The queue members of the first row: settings, seed, window. 0 or -1 with err. */
static int
take_queue(PGresult *res, struct fs_queue_conf *c, char *err, size_t errlen)
{
	const char *json = PQgetvalue(res, 0, 2), *hex = PQgetvalue(res, 0, 3);
	size_t seedlen = 0;
	json_object *o;
	int parsed;

	c->window.opens_ms = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
	c->window.ends_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	if (PQgetisnull(res, 0, 2))
		return 0;
	if ((o = fs_jsonread_object(json, strlen(json), 2, err, errlen)) == NULL)
		return -1;
	parsed = fs_queue_settings_parse(o, &c->settings, err, errlen);
	json_object_put(o);
	if (parsed != 0)
		return -1;
	if (sodium_hex2bin(c->seed, sizeof(c->seed), hex, strlen(hex), NULL, &seedlen, NULL) != 0 ||
	    seedlen != sizeof(c->seed)) {
		snprintf(err, errlen, "sale %" PRIu64 ": queue_seed is not 32 bytes", c->sale);
		return -1;
	}
	fs_queue_seed_commit(c->seed, c->seed_commit);
	c->window.pre_ms = c->window.opens_ms - (int64_t)c->settings.pre_s * 1000;
	c->window.pass_s = c->settings.pass_s;
	c->window.claim_s = c->settings.claim_s;
	c->has_queue = 1;
	return 0;
}

/* The items of the rows. 0, or -1 with err. */
static int
take_items(PGresult *res, struct fs_queue_conf *c, char *err, size_t errlen)
{
	int rows = PQntuples(res);

	if (rows > ITEMS_MAX) {
		snprintf(err, errlen, "sale %" PRIu64 ": more than %d items", c->sale,
		    ITEMS_MAX);
		return -1;
	}
	if ((c->items = calloc((size_t)rows, sizeof(*c->items))) == NULL ||
	    (c->pg_left = calloc((size_t)rows, sizeof(*c->pg_left))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < rows; i++) {
		if (PQgetisnull(res, i, 4))
			continue;
		c->items[c->nitems] = strtoull(PQgetvalue(res, i, 4), NULL, 10);
		c->pg_left[c->nitems++] = strtol(PQgetvalue(res, i, 5), NULL, 10);
	}
	return 0;
}

int
fs_queue_conf_read(struct fs_pg *pg, uint64_t sale, struct fs_queue_conf *c, char *err,
    size_t errlen)
{
	char id[24];
	const char *p[1] = { id };
	PGresult *res;
	int rc = 0;

	fs_queue_conf_clear(c);
	c->sale = sale;
	snprintf(id, sizeof(id), "%" PRIu64, sale);
	if ((res = fs_pg_exec(pg, conf_sql, 1, p)) == NULL) {
		snprintf(err, errlen, "sale %" PRIu64 ": %s", sale, pg->errstr);
		return -1;
	}
	if (PQntuples(res) > 0) {
		c->found = 1;
		rc = take_queue(res, c, err, errlen) == 0 && take_items(res, c, err, errlen) == 0 ?
		    0 :
		    -1;
	}
	PQclear(res);
	if (rc != 0)
		fs_queue_conf_clear(c);
	return rc;
}

fs_queue_conf_cache *
fs_queue_conf_cache_new(void)
{
	return calloc(1, sizeof(struct fs_queue_conf_cache));
}

void
fs_queue_conf_cache_free(fs_queue_conf_cache *cache)
{
	if (cache == NULL)
		return;
	for (int i = 0; i < FS_QUEUE_CONF_SLOTS; i++)
		fs_queue_conf_clear(&cache->slot[i].conf);
	free(cache);
}

const struct fs_queue_conf *
fs_queue_conf_get(fs_queue_conf_cache *cache, struct fs_pg *pg, uint64_t sale, int64_t now_ms,
    char *err, size_t errlen)
{
	int use = 0;

	for (int i = 0; i < FS_QUEUE_CONF_SLOTS; i++) {
		if (cache->slot[i].read_ms != 0 && cache->slot[i].conf.sale == sale) {
			if (now_ms >= cache->slot[i].read_ms &&
			    now_ms - cache->slot[i].read_ms < FS_QUEUE_CONF_CACHE_MS)
				return &cache->slot[i].conf;
			use = i;
			break;
		}
		/* Else the least recently read (an empty slot reads as 0). */
		if (cache->slot[i].read_ms < cache->slot[use].read_ms)
			use = i;
	}
	cache->slot[use].read_ms = 0;
	fs_metrics_count(FS_M_QUEUE_SALE_READS);
	if (fs_queue_conf_read(pg, sale, &cache->slot[use].conf, err, errlen) != 0)
		return NULL;
	cache->slot[use].read_ms = now_ms;
	return &cache->slot[use].conf;
}
