/*
 * An identity provider's signing keys, fetched as OpenID Connect Discovery
 * 1.0 says (driver): ISSUER/.well-known/openid-configuration, whose
 * "issuer" must be ISSUER exactly (section 4.3), then its "jwks_uri"; the
 * keys that tokens can be verified with (lib/token's rules) replace a JWK
 * Set file by a rename, and only then. Over lib/httpc: https to any host
 * (the certificate verified), http to a numeric IPv4 address or localhost;
 * via names a local proxy that every URL of the issuer's origin is fetched
 * from instead (docs/OPERATING.md).
 */
#ifndef FS_OIDC_H
#define FS_OIDC_H

#include <stddef.h>

#include "httpc.h"

#define FS_OIDC_TIMEOUT_MS	10000	/* each of the two requests */
#define FS_OIDC_DOC_MAX		(256 * 1024)	/* bytes of either document */
#define FS_OIDC_DOC_DEPTH	10	/* nesting of the discovery document */

struct fs_oidc_result {
	size_t kept;				/* keys in the new file */
	int unchanged;				/* the file held these bytes already */
	char jwks_uri[FS_HTTPC_URL_MAX + 1];	/* as the discovery document says */
};

/*
 * Fetches issuer's keys and replaces the file at path with those we can
 * use: written beside it, synced, renamed over it, the directory synced;
 * left alone when it holds the same bytes. With via ("http://A.B.C.D:PORT"),
 * every URL on the issuer's origin (scheme, host and port) is fetched from
 * via instead, the issuer still compared as given. 0 with *res filled, or
 * -1 with the reason in err and the file untouched: the discovery document
 * missing or not JSON, its issuer another, no jwks_uri, a JWK Set that
 * cannot be fetched or holds no key to use, a write that failed.
 */
int fs_oidc_jwks_fetch(const char *issuer, const char *via, const char *path, int timeout_ms,
    struct fs_oidc_result *res, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
