/*
 * Unit test of lib/token: the RFC 8037 and RFC 7515 examples, then tokens
 * crafted here with libsodium (EdDSA, HS256) and libcrypto (RS256, PS256,
 * ES256) directly, so that the test does not trust the code it tests to
 * build them.
 */
#include "config.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <sodium.h>

#include "b64url.h"
#include "token.h"
#include "expect.h"

#define NOW	1700000000

/* RFC 8037 A.1 and A.4. */
#define RFC8037_D	"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"
#define RFC8037_X	"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
#define RFC8037_JWS	"eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc." \
	"hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"

/* RFC 7515 A.1. */
#define RFC7515_K	"AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-" \
	"1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"
#define RFC7515_JWS	"eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9." \
	"eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ." \
	"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
#define RFC7515_PAYLOAD	"{\"iss\":\"joe\",\r\n \"exp\":1300819380,\r\n " \
	"\"http://example.com/is_root\":true}"

enum sign_with { SIGN_NOTHING, SIGN_ED25519, SIGN_HS256 };

static unsigned char ed_pk[crypto_sign_PUBLICKEYBYTES];
static unsigned char ed_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char hs_key[32];

/* Appends the base64url of len bytes at p to the token being built. */
static void
append_b64(char *tok, size_t max, const void *p, size_t len)
{
	size_t used = strlen(tok);

	if (fs_b64url_encode(tok + used, max - used, p, len, NULL) !=
	    FS_B64URL_OK)
		abort();
}

/*
 * Builds header.claims.signature from JSON text; hs is the HMAC key for
 * SIGN_HS256 (hslen bytes). Returns a static buffer.
 */
static const char *
craft_with(const char *hdr, const char *claims, enum sign_with how,
    const unsigned char *hs, size_t hslen)
{
	static char tok[3 * FS_TOKEN_MAX];
	unsigned char sig[crypto_sign_BYTES];
	crypto_auth_hmacsha256_state st;
	size_t len;

	tok[0] = '\0';
	append_b64(tok, sizeof(tok), hdr, strlen(hdr));
	strcat(tok, ".");
	append_b64(tok, sizeof(tok), claims, strlen(claims));
	len = strlen(tok);
	strcat(tok, ".");
	switch (how) {
	case SIGN_ED25519:
		crypto_sign_detached(sig, NULL, (unsigned char *)tok, len, ed_sk);
		append_b64(tok, sizeof(tok), sig, crypto_sign_BYTES);
		break;
	case SIGN_HS256:
		crypto_auth_hmacsha256_init(&st, hs, hslen);
		crypto_auth_hmacsha256_update(&st, (unsigned char *)tok, len);
		crypto_auth_hmacsha256_final(&st, sig);
		append_b64(tok, sizeof(tok), sig, crypto_auth_hmacsha256_BYTES);
		break;
	case SIGN_NOTHING:
		break;
	}
	return tok;
}

static const char *
craft(const char *hdr, const char *claims, enum sign_with how)
{
	return craft_with(hdr, claims, how, hs_key, sizeof(hs_key));
}

#define HDR_ED	"{\"alg\":\"EdDSA\",\"typ\":\"JWT\"}"
#define HDR_HS	"{\"alg\":\"HS256\",\"typ\":\"JWT\"}"

/* An EdDSA token with the given claims. */
static const char *
ed(const char *claims)
{
	return craft(HDR_ED, claims, SIGN_ED25519);
}

/* Verifies from an unterminated heap copy, so ASan sees any overread. */
static enum fs_token_status
verify(const fs_token_keys *keys, const char *tok, size_t len, time_t now,
    char *sub, size_t submax)
{
	char *copy = malloc(len > 0 ? len : 1);
	enum fs_token_status st;

	if (copy == NULL)
		abort();
	memcpy(copy, tok, len);
	st = fs_token_verify(keys, copy, len, now, sub, submax);
	free(copy);
	return st;
}

static void
expect_sub(const fs_token_keys *keys, const char *tok, time_t now,
    enum fs_token_status want, const char *wantsub, const char *what)
{
	char sub[FS_TOKEN_SUB_MAX + 1];
	enum fs_token_status got;

	got = verify(keys, tok, strlen(tok), now, sub, sizeof(sub));
	if (got != want)
		printf("# got \"%s\", want \"%s\"\n", fs_token_strerror(got),
		    fs_token_strerror(want));
	check(got == want && (wantsub == NULL || strcmp(sub, wantsub) == 0) &&
	    (got == FS_TOKEN_OK || sub[0] == '\0'), what);
}

static void
expect(const fs_token_keys *keys, const char *tok, enum fs_token_status want,
    const char *what)
{
	expect_sub(keys, tok, NOW, want, NULL, what);
}

static void
expect_bearer(const fs_token_keys *keys, const char *value,
    enum fs_token_status want, const char *what)
{
	char sub[FS_TOKEN_SUB_MAX + 1];
	char *copy = malloc(strlen(value) + 1);

	if (copy == NULL)
		abort();
	memcpy(copy, value, strlen(value));
	check(fs_token_verify_bearer(keys, copy, strlen(value), NOW, sub,
	    sizeof(sub)) == want, what);
	free(copy);
}

/* Puts other claims under the header and signature of tok. */
static const char *
swap_claims(const char *tok, const char *claims)
{
	static char out[3 * FS_TOKEN_MAX];
	const char *dot1 = strchr(tok, '.'), *dot2 = strrchr(tok, '.');

	snprintf(out, sizeof(out), "%.*s", (int)(dot1 - tok + 1), tok);
	append_b64(out, sizeof(out), claims, strlen(claims));
	strcat(out, dot2);
	return out;
}

/* Changes the character n places from the end of tok. */
static const char *
flip(const char *tok, size_t n)
{
	static char out[3 * FS_TOKEN_MAX];
	size_t len = strlen(tok);

	snprintf(out, sizeof(out), "%s", tok);
	out[len - n] = out[len - n] == 'A' ? 'B' : 'A';
	return out;
}

static int
write_file(const char *dir, const char *name, const void *buf, size_t len)
{
	char path[512];
	int fd, ok;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ok = fd != -1 && write(fd, buf, len) == (ssize_t)len;
	if (fd != -1)
		close(fd);
	return ok ? 0 : -1;
}

