/*
 * flashsale-abuse: the hostile clients of the abuse test, on loopback only.
 *
 *   flashsale-abuse slow PORT N SECONDS
 *	N connections each send a request's headers one byte a second for
 *	SECONDS, then close (a slowloris).
 *   flashsale-abuse noread PORT N PATH SECONDS
 *	one connection pipelines N GET PATH requests and never reads an
 *	answer for SECONDS, then closes.
 *   flashsale-abuse fcgi SOCKET
 *	a hostile FastCGI peer on a handler's own unix socket: one connection
 *	sends a name-value pair whose lengths sum past INT_MAX (libfcgi 2.4.2
 *	aborted the process on it), another an unknown management record
 *	(libfcgi leaked on it); says how the handler answered each. Exit 0
 *	when the first connection was closed and the second got
 *	FCGI_UNKNOWN_TYPE.
 *   flashsale-abuse fcgi-half SOCKET SECONDS
 *	a FastCGI peer that sends half a record (a BEGIN_REQUEST's header and
 *	half its body) and waits, at most SECONDS, for the handler to close
 *	the connection; says after how long. Exit 0 when it was closed.
 *
 * Prints one line: what it did and how many connections the server closed
 * on it. One file, libc only.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CONNS_MAX 256
#define SECONDS_MAX 120
#define REQUESTS_MAX 100000

static int
dial(int port)
{
	struct sockaddr_in a = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_family = AF_INET;
	a.sin_port = htons((unsigned short)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int
slow(int port, int n, int seconds)
{
	static const char head[] = "GET /api/time HTTP/1.1\r\nHost: x\r\nX-Slow: ";
	int fd[CONNS_MAX], closed = 0;
	struct timespec second = { 1, 0 };

	for (int i = 0; i < n; i++)
		if ((fd[i] = dial(port)) < 0)
			return fprintf(stderr, "flashsale-abuse: cannot connect\n"), 1;
	for (int s = 0; s < seconds; s++) {
		for (int i = 0; i < n; i++) {
			char c = s < (int)sizeof(head) - 1 ? head[s] : 'a';

			if (fd[i] >= 0 && send(fd[i], &c, 1, MSG_NOSIGNAL) != 1) {
				close(fd[i]);
				fd[i] = -1;
				closed++;
			}
		}
		nanosleep(&second, NULL); /* the pace of the attack, not a wait for readiness */
	}
	for (int i = 0; i < n; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	printf("slow: %d connections, a byte a second for %d s; the server closed %d\n", n, seconds,
	    closed);
	return 0;
}

static int
noread(int port, int n, const char *path, int seconds)
{
	char req[512];
	long sent = 0;
	int fd = dial(port), len;
	struct timespec second = { 1, 0 };

	if (fd < 0)
		return fprintf(stderr, "flashsale-abuse: cannot connect\n"), 1;
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
	if (len < 0 || (size_t)len >= sizeof(req))
		return 1;
	/* Non-blocking sends: stop when the server stops taking them. */
	for (int i = 0; i < n; i++) {
		ssize_t w = send(fd, req, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w != len)
			break;
		sent++;
	}
	for (int s = 0; s < seconds; s++)
		nanosleep(&second, NULL);
	close(fd);
	printf("noread: %ld requests pipelined, no answer read for %d s\n", sent, seconds);
	return 0;
}

