/*
 * Unit test of lib/push against a fake publisher forked on a loopback port
 * (and one on a unix socket):
 * URL checks, pipelining on one kept-alive connection, servers that close,
 * fail, stay silent or drop an idle connection, bounded input, and the
 * background senders on connections of their own.
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "push.h"
#include "expect.h"

/*
 * MODE_MANY: as MODE_KEEP, each connection served at once by a child of its own.
 * MODE_FULL: as nginx when nchan's memory is full: the second request of a
 * connection is answered 500 with Connection: close, and the requests
 * pipelined behind it are never read.
 * MODE_STATUS: as nginx's nchan_stub_status, with Connection: close.
 */
enum mode { MODE_KEEP, MODE_CLOSE, MODE_ERROR, MODE_SILENT, MODE_DROP_IDLE, MODE_MANY, MODE_FULL,
	MODE_STATUS };

static char log_path[64];

/* A connection's unread bytes: pipelined requests arrive together. */
struct conn {
	char buf[65536];
	size_t have;
};

/* Reads one request; appends "<conn> <request line>|<body>" to the log. 0, or -1 at EOF. */
static int
serve_one(int fd, struct conn *c, int conn, FILE *log)
{
	char *eoh, *cl, *eol;
	size_t need, head;

	for (;;) {
		ssize_t n;

		c->buf[c->have] = '\0';
		if ((eoh = strstr(c->buf, "\r\n\r\n")) != NULL)
			break;
		if (c->have == sizeof(c->buf) - 1 ||
		    (n = read(fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have)) <= 0)
			return -1;
		c->have += (size_t)n;
	}
	head = (size_t)(eoh + 4 - c->buf);
	*eoh = '\0';
	cl = strstr(c->buf, "Content-Length: ");
	need = head + (cl != NULL ? strtoul(cl + 16, NULL, 10) : 0);
	while (c->have < need) {
		ssize_t n = read(fd, c->buf + c->have, sizeof(c->buf) - 1 - c->have);

		if (n <= 0)
			return -1;
		c->have += (size_t)n;
	}
	eol = strstr(c->buf, "\r\n");
	fprintf(log, "%d %.*s|%.*s\n", conn, (int)(eol - c->buf), c->buf, (int)(need - head),
	    c->buf + head);
	fflush(log);
	memmove(c->buf, c->buf + need, c->have - need);
	c->have -= need;
	return 0;
}

/* The fake publisher: serves until killed. */
static void
server(int lfd, enum mode mode)
{
	static const char ok[] = "HTTP/1.1 201 Created\r\nContent-Length: 18\r\n\r\nqueued messages: 1";
	static const char close_ok[] = "HTTP/1.1 202 Accepted\r\nConnection: close\r\n\r\n";
	static const char error[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
	static const char full[] = "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n"
				   "Connection: close\r\n\r\n";
	static const char status[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n"
				     "total published messages: 9\nstored messages: 7\n"
				     "shared memory used: 20K\nshared memory limit: 2048K\nchannels: 7\n"
				     "nchan version: 1.3.6\n";
	static struct conn c;
	FILE *log = fopen(log_path, "w");
	int conn = 0, child = 0;

	if (log == NULL)
		_exit(1);
	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0)
			continue;
		conn++;
		c.have = 0;
		if (mode == MODE_MANY) {
			if (fork() != 0) {
				close(fd);
				continue;
			}
			/* The child serves this one connection (stop() kills the group). */
			child = 1;
			mode = MODE_KEEP;
		}
		for (int nth = 1; serve_one(fd, &c, conn, log) == 0; nth++) {
			if (mode == MODE_SILENT)
				continue;
			if (mode == MODE_STATUS) {
				if (write(fd, status, sizeof(status) - 1) < 0)
					break;
				break;
			}
			if (mode == MODE_FULL) {
				if (nth == 2) {
					if (write(fd, full, sizeof(full) - 1) < 0)
						break;
					break;
				}
				if (write(fd, ok, sizeof(ok) - 1) < 0)
					break;
				continue;
			}
			if (mode == MODE_ERROR && write(fd, error, sizeof(error) - 1) < 0)
				break;
			if (mode == MODE_CLOSE) {
				if (write(fd, close_ok, sizeof(close_ok) - 1) < 0)
					break;
				break;
			}
			if ((mode == MODE_KEEP || mode == MODE_DROP_IDLE) &&
			    write(fd, ok, sizeof(ok) - 1) < 0)
				break;
			if (mode == MODE_DROP_IDLE) {
				/* Answered; then the idle connection is closed, as a server's timeout does. */
				usleep(50000);
				break;
			}
		}
		close(fd);
		if (child)
			_exit(0);
	}
}