static void
remove_file(const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static void
test_rfc8037(void)
{
	unsigned char seed[crypto_sign_SEEDBYTES], x[crypto_sign_PUBLICKEYBYTES];
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	unsigned char sig[crypto_sign_BYTES], payload[FS_TOKEN_MAX];
	char jws[] = RFC8037_JWS, sub[FS_TOKEN_SUB_MAX + 1];
	const char *input_end = strrchr(jws, '.');
	fs_token_keys *keys = fs_token_keys_new();
	size_t len, plen;

	check(fs_b64url_decode(seed, sizeof(seed), RFC8037_D,
	    strlen(RFC8037_D), &len) == FS_B64URL_OK && len == sizeof(seed) &&
	    fs_b64url_decode(x, sizeof(x), RFC8037_X, strlen(RFC8037_X),
	    &len) == FS_B64URL_OK && len == sizeof(x),
	    "RFC 8037 A.1: decode d and x");
	crypto_sign_seed_keypair(pk, sk, seed);
	check(memcmp(pk, x, sizeof(pk)) == 0,
	    "RFC 8037 A.1/A.3: d gives the public key x");
	crypto_sign_detached(sig, NULL, (unsigned char *)jws,
	    (size_t)(input_end - jws), sk);
	check(fs_b64url_decode(payload, sizeof(payload), input_end + 1,
	    strlen(input_end + 1), &len) == FS_B64URL_OK &&
	    len == sizeof(sig) && memcmp(sig, payload, len) == 0,
	    "RFC 8037 A.4: signing gives the published signature");

	check(keys != NULL && fs_token_keys_set(keys, x, NULL, NULL, 0) == 0,
	    "keys with the RFC 8037 public key only");
	check(fs_token_jws_verify(keys, jws, strlen(jws), payload,
	    sizeof(payload), &plen) == FS_TOKEN_OK &&
	    plen == strlen("Example of Ed25519 signing") &&
	    memcmp(payload, "Example of Ed25519 signing", plen) == 0,
	    "RFC 8037 A.5: the EdDSA signature verifies, payload decoded");
	check(fs_token_jws_verify(keys, jws, strlen(jws), payload, 10,
	    &plen) == FS_TOKEN_TOO_LONG, "payload buffer too small");
	check(fs_token_verify(keys, jws, strlen(jws), NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_MALFORMED, "the RFC 8037 payload is not a claims set");
	jws[strlen(jws) - 5] ^= 1;
	check(fs_token_jws_verify(keys, jws, strlen(jws), payload,
	    sizeof(payload), &plen) == FS_TOKEN_BAD_SIGNATURE,
	    "RFC 8037 A.4 with one signature bit flipped");
	check(fs_token_keys_set(keys, x, sk, NULL, 0) == 0,
	    "the RFC 8037 secret key matches its public key");
	fs_token_keys_free(keys);
}

static void
test_rfc7515(void)
{
	unsigned char k[FS_TOKEN_HS256_KEY_MAX], payload[FS_TOKEN_MAX];
	fs_token_keys *keys = fs_token_keys_new();
	const char *jws = RFC7515_JWS;
	size_t len, plen;

	check(fs_b64url_decode(k, sizeof(k), RFC7515_K, strlen(RFC7515_K),
	    &len) == FS_B64URL_OK && len == 64,
	    "RFC 7515 A.1: decode the 64-byte HMAC key");
	check(keys != NULL && fs_token_keys_set(keys, NULL, NULL, k, len) == 0,
	    "keys with the RFC 7515 HMAC key only");
	check(fs_token_jws_verify(keys, jws, strlen(jws), payload,
	    sizeof(payload), &plen) == FS_TOKEN_OK &&
	    plen == strlen(RFC7515_PAYLOAD) &&
	    memcmp(payload, RFC7515_PAYLOAD, plen) == 0,
	    "RFC 7515 A.1: the HS256 signature verifies, payload decoded");
	/* Its claims have iss and exp, but no sub. */
	expect_sub(keys, jws, 1300819000, FS_TOKEN_BAD_SUBJECT, NULL,
	    "RFC 7515 A.1 before exp: signature and times pass, sub missing");
	expect_sub(keys, jws, 1300819380 + FS_TOKEN_LEEWAY - 1,
	    FS_TOKEN_BAD_SUBJECT, NULL, "RFC 7515 A.1 within the leeway");
	expect_sub(keys, jws, 1300819380 + FS_TOKEN_LEEWAY, FS_TOKEN_EXPIRED,
	    NULL, "RFC 7515 A.1 after exp and the leeway is EXPIRED");
	check(fs_token_keys_set_claims(keys, "joe", NULL) == 0, "issuer joe");
	expect_sub(keys, jws, 1300819000, FS_TOKEN_BAD_SUBJECT, NULL,
	    "RFC 7515 A.1: iss joe passes");
	check(fs_token_keys_set_claims(keys, "bob", NULL) == 0, "issuer bob");
	expect_sub(keys, jws, 1300819000, FS_TOKEN_BAD_ISSUER, NULL,
	    "RFC 7515 A.1: iss joe is not bob");
	check(fs_token_keys_set_claims(keys, NULL, "shop") == 0, "audience");
	expect_sub(keys, jws, 1300819000, FS_TOKEN_BAD_AUDIENCE, NULL,
	    "RFC 7515 A.1: no aud, but one is required");
	fs_token_keys_free(keys);
}

static void
test_algorithms(const fs_token_keys *all, const fs_token_keys *ed_only,
    const fs_token_keys *hs_only)
{
	char claims[256], tok[FS_TOKEN_MAX + 1];

	snprintf(claims, sizeof(claims), "{\"sub\":\"u1\",\"exp\":%d}",
	    NOW + 60);
	expect_sub(all, ed(claims), NOW, FS_TOKEN_OK, "u1", "EdDSA verifies");
	expect_sub(all, craft(HDR_HS, claims, SIGN_HS256), NOW, FS_TOKEN_OK,
	    "u1", "HS256 verifies");
	expect(all, craft("{\"alg\":\"none\"}", claims, SIGN_NOTHING),
	    FS_TOKEN_BAD_ALG, "alg none is refused");
	expect(all, craft("{\"alg\":\"none\"}", claims, SIGN_HS256),
	    FS_TOKEN_BAD_ALG, "alg none with a signature is refused");
	expect(all, craft("{\"alg\":\"HS512\"}", claims, SIGN_HS256),
	    FS_TOKEN_BAD_ALG, "alg HS512 is refused");
	expect(all, craft("{\"alg\":\"RS256\"}", claims, SIGN_HS256),
	    FS_TOKEN_BAD_ALG, "alg RS256 is refused");
	expect(all, craft("{\"alg\":\"eddsa\"}", claims, SIGN_ED25519),
	    FS_TOKEN_BAD_ALG, "alg names are case-sensitive");
	expect(all, craft("{\"alg\":\"HS256\\u0000\"}", claims, SIGN_HS256),
	    FS_TOKEN_BAD_ALG, "alg with an embedded NUL is refused");
	expect(all, craft("{\"alg\":256}", claims, SIGN_HS256),
	    FS_TOKEN_BAD_ALG, "alg that is not a string is refused");
	expect(all, craft("{\"typ\":\"JWT\"}", claims, SIGN_HS256),
	    FS_TOKEN_MALFORMED, "header without alg");
	expect(all, craft("{\"alg\":\"HS256\",\"crit\":[\"exp\"]}", claims,
	    SIGN_HS256), FS_TOKEN_MALFORMED, "header with crit");
	expect(ed_only, craft(HDR_HS, claims, SIGN_HS256), FS_TOKEN_BAD_ALG,
	    "HS256 refused when only Ed25519 is configured");
	expect(hs_only, ed(claims), FS_TOKEN_BAD_ALG,
	    "EdDSA refused when only HS256 is configured");
	expect(ed_only, craft_with(HDR_HS, claims, SIGN_HS256, ed_pk,
	    sizeof(ed_pk)), FS_TOKEN_BAD_ALG,
	    "HS256 keyed with the Ed25519 public key, only Ed25519 set");
	expect(all, craft_with(HDR_HS, claims, SIGN_HS256, ed_pk,
	    sizeof(ed_pk)), FS_TOKEN_BAD_SIGNATURE,
	    "HS256 keyed with the Ed25519 public key, both keys set");
	expect(all, craft(HDR_ED, claims, SIGN_HS256), FS_TOKEN_BAD_SIGNATURE,
	    "EdDSA header over an HMAC");
	expect(all, craft(HDR_ED, claims, SIGN_NOTHING), FS_TOKEN_BAD_SIGNATURE,
	    "EdDSA with an empty signature");

	snprintf(tok, sizeof(tok), "%s", ed(claims));
	expect(all, swap_claims(tok, "{\"sub\":\"u2\",\"exp\":1800000000}"),
	    FS_TOKEN_BAD_SIGNATURE, "EdDSA with tampered claims");
	expect(all, flip(tok, 10), FS_TOKEN_BAD_SIGNATURE,
	    "EdDSA with a tampered signature");
	snprintf(tok, sizeof(tok), "%s", craft(HDR_HS, claims, SIGN_HS256));
	expect(all, swap_claims(tok, "{\"sub\":\"u2\",\"exp\":1800000000}"),
	    FS_TOKEN_BAD_SIGNATURE, "HS256 with tampered claims");
	expect(all, flip(tok, 10), FS_TOKEN_BAD_SIGNATURE,
	    "HS256 with a tampered signature");
	/* 40 characters: canonical base64url of 30 bytes, whatever the MAC. */
	tok[strlen(tok) - 3] = '\0';
	expect(all, tok, FS_TOKEN_BAD_SIGNATURE, "HS256 with a short signature");
	snprintf(tok, sizeof(tok), "%sAAAA", craft(HDR_HS, claims, SIGN_HS256));
	expect(all, tok, FS_TOKEN_BAD_SIGNATURE, "HS256 with a long signature");
	snprintf(tok, sizeof(tok), "%sAAAA", ed(claims));
	expect(all, tok, FS_TOKEN_BAD_SIGNATURE, "EdDSA with a long signature");
	snprintf(tok, sizeof(tok), "%s", ed(claims));
	tok[strlen(tok) - 1] = '\0';
	expect(all, tok, FS_TOKEN_MALFORMED, "EdDSA signature of 4n+1 chars");
}

static void
test_times(const fs_token_keys *all)
{
	char claims[256];

	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d}",
	    NOW - FS_TOKEN_LEEWAY - 1);
	expect(all, ed(claims), FS_TOKEN_EXPIRED, "expired beyond the leeway");
	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d}",
	    NOW - FS_TOKEN_LEEWAY);
	expect(all, ed(claims), FS_TOKEN_EXPIRED, "expired at the leeway");
	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d}",
	    NOW - FS_TOKEN_LEEWAY + 1);
	expect(all, ed(claims), FS_TOKEN_OK, "exp passed, but within the leeway");
	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d.5}",
	    NOW + 60);
	expect(all, ed(claims), FS_TOKEN_OK, "fractional exp");
	expect(all, ed("{\"sub\":\"u\",\"exp\":1e300}"), FS_TOKEN_OK,
	    "huge floating exp");
	expect(all, ed("{\"sub\":\"u\",\"exp\":18446744073709551615}"),
	    FS_TOKEN_OK, "exp beyond int64");
	expect(all, ed("{\"sub\":\"u\",\"exp\":-1}"), FS_TOKEN_EXPIRED,
	    "negative exp");
	expect(all, ed("{\"sub\":\"u\"}"), FS_TOKEN_MALFORMED, "missing exp");
	expect(all, ed("{\"sub\":\"u\",\"exp\":\"1800000000\"}"),
	    FS_TOKEN_MALFORMED, "exp as a string");
	expect(all, ed("{\"sub\":\"u\",\"exp\":null}"), FS_TOKEN_MALFORMED,
	    "exp null");

	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"nbf\":%d}", NOW + 600,
	    NOW + FS_TOKEN_LEEWAY + 1);
	expect(all, ed(claims), FS_TOKEN_NOT_YET_VALID, "nbf in the future");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"nbf\":%d}", NOW + 600,
	    NOW + FS_TOKEN_LEEWAY);
	expect(all, ed(claims), FS_TOKEN_OK, "nbf within the leeway");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"nbf\":\"soon\"}", NOW + 600);
	expect(all, ed(claims), FS_TOKEN_MALFORMED, "nbf as a string");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"iat\":%d}", NOW + 600,
	    NOW + FS_TOKEN_LEEWAY + 1);
	expect(all, ed(claims), FS_TOKEN_NOT_YET_VALID, "iat in the future");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"iat\":%d}", NOW + 600, NOW - 5);
	expect(all, ed(claims), FS_TOKEN_OK, "iat in the past");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"iat\":true}", NOW + 600);
	expect(all, ed(claims), FS_TOKEN_MALFORMED, "iat as a boolean");
}

static void
test_issuer_audience(fs_token_keys *all)
{
	char claims[256];
	int i;
	static const struct {
		const char *iss_aud;
		enum fs_token_status want;
		const char *what;
	} cases[] = {
		{ "\"iss\":\"https://id.example\",\"aud\":\"flashsale\"",
		    FS_TOKEN_OK, "iss and aud match" },
		{ "\"iss\":\"https://id.example\",\"aud\":[\"a\",\"flashsale\"]",
		    FS_TOKEN_OK, "aud array with ours" },
		{ "\"iss\":\"https://id.example\",\"aud\":[\"a\",\"b\"]",
		    FS_TOKEN_BAD_AUDIENCE, "aud array without ours" },
		{ "\"iss\":\"https://id.example\",\"aud\":[]",
		    FS_TOKEN_BAD_AUDIENCE, "empty aud array" },
		{ "\"iss\":\"https://id.example\",\"aud\":\"flashsale2\"",
		    FS_TOKEN_BAD_AUDIENCE, "wrong aud" },
		{ "\"iss\":\"https://id.example\",\"aud\":[[\"flashsale\"]]",
		    FS_TOKEN_BAD_AUDIENCE, "nested aud array" },
		{ "\"iss\":\"https://id.example\",\"aud\":7",
		    FS_TOKEN_BAD_AUDIENCE, "aud as a number" },
		{ "\"iss\":\"https://id.example\"",
		    FS_TOKEN_BAD_AUDIENCE, "missing aud" },
		{ "\"iss\":\"https://id.example/\",\"aud\":\"flashsale\"",
		    FS_TOKEN_BAD_ISSUER, "wrong iss" },
		{ "\"iss\":1,\"aud\":\"flashsale\"",
		    FS_TOKEN_BAD_ISSUER, "iss as a number" },
		{ "\"aud\":\"flashsale\"", FS_TOKEN_BAD_ISSUER, "missing iss" },
	};

	check(fs_token_keys_set_claims(all, "https://id.example",
	    "flashsale") == 0, "configure iss and aud");
	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		snprintf(claims, sizeof(claims),
		    "{\"sub\":\"u\",\"exp\":%d,%s}", NOW + 60,
		    cases[i].iss_aud);
		expect(all, ed(claims), cases[i].want, cases[i].what);
	}
	check(fs_token_keys_set_claims(all, "", "") == 0,
	    "empty iss and aud mean not checked");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"iss\":\"anyone\"}", NOW + 60);
	expect(all, ed(claims), FS_TOKEN_OK, "any iss when none configured");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u\",\"exp\":%d,\"aud\":\"flashsale\"}", NOW + 60);
	expect(all, ed(claims), FS_TOKEN_BAD_AUDIENCE,
	    "a token for an audience when none is configured");
}