/* A connection to a unix socket whose reads give up after 10 s; -1 when it cannot. */
static int
dial_unix(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval limit = { 10, 0 };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path) || (fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return -1;
	memcpy(a.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A FastCGI record header: version 1, type, request id, content length, no padding. */
static void
fcgi_head(unsigned char *h, int type, int id, size_t len)
{
	h[0] = 1;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(len >> 8);
	h[5] = (unsigned char)len;
	h[6] = h[7] = 0;
}

static int
fcgi(const char *path)
{
	/* BEGIN_REQUEST (responder, no keep-conn), then a PARAMS record of one pair */
	unsigned char pair_past[16 + 8 + 24] = { 0 }, unknown[8], answer[16], b[512];
	const char *first, *second;
	int fd, closed = 0, typed = 0;
	ssize_t n;

	fcgi_head(pair_past, 1, 1, 8);
	pair_past[9] = 1; /* FCGI_RESPONDER */
	fcgi_head(pair_past + 16, 4, 1, 24);
	/* name and value lengths 0x7ffffff0 each (4-byte form), then some name */
	memcpy(pair_past + 24, "\xff\xff\xff\xf0\xff\xff\xff\xf0NNNNNNNNNNNNNNNN", 24);
	if ((fd = dial_unix(path)) < 0)
		return fprintf(stderr, "flashsale-abuse: cannot connect to %s\n", path), 1;
	if (send(fd, pair_past, sizeof(pair_past), MSG_NOSIGNAL) == (ssize_t)sizeof(pair_past))
		shutdown(fd, SHUT_WR);
	while ((n = read(fd, b, sizeof(b))) > 0)
		;
	closed = n == 0 || (n < 0 && errno == ECONNRESET);
	close(fd);
	/* An unknown management record (type 11, request id 0): answered FCGI_UNKNOWN_TYPE. */
	fcgi_head(unknown, 11, 0, 0);
	if ((fd = dial_unix(path)) < 0)
		return fprintf(stderr, "flashsale-abuse: cannot connect to %s\n", path), 1;
	if (send(fd, unknown, sizeof(unknown), MSG_NOSIGNAL) == (ssize_t)sizeof(unknown)) {
		size_t have = 0;

		while (have < sizeof(answer) && (n = read(fd, answer + have, sizeof(answer) - have)) > 0)
			have += (size_t)n;
		typed = have == sizeof(answer) && answer[1] == 11 && answer[8] == 11;
	}
	close(fd);
	first = closed ? "connection closed" : "connection left open";
	second = typed ? "FCGI_UNKNOWN_TYPE" : "no FCGI_UNKNOWN_TYPE";
	printf("fcgi: overflowing pair: %s; unknown management record: %s\n", first, second);
	return closed && typed ? 0 : 1;
}

/* Half a record, then silence: how long until the handler closes the connection. */
static int
fcgi_half(const char *path, int seconds)
{
	unsigned char half[12] = { 0 }, b[512];
	struct timespec t0, t1;
	long ms;
	ssize_t n = -1;
	int fd;

	fcgi_head(half, 1, 1, 8);
	half[9] = 1; /* FCGI_RESPONDER; the rest of the body never comes */
	if ((fd = dial_unix(path)) < 0)
		return fprintf(stderr, "flashsale-abuse: cannot connect to %s\n", path), 1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	t1 = t0;
	if (send(fd, half, sizeof(half), MSG_NOSIGNAL) == (ssize_t)sizeof(half)) {
		/* dial_unix's receive timeout (10 s) wakes the read to look at the clock. */
		while (t1.tv_sec - t0.tv_sec < seconds) {
			n = read(fd, b, sizeof(b));
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				break;
		}
	}
	close(fd);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	if (n == 0 || (n < 0 && errno == ECONNRESET)) {
		printf("fcgi-half: closed after %ld ms\n", ms);
		return 0;
	}
	printf("fcgi-half: still open after %d s\n", seconds);
	return 1;
}

int
main(int argc, char **argv)
{
	int port = argc > 2 ? atoi(argv[2]) : 0;

	if (argc == 3 && strcmp(argv[1], "fcgi") == 0)
		return fcgi(argv[2]);
	if (argc == 4 && strcmp(argv[1], "fcgi-half") == 0) {
		int s = atoi(argv[3]);

		if (s < 1 || s > SECONDS_MAX)
			goto usage;
		return fcgi_half(argv[2], s);
	}
	if (port < 1 || port > 65535)
		goto usage;
	if (argc == 5 && strcmp(argv[1], "slow") == 0) {
		int n = atoi(argv[3]), s = atoi(argv[4]);

		if (n < 1 || n > CONNS_MAX || s < 1 || s > SECONDS_MAX)
			goto usage;
		return slow(port, n, s);
	}
	if (argc == 6 && strcmp(argv[1], "noread") == 0) {
		int n = atoi(argv[3]), s = atoi(argv[5]);

		if (n < 1 || n > REQUESTS_MAX || s < 1 || s > SECONDS_MAX || argv[4][0] != '/')
			goto usage;
		return noread(port, n, argv[4], s);
	}
usage:
	fprintf(stderr, "usage: flashsale-abuse slow PORT N SECONDS | noread PORT N PATH SECONDS | "
			"fcgi SOCKET | fcgi-half SOCKET SECONDS\n");
	return 2;
}
