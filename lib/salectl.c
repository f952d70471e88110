#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "salectl.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

static const char *const state_names[FS_SALECTL_STATE__MAX] = {
	[FS_SALECTL_SCHEDULED] = "scheduled",
	[FS_SALECTL_OPEN] = "open",
	[FS_SALECTL_ENDED] = "ended",
};

/* The columns of struct fs_salectl_sale, in its order. */
#define SALE_COLUMNS                                                                       \
	"s.id, s.name, floor(extract(epoch FROM s.starts_at) * 1000)::bigint, "            \
	"floor(extract(epoch FROM s.ends_at) * 1000)::bigint, s.payment_window_s, "         \
	"count(i.id), coalesce(sum(i.quantity), 0), coalesce(sum(i.sold), 0) "              \
	"FROM sales s LEFT JOIN items i ON i.sale_id = s.id "

const char *
fs_salectl_state_name(enum fs_salectl_state st)
{
	return st >= 0 && st < FS_SALECTL_STATE__MAX ? state_names[st] : "?";
}

enum fs_salectl_state
fs_salectl_state_at(const struct fs_salectl_sale *s, int64_t now_ms)
{
	if (now_ms < s->starts_ms)
		return FS_SALECTL_SCHEDULED;
	return now_ms < s->ends_ms ? FS_SALECTL_OPEN : FS_SALECTL_ENDED;
}

static void
read_row(PGresult *res, int row, struct fs_salectl_sale *s)
{
	memset(s, 0, sizeof(*s));
	s->id = strtoull(PQgetvalue(res, row, 0), NULL, 10);
	snprintf(s->name, sizeof(s->name), "%s", PQgetvalue(res, row, 1));
	s->starts_ms = strtoll(PQgetvalue(res, row, 2), NULL, 10);
	s->ends_ms = strtoll(PQgetvalue(res, row, 3), NULL, 10);
	s->window_s = strtol(PQgetvalue(res, row, 4), NULL, 10);
	s->items = strtol(PQgetvalue(res, row, 5), NULL, 10);
	s->quantity = strtol(PQgetvalue(res, row, 6), NULL, 10);
	s->sold = strtol(PQgetvalue(res, row, 7), NULL, 10);
}

int
fs_salectl_list(fs_pg *pg, struct fs_salectl_sale *sales, int max, char *err, size_t errlen)
{
	char max_s[24];
	const char *p[1] = { max_s };
	PGresult *res;
	int n;

	snprintf(max_s, sizeof(max_s), "%d", max);
	if ((res = fs_pg_exec(pg,
		 "SELECT * FROM (SELECT " SALE_COLUMNS
		 "GROUP BY s.id ORDER BY s.id DESC LIMIT $1) latest ORDER BY 1",
		 1, p)) == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	n = PQntuples(res);
	for (int i = 0; i < n && i < max; i++)
		read_row(res, i, &sales[i]);
	PQclear(res);
	return n < max ? n : max;
}

enum fs_salectl_result
fs_salectl_get(fs_pg *pg, uint64_t sale, struct fs_salectl_sale *s, char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *res;
	enum fs_salectl_result rc = FS_SALECTL_UNKNOWN;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((res = fs_pg_exec(pg, "SELECT " SALE_COLUMNS "WHERE s.id = $1 GROUP BY s.id", 1, p)) ==
	    NULL) {
		ERR("database: %s", pg->errstr);
		return FS_SALECTL_ERROR;
	}
	if (PQntuples(res) == 1) {
		read_row(res, 0, s);
		rc = FS_SALECTL_OK;
	} else {
		ERR("no sale %s", sale_s);
	}
	PQclear(res);
	return rc;
}

/*
 * Sets sales.ends_at to ends_ms while it is still old_ends_ms (a concurrent
 * change wins and the caller is told to look again). 1 moved, 0 raced, -1.
 */
static int
move_end(fs_pg *pg, uint64_t sale, int64_t old_ends_ms, int64_t ends_ms, char *err, size_t errlen)
{
	char sale_s[24], old_s[24], new_s[24];
	const char *p[3] = { sale_s, old_s, new_s };
	PGresult *res;
	int moved;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(old_s, sizeof(old_s), "%" PRId64, old_ends_ms);
	snprintf(new_s, sizeof(new_s), "%" PRId64, ends_ms);
	if ((res = fs_pg_exec(pg,
		 "UPDATE sales SET ends_at = to_timestamp($3::bigint / 1000.0) WHERE id = $1 AND "
		 "floor(extract(epoch FROM ends_at) * 1000)::bigint = $2::bigint",
		 3, p)) == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	moved = strcmp(PQcmdTuples(res), "1") == 0;
	PQclear(res);
	if (!moved)
		ERR("sale %s changed meanwhile; look again (flashsale-admin sale list)", sale_s);
	return moved;
}

/* Writes the new end into Redis first (see salectl.h); 0 or -1. */
static int
set_ends(fs_pg *pg, fs_stock *st, const struct fs_salectl_sale *s, int64_t ends_ms, char *err,
    size_t errlen)
{
	if (fs_stock_set_end(st, s->id, ends_ms) < 0) {
		ERR("redis: %s (nothing changed in PostgreSQL)", st->errstr);
		return -1;
	}
	return move_end(pg, s->id, s->ends_ms, ends_ms, err, errlen) == 1 ? 0 : -1;
}

enum fs_salectl_result
fs_salectl_close(fs_pg *pg, fs_stock *st, uint64_t sale, int64_t now_ms, struct fs_salectl_sale *s,
    int64_t *ends_ms, char *err, size_t errlen)
{
	enum fs_salectl_result rc;

	if ((rc = fs_salectl_get(pg, sale, s, err, errlen)) != FS_SALECTL_OK)
		return rc;
	*ends_ms = s->ends_ms;
	switch (fs_salectl_state_at(s, now_ms)) {
	case FS_SALECTL_SCHEDULED:
		return FS_SALECTL_NOT_STARTED;
	case FS_SALECTL_ENDED:
		return FS_SALECTL_ALREADY_ENDED;
	default:
		break;
	}
	/* The CHECK (ends_at > starts_at) holds: the sale started before now. */
	if (now_ms <= s->starts_ms)
		return FS_SALECTL_NOT_STARTED;
	if (set_ends(pg, st, s, now_ms, err, errlen) != 0)
		return FS_SALECTL_ERROR;
	*ends_ms = now_ms;
	return FS_SALECTL_OK;
}

enum fs_salectl_result
fs_salectl_extend(fs_pg *pg, fs_stock *st, uint64_t sale, long seconds, int64_t now_ms,
    struct fs_salectl_sale *s, int64_t *ends_ms, char *err, size_t errlen)
{
	enum fs_salectl_result rc;

	if (seconds < 1 || seconds > FS_SALECTL_EXTEND_MAX)
		return FS_SALECTL_BAD_SECONDS;
	if ((rc = fs_salectl_get(pg, sale, s, err, errlen)) != FS_SALECTL_OK)
		return rc;
	*ends_ms = s->ends_ms;
	if (fs_salectl_state_at(s, now_ms) == FS_SALECTL_ENDED)
		return FS_SALECTL_ALREADY_ENDED;
	if (set_ends(pg, st, s, s->ends_ms + (int64_t)seconds * 1000, err, errlen) != 0)
		return FS_SALECTL_ERROR;
	*ends_ms = s->ends_ms + (int64_t)seconds * 1000;
	return FS_SALECTL_OK;
}