static void
test_subjects(const fs_token_keys *all)
{
	char claims[512], sub[8], max[FS_TOKEN_SUB_MAX + 2];
	int i;
	static const struct {
		const char *sub;
		enum fs_token_status want;
		const char *what;
	} cases[] = {
		{ "\"user-1@x.y:|_~!#$%&()*+,/;<=>?[]^`{}\"", FS_TOKEN_OK,
		    "sub of printable ASCII" },
		{ "\"\"", FS_TOKEN_BAD_SUBJECT, "empty sub" },
		{ "\"a b\"", FS_TOKEN_BAD_SUBJECT, "sub with a space" },
		{ "\"a\\\"b\"", FS_TOKEN_BAD_SUBJECT, "sub with a double quote" },
		{ "\"a'b\"", FS_TOKEN_BAD_SUBJECT, "sub with a single quote" },
		{ "\"a\\\\b\"", FS_TOKEN_BAD_SUBJECT, "sub with a backslash" },
		{ "\"a\\u0000b\"", FS_TOKEN_BAD_SUBJECT, "sub with a NUL" },
		{ "\"a\\nb\"", FS_TOKEN_BAD_SUBJECT, "sub with a newline" },
		{ "\"caf\xc3\xa9\"", FS_TOKEN_BAD_SUBJECT, "sub not ASCII" },
		{ "123", FS_TOKEN_BAD_SUBJECT, "sub as a number" },
		{ "null", FS_TOKEN_BAD_SUBJECT, "sub null" },
	};

	for (i = 0; i < (int)(sizeof(cases) / sizeof(cases[0])); i++) {
		snprintf(claims, sizeof(claims), "{\"sub\":%s,\"exp\":%d}",
		    cases[i].sub, NOW + 60);
		expect(all, ed(claims), cases[i].want, cases[i].what);
	}
	snprintf(claims, sizeof(claims), "{\"exp\":%d}", NOW + 60);
	expect(all, ed(claims), FS_TOKEN_BAD_SUBJECT, "missing sub");

	memset(max, 'a', sizeof(max));
	max[FS_TOKEN_SUB_MAX] = '\0';
	snprintf(claims, sizeof(claims), "{\"sub\":\"%s\",\"exp\":%d}", max,
	    NOW + 60);
	expect_sub(all, ed(claims), NOW, FS_TOKEN_OK, max, "sub of 64 bytes");
	max[FS_TOKEN_SUB_MAX] = 'a';
	max[FS_TOKEN_SUB_MAX + 1] = '\0';
	snprintf(claims, sizeof(claims), "{\"sub\":\"%s\",\"exp\":%d}", max,
	    NOW + 60);
	expect(all, ed(claims), FS_TOKEN_BAD_SUBJECT, "sub of 65 bytes");

	snprintf(claims, sizeof(claims), "{\"sub\":\"u1234567\",\"exp\":%d}",
	    NOW + 60);
	check(verify(all, ed(claims), strlen(ed(claims)), NOW, sub,
	    sizeof(sub)) == FS_TOKEN_BAD_SUBJECT && sub[0] == '\0',
	    "sub longer than the caller's buffer");
}

static void
test_garbage(const fs_token_keys *all)
{
	char claims[256], tok[2 * FS_TOKEN_MAX], pad[FS_TOKEN_MAX];
	char sub[FS_TOKEN_SUB_MAX + 1];
	unsigned char noise[300];
	size_t n, last_ok = 0, first_long = 0;

	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d}", NOW + 60);
	check(fs_token_verify(all, NULL, 10, NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_MISSING, "NULL token is MISSING");
	expect(all, "", FS_TOKEN_MISSING, "empty token is MISSING");
	expect(all, "abc", FS_TOKEN_MALFORMED, "one part");
	expect(all, "abc.def", FS_TOKEN_MALFORMED, "two parts");
	expect(all, "..", FS_TOKEN_MALFORMED, "empty parts");
	snprintf(tok, sizeof(tok), "%s.AAAA.AAAA", ed(claims));
	expect(all, tok, FS_TOKEN_MALFORMED, "five parts (JWE)");
	expect(all, "bm90IGpzb24.e30.AAAA", FS_TOKEN_MALFORMED,
	    "header that is not JSON");
	expect(all, craft("[\"EdDSA\"]", claims, SIGN_ED25519),
	    FS_TOKEN_MALFORMED, "header that is an array");
	expect(all, craft("{\"alg\":\"EdDSA\"}x", claims, SIGN_ED25519),
	    FS_TOKEN_MALFORMED, "header with trailing garbage");
	expect(all, craft("{\"alg\":\"EdDSA\"}{}", claims, SIGN_ED25519),
	    FS_TOKEN_MALFORMED, "header of two objects");
	expect(all, craft("{\"alg\":\"EdDSA\"", claims, SIGN_ED25519),
	    FS_TOKEN_MALFORMED, "truncated header");
	expect(all, craft("{'alg':'EdDSA'}", claims, SIGN_ED25519),
	    FS_TOKEN_MALFORMED, "header in single quotes (not strict JSON)");
	expect(all, craft("{\"alg\":\"EdDSA\"} \r\n", claims, SIGN_ED25519),
	    FS_TOKEN_OK, "header with trailing whitespace");
	snprintf(tok, sizeof(tok), "%s", ed(claims));
	memmove(strchr(tok, '.') + 1, strchr(tok, '.'), strlen(strchr(tok,
	    '.')) + 1);
	*strchr(tok, '.') = '=';
	expect(all, tok, FS_TOKEN_MALFORMED, "padded header");
	snprintf(tok, sizeof(tok), "%s", ed(claims));
	*strrchr(tok, '.') = '!';
	expect(all, tok, FS_TOKEN_MALFORMED, "a character outside base64url");

	expect(all, ed("not json"), FS_TOKEN_MALFORMED, "claims not JSON");
	expect(all, ed("[1,2]"), FS_TOKEN_MALFORMED, "claims an array");
	expect(all, ed("\"sub\""), FS_TOKEN_MALFORMED, "claims a string");
	expect(all, ed("{\"sub\":\"u\",\"exp\":1800000000,}"),
	    FS_TOKEN_MALFORMED, "claims with a trailing comma");
	expect(all, ed("{\"sub\":\"u\",\"exp\":1800000000,\"x\":\"\xff\"}"),
	    FS_TOKEN_MALFORMED, "claims with invalid UTF-8");
	expect(all, ed("{\"sub\":\"u\",\"exp\":1800000000,\"x\":[[[[[[[[[[[["
	    "]]]]]]]]]]]]}"), FS_TOKEN_MALFORMED, "claims nested too deep");
	expect(all, ed("{\"sub\":\"u\",\"exp\":1800000000,\"x\":[[[[[[1]]]]]]}"),
	    FS_TOKEN_OK, "claims nested within the limit");

	randombytes_buf(noise, sizeof(noise));
	check(verify(all, (const char *)noise, sizeof(noise), NOW, sub,
	    sizeof(sub)) != FS_TOKEN_OK, "random bytes");
	for (n = 0; n < sizeof(noise); n++)
		noise[n] = (unsigned char)(noise[n] % 2 == 0 ? '.' : 'A' + n % 26);
	check(verify(all, (const char *)noise, sizeof(noise), NOW, sub,
	    sizeof(sub)) != FS_TOKEN_OK, "random dots and letters");

	/* Grow a padding claim until the token passes FS_TOKEN_MAX. */
	memset(pad, 'p', sizeof(pad));
	for (n = 2800; n < 3200 && first_long == 0; n++) {
		const char *t;

		snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d,"
		    "\"pad\":\"", NOW + 60);
		snprintf(tok, sizeof(tok), "%s%.*s\"}", claims, (int)n, pad);
		t = ed(tok);
		if (strlen(t) <= FS_TOKEN_MAX && verify(all, t, strlen(t), NOW,
		    sub, sizeof(sub)) == FS_TOKEN_OK)
			last_ok = strlen(t);
		if (strlen(t) > FS_TOKEN_MAX && verify(all, t, strlen(t), NOW,
		    sub, sizeof(sub)) == FS_TOKEN_TOO_LONG)
			first_long = strlen(t);
	}
	check(last_ok > FS_TOKEN_MAX - 4 && last_ok <= FS_TOKEN_MAX,
	    "a valid token just under 4096 bytes verifies");
	check(first_long > FS_TOKEN_MAX, "a token over 4096 bytes is TOO_LONG");
}

static void
test_bearer(const fs_token_keys *all)
{
	char claims[256], tok[FS_TOKEN_MAX], value[FS_TOKEN_MAX + 32];

	snprintf(claims, sizeof(claims), "{\"sub\":\"u\",\"exp\":%d}", NOW + 60);
	snprintf(tok, sizeof(tok), "%s", ed(claims));
	snprintf(value, sizeof(value), "Bearer %s", tok);
	expect_bearer(all, value, FS_TOKEN_OK, "Bearer <token>");
	snprintf(value, sizeof(value), "bEARER   %s", tok);
	expect_bearer(all, value, FS_TOKEN_OK, "scheme in any case, spaces");
	snprintf(value, sizeof(value), " \tBearer %s \t", tok);
	expect_bearer(all, value, FS_TOKEN_OK, "surrounding whitespace");
	snprintf(value, sizeof(value), "Basic %s", tok);
	expect_bearer(all, value, FS_TOKEN_MISSING, "Basic scheme");
	snprintf(value, sizeof(value), "Bearer%s", tok);
	expect_bearer(all, value, FS_TOKEN_MISSING, "no space after Bearer");
	snprintf(value, sizeof(value), "Bearer\t%s", tok);
	expect_bearer(all, value, FS_TOKEN_MISSING, "tab after Bearer");
	expect_bearer(all, "Bearer", FS_TOKEN_MISSING, "Bearer alone");
	expect_bearer(all, "Bearer    ", FS_TOKEN_MISSING, "Bearer and spaces");
	expect_bearer(all, "", FS_TOKEN_MISSING, "empty header");
	snprintf(value, sizeof(value), "Bearer %s x", tok);
	expect_bearer(all, value, FS_TOKEN_MALFORMED, "two tokens");
	snprintf(value, sizeof(value), "Bearer %s", flip(tok, 3));
	expect_bearer(all, value, FS_TOKEN_BAD_SIGNATURE, "bad token");
}