/* Starts a fake publisher; returns its pid and writes its base URL. */
static pid_t
start(enum mode mode, char url[64])
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	pid_t pid;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) != 0)
		abort();
	snprintf(url, 64, "http://127.0.0.1:%d/pub/", ntohs(sa.sin_port));
	if ((pid = fork()) == 0) {
		setpgid(0, 0);
		server(lfd, mode);
	}
	close(lfd);
	return pid;
}

/* The same fake publisher on a unix socket; writes its "unix:" base URL. */
static pid_t
start_unix(enum mode mode, char url[128])
{
	struct sockaddr_un sa;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	pid_t pid;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s.sock", log_path);
	unlink(sa.sun_path);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 16) != 0)
		abort();
	snprintf(url, 128, "unix:%s:/pub/", sa.sun_path);
	if ((pid = fork()) == 0)
		server(lfd, mode);
	close(lfd);
	return pid;
}

static void
stop(pid_t pid)
{
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Lines in the server's log, and how many distinct connections they came on. */
static int
logged(int *conns)
{
	char line[4096];
	FILE *fp = fopen(log_path, "r");
	int n = 0, last = 0;

	*conns = 0;
	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		int c = atoi(line);

		n++;
		if (c != last)
			(*conns)++;
		last = c;
	}
	fclose(fp);
	return n;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
test_urls(void)
{
	char err[128], big[400];
	fs_push *p;

	p = fs_push_new("", err, sizeof(err));
	check(p != NULL && !p->enabled && fs_push_publish(p, "abc", "{}", 2) == 0,
	    "an empty URL publishes nothing, successfully");
	fs_push_free(p);
	check(fs_push_new("ftp://127.0.0.1:1/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL must start with http:// or unix:") == 0,
	    "refuses a non-http URL");
	check(fs_push_new("http://127.0.0.1/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL needs an explicit port") == 0,
	    "refuses a URL without port");
	check(fs_push_new("http://:80/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL host too long or empty") == 0,
	    "refuses an empty host");
	check(fs_push_new("http://127.0.0.1:99999/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL port is not a number from 1 to 65535") == 0,
	    "refuses port 99999");
	check(fs_push_new("http://127.0.0.1:80x/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL port is not a number from 1 to 65535") == 0,
	    "refuses a port followed by other than a path");
	check(fs_push_new("http://localhost:80/pub", err, sizeof(err)) == NULL &&
		strcmp(err, "push URL host must be a numeric IPv4 address") == 0,
	    "refuses a host name");
	check(fs_push_new("unix:relative.sock:/pub", err, sizeof(err)) == NULL &&
		strncmp(err, "push URL: want unix:/SOCKET:/PATH", 33) == 0,
	    "refuses a relative socket path");
	check(fs_push_new("unix:/run/x.sock", err, sizeof(err)) == NULL &&
		strncmp(err, "push URL: want unix:/SOCKET:/PATH", 33) == 0,
	    "refuses a socket without a URL path");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "http://127.0.0.1:80/", 20);
	check(fs_push_new(big, err, sizeof(err)) == NULL && strcmp(err, "push URL too long") == 0,
	    "refuses an overlong URL");
	big[20 + FS_PUSH_URL_MAX] = '\0';
	check(fs_push_new(big, err, sizeof(err)) == NULL && strcmp(err, "push URL path too long") == 0,
	    "refuses an overlong path");
	p = fs_push_new("http://127.0.0.1:80/pub/", err, sizeof(err));
	check(p != NULL && p->enabled && strcmp(p->host, "127.0.0.1") == 0 && p->port == 80 &&
		strcmp(p->path, "/pub") == 0,
	    "an http URL: address, port and the path without its final slash");
	fs_push_free(p);
	p = fs_push_new("unix:/run/x.sock:/pub", err, sizeof(err));
	check(p != NULL && p->enabled && strcmp(p->sock, "/run/x.sock") == 0 &&
		strcmp(p->host, "localhost") == 0 && strcmp(p->path, "/pub") == 0,
	    "a unix URL: the socket, Host localhost and the path");
	fs_push_free(p);
	fs_push_free(NULL);
}

