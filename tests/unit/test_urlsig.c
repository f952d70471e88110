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
#include "cases.h"

#define ITEM	42
#define SALE	7
#define START	1700000000
#define END	1700003600


/*
 * The fixture every case shares, made once by main: two keys, and the
 * query the first signs for ITEM in SALE's window, with its sig.
 */
static fs_urlsig_key *url_key, *other_key;
static unsigned char raw[FS_URLSIG_KEYBYTES], other[FS_URLSIG_KEYBYTES];
static char signed_q[FS_URLSIG_SIGNED_MAX], sig[64];

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
test_queue_flag(void)
{
	static const char *const bad[] = { "q=0", "q=", "q=11", "q=1&q=1", "q=true", "Q=1", NULL };
	unsigned char tag[crypto_auth_BYTES];
	char q[FS_URLSIG_SIGNED_MAX], plain[FS_URLSIG_SIGNED_MAX], qsig[64], want[256], forged[256];
	const char *msg = "v1|42|7|1700000000|1700003600|q";
	uint64_t sale = 0;

	check(fs_urlsig_sign(url_key, ITEM, SALE, START, END, 1, q, sizeof(q)) == 0 &&
		fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, plain, sizeof(plain)) == 0,
	    "queue: sign");
	crypto_auth(tag, (const unsigned char *)msg, strlen(msg), raw);
	(void)fs_b64url_encode(qsig, sizeof(qsig), tag, sizeof(tag), NULL);
	snprintf(want, sizeof(want), "sale=7&start=1700000000&end=1700003600&q=1&sig=%s", qsig);
	check(strcmp(q, want) == 0, "queue: q=1 before sig, crypto_auth of the message ending |q");
	check(run(url_key, ITEM, q, strlen(q), START + 10, &sale) == FS_URLSIG_OK && sale == SALE &&
		last_queue == 1,
	    "queue: the check reports the flag");
	check(run(url_key, ITEM, plain, strlen(plain), START + 10, &sale) == FS_URLSIG_OK &&
		last_queue == 0,
	    "queue: a URL without q reports none");
	snprintf(forged, sizeof(forged), "sale=7&start=1700000000&end=1700003600&sig=%s", qsig);
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "queue: q taken away breaks the signature");
	snprintf(forged, sizeof(forged), "%.*s&q=1%s", (int)(strstr(plain, "&sig=") - plain), plain,
	    strstr(plain, "&sig="));
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "queue: q=1 added breaks the signature");
	snprintf(forged, sizeof(forged), "q=1&sig=%s&end=1700003600&sale=7&start=1700000000", qsig);
	check(run(url_key, ITEM, forged, strlen(forged), START + 10, &sale) == FS_URLSIG_OK &&
		last_queue == 1,
	    "queue: parameters in any order");
	for (int i = 0; bad[i] != NULL; i++) {
		char what[96];

		snprintf(forged, sizeof(forged), "sale=7&start=1700000000&end=1700003600&%s&sig=%s",
		    bad[i], qsig);
		snprintf(what, sizeof(what), "queue: %s is malformed", bad[i]);
		check(run(url_key, ITEM, forged, strlen(forged), START + 10, &sale) ==
			    FS_URLSIG_MALFORMED &&
			last_queue == 0,
		    what);
	}
}

/* The signed query: sale, start, end and crypto_auth of the v1 message. */
static void
test_sign(void)
{
	unsigned char tag[crypto_auth_BYTES];
	char q[FS_URLSIG_SIGNED_MAX];
	char expected[256];
	char want_sig[64];
	const char *msg = "v1|42|7|1700000000|1700003600";

	check(fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0,
	    "sign");
	crypto_auth(tag, (const unsigned char *)msg, strlen(msg), raw);
	(void)fs_b64url_encode(want_sig, sizeof(want_sig), tag, sizeof(tag), NULL);
	snprintf(expected, sizeof(expected),
	    "sale=7&start=1700000000&end=1700003600&sig=%s", want_sig);
	check(strcmp(q, expected) == 0,
	    "sign writes sale, start, end and crypto_auth of the v1 message");
}