static void
test_mint(fs_token_keys *all, const fs_token_keys *ed_only)
{
	char tok[FS_TOKEN_MAX], claims[256], sub[FS_TOKEN_SUB_MAX + 1];

	check(fs_token_mint(all, FS_TOKEN_ALG_HS256, "u1", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK, "mint HS256");
	snprintf(claims, sizeof(claims),
	    "{\"sub\":\"u1\",\"iat\":%d,\"exp\":%d}", NOW, NOW + 60);
	check(strcmp(tok, craft(HDR_HS, claims, SIGN_HS256)) == 0,
	    "mint writes the expected header, claims and HMAC");
	expect_sub(all, tok, NOW, FS_TOKEN_OK, "u1", "minted HS256 verifies");
	expect_sub(all, tok, NOW + 60 + FS_TOKEN_LEEWAY - 1, FS_TOKEN_OK, "u1",
	    "minted HS256 verifies until exp and the leeway");
	expect_sub(all, tok, NOW + 60 + FS_TOKEN_LEEWAY, FS_TOKEN_EXPIRED,
	    NULL, "minted HS256 expires");

	check(fs_token_mint(all, FS_TOKEN_ALG_EDDSA, "u2", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK, "mint EdDSA");
	check(strcmp(tok, craft(HDR_ED, "{\"sub\":\"u2\",\"iat\":1700000000,"
	    "\"exp\":1700000060}", SIGN_ED25519)) == 0,
	    "mint writes the expected header, claims and signature");
	expect_sub(all, tok, NOW, FS_TOKEN_OK, "u2", "minted EdDSA verifies");
	expect_sub(ed_only, tok, NOW, FS_TOKEN_OK, "u2",
	    "minted EdDSA verifies with the public key alone");

	check(fs_token_keys_set_claims(all, "https://id.example",
	    "flash\"sale") == 0, "configure iss and an aud to escape");
	check(fs_token_mint(all, FS_TOKEN_ALG_EDDSA, "u3", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK, "mint with iss and aud");
	check(fs_token_verify(all, tok, strlen(tok), NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_OK && strcmp(sub, "u3") == 0,
	    "minted token with iss and aud verifies");
	expect(ed_only, tok, FS_TOKEN_BAD_AUDIENCE,
	    "minted token with aud refused where no aud is configured");
	check(fs_token_keys_set_claims(all, NULL, NULL) == 0, "clear claims");

	check(fs_token_mint(ed_only, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_ALG && tok[0] == '\0',
	    "mint EdDSA without the secret key is BAD_ALG");
	check(fs_token_mint(ed_only, FS_TOKEN_ALG_HS256, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_ALG,
	    "mint HS256 without the secret is BAD_ALG");
	check(fs_token_mint(all, FS_TOKEN_ALG__MAX, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_ALG, "mint with an unknown alg");
	check(fs_token_mint(all, FS_TOKEN_ALG_HS256, "a b", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_SUBJECT, "mint refuses a bad sub");
	check(fs_token_mint(all, FS_TOKEN_ALG_HS256,
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    NOW, 60, tok, sizeof(tok)) == FS_TOKEN_BAD_SUBJECT,
	    "mint refuses a sub of 65 bytes");
	check(fs_token_mint(all, FS_TOKEN_ALG_HS256, NULL, NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_SUBJECT, "mint refuses a NULL sub");
	check(fs_token_mint(all, FS_TOKEN_ALG_HS256, "u", NOW, 0, tok,
	    sizeof(tok)) == FS_TOKEN_MALFORMED, "mint refuses ttl 0");
	check(fs_token_mint(all, FS_TOKEN_ALG_HS256, "u", NOW, 60, tok, 100) ==
	    FS_TOKEN_TOO_LONG && tok[0] == '\0',
	    "mint into a short buffer is TOO_LONG");
}

static void
test_keys(void)
{
	unsigned char pk2[crypto_sign_PUBLICKEYBYTES];
	unsigned char sk2[crypto_sign_SECRETKEYBYTES];
	char dir[] = "/tmp/test_token.XXXXXX", err[512], path[600];
	char tok[FS_TOKEN_MAX], sub[FS_TOKEN_SUB_MAX + 1];
	unsigned char long_key[FS_TOKEN_HS256_KEY_MAX + 1];
	fs_token_keys *keys = fs_token_keys_new();

	crypto_sign_keypair(pk2, sk2);
	randombytes_buf(long_key, sizeof(long_key));
	check(fs_token_keys_set(keys, NULL, NULL, NULL, 0) == -1,
	    "set refuses no key at all");
	check(fs_token_keys_set(keys, NULL, NULL, hs_key, 31) == -1,
	    "set refuses an HS256 key of 31 bytes");
	check(fs_token_keys_set(keys, NULL, NULL, long_key, 65) == -1,
	    "set refuses an HS256 key of 65 bytes");
	check(fs_token_keys_set(keys, pk2, ed_sk, NULL, 0) == -1,
	    "set refuses a secret key of another public key");
	check(fs_token_keys_set(keys, NULL, ed_sk, NULL, 0) == 0 &&
	    fs_token_mint(keys, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK && fs_token_verify(keys, tok,
	    strlen(tok), NOW, sub, sizeof(sub)) == FS_TOKEN_OK,
	    "set with the secret key alone mints and verifies");

	check(mkdtemp(dir) != NULL, "make a keys directory");
	check(fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "no JWT key") != NULL, "load_dir of an empty dir");
	check(write_file(dir, "jwt-hs256.key", hs_key, 31) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "exactly 32 bytes") != NULL,
	    "load_dir refuses an HS256 key of 31 bytes");
	check(write_file(dir, "jwt-hs256.key", long_key, 33) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1,
	    "load_dir refuses an HS256 key of 33 bytes");
	check(write_file(dir, "jwt-hs256.key", hs_key, 32) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == 0,
	    "load_dir with the HS256 key alone");
	check(fs_token_mint(keys, FS_TOKEN_ALG_HS256, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK && fs_token_verify(keys, tok,
	    strlen(tok), NOW, sub, sizeof(sub)) == FS_TOKEN_OK,
	    "the loaded HS256 key mints and verifies");
	check(fs_token_mint(keys, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_ALG,
	    "the earlier Ed25519 key is gone after load_dir");

	check(write_file(dir, "jwt-ed25519.pub", ed_pk, 31) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1,
	    "load_dir refuses a public key of 31 bytes");
	check(write_file(dir, "jwt-ed25519.pub", ed_pk, 32) == 0 &&
	    write_file(dir, "jwt-ed25519.key", sk2, 64) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "not the secret key") != NULL,
	    "load_dir refuses a secret key of another public key");
	check(write_file(dir, "jwt-ed25519.key", ed_sk, 64) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == 0 &&
	    fs_token_mint(keys, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_OK && fs_token_verify(keys, tok,
	    strlen(tok), NOW, sub, sizeof(sub)) == FS_TOKEN_OK,
	    "load_dir with all three keys mints and verifies EdDSA");
	remove_file(dir, "jwt-ed25519.key");
	remove_file(dir, "jwt-hs256.key");
	snprintf(path, sizeof(path), "%s/jwt-hs256.key", dir);
	check(mkdir(path, 0700) == 0 &&
	    fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == -1 &&
	    strstr(err, "not a regular file") != NULL,
	    "load_dir refuses a directory as a key file");
	rmdir(path);
	check(fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == 0 &&
	    fs_token_mint(keys, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok,
	    sizeof(tok)) == FS_TOKEN_BAD_ALG,
	    "load_dir with the public key alone verifies but cannot mint");
	remove_file(dir, "jwt-ed25519.pub");
	rmdir(dir);
	fs_token_keys_free(keys);
	fs_token_keys_free(NULL);
}

/* Verifies a token of this header, a valid payload and a junk signature. */
static enum fs_token_status
verify_header(const fs_token_keys *keys, const char *header)
{
	char tok[1024], sub[FS_TOKEN_SUB_MAX + 1];
	const char *payload = "{\"sub\":\"u\",\"exp\":4102444800}";
	size_t n, m;

	(void)fs_b64url_encode(tok, sizeof(tok), header, strlen(header), &n);
	tok[n++] = '.';
	(void)fs_b64url_encode(tok + n, sizeof(tok) - n, payload, strlen(payload), &m);
	n += m;
	snprintf(tok + n, sizeof(tok) - n, ".%s", "AAAA");
	return fs_token_verify(keys, tok, strlen(tok), NOW, sub, sizeof(sub));
}

/*
 * The demo key: tokens of the demo sign-in carry "kid":"demo" and verify
 * only where the demo public key is loaded; a production verifier refuses
 * them, and no other key id or key passes for it.
 */
static void
test_demo(const fs_token_keys *all)
{
	unsigned char demo_pk[crypto_sign_PUBLICKEYBYTES], demo_sk[crypto_sign_SECRETKEYBYTES];
	char dir[] = "/tmp/test_token_demo.XXXXXX", err[512], tok[FS_TOKEN_MAX], prod[FS_TOKEN_MAX];
	char sub[FS_TOKEN_SUB_MAX + 1], forged[FS_TOKEN_MAX];
	fs_token_keys *signer = fs_token_keys_new(), *demo_on = fs_token_keys_new();
	const char *dot;

	crypto_sign_keypair(demo_pk, demo_sk);
	check(mkdtemp(dir) != NULL, "demo: a keys directory");
	check(fs_token_keys_load_demo(signer, dir, 1, err, sizeof(err)) == -1 &&
	    strstr(err, "no demo key") != NULL, "demo: a missing demo key is named");
	check(write_file(dir, FS_TOKEN_DEMO_PUB_FILE, demo_pk, sizeof(demo_pk)) == 0 &&
	    write_file(dir, FS_TOKEN_DEMO_KEY_FILE, ed_sk, sizeof(ed_sk)) == 0 &&
	    fs_token_keys_load_demo(signer, dir, 1, err, sizeof(err)) == -1 &&
	    strstr(err, "not the secret key") != NULL,
	    "demo: a secret key of another public key is refused");
	check(write_file(dir, FS_TOKEN_DEMO_KEY_FILE, demo_sk, sizeof(demo_sk)) == 0 &&
	    fs_token_keys_load_demo(signer, dir, 1, err, sizeof(err)) == 0,
	    "demo: the signer loads the demo pair");
	check(fs_token_mint(signer, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, tok, sizeof(tok)) ==
	    FS_TOKEN_BAD_ALG, "demo: the signer holds no production key");
	check(fs_token_mint(signer, FS_TOKEN_ALG_EDDSA_DEMO, "u", NOW, 60, tok, sizeof(tok)) ==
	    FS_TOKEN_OK, "demo: the signer mints a demo token");
	check(fs_token_verify(all, tok, strlen(tok), NOW, sub, sizeof(sub)) == FS_TOKEN_UNKNOWN_KEY,
	    "demo: a verifier without the demo key refuses it (the flag is off)");
	check(fs_token_keys_set(demo_on, ed_pk, NULL, NULL, 0) == 0 &&
	    fs_token_keys_load_demo(demo_on, dir, 0, err, sizeof(err)) == 0 &&
	    fs_token_verify(demo_on, tok, strlen(tok), NOW, sub, sizeof(sub)) == FS_TOKEN_OK &&
	    strcmp(sub, "u") == 0, "demo: a verifier with the demo key accepts it (the flag is on)");
	check(fs_token_mint(all, FS_TOKEN_ALG_EDDSA, "u", NOW, 60, prod, sizeof(prod)) ==
	    FS_TOKEN_OK && fs_token_verify(demo_on, prod, strlen(prod), NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_OK, "demo: production tokens pass as before");
	/* The demo header on a production signature, and the reverse. */
	dot = strchr(tok, '.');
	snprintf(forged, sizeof(forged), "%.*s%s", (int)(dot - tok), tok, strchr(prod, '.'));
	check(fs_token_verify(demo_on, forged, strlen(forged), NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_BAD_SIGNATURE, "demo: kid demo with the production signature is refused");
	dot = strchr(prod, '.');
	snprintf(forged, sizeof(forged), "%.*s%s", (int)(dot - prod), prod, strchr(tok, '.'));
	check(fs_token_verify(demo_on, forged, strlen(forged), NOW, sub, sizeof(sub)) ==
	    FS_TOKEN_BAD_SIGNATURE, "demo: the demo signature under a production header is refused");
	check(verify_header(demo_on, "{\"alg\":\"EdDSA\",\"kid\":\"prod\"}") == FS_TOKEN_UNKNOWN_KEY &&
	    verify_header(demo_on, "{\"alg\":\"HS256\",\"kid\":\"demo\"}") == FS_TOKEN_BAD_ALG &&
	    verify_header(demo_on, "{\"alg\":\"EdDSA\",\"kid\":1}") == FS_TOKEN_MALFORMED,
	    "demo: another key id, another algorithm or a numeric kid is refused");
	remove_file(dir, FS_TOKEN_DEMO_PUB_FILE);
	remove_file(dir, FS_TOKEN_DEMO_KEY_FILE);
	rmdir(dir);
	fs_token_keys_free(signer);
	fs_token_keys_free(demo_on);
}

/* JWK Sets: keys selected by kid, rotation, bad files, the unknown-kid line. */

#define CLAIMS_OK "{\"sub\":\"u\",\"exp\":4102444800}"

/* A second and third Ed25519 pair and HS256 secret for the JWK Sets. */
static unsigned char k2_pk[crypto_sign_PUBLICKEYBYTES], k2_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char k3_pk[crypto_sign_PUBLICKEYBYTES], k3_sk[crypto_sign_SECRETKEYBYTES];
static unsigned char h2_key[48];

/* An EdDSA token of header hdr signed with sk (a static buffer). */
static const char *
craft_ed_sk(const char *hdr, const unsigned char *sk)
{
	static char tok[FS_TOKEN_MAX];
	unsigned char sig[crypto_sign_BYTES];

	tok[0] = '\0';
	append_b64(tok, sizeof(tok), hdr, strlen(hdr));
	strcat(tok, ".");
	append_b64(tok, sizeof(tok), CLAIMS_OK, strlen(CLAIMS_OK));
	crypto_sign_detached(sig, NULL, (unsigned char *)tok, strlen(tok), sk);
	strcat(tok, ".");
	append_b64(tok, sizeof(tok), sig, sizeof(sig));
	return tok;
}

/* One JWK as text: an OKP Ed25519 public key or an oct secret, with extra members. */
static const char *
jwk(const char *kty, const char *kid, const unsigned char *key, size_t len, const char *extra)
{
	static char out[4][1024];
	static int turn;
	char b64[128];
	char *o = out[turn++ % 4];

	if (fs_b64url_encode(b64, sizeof(b64), key, len, NULL) != FS_B64URL_OK)
		abort();
	if (strcmp(kty, "OKP") == 0)
		snprintf(o, 1024, "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"%s\",\"x\":\"%s\"%s}",
		    kid, b64, extra);
	else
		snprintf(o, 1024, "{\"kty\":\"oct\",\"kid\":\"%s\",\"k\":\"%s\"%s}", kid, b64, extra);
	return o;
}

/* Replaces the file at path with text, by a rename as an operator should. */
static int
put_file(const char *path, const char *text)
{
	char tmp[600];
	int fd, ok;

	snprintf(tmp, sizeof(tmp), "%s.new", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ok = fd != -1 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	if (fd != -1)
		close(fd);
	return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* Writes {"keys":[a,b,c]} (NULL ends the list early). */
static int
put_jwks(const char *path, const char *a, const char *b, const char *c)
{
	char text[4096];

	snprintf(text, sizeof(text), "{\"keys\":[%s%s%s%s%s]}\n", a, b != NULL ? "," : "",
	    b != NULL ? b : "", c != NULL ? "," : "", c != NULL ? c : "");
	return put_file(path, text);
}

static enum fs_token_status
verify_now(const fs_token_keys *keys, const char *tok)
{
	char sub[FS_TOKEN_SUB_MAX + 1];

	return verify(keys, tok, strlen(tok), NOW, sub, sizeof(sub));
}

#define HDR_K(alg, kid) "{\"alg\":\"" alg "\",\"typ\":\"JWT\",\"kid\":\"" kid "\"}"

/*
 * Unknown kids are logged one line each, naming the kid in safe characters,
 * 5 at once and then one a second, the next line counting those left out;
 * the token never.
 */
static void
test_jwks_log(const fs_token_keys *keys)
{
	char path[] = "/tmp/test_token_log.XXXXXX", line[4096], tok[FS_TOKEN_MAX], hdr[64];
	int fd, saved, i, refused = 0, lines = 0, named = 0, flood = 0, leaked = 0, counted = 0;
	struct timespec ts = { 1, 100 * 1000 * 1000 };
	FILE *f;

	snprintf(tok, sizeof(tok), "%s", craft_ed_sk("{\"alg\":\"EdDSA\",\"kid\":\"x\\\"y\\nz\"}",
	    ed_sk));
	if ((fd = mkstemp(path)) == -1 || (saved = dup(2)) == -1 || dup2(fd, 2) == -1)
		abort();
	refused += verify_now(keys, tok) == FS_TOKEN_UNKNOWN_KEY;
	for (i = 0; i < 9; i++) {
		snprintf(hdr, sizeof(hdr), "{\"alg\":\"EdDSA\",\"kid\":\"flood-%d\"}", i);
		refused += verify_now(keys, craft_ed_sk(hdr, ed_sk)) == FS_TOKEN_UNKNOWN_KEY;
	}
	/* The budget earns one line a second back. */
	nanosleep(&ts, NULL);
	refused += verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "later"), ed_sk)) ==
	    FS_TOKEN_UNKNOWN_KEY;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if ((f = fdopen(fd, "r")) == NULL || fseek(f, 0, SEEK_SET) != 0)
		abort();
	while (fgets(line, sizeof(line), f) != NULL) {
		lines++;
		named += strstr(line, "unknown kid x?y?z") != NULL;
		flood += strstr(line, "unknown kid flood-") != NULL;
		counted += strstr(line, "unknown kid later (5 more unknown kids not logged)") != NULL;
		leaked += strstr(line, strrchr(tok, '.') + 1) != NULL;
	}
	fclose(f);
	unlink(path);
	check(refused == 11, "jwks log: unknown kids are refused");
	check(lines == 6 && named == 1 && flood == 4 && counted == 1 && leaked == 0,
	    "jwks log: 5 lines name the first unknown kids (quote and newline shown as ?), "
	    "the next 5 are left out, a second later one more line counts them; never the token");
}

/* Keys by kid: OKP and oct, several at once, the algorithm bound to the key. */
static void
test_jwks_select(const char *file)
{
	fs_token_keys *keys = fs_token_keys_new(), *both = fs_token_keys_new();
	char err[512], dir[] = "/tmp/test_token_only.XXXXXX";

	check(put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""), jwk("OKP", "k2", k2_pk, 32, ""),
	    jwk("oct", "h1", hs_key, 32, ",\"alg\":\"HS256\",\"use\":\"sig\"")) == 0 &&
	    fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0, "jwks: a set of three loads");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk), FS_TOKEN_OK,
	    "jwks: kid k1 selects the first Ed25519 key");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "k2"), k2_sk), FS_TOKEN_OK,
	    "jwks: kid k2 selects the second");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "k2"), ed_sk), FS_TOKEN_BAD_SIGNATURE,
	    "jwks: k1's signature under kid k2 is refused");
	expect(keys, craft(HDR_K("HS256", "h1"), CLAIMS_OK, SIGN_HS256), FS_TOKEN_OK,
	    "jwks: kid h1 selects the oct key for HS256");
	expect(keys, craft(HDR_K("HS256", "k1"), CLAIMS_OK, SIGN_HS256), FS_TOKEN_BAD_ALG,
	    "jwks: HS256 under an Ed25519 key's kid is refused (no algorithm confusion)");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "h1"), ed_sk), FS_TOKEN_BAD_ALG,
	    "jwks: EdDSA under an oct key's kid is refused");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "k9"), ed_sk), FS_TOKEN_UNKNOWN_KEY,
	    "jwks: an unknown kid is refused as such");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "K1"), ed_sk), FS_TOKEN_UNKNOWN_KEY,
	    "jwks: kids are compared exactly (case)");
	expect(keys, ed(CLAIMS_OK), FS_TOKEN_BAD_ALG,
	    "jwks: a token without kid is not verified with the set's keys");
	check(mkdtemp(dir) != NULL && write_file(dir, FS_TOKEN_ED25519_PUB_FILE, ed_pk, 32) == 0 &&
	    fs_token_keys_load_jwks(both, file, err, sizeof(err)) == 0 &&
	    fs_token_keys_load_dir(both, dir, err, sizeof(err)) == 0 &&
	    verify_now(both, ed(CLAIMS_OK)) == FS_TOKEN_OK &&
	    verify_now(both, craft_ed_sk(HDR_K("EdDSA", "k2"), k2_sk)) == FS_TOKEN_OK,
	    "jwks: beside the directory's keys, a token without kid keeps today's key");
	remove_file(dir, FS_TOKEN_ED25519_PUB_FILE);
	check(fs_token_keys_load_dir(keys, dir, err, sizeof(err)) == 0,
	    "jwks: with a set loaded, a directory without token keys is fine");
	rmdir(dir);
	fs_token_keys_free(keys);
	fs_token_keys_free(both);
}

