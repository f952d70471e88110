/* Unit test of lib/urlsig: the signed purchase URL. */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "b64url.h"
#include "urlsig.h"
#include "expect.h"

#define ITEM	42
#define SALE	7
#define START	1700000000
#define END	1700003600


/* The waiting room flag of the last URL run() checked. */
static int last_queue;

/* Checks from an unterminated heap copy, so ASan sees any overread. */
static enum fs_urlsig_status
run(const fs_urlsig_key *key, uint64_t item, const char *q, size_t len,
    time_t now, uint64_t *sale)
{
	char *copy = malloc(len > 0 ? len : 1);
	enum fs_urlsig_status st;

	if (copy == NULL)
		abort();
	memcpy(copy, q, len);
	st = fs_urlsig_check(key, item, copy, len, now, sale, NULL, &last_queue);
	free(copy);
	return st;
}

static void
expect(const fs_urlsig_key *key, const char *q, time_t now,
    enum fs_urlsig_status want, const char *what)
{
	uint64_t sale = 0;
	enum fs_urlsig_status got = run(key, ITEM, q, strlen(q), now, &sale);

	if (got != want)
		printf("# got \"%s\", want \"%s\" for %s\n",
		    fs_urlsig_strerror(got), fs_urlsig_strerror(want), q);
	check(got == want && (got != FS_URLSIG_OK || (sale == SALE && last_queue == 0)), what);
}

static int
write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd != -1 && write(fd, buf, len) == (ssize_t)len;

	if (fd != -1)
		close(fd);
	return ok ? 0 : -1;
}

/*
 * A waiting room's URL: q=1 inside the signature, reported by the check;
 * taking it away or adding it breaks the signature, and it has one spelling.
 */
