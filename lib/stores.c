#include "config.h"

#include <stdio.h>
#include <string.h>

#include "stores.h"

int
fs_stores_open(struct fs_stores *st, const struct fs_cfg *cfg, char *err, size_t errlen)
{
	char why[256];

	memset(st, 0, sizeof(*st));
	if ((st->pg = fs_pg_new(fs_cfg_get(cfg, FS_CFG_PG))) == NULL) {
		snprintf(err, errlen, "out of memory, or FLASHSALE_PG too long");
		return -1;
	}
	if ((st->stock = fs_stock_new(cfg, fs_cfg_get(cfg, FS_CFG_DATADIR), err, errlen)) == NULL)
		return -1;
	if ((st->push = fs_push_new(fs_cfg_get(cfg, FS_CFG_NCHAN_PUB), why, sizeof(why))) == NULL) {
		snprintf(err, errlen, "FLASHSALE_NCHAN_PUB: %s", why);
		return -1;
	}
	return 0;
}

int
fs_stores_ready(struct fs_stores *st, char *why, size_t whylen)
{
	if (fs_pg_ping(st->pg) != 0) {
		snprintf(why, whylen, "postgresql: %s", st->pg->errstr);
		return -1;
	}
	if (fs_stock_ping(st->stock) != 0) {
		snprintf(why, whylen, "redis %s", st->stock->errstr);
		return -1;
	}
	return 0;
}

void
fs_stores_close(struct fs_stores *st)
{
	fs_push_free(st->push);
	fs_stock_free(st->stock);
	fs_pg_free(st->pg);
	memset(st, 0, sizeof(*st));
}
