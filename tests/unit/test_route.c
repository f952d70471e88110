/* Unit test of lib/route: ids, path ids, purchase and order paths. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "route.h"
#include "expect.h"

int
main(void)
{
	char path[96], oid[FS_UUID_STRLEN + 1];
	const char *rest;
	uint64_t id = 0;

	check(fs_route_parse_id("42", &id) == 0 && id == 42, "an id");
	check(fs_route_parse_id("999999999999999999", &id) == 0 && id == UINT64_C(999999999999999999),
	    "the largest id (18 digits)");
	check(fs_route_parse_id("1000000000000000000", &id) == -1 &&
		fs_route_parse_id("9223372036854775808", &id) == -1,
	    "an id of 19 digits is refused");
	check(fs_route_parse_id("007", &id) == -1 && fs_route_parse_id("07", &id) == -1 &&
		fs_route_parse_id("00", &id) == -1 && fs_route_parse_id("+7", &id) == -1 &&
		fs_route_parse_id(" 7", &id) == -1 && fs_route_parse_id("7 ", &id) == -1,
	    "only the canonical form: no leading zero, sign or space");
	check(fs_route_parse_id("0", &id) == -1 && fs_route_parse_id("", &id) == -1 &&
		fs_route_parse_id("-1", &id) == -1 && fs_route_parse_id("1x", &id) == -1,
	    "zero, empty, signed and trailing characters are refused");

	rest = fs_route_path_id("/api/flash-sales/sales/12/reveal", "/api/flash-sales/sales/", &id);
	check(rest != NULL && id == 12 && strcmp(rest, "/reveal") == 0, "path id and the rest");
	rest = fs_route_path_id("/api/flash-sales/sales/12", "/api/flash-sales/sales/", &id);
	check(rest != NULL && *rest == '\0', "path id at the end");
	check(fs_route_path_id("/api/flash-sales/sales/x", "/api/flash-sales/sales/", &id) == NULL &&
		fs_route_path_id("/api/flash-sales/other/1", "/api/flash-sales/sales/", &id) == NULL &&
		fs_route_path_id(NULL, "/api/flash-sales/sales/", &id) == NULL,
	    "no id, another prefix or no path: NULL");
	check(fs_route_path_id("/p/123456789012345678901234", "/p/", &id) == NULL,
	    "an id of too many digits is refused");

	check(fs_route_purchase_item("/api/flash-sales/items/5/purchase", &id) == 0 && id == 5,
	    "a purchase path");
	check(fs_route_purchase_item("/api/flash-sales/items/5/purchase/", &id) == -1 &&
		fs_route_purchase_item("/api/flash-sales/items/5", &id) == -1 &&
		fs_route_purchase_item("/api/flash-sales/items//purchase", &id) == -1 &&
		fs_route_purchase_item("/api/flash-sales/items/0/purchase", &id) == -1 &&
		fs_route_purchase_item("/api/flash-sales/items/05/purchase", &id) == -1,
	    "anything else is not a purchase path");

	check(fs_route_purchase_path(path, sizeof(path), 5, "sale=1") > 0 &&
		strcmp(path, "/api/flash-sales/items/5/purchase?sale=1") == 0,
	    "a purchase path is written");
	check(fs_route_purchase_path(path, 20, 5, "sale=1") == -1, "a small buffer is refused");
	rest = fs_route_path_uuid("/api/flash-sales/orders/01900000-0000-7000-8000-000000000001/pay",
	    FS_ROUTE_ORDER_PREFIX, oid);
	check(rest != NULL && strcmp(rest, "/pay") == 0 &&
		strcmp(oid, "01900000-0000-7000-8000-000000000001") == 0,
	    "an order path: the id and the rest");
	check(fs_route_path_uuid("/api/flash-sales/orders/01900000-0000-7000-8000-00000000000", FS_ROUTE_ORDER_PREFIX,
		  oid) == NULL &&
		fs_route_path_uuid("/api/flash-sales/orders/0190000x-0000-7000-8000-000000000001",
		    FS_ROUTE_ORDER_PREFIX, oid) == NULL &&
		fs_route_path_uuid(NULL, FS_ROUTE_ORDER_PREFIX, oid) == NULL,
	    "a short, bad or missing order id is refused");
	return failures == 0 ? 0 : 1;
}
