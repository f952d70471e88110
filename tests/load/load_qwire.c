/*
 * flashsale-load: what the waiting room's journey reads and writes on the
 * wire: members of the server's JSON answers (flat objects of our own
 * making, read by key), its times, and the join's proof of work.
 */
#include "load.h"

#include <sodium.h>

/*
 * JSON members of the server's answers: flat objects of our own making,
 * read by key. 0 found, 1 null, -1 absent or not of that type.
 */
static const char *
ld_json_find(const char *p, size_t len, const char *key)
{
	const char *end = p + len, *q = p;
	size_t klen = strlen(key);

	while ((q = memchr(q, '"', (size_t)(end - q))) != NULL) {
		if ((size_t)(end - q) > klen + 2 && memcmp(q + 1, key, klen) == 0 &&
		    q[klen + 1] == '"') {
			q += klen + 2;
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			if (q < end && *q == ':') {
				q++;
				while (q < end && (*q == ' ' || *q == '\t'))
					q++;
				return q < end ? q : NULL;
			}
			continue;
		}
		q++;
	}
	return NULL;
}

int
ld_json_str(const char *p, size_t len, const char *key, char *out,
    size_t outmax)
{
	const char *v = ld_json_find(p, len, key), *end = p + len, *q;

	if (v == NULL)
		return -1;
	if ((size_t)(end - v) >= 4 && memcmp(v, "null", 4) == 0)
		return 1;
	if (*v != '"')
		return -1;
	for (q = ++v; q < end && *q != '"'; q++)
		if (*q == '\\' || (unsigned char)*q < 0x20)
			return -1;
	if (q == end || (size_t)(q - v) >= outmax)
		return -1;
	memcpy(out, v, (size_t)(q - v));
	out[q - v] = '\0';
	return 0;
}

int
ld_json_int(const char *p, size_t len, const char *key, int64_t *out)
{
	const char *v = ld_json_find(p, len, key), *end = p + len;
	int64_t x = 0;
	int neg = 0, digits = 0;

	if (v == NULL)
		return -1;
	if ((size_t)(end - v) >= 4 && memcmp(v, "null", 4) == 0)
		return 1;
	if (*v == '-') {
		neg = 1;
		v++;
	}
	for (; v < end && *v >= '0' && *v <= '9'; v++, digits++) {
		if (x > (INT64_MAX - (*v - '0')) / 10)
			return -1;
		x = x * 10 + (*v - '0');
	}
	/* A fraction is read as its integer part (rates, multiples). */
	if (digits == 0 || (v < end && *v != ',' && *v != '}' && *v != '.' &&
	    *v != ' ' && *v != '\n'))
		return -1;
	*out = neg ? -x : x;
	return 0;
}

/*
 * A time member: unix milliseconds, or the ISO 8601 UTC form the status
 * document writes ("2026-12-03T07:06:19.009Z"). 0, or -1.
 */
int
ld_json_time_ms(const char *p, size_t len, const char *key, int64_t *ms)
{
	char t[40];
	struct tm tm;
	int y, mo, d, h, mi, sec, milli = 0, n = 0;

	if (ld_json_int(p, len, key, ms) == 0)
		return 0;
	if (ld_json_str(p, len, key, t, sizeof(t)) != 0 ||
	    (sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec,
	    &n) != 6))
		return -1;
	if (t[n] == '.' && sscanf(t + n, ".%3d", &milli) == 1)
		n += 4;
	if (strcmp(t + n, "Z") != 0 || mo < 1 || mo > 12 || milli < 0)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	*ms = (int64_t)timegm(&tm) * 1000 + milli;
	return 0;
}

/*
 * Proof of work: SHA-256("fsq1|<sale>|<sub>|<nonce>") starts with bits
 * zero bits, the nonce in decimal.
 */
int
ld_pow_ok(uint64_t sale, const char *sub, uint32_t nonce, unsigned bits)
{
	unsigned char h[crypto_hash_sha256_BYTES];
	char msg[LD_SUB_MAX + 64];
	int n;
	unsigned i;

	n = snprintf(msg, sizeof(msg), "fsq1|%" PRIu64 "|%s|%" PRIu32, sale,
	    sub, nonce);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return 0;
	crypto_hash_sha256(h, (const unsigned char *)msg, (unsigned long long)n);
	for (i = 0; i < bits; i++)
		if (h[i / 8] & (0x80 >> (i % 8)))
			return 0;
	return 1;
}

int
ld_pow_solve(uint64_t sale, const char *sub, unsigned bits, uint32_t *nonce)
{
	uint32_t x;

	for (x = 0; x < UINT32_MAX; x++)
		if (ld_pow_ok(sale, sub, x, bits)) {
			*nonce = x;
			return 0;
		}
	return -1;
}