/* A rotation: the new key beside the old one, then the old one gone. */
static void
test_jwks_rotate(const char *file)
{
	fs_token_keys *keys = fs_token_keys_new();
	char err[512], old[FS_TOKEN_MAX];
	int i, seen = 0;

	snprintf(old, sizeof(old), "%s", craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk));
	check(put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""), NULL, NULL) == 0 &&
	    fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0 &&
	    verify_now(keys, old) == FS_TOKEN_OK, "rotate: k1 alone");
	check(fs_token_keys_reload(keys) == 0 && verify_now(keys, old) == FS_TOKEN_OK,
	    "rotate: a reload of the same file changes nothing");
	check(put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""), jwk("OKP", "k3", k3_pk, 32, ""),
	    NULL) == 0 && fs_token_keys_reload(keys) == 0 && verify_now(keys, old) == FS_TOKEN_OK &&
	    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k3"), k3_sk)) == FS_TOKEN_OK,
	    "rotate: k3 added, k1's token still passes and k3's passes");
	check(put_jwks(file, jwk("OKP", "k3", k3_pk, 32, ""), NULL, NULL) == 0 &&
	    fs_token_keys_reload(keys) == 0 && verify_now(keys, old) == FS_TOKEN_UNKNOWN_KEY &&
	    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k3"), k3_sk)) == FS_TOKEN_OK,
	    "rotate: k1 removed, its token is refused, k3's passes");
	/* Without an explicit reload: verification looks once a second. */
	check(put_jwks(file, jwk("OKP", "k3", k3_pk, 32, ""), jwk("oct", "h2", h2_key, 48, ""),
	    NULL) == 0, "rotate: h2 added to the file");
	for (i = 0; i < 60 && !seen; i++) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		seen = verify_now(keys, craft_with(HDR_K("HS256", "h2"), CLAIMS_OK, SIGN_HS256,
		    h2_key, sizeof(h2_key))) == FS_TOKEN_OK;
		if (!seen)
			nanosleep(&ts, NULL);
	}
	check(seen && i > 1, "rotate: verification itself picks up the new file within 3 s, "
	    "not at once");
	/* The same size and name, rewritten in place: only the bytes differ. */
	check(put_jwks(file, jwk("OKP", "k2", k2_pk, 32, ""), jwk("oct", "h2", h2_key, 48, ""),
	    NULL) == 0 && fs_token_keys_reload(keys) == 0 &&
	    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k2"), k2_sk)) == FS_TOKEN_OK &&
	    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k3"), k3_sk)) == FS_TOKEN_UNKNOWN_KEY,
	    "rotate: a file of the same size with another key is seen");
	fs_token_keys_free(keys);
}

