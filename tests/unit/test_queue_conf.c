/*
 * Unit test of lib/queue_conf.c against a real PostgreSQL of its own
 * (tests/unit/pg_server.h, the project's migrations): a sale's waiting
 * room read whole (settings through their one parser, seed and its
 * commitment, window, items and PostgreSQL's counts), a sale without one,
 * an unknown sale, stored settings that do not parse; and the per-thread
 * cache: one read per sale and second whatever the calls.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "metrics.h"
#include "pg.h"
#include "queue.h"
#include "expect.h"
#include "pg_server.h"

/* Sale 1: a waiting room, two items; 2: none; 3: settings that do not parse; 4: no item. */
static const char fixture[] =
    "INSERT INTO sales (id, name, starts_at, ends_at, queue, queue_seed) VALUES "
    "(1, 'q', to_timestamp(2000), to_timestamp(5000), "
    "'{\"preQueueSeconds\":600,\"passSeconds\":60,\"powBits\":4}', "
    "decode(repeat('ab', 32), 'hex')), "
    "(2, 'plain', to_timestamp(2000), to_timestamp(5000), NULL, NULL), "
    "(3, 'bad', to_timestamp(2000), to_timestamp(5000), '{\"bogus\":1}', "
    "decode(repeat('00', 32), 'hex')), "
    "(4, 'empty', to_timestamp(2000), to_timestamp(5000), '{}', decode(repeat('01', 32), 'hex'));"
    "INSERT INTO items (id, sale_id, name, price_minor, currency, quantity, sold) VALUES "
    "(11, 1, 'a', 1, 'VND', 5, 2), (12, 1, 'b', 1, 'VND', 3, 0), (21, 2, 'c', 1, 'VND', 1, 0);";

static void
check_read(fs_pg *pg)
{
	struct fs_queue_conf c;
	unsigned char seed[FS_QUEUE_SEEDBYTES], h[32];
	char err[256], hex[65];

	memset(&c, 0, sizeof(c));
	memset(seed, 0xab, sizeof(seed));
	crypto_hash_sha256(h, seed, sizeof(seed));
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	check(fs_queue_conf_read(pg, 1, &c, err, sizeof(err)) == 0 && c.found && c.has_queue &&
		c.settings.pre_s == 600 && c.settings.pass_s == 60 && c.settings.pow_bits == 4 &&
		c.settings.mult_milli == 1500 && c.settings.cap_per_s == 2000,
	    "a sale's waiting room: its settings, the rest from the defaults");
	check(memcmp(c.seed, seed, sizeof(seed)) == 0 && strcmp(c.seed_commit, hex) == 0,
	    "its seed, and the commitment SHA-256(seed) in hex");
	check(c.window.opens_ms == 2000000 && c.window.pre_ms == 2000000 - 600000 &&
		c.window.ends_ms == 5000000 && c.window.pass_s == 60,
	    "its window: joining preQueueSeconds before startsAt, the end, the pass length");
	check(c.nitems == 2 && c.items[0] == 11 && c.items[1] == 12 && c.pg_left[0] == 3 &&
		c.pg_left[1] == 3,
	    "its items in id order, with quantity - sold");
	check(fs_queue_conf_read(pg, 2, &c, err, sizeof(err)) == 0 && c.found && !c.has_queue &&
		c.nitems == 1,
	    "a sale without a waiting room: found, no queue (read into the same conf)");
	check(fs_queue_conf_read(pg, 99, &c, err, sizeof(err)) == 0 && !c.found,
	    "an unknown sale: not found");
	err[0] = '\0';
	check(fs_queue_conf_read(pg, 3, &c, err, sizeof(err)) == -1 && strstr(err, "bogus") != NULL,
	    "stored settings that do not parse: -1 naming the member");
	check(fs_queue_conf_read(pg, 4, &c, err, sizeof(err)) == 0 && c.has_queue && c.nitems == 0 &&
		c.settings.pow_bits == 14,
	    "a waiting room of defaults and no item");
	fs_queue_conf_clear(&c);
}

static void
check_cache(fs_pg *pg, const struct test_pg *srv)
{
	fs_queue_conf_cache *cache = fs_queue_conf_cache_new();
	const struct fs_queue_conf *c;
	uint64_t reads = fs_metrics_value(FS_M_QUEUE_SALE_READS);
	char err[256];
	int same = 1;

	for (int i = 0; i < 100; i++) {
		c = fs_queue_conf_get(cache, pg, 1, 10000 + i * 9, err, sizeof(err));
		same &= c != NULL && c->settings.pass_s == 60;
	}
	check(same && fs_metrics_value(FS_M_QUEUE_SALE_READS) - reads == 1,
	    "100 calls within a second: one read of PostgreSQL");
	test_pg_sql(srv, "flashsale",
	    "UPDATE sales SET queue = '{\"passSeconds\":90}' WHERE id = 1");
	c = fs_queue_conf_get(cache, pg, 1, 10999, err, sizeof(err));
	check(c != NULL && c->settings.pass_s == 60, "a change is not seen within the second");
	c = fs_queue_conf_get(cache, pg, 1, 11000, err, sizeof(err));
	check(c != NULL && c->settings.pass_s == 90 &&
		fs_metrics_value(FS_M_QUEUE_SALE_READS) - reads == 2,
	    "a second later it is read again");
	for (uint64_t sale = 1; sale <= 12; sale++)
		(void)fs_queue_conf_get(cache, pg, sale == 3 ? 2 : sale, 11000, err, sizeof(err));
	c = fs_queue_conf_get(cache, pg, 99, 11000, err, sizeof(err));
	check(c != NULL && !c->found, "more sales than slots: each still answered (an unknown one too)");
	check(fs_queue_conf_get(cache, pg, 3, 11000, err, sizeof(err)) == NULL,
	    "a sale that cannot be read: NULL with err, nothing cached");
	fs_queue_conf_cache_free(cache);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct test_pg srv;
	fs_pg *pg;

	if (sodium_init() < 0 || top == NULL || test_pg_start(&srv, top) != 0) {
		printf("Bail out! needs top_srcdir and PostgreSQL 15 (deploy/install-deps)\n");
		test_pg_finish(&srv);
		return 99;
	}
	if (test_pg_sql(&srv, "flashsale", fixture) != 0 || (pg = fs_pg_new(srv.conninfo)) == NULL) {
		printf("Bail out! the fixture\n");
		test_pg_finish(&srv);
		return 99;
	}
	check_read(pg);
	check_cache(pg, &srv);
	fs_pg_free(pg);
	test_pg_finish(&srv);
	return failures == 0 ? 0 : 1;
}
