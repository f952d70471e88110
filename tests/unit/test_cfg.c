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

	/* Every value is checked at load, and against those it depends on. */
	setenv("FLASHSALE_KAFKA_TIMEOUT_MS", "3000", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "the defaults are consistent");
	setenv("FLASHSALE_HOLD_MAX_AGE", "3", 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "FLASHSALE_HOLD_MAX_AGE") != NULL &&
		strstr(cfg.errstr, "FLASHSALE_KAFKA_TIMEOUT_MS") != NULL,
	    "a hold age within the Kafka delivery timeout is refused, naming both");
	setenv("FLASHSALE_HOLD_MAX_AGE", "13", 1);
	check(fs_cfg_load(&cfg, 0) == -1, "and within the timeout plus the margin");
	setenv("FLASHSALE_HOLD_MAX_AGE", "14", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "beyond both it loads");
	setenv("FLASHSALE_KAFKA_TIMEOUT_MS", "60000", 1);
	check(fs_cfg_load(&cfg, 0) == -1, "a longer delivery timeout needs a longer hold age");
	unsetenv("FLASHSALE_HOLD_MAX_AGE");
	setenv("FLASHSALE_KAFKA_TIMEOUT_MS", "25x", 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "FLASHSALE_KAFKA_TIMEOUT_MS=25x") != NULL &&
		strstr(cfg.errstr, "100 to 300000") != NULL,
	    "a malformed integer stops the load, with its range");
	unsetenv("FLASHSALE_KAFKA_TIMEOUT_MS");
	/* The Redis timeout is a setting, above the longest WAIT by its margin. */
	setenv("FLASHSALE_REDIS_TIMEOUT_MS", "3000", 1);
	check(fs_cfg_load(&cfg, 0) == 0 && fs_cfg_long(&cfg, FS_CFG_REDIS_TIMEOUT_MS) == 3000,
	    "FLASHSALE_REDIS_TIMEOUT_MS loads");
	setenv("FLASHSALE_REDIS_TIMEOUT_MS", "500", 1);
	setenv("FLASHSALE_REDIS_WAIT_MS", "450", 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "FLASHSALE_REDIS_WAIT_MS (450)") != NULL &&
		strstr(cfg.errstr, "FLASHSALE_REDIS_TIMEOUT_MS") != NULL,
	    "a WAIT that could outlast the Redis timeout is refused, naming both");
	setenv("FLASHSALE_REDIS_WAIT_MS", "400", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "a WAIT 100 ms below the timeout loads");
	unsetenv("FLASHSALE_REDIS_WAIT_MS");
	unsetenv("FLASHSALE_REDIS_TIMEOUT_MS");
	/* A Kafka user without its password or the brokers' authority cannot speak SASL_SSL. */
	setenv("FLASHSALE_KAFKA_USER", "flashsale-purchase", 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "FLASHSALE_KAFKA_PASSWORD_FILE") != NULL,
	    "a Kafka user without a password file is refused");
	setenv("FLASHSALE_KAFKA_PASSWORD_FILE", "/nonexistent/kafka.password", 1);
	check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, "FLASHSALE_KAFKA_CA_FILE") != NULL,
	    "nor without the brokers' authority");
	setenv("FLASHSALE_KAFKA_CA_FILE", "/nonexistent/ca.crt", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "with both it loads");
	unsetenv("FLASHSALE_KAFKA_USER");
	unsetenv("FLASHSALE_KAFKA_PASSWORD_FILE");
	unsetenv("FLASHSALE_KAFKA_CA_FILE");
	{
		static const char *const bad[][2] = {
			{ "FLASHSALE_PURCHASE_THREADS", "0" },
			{ "FLASHSALE_PURCHASE_THREADS", "257" },
			{ "FLASHSALE_KAFKA_LINGER_MS", "-1" },
			{ "FLASHSALE_DEMO_SIGNIN", "yes" },
			{ "FLASHSALE_DEMO_SIGNIN", "2" },
			{ "FLASHSALE_KAFKA_TOPIC", "orders topic" },
			{ "FLASHSALE_REDIS", "localhost" },
			{ "FLASHSALE_REDIS", "localhost:0" },
			{ "FLASHSALE_REDIS", "localhost:65536" },
			{ "FLASHSALE_REDIS", ":6379" },
			{ "FLASHSALE_REDIS", "127.0.0.1:7000,,127.0.0.1:7001" },
			{ "FLASHSALE_REDIS", "127.0.0.1:7000,localhost" },
			{ "FLASHSALE_REDIS", "127.0.0.1:7000," },
			{ "FLASHSALE_REDIS_WAIT_MS", "901" },
			{ "FLASHSALE_REDIS_TIMEOUT_MS", "199" },
			{ "FLASHSALE_REDIS_TIMEOUT_MS", "10001" },
			{ "FLASHSALE_REDIS_TIMEOUT_MS", "1s" },
			{ "FLASHSALE_NCHAN_PUB", "127.0.0.1:8080/pub" },
			{ "FLASHSALE_SOLDOUT_DIR", "state/soldout" },
			{ "FLASHSALE_EXPIRE_TOKEN", "short" },
			{ "FLASHSALE_TEST_CLOCK_OFFSET_MS", "-60001" },
			{ "FLASHSALE_TEST_CLOCK_OFFSET_MS", "60001" },
			{ "FLASHSALE_TEST_CLOCK_OFFSET_MS", "2s" },
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char what[128];

			setenv(bad[i][0], bad[i][1], 1);
			snprintf(what, sizeof(what), "%s=%s is refused by name", bad[i][0], bad[i][1]);
			check(fs_cfg_load(&cfg, 0) == -1 && strstr(cfg.errstr, bad[i][0]) != NULL, what);
			unsetenv(bad[i][0]);
		}
	}
	/* A test's clock setting (handlers/queue.c): signed, 0 unless set. */
	check(fs_cfg_load(&cfg, 0) == 0 && fs_cfg_test_clock_offset_ms(&cfg) == 0,
	    "FLASHSALE_TEST_CLOCK_OFFSET_MS is 0 unless set");
	setenv("FLASHSALE_TEST_CLOCK_OFFSET_MS", "-2000", 1);
	check(fs_cfg_load(&cfg, 0) == 0 && fs_cfg_test_clock_offset_ms(&cfg) == -2000,
	    "FLASHSALE_TEST_CLOCK_OFFSET_MS=-2000: a clock 2 s slow");
	unsetenv("FLASHSALE_TEST_CLOCK_OFFSET_MS");
	setenv("FLASHSALE_REDIS", "127.0.0.1:6379", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "host:port is an address");
	setenv("FLASHSALE_REDIS", "127.0.0.1:7000,127.0.0.2:7001,localhost:7002", 1);
	check(fs_cfg_load(&cfg, 0) == 0, "a comma-separated list of host:port is an address list");
	setenv("FLASHSALE_REDIS", "/tmp/redis.sock", 1);

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