static void
test_pipelining(void)
{
	struct fs_push_msg msgs[100];
	char url[64], chan[100][40], body[100][64], err[128], line[4096];
	fs_push *p;
	pid_t pid = start(MODE_KEEP, url);
	int conns, n, right = 1;
	FILE *fp;

	for (int i = 0; i < 100; i++) {
		snprintf(chan[i], sizeof(chan[i]), "order-%03d", i);
		snprintf(body[i], sizeof(body[i]), "{\"n\":%d}", i);
		msgs[i].channel = chan[i];
		msgs[i].body = body[i];
		msgs[i].len = strlen(body[i]);
	}
	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && fs_push_publish_many(p, msgs, 100) == 0, "100 messages published");
	check(fs_push_publish(p, "one-more", "{}", 2) == 0, "and one more on the same connection");
	n = logged(&conns);
	check(n == 101 && conns == 1, "the publisher got 101 requests on one connection");
	if ((fp = fopen(log_path, "r")) != NULL) {
		for (int i = 0; i < 100 && fgets(line, sizeof(line), fp) != NULL; i++) {
			char want[200];

			snprintf(want, sizeof(want), "1 POST /pub/%s HTTP/1.1|%s\n", chan[i],
			    body[i]);
			right &= strcmp(line, want) == 0;
		}
		fclose(fp);
	}
	check(right, "each request: POST <base>/<channel> with its body, in order");
	check(fs_push_publish(p, "../etc", "{}", 2) == -1,
	    "refuses a channel with other characters");
	{
		char huge[FS_PUSH_BODY_MAX + 1];

		memset(huge, 'x', sizeof(huge));
		check(fs_push_publish(p, "abc", huge, sizeof(huge)) == -1 &&
			strstr(p->errstr, "too big"),
		    "refuses a body over FS_PUSH_BODY_MAX");
	}
	fs_push_free(p);
	stop(pid);
}

static void
test_servers(void)
{
	char url[64], err[128];
	uint64_t refused, failed;
	fs_push *p;
	pid_t pid;
	int conns;
	double t;

	pid = start(MODE_CLOSE, url);
	p = fs_push_new(url, err, sizeof(err));
	for (int i = 0; i < 5; i++)
		check(fs_push_publish(p, "abc", "{}", 2) == 0,
		    "a server that closes after each answer");
	check(logged(&conns) == 5 && conns == 5, "five requests on five connections");
	fs_push_free(p);
	stop(pid);

	pid = start(MODE_DROP_IDLE, url);
	p = fs_push_new(url, err, sizeof(err));
	check(fs_push_publish(p, "abc", "{}", 2) == 0, "first message on a fresh connection");
	usleep(200000);
	check(fs_push_publish(p, "abc", "{}", 2) == 0,
	    "after the server dropped the idle connection, a new one");
	check(logged(&conns) == 2 && conns == 2,
	    "two requests, two connections, nothing sent twice");
	fs_push_free(p);
	stop(pid);

	pid = start(MODE_ERROR, url);
	p = fs_push_new(url, err, sizeof(err));
	refused = fs_metrics_value(FS_M_PUSH_REFUSED);
	failed = fs_metrics_value(FS_M_PUSH_FAILED);
	check(fs_push_publish(p, "abc", "{}", 2) == -1 && strstr(p->errstr, "500") != NULL,
	    "a 500 answer is a failure that says 500");
	/* Issue 36: a full nchan answers 507 or 500 to each publish; counted, never a log line. */
	check(fs_metrics_value(FS_M_PUSH_REFUSED) == refused + 1 &&
		fs_metrics_value(FS_M_PUSH_FAILED) == failed,
	    "an answered refusal counts as refused, not failed");
	fs_push_free(p);
	stop(pid);

	/*
	 * Issue 36: a full nchan answers 500 and closes; what was pipelined
	 * behind it was never read, so it goes again on a new connection
	 * (it was counted lost before).
	 */
	pid = start(MODE_FULL, url);
	p = fs_push_new(url, err, sizeof(err));
	{
		struct fs_push_msg four[4] = { { "a", "{}", 2 }, { "b", "{}", 2 }, { "c", "{}", 2 },
			{ "d", "{}", 2 } };

		refused = fs_metrics_value(FS_M_PUSH_REFUSED);
		failed = fs_metrics_value(FS_M_PUSH_FAILED);
		check(fs_push_publish_many(p, four, 4) == 2, "a closing refusal mid-pipeline: 2 of 4 not published");
		check(fs_metrics_value(FS_M_PUSH_REFUSED) == refused + 2 &&
			fs_metrics_value(FS_M_PUSH_FAILED) == failed,
		    "the two refused are counted refused; none is lost unanswered");
		check(logged(&conns) == 4 && conns == 2,
		    "the requests behind a closing answer went again on a new connection");
	}
	fs_push_free(p);
	stop(pid);

	pid = start(MODE_SILENT, url);
	p = fs_push_new(url, err, sizeof(err));
	t = now();
	refused = fs_metrics_value(FS_M_PUSH_REFUSED);
	failed = fs_metrics_value(FS_M_PUSH_FAILED);
	check(fs_push_publish(p, "abc", "{}", 2) == -1, "a silent server is a failure");
	check(fs_metrics_value(FS_M_PUSH_REFUSED) == refused &&
		fs_metrics_value(FS_M_PUSH_FAILED) == failed + 1,
	    "no answer counts as failed, not refused");
	check(now() - t < 1.0, "which costs less than a second");
	fs_push_free(p);
	stop(pid);

	/* The port of a server that is gone: nothing listens there now. */
	p = fs_push_new(url, err, sizeof(err));
	check(fs_push_publish(p, "abc", "{}", 2) == -1, "no server: a failure, at once");
	fs_push_free(p);
}