/* Threads verify while the file changes under them: no token of a key in both versions fails. */
struct jwks_race {
	const fs_token_keys *keys;
	const char *tok;
	int failed;
};

static void *
jwks_race_verify(void *arg)
{
	struct jwks_race *r = arg;
	int i;

	for (i = 0; i < 3000; i++)
		r->failed += verify_now(r->keys, r->tok) != FS_TOKEN_OK;
	return NULL;
}

static void
test_jwks_threads(const char *file)
{
	fs_token_keys *keys = fs_token_keys_new();
	char err[512], tok[FS_TOKEN_MAX];
	struct jwks_race r[3];
	pthread_t th[3];
	int i, failed = 0, started = 1;

	snprintf(tok, sizeof(tok), "%s", craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk));
	if (put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""), NULL, NULL) != 0 ||
	    fs_token_keys_load_jwks(keys, file, err, sizeof(err)) != 0)
		abort();
	for (i = 0; i < 3; i++) {
		r[i] = (struct jwks_race){ keys, tok, 0 };
		started &= pthread_create(&th[i], NULL, jwks_race_verify, &r[i]) == 0;
	}
	for (i = 0; i < 200; i++) {
		(void)put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""),
		    i % 2 ? jwk("OKP", "k2", k2_pk, 32, "") : NULL, NULL);
		(void)fs_token_keys_reload(keys);
	}
	for (i = 0; i < 3; i++) {
		pthread_join(th[i], NULL);
		failed += r[i].failed;
	}
	check(started && failed == 0,
	    "threads: 9000 verifications across 200 swaps of the set all pass");
	fs_token_keys_free(keys);
}

/* Files that are refused at start, and on a reload keep the keys before them. */
static void
test_jwks_bad(const char *file)
{
	static const struct {
		const char *text;
		const char *why;
		const char *what;
	} bad[] = {
		{ "not json", "JSON", "not JSON" },
		{ "{\"keys\":{}}", "\"keys\" array", "keys not an array" },
		{ "{\"keys\":[]}", "no key to verify with", "no key" },
		{ "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-521\",\"kid\":\"r\",\"x\":\"AQAB\"}]}",
		    "no key to verify with", "only keys of other types" },
		{ "{\"keys\":[1]}", "not an object", "a key that is not an object" },
		{ "{\"keys\":[{\"kid\":\"a\"}]}", "no \"kty\"", "a key without kty" },
		{ "{\"keys\":[{\"kty\":\"oct\",\"k\":\"" "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" "\"}]}",
		    "no \"kid\"", "a key without kid" },
		{ "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a b\",\"x\":\"\"}]}",
		    "printable", "a kid with a space" },
		{ "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"demo\","
		    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}", "demo key", "kid demo" },
		{ "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\","
		    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHUR\"}]}", "32 bytes",
		    "an Ed25519 key of 31 bytes" },
		{ "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\","
		    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\","
		    "\"d\":\"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A\"}]}", "private", "a private key" },
		{ "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"c2VjcmV0LXNlY3JldC0xNg\"}]}",
		    "32 to 64 bytes", "an HS256 secret of 16 bytes" },
		{ "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"a\",\"k\":\"AAAA=\"}]}", "base64url",
		    "a padded secret" },
		{ "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\","
		    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"},"
		    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"a\","
		    "\"x\":\"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo\"}]}", "twice", "a kid twice" },
		{ "{\"keys\":[[[[[[1]]]]]]}", "depth", "too deep" },
		{ "{\"keys\":[]} {}", "JSON", "two objects" },
	};
	fs_token_keys *keys = fs_token_keys_new(), *fresh;
	char err[512], what[160], *big;
	size_t i, n;
	int ok;

	check(put_jwks(file, jwk("OKP", "k1", ed_pk, 32, ""), NULL, NULL) == 0 &&
	    fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0, "bad files: k1 loaded first");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fresh = fs_token_keys_new();
		err[0] = '\0';
		ok = put_file(file, bad[i].text) == 0 &&
		    fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
		    strstr(err, bad[i].why) != NULL && strstr(err, "nWGxne") == NULL &&
		    fs_token_keys_reload(keys) == -1 &&
		    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk)) == FS_TOKEN_OK;
		if (!ok)
			printf("# %s: err \"%s\"\n", bad[i].what, err);
		snprintf(what, sizeof(what), "bad files: %s is refused, and a reload keeps k1",
		    bad[i].what);
		check(ok, what);
		fs_token_keys_free(fresh);
	}
	/* 33 keys, and a file past the size limit. */
	big = malloc(FS_TOKEN_JWKS_FILE_MAX + 64);
	if (big == NULL)
		abort();
	n = (size_t)snprintf(big, 64, "{\"keys\":[");
	for (i = 0; i <= FS_TOKEN_JWKS_KEYS_MAX; i++)
		n += (size_t)snprintf(big + n, 64, "%s{\"kty\":\"RSA\"}", i > 0 ? "," : "");
	snprintf(big + n, 8, "]}");
	fresh = fs_token_keys_new();
	check(put_file(file, big) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "more than 32") != NULL, "bad files: 33 keys are refused");
	memset(big, ' ', FS_TOKEN_JWKS_FILE_MAX + 1);
	memcpy(big, "{\"keys\":[]}", 11);
	big[FS_TOKEN_JWKS_FILE_MAX + 1] = '\0';
	check(put_file(file, big) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "larger than 65536") != NULL, "bad files: a file over 64 KiB is refused");
	check(unlink(file) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "No such file") != NULL && fs_token_keys_reload(keys) == -1 &&
	    verify_now(keys, craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk)) == FS_TOKEN_OK,
	    "bad files: a missing file is refused at start, and keeps the keys on a reload");
	free(big);
	/* Keys we do not use are ignored beside ours (RFC 7517 5). */
	check(put_jwks(file, "{\"kty\":\"RSA\",\"kid\":\"r1\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
	    jwk("OKP", "enc", k2_pk, 32, ",\"use\":\"enc\""),
	    jwk("oct", "h5", hs_key, 32, ",\"alg\":\"HS512\"")) == 0 &&
	    fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1,
	    "ignored: a set of only an RSA key, an encryption key and an HS512 secret has none of ours");
	check(put_jwks(file, "{\"kty\":\"OKP\",\"crv\":\"X25519\",\"kid\":\"x\",\"x\":\"AA\"}",
	    jwk("OKP", "enc", k2_pk, 32, ",\"key_ops\":[\"encrypt\"]"),
	    jwk("OKP", "k1", ed_pk, 32, ",\"key_ops\":[\"sign\",\"verify\"]")) == 0 &&
	    fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == 0 &&
	    verify_now(fresh, craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk)) == FS_TOKEN_OK &&
	    verify_now(fresh, craft_ed_sk(HDR_K("EdDSA", "enc"), k2_sk)) == FS_TOKEN_UNKNOWN_KEY,
	    "ignored: an X25519 key and one without verify beside ours; their kids are unknown");
	fs_token_keys_free(fresh);
	fs_token_keys_free(keys);
}

/*
 * RS256, PS256 and ES256 (issue 34): keys made here with libcrypto, tokens
 * signed here with EVP directly, so that the test does not trust the code
 * it tests to build them.
 */
static EVP_PKEY *rsa1, *rsa2, *rsa_weak, *ec1, *ec2, *ec384;

/* The base64url of a big number of at least pad bytes (0: its own length). */
static const char *
bn_b64(const BIGNUM *bn, int pad, char *out, size_t outmax)
{
	unsigned char bin[1024];
	int n = pad > 0 ? BN_bn2binpad(bn, bin, pad) : BN_bn2bin(bn, bin);

	if (n <= 0 || fs_b64url_encode(out, outmax, bin, (size_t)n, NULL) != FS_B64URL_OK)
		abort();
	return out;
}

