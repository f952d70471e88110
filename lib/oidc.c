#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonread.h"
#include "oidc.h"
#include "token.h"

/* The length of url's origin: scheme://host[:port], up to its path; 0 if none. */
static size_t
oidc_origin_len(const char *url)
{
	const char *p = strstr(url, "://");

	if (p == NULL)
		return 0;
	p += 3;
	return (size_t)(p - url) + strcspn(p, "/?#");
}

/*
 * The URL to fetch for url into out: url itself, or with via, url with the
 * issuer's origin replaced by via (only the issuer's origin is reachable
 * through it). 0, or -1 with err.
 */
static int
oidc_url(const char *url, const char *issuer, const char *via, char *out, size_t outlen,
    char *err, size_t errlen)
{
	size_t o = oidc_origin_len(issuer), vlen;
	int n;

	if (via == NULL)
		n = snprintf(out, outlen, "%s", url);
	else if (o > 0 && strncmp(url, issuer, o) == 0 && (url[o] == '/' || url[o] == '\0')) {
		vlen = strlen(via);
		if (vlen > 0 && via[vlen - 1] == '/')
			vlen--;
		n = snprintf(out, outlen, "%.*s%s", (int)vlen, via, url + o);
	} else {
		snprintf(err, errlen, "%.200s is not on the issuer's origin, the only one --via reaches",
		    url);
		return -1;
	}
	if (n < 0 || (size_t)n >= outlen) {
		snprintf(err, errlen, "URL longer than %zu bytes: %.200s", outlen - 1, url);
		return -1;
	}
	return 0;
}

/* GETs url (through via) into a: a 200 of at most FS_OIDC_DOC_MAX bytes; 0, or -1 with err. */
static int
oidc_get(const char *url, const char *issuer, const char *via, int timeout_ms,
    struct fs_httpc_answer *a, char *err, size_t errlen)
{
	char target[FS_HTTPC_URL_MAX + 1];

	memset(a, 0, sizeof(*a));
	if (oidc_url(url, issuer, via, target, sizeof(target), err, errlen) != 0 ||
	    fs_httpc_request("GET", target, timeout_ms, a, err, errlen) != 0)
		return -1;
	if (a->status != 200 || a->len > FS_OIDC_DOC_MAX) {
		if (a->status != 200)
			snprintf(err, errlen, "%.200s answered %d", target, a->status);
		else
			snprintf(err, errlen, "%.200s answered more than %d bytes", target,
			    FS_OIDC_DOC_MAX);
		fs_httpc_answer_free(a);
		return -1;
	}
	return 0;
}

/* Copies s into out (outlen bytes) with anything but printable ASCII as '?'. */
static const char *
oidc_shown(const char *s, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; s != NULL && s[i] != '\0' && i + 1 < outlen; i++)
		out[i] = s[i] >= ' ' && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
	return out;
}

/*
 * Reads issuer's discovery document and copies its jwks_uri into jwks_uri
 * (len bytes) once its issuer is issuer exactly. 0, or -1 with err.
 */
static int
oidc_discover(const char *issuer, const char *via, int timeout_ms, char *jwks_uri, size_t len,
    char *err, size_t errlen)
{
	char url[FS_HTTPC_URL_MAX + 1], why[256], shown[128];
	struct fs_httpc_answer a;
	json_object *doc = NULL;
	const char *uri;
	size_t ilen = strlen(issuer);
	int n, rc = -1;

	/* Section 4: a terminating "/" of the issuer goes before the path is added. */
	if (ilen > 0 && issuer[ilen - 1] == '/')
		ilen--;
	n = snprintf(url, sizeof(url), "%.*s/.well-known/openid-configuration", (int)ilen, issuer);
	if (n < 0 || (size_t)n >= sizeof(url)) {
		snprintf(err, errlen, "issuer URL too long");
		return -1;
	}
	if (oidc_get(url, issuer, via, timeout_ms, &a, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "discovery document: %s", why);
		return -1;
	}
	if ((doc = fs_jsonread_object(a.body, a.len, FS_OIDC_DOC_DEPTH, why, sizeof(why))) == NULL)
		snprintf(err, errlen, "discovery document %s: not one JSON object: %s", url, why);
	else if (!fs_jsonread_string_is(doc, "issuer", issuer))
		snprintf(err, errlen, "discovery document %s: its issuer is \"%s\", not \"%s\"", url,
		    oidc_shown(fs_jsonread_string(doc, "issuer", 1024), shown, sizeof(shown)), issuer);
	else if ((uri = fs_jsonread_string(doc, "jwks_uri", len - 1)) == NULL)
		snprintf(err, errlen, "discovery document %s: no jwks_uri (of at most %zu bytes)", url,
		    len - 1);
	else {
		snprintf(jwks_uri, len, "%s", uri);
		rc = 0;
	}
	json_object_put(doc);
	fs_httpc_answer_free(&a);
	return rc;
}

