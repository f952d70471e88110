/* Unit test of lib/sales: ids, paths, and the signed purchase paths. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "sales.h"
#include "expect.h"

struct seen {
	const fs_urlsig_key *key;
	int n, good;
};

/* Checks that a signed path reads back as its item's purchase in its sale. */
static void
check_path(void *arg, uint64_t item, const char *path)
{
	struct seen *s = arg;
	char route[FS_SALES_PATH_MAX];
	uint64_t parsed = 0, sale = 0;
	size_t n = strcspn(path, "?");
	const char *query = path + n + (path[n] == '?');

	s->n++;
	snprintf(route, sizeof(route), "%.*s", (int)n, path);
	if (fs_sales_parse_purchase_path(route, &parsed) == 0 && parsed == item &&
	    fs_urlsig_check(s->key, item, query, strlen(query), 1700000000, &sale, NULL) == FS_URLSIG_OK &&
	    sale == 7)
		s->good++;
}

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES] = { 1, 2, 3 };
	struct fs_sale_item items[2] = { { .id = 11 }, { .id = 12 } };
	struct fs_sale sale = { .id = 7, .found = 1, .nitems = 2, .items = items };
	struct seen seen = { 0 };
	fs_urlsig_key *key;
	const char *rest;
	uint64_t id = 0;

	if (sodium_init() < 0 || (key = fs_urlsig_key_new()) == NULL)
		return 99;
	fs_urlsig_key_set(key, raw);

	check(fs_sales_parse_id("42", &id) == 0 && id == 42, "an id");
	check(fs_sales_parse_id("999999999999999999", &id) == 0 && id == UINT64_C(999999999999999999),
	    "the largest id (18 digits)");
	check(fs_sales_parse_id("1000000000000000000", &id) == -1 &&
		fs_sales_parse_id("9223372036854775808", &id) == -1,
	    "an id of 19 digits is refused");
	check(fs_sales_parse_id("007", &id) == -1 && fs_sales_parse_id("07", &id) == -1 &&
		fs_sales_parse_id("00", &id) == -1 && fs_sales_parse_id("+7", &id) == -1 &&
		fs_sales_parse_id(" 7", &id) == -1 && fs_sales_parse_id("7 ", &id) == -1,
	    "only the canonical form: no leading zero, sign or space");
	check(fs_sales_parse_id("0", &id) == -1 && fs_sales_parse_id("", &id) == -1 &&
		fs_sales_parse_id("-1", &id) == -1 && fs_sales_parse_id("1x", &id) == -1,
	    "zero, empty, signed and trailing characters are refused");

	rest = fs_sales_path_id("/api/flash-sales/sales/12/reveal", "/api/flash-sales/sales/", &id);
	check(rest != NULL && id == 12 && strcmp(rest, "/reveal") == 0, "path id and the rest");
	rest = fs_sales_path_id("/api/flash-sales/sales/12", "/api/flash-sales/sales/", &id);
	check(rest != NULL && *rest == '\0', "path id at the end");
	check(fs_sales_path_id("/api/flash-sales/sales/x", "/api/flash-sales/sales/", &id) == NULL &&
		fs_sales_path_id("/api/flash-sales/other/1", "/api/flash-sales/sales/", &id) == NULL &&
		fs_sales_path_id(NULL, "/api/flash-sales/sales/", &id) == NULL,
	    "no id, another prefix or no path: NULL");
	check(fs_sales_path_id("/p/123456789012345678901234", "/p/", &id) == NULL,
	    "an id of too many digits is refused");

	check(fs_sales_parse_purchase_path("/api/flash-sales/items/5/purchase", &id) == 0 && id == 5,
	    "a purchase path");
	check(fs_sales_parse_purchase_path("/api/flash-sales/items/5/purchase/", &id) == -1 &&
		fs_sales_parse_purchase_path("/api/flash-sales/items/5", &id) == -1 &&
		fs_sales_parse_purchase_path("/api/flash-sales/items//purchase", &id) == -1 &&
		fs_sales_parse_purchase_path("/api/flash-sales/items/0/purchase", &id) == -1 &&
		fs_sales_parse_purchase_path("/api/flash-sales/items/05/purchase", &id) == -1,
	    "anything else is not a purchase path");

	/* 1699999999.5 to 1700003600.9: valid from the whole second of each. */
	sale.starts_ms = INT64_C(1699999999500);
	sale.ends_ms = INT64_C(1700003600900);
	seen.key = key;
	check(fs_sales_purchase_paths(key, &sale, check_path, &seen) == 0 && seen.n == 2 &&
		seen.good == 2,
	    "every item's signed path buys that item in that sale");
	sale.ends_ms = sale.starts_ms;
	check(fs_sales_purchase_paths(key, &sale, check_path, &seen) == -1,
	    "an empty window cannot be signed");
	fs_urlsig_key_free(key);
	return failures == 0 ? 0 : 1;
}
