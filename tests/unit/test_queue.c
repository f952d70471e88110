/* Unit test of lib/queue's store-free half: keys, draw, passes, tickets, proof of work, settings. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "b64url.h"
#include "jsonread.h"
#include "queue.h"
#include "expect.h"

#define SALE	7
#define NOW	1700000000

static const unsigned char raw_key[FS_QUEUE_KEYBYTES] = "0123456789abcdef0123456789abcde";

/* Checks a pass from an unterminated heap copy of exactly len bytes, so ASan sees any overread. */
static enum fs_queue_status
pass_check(const fs_queue_keys *k, const char *pass, size_t len, uint64_t sale, int64_t now,
    char *sub, size_t submax)
{
	char *copy = len > 0 ? malloc(len) : NULL;
	enum fs_queue_status st;

	if (len > 0 && copy == NULL)
		abort();
	st = fs_queue_pass_check(k, len > 0 ? memcpy(copy, pass, len) : pass, len, sale, now, sub,
	    submax, NULL);
	free(copy);
	return st;
}

/* A token signed the way lib/queue signs, over any message: for non-canonical spellings. */
static void
craft(uint64_t subkey_id, const char *msg, char *out, size_t outmax)
{
	unsigned char key[crypto_auth_KEYBYTES], tag[crypto_auth_BYTES];
	size_t n;

	crypto_kdf_derive_from_key(key, sizeof(key), subkey_id, "fsqueue1", raw_key);
	crypto_auth(tag, (const unsigned char *)msg, strlen(msg), key);
	if (fs_b64url_encode(out, outmax, msg, strlen(msg), &n) != FS_B64URL_OK ||
	    fs_b64url_encode(out + n + 1, outmax - n - 1, tag, sizeof(tag), NULL) != FS_B64URL_OK)
		abort();
	out[n] = '.';
}

static void
test_draw(void)
{
	unsigned char seed[FS_QUEUE_SEEDBYTES] = { 0 };
	char hex[65];

	/* RFC 4231 cases 1 and 2 (an HMAC key shorter than a block is padded with zeros). */
	memset(seed, 0x0b, 20);
	check(fs_queue_draw(seed, "Hi There", 8) == 0xb0344c61d8db3LL,
	    "draw: the first 52 bits of RFC 4231 case 1's HMAC-SHA256");
	memset(seed, 0, sizeof(seed));
	memcpy(seed, "Jefe", 4);
	check(fs_queue_draw(seed, "what do ya want for nothing?", 28) == 0x5bdcc146bf607LL,
	    "draw: the first 52 bits of RFC 4231 case 2's HMAC-SHA256");
	check(fs_queue_draw(seed, "alice", 5) >= 0 &&
		fs_queue_draw(seed, "alice", 5) < FS_QUEUE_LATE_BASE,
	    "draw: below 2^52");
	memset(seed, 0, sizeof(seed));
	fs_queue_seed_commit(seed, hex);
	check(strcmp(hex, "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925") ==
		0,
	    "seed commitment: hex SHA-256 of the seed");
}

