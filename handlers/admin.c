/*
 * flashsale-admin: the operator's tool. Keys, sales, stock warming, the
 * live view, figures, reconciliation, dead letters, the waiting room's
 * check and shopper tokens for the demo and the tests. Every command
 * checks its input completely before it writes anything. This file is the
 * command table; the commands live beside it by topic (admin.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "admin.h"
#include "route.h"

static const char usage[] =
    "usage: flashsale-admin COMMAND ...\n"
    "  keys generate DIR                 new token keys, URL key and queue key (mode 0600)\n"
    "  jwks fetch [ISSUER_URL] [--out FILE] [--via http://A.B.C.D:PORT]\n"
    "                                    the identity provider's signing keys (OpenID Connect\n"
    "                                    discovery, issuer checked; FLASHSALE_JWT_ISSUER) into the\n"
    "                                    JWK Set file (FILE, else FLASHSALE_JWKS_FILE), replaced\n"
    "                                    only by a usable set; https verified; --via: a local proxy\n"
    "  sale create FILE.json [--json]    insert a sale and its items; prints their ids (--json:\n"
    "                                    the whole sale as one JSON document)\n"
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
    "  queue pass SALE_ID SHOPPER [--seconds N] [--age N] [--reason TEXT] [--by WHO]\n"
    "                                    a waiting room's pass for the shopper, valid N seconds\n"
    "                                    (120); --age: issued that long ago, for tests; recorded\n"
    "                                    in PostgreSQL with who ($USER) and why, for queue verify\n"
    "  kafka topics                      create the order topic (8 partitions) and its .dlq (1),\n"
    "                                    one copy per broker listed (3 at most; with 3,\n"
    "                                    min.insync.replicas=2)\n"
    "  kafka grants                      grant each job's Kafka principal its ACLs (as the\n"
    "                                    operator's principal; see docs/SECURITY.md)\n"
    "  config                            the environment variables and their defaults\n"
    "  reconcile SALE_ID|--all [--check|--repair]\n"
    "                                    invariants 1-5 of DESIGN.md, PostgreSQL against Redis,\n"
    "                                    and the payment rules over every order;\n"
    "                                    prints every violation (--check: exit 1 on any);\n"
    "                                    --repair first rebuilds Redis from PostgreSQL and the\n"
    "                                    orders still on the topic (after a Redis crash)\n"
    "  sale list                         every sale (the latest 1000): state, window, units\n"
    "  sale close SALE_ID                stop selling now (the sale ends at this instant)\n"
    "  sale extend SALE_ID SECONDS       move the end of a sale that has not ended\n"
    "  sale watch SALE_ID [--once] [--origin http://A.B.C.D:PORT]...\n"
    "                                    the live view, every second (--once: one frame)\n"
    "  dlq replay [--sale SALE_ID]       dead letters back on the order topic, each with its\n"
    "                                    unit taken again; idempotent\n"
    "  queue verify SALE_ID [--json]     the waiting room checked from PostgreSQL: every drawn\n"
    "                                    place against the seed, late places, admission steps,\n"
    "                                    each order admitted first; prints every violation\n"
    "                                    (exit 1 on any)\n"
    "  queue status SALE_ID [--json]     the waiting room's pacer state in Redis and its\n"
    "                                    counts in PostgreSQL\n";

/*
 * One command: its words ("sale", "warm"; verb NULL for a one-word
 * command), whether a sale id follows them, and how many arguments may
 * come after (after the sale id when there is one).
 */
struct command {
	const char *group, *verb;
	int sale_id;
	int min, max;
	int (*run)(int argc, char **argv);
	int (*run_sale)(uint64_t sale, int argc, char **argv);
};

#define ANY 1000

static const struct command commands[] = {
	{ "keys", "generate", 0, 1, 1, admin_keys_generate, NULL },
	{ "jwks", "fetch", 0, 0, 5, admin_jwks_fetch, NULL },
	{ "sale", "create", 0, 1, 2, admin_sale_create, NULL },
	{ "sale", "list", 0, 0, 0, admin_sale_list, NULL },
	{ "sale", "warm", 1, 0, ANY, NULL, admin_sale_warm },
	{ "sale", "show", 1, 0, 0, NULL, admin_sale_show },
	{ "sale", "urls", 1, 0, 0, NULL, admin_sale_urls },
	{ "sale", "close", 1, 0, 0, NULL, admin_sale_close },
	{ "sale", "extend", 1, 1, 1, NULL, admin_sale_extend },
	{ "sale", "watch", 1, 0, ANY, NULL, admin_sale_watch },
	{ "token", "mint", 0, 0, ANY, admin_token_mint, NULL },
	{ "queue", "pass", 1, 1, 9, NULL, admin_queue_pass },
	{ "kafka", "topics", 0, 0, 0, admin_kafka_topics, NULL },
	{ "kafka", "grants", 0, 0, 0, admin_kafka_grants, NULL },
	{ "config", NULL, 0, 0, 0, admin_config, NULL },
	{ "reconcile", NULL, 0, 1, ANY, admin_reconcile, NULL },
	{ "dlq", "replay", 0, 0, ANY, admin_dlq_replay, NULL },
	{ "queue", "verify", 1, 0, 1, NULL, admin_queue_verify },
	{ "queue", "status", 1, 0, 1, NULL, admin_queue_status },
};

/* Runs argv's command: its exit status, or -1 when argv names none (or wrongly). */
static int
dispatch(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];
		int words = c->verb != NULL ? 2 : 1, rest;
		uint64_t sale;

		if (argc < 1 + words || strcmp(argv[1], c->group) != 0 ||
		    (c->verb != NULL && strcmp(argv[2], c->verb) != 0))
			continue;
		argc -= 1 + words;
		argv += 1 + words;
		if (c->sale_id) {
			if (argc < 1 || fs_route_parse_id(argv[0], &sale) != 0)
				return admin_fail("%s", "expected a sale id (a positive integer)");
			argc--;
			argv++;
		}
		rest = argc;
		if (rest < c->min || rest > c->max)
			return -1;
		return c->sale_id ? c->run_sale(sale, argc, argv) : c->run(argc, argv);
	}
	return -1;
}

int
main(int argc, char **argv)
{
	int rc, help = argc == 2 && strcmp(argv[1], "--help") == 0;

	if (sodium_init() < 0)
		return admin_fail("%s", "libsodium failed to start");
	if ((rc = dispatch(argc, argv)) >= 0)
		return rc;
	fputs(usage, help ? stdout : stderr);
	return help ? 0 : 2;
}
