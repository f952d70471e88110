/* Unit test of lib/cfg: defaults, required variables, limits. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "expect.h"

int
main(void)
{
	struct fs_cfg cfg;
	char big[600], path[64];

	unsetenv("FLASHSALE_REDIS");
	unsetenv("FLASHSALE_KAFKA_TOPIC");
	check(fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) == -1, "a missing required variable fails");
	check(strstr(cfg.errstr, "FLASHSALE_REDIS") != NULL, "the error names the variable");
	check(fs_cfg_load(&cfg, 0) == 0, "nothing required: loads");
	check(strcmp(fs_cfg_get(&cfg, FS_CFG_KAFKA_TOPIC), "flash-sale-orders") == 0,
	    "defaults apply");
	check(strcmp(fs_cfg_get(&cfg, FS_CFG_REDIS), "") == 0, "an unset optional value is empty");

	setenv("FLASHSALE_REDIS", "/tmp/redis.sock", 1);
	setenv("FLASHSALE_KAFKA_TIMEOUT_MS", "2500", 1);
	check(fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) == 0, "a set required variable loads");
	check(strcmp(fs_cfg_get(&cfg, FS_CFG_REDIS), "/tmp/redis.sock") == 0, "its value is kept");
	check(fs_cfg_long(&cfg, FS_CFG_KAFKA_TIMEOUT_MS) == 2500, "integers parse");
	setenv("FLASHSALE_KAFKA_TIMEOUT_MS", "25x", 1);
	fs_cfg_load(&cfg, 0);
	check(fs_cfg_long(&cfg, FS_CFG_KAFKA_TIMEOUT_MS) == -1, "malformed integers are -1");

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	setenv("FLASHSALE_PG", big, 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "too long") != NULL,
	    "an over-long value is refused");
	unsetenv("FLASHSALE_PG");

	setenv("FLASHSALE_DATADIR", "/data", 1);
	fs_cfg_load(&cfg, 0);
	check(fs_cfg_datapath(&cfg, "lua/reserve.lua", path, sizeof(path)) == 0 &&
		strcmp(path, "/data/lua/reserve.lua") == 0,
	    "data paths join");
	check(fs_cfg_datapath(&cfg, big, path, sizeof(path)) == -1, "data paths are bounded");
	for (int k = 0; k < FS_CFG__MAX; k++)
		check(fs_cfg_name((enum fs_cfg_key)k) != NULL && fs_cfg_meaning((enum fs_cfg_key)k) != NULL,
		    "every key has a name and a meaning");
	return failures == 0 ? 0 : 1;
}
