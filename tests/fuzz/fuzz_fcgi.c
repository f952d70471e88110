/*
 * libFuzzer harness of the FastCGI parameter and body reader (lib/fcgi):
 * the input is the byte stream a web server would send on one connection
 * (records, name-value pairs, stdin), served by fs_fcgi_serve_connection,
 * the workers' own path, to a handler that reads what the endpoints read:
 * the parameters, the request id, the method and a bounded body, and
 * answers with JSON, an error, or the probes. A body the driver hands over
 * is within FS_FCGI_BODY_MAX and NUL-terminated; a refused one is over it.
 * Every input is served: no class is left out (with libfcgi, name-value
 * lengths summing past INT_MAX aborted the process and had to be skipped;
 * the workers now parse with lib/fcgiproto, and LeakSanitizer runs with no
 * suppression).
 */
#include "config.h"

#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include "fcgi.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The web server's side, one thread for every input: sends the whole
 * stream, ends it, and reads the answers back until the handler closes,
 * so that neither side blocks.
 */
static struct {
	sem_t go, done;
	const uint8_t *data;
	size_t size;
	int fd;
} peer;

static void *
web_server(void *arg)
{
	char buf[4096];
	size_t off;
	ssize_t n;

	(void)arg;
	for (;;) {
		while (sem_wait(&peer.go) != 0)
			;
		for (off = 0; off < peer.size &&
		     (n = write(peer.fd, peer.data + off, peer.size - off)) > 0;)
			off += (size_t)n;
		shutdown(peer.fd, SHUT_WR);
		while (read(peer.fd, buf, sizeof(buf)) > 0)
			;
		sem_post(&peer.done);
	}
	return NULL;
}

static void
handle(fs_fcgi *f, void *ctx)
{
	static const char *const names[] = { "DOCUMENT_URI", "QUERY_STRING", "HTTP_AUTHORIZATION",
		"CONTENT_TYPE", "REQUEST_ID", "HTTP_X_EXPIRE_TOKEN", "" };
	const char *body, *v;
	size_t len, sum = 0;

	(void)ctx;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((v = fs_fcgi_param(f, names[i])) != NULL)
			sum += strlen(v);
	if (!fs_fcgi_method_is(f, "POST")) {
		fs_fcgi_error(f, sum % 2 ? FS_ERR_NOT_FOUND : FS_ERR_METHOD_NOT_ALLOWED, NULL,
		    "Allow: POST\r\n");
		return;
	}
	switch (fs_fcgi_read_body(f, &body, &len)) {
	case FS_FCGI_BODY_OK:
		if (len > FS_FCGI_BODY_MAX || body[len] != '\0')
			abort();
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, body, len);
		break;
	case FS_FCGI_BODY_TOO_BIG:
		if (len != 0)
			abort();
		fs_fcgi_error(f, FS_ERR_PAYLOAD_TOO_LARGE, NULL, NULL);
		break;
	default:
		fs_fcgi_error(f, FS_ERR_BAD_REQUEST, NULL, NULL);
		break;
	}
}

/* /readyz: never ready, so the refusal with its detail is written too. */
static int
ready(void *ctx, char *why, size_t whylen)
{
	(void)ctx;
	snprintf(why, whylen, "fuzz\"\\\x01");
	return -1;
}

static const struct fs_fcgi_service service = { "fuzz-fcgi", NULL, NULL, NULL, NULL, handle,
	ready, 0, NULL };

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int started;
	pthread_t tid;
	int sv[2];

	if (!started) {
		fs_log_set_level(FS_LOG_ERROR);
		if (sem_init(&peer.go, 0, 0) != 0 || sem_init(&peer.done, 0, 0) != 0 ||
		    pthread_create(&tid, NULL, web_server, NULL) != 0)
			abort();
		started = 1;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	peer.data = data;
	peer.size = size;
	peer.fd = sv[1];
	sem_post(&peer.go);
	fs_fcgi_serve_connection(&service, NULL, sv[0]);
	while (sem_wait(&peer.done) != 0)
		;
	close(sv[1]);
	return 0;
}
