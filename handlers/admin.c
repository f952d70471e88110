/*
 * flashsale-admin: the operator's tool. Keys, sales, stock warming, figures
 * and shopper tokens for the demo and the tests. Every command checks its
 * input completely before it writes anything.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "admin_ops.h"
#include "cfg.h"
#include "ordertopic.h"
#include "keys.h"
#include "metrics.h"
#include "pg.h"
#include "payments.h"
#include "reconcile.h"
#include "route.h"
#include "stock.h"
#include "sales.h"
#include "token.h"
#include "urlsig.h"

static const char usage[] =
    "usage: flashsale-admin COMMAND ...\n"
    "  keys generate DIR                 new Ed25519 + HS256 token keys and URL key (mode 0600)\n"
    "  sale create FILE.json             insert a sale and its items; prints their ids\n"
    "  sale warm SALE_ID [--force] [--ignore-lag]\n"
    "                                    load units left and live holds into Redis, atomically\n"
    "                                    against purchases; refuses a sale with holds (unless\n"
    "                                    --force) or with orders on their way on the topic\n"
    "                                    (unless --ignore-lag: use reconcile --repair)\n"
    "  sale show SALE_ID                 PostgreSQL and Redis figures per item\n"
    "  sale urls SALE_ID                 signed purchase path of every item\n"
    "  token mint --user ID [--ttl SECONDS] [--alg EdDSA|HS256] [--count N] [--age SECONDS]\n"
    "                                    shopper tokens (with --count: \"ID-i TOKEN\" lines for\n"
    "                                    i = 1..N; --age: issued that long ago, for tests)\n"
    "  kafka topics                      create the order topic (8 partitions) and its .dlq (1),\n"
    "                                    one copy per broker listed (3 at most; with 3,\n"
    "                                    min.insync.replicas=2)\n"
    "  config                            the environment variables and their defaults\n"
    "  reconcile SALE_ID|--all [--check|--repair]\n"
    "                                    invariants 1-5 of DESIGN.md, PostgreSQL against Redis,\n"
    "                                    and the payment rules over every order;\n"
    "                                    prints every violation (--check: exit 1 on any);\n"
    "                                    --repair first rebuilds Redis from PostgreSQL and the\n"
    "                                    orders still on the topic (after a Redis crash)\n";

/* Says what went wrong on standard error; returns the exit status 1. */
int
fail(const char *fmt, ...)
{
	va_list ap;

	fputs("flashsale-admin: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static int
load_cfg(struct fs_cfg *cfg, unsigned need)
{
	if (fs_cfg_load(cfg, need) != 0)
		return fail("%s", cfg->errstr);
	return 0;
}

/* Writes a new secret file; refuses to replace one. */
static int
write_key(const char *dir, const char *name, const void *key, size_t len)
{
	char path[1024];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0)
		return -1;
	if (write(fd, key, len) != (ssize_t)len || fsync(fd) != 0) {
		close(fd);
		unlink(path);
		return -1;
	}
	return close(fd);
}

/*
 * Writes every key file, all or nothing; in a directory of an older version
 * that has the production keys only, adds the demo pair.
 */
static int
cmd_keys_generate(const char *dir)
{
	enum { NKEYS = 6, NPRODUCTION = 4 };
	static const char *const names[NKEYS] = { FS_TOKEN_ED25519_PUB_FILE,
		FS_TOKEN_ED25519_KEY_FILE, FS_TOKEN_HS256_KEY_FILE, FS_URLSIG_KEY_FILE,
		FS_TOKEN_DEMO_PUB_FILE, FS_TOKEN_DEMO_KEY_FILE };
	unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES], ed_sk[crypto_sign_SECRETKEYBYTES];
	unsigned char demo_pk[crypto_sign_PUBLICKEYBYTES], demo_sk[crypto_sign_SECRETKEYBYTES];
	unsigned char hs[32], url[crypto_auth_KEYBYTES];
	const void *keys[NKEYS] = { ed_pk, ed_sk, hs, url, demo_pk, demo_sk };
	const size_t lens[NKEYS] = { sizeof(ed_pk), sizeof(ed_sk), sizeof(hs), sizeof(url),
		sizeof(demo_pk), sizeof(demo_sk) };
	char path[1024];
	int rc = 1, first = 0, written, exists[NKEYS], nexisting = 0;

	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return fail("cannot create %s", dir);
	for (int i = 0; i < NKEYS; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		exists[i] = access(path, F_OK) == 0;
		nexisting += exists[i];
	}
	if (nexisting == NPRODUCTION && exists[0] && exists[1] && exists[2] && exists[3])
		first = NPRODUCTION;
	else if (nexisting > 0)
		return fail("%s has keys already; refusing to replace them", dir);
	crypto_sign_keypair(ed_pk, ed_sk);
	crypto_sign_keypair(demo_pk, demo_sk);
	randombytes_buf(hs, sizeof(hs));
	crypto_auth_keygen(url);
	for (written = first; written < NKEYS; written++)
		if (write_key(dir, names[written], keys[written], lens[written]) != 0)
			break;
	if (written == NKEYS) {
		printf(first == 0 ? "keys written to %s\n" : "demo key added to %s\n", dir);
		rc = 0;
	} else {
		/* All or nothing: remove what this run wrote. */
		fail("cannot write keys in %s", dir);
		while (written-- > first) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[written]);
			unlink(path);
		}
	}
	sodium_memzero(ed_sk, sizeof(ed_sk));
	sodium_memzero(demo_sk, sizeof(demo_sk));
	sodium_memzero(hs, sizeof(hs));
	sodium_memzero(url, sizeof(url));
	return rc;
}