/* Two origin hosts: every message goes to each; a dead one costs only its own. */
static void
test_two_publishers(void)
{
	char live[64], dead[64], both[160], err[128];
	fs_push *p;
	pid_t pid;
	int conns;

	pid = start(MODE_KEEP, dead);
	stop(pid);
	pid = start(MODE_KEEP, live);
	snprintf(both, sizeof(both), "%s  %s", dead, live);
	p = fs_push_new(both, err, sizeof(err));
	check(p != NULL && p->next != NULL && p->next->next == NULL, "two URLs, two publishers");
	check(p != NULL && fs_push_publish(p, "abc", "{}", 2) == -1,
	    "a message that one publisher missed is reported failed");
	check(logged(&conns) == 1, "and the live publisher got it all the same");
	fs_push_free(p);
	stop(pid);
	check(fs_push_new("http://127.0.0.1:1/a http://127.0.0.1:2/b ftp://x", err,
		  sizeof(err)) == NULL,
	    "refuses a list with one bad URL");
}

/* The publisher on a unix socket: same requests, no TCP port at all. */
static void
test_unix(void)
{
	char url[128], err[128], line[4096] = "";
	fs_push *p;
	pid_t pid = start_unix(MODE_KEEP, url);
	int conns;
	FILE *fp;

	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && p->sock[0] == '/', "a unix: URL names the socket");
	check(p != NULL && fs_push_publish(p, "abc", "{\"s\":1}", 7) == 0 &&
		fs_push_publish(p, "def", "{}", 2) == 0,
	    "two messages published over the unix socket");
	check(logged(&conns) == 2 && conns == 1, "on one kept-alive connection");
	if ((fp = fopen(log_path, "r")) != NULL) {
		if (fgets(line, sizeof(line), fp) == NULL)
			line[0] = '\0';
		fclose(fp);
	}
	check(strcmp(line, "1 POST /pub/abc HTTP/1.1|{\"s\":1}\n") == 0,
	    "POST <path>/<channel> with its body");
	fs_push_free(p);
	stop(pid);
	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && fs_push_publish(p, "abc", "{}", 2) == -1,
	    "no server on the socket: a failure, at once");
	fs_push_free(p);
	snprintf(line, sizeof(line), "%s.sock", log_path);
	unlink(line);
}