/* The window: open from start to one second before end, for this item and url_key. */
static void
test_window(void)
{
	char q[FS_URLSIG_SIGNED_MAX];
	uint64_t sale = 0;

	memcpy(q, signed_q, sizeof(q));
	expect(url_key, q, START + 10, FS_URLSIG_OK, "check inside the window");
	expect(url_key, q, START, FS_URLSIG_OK, "check at start");
	expect(url_key, q, END - 1, FS_URLSIG_OK, "check one second before end");
	expect(url_key, q, START - 1, FS_URLSIG_NOT_STARTED,
	    "check one second early is NOT_STARTED (425)");
	expect(url_key, q, END, FS_URLSIG_EXPIRED, "check at end is EXPIRED");
	expect(other_key, q, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "check under another key is BAD_SIGNATURE");
	sale = 0;
	check(run(url_key, ITEM + 1, q, strlen(q), START + 10, &sale) ==
	    FS_URLSIG_BAD_SIGNATURE && sale == 0,
	    "check for another item is BAD_SIGNATURE");
}

/* Every signed parameter is bound: any change breaks the signature. */
static void
test_tampered(void)
{
	char q[FS_URLSIG_SIGNED_MAX];
	char forged[256];
	const char *s;

	memcpy(q, signed_q, sizeof(q));
	snprintf(forged, sizeof(forged), "sig=%s&end=1700003600&sale=7&"
	    "start=1700000000", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_OK,
	    "parameters in any order");
	snprintf(forged, sizeof(forged),
	    "sale=8&start=1700000000&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered sale is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1699999999&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered start is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003601&sig=%s", sig);
	expect(url_key, forged, END, FS_URLSIG_BAD_SIGNATURE,
	    "tampered end is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged), "%s", q);
	s = strstr(forged, "sig=") + 4;
	forged[s - forged] = *s == 'A' ? 'B' : 'A';
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "tampered sig is BAD_SIGNATURE");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1800000000&end=1800003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "a forged future window is BAD_SIGNATURE, never NOT_STARTED");
}

