/*
 * libFuzzer harness of the route parsers (lib/sales): the purchase path,
 * an id after a prefix and a bare id, on any bytes. What they accept must
 * be the one canonical spelling of the id (decimal, no leading zero, at
 * most FS_ROUTE_ID_DIGITS digits), the form nginx's locations match.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* id printed back must be exactly the digits at s (n of them). */
static void
canonical(const char *s, size_t n, uint64_t id)
{
	char back[32];
	int len = snprintf(back, sizeof(back), "%" PRIu64, id);

	if (id == 0 || len <= 0 || (size_t)len != n || memcmp(back, s, n) != 0 ||
	    n > FS_ROUTE_ID_DIGITS)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char prefix[] = "/api/flash-sales/items/";
	char *s = malloc(size + 1);
	const char *rest;
	uint64_t id;

	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (fs_route_parse_id(s, &id) == 0)
		canonical(s, strlen(s), id);
	if ((rest = fs_route_path_id(s, prefix, &id)) != NULL) {
		canonical(s + sizeof(prefix) - 1, (size_t)(rest - s) - (sizeof(prefix) - 1), id);
		if (fs_route_purchase_item(s, &id) == 0 && strcmp(rest, "/purchase") != 0)
			abort();
	} else if (fs_route_purchase_item(s, &id) == 0)
		abort();
	free(s);
	return 0;
}
