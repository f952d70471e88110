#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"

#ifndef FS_PKGDATADIR
#define FS_PKGDATADIR "/usr/local/share/flashsale"
#endif

static const struct {
	const char *name;
	const char *def;
	const char *meaning;
} cfg_table[FS_CFG__MAX] = {
	[FS_CFG_REDIS] = { "FLASHSALE_REDIS", NULL,
	    "Redis address: a unix socket path (starts with /) or host:port" },
	[FS_CFG_PG] = { "FLASHSALE_PG", NULL, "PostgreSQL libpq connection string" },
	[FS_CFG_KAFKA_BROKERS] = { "FLASHSALE_KAFKA_BROKERS", NULL,
	    "Kafka bootstrap servers, host:port[,host:port]" },
	[FS_CFG_KAFKA_TOPIC] = { "FLASHSALE_KAFKA_TOPIC", "flash-sale-orders",
	    "order topic; dead letters go to <topic>.dlq" },
	[FS_CFG_KEYS_DIR] = { "FLASHSALE_KEYS_DIR", NULL,
	    "directory of key files (jwt-ed25519.pub/.key, jwt-hs256.key, url.key)" },
	[FS_CFG_JWT_ISSUER] = { "FLASHSALE_JWT_ISSUER", "",
	    "required `iss` of shopper tokens (empty: not checked)" },
	[FS_CFG_JWT_AUDIENCE] = { "FLASHSALE_JWT_AUDIENCE", "",
	    "required `aud` of shopper tokens (empty: not checked)" },
	[FS_CFG_DATADIR] = { "FLASHSALE_DATADIR", FS_PKGDATADIR,
	    "where lua/, sql/ and static/ are" },
	[FS_CFG_SOLDOUT_DIR] = { "FLASHSALE_SOLDOUT_DIR", "",
	    "directory of sold-out marker files that nginx checks (empty: none)" },
	[FS_CFG_NCHAN_PUB] = { "FLASHSALE_NCHAN_PUB", "",
	    "nchan publisher base URL for order status pushes (empty: none)" },
	[FS_CFG_DEMO_SIGNIN] = { "FLASHSALE_DEMO_SIGNIN", "0",
	    "1 enables the demo sign-in endpoint" },
	[FS_CFG_KAFKA_TIMEOUT_MS] = { "FLASHSALE_KAFKA_TIMEOUT_MS", "3000",
	    "how long a purchase waits for the broker's acknowledgement" },
	[FS_CFG_KAFKA_LINGER_MS] = { "FLASHSALE_KAFKA_LINGER_MS", "5",
	    "how long the producer gathers concurrent orders into one batch" },
	[FS_CFG_PURCHASE_THREADS] = { "FLASHSALE_PURCHASE_THREADS", "128",
	    "worker threads per purchase process (requests in hand at once)" },
	[FS_CFG_HOLD_MAX_AGE] = { "FLASHSALE_HOLD_MAX_AGE", "120",
	    "seconds after which an unconfirmed hold counts as a ghost" },
	[FS_CFG_EXPIRE_TOKEN] = { "FLASHSALE_EXPIRE_TOKEN", "",
	    "secret that the operator expiry endpoint requires (empty: endpoint off)" },
};

int
fs_cfg_load(struct fs_cfg *cfg, unsigned need)
{
	memset(cfg, 0, sizeof(*cfg));
	for (int k = 0; k < FS_CFG__MAX; k++) {
		const char *v = getenv(cfg_table[k].name);

		if (v == NULL || *v == '\0')
			v = cfg_table[k].def;
		if (v == NULL) {
			if (need & FS_CFG_NEED(k)) {
				cfg->err = 1;
				snprintf(cfg->errstr, sizeof(cfg->errstr), "%s is not set (%s)",
				    cfg_table[k].name, cfg_table[k].meaning);
				return -1;
			}
			v = "";
		}
		if (strlen(v) >= sizeof(cfg->value[k])) {
			cfg->err = 1;
			snprintf(cfg->errstr, sizeof(cfg->errstr), "%s is too long", cfg_table[k].name);
			return -1;
		}
		strcpy(cfg->value[k], v);
	}
	return 0;
}

const char *
fs_cfg_get(const struct fs_cfg *cfg, enum fs_cfg_key k)
{
	return cfg->value[k];
}

long
fs_cfg_long(const struct fs_cfg *cfg, enum fs_cfg_key k)
{
	const char *s = cfg->value[k];
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < 0)
		return -1;
	return v;
}

int
fs_cfg_datapath(const struct fs_cfg *cfg, const char *rel, char *out, size_t outlen)
{
	int n = snprintf(out, outlen, "%s/%s", cfg->value[FS_CFG_DATADIR], rel);

	return (n < 0 || (size_t)n >= outlen) ? -1 : 0;
}

const char *
fs_cfg_name(enum fs_cfg_key k)
{
	return cfg_table[k].name;
}

const char *
fs_cfg_meaning(enum fs_cfg_key k)
{
	return cfg_table[k].meaning;
}

const char *
fs_cfg_default(enum fs_cfg_key k)
{
	return cfg_table[k].def;
}