/* One JWK as text for an RSA or EC key of ours, with extra members. */
static const char *
jwk_pkey(const char *kid, EVP_PKEY *pkey, const char *extra)
{
	static char out[8][2048];
	static int turn;
	char *o = out[turn++ % 8], a[1400], b[1400];
	BIGNUM *x = NULL, *y = NULL;
	char crv[16];

	if (EVP_PKEY_is_a(pkey, "RSA")) {
		if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_N, &x) != 1 ||
		    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_RSA_E, &y) != 1)
			abort();
		snprintf(o, 2048, "{\"kty\":\"RSA\",\"kid\":\"%s\",\"n\":\"%s\",\"e\":\"%s\"%s}", kid,
		    bn_b64(x, 0, a, sizeof(a)), bn_b64(y, 0, b, sizeof(b)), extra);
	} else {
		if (EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_X, &x) != 1 ||
		    EVP_PKEY_get_bn_param(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, &y) != 1 ||
		    EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, crv, sizeof(crv),
		    NULL) != 1)
			abort();
		snprintf(o, 2048, "{\"kty\":\"EC\",\"crv\":\"%s\",\"kid\":\"%s\",\"x\":\"%s\",\"y\":\"%s\"%s}",
		    strcmp(crv, "prime256v1") == 0 ? "P-256" : "P-384", kid,
		    bn_b64(x, EVP_PKEY_get_bits(pkey) / 8 + (EVP_PKEY_get_bits(pkey) % 8 != 0), a, sizeof(a)),
		    bn_b64(y, EVP_PKEY_get_bits(pkey) / 8 + (EVP_PKEY_get_bits(pkey) % 8 != 0), b, sizeof(b)),
		    extra);
	}
	BN_free(x);
	BN_free(y);
	return o;
}

/*
 * A token of header hdr and the usual claims signed with pkey: PKCS#1 v1.5
 * (pss 0) or PSS for RSA, for EC the JWS form R || S (raw: the DER EVP
 * makes, when a test wants the wrong form). A static buffer.
 */
static const char *
craft_pkey(const char *hdr, EVP_PKEY *pkey, int pss, int raw)
{
	static char tok[FS_TOKEN_MAX];
	unsigned char sig[1024], rs[2 * 66];
	const unsigned char *p = sig;
	int w = (EVP_PKEY_get_bits(pkey) + 7) / 8;
	size_t siglen = sizeof(sig);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx;
	ECDSA_SIG *es;

	tok[0] = '\0';
	append_b64(tok, sizeof(tok), hdr, strlen(hdr));
	strcat(tok, ".");
	append_b64(tok, sizeof(tok), CLAIMS_OK, strlen(CLAIMS_OK));
	if (md == NULL || EVP_DigestSignInit(md, &pctx, EVP_sha256(), NULL, pkey) != 1 ||
	    (pss && (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1)) ||
	    EVP_DigestSign(md, sig, &siglen, (unsigned char *)tok, strlen(tok)) != 1)
		abort();
	EVP_MD_CTX_free(md);
	strcat(tok, ".");
	if (EVP_PKEY_is_a(pkey, "EC") && !raw) {
		if ((es = d2i_ECDSA_SIG(NULL, &p, (long)siglen)) == NULL ||
		    BN_bn2binpad(ECDSA_SIG_get0_r(es), rs, w) != w ||
		    BN_bn2binpad(ECDSA_SIG_get0_s(es), rs + w, w) != w)
			abort();
		ECDSA_SIG_free(es);
		append_b64(tok, sizeof(tok), rs, 2 * (size_t)w);
	} else
		append_b64(tok, sizeof(tok), sig, siglen);
	return tok;
}

/* The DER SubjectPublicKeyInfo of pkey, the bytes an attacker would HMAC with. */
static size_t
pkey_der(EVP_PKEY *pkey, unsigned char *out, size_t max)
{
	unsigned char *p = out;
	int n = i2d_PUBKEY(pkey, NULL);

	if (n <= 0 || (size_t)n > max || i2d_PUBKEY(pkey, &p) != n)
		abort();
	return (size_t)n;
}

/* Keys by kid: RSA and EC beside each other, the algorithm bound to the key. */
static void
test_pkey_select(const char *file)
{
	fs_token_keys *keys = fs_token_keys_new();
	unsigned char der[1024];
	char err[512], text[8192], sub[FS_TOKEN_SUB_MAX + 1];
	size_t n;

	snprintf(text, sizeof(text), "{\"keys\":[%s,%s,%s,%s]}", jwk_pkey("r1", rsa1, ",\"use\":\"sig\""),
	    jwk_pkey("e1", ec1, ",\"alg\":\"ES256\""), jwk_pkey("p1", rsa2, ",\"alg\":\"PS256\""),
	    jwk("OKP", "k1", ed_pk, 32, ""));
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0,
	    "pkey: a set of RSA, EC, RSA-PSS and Ed25519 keys loads");
	check(verify(keys, craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0),
	    strlen(craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0)), NOW, sub, sizeof(sub)) == FS_TOKEN_OK &&
	    strcmp(sub, "u") == 0, "pkey: an RS256 token of kid r1 passes with its subject");
	expect(keys, craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 0), FS_TOKEN_OK,
	    "pkey: an ES256 token of kid e1 passes");
	expect(keys, craft_pkey(HDR_K("PS256", "p1"), rsa2, 1, 0), FS_TOKEN_OK,
	    "pkey: a PS256 token of kid p1 (alg PS256) passes");
	expect(keys, craft_ed_sk(HDR_K("EdDSA", "k1"), ed_sk), FS_TOKEN_OK,
	    "pkey: and an EdDSA token of kid k1 beside them");
	expect(keys, flip(craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0), 3), FS_TOKEN_BAD_SIGNATURE,
	    "pkey: an RS256 signature changed is refused");
	expect(keys, flip(craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 0), 3), FS_TOKEN_BAD_SIGNATURE,
	    "pkey: an ES256 signature changed is refused");
	expect(keys, craft_pkey(HDR_K("RS256", "r1"), rsa2, 0, 0), FS_TOKEN_BAD_SIGNATURE,
	    "pkey: another RSA key's signature under kid r1 is refused");
	expect(keys, craft_pkey(HDR_K("ES256", "e1"), ec2, 0, 0), FS_TOKEN_BAD_SIGNATURE,
	    "pkey: another P-256 key's signature under kid e1 is refused");
	expect(keys, craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 1), FS_TOKEN_BAD_SIGNATURE,
	    "pkey: an ES256 signature in DER, not R || S, is refused");
	/* The key decides: no token picks another algorithm with a key's bytes. */
	n = pkey_der(rsa1, der, sizeof(der));
	expect(keys, craft_with(HDR_K("HS256", "r1"), CLAIMS_OK, SIGN_HS256, der, n), FS_TOKEN_BAD_ALG,
	    "pkey: HS256 under the RSA key's kid, HMAC'd with its public key's bytes, is refused");
	n = pkey_der(ec1, der, sizeof(der));
	expect(keys, craft_with(HDR_K("HS256", "e1"), CLAIMS_OK, SIGN_HS256, der, n), FS_TOKEN_BAD_ALG,
	    "pkey: HS256 under the P-256 key's kid, HMAC'd with its public key's bytes, is refused");
	expect(keys, craft(HDR_K("none", "r1"), CLAIMS_OK, SIGN_NOTHING), FS_TOKEN_BAD_ALG,
	    "pkey: alg none under the RSA key's kid is refused");
	expect(keys, craft_pkey(HDR_K("PS256", "r1"), rsa1, 1, 0), FS_TOKEN_BAD_ALG,
	    "pkey: PS256 under an RS256 key's kid is refused");
	expect(keys, craft_pkey(HDR_K("RS256", "p1"), rsa2, 0, 0), FS_TOKEN_BAD_ALG,
	    "pkey: RS256 under a PS256 key's kid is refused");
	expect(keys, craft_pkey(HDR_K("ES256", "r1"), ec1, 0, 0), FS_TOKEN_BAD_ALG,
	    "pkey: ES256 under the RSA key's kid is refused");
	expect(keys, craft_pkey(HDR_K("RS256", "e1"), rsa1, 0, 0), FS_TOKEN_BAD_ALG,
	    "pkey: RS256 under the EC key's kid is refused");
	expect(keys, craft_pkey("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", rsa1, 0, 0), FS_TOKEN_BAD_ALG,
	    "pkey: an RS256 token without kid is refused (no RSA key outside the set)");
	fs_token_keys_free(keys);
}