/* One spelling of a query: anything else is MALFORMED before any signature. */
static void
test_malformed(void)
{
	char q[FS_URLSIG_SIGNED_MAX];
	char forged[256];
	uint64_t sale = 0;

	memcpy(q, signed_q, sizeof(q));
	snprintf(forged, sizeof(forged), "sale=7&%s", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a repeated parameter before a valid query");
	snprintf(forged, sizeof(forged), "%s&sale=7", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a repeated parameter after a valid query");
	expect(url_key, "sale=7&start=1700000000&end=1700003600", START + 10,
	    FS_URLSIG_MALFORMED, "missing sig");
	snprintf(forged, sizeof(forged), "%s&x=1", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "extra parameter");
	snprintf(forged, sizeof(forged), "%s&", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "trailing &");
	snprintf(forged, sizeof(forged), "&%s", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "leading &");
	snprintf(forged, sizeof(forged), "%s#", q);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "a character after sig");
	expect(url_key, "", START + 10, FS_URLSIG_MALFORMED, "empty query");
	expect(url_key, "sale", START + 10, FS_URLSIG_MALFORMED,
	    "parameter without =");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1e9&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "non-digit");
	snprintf(forged, sizeof(forged),
	    "sale=+7&start=1700000000&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "plus sign");
	snprintf(forged, sizeof(forged),
	    "sale=-7&start=1700000000&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "minus sign");
	snprintf(forged, sizeof(forged),
	    "sale=07&start=1700000000&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "leading zero");
	snprintf(forged, sizeof(forged),
	    "sale=&start=1700000000&end=1700003600&sig=%s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "empty value");
	snprintf(forged, sizeof(forged),
	    "sale=18446744073709551616&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "overflow 18446744073709551616");
	snprintf(forged, sizeof(forged),
	    "sale=99999999999999999999&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "overflow 99999999999999999999");
	snprintf(forged, sizeof(forged),
	    "sale=18446744073709551615&start=1700000000&end=1700003600&sig=%s",
	    sig);
	expect(url_key, forged, START + 10, FS_URLSIG_BAD_SIGNATURE,
	    "UINT64_MAX parses (and fails the signature)");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%s=", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "padded sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%.42s", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "short sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%sAAAA", sig);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED, "long sig");
	snprintf(forged, sizeof(forged),
	    "sale=7&start=1700000000&end=1700003600&sig=%%2B%s", sig + 3);
	expect(url_key, forged, START + 10, FS_URLSIG_MALFORMED,
	    "percent-encoding in sig");
	snprintf(forged, sizeof(forged), "%s", q);
	forged[strlen(forged) - 1] = forged[strlen(forged) - 1] == 'A' ?
	    'B' : 'A';
	check(run(url_key, ITEM, forged, strlen(forged), START + 10, &sale) !=
	    FS_URLSIG_OK, "non-canonical last sig character");
}

/* Bounds: a query over the maximum, one read past its length, none at all. */
static void
test_lengths(void)
{
	char q[FS_URLSIG_SIGNED_MAX];
	char big[FS_URLSIG_QUERY_MAX + 2];
	uint64_t sale = 0;
	size_t len;

	memcpy(q, signed_q, sizeof(q));
	memset(big, 'x', sizeof(big));
	len = strlen(q);
	memcpy(big, q, len);
	big[len] = '&';
	check(run(url_key, ITEM, big, FS_URLSIG_QUERY_MAX + 1, START + 10, &sale) ==
	    FS_URLSIG_TOO_LONG, "query over 512 bytes is TOO_LONG");
	check(run(url_key, ITEM, big, FS_URLSIG_QUERY_MAX, START + 10, &sale) ==
	    FS_URLSIG_MALFORMED, "query of exactly 512 bytes is not TOO_LONG");
	check(run(url_key, ITEM, q, len - 1, START + 10, &sale) ==
	    FS_URLSIG_MALFORMED, "check reads only len bytes");
	check(fs_urlsig_check(url_key, ITEM, NULL, 0, START, &sale, NULL, &last_queue) ==
	    FS_URLSIG_MALFORMED, "NULL query");
}

/* What sign refuses: short buffers and empty or inverted windows. */
static void
test_sign_limits(void)
{
	char q[FS_URLSIG_SIGNED_MAX];

	check(fs_urlsig_sign(url_key, UINT64_MAX, UINT64_MAX, INT64_MAX - 1,
	    INT64_MAX, 1, q, sizeof(q)) == 0,
	    "FS_URLSIG_SIGNED_MAX holds the largest query, a waiting room's");
	check(fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, q, 40) == -1 &&
	    q[0] == '\0', "sign into a short buffer fails");
	check(fs_urlsig_sign(url_key, ITEM, SALE, END, START, 0, q, sizeof(q)) == -1,
	    "sign refuses end before start");
	check(fs_urlsig_sign(url_key, ITEM, SALE, START, START, 0, q, sizeof(q)) == -1,
	    "sign refuses an empty window");
	check(fs_urlsig_sign(url_key, ITEM, SALE, -1, START, 0, q, sizeof(q)) == -1,
	    "sign refuses a negative start");
}

/* The url_key from a keys directory: url.key of exactly 32 bytes. */
static void
test_key_file(void)
{
	char q[FS_URLSIG_SIGNED_MAX];
	char path[256];
	char dir[] = "/tmp/test_urlsig.XXXXXX";
	char err[256];
	uint64_t sale = 0;
	fs_urlsig_key *loaded = fs_urlsig_key_new();

	check(loaded != NULL, "a key to load into");
	check(mkdtemp(dir) != NULL, "make a keys directory");
	check(fs_urlsig_key_load_dir(loaded, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "url.key") != NULL, "load_dir without url.key fails");
	snprintf(path, sizeof(path), "%s/url.key", dir);
	check(write_file(path, raw, sizeof(raw) - 1) == 0 &&
	    fs_urlsig_key_load_dir(loaded, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "exactly 32 bytes") != NULL,
	    "load_dir refuses a short url.key");
	check(write_file(path, raw, sizeof(raw)) == 0 &&
	    fs_urlsig_key_load_dir(loaded, dir, err, sizeof(err)) == 0,
	    "load_dir reads url.key");
	check(fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0 &&
	    run(loaded, ITEM, q, strlen(q), START, &sale) == FS_URLSIG_OK,
	    "the loaded key checks what the set key signed");
	unlink(path);
	rmdir(dir);
	fs_urlsig_key_free(loaded);
}

/* Event tickets: one order, until they expire, under this url_key only. */
static void
test_tickets(void)
{
	static const char oid[] = "01900000-0000-7000-8000-000000000001";
	static const char other_oid[] = "01900000-0000-7000-8000-000000000002";
	char t[FS_URLSIG_TICKET_MAX + 1], bad[FS_URLSIG_TICKET_MAX + 8], q[FS_URLSIG_SIGNED_MAX];

	check(fs_urlsig_ticket(url_key, oid, START + 120, t, sizeof(t)) == 0 &&
	    fs_urlsig_ticket_check(url_key, oid, t, strlen(t), START) == FS_URLSIG_OK,
	    "ticket: checks for its order before it expires");
	check(fs_urlsig_ticket_check(url_key, oid, t, strlen(t), START + 120) == FS_URLSIG_EXPIRED,
	    "ticket: expired at its time");
	check(fs_urlsig_ticket_check(url_key, other_oid, t, strlen(t), START) ==
	    FS_URLSIG_BAD_SIGNATURE, "ticket: opens no other order");
	check(fs_urlsig_ticket_check(other_key, oid, t, strlen(t), START) == FS_URLSIG_BAD_SIGNATURE,
	    "ticket: another key refuses it");
	snprintf(bad, sizeof(bad), "9%s", t);
	check(fs_urlsig_ticket_check(url_key, oid, bad, strlen(bad), START) == FS_URLSIG_BAD_SIGNATURE,
	    "ticket: a later expiry breaks the tag");
	snprintf(bad, sizeof(bad), "0%s", t);
	check(fs_urlsig_ticket_check(url_key, oid, bad, strlen(bad), START) == FS_URLSIG_MALFORMED,
	    "ticket: a leading zero is not the expiry");
	check(fs_urlsig_ticket_check(url_key, oid, t, strlen(t) - 1, START) == FS_URLSIG_MALFORMED &&
		fs_urlsig_ticket_check(url_key, oid, "", 0, START) == FS_URLSIG_MALFORMED &&
		fs_urlsig_ticket_check(url_key, oid, NULL, 0, START) == FS_URLSIG_MALFORMED &&
		fs_urlsig_ticket_check(url_key, oid, t, FS_URLSIG_TICKET_MAX + 1, START) ==
		    FS_URLSIG_TOO_LONG,
	    "ticket: cut, empty, missing or too long is refused");
	check(fs_urlsig_ticket(url_key, oid, START, t, 10) == -1 &&
		fs_urlsig_ticket(url_key, oid, 0, t, sizeof(t)) == -1,
	    "ticket: a small buffer or no expiry is refused");
	/* A purchase tag is no ticket: the messages are kept apart. */
	check(fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, q, sizeof(q)) == 0 &&
		fs_urlsig_ticket_check(url_key, oid, strstr(q, "sig=") + 4,
		    strlen(strstr(q, "sig=") + 4), START) == FS_URLSIG_MALFORMED,
	    "ticket: a purchase signature is not a ticket");
}

/* Every status has a name. */
static void
test_strerror(void)
{
	check(strcmp(fs_urlsig_strerror(FS_URLSIG_NOT_STARTED),
	    "sale not started") == 0 &&
	    fs_urlsig_strerror(FS_URLSIG__MAX) != NULL,
	    "strerror names every status");
}

int
main(int argc, char **argv)
{
	static const struct fs_test_case cases[] = {
		{ "sign", test_sign },
		{ "window", test_window },
		{ "tampered", test_tampered },
		{ "malformed", test_malformed },
		{ "lengths", test_lengths },
		{ "sign_limits", test_sign_limits },
		{ "key_file", test_key_file },
		{ "tickets", test_tickets },
		{ "queue_flag", test_queue_flag },
		{ "strerror", test_strerror },
		{ NULL, NULL },
	};
	int rc;

	if (sodium_init() < 0 || (url_key = fs_urlsig_key_new()) == NULL ||
	    (other_key = fs_urlsig_key_new()) == NULL)
		return 99;
	for (size_t i = 0; i < sizeof(raw); i++) {
		raw[i] = (unsigned char)i;
		other[i] = (unsigned char)(i + 1);
	}
	fs_urlsig_key_set(url_key, raw);
	fs_urlsig_key_set(other_key, other);
	if (fs_urlsig_sign(url_key, ITEM, SALE, START, END, 0, signed_q, sizeof(signed_q)) != 0)
		return 99;
	snprintf(sig, sizeof(sig), "%s", strstr(signed_q, "sig=") + 4);

	rc = fs_test_cases(argc, argv, cases);
	fs_urlsig_key_free(url_key);
	fs_urlsig_key_free(other_key);
	fs_urlsig_key_free(NULL);
	return rc;
}