static void
test_pass(const fs_queue_keys *k, const fs_queue_keys *other)
{
	char pass[FS_QUEUE_TOKEN_MAX], sub[80], bad[FS_QUEUE_TOKEN_MAX * 2];
	char sub64[65];
	int64_t exp = 0;

	check(fs_queue_pass_mint(k, SALE, "alice", NOW + 120, pass, sizeof(pass)) == 0,
	    "pass: minted");
	check(fs_queue_pass_check(k, pass, strlen(pass), SALE, NOW, sub, sizeof(sub), &exp) ==
		    FS_QUEUE_OK &&
		strcmp(sub, "alice") == 0 && exp == NOW + 120,
	    "pass: round trip gives the subject and the expiry");
	check(pass_check(k, pass, strlen(pass), SALE, NOW + 119, sub, sizeof(sub)) == FS_QUEUE_OK,
	    "pass: valid the second before its expiry");
	check(pass_check(k, pass, strlen(pass), SALE, NOW + 120, sub, sizeof(sub)) ==
		    FS_QUEUE_EXPIRED && sub[0] == '\0',
	    "pass: expired at its expiry, no subject given");
	check(pass_check(k, pass, strlen(pass), SALE + 1, NOW, sub, sizeof(sub)) ==
		FS_QUEUE_OTHER_SALE,
	    "pass: of another sale");
	check(pass_check(other, pass, strlen(pass), SALE, NOW, sub, sizeof(sub)) ==
		FS_QUEUE_BAD_TAG,
	    "pass: made under another key");
	snprintf(bad, sizeof(bad), "%s", pass);
	bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
	check(pass_check(k, bad, strlen(bad), SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_BAD_TAG,
	    "pass: forged tag");
	craft(1, "p1|7|mallory|1700000120", bad, sizeof(bad));
	memcpy(strchr(bad, '.'), strchr(pass, '.'), strlen(strchr(pass, '.')) + 1);
	check(pass_check(k, bad, strlen(bad), SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_BAD_TAG,
	    "pass: another subject under alice's tag");
	check(fs_queue_ticket_check(k, pass, strlen(pass), SALE, sub, sizeof(sub)) ==
		FS_QUEUE_BAD_TAG,
	    "pass: not a ticket");
	check(pass_check(k, pass, 0, SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_MALFORMED &&
		pass_check(k, "abc", 3, SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_MALFORMED &&
		pass_check(k, pass, strlen(pass) - 1, SALE, NOW, sub, sizeof(sub)) ==
		    FS_QUEUE_MALFORMED,
	    "pass: empty, without a dot, truncated");
	memset(bad, 'A', sizeof(bad) - 1);
	bad[sizeof(bad) - 1] = '\0';
	bad[100] = '.';
	check(pass_check(k, bad, strlen(bad), SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_MALFORMED &&
		fs_queue_pass_check(k, NULL, 0, SALE, NOW, sub, sizeof(sub), NULL) ==
		    FS_QUEUE_MALFORMED,
	    "pass: overlong, NULL");
	memset(sub64, 'x', 64);
	sub64[64] = '\0';
	check(fs_queue_pass_mint(k, UINT64_MAX, sub64, INT64_MAX, pass, sizeof(pass)) == 0 &&
		pass_check(k, pass, strlen(pass), UINT64_MAX, NOW, sub, sizeof(sub)) ==
		    FS_QUEUE_OK &&
		strcmp(sub, sub64) == 0,
	    "pass: the longest fits FS_QUEUE_TOKEN_MAX");
	check(pass_check(k, pass, strlen(pass), UINT64_MAX, NOW, sub, 64) == FS_QUEUE_MALFORMED,
	    "pass: a subject longer than the caller's buffer is refused");
	check(fs_queue_pass_mint(k, SALE, "a b", NOW + 1, pass, sizeof(pass)) == -1 &&
		fs_queue_pass_mint(k, SALE, "", NOW + 1, pass, sizeof(pass)) == -1 &&
		fs_queue_pass_mint(k, SALE, "alice", 0, pass, sizeof(pass)) == -1 &&
		fs_queue_pass_mint(k, SALE, "alice", NOW, pass, 20) == -1 && pass[0] == '\0',
	    "pass mint: refuses a bad subject, no expiry, a short buffer");
	memset(bad, 'x', 65);
	bad[65] = '\0';
	check(fs_queue_pass_mint(k, SALE, bad, NOW + 1, pass, sizeof(pass)) == -1,
	    "pass mint: refuses a subject over FS_TOKEN_SUB_MAX");
}

/* Genuine tags over messages that are not the one spelling of a pass. */
static void
test_pass_strict(const fs_queue_keys *k)
{
	static const char *const msgs[] = { "p1|07|alice|1700000120", "p1|7|alice|01700000120",
		"p1|+7|alice|1700000120", "p1|7|alice|+1700000120", "p1| 7|alice|1700000120",
		"p1|7||1700000120", "p1|7|alice", "p1|7|alice|", "p1|7|al ice|1700000120",
		"p2|7|alice|1700000120", "p1|7|alice|1700000120 ", "p1|7|alice|-5",
		"p1|18446744073709551616|alice|1700000120", "t1|7|alice", NULL };
	char tok[FS_QUEUE_TOKEN_MAX], what[128], sub[80];
	int i;

	for (i = 0; msgs[i] != NULL; i++) {
		craft(1, msgs[i], tok, sizeof(tok));
		snprintf(what, sizeof(what), "pass: genuine tag over \"%s\" is malformed", msgs[i]);
		check(pass_check(k, tok, strlen(tok), SALE, NOW, sub, sizeof(sub)) ==
			FS_QUEUE_MALFORMED,
		    what);
	}
	craft(1, "p1|7|a|b|1700000120", tok, sizeof(tok));
	check(pass_check(k, tok, strlen(tok), SALE, NOW, sub, sizeof(sub)) == FS_QUEUE_OK &&
		strcmp(sub, "a|b") == 0,
	    "pass: a subject holding '|' reads back whole");
}

static void
test_ticket(const fs_queue_keys *k, const fs_queue_keys *other)
{
	char t[FS_QUEUE_TOKEN_MAX], sub[80], bad[FS_QUEUE_TOKEN_MAX];
	int64_t exp;

	check(fs_queue_ticket_mint(k, SALE, "bob", t, sizeof(t)) == 0 &&
		fs_queue_ticket_check(k, t, strlen(t), SALE, sub, sizeof(sub)) == FS_QUEUE_OK &&
		strcmp(sub, "bob") == 0,
	    "ticket: round trip");
	check(fs_queue_ticket_check(k, t, strlen(t), SALE + 1, sub, sizeof(sub)) ==
		    FS_QUEUE_OTHER_SALE &&
		sub[0] == '\0',
	    "ticket: of another sale");
	check(fs_queue_ticket_check(other, t, strlen(t), SALE, sub, sizeof(sub)) ==
		FS_QUEUE_BAD_TAG,
	    "ticket: another key");
	check(fs_queue_pass_check(k, t, strlen(t), SALE, NOW, sub, sizeof(sub), &exp) ==
		FS_QUEUE_BAD_TAG,
	    "ticket: not a pass");
	snprintf(bad, sizeof(bad), "%s", t);
	bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
	check(fs_queue_ticket_check(k, bad, strlen(bad), SALE, sub, sizeof(sub)) ==
		FS_QUEUE_BAD_TAG,
	    "ticket: forged tag");
	craft(2, "t1|7|bob|1", bad, sizeof(bad));
	check(fs_queue_ticket_check(k, bad, strlen(bad), SALE, sub, sizeof(sub)) == FS_QUEUE_OK &&
		strcmp(sub, "bob|1") == 0,
	    "ticket: everything after the sale is the subject");
	craft(2, "t1|007|bob", bad, sizeof(bad));
	check(fs_queue_ticket_check(k, bad, strlen(bad), SALE, sub, sizeof(sub)) ==
		    FS_QUEUE_MALFORMED &&
		fs_queue_ticket_check(k, "x.y", 3, SALE, sub, sizeof(sub)) == FS_QUEUE_MALFORMED,
	    "ticket: leading zeros, garbage");
}

/* The first nonce (a decimal counter) that passes at bits, or -1. */
static long
solve(unsigned bits, const char *sub, char nonce[24])
{
	long i;

	for (i = 0; i < 1L << 22; i++) {
		snprintf(nonce, 24, "%ld", i);
		if (fs_queue_pow_check(SALE, sub, nonce, strlen(nonce), bits) == FS_QUEUE_OK)
			return i;
	}
	return -1;
}

/* Leading zero bits of SHA-256("fsq1|7|<sub>|<nonce>"), counted here independently. */
static unsigned
zero_bits(const char *sub, const char *nonce)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char msg[160];
	unsigned n = 0;

	snprintf(msg, sizeof(msg), "fsq1|%d|%s|%s", SALE, sub, nonce);
	crypto_hash_sha256(h, (const unsigned char *)msg, strlen(msg));
	while (n < 256 && !(h[n / 8] & (0x80u >> (n % 8))))
		n++;
	return n;
}

static void
test_pow(void)
{
	char nonce[24], n33[34];
	unsigned bits[] = { 8, 12 };
	size_t i;

	check(fs_queue_pow_check(SALE, "alice", NULL, 0, 0) == FS_QUEUE_OK,
	    "pow: 0 bits needs nothing");
	for (i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		char what[96];
		unsigned z;

		check(solve(bits[i], "alice", nonce) >= 0 && zero_bits("alice", nonce) >= bits[i],
		    "pow: a found nonce has the zero bits");
		z = zero_bits("alice", nonce);
		snprintf(what, sizeof(what), "pow: the nonce at %u bits is too weak for %u", bits[i],
		    z + 1);
		check(fs_queue_pow_check(SALE, "alice", nonce, strlen(nonce), z + 1) ==
			FS_QUEUE_WEAK,
		    what);
		check(z + 1 > FS_QUEUE_POW_BITS_MAX ||
			fs_queue_pow_check(SALE, "bob", nonce, strlen(nonce), bits[i]) ==
			    (zero_bits("bob", nonce) >= bits[i] ? FS_QUEUE_OK : FS_QUEUE_WEAK),
		    "pow: bound to the account");
	}
	memset(n33, 'a', 33);
	n33[33] = '\0';
	check(fs_queue_pow_check(SALE, "alice", "", 0, 8) == FS_QUEUE_MALFORMED &&
		fs_queue_pow_check(SALE, "alice", n33, 33, 8) == FS_QUEUE_MALFORMED &&
		fs_queue_pow_check(SALE, "alice", "a.b", 3, 8) == FS_QUEUE_MALFORMED &&
		fs_queue_pow_check(SALE, "alice", "a\x80", 2, 8) == FS_QUEUE_MALFORMED &&
		fs_queue_pow_check(SALE, "alice", "a", 1, FS_QUEUE_POW_BITS_MAX + 1) ==
		    FS_QUEUE_MALFORMED,
	    "pow: empty, 33 characters, outside the alphabet, too many bits");
	check(fs_queue_pow_check(SALE, "alice", n33, 32, 0) == FS_QUEUE_OK &&
		fs_queue_pow_check(SALE, "alice", n33, 32, 1) != FS_QUEUE_MALFORMED,
	    "pow: 32 characters are a nonce");
}

/* Parses text as the "queue" member; 0 or -1, err set. */
static int
parse(const char *text, struct fs_queue_settings *s, char *err, size_t errlen)
{
	json_object *o = fs_jsonread_object(text, strlen(text), 4, err, errlen);
	int rc;

	if (o == NULL)
		abort();
	rc = fs_queue_settings_parse(o, s, err, errlen);
	json_object_put(o);
	return rc;
}

static void
test_settings(void)
{
	static const struct {
		const char *text, *err;
	} bad[] = {
		{ "{\"preQueueSeconds\":59}", "\"preQueueSeconds\" must be an integer from 60 to 86400" },
		{ "{\"preQueueSeconds\":86401}", "\"preQueueSeconds\" must be an integer from 60 to 86400" },
		{ "{\"passSeconds\":\"120\"}", "\"passSeconds\" must be an integer from 30 to 1800" },
		{ "{\"passSeconds\":120.0}", "\"passSeconds\" must be an integer from 30 to 1800" },
		{ "{\"powBits\":29}", "\"powBits\" must be an integer from 0 to 28" },
		{ "{\"powBits\":-1}", "\"powBits\" must be an integer from 0 to 28" },
		{ "{\"admitMultiple\":0.99}", "\"admitMultiple\" must be a number from 1 to 10" },
		{ "{\"admitMultiple\":10.5}", "\"admitMultiple\" must be a number from 1 to 10" },
		{ "{\"admitMultiple\":NaN}", "\"admitMultiple\" must be a number from 1 to 10" },
		{ "{\"admitMultiple\":true}", "\"admitMultiple\" must be a number from 1 to 10" },
		{ "{\"capacityPerSecond\":0}", "\"capacityPerSecond\" must be an integer from 1 to 100000" },
		{ "{\"capacityPerSecond\":99999999999999999999}", "\"capacityPerSecond\" must be an integer from 1 to 100000" },
		{ "{\"powbits\":4}", "unknown member \"powbits\"" },
		{ "{\"claimSeconds\":4}", "\"claimSeconds\" must be an integer from 5 to 120" },
		{ "{\"claimSeconds\":121}", "\"claimSeconds\" must be an integer from 5 to 120" },
	};
	struct fs_queue_settings s, d;
	char err[160], json[FS_QUEUE_SETTINGS_JSON_MAX];
	json_object *array = json_object_new_array();
	size_t i;

	fs_queue_settings_default(&d);
	check(d.pre_s == 900 && d.pass_s == 120 && d.pow_bits == 14 && d.mult_milli == 1500 &&
		d.cap_per_s == 2000 && d.claim_s == 15,
	    "settings: the defaults of docs/QUEUE.md");
	check(parse("{}", &s, err, sizeof(err)) == 0 && memcmp(&s, &d, sizeof(s)) == 0,
	    "settings: {} is every default");
	check(parse("{\"preQueueSeconds\":60,\"passSeconds\":1800,\"powBits\":0,"
		    "\"admitMultiple\":2,\"capacityPerSecond\":100000}",
		  &s, err, sizeof(err)) == 0 &&
		s.pre_s == 60 && s.pass_s == 1800 && s.pow_bits == 0 && s.mult_milli == 2000 &&
		s.cap_per_s == 100000,
	    "settings: every member at a bound, admitMultiple an integer");
	check(parse("{\"admitMultiple\":1.0016}", &s, err, sizeof(err)) == 0 &&
		s.mult_milli == 1002 && s.pow_bits == 14,
	    "settings: admitMultiple kept in thousandths, the rest defaults");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[200];

		s = d;
		s.pow_bits = 3;
		snprintf(what, sizeof(what), "settings: %s refused with its reason", bad[i].text);
		if (parse(bad[i].text, &s, err, sizeof(err)) != -1 || strcmp(err, bad[i].err) != 0)
			printf("# got \"%s\"\n", err);
		check(parse(bad[i].text, &s, err, sizeof(err)) == -1 &&
			strcmp(err, bad[i].err) == 0 && s.pow_bits == 3,
		    what);
	}
	check(fs_queue_settings_parse(array, &s, err, sizeof(err)) == -1 &&
		strcmp(err, "not a JSON object") == 0,
	    "settings: not an object");
	json_object_put(array);
	s = d;
	check(fs_queue_settings_json(&s, json, sizeof(json)) > 0 &&
		strcmp(json, "{\"preQueueSeconds\":900,\"passSeconds\":120,\"powBits\":14,"
			     "\"admitMultiple\":1.5,\"capacityPerSecond\":2000,"
			     "\"claimSeconds\":15}") == 0,
	    "settings json: canonical, every member");
	s.mult_milli = 1000;
	check(fs_queue_settings_json(&s, json, sizeof(json)) > 0 &&
		strstr(json, "\"admitMultiple\":1,") != NULL,
	    "settings json: 1, not 1.0");
	s.mult_milli = 10000;
	check(fs_queue_settings_json(&s, json, sizeof(json)) > 0 &&
		strstr(json, "\"admitMultiple\":10,") != NULL,
	    "settings json: 10");
	s.mult_milli = 2250;
	check(fs_queue_settings_json(&s, json, sizeof(json)) > 0 &&
		parse(json, &d, err, sizeof(err)) == 0 && memcmp(&s, &d, sizeof(s)) == 0,
	    "settings json: parses back to the same settings");
	check(fs_queue_settings_json(&s, json, 20) == -1 && json[0] == '\0',
	    "settings json: a short buffer");
}

int
main(void)
{
	fs_queue_keys *k = fs_queue_keys_new(), *other = fs_queue_keys_new();
	unsigned char raw2[FS_QUEUE_KEYBYTES];
	char err[160];

	if (k == NULL || other == NULL)
		return 1;
	fs_queue_keys_set(k, raw_key);
	memcpy(raw2, raw_key, sizeof(raw2));
	raw2[0] ^= 1;
	fs_queue_keys_set(other, raw2);
	check(fs_queue_keys_load_dir(other, "/nonexistent", err, sizeof(err)) == -1 &&
		strstr(err, "queue.key") != NULL,
	    "keys: a missing queue.key is an error naming it");
	fs_queue_keys_set(other, raw2);
	test_draw();
	test_pass(k, other);
	test_pass_strict(k);
	test_ticket(k, other);
	test_pow();
	test_settings();
	fs_queue_keys_free(k);
	fs_queue_keys_free(other);
	fs_queue_keys_free(NULL);
	return failures == 0 ? 0 : 1;
}