/* What a file may not hold, and what is refused or ignored beside good keys. */
static void
test_pkey_files(const char *file)
{
	char path[] = "/tmp/test_token_pkey.XXXXXX", text[8192], err[512], line[1024], bad[2048];
	fs_token_keys *keys = fs_token_keys_new(), *fresh;
	int fd, saved, weak = 0;
	char *p;
	FILE *f;

	/* An RSA key of 1024 bits beside good keys: refused alone, with a line. */
	snprintf(text, sizeof(text), "{\"keys\":[%s,%s,%s,%s,%s]}", jwk_pkey("weak", rsa_weak, ""),
	    jwk_pkey("r1", rsa1, ""), jwk_pkey("e384", ec384, ""),
	    jwk_pkey("rs-as-es", rsa2, ",\"alg\":\"ES256\""), jwk_pkey("e1", ec1, ""));
	if ((fd = mkstemp(path)) == -1 || (saved = dup(2)) == -1 || dup2(fd, 2) == -1)
		abort();
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0,
	    "pkey files: a set with a 1024-bit RSA key, a P-384 key and an RSA key for ES256 loads");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	if ((f = fdopen(fd, "r")) == NULL || fseek(f, 0, SEEK_SET) != 0)
		abort();
	while (fgets(line, sizeof(line), f) != NULL)
		weak += strstr(line, "a key refused, the others stay: key \\\"weak\\\": "
		    "an RSA key of 1024 bits, not 2048 to 8192") != NULL;
	fclose(f);
	unlink(path);
	check(weak == 1, "pkey files: one line says the 1024-bit key is refused and why");
	expect(keys, craft_pkey(HDR_K("RS256", "weak"), rsa_weak, 0, 0), FS_TOKEN_UNKNOWN_KEY,
	    "pkey files: a token of the 1024-bit key is refused");
	expect(keys, craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0), FS_TOKEN_OK,
	    "pkey files: the file's other RSA key stays");
	expect(keys, craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 0), FS_TOKEN_OK,
	    "pkey files: and its P-256 key");
	expect(keys, craft_pkey(HDR_K("ES256", "e384"), ec384, 0, 0), FS_TOKEN_UNKNOWN_KEY,
	    "pkey files: a P-384 key (another curve) is not used");
	expect(keys, craft_pkey(HDR_K("ES256", "rs-as-es"), ec1, 0, 0), FS_TOKEN_UNKNOWN_KEY,
	    "pkey files: an RSA key that says alg ES256 is not used for ES256");
	expect(keys, craft_pkey(HDR_K("RS256", "rs-as-es"), rsa2, 0, 0), FS_TOKEN_UNKNOWN_KEY,
	    "pkey files: nor for RS256");

	/* Refused whole, the keys before stay. */
	fresh = fs_token_keys_new();
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_pkey("weak", rsa_weak, ""));
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "no key to verify with") != NULL && fs_token_keys_reload(keys) == -1 &&
	    verify_now(keys, craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0)) == FS_TOKEN_OK,
	    "pkey files: a set of only a 1024-bit RSA key is refused, the keys before stay");
	snprintf(bad, sizeof(bad), "%s", jwk_pkey("e1", ec1, ""));
	p = strstr(bad, "\"y\":\"") + 5;
	*p = *p == 'A' ? 'B' : 'A';
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", bad);
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "not a point of P-256") != NULL,
	    "pkey files: an EC key whose point is not on P-256 is refused");
	snprintf(bad, sizeof(bad), "%s", jwk_pkey("r1", rsa1, ",\"d\":\"AQAB\""));
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", bad);
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "private") != NULL, "pkey files: an RSA key with its private part is refused");
	check(put_file(file, "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"r\",\"n\":\"AQAB\"}]}") == 0 &&
	    fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "no \"e\"") != NULL, "pkey files: an RSA key without e is refused");
	check(put_file(file, "{\"keys\":[{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"e\",\"x\":\"AQAB\","
	    "\"y\":\"AQAB\"}]}") == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == -1 &&
	    strstr(err, "32 bytes") != NULL, "pkey files: EC coordinates of other than 32 bytes are refused");
	snprintf(text, sizeof(text), "{\"keys\":[%s,%s]}", jwk_pkey("enc", rsa2, ",\"use\":\"enc\""),
	    jwk_pkey("e1", ec1, ",\"key_ops\":[\"verify\"]"));
	check(put_file(file, text) == 0 && fs_token_keys_load_jwks(fresh, file, err, sizeof(err)) == 0 &&
	    verify_now(fresh, craft_pkey(HDR_K("RS256", "enc"), rsa2, 0, 0)) == FS_TOKEN_UNKNOWN_KEY &&
	    verify_now(fresh, craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 0)) == FS_TOKEN_OK,
	    "pkey files: an RSA encryption key is skipped, a P-256 key for verify used");
	/* A rotation: e2 beside e1, then r1 and e1 gone. */
	snprintf(text, sizeof(text), "{\"keys\":[%s,%s]}", jwk_pkey("e2", ec2, ""),
	    jwk_pkey("e1", ec1, ""));
	check(put_file(file, text) == 0 && fs_token_keys_reload(keys) == 0 &&
	    verify_now(keys, craft_pkey(HDR_K("ES256", "e2"), ec2, 0, 0)) == FS_TOKEN_OK &&
	    verify_now(keys, craft_pkey(HDR_K("ES256", "e1"), ec1, 0, 0)) == FS_TOKEN_OK &&
	    verify_now(keys, craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0)) == FS_TOKEN_UNKNOWN_KEY,
	    "pkey files: a rotation adds e2 beside e1 and removes r1");
	fs_token_keys_free(fresh);
	fs_token_keys_free(keys);
}

/* Threads verify RS256 while the set is swapped under them (the key's reference). */
static void
test_pkey_threads(const char *file)
{
	fs_token_keys *keys = fs_token_keys_new();
	char err[512], tok[FS_TOKEN_MAX], text[4096];
	struct jwks_race r[2];
	pthread_t th[2];
	int i, failed = 0, started = 1;

	snprintf(tok, sizeof(tok), "%s", craft_pkey(HDR_K("RS256", "r1"), rsa1, 0, 0));
	snprintf(text, sizeof(text), "{\"keys\":[%s]}", jwk_pkey("r1", rsa1, ""));
	if (put_file(file, text) != 0 || fs_token_keys_load_jwks(keys, file, err, sizeof(err)) != 0)
		abort();
	for (i = 0; i < 2; i++) {
		r[i] = (struct jwks_race){ keys, tok, 0 };
		started &= pthread_create(&th[i], NULL, jwks_race_verify, &r[i]) == 0;
	}
	for (i = 0; i < 100; i++) {
		snprintf(text, sizeof(text), "{\"keys\":[%s%s]}", jwk_pkey("r1", rsa1, ""),
		    i % 2 ? jwk_pkey("e1", ec1, ",\"x5t\":\"-\"") : "");
		if (i % 2)
			memmove(strstr(text, "}{") + 2, strstr(text, "}{") + 1,
			    strlen(strstr(text, "}{") + 1) + 1), strstr(text, "}{")[1] = ',';
		(void)put_file(file, text);
		(void)fs_token_keys_reload(keys);
	}
	for (i = 0; i < 2; i++) {
		pthread_join(th[i], NULL);
		failed += r[i].failed;
	}
	check(started && failed == 0,
	    "pkey threads: 6000 RS256 verifications across 100 swaps of the set all pass");
	fs_token_keys_free(keys);
}

/* A provider's JWK Set made into a file: keys we can use, public members only. */
static void
test_pkey_usable(void)
{
	char in[16384], err[512], *out = NULL;
	size_t kept = 0;
	int rc;

	snprintf(in, sizeof(in), "{\"keys\":[%s,%s,%s,%s,%s,%s]}",
	    jwk_pkey("r1", rsa1, ",\"use\":\"sig\",\"alg\":\"RS256\",\"x5c\":[\"MIIB\"]"),
	    jwk_pkey("enc", rsa2, ",\"use\":\"enc\",\"alg\":\"RSA-OAEP\""),
	    jwk("oct", "h1", hs_key, 32, ""), jwk_pkey("e1", ec1, ""),
	    jwk_pkey("e384", ec384, ""), jwk_pkey("weak", rsa_weak, ""));
	rc = fs_token_jwks_usable(in, strlen(in), "test", &out, &kept, err, sizeof(err));
	check(rc == 0 && kept == 2 && strstr(out, "\"kid\":\"r1\"") != NULL &&
	    strstr(out, "\"kid\":\"e1\"") != NULL && strstr(out, "\"alg\":\"ES256\"") != NULL &&
	    strstr(out, "\"kid\":\"h1\"") == NULL && strstr(out, "\"kid\":\"enc\"") == NULL &&
	    strstr(out, "\"use\":\"enc\"") == NULL && strstr(out, "\"oct\"") == NULL &&
	    strstr(out, "\"x5c\"") == NULL && strstr(out, "\"kid\":\"weak\"") == NULL &&
	    strstr(out, "\"kid\":\"e384\"") == NULL,
	    "usable: of six keys, the RS256 and ES256 ones are kept, public members only; "
	    "no secret, encryption key, other curve or weak key");
	free(out);
	out = NULL;
	snprintf(in, sizeof(in), "{\"keys\":[%s]}", jwk("oct", "h1", hs_key, 32, ""));
	check(fs_token_jwks_usable(in, strlen(in), "test", &out, &kept, err, sizeof(err)) == -1 &&
	    out == NULL && kept == 0 && strstr(err, "secrets are never taken") != NULL,
	    "usable: a provider's secret alone makes no file");
	check(fs_token_jwks_usable("{\"keys\":[]}", 11, "test", &out, &kept, err, sizeof(err)) == -1 &&
	    out == NULL, "usable: no key makes no file");
	check(fs_token_jwks_usable("<html>", 6, "test", &out, &kept, err, sizeof(err)) == -1 &&
	    out == NULL, "usable: not JSON makes no file");
}

static void
test_pkey(const char *file)
{
	if ((rsa1 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048)) == NULL ||
	    (rsa2 = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)3072)) == NULL ||
	    (rsa_weak = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)1024)) == NULL ||
	    (ec1 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL ||
	    (ec2 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256")) == NULL ||
	    (ec384 = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384")) == NULL)
		abort();
	test_pkey_select(file);
	test_pkey_files(file);
	test_pkey_threads(file);
	test_pkey_usable();
	EVP_PKEY_free(rsa1);
	EVP_PKEY_free(rsa2);
	EVP_PKEY_free(rsa_weak);
	EVP_PKEY_free(ec1);
	EVP_PKEY_free(ec2);
	EVP_PKEY_free(ec384);
}

static void
test_jwks(void)
{
	char dir[] = "/tmp/test_token_jwks.XXXXXX", file[600], tmp[600];

	crypto_sign_keypair(k2_pk, k2_sk);
	crypto_sign_keypair(k3_pk, k3_sk);
	randombytes_buf(h2_key, sizeof(h2_key));
	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(file, sizeof(file), "%s/jwks.json", dir);
	test_jwks_select(file);
	test_jwks_rotate(file);
	test_jwks_threads(file);
	test_jwks_bad(file);
	test_pkey(file);
	unlink(file);
	snprintf(tmp, sizeof(tmp), "%s.new", file);
	unlink(tmp);
	rmdir(dir);
}

int
main(void)
{
	fs_token_keys *all, *ed_only, *hs_only;

	if (sodium_init() < 0)
		return 99;
	crypto_sign_keypair(ed_pk, ed_sk);
	randombytes_buf(hs_key, sizeof(hs_key));
	all = fs_token_keys_new();
	ed_only = fs_token_keys_new();
	hs_only = fs_token_keys_new();
	if (all == NULL || ed_only == NULL || hs_only == NULL ||
	    fs_token_keys_set(all, ed_pk, ed_sk, hs_key, sizeof(hs_key)) ||
	    fs_token_keys_set(ed_only, ed_pk, NULL, NULL, 0) ||
	    fs_token_keys_set(hs_only, NULL, NULL, hs_key, sizeof(hs_key)))
		return 99;

	/* First: the one unknown-kid line a second must not follow another. */
	test_jwks_log(all);
	test_rfc8037();
	test_rfc7515();
	test_algorithms(all, ed_only, hs_only);
	test_times(all);
	test_issuer_audience(all);
	test_subjects(all);
	test_garbage(all);
	test_bearer(all);
	test_mint(all, ed_only);
	test_keys();
	test_demo(all);
	test_jwks();
	check(strcmp(fs_token_strerror(FS_TOKEN_BAD_ALG),
	    "algorithm not accepted") == 0 &&
	    fs_token_strerror(FS_TOKEN__MAX) != NULL,
	    "strerror names every status");

	fs_token_keys_free(all);
	fs_token_keys_free(ed_only);
	fs_token_keys_free(hs_only);
	return failures == 0 ? 0 : 1;
}
