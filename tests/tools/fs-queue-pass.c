/*
 * fs-queue-pass: waiting-room passes made straight from the queue key, so
 * that a benchmark can measure purchases with passes without walking
 * every shopper through the queue (tests/bench/purchase, row dq). Not
 * installed: whoever holds queue.key can admit anyone.
 *
 *   fs-queue-pass KEYS_DIR SALE SECONDS
 *
 * Reads account ids (a token's sub), one a line, on standard input and
 * prints "<pass> <sub>" a line: a pass for that account in SALE, valid
 * SECONDS from now (lib/queue's fs_queue_pass_mint). Exits 0, 1 on an
 * error (a message), 2 on a usage error.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "queue.h"

static int
number(const char *s, int64_t max, int64_t *v)
{
	char *end;
	long long x;

	errno = 0;
	x = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || x < 1 || x > max)
		return -1;
	*v = x;
	return 0;
}

int
main(int argc, char **argv)
{
	char line[512], pass[FS_QUEUE_TOKEN_MAX], err[256];
	fs_queue_keys *keys = NULL;
	int64_t sale, ttl, expires;
	size_t len;
	int rc = 1;

	if (argc != 4 || number(argv[2], INT64_MAX, &sale) == -1 ||
	    number(argv[3], 86400, &ttl) == -1) {
		fprintf(stderr, "usage: fs-queue-pass KEYS_DIR SALE SECONDS (1..86400)\n");
		return 2;
	}
	if (sodium_init() < 0 || (keys = fs_queue_keys_new()) == NULL) {
		fprintf(stderr, "fs-queue-pass: out of memory\n");
		return 1;
	}
	if (fs_queue_keys_load_dir(keys, argv[1], err, sizeof(err)) != 0) {
		fprintf(stderr, "fs-queue-pass: %s\n", err);
		goto fail;
	}
	expires = (int64_t)time(NULL) + ttl;
	while (fgets(line, sizeof(line), stdin) != NULL) {
		len = strcspn(line, "\r\n");
		if (line[len] == '\0' && !feof(stdin)) {
			fprintf(stderr, "fs-queue-pass: a line longer than %zu bytes\n",
			    sizeof(line) - 2);
			goto fail;
		}
		line[len] = '\0';
		if (len == 0)
			continue;
		if (fs_queue_pass_mint(keys, (uint64_t)sale, line, expires, pass,
		    sizeof(pass)) != 0) {
			fprintf(stderr, "fs-queue-pass: '%s' is no account id\n", line);
			goto fail;
		}
		printf("%s %s\n", pass, line);
	}
	rc = fflush(stdout) == 0 && !ferror(stdin) ? 0 : 1;
fail:
	fs_queue_keys_free(keys);
	return rc;
}