/* Whether the file at path holds exactly the len bytes at text. */
static int
oidc_same(const char *path, const char *text, size_t len)
{
	char *buf = malloc(len + 1);
	FILE *f = fopen(path, "rb");
	int same = 0;

	if (buf != NULL && f != NULL)
		same = fread(buf, 1, len + 1, f) == len && memcmp(buf, text, len) == 0;
	if (f != NULL)
		fclose(f);
	free(buf);
	return same;
}

/* Writes len bytes at text to fd; 0 or -1. */
static int
oidc_write_all(int fd, const char *text, size_t len)
{
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, text, len)) < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Syncs the directory of path, so that a rename in it survives a crash. */
static void
oidc_sync_dir(const char *path)
{
	char dir[4096], *slash;
	int fd;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) == NULL)
		snprintf(dir, sizeof(dir), ".");
	else
		slash[slash == dir ? 1 : 0] = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		(void)fsync(fd);
		close(fd);
	}
}

/*
 * Replaces the file at path with len bytes at text (public keys: mode
 * 0644) by a file beside it, synced and renamed over it; *unchanged when
 * it held them already. 0, or -1 with err and path untouched.
 */
static int
oidc_replace(const char *path, const char *text, size_t len, int *unchanged, char *err,
    size_t errlen)
{
	char tmp[4096];
	int fd, n;

	if ((*unchanged = oidc_same(path, text, len)))
		return 0;
	n = snprintf(tmp, sizeof(tmp), "%s.fetch.XXXXXX", path);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		snprintf(err, errlen, "path too long: %.200s", path);
		return -1;
	}
	if ((fd = mkstemp(tmp)) == -1) {
		snprintf(err, errlen, "cannot create a file beside %s: %s", path, strerror(errno));
		return -1;
	}
	if (fchmod(fd, 0644) != 0 || oidc_write_all(fd, text, len) != 0 || fsync(fd) != 0) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (close(fd) != 0 || rename(tmp, path) != 0) {
		snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	oidc_sync_dir(path);
	return 0;
}

int
fs_oidc_jwks_fetch(const char *issuer, const char *via, const char *path, int timeout_ms,
    struct fs_oidc_result *res, char *err, size_t errlen)
{
	struct fs_httpc_answer a;
	char why[256], *text = NULL;
	int rc = -1;

	memset(res, 0, sizeof(*res));
	if (oidc_discover(issuer, via, timeout_ms, res->jwks_uri, sizeof(res->jwks_uri), err,
	    errlen) != 0)
		return -1;
	if (oidc_get(res->jwks_uri, issuer, via, timeout_ms, &a, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "JWK Set: %s", why);
		return -1;
	}
	if (fs_token_jwks_usable(a.body, a.len, res->jwks_uri, &text, &res->kept, why,
	    sizeof(why)) != 0)
		snprintf(err, errlen, "JWK Set %s: %s", res->jwks_uri, why);
	else if (oidc_replace(path, text, strlen(text), &res->unchanged, err, errlen) == 0)
		rc = 0;
	if (rc != 0)
		res->kept = 0;
	free(text);
	fs_httpc_answer_free(&a);
	return rc;
}
