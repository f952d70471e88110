/*
 * Unit test of lib/sales' create against a real PostgreSQL
 * (tests/unit/pg_server.h): a sale with a waiting room stores its canonical
 * settings and a fresh seed in the same transaction as the sale, reads
 * back with them (the commitment is SHA-256 of the stored seed); a sale
 * without one stores none; bad settings are refused, nothing written.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "sales.h"
#include "expect.h"
#include "pg_server.h"

static struct test_pg srv;
static fs_pg *pg;

#define ITEM "{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9}"

/* Creates a sale with queue member q (NULL: none); its id, 0 when refused (err says why). */
static uint64_t
create(const char *q, char *err, size_t errlen)
{
	char json[1024], out[256];
	uint64_t sale = 0;

	snprintf(json, sizeof(json), "{\"name\":\"s\",\"startsInSeconds\":60,\"durationSeconds\":60,"
	    "\"items\":[" ITEM "]%s%s}", q != NULL ? ",\"queue\":" : "", q != NULL ? q : "");
	err[0] = '\0';
	if (fs_sales_create(pg, json, strlen(json), out, sizeof(out), err, errlen) != 0 ||
	    sscanf(out, "{\"saleId\":%" SCNu64, &sale) != 1)
		return 0;
	return sale;
}

/* One text value of a query about sale ("" none, "NULL" for a null). */
static const char *
value(const char *sql, uint64_t sale)
{
	static char out[256];
	char id[24];
	const char *p[1] = { id };
	PGresult *r;

	snprintf(id, sizeof(id), "%" PRIu64, sale);
	out[0] = '\0';
	if ((r = fs_pg_exec(pg, sql, 1, p)) != NULL && PQntuples(r) == 1)
		snprintf(out, sizeof(out), "%s", PQgetisnull(r, 0, 0) ? "NULL" : PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}

static void
test_with_queue(void)
{
	struct fs_sale_item items[FS_SALES_ITEMS_MAX];
	struct fs_sale s = { .items = items };
	char err[256], commit[65], seed1[65];
	uint64_t a = create("{\"powBits\":12,\"admitMultiple\":2.5}", err, sizeof(err));
	uint64_t b = create("{}", err, sizeof(err));

	check(a != 0 && b != 0, "a sale with a queue is created");
	check(strcmp(value("SELECT queue::text FROM sales WHERE id = $1", a),
		  "{\"powBits\": 12, \"passSeconds\": 120, \"claimSeconds\": 15, \"admitMultiple\": 2.5, "
		  "\"preQueueSeconds\": 900, \"capacityPerSecond\": 2000}") == 0,
	    "its settings stored whole, the defaults filled in");
	snprintf(seed1, sizeof(seed1), "%s", value("SELECT encode(queue_seed, 'hex') FROM sales "
						   "WHERE id = $1", a));
	check(strlen(seed1) == 64 &&
		strcmp(seed1, value("SELECT encode(queue_seed, 'hex') FROM sales WHERE id = $1", b)) != 0,
	    "a seed of 32 bytes, drawn afresh for each sale");
	check(fs_sales_read(pg, NULL, a, &s, err, sizeof(err)) == 0 && s.has_queue &&
		s.queue.pow_bits == 12 && s.queue.mult_milli == 2500 && s.queue.pass_s == 120,
	    "read back: the sale has its queue and settings");
	fs_queue_seed_commit(s.seed, commit);
	check(strcmp(commit, value("SELECT encode(sha256(queue_seed), 'hex') FROM sales WHERE id = $1",
				 a)) == 0,
	    "read back: the seed, whose commitment is SHA-256 of the stored bytes");
}

static void
test_without_queue(void)
{
	struct fs_sale_item items[FS_SALES_ITEMS_MAX];
	struct fs_sale s = { .items = items, .has_queue = 1 };
	char err[256];
	uint64_t a = create(NULL, err, sizeof(err));

	check(a != 0 && strcmp(value("SELECT coalesce(queue::text, 'NULL') || "
				     "coalesce(encode(queue_seed, 'hex'), 'NULL') FROM sales "
				     "WHERE id = $1", a), "NULLNULL") == 0,
	    "a sale without a queue stores none");
	check(fs_sales_read(pg, NULL, a, &s, err, sizeof(err)) == 0 && s.found && !s.has_queue,
	    "and reads back without one");
}

static void
test_refused(void)
{
	static const char *const bad[] = { "{\"powBits\":29}", "{\"passSeconds\":\"120\"}",
		"{\"admitMultiple\":0.5}", "{\"capacity\":5}", "[]", "1", NULL };
	long before = strtol(value("SELECT count(*) FROM sales WHERE id > $1", 0), NULL, 10);
	char err[256];
	int refused = 0, said = 0;

	for (int i = 0; bad[i] != NULL; i++) {
		refused += create(bad[i], err, sizeof(err)) == 0;
		said += strncmp(err, "\"queue\"", 7) == 0;
	}
	check(refused == 6 && said == 6, "bad settings refused, the error naming \"queue\"");
	check(strtol(value("SELECT count(*) FROM sales WHERE id > $1", 0), NULL, 10) == before,
	    "and nothing written");
}

int
main(void)
{
	if (sodium_init() < 0 || test_pg_start(&srv, getenv("top_srcdir")) != 0 ||
	    (pg = fs_pg_new(srv.conninfo)) == NULL) {
		printf("Bail out! needs top_srcdir and PostgreSQL 15\n");
		test_pg_finish(&srv);
		return 1;
	}
	test_with_queue();
	test_without_queue();
	test_refused();
	fs_pg_free(pg);
	test_pg_finish(&srv);
	return failures == 0 ? 0 : 1;
}
