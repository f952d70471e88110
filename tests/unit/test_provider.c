/*
 * Unit test of lib/provider: the webhook signature (a known HMAC-SHA256
 * vector, tolerance, tampering, malformed headers) and the event document.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "expect.h"
#include "provider.h"

static const char secret[] = "whsec_test_0123456789abcdef";
static const char body[] =
    "{\"id\":\"evt_1\",\"type\":\"payment.succeeded\",\"created\":1700000000,\"data\":"
    "{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":"
    "\"01900000-0000-7000-8000-000000000001\",\"amountMinor\":4990000,\"currency\":\"VND\"}}";

static enum fs_provider_verdict
verify(const char *header, const char *b, long long now)
{
	return fs_provider_verify(secret, strlen(secret), header, b, strlen(b), now);
}

int
main(void)
{
	char sig[FS_PROVIDER_SIG_MAX], bad[FS_PROVIDER_SIG_MAX * 2], doc[1024];
	struct fs_provider_event ev, again;
	char why[128];
	int n;

	if (sodium_init() < 0)
		return 1;
	/* RFC 4231 test case 2: key "Jefe", "what do ya want for nothing?". */
	n = fs_provider_sign("Jefe", 4, 0, "what do ya want for nothing?", 28, sig, sizeof(sig));
	(void)n;
	{
		/* Our message is "t.body", so sign "0." + body and compare with the vector of it. */
		unsigned char mac[32];
		char hex[65], want[100];
		crypto_auth_hmacsha256_state st;

		crypto_auth_hmacsha256_init(&st, (const unsigned char *)"Jefe", 4);
		crypto_auth_hmacsha256_update(&st, (const unsigned char *)"what do ya want for nothing?", 28);
		crypto_auth_hmacsha256_final(&st, mac);
		sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
		check(strcmp(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843") == 0,
		    "libsodium's HMAC-SHA256 matches RFC 4231 test case 2");
		crypto_auth_hmacsha256_init(&st, (const unsigned char *)"Jefe", 4);
		crypto_auth_hmacsha256_update(&st, (const unsigned char *)"0.", 2);
		crypto_auth_hmacsha256_update(&st, (const unsigned char *)"what do ya want for nothing?", 28);
		crypto_auth_hmacsha256_final(&st, mac);
		sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
		snprintf(want, sizeof(want), "t=0,v1=%s", hex);
		check(strcmp(sig, want) == 0, "the header is t=<t>,v1=<hex HMAC of \"t.body\">");
	}

	n = fs_provider_sign(secret, strlen(secret), 1700000000, body, strlen(body), sig, sizeof(sig));
	check(n > 0 && strncmp(sig, "t=1700000000,v1=", 16) == 0 && strlen(sig) == 16 + 64,
	    "sign writes t and 64 hex digits");
	check(fs_provider_sign(secret, strlen(secret), 1, body, strlen(body), doc, 20) == -1,
	    "sign refuses a buffer too small");
	check(verify(sig, body, 1700000000) == FS_PROVIDER_SIG_OK, "a fresh signature verifies");
	check(verify(sig, body, 1700000000 + 300) == FS_PROVIDER_SIG_OK, "300 s later still verifies");
	check(verify(sig, body, 1700000000 + 301) == FS_PROVIDER_SIG_STALE, "301 s later is stale");
	check(verify(sig, body, 1700000000 - 301) == FS_PROVIDER_SIG_STALE, "301 s early is stale");
	check(verify(NULL, body, 1700000000) == FS_PROVIDER_SIG_MISSING, "no header is missing");
	check(verify("", body, 1700000000) == FS_PROVIDER_SIG_MISSING, "an empty header is missing");
	{
		char tampered[sizeof(body)];

		memcpy(tampered, body, sizeof(body));
		tampered[strlen(tampered) - 5] = 'U';
		check(verify(sig, tampered, 1700000000) == FS_PROVIDER_SIG_BAD, "a changed body fails");
	}
	snprintf(bad, sizeof(bad), "%s", sig);
	bad[20] = bad[20] == 'a' ? 'b' : 'a';
	check(verify(bad, body, 1700000000) == FS_PROVIDER_SIG_BAD, "a changed MAC fails");
	check(fs_provider_verify("other_secret_0123456", 20, sig, body, strlen(body), 1700000000) ==
		  FS_PROVIDER_SIG_BAD, "another secret fails");
	snprintf(bad, sizeof(bad), "t=1700000001,%s", strchr(sig, ',') + 1);
	check(verify(bad, body, 1700000000) == FS_PROVIDER_SIG_BAD, "another t with the same MAC fails");
	snprintf(bad, sizeof(bad), "t=1700000000,v1=%064d,%s", 0, strchr(sig, ',') + 1);
	check(verify(bad, body, 1700000000) == FS_PROVIDER_SIG_OK,
	    "one matching v1 among several verifies (secret rotation)");
	snprintf(bad, sizeof(bad), "%s,v0=whatever", sig);
	check(verify(bad, body, 1700000000) == FS_PROVIDER_SIG_OK, "unknown schemes are ignored");
	{
		static const char *const malformed[] = {
			"v1=00", "t=1700000000", "t=abc,v1=00", "t=1700000000,v1=XYZ",
			"t=1700000000,t=1700000000,v1=" "0000000000000000000000000000000000000000000000000000000000000000",
			"t=-5,v1=0000000000000000000000000000000000000000000000000000000000000000",
			"t=1700000000,,v1=0000000000000000000000000000000000000000000000000000000000000000",
			"t=1700000000,v1=0000000000000000000000000000000000000000000000000000000000000000FF",
		};
		for (size_t i = 0; i < sizeof(malformed) / sizeof(*malformed); i++)
			check(verify(malformed[i], body, 1700000000) == FS_PROVIDER_SIG_MALFORMED,
			    malformed[i]);
		memset(bad, 'a', sizeof(bad) - 1);
		bad[sizeof(bad) - 1] = '\0';
		check(verify(bad, body, 1700000000) == FS_PROVIDER_SIG_MALFORMED, "an overlong header");
	}

	check(fs_provider_parse_event(body, strlen(body), &ev, why, sizeof(why)) == 0 &&
		  ev.type == FS_PROVIDER_PAYMENT_SUCCEEDED && strcmp(ev.payment, "pi_1") == 0 &&
		  ev.amount_minor == 4990000 && strcmp(ev.currency, "VND") == 0 &&
		  strcmp(ev.order, "01900000-0000-7000-8000-000000000001") == 0,
	    "an event parses");
	n = fs_provider_event_json(&ev, doc, sizeof(doc));
	check(n == (int)strlen(body) && strcmp(doc, body) == 0, "the event writes back as it came");
	check(fs_provider_parse_event(doc, (size_t)n, &again, why, sizeof(why)) == 0 &&
		  memcmp(&ev, &again, sizeof(ev)) == 0, "and parses back the same");
	{
		static const char *const events[] = {
			"", "{}", "[]", "not json",
			"{\"id\":\"evt_1\",\"type\":\"payment.refunded\",\"created\":1,\"data\":{}}",
			"{\"id\":\"evt 1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"amountMinor\":1,\"currency\":\"VND\"}}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":\"not-a-uuid\",\"amountMinor\":1,\"currency\":\"VND\"}}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"amountMinor\":-1,\"currency\":\"VND\"}}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"amountMinor\":1,\"currency\":\"vnd\"}}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"paymentId\":\"pi_1\",\"sessionId\":\"cs_1\",\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"amountMinor\":\"1\",\"currency\":\"VND\"}}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":[1]}",
			"{\"id\":\"evt_1\",\"type\":\"payment.failed\",\"created\":1,\"data\":{\"a\":{\"b\":{\"c\":{}}}}}",
		};
		for (size_t i = 0; i < sizeof(events) / sizeof(*events); i++)
			check(fs_provider_parse_event(events[i], strlen(events[i]), &ev, why, sizeof(why)) == -1 &&
				  why[0] != '\0', events[i][0] ? events[i] : "(empty) is not an event");
	}
	check(fs_provider_id_ok("pi_12_ab") && !fs_provider_id_ok("") && !fs_provider_id_ok("a-b") &&
		  !fs_provider_id_ok("0123456789012345678901234567890123456789012345678901234567890123x"),
	    "ids are 1-64 of [A-Za-z0-9_]");
	{
		char err[128];
		fs_provider *p = fs_provider_new("http://127.0.0.1:1", "key_0123456789abcdef", err, sizeof(err));
		char refund[FS_PROVIDER_ID_MAX + 1];

		check(p != NULL, "a provider client for http://127.0.0.1:1");
		check(p != NULL && fs_provider_refund(p, "pi_1", 1, "VND", refund) == -1 && p->err,
		    "a refund with nothing listening fails with an error, no crash");
		fs_provider_free(p);
		/* https is only a matter of the URL's scheme now (issue 34: lib/httpc speaks TLS). */
		p = fs_provider_new("https://pay.example.com/", "key_0123456789abcdef", err, sizeof(err));
		check(p != NULL && strcmp(p->base, "https://pay.example.com") == 0,
		    "https://HOST is taken, its trailing slash dropped");
		fs_provider_free(p);
		check(fs_provider_new("https://pay.example.com/v1", "key_0123456789abcdef", err, sizeof(err)) ==
			    NULL &&
			strcmp(err, "provider URL must be https://HOST[:PORT]") == 0,
		    "an https URL with a path is refused");
		check(fs_provider_new("https://user@pay.example.com", "key_0123456789abcdef", err,
			  sizeof(err)) == NULL,
		    "an https URL with user info is refused");
		check(fs_provider_new("http://localhost:1", "key_0123456789abcdef", err, sizeof(err)) == NULL,
		    "a host name is refused");
		check(fs_provider_new("http://127.0.0.1:1", "short", err, sizeof(err)) == NULL,
		    "a short API key is refused");
	}
	return failures == 0 ? 0 : 1;
}
