/*
 * Unit test of lib/sales: the signed purchase paths, the sale description's
 * shards and the units left an item shows.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "route.h"
#include "sales.h"
#include "expect.h"

struct seen {
	const fs_urlsig_key *key;
	int queue; /* the flag every path must carry */
	int n, good;
};

/* Checks that a signed path reads back as its item's purchase in its sale. */
static void
check_path(void *arg, uint64_t item, const char *path)
{
	struct seen *s = arg;
	char route[FS_SALES_PATH_MAX];
	uint64_t parsed = 0, sale = 0;
	int queue = -1;
	size_t n = strcspn(path, "?");
	const char *query = path + n + (path[n] == '?');

	s->n++;
	snprintf(route, sizeof(route), "%.*s", (int)n, path);
	if (fs_route_purchase_item(route, &parsed) == 0 && parsed == item &&
	    fs_urlsig_check(s->key, item, query, strlen(query), 1700000000, &sale, NULL, &queue) ==
		FS_URLSIG_OK &&
	    sale == 7 && queue == s->queue)
		s->good++;
}

/* A sale description with ITEM as its only item, checked. */
static int
description_ok(const char *item)
{
	char json[512], err[256];

	snprintf(json, sizeof(json),
	    "{\"name\":\"s\",\"startsInSeconds\":60,\"durationSeconds\":60,\"items\":[%s]}", item);
	return fs_sales_check_description(json, strlen(json), err, sizeof(err)) == 0;
}

static void
check_shards(void)
{
	check(description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9}") &&
		description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9,"
			       "\"shards\":3}") &&
		description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9,"
			       "\"shards\":16}"),
	    "an item may give shards (1 to 16), or none");
	check(!description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9,"
			      "\"shards\":0}") &&
		!description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9,"
				"\"shards\":17}") &&
		!description_ok("{\"name\":\"x\",\"priceMinor\":1,\"currency\":\"VND\",\"quantity\":9,"
				"\"shards\":\"3\"}"),
	    "shards outside 1 to 16, or not a number, are refused");
}

/* The units left: Redis's when it knows, PostgreSQL's otherwise, within 0..quantity. */
static void
check_item_left(void)
{
	struct fs_sale_item it = { .quantity = 10, .sold = 3, .left = 5 };

	check(fs_sales_item_left(&it) == 5, "Redis's count when it has one (holds count as taken)");
	it.left = 0;
	check(fs_sales_item_left(&it) == 0, "0 left in Redis is sold out");
	it.left = -1;
	check(fs_sales_item_left(&it) == 7, "an item Redis does not know: quantity - sold");
	it.sold = 12;
	check(fs_sales_item_left(&it) == 0, "never below 0");
	it.left = 11;
	check(fs_sales_item_left(&it) == 10, "never above the quantity");
}

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES] = { 1, 2, 3 };
	struct fs_sale_item items[2] = { { .id = 11 }, { .id = 12 } };
	struct fs_sale sale = { .id = 7, .found = 1, .nitems = 2, .items = items };
	struct seen seen = { 0 };
	fs_urlsig_key *key;

	if (sodium_init() < 0 || (key = fs_urlsig_key_new()) == NULL)
		return 99;
	fs_urlsig_key_set(key, raw);

	/* 1699999999.5 to 1700003600.9: valid from the whole second of each. */
	sale.starts_ms = INT64_C(1699999999500);
	sale.ends_ms = INT64_C(1700003600900);
	seen.key = key;
	check(fs_sales_purchase_paths(key, &sale, check_path, &seen) == 0 && seen.n == 2 &&
		seen.good == 2,
	    "every item's signed path buys that item in that sale");
	sale.has_queue = 1;
	seen.queue = 1;
	seen.n = seen.good = 0;
	check(fs_sales_purchase_paths(key, &sale, check_path, &seen) == 0 && seen.n == 2 &&
		seen.good == 2,
	    "a sale with a waiting room signs q=1 into every item's path");
	sale.ends_ms = sale.starts_ms;
	check(fs_sales_purchase_paths(key, &sale, check_path, &seen) == -1,
	    "an empty window cannot be signed");
	fs_urlsig_key_free(key);
	check_shards();
	check_item_left();
	return failures == 0 ? 0 : 1;
}
