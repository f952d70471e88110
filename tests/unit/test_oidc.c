/*
 * Unit test of lib/oidc against a tiny identity provider in a child process
 * on a loopback port of the kernel's choosing (its discovery document and
 * JWK Set as fixed answers by path): a good fetch replaces the JWK Set file
 * with the keys to use (an oct secret and an encryption key left out) and
 * a repeat leaves it alone; an issuer that is not exactly the one asked
 * for, a jwks_uri nobody answers, a JWK Set without a key to use, a
 * discovery document that is not JSON, a 404 each leave the file as it was
 * and say why; --via reaches an https issuer's origin through a local
 * proxy, and nothing else; an https issuer is fetched directly (issue 34)
 * when its certificate verifies, and refused, the file kept, when it does
 * not.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/ssl.h>
#include <sodium.h>

#include "b64url.h"
#include "oidc.h"
#include "token.h"
#include "expect.h"
#include "test_ca.h"

/* The provider's answers, by path; set before it forks. */
struct route {
	const char *path;
	int status;
	char body[2048];
};
static struct route routes[4];

/* Listens on 127.0.0.1:0; the socket, its port in *port. */
static int
listen_any(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		exit(2);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* Answers one request on c (over ssl if not NULL) from the routes (404 for another path). */
static void
answer(int c, SSL *ssl)
{
	char req[4096], out[4096], path[512] = "";
	size_t have = 0, i;
	ssize_t n;
	int status = 404;
	const char *body = "{}";

	while (have < sizeof(req) - 1 &&
	    (n = ssl != NULL ? SSL_read(ssl, req + have, (int)(sizeof(req) - 1 - have))
			     : read(c, req + have, sizeof(req) - 1 - have)) > 0) {
		have += (size_t)n;
		req[have] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	if (sscanf(req, "GET %511s ", path) == 1)
		for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
			if (routes[i].path != NULL && strcmp(routes[i].path, path) == 0) {
				status = routes[i].status;
				body = routes[i].body;
			}
	n = snprintf(out, sizeof(out), "HTTP/1.0 %d X\r\nContent-Type: application/json\r\n\r\n%s",
	    status, body);
	if (ssl != NULL ? SSL_write(ssl, out, (int)n) <= 0 : write(c, out, (size_t)n) < 0)
		_exit(1);
	if (ssl != NULL)
		SSL_shutdown(ssl);
}

/* The provider's TLS context (NULL: plain HTTP); set before it forks. */
static SSL_CTX *provider_tls;

/* The provider: answers at most 8 requests, for at most 10 s, then exits. */
static pid_t
provider(int lfd)
{
	pid_t pid = fork();
	int i, c;

	if (pid == 0) {
		alarm(10);
		for (i = 0; i < 8 && (c = accept(lfd, NULL, NULL)) >= 0; i++) {
			SSL *ssl = provider_tls != NULL ? SSL_new(provider_tls) : NULL;

			if (ssl == NULL || (SSL_set_fd(ssl, c) == 1 && SSL_accept(ssl) == 1))
				answer(c, ssl);
			SSL_free(ssl);
			close(c);
		}
		_exit(0);
	}
	return pid;
}

static char file[256];
static const char old_jwks[] =
    "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"old\",\"k\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}\n";

/* Writes text as the JWK Set file. */
static void
put_file(const char *text)
{
	FILE *f = fopen(file, "w");

	if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0)
		abort();
}

/* Whether the file holds text exactly. */
static int
file_is(const char *text)
{
	char buf[8192];
	FILE *f = fopen(file, "r");
	size_t n;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

/* Runs one fetch of issuer (through via) against the provider's routes; its rc. */
static int
fetch(int lfd, const char *issuer, const char *via, struct fs_oidc_result *res, char *err,
    size_t errlen)
{
	pid_t pid = provider(lfd);
	int rc = fs_oidc_jwks_fetch(issuer, via, file, 3000, res, err, errlen);

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return rc;
}

/* Sets the discovery route of issuer's path to {"issuer":iss,"jwks_uri":uri}. */
static void
discovery(const char *path, const char *iss, const char *uri)
{
	routes[0].path = path;
	routes[0].status = 200;
	snprintf(routes[0].body, sizeof(routes[0].body),
	    "{\"issuer\":\"%s\",\"jwks_uri\":\"%s\",\"response_types_supported\":[\"code\"]}", iss, uri);
}

/* Sets the JWK Set route. */
static void
jwks(const char *path, int status, const char *body)
{
	routes[1].path = path;
	routes[1].status = status;
	snprintf(routes[1].body, sizeof(routes[1].body), "%s", body);
}

/*
 * https://localhost:PORT as the issuer, fetched directly: the provider
 * serves TLS with a certificate of the authority FLASHSALE_HTTPC_CA_FILE
 * names, then one of an unknown authority, which is refused.
 */
static void
test_https(int lfd, int port, const char *dir, const char *good)
{
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *other_key = EVP_EC_gen("P-256"),
		 *key = EVP_EC_gen("P-256");
	X509 *ca, *other, *cert, *stranger;
	struct fs_oidc_result res;
	char issuer[128], uri[192], ca_path[256], err[512];
	int rc;

	if (ca_key == NULL || other_key == NULL || key == NULL)
		exit(2);
	ca = make_cert(ca_key, "flashsale test CA", NULL, NULL, NULL);
	other = make_cert(other_key, "another CA", NULL, NULL, NULL);
	cert = make_cert(key, "localhost", ca, ca_key, "DNS:localhost,IP:127.0.0.1");
	stranger = make_cert(key, "localhost", other, other_key, "DNS:localhost,IP:127.0.0.1");
	snprintf(ca_path, sizeof(ca_path), "%s/ca.crt", dir);
	write_pem(ca, ca_path);
	setenv("FLASHSALE_HTTPC_CA_FILE", ca_path, 1);

	snprintf(issuer, sizeof(issuer), "https://localhost:%d/realms/shop", port);
	snprintf(uri, sizeof(uri), "%s/certs", issuer);
	discovery("/realms/shop/.well-known/openid-configuration", issuer, uri);
	jwks("/realms/shop/certs", 200, good);
	put_file(old_jwks);
	provider_tls = server_ctx(cert, key);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == 0 && res.kept == 1 && strcmp(res.jwks_uri, uri) == 0 && !file_is(old_jwks),
	    "https: an issuer on https://localhost:PORT is fetched directly, its keys replace the file");
	if (rc != 0)
		printf("# %s\n", err);
	SSL_CTX_free(provider_tls);

	put_file(old_jwks);
	provider_tls = server_ctx(stranger, key);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 &&
		strstr(err, "the certificate of localhost is refused: unable to get local issuer certificate") !=
		    NULL &&
		file_is(old_jwks),
	    "https: a certificate from an unknown authority is refused, the file stays");
	if (rc == -1)
		printf("# %s\n", err);
	SSL_CTX_free(provider_tls);
	provider_tls = NULL;

	unsetenv("FLASHSALE_HTTPC_CA_FILE");
	unlink(ca_path);
	X509_free(ca);
	X509_free(other);
	X509_free(cert);
	X509_free(stranger);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_key);
	EVP_PKEY_free(key);
}