static void
test_queue_flag(const fs_urlsig_key *key, const unsigned char raw[FS_URLSIG_KEYBYTES])
{
	static const char *const bad[] = { "q=0", "q=", "q=11", "q=1&q=1", "q=true", "Q=1", NULL };
	unsigned char tag[crypto_auth_BYTES];
	char q[FS_URLSIG_SIGNED_MAX], plain[FS_URLSIG_SIGNED_MAX], sig[64], want[256], forged[256];
	const char *msg = "v1|42|7|1700000000|1700003600|q";
	uint64_t sale = 0;

	check(fs_urlsig_sign(key, ITEM, SALE, START, END, 1, q, sizeof(q)) == 0 &&
		fs_urlsig_sign(key, ITEM, SALE, START, END, 0, plain, sizeof(plain)) == 0,
	    "queue: sign");
	crypto_auth(tag, (const unsigned char *)msg, strlen(msg), raw);
	(void)fs_b64url_encode(sig, sizeof(sig), tag, sizeof(tag), NULL);
	snprintf(want, sizeof(want), "sale=7&start=1700000000&end=1700003600&q=1&sig=%s", sig);
	check(strcmp(q, want) == 0, "queue: q=1 before sig, crypto_auth of the message ending |q");
	check(run(key, ITEM, q, strlen(q), START + 10, &sale) == FS_URLSIG_OK && sale == SALE &&
		last_queue == 1,
	    "queue: the check reports the flag");
	check(run(key, ITEM, plain, strlen(plain), START + 10, &sale) == FS_URLSIG_OK &&
		last_queue == 0,
	    "queue: a URL without q reports none");
	snprintf(forged, sizeof(forged), "sale=7&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "queue: q taken away breaks the signature");
	snprintf(forged, sizeof(forged), "%.*s&q=1%s", (int)(strstr(plain, "&sig=") - plain), plain,
	    strstr(plain, "&sig="));
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "queue: q=1 added breaks the signature");
	snprintf(forged, sizeof(forged), "q=1&sig=%s&end=1700003600&sale=7&start=1700000000", sig);
	check(run(key, ITEM, forged, strlen(forged), START + 10, &sale) == FS_URLSIG_OK &&
		last_queue == 1,
	    "queue: parameters in any order");
	for (int i = 0; bad[i] != NULL; i++) {
		char what[96];

		snprintf(forged, sizeof(forged), "sale=7&start=1700000000&end=1700003600&%s&sig=%s",
		    bad[i], sig);
		snprintf(what, sizeof(what), "queue: %s is malformed", bad[i]);
		check(run(key, ITEM, forged, strlen(forged), START + 10, &sale) ==
			    FS_URLSIG_MALFORMED &&
			last_queue == 0,
		    what);
	}
}

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES], other[FS_URLSIG_KEYBYTES];
	unsigned char tag[crypto_auth_BYTES];
	char q[FS_URLSIG_SIGNED_MAX], big[FS_URLSIG_QUERY_MAX + 2];
	char sig[64], expected[256], forged[256], path[256], dir[] =
	    "/tmp/test_urlsig.XXXXXX";
	const char *msg = "v1|42|7|1700000000|1700003600", *s;
	fs_urlsig_key *key, *key2;
	char err[256];
	uint64_t sale;
	size_t len;

	if (sodium_init() < 0 || (key = fs_urlsig_key_new()) == NULL ||
	    (key2 = fs_urlsig_key_new()) == NULL)
		return 99;
	for (size_t i = 0; i < sizeof(raw); i++) {
		raw[i] = (unsigned char)i;
		other[i] = (unsigned char)(i + 1);
	}
	fs_urlsig_key_set(key, raw);
	fs_urlsig_key_set(key2, other);

	check(fs_urlsig_sign(key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0,
	    "sign");
	crypto_auth(tag, (const unsigned char *)msg, strlen(msg), raw);
	(void)fs_b64url_encode(sig, sizeof(sig), tag, sizeof(tag), NULL);
	snprintf(expected, sizeof(expected),
	    "sale=7&start=1700000000&end=1700003600&sig=%s", sig);
	check(strcmp(q, expected) == 0,
	    "sign writes sale, start, end and crypto_auth of the v1 message");

	expect(key, q, START + 10, FS_URLSIG_OK, "check inside the window");
	expect(key, q, START, FS_URLSIG_OK, "check at start");
	expect(key, q, END - 1, FS_URLSIG_OK, "check one second before end");
	expect(key, q, START - 1, FS_URLSIG_NOT_STARTED,
	    "check one second early is NOT_STARTED (425)");
	expect(key, q, END, FS_URLSIG_EXPIRED, "check at end is EXPIRED");
	expect(key2, q, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "check under another key is BAD_SIGNATURE");
	sale = 0;
	check(run(key, ITEM + 1, q, strlen(q), START + 10, &sale) ==
	    FS_URLSIG_BAD_SIGNATURE && sale == 0,
	    "check for another item is BAD_SIGNATURE");

	snprintf(forged, sizeof(forged), "sig=%s&end=1700003600&sale=7&"
	    "start=1700000000", sig);
	expect(key, forged, START + 10, FS_URLSIG_OK,
	    "parameters in any order");
	snprintf(forged, sizeof(forged),
	    "sale=8&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered sale is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1699999999&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered start is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003601&sig=%s", sig);
	expect(key, forged, END, FS_URLSIG_BAD_SIGNATURE,
	    "tampered end is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged), "%s", q);
	s = strstr(forged, "sig=") + 4;
	forged[s - forged] = *s == 'A' ? 'B' : 'A';
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered sig is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1800000000&end=1800003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "a forged future window is BAD_SIGNATURE, never NOT_STARTED");

	snprintf(forged, sizeof(forged), "sale=7&%s", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a repeated parameter before a valid query");
	snprintf(forged, sizeof(forged), "%s&sale=7", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a repeated parameter after a valid query");
	expect(key, "sale=7&start=1700000000&end=1700003600", START + 10,
	    FS_URLSIG_MALFORMED, "missing sig");
	snprintf(forged, sizeof(forged), "%s&x=1", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "extra parameter");
	snprintf(forged, sizeof(forged), "%s&", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "trailing &");
	snprintf(forged, sizeof(forged), "&%s", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "leading &");
	snprintf(forged, sizeof(forged), "%s#", q);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a character after sig");
	expect(key, "", START + 10, FS_URLSIG_MALFORMED, "empty query");
	expect(key, "sale", START + 10, FS_URLSIG_MALFORMED,
	    "parameter without =");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1e9&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "non-digit");
	snprintf(forged, sizeof(forged),
	    "sale=+7&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "plus sign");
	snprintf(forged, sizeof(forged),
	    "sale=-7&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "minus sign");
	snprintf(forged, sizeof(forged),
	    "sale=07&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "leading zero");
	snprintf(forged, sizeof(forged),
	    "sale=&start=1700000000&end=1700003600&sig=%s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "empty value");
	snprintf(forged, sizeof(forged),
	    "sale=18446744073709551616&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "overflow 18446744073709551616");
	snprintf(forged, sizeof(forged),
	    "sale=99999999999999999999&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "overflow 99999999999999999999");
	snprintf(forged, sizeof(forged),
	    "sale=18446744073709551615&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "UINT64_MAX parses (and fails the signature)");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%s=", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "padded sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%.42s", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "short sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%sAAAA", sig);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED, "long sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%%2B%s", sig + 3);
	expect(key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "percent-encoding in sig");
	snprintf(forged, sizeof(forged), "%s", q);
	forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == 'A' ?
	    'B' : 'A';
	check(run(key, ITEM, forged, strlen(forged), START + 10, &sale) !=
	    FS_URLSIG_OK, "non-canonical last sig character");

	memset(big, 'x', sizeof(big));
	len = strlen(q);
	memcpy(big, q, len);
	big[len] = '&';
	check(run(key, ITEM, big, FS_URLSIG_QUERY_MAX + 1, START + 10, &sale) ==
	    FS_URLSIG_TOO_LONG, "query over 512 bytes is TOO_LONG");
	check(run(key, ITEM, big, FS_URLSIG_QUERY_MAX, START + 10, &sale) ==
	    FS_URLSIG_MALFORMED, "query of exactly 512 bytes is not TOO_LONG");
	check(run(key, ITEM, q, len - 1, START + 10, &sale) ==
	    FS_URLSIG_MALFORMED, "check reads only len bytes");
	check(fs_urlsig_check(key, ITEM, NULL, 0, START, &sale, NULL, &last_queue) ==
	    FS_URLSIG_MALFORMED, "NULL query");

	check(fs_urlsig_sign(key, UINT64_MAX, UINT64_MAX, INT64_MAX - 1,
	    INT64_MAX, 1, q, sizeof(q)) == 0,
	    "FS_URLSIG_SIGNED_MAX holds the largest query, a waiting room's");
	check(fs_urlsig_sign(key, ITEM, SALE, START, END, 0, q, 40) == -1 &&
	    q[0] == '\0', "sign into a short buffer fails");
	check(fs_urlsig_sign(key, ITEM, SALE, END, START, 0, q, sizeof(q)) == -1,
	    "sign refuses end before start");
	check(fs_urlsig_sign(key, ITEM, SALE, START, START, 0, q, sizeof(q)) == -1,
	    "sign refuses an empty window");
	check(fs_urlsig_sign(key, ITEM, SALE, -1, START, 0, q, sizeof(q)) == -1,
	    "sign refuses a negative start");

	check(mkdtemp(dir) != NULL, "make a keys directory");
	check(fs_urlsig_key_load_dir(key2, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "url.key") != NULL, "load_dir without url.key fails");
	snprintf(path, sizeof(path), "%s/url.key", dir);
	check(write_file(path, raw, sizeof(raw) - 1) == 0 &&
	    fs_urlsig_key_load_dir(key2, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "exactly 32 bytes") != NULL,
	    "load_dir refuses a short url.key");
	check(write_file(path, raw, sizeof(raw)) == 0 &&
	    fs_urlsig_key_load_dir(key2, dir, err, sizeof(err)) == 0,
	    "load_dir reads url.key");
	check(fs_urlsig_sign(key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0 &&
	    run(key2, ITEM, q, strlen(q), START, &sale) == FS_URLSIG_OK,
	    "the loaded key checks what the set key signed");
	unlink(path);
	rmdir(dir);

	/* Event tickets: one order, until they expire, under this key only. */
	{
		static const char oid[] = "01900000-0000-7000-8000-000000000001";
		static const char other_oid[] = "01900000-0000-7000-8000-000000000002";
		char t[FS_URLSIG_TICKET_MAX + 1], bad[FS_URLSIG_TICKET_MAX + 8];

		fs_urlsig_key_set(key2, other);

		check(fs_urlsig_ticket(key, oid, START + 120, t, sizeof(t)) == 0 &&
		    fs_urlsig_ticket_check(key, oid, t, strlen(t), START) == FS_URLSIG_OK,
		    "ticket: checks for its order before it expires");
		check(fs_urlsig_ticket_check(key, oid, t, strlen(t), START + 120) == FS_URLSIG_EXPIRED,
		    "ticket: expired at its time");
		check(fs_urlsig_ticket_check(key, other_oid, t, strlen(t), START) ==
		    FS_URLSIG_BAD_SIGNATURE, "ticket: opens no other order");
		check(fs_urlsig_ticket_check(key2, oid, t, strlen(t), START) == FS_URLSIG_BAD_SIGNATURE,
		    "ticket: another key refuses it");
		snprintf(bad, sizeof(bad), "9%s", t);
		check(fs_urlsig_ticket_check(key, oid, bad, strlen(bad), START) == FS_URLSIG_BAD_SIGNATURE,
		    "ticket: a later expiry breaks the tag");
		snprintf(bad, sizeof(bad), "0%s", t);
		check(fs_urlsig_ticket_check(key, oid, bad, strlen(bad), START) == FS_URLSIG_MALFORMED,
		    "ticket: a leading zero is not the expiry");
		check(fs_urlsig_ticket_check(key, oid, t, strlen(t) - 1, START) == FS_URLSIG_MALFORMED &&
			fs_urlsig_ticket_check(key, oid, "", 0, START) == FS_URLSIG_MALFORMED &&
			fs_urlsig_ticket_check(key, oid, NULL, 0, START) == FS_URLSIG_MALFORMED &&
			fs_urlsig_ticket_check(key, oid, t, FS_URLSIG_TICKET_MAX + 1, START) ==
			    FS_URLSIG_TOO_LONG,
		    "ticket: cut, empty, missing or too long is refused");
		check(fs_urlsig_ticket(key, oid, START, t, 10) == -1 &&
			fs_urlsig_ticket(key, oid, 0, t, sizeof(t)) == -1,
		    "ticket: a small buffer or no expiry is refused");
		/* A purchase tag is no ticket: the messages are kept apart. */
		check(fs_urlsig_sign(key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0 &&
			fs_urlsig_ticket_check(key, oid, strstr(q, "sig=") + 4,
			    strlen(strstr(q, "sig=") + 4), START) == FS_URLSIG_MALFORMED,
		    "ticket: a purchase signature is not a ticket");
	}

	test_queue_flag(key, raw);

	check(strcmp(fs_urlsig_strerror(FS_URLSIG_NOT_STARTED),
	    "sale not started") == 0 &&
	    fs_urlsig_strerror(FS_URLSIG__MAX) != NULL,
	    "strerror names every status");
	fs_urlsig_key_free(key);
	fs_urlsig_key_free(key2);
	fs_urlsig_key_free(NULL);
	return failures == 0 ? 0 : 1;
}
