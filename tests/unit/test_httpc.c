/*
 * Unit test of lib/httpc against a one-shot server in a child process on
 * a loopback port of the kernel's choosing: the request's bytes, the
 * answer's status, headers and body, and the refusals (bad URL, a request
 * too big, no server, a server that does not answer in time, an answer
 * that is not HTTP), and localhost as the one host name. Then https
 * (issue 34: an identity provider is https only) against a TLS server in
 * a child process, with a certificate authority made in memory and given
 * by FLASHSALE_HTTPC_CA_FILE: a good certificate is fetched (by name and
 * by address), a certificate for another name and one from an unknown
 * authority are refused with OpenSSL's reason, a server that stalls in the
 * handshake hits the deadline, an answer over the limits is refused, and
 * an answer cut short without close_notify is refused.
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

#include "httpc.h"
#include "expect.h"
#include "test_ca.h"

/* Listens on 127.0.0.1:0; the socket, its port in *port. */
static int
listen_any(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		exit(2);
	*port = ntohs(sa.sin_port);
	return fd;
}

/* A child that accepts one connection, reads the request, sends answer (or stays silent). */
static pid_t
serve_once(int lfd, const char *answer)
{
	pid_t pid = fork();

	if (pid == 0) {
		char req[4096];
		int c = accept(lfd, NULL, NULL);

		if (c >= 0 && read(c, req, sizeof(req)) > 0) {
			if (answer != NULL && write(c, answer, strlen(answer)) < 0)
				_exit(1);
			if (answer == NULL)
				sleep(5);
		}
		_exit(0);
	}
	return pid;
}

/* A child that accepts one connection and answers 200 with the request's bytes as the body. */
static pid_t
echo_once(int lfd)
{
	pid_t pid = fork();

	if (pid == 0) {
		static const char head[] = "HTTP/1.0 200 OK\r\n\r\n";
		char req[8192], *end;
		size_t have = 0;
		ssize_t n;
		long body = -1;
		int c = accept(lfd, NULL, NULL);

		/* Until the head and the Content-Length bytes after it are in. */
		while (c >= 0 && have < sizeof(req) - 1 &&
		    (n = read(c, req + have, sizeof(req) - 1 - have)) > 0) {
			have += (size_t)n;
			req[have] = '\0';
			if ((end = strstr(req, "\r\n\r\n")) != NULL && body < 0 &&
			    strstr(req, "Content-Length: ") != NULL)
				body = strtol(strstr(req, "Content-Length: ") + 16, NULL, 10);
			if (end != NULL && body >= 0 && have >= (size_t)(end + 4 - req) + (size_t)body)
				break;
		}
		if (c < 0 || write(c, head, strlen(head)) < 0 || write(c, req, have) < 0)
			_exit(1);
		_exit(0);
	}
	return pid;
}

/* A request with headers and a body goes out as these bytes exactly; too big, it does not. */
static void
test_send(int lfd, const char *url)
{
	static char big[FS_HTTPC_REQ_BODY_MAX + 2];
	struct fs_httpc_answer a;
	char want[512], err[256];
	pid_t pid = echo_once(lfd);
	int rc;

	rc = fs_httpc_send("POST", url, "Authorization: Bearer k\r\n", "{\"a\":1}", 7, 2000, &a, err,
	    sizeof(err));
	/* Host names the port: an OpenID provider builds its jwks_uri from it. */
	snprintf(want, sizeof(want),
	    "POST /api/x HTTP/1.0\r\nHost: %.*s\r\nUser-Agent: flashsale\r\n"
	    "Connection: close\r\nAuthorization: Bearer k\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
	    (int)strcspn(url + 7, "/"), url + 7);
	check(rc == 0 && a.status == 200 && strcmp(a.body, want) == 0 && a.len == strlen(want),
	    "send: the request line, Host (address and port), the caller's headers, Content-Length, the body");
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);

	memset(big, 'x', sizeof(big) - 1);
	check(fs_httpc_send("POST", url, NULL, big, sizeof(big) - 1, 2000, &a, err, sizeof(err)) ==
		    -1 &&
		strcmp(err, "request headers over 4096 or body over 65536 bytes") == 0,
	    "send: a body over FS_HTTPC_REQ_BODY_MAX is refused before connecting");
	big[FS_HTTPC_REQ_HEAD_MAX + 1] = '\0';
	check(fs_httpc_send("POST", url, big, NULL, 0, 2000, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "request headers over 4096 or body over 65536 bytes") == 0,
	    "send: headers over FS_HTTPC_REQ_HEAD_MAX are refused");
}

/*
 * A child that accepts one TLS connection with ctx, reads the request's
 * head and sends len bytes of answer; close_notify after it unless cut.
 */
