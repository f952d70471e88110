/* What the commands of flashsale-admin share: messages, configuration, stores. */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "admin.h"
#include "clock.h"
#include "keys.h"
#include "ordertopic.h"

int
admin_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("flashsale-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

int
admin_load_cfg(struct fs_cfg *cfg, unsigned need)
{
	if (fs_cfg_load(cfg, need) != 0)
		return admin_fail("%s", cfg->errstr);
	return 0;
}

int
admin_stores_open(struct admin_stores *s, unsigned more)
{
	char err[512];

	memset(s, 0, sizeof(*s));
	if (admin_load_cfg(&s->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_REDIS) | more) != 0)
		return 1;
	if (fs_stores_open(&s->st, &s->cfg, err, sizeof(err)) != 0)
		return admin_fail("%s", err);
	return 0;
}

void
admin_stores_close(struct admin_stores *s)
{
	fs_stores_close(&s->st);
}

int64_t
admin_inflight_ms(const struct fs_cfg *cfg)
{
	long timeout = fs_cfg_long(cfg, FS_CFG_KAFKA_TIMEOUT_MS);

	return (timeout > 0 ? timeout : 3000) + 1000;
}

/* The orders on their way of one sale (0: all); 0, or -1 said. */
int
admin_on_their_way(const struct fs_cfg *cfg, uint64_t sale, struct fs_order **orders, size_t *n)
{
	fs_ordertopic t;
	char err[512];

	if (*fs_cfg_get(cfg, FS_CFG_KAFKA_BROKERS) == '\0') {
		admin_fail("%s", "FLASHSALE_KAFKA_BROKERS is not set: the order topic tells which orders are "
			   "on their way (sale warm --ignore-lag goes without)");
		return -1;
	}
	/* Only a message whose MAC checks is an order on its way. */
	if (fs_ordertopic_init(&t, fs_cfg_get(cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_keys_load_orders(cfg, &t, err, sizeof(err)) != 0 ||
	    fs_ordertopic_on_their_way(&t, sale, 30000, orders, n, err, sizeof(err)) != 0) {
		fs_ordertopic_close(&t);
		admin_fail("order topic: %s", err);
		return -1;
	}
	fs_ordertopic_close(&t);
	return 0;
}

void
admin_print_warm(uint64_t sale, const char *what, const struct fs_sales_warm_report *rep)
{
	printf("sale %" PRIu64 ": %s (%ld live holds, %ld on their way, %ld dropped, %ld units short, "
	       "%d attempts)\n",
	    sale, what, rep->live, rep->pending, rep->dropped, rep->short_units, rep->attempts);
}

const char *
admin_when(int64_t ms, char buf[FS_CLOCK_TIME_LEN])
{
	fs_clock_format(ms, buf);
	return buf;
}
