/*
 * Unit test of lib/stores: what opening the stores of a program checks
 * before any server is met (connections are made when first used).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stores.h"
#include "expect.h"

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct fs_stores st;
	struct fs_cfg cfg;
	char err[256];

	if (top == NULL)
		return 99;
	setenv("FLASHSALE_PG", "host=/nonexistent dbname=x", 1);
	setenv("FLASHSALE_REDIS", "/nonexistent/redis.sock", 1);
	setenv("FLASHSALE_DATADIR", top, 1);
	setenv("FLASHSALE_NCHAN_PUB", "", 1);
	if (fs_cfg_load(&cfg, 0) != 0)
		return 99;
	check(fs_stores_open(&st, &cfg, err, sizeof(err)) == 0 && st.pg != NULL &&
		st.stock != NULL && st.push != NULL,
	    "opens all three without meeting a server");
	fs_stores_close(&st);
	check(st.pg == NULL && st.stock == NULL && st.push == NULL, "close zeroes the stores");
	fs_stores_close(&st);
	check(st.pg == NULL && st.stock == NULL, "closing twice is harmless");

	setenv("FLASHSALE_DATADIR", "/nonexistent", 1);
	if (fs_cfg_load(&cfg, 0) != 0)
		return 99;
	err[0] = '\0';
	check(fs_stores_open(&st, &cfg, err, sizeof(err)) == -1 && strstr(err, "script") != NULL,
	    "no stock scripts: refused, and the error says so");
	fs_stores_close(&st);

	return failures == 0 ? 0 : 1;
}