int
main(void)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	char dir[] = "/tmp/test_oidc.XXXXXX", issuer[128], uri[192], good[1024], x[64], err[512];
	char https_disc[128];
	struct fs_oidc_result res;
	fs_token_keys *keys;
	int lfd, port, closed_port, rc;

	if (sodium_init() < 0 || mkdtemp(dir) == NULL)
		return 99;
	snprintf(file, sizeof(file), "%s/jwks.json", dir);
	crypto_sign_keypair(pk, sk);
	if (fs_b64url_encode(x, sizeof(x), pk, sizeof(pk), NULL) != FS_B64URL_OK)
		return 99;
	close(listen_any(&closed_port));
	lfd = listen_any(&port);
	snprintf(issuer, sizeof(issuer), "http://127.0.0.1:%d", port);
	snprintf(good, sizeof(good), "{\"keys\":[{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"idp-1\","
	    "\"use\":\"sig\",\"x\":\"%s\",\"x5t\":\"abc\"},"
	    "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"idp-enc\",\"use\":\"enc\",\"x\":\"%s\"},"
	    "{\"kty\":\"oct\",\"kid\":\"idp-secret\",\"k\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}]}",
	    x, x);

	/* The issuer is compared exactly: another, or one with a NUL after it, is refused. */
	put_file(old_jwks);
	snprintf(uri, sizeof(uri), "%s/jwks", issuer);
	discovery("/.well-known/openid-configuration", "http://127.0.0.1:1", uri);
	jwks("/jwks", 200, good);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "its issuer is \"http://127.0.0.1:1\", not") != NULL &&
	    file_is(old_jwks), "an issuer mismatch is refused and the file stays");
	discovery("/.well-known/openid-configuration", "", uri);
	snprintf(routes[0].body, sizeof(routes[0].body), "{\"issuer\":\"%s\\u0000x\",\"jwks_uri\":\"%s\"}",
	    issuer, uri);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "its issuer is") != NULL && file_is(old_jwks),
	    "an issuer with more after a NUL is refused");

	/* jwks_uri unreachable, a 404, no key to use, not JSON. */
	snprintf(uri, sizeof(uri), "http://127.0.0.1:%d/jwks", closed_port);
	discovery("/.well-known/openid-configuration", issuer, uri);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "JWK Set: cannot connect to") != NULL && file_is(old_jwks),
	    "a jwks_uri nobody answers is refused and the file stays");
	snprintf(uri, sizeof(uri), "%s/jwks", issuer);
	discovery("/.well-known/openid-configuration", issuer, uri);
	jwks("/jwks", 404, "{}");
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "answered 404") != NULL && file_is(old_jwks),
	    "a JWK Set answered 404 is refused and the file stays");
	jwks("/jwks", 200, "{\"keys\":[{\"kty\":\"oct\",\"kid\":\"s\",\"k\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"},"
	    "{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"e\",\"x\":\"AA\",\"y\":\"AA\"}]}");
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "no public key to verify with") != NULL && file_is(old_jwks),
	    "a JWK Set with no key to use (a secret, another curve) is refused and the file stays");
	routes[0].status = 200;
	snprintf(routes[0].body, sizeof(routes[0].body), "<html>sign in</html>");
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "not one JSON object") != NULL && file_is(old_jwks),
	    "a discovery document that is not JSON is refused and the file stays");

	/* A good one replaces the file: the signing key only, which then verifies. */
	discovery("/.well-known/openid-configuration", issuer, uri);
	jwks("/jwks", 200, good);
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	keys = fs_token_keys_new();
	check(rc == 0 && res.kept == 1 && !res.unchanged && strcmp(res.jwks_uri, uri) == 0 &&
	    !file_is(old_jwks) && keys != NULL &&
	    fs_token_keys_load_jwks(keys, file, err, sizeof(err)) == 0,
	    "a good JWK Set replaces the file with its one signing key, which loads");
	fs_token_keys_free(keys);
	check(rc == 0 && !file_is(old_jwks) && access(file, R_OK) == 0, "the new file is in place");
	rc = fetch(lfd, issuer, NULL, &res, err, sizeof(err));
	check(rc == 0 && res.unchanged && res.kept == 1, "the same keys again leave the file alone");

	/* Through --via: an https issuer's origin is fetched from a local proxy. */
	put_file(old_jwks);
	snprintf(https_disc, sizeof(https_disc), "/realms/shop/.well-known/openid-configuration");
	discovery(https_disc, "https://idp.example:8443/realms/shop",
	    "https://idp.example:8443/realms/shop/certs");
	jwks("/realms/shop/certs", 200, good);
	rc = fetch(lfd, "https://idp.example:8443/realms/shop", issuer, &res, err, sizeof(err));
	check(rc == 0 && res.kept == 1 && !file_is(old_jwks),
	    "via: an https issuer's documents are fetched through the local proxy");
	put_file(old_jwks);
	discovery(https_disc, "https://idp.example:8443/realms/shop", "https://keys.example/certs");
	rc = fetch(lfd, "https://idp.example:8443/realms/shop", issuer, &res, err, sizeof(err));
	check(rc == -1 && strstr(err, "not on the issuer's origin") != NULL && file_is(old_jwks),
	    "via: a jwks_uri on another origin is refused, the file stays");
	test_https(lfd, port, dir, good);
	close(lfd);
	unlink(file);
	rmdir(dir);
	return failures == 0 ? 0 : 1;
}
