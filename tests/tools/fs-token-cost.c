/*
 * fs-token-cost: the CPU cost of one shopper token's verification, with the
 * keys the handlers load (FLASHSALE_KEYS_DIR and FLASHSALE_JWKS_FILE, by
 * lib/keys), for tests/bench/purchase and tests/bench/queue. Not installed.
 *
 *   fs-token-cost N NAME=TOKEN...
 *
 * Verifies each token N times (1..1000000) in one thread and prints
 * "NAME us_per_verification" a line: the process's CPU time over N. Exits 0,
 * 1 when a token does not verify (a message), 2 on a usage error.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfg.h"
#include "keys.h"
#include "token.h"

/* The process's CPU time in microseconds. */
static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int
main(int argc, char **argv)
{
	char sub[FS_TOKEN_SUB_MAX + 1], err[512], *end;
	fs_token_keys *keys = NULL;
	struct fs_cfg cfg;
	enum fs_token_status st;
	const char *tok;
	double t0;
	long n, i;
	int a, rc = 1;

	errno = 0;
	if (argc < 3 || (n = strtol(argv[1], &end, 10)) < 1 || n > 1000000 || *end != '\0' ||
	    errno != 0) {
		fprintf(stderr, "usage: fs-token-cost N NAME=TOKEN...\n");
		return 2;
	}
	if (fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fprintf(stderr, "fs-token-cost: %s\n", cfg.errstr);
		return 1;
	}
	if (fs_keys_load(&cfg, &keys, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "fs-token-cost: %s\n", err);
		return 1;
	}
	for (a = 2; a < argc; a++) {
		if ((tok = strchr(argv[a], '=')) == NULL) {
			fprintf(stderr, "fs-token-cost: %s is not NAME=TOKEN\n", argv[a]);
			goto out;
		}
		tok++;
		t0 = cpu_us();
		for (i = 0; i < n; i++)
			if ((st = fs_token_verify(keys, tok, strlen(tok), time(NULL), sub, sizeof(sub))) !=
			    FS_TOKEN_OK) {
				fprintf(stderr, "fs-token-cost: %.*s: %s\n", (int)(tok - argv[a] - 1), argv[a],
				    fs_token_strerror(st));
				goto out;
			}
		printf("%.*s %.2f\n", (int)(tok - argv[a] - 1), argv[a], (cpu_us() - t0) / (double)n);
	}
	rc = 0;
out:
	fs_token_keys_free(keys);
	return rc;
}