static pid_t
tls_serve_once(int lfd, SSL_CTX *ctx, const char *answer, size_t len, int cut)
{
	pid_t pid = fork();

	if (pid == 0) {
		char req[4096];
		size_t have = 0, n;
		int c = accept(lfd, NULL, NULL);
		SSL *ssl = SSL_new(ctx);

		signal(SIGPIPE, SIG_IGN);
		if (c < 0 || ssl == NULL || SSL_set_fd(ssl, c) != 1 || SSL_accept(ssl) != 1)
			_exit(0);
		while (have < sizeof(req) - 1 && SSL_read_ex(ssl, req + have, sizeof(req) - 1 - have, &n) == 1) {
			have += n;
			req[have] = '\0';
			if (strstr(req, "\r\n\r\n") != NULL)
				break;
		}
		if (SSL_write_ex(ssl, answer, len, &n) != 1)
			_exit(1);
		if (!cut)
			SSL_shutdown(ssl);
		_exit(0);
	}
	return pid;
}

static void
test_https(void)
{
	static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nkeys";
	char dir[] = "/tmp/test_httpc.XXXXXX", ca_path[64], url[128], err[512], *big;
	EVP_PKEY *ca_key = EVP_EC_gen("P-256"), *other_ca_key = EVP_EC_gen("P-256"),
		 *key = EVP_EC_gen("P-256");
	X509 *ca, *other_ca, *good, *wrong_name, *unknown;
	SSL_CTX *good_ctx, *wrong_name_ctx, *unknown_ctx;
	struct fs_httpc_answer a;
	size_t biglen = FS_HTTPC_HEAD_MAX + FS_HTTPC_BODY_MAX + 64;
	int lfd, port, rc;
	pid_t pid;

	if (ca_key == NULL || other_ca_key == NULL || key == NULL || mkdtemp(dir) == NULL)
		exit(2);
	ca = make_cert(ca_key, "flashsale test CA", NULL, NULL, NULL);
	other_ca = make_cert(other_ca_key, "another CA", NULL, NULL, NULL);
	good = make_cert(key, "localhost", ca, ca_key, "DNS:localhost,IP:127.0.0.1");
	wrong_name = make_cert(key, "other.example", ca, ca_key, "DNS:other.example");
	unknown = make_cert(key, "localhost", other_ca, other_ca_key, "DNS:localhost,IP:127.0.0.1");
	good_ctx = server_ctx(good, key);
	wrong_name_ctx = server_ctx(wrong_name, key);
	unknown_ctx = server_ctx(unknown, key);
	snprintf(ca_path, sizeof(ca_path), "%s/ca.crt", dir);
	write_pem(ca, ca_path);
	setenv("FLASHSALE_HTTPC_CA_FILE", ca_path, 1);
	lfd = listen_any(&port);

	snprintf(url, sizeof(url), "https://localhost:%d/.well-known/jwks.json", port);
	pid = tls_serve_once(lfd, good_ctx, ok, strlen(ok), 0);
	rc = fs_httpc_request("GET", url, 3000, &a, err, sizeof(err));
	check(rc == 0 && a.status == 200 && strcmp(a.body, "keys") == 0,
	    "https: a certificate for localhost from the configured authority is fetched");
	if (rc != 0)
		printf("# %s\n", err);
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/", port);
	pid = tls_serve_once(lfd, good_ctx, ok, strlen(ok), 0);
	rc = fs_httpc_request("GET", url, 3000, &a, err, sizeof(err));
	check(rc == 0 && a.status == 200 && strcmp(a.body, "keys") == 0,
	    "https: by address, the certificate's IP subjectAltName is checked and fits");
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);

	snprintf(url, sizeof(url), "https://localhost:%d/", port);
	pid = tls_serve_once(lfd, wrong_name_ctx, ok, strlen(ok), 0);
	rc = fs_httpc_request("GET", url, 3000, &a, err, sizeof(err));
	check(rc == -1 && strcmp(err, "the certificate of localhost is refused: hostname mismatch") == 0,
	    "https: a certificate for another name is refused, naming the host and the reason");
	if (rc == -1)
		printf("# %s\n", err);
	waitpid(pid, NULL, 0);

	pid = tls_serve_once(lfd, unknown_ctx, ok, strlen(ok), 0);
	rc = fs_httpc_request("GET", url, 3000, &a, err, sizeof(err));
	check(rc == -1 &&
		strcmp(err, "the certificate of localhost is refused: unable to get local issuer certificate") ==
		    0,
	    "https: a certificate from an unknown authority is refused");
	if (rc == -1)
		printf("# %s\n", err);
	waitpid(pid, NULL, 0);

	/* The server reads the ClientHello and says nothing. */
	pid = serve_once(lfd, NULL);
	check(fs_httpc_request("GET", url, 300, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "timed out in the TLS handshake with localhost") == 0,
	    "https: a server stalling in the handshake hits the deadline");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);

	if ((big = malloc(biglen)) == NULL)
		exit(2);
	memset(big, 'x', biglen);
	memcpy(big, "HTTP/1.0 200 OK\r\n\r\n", 19);
	pid = tls_serve_once(lfd, good_ctx, big, biglen, 0);
	check(fs_httpc_request("GET", url, 5000, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "answer larger than 4202496 bytes") == 0,
	    "https: an answer over the limits is refused");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	free(big);

	/* Closed without close_notify: a Content-Length the body has stands, another does not. */
	pid = tls_serve_once(lfd, good_ctx, ok, strlen(ok), 1);
	rc = fs_httpc_request("GET", url, 3000, &a, err, sizeof(err));
	check(rc == 0 && strcmp(a.body, "keys") == 0,
	    "https: no close_notify, but the whole Content-Length: taken");
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);
	pid = tls_serve_once(lfd, good_ctx, "HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nkeys", 42, 1);
	check(fs_httpc_request("GET", url, 3000, &a, err, sizeof(err)) == -1 &&
		strstr(err, "without TLS close_notify") != NULL,
	    "https: an answer cut short without close_notify is refused");
	waitpid(pid, NULL, 0);

	check(fs_httpc_request("GET", "https://user@localhost/", 300, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "not a URL https://HOST[:PORT]/path: https://user@localhost/") == 0,
	    "https: user info in the URL is refused");
	setenv("FLASHSALE_HTTPC_CA_FILE", "/nonexistent/ca.crt", 1);
	check(fs_httpc_request("GET", url, 300, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "TLS: cannot read the certificate authorities of /nonexistent/ca.crt") == 0,
	    "https: an unreadable CA file is a clear error");
	unsetenv("FLASHSALE_HTTPC_CA_FILE");

	close(lfd);
	unlink(ca_path);
	rmdir(dir);
	SSL_CTX_free(good_ctx);
	SSL_CTX_free(wrong_name_ctx);
	SSL_CTX_free(unknown_ctx);
	X509_free(ca);
	X509_free(other_ca);
	X509_free(good);
	X509_free(wrong_name);
	X509_free(unknown);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(other_ca_key);
	EVP_PKEY_free(key);
}