/* fs_push_start/fs_push_finish: a batch shared among the lanes, each on its connection. */
static void
test_background(void)
{
	enum { N = 200 };
	struct fs_push_msg msgs[N];
	char url[64], chan[N][40], body[N][64], err[128], line[4096];
	int seen[N] = { 0 }, conns = 0, right = 1, n = 0;
	fs_push *p;
	pid_t pid = start(MODE_MANY, url);
	FILE *fp;

	for (int i = 0; i < N; i++) {
		snprintf(chan[i], sizeof(chan[i]), "bg-%03d", i);
		snprintf(body[i], sizeof(body[i]), "{\"n\":%d}", i);
		msgs[i].channel = chan[i];
		msgs[i].body = body[i];
		msgs[i].len = strlen(body[i]);
	}
	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && fs_push_finish(p) == 0, "nothing started: nothing failed");
	fs_push_start(p, msgs, N);
	/* The batch was copied: the caller's buffers may change at once. */
	memset(body, 'z', sizeof(body));
	check(fs_push_finish(p) == 0, "200 messages published in the background");
	if ((fp = fopen(log_path, "r")) != NULL) {
		int last_conn = 0;

		while (fgets(line, sizeof(line), fp) != NULL) {
			int c, i;

			n++;
			if (sscanf(line, "%d POST /pub/bg-%d HTTP/1.1|", &c, &i) != 2 || i < 0 || i >= N) {
				right = 0;
				continue;
			}
			seen[i]++;
			if (c > last_conn)
				last_conn = c;
			snprintf(err, sizeof(err), "{\"n\":%d}\n", i);
			right &= strcmp(strchr(line, '|') + 1, err) == 0;
		}
		conns = last_conn;
		fclose(fp);
	}
	for (int i = 0; i < N; i++)
		right &= seen[i] == 1;
	check(n == N && right, "each message once, with its own body");
	check(conns == FS_PUSH_LANES, "on FS_PUSH_LANES connections");
	fs_push_start(p, msgs, N);
	check(fs_push_finish(p) == 0 && logged(&conns) == 2 * N,
	    "a second batch: all published again");
	{
		int last_conn = 0;

		if ((fp = fopen(log_path, "r")) != NULL) {
			while (fgets(line, sizeof(line), fp) != NULL) {
				int c = atoi(line);

				last_conn = c > last_conn ? c : last_conn;
			}
			fclose(fp);
		}
		check(last_conn == 2 * FS_PUSH_LANES - 1,
		    "the first lane kept its connection, the others opened new ones");
	}
	fs_push_start(p, msgs, 3);
	fs_push_start(p, msgs + 3, 2);
	check(fs_push_finish(p) == 0 && fs_push_finish(p) == 0,
	    "a start finishes the batch before it; a second finish finds none");
	fs_push_free(p);
	stop(pid);

	pid = start(MODE_ERROR, url);
	p = fs_push_new(url, err, sizeof(err));
	fs_push_start(p, msgs, 40);
	check(fs_push_finish(p) == 40 && p->errstr[0] != '\0', "failures are counted, with a reason");
	fs_push_free(p);
	stop(pid);

	p = fs_push_new("", err, sizeof(err));
	fs_push_start(p, msgs, 10);
	check(fs_push_finish(p) == 0, "publishing off: nothing fails");
	fs_push_free(p);
}

/* How full a publisher's memory is: nchan's status text read, a wrong answer refused. */
static void
test_memory(void)
{
	char url[128], where[128], err[128];
	struct fs_push_memory m = { -1, -1, -1 };
	fs_push *p;
	int conns = 0;
	pid_t pid = start_unix(MODE_STATUS, url);

	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && fs_push_memory_of(p, &m) == 0 && m.used == 20 * 1024 &&
		m.limit == 2048 * 1024 && m.stored == 7,
	    "memory: nchan's status read (20K of 2048K used, 7 kept)");
	check(p != NULL && fs_push_memory_of(p, &m) == 0 && logged(&conns) == 2 && conns == 2,
	    "memory: asked again, on a new connection (the server closes each)");
	fs_push_where(p, where, sizeof(where));
	check(strncmp(where, "/tmp/test_push.", 15) == 0, "memory: the publisher is named by its socket");
	fs_push_free(p);
	stop(pid);
	pid = start(MODE_KEEP, url);
	p = fs_push_new(url, err, sizeof(err));
	check(p != NULL && fs_push_memory_of(p, &m) == -1 && p->errstr[0] != '\0',
	    "memory: an answer that is not nchan's status is refused, with a reason");
	fs_push_free(p);
	stop(pid);
	p = fs_push_new("", err, sizeof(err));
	check(p != NULL && fs_push_memory_of(p, &m) == -1, "memory: nothing to ask when publishing is off");
	fs_push_free(p);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	snprintf(log_path, sizeof(log_path), "/tmp/test_push.%ld.log", (long)getpid());
	test_urls();
	test_two_publishers();
	test_pipelining();
	test_servers();
	test_unix();
	test_background();
	test_memory();
	unlink(log_path);
	return failures == 0 ? 0 : 1;
}
