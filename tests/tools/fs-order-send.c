/*
 * fs-order-send: order messages made by hand onto the order topic, signed
 * as a purchase handler signs them (lib/ordertopic), for the tests and the
 * consumer's benchmark that write messages no purchase made (redeliveries,
 * messages of held units, many at once). Not installed: whoever holds the
 * order keys can make orders.
 *
 *   fs-order-send            sends each line "KEY<TAB>VALUE" of standard
 *                            input to FLASHSALE_KAFKA_TOPIC, signed with the
 *                            first key of FLASHSALE_ORDER_KEYS_FILE
 *   fs-order-send --print    prints "KID MAC" for each line instead
 *
 * Exits 0 once the broker acknowledged every message, 1 on an error (a
 * message), 2 on a usage error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "keys.h"
#include "log.h"
#include "ordertopic.h"

#define LINE_MAX_BYTES (64 + 1 + FS_ORDERTOPIC_MESSAGE_MAX + 2)
#define CHUNK 5000 /* messages sent, then waited for, at once */

struct chunk {
	struct fs_ordertopic_msg m[CHUNK];
	size_t n;
};

/* Sends the chunk and waits for the broker; 0 or -1 (said). */
static int
flush(fs_ordertopic *t, struct chunk *c)
{
	static struct fs_kafka_msg msgs[CHUNK];
	char err[256];

	for (size_t i = 0; i < c->n; i++)
		msgs[i] = c->m[i].kafka;
	if (c->n > 0 && fs_kafka_produce_all(t->producer, t->topic, msgs, c->n, err, sizeof(err)) !=
	    FS_KAFKA_DELIVERED) {
		fprintf(stderr, "fs-order-send: %s\n", err);
		return -1;
	}
	c->n = 0;
	return 0;
}

/* One line into m (key and value copied, signed); 0 or -1 (said). */
static int
sign_line(const fs_ordertopic *t, char *line, struct fs_ordertopic_msg *m, long lineno)
{
	char *tab = strchr(line, '\t'), err[256];

	line[strcspn(line, "\n")] = '\0';
	if (tab == NULL) {
		fprintf(stderr, "fs-order-send: line %ld: want KEY<TAB>VALUE\n", lineno);
		return -1;
	}
	if (fs_ordertopic_message_bytes(t, line, (size_t)(tab - line), tab + 1, strlen(tab + 1), m,
		err, sizeof(err)) != 0) {
		fprintf(stderr, "fs-order-send: line %ld: %s\n", lineno, err);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct chunk c;
	static char line[LINE_MAX_BYTES];
	struct fs_cfg cfg;
	fs_ordertopic t;
	char err[256];
	int print = argc == 2 && strcmp(argv[1], "--print") == 0, rc = 1;
	long lineno = 0;

	if (argc > 2 || (argc == 2 && !print)) {
		fprintf(stderr, "usage: fs-order-send [--print] <KEY<TAB>VALUE lines\n");
		return 2;
	}
	fs_log_init("fs-order-send");
	memset(&t, 0, sizeof(t));
	if (fs_cfg_load(&cfg, print ? 0 : FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0) {
		fprintf(stderr, "fs-order-send: %s\n", cfg.errstr);
		return 1;
	}
	if (fs_ordertopic_init(&t, fs_cfg_get(&cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_keys_load_orders(&cfg, &t, err, sizeof(err)) != 0 ||
	    (!print && fs_ordertopic_open_producer(&t, 30000, 5, err, sizeof(err)) != 0)) {
		fprintf(stderr, "fs-order-send: %s\n", err);
		goto out;
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		struct fs_ordertopic_msg *m = &c.m[c.n];

		if (sign_line(&t, line, m, ++lineno) != 0)
			goto out;
		if (print) {
			printf("%s %s\n", m->kid, m->mac);
			continue;
		}
		if (++c.n == CHUNK && flush(&t, &c) != 0)
			goto out;
	}
	rc = print ? 0 : (flush(&t, &c) == 0 ? 0 : 1);
out:
	fs_ordertopic_close(&t);
	return rc;
}