int
main(void)
{
	struct fs_httpc_answer a;
	char url[128], lurl[128], err[256], v[64];
	int lfd, port, rc;
	pid_t pid;

	lfd = listen_any(&port);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/api/x", port);

	pid = serve_once(lfd, "HTTP/1.1 410 Gone\r\nX-Flashsale-Answered-By: nginx\r\n"
			      "Content-Length: 5\r\n\r\nhello");
	rc = fs_httpc_request("GET", url, 2000, &a, err, sizeof(err));
	check(rc == 0 && a.status == 410, "the status of the answer");
	check(rc == 0 && fs_httpc_header(&a, "x-flashsale-answered-by", v, sizeof(v)) == 1 &&
		strcmp(v, "nginx") == 0,
	    "a header, by its name in any case");
	check(rc == 0 && fs_httpc_header(&a, "Retry-After", v, sizeof(v)) == 0, "a missing header");
	check(rc == 0 && a.len == 5 && strcmp(a.body, "hello") == 0, "the body");
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);

	test_send(lfd, url);

	/* An identity provider on this host may name itself localhost (issue 34). */
	pid = serve_once(lfd, "HTTP/1.0 200 OK\r\n\r\nlo");
	snprintf(lurl, sizeof(lurl), "http://localhost:%d/x", port);
	rc = fs_httpc_request("GET", lurl, 2000, &a, err, sizeof(err));
	check(rc == 0 && a.status == 200 && strcmp(a.body, "lo") == 0,
	    "http://localhost:PORT/ reaches 127.0.0.1");
	fs_httpc_answer_free(&a);
	waitpid(pid, NULL, 0);

	pid = serve_once(lfd, "SSH-2.0-OpenSSH\r\n\r\n");
	check(fs_httpc_request("GET", url, 2000, &a, err, sizeof(err)) == -1 &&
		strncmp(err, "not an HTTP answer from http://127.0.0.1:", 41) == 0,
	    "an answer that is not HTTP is refused");
	waitpid(pid, NULL, 0);

	pid = serve_once(lfd, NULL);
	check(fs_httpc_request("GET", url, 300, &a, err, sizeof(err)) == -1 &&
		strstr(err, "timed out") != NULL,
	    "a silent server times out");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(lfd);

	check(fs_httpc_request("GET", url, 300, &a, err, sizeof(err)) == -1 &&
		strncmp(err, "cannot connect to http://127.0.0.1:", 35) == 0,
	    "no server: refused");
	check(fs_httpc_request("GET", "http://example.com:80/", 300, &a, err, sizeof(err)) == -1 &&
		strcmp(err, "not a URL http://A.B.C.D:PORT/path (or localhost): http://example.com:80/") == 0,
	    "a host name is refused (numeric IPv4 or localhost only)");
	check(fs_httpc_request("GET", "ftp://127.0.0.1:21/", 300, &a, err, sizeof(err)) == -1,
	    "another scheme is refused");
	check(fs_httpc_request("GET", "http://127.0.0.1:99999/", 300, &a, err, sizeof(err)) == -1,
	    "a port out of range is refused");
	test_https();
	return failures == 0 ? 0 : 1;
}
