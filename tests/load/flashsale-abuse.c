/*
 * flashsale-abuse: the hostile clients of the abuse test, on loopback only.
 *
 *   flashsale-abuse slow PORT N SECONDS
 *	N connections each send a request's headers one byte a second for
 *	SECONDS, then close (a slowloris).
 *   flashsale-abuse noread PORT N PATH SECONDS
 *	one connection pipelines N GET PATH requests and never reads an
 *	answer for SECONDS, then closes.
 *
 * Prints one line: what it did and how many connections the server closed
 * on it. One file, libc only.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

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

int
main(int argc, char **argv)
{
	int port = argc > 2 ? atoi(argv[2]) : 0;

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
	fprintf(stderr, "usage: flashsale-abuse slow PORT N SECONDS | noread PORT N PATH SECONDS\n");
	return 2;
}