static int
cmd_sale_create(const char *file)
{
	struct fs_cfg cfg;
	char out[32768], err[512];
	fs_pg *pg = NULL;
	char *json = NULL;
	FILE *fp = NULL;
	size_t n;
	int rc = 1;

	if (load_cfg(&cfg, FS_CFG_NEED(FS_CFG_PG)) != 0)
		return 1;
	if ((fp = fopen(file, "r")) == NULL) {
		fail("cannot open %s", file);
		goto out;
	}
	if ((json = malloc(FS_SALES_JSON_MAX + 1)) == NULL)
		goto out;
	n = fread(json, 1, FS_SALES_JSON_MAX + 1, fp);
	if (n > FS_SALES_JSON_MAX) {
		fail("%s is too big", file);
		goto out;
	}
	if ((pg = fs_pg_new(fs_cfg_get(&cfg, FS_CFG_PG))) == NULL)
		goto out;
	if (fs_sales_create(pg, json, n, out, sizeof(out), err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	printf("%s\n", out);
	rc = 0;
out:
	if (fp != NULL)
		fclose(fp);
	free(json);
	fs_pg_free(pg);
	return rc;
}

/* Opens the two stores that sale commands read. */
static int
open_stores(struct fs_cfg *cfg, fs_pg **pg, fs_stock **st)
{
	char err[256];

	if (load_cfg(cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_REDIS)) != 0)
		return -1;
	if ((*pg = fs_pg_new(fs_cfg_get(cfg, FS_CFG_PG))) == NULL) {
		fail("%s", "out of memory or FLASHSALE_PG too long");
		return -1;
	}
	if ((*st = fs_stock_new(cfg, NULL, err, sizeof(err))) == NULL) {
		fail("%s", err);
		return -1;
	}
	return 0;
}

/*
 * How long after a reservation its purchase may still be putting the order
 * on the topic: the producer's delivery timeout, and a second to spare.
 */
static int64_t
inflight_ms(const struct fs_cfg *cfg)
{
	long timeout = fs_cfg_long(cfg, FS_CFG_KAFKA_TIMEOUT_MS);

	return (timeout > 0 ? timeout : 3000) + 1000;
}

/* The orders on their way of one sale (0: all); 0, or -1 said. */
static int
on_their_way(const struct fs_cfg *cfg, uint64_t sale, struct fs_order **orders, size_t *n)
{
	fs_ordertopic t;
	char err[512];

	if (*fs_cfg_get(cfg, FS_CFG_KAFKA_BROKERS) == '\0') {
		fail("%s", "FLASHSALE_KAFKA_BROKERS is not set: the order topic tells which orders are "
			   "on their way (sale warm --ignore-lag goes without)");
		return -1;
	}
	if (fs_ordertopic_init(&t, fs_cfg_get(cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_ordertopic_on_their_way(&t, sale, 30000, orders, n, err, sizeof(err)) != 0) {
		fail("order topic: %s", err);
		return -1;
	}
	return 0;
}

static void
print_warm(uint64_t sale, const char *what, const struct fs_sales_warm_report *rep)
{
	printf("sale %" PRIu64 ": %s (%ld live holds, %ld on their way, %ld dropped, %ld units short, "
	       "%d attempts)\n",
	    sale, what, rep->live, rep->pending, rep->dropped, rep->short_units, rep->attempts);
}

/* Where a warm put the sharded items of a sale: one line per item with shards. */
static void
print_shards(fs_pg *pg, fs_stock *r, uint64_t sale)
{
	struct fs_stock_shard shards[FS_STOCK_SHARDS_MAX];
	char err[256];
	uint64_t *items;
	int n;

	if ((items = calloc(FS_SALES_ITEMS_MAX, sizeof(*items))) == NULL)
		return;
	n = fs_sales_item_ids(pg, sale, items, err, sizeof(err));
	for (int i = 0; i < n; i++) {
		int k = fs_stock_shards(r, sale, items[i], shards, FS_STOCK_SHARDS_MAX);

		if (k <= 1)
			continue;
		printf("item %" PRIu64 ": %d shards:", items[i], k);
		for (int p = 0; p < k; p++)
			printf("%s {%s} slot %u on %s", p > 0 ? "," : "", shards[p].tag, shards[p].slot,
			    shards[p].master);
		printf("\n");
	}
	free(items);
}

/* sale warm SALE [--force] [--ignore-lag] */
static int
cmd_sale_warm(uint64_t sale, int argc, char **argv)
{
	struct fs_sales_warm_opts opts;
	struct fs_sales_warm_report rep;
	struct fs_order *pending = NULL;
	struct fs_cfg cfg;
	fs_pg *pg = NULL;
	fs_stock *r = NULL;
	char err[512];
	int rc = 1;

	memset(&opts, 0, sizeof(opts));
	for (int i = 0; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0)
			opts.force = 1;
		else if (strcmp(argv[i], "--ignore-lag") == 0)
			opts.ignore_pending = 1;
		else
			return fail("%s", "usage: sale warm SALE_ID [--force] [--ignore-lag]");
	}
	if (open_stores(&cfg, &pg, &r) != 0)
		goto out;
	opts.inflight_ms = inflight_ms(&cfg);
	if (!opts.ignore_pending && on_their_way(&cfg, sale, &pending, &opts.npending) != 0)
		goto out;
	opts.pending = pending;
	if (fs_sales_warm(pg, r, sale, &opts, &rep, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	print_warm(sale, "loaded into Redis", &rep);
	print_shards(pg, r, sale);
	rc = 0;
out:
	free(pending);
	fs_pg_free(pg);
	fs_stock_free(r);
	return rc;
}

static int
cmp_order_sale(const void *a, const void *b)
{
	uint64_t x = ((const struct fs_order *)a)->sale, y = ((const struct fs_order *)b)->sale;

	return x < y ? -1 : x > y;
}

/*
 * Rebuilds each sale in Redis from PostgreSQL and the orders on their way
 * (with all, the sales that are over and cleared stay out). A Redis that
 * started moments ago may miss holds of purchases still putting their
 * orders on the topic: wait until those are there.
 */
static int
repair(const struct fs_cfg *cfg, fs_pg *pg, fs_stock *r, const uint64_t *sales, int n, int all)
{
	struct fs_sales_warm_opts opts;
	struct fs_sales_warm_report rep;
	struct fs_order *pending = NULL;
	size_t npending = 0, at = 0;
	char err[512];
	long up;
	int rc = -1;

	memset(&opts, 0, sizeof(opts));
	opts.repair = 1;
	opts.inflight_ms = inflight_ms(cfg);
	while ((up = fs_stock_server_uptime(r)) >= 0 && up * 1000 < opts.inflight_ms) {
		printf("Redis started %lds ago: waiting for the purchases it may have missed\n", up);
		fflush(stdout);
		usleep(250000);
	}
	if (up < 0) {
		fail("redis: %s", r->errstr);
		return -1;
	}
	if (on_their_way(cfg, all ? 0 : sales[0], &pending, &npending) != 0)
		return -1;
	if (npending > 0)
		qsort(pending, npending, sizeof(*pending), cmp_order_sale);
	for (int i = 0; i < n; i++) {
		while (at < npending && pending[at].sale < sales[i])
			at++;
		/* A sale that is over stays out of Redis (unless warmed by name). */
		if (all && fs_sales_cleared(pg, sales[i]))
			continue;
		opts.pending = pending + at;
		for (opts.npending = 0; at + opts.npending < npending &&
		     pending[at + opts.npending].sale == sales[i];)
			opts.npending++;
		if (fs_sales_warm(pg, r, sales[i], &opts, &rep, err, sizeof(err)) != 0) {
			fail("sale %" PRIu64 ": %s", sales[i], err);
			goto out;
		}
		print_warm(sales[i], "repaired", &rep);
	}
	rc = 0;
out:
	free(pending);
	return rc;
}

static int
cmd_sale_show(uint64_t sale)
{
	struct fs_sales_figures *figs = NULL;
	struct fs_cfg cfg;
	fs_pg *pg = NULL;
	fs_stock *r = NULL;
	char err[512];
	int n, rc = 1;

	if (open_stores(&cfg, &pg, &r) != 0)
		goto out;
	if ((figs = calloc(FS_SALES_ITEMS_MAX, sizeof(*figs))) == NULL)
		goto out;
	if ((n = fs_sales_figures(pg, r, sale, figs, FS_SALES_ITEMS_MAX, err, sizeof(err))) < 0) {
		fail("%s", err);
		goto out;
	}
	printf("%-8s %-24s %9s %9s %9s %9s %11s %11s\n", "item", "name", "quantity", "sold",
	    "pending", "paid", "redis_left", "redis_holds");
	for (int i = 0; i < n; i++)
		printf("%-8" PRIu64 " %-24.24s %9ld %9ld %9ld %9ld %11ld %11ld\n", figs[i].item,
		    figs[i].name, figs[i].quantity, figs[i].sold, figs[i].pending, figs[i].paid,
		    figs[i].redis_left, figs[i].redis_holds);
	rc = 0;
out:
	free(figs);
	fs_pg_free(pg);
	fs_stock_free(r);
	return rc;
}

/* Prints a purchase path on its own line. */
static void
print_path(void *arg, uint64_t item, const char *path)
{
	(void)arg;
	(void)item;
	printf("%s\n", path);
}

static int
cmd_sale_urls(uint64_t sale)
{
	struct fs_sale s = { 0 };
	fs_urlsig_key *key = NULL;
	struct fs_cfg cfg;
	fs_pg *pg = NULL;
	char err[512];
	int rc = 1;

	if (load_cfg(&cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0)
		return 1;
	if (fs_keys_load(&cfg, NULL, &key, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	if ((pg = fs_pg_new(fs_cfg_get(&cfg, FS_CFG_PG))) == NULL ||
	    (s.items = calloc(FS_SALES_ITEMS_MAX, sizeof(*s.items))) == NULL)
		goto out;
	if (fs_sales_read(pg, NULL, sale, &s, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	if (s.nitems == 0) {
		fail("no sale %" PRIu64 " (or it has no items)", sale);
		goto out;
	}
	if (fs_sales_purchase_paths(key, &s, print_path, NULL) != 0) {
		fail("%s", "cannot sign");
		goto out;
	}
	rc = 0;
out:
	fs_urlsig_key_free(key);
	free(s.items);
	fs_pg_free(pg);
	return rc;
}

static int
cmd_token_mint(int argc, char **argv)
{
	enum fs_token_alg alg = FS_TOKEN_ALG_EDDSA;
	const char *user = NULL;
	long ttl = 3600, count = 0, age = 0;
	struct fs_cfg cfg;
	fs_token_keys *keys = NULL;
	char tok[FS_TOKEN_MAX + 1], sub[FS_TOKEN_SUB_MAX + 1], err[256];
	enum fs_token_status st;
	int rc = 1;

	for (int i = 0; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (val == NULL)
			return fail("%s needs a value", opt);
		i++;
		if (strcmp(opt, "--user") == 0) {
			user = val;
		} else if (strcmp(opt, "--ttl") == 0 || strcmp(opt, "--count") == 0 ||
		    strcmp(opt, "--age") == 0) {
			long v;

			errno = 0;
			v = strtol(val, &end, 10);
			if (errno != 0 || *end != '\0' || v <= 0 || v > 100000000)
				return fail("%s must be a positive integer", opt);
			*(opt[2] == 't' ? &ttl : opt[2] == 'c' ? &count : &age) = v;
		} else if (strcmp(opt, "--alg") == 0) {
			if (strcmp(val, "EdDSA") == 0)
				alg = FS_TOKEN_ALG_EDDSA;
			else if (strcmp(val, "HS256") == 0)
				alg = FS_TOKEN_ALG_HS256;
			else
				return fail("unknown algorithm %s (EdDSA or HS256)", val);
		} else {
			return fail("unknown option %s", opt);
		}
	}
	if (user == NULL)
		return fail("%s", "token mint needs --user ID");
	if (load_cfg(&cfg, FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0)
		return 1;
	if (fs_keys_load(&cfg, &keys, NULL, err, sizeof(err)) != 0) {
		fail("%s", err);
		goto out;
	}
	for (long i = count > 0 ? 1 : 0; i <= count; i++) {
		if (count > 0)
			snprintf(sub, sizeof(sub), "%s-%ld", user, i);
		else
			snprintf(sub, sizeof(sub), "%s", user);
		if ((st = fs_token_mint(keys, alg, sub, time(NULL) - age, ttl, tok, sizeof(tok))) != FS_TOKEN_OK) {
			fail("cannot mint: %s", fs_token_strerror(st));
			goto out;
		}
		if (count > 0)
			printf("%s %s\n", sub, tok);
		else
			printf("%s\n", tok);
	}
	rc = 0;
out:
	fs_token_keys_free(keys);
	return rc;
}

/* The order topic (8 partitions, keyed by item) and its dead letters (1). */
static int
cmd_kafka_topics(void)
{
	fs_ordertopic topic;
	struct fs_cfg cfg;
	char err[256];

	if (load_cfg(&cfg, FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0)
		return 1;
	if (fs_ordertopic_init(&topic, fs_cfg_get(&cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_ordertopic_create(&topic, err, sizeof(err)) != 0)
		return fail("%s", err);
	printf("topics %s (%d partitions) and %s (%d) exist\n", topic.topic,
	    FS_ORDERTOPIC_PARTITIONS, topic.dlq, FS_ORDERTOPIC_DLQ_PARTITIONS);
	return 0;
}

/* The table of settings; then the environment's values are checked (exit 1 when wrong). */
static int
cmd_config(void)
{
	struct fs_cfg cfg;

	for (int k = 0; k < FS_CFG__MAX; k++)
		printf("%-28s %-22s %s\n", fs_cfg_name((enum fs_cfg_key)k),
		    fs_cfg_default((enum fs_cfg_key)k) == NULL ? "(required)" :
		    *fs_cfg_default((enum fs_cfg_key)k) == '\0' ? "(empty)" :
								 fs_cfg_default((enum fs_cfg_key)k),
		    fs_cfg_meaning((enum fs_cfg_key)k));
	return load_cfg(&cfg, 0);
}

/* Prints a violation found by the checker. */
static void
print_violation(void *arg, const char *line)
{
	(void)arg;
	printf("VIOLATION %s\n", line);
}

/* The payment rules (lib/payments) are checked over every order, whatever the sale. */
static void
print_payment_violation(void *arg, const char *order, const char *problem)
{
	(void)arg;
	printf("VIOLATION order %s: %s\n", order, problem);
}

static int
cmd_reconcile(int argc, char **argv)
{
	struct fs_reconcile_summary sum;
	struct fs_cfg cfg;
	fs_pg *pg = NULL;
	fs_stock *r = NULL;
	uint64_t *sales = NULL;
	char err[512];
	int n = 0, check = argc == 2 && strcmp(argv[1], "--check") == 0, rc = 1, bad = 0;
	size_t npay = 0;
	int fix = argc == 2 && strcmp(argv[1], "--repair") == 0;

	if (argc < 1 || argc > 2 || (argc == 2 && !check && !fix))
		return fail("%s", "usage: reconcile SALE_ID|--all [--check|--repair]");
	if ((sales = calloc(FS_SALES_ITEMS_MAX * 100, sizeof(*sales))) == NULL)
		return fail("%s", "out of memory");
	if (strcmp(argv[0], "--all") != 0) {
		if (fs_route_parse_id(argv[0], &sales[0]) != 0) {
			fail("%s", "expected a sale id (a positive integer) or --all");
			goto out;
		}
		n = 1;
	}
	if (open_stores(&cfg, &pg, &r) != 0)
		goto out;
	if (n == 0 && (n = fs_reconcile_all_sales(pg, sales, FS_SALES_ITEMS_MAX * 100, err, sizeof(err))) < 0) {
		fail("%s", err);
		goto out;
	}
	if (fix && repair(&cfg, pg, r, sales, n, strcmp(argv[0], "--all") == 0) != 0)
		goto out;
	for (int i = 0; i < n; i++) {
		int v = fs_reconcile_sale(pg, r, sales[i], print_violation, NULL, &sum, err, sizeof(err));

		if (v < 0) {
			fail("sale %" PRIu64 ": %s", sales[i], err);
			goto out;
		}
		bad += v;
		printf("sale %" PRIu64 ": %s (%ld items, %ld live orders, %ld holds, %ld unconfirmed%s)\n",
		    sales[i], v == 0 ? "ok" : "VIOLATED", sum.items, sum.live, sum.holds, sum.unconfirmed,
		    sum.cleared ? ", over: cleared from Redis" : sum.in_redis ? "" : ", not in Redis");
	}
	if (fs_payments_check(pg, print_payment_violation, NULL, &npay) != FS_PAYMENTS_OK) {
		fail("payments: %s", pg->errstr);
		goto out;
	}
	printf("payments: %s (%zu violations)\n", npay == 0 ? "ok" : "VIOLATED", npay);
	bad += (int)npay;
	printf("%d sales checked, %d violations\n", n, bad);
	/* Counted for the alert on violations (GET /metrics). */
	fs_metrics_open("flashsale-admin");
	fs_metrics_count(FS_M_RECONCILE_RUNS);
	fs_metrics_add(FS_M_RECONCILE_VIOLATIONS, (uint64_t)bad);
	rc = (check || fix) && bad > 0 ? 1 : 0;
out:
	free(sales);
	fs_pg_free(pg);
	fs_stock_free(r);
	return rc;
}

/* A sale command's id argument. */
static int
sale_arg(int argc, char **argv, uint64_t *sale)
{
	if (argc < 4 || fs_route_parse_id(argv[3], sale) != 0) {
		fail("%s", "expected a sale id (a positive integer)");
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	uint64_t sale;
	int rc;

	if (sodium_init() < 0)
		return fail("%s", "libsodium failed to start");
	if ((rc = admin_ops_main(argc, argv)) >= 0)
		return rc;
	if (argc >= 4 && strcmp(argv[1], "keys") == 0 && strcmp(argv[2], "generate") == 0 && argc == 4)
		return cmd_keys_generate(argv[3]);
	if (argc == 4 && strcmp(argv[1], "sale") == 0 && strcmp(argv[2], "create") == 0)
		return cmd_sale_create(argv[3]);
	if (argc >= 3 && strcmp(argv[1], "sale") == 0) {
		if (sale_arg(argc, argv, &sale) != 0)
			return 1;
		if (strcmp(argv[2], "warm") == 0)
			return cmd_sale_warm(sale, argc - 4, argv + 4);
		if (strcmp(argv[2], "show") == 0 && argc == 4)
			return cmd_sale_show(sale);
		if (strcmp(argv[2], "urls") == 0 && argc == 4)
			return cmd_sale_urls(sale);
	}
	if (argc >= 3 && strcmp(argv[1], "token") == 0 && strcmp(argv[2], "mint") == 0)
		return cmd_token_mint(argc - 3, argv + 3);
	if (argc == 2 && strcmp(argv[1], "config") == 0)
		return cmd_config();
	if (argc == 3 && strcmp(argv[1], "kafka") == 0 && strcmp(argv[2], "topics") == 0)
		return cmd_kafka_topics();
	if (argc >= 3 && strcmp(argv[1], "reconcile") == 0)
		return cmd_reconcile(argc - 2, argv + 2);
	fputs(usage, argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
	fputs(admin_ops_usage, argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr);
	return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
