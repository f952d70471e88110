/*
 * deploy/relay/flashsale-relay, the cluster topology's peer relay: bytes
 * flow both ways; a cut silences the connections of its label (open ones
 * and new ones, by route or by source address) without closing them; a
 * heal lets what waited through; on a route whose dialler gives up on a
 * silent peer (/MS), a connection cut for MS is reset; a bad spec is
 * refused. An echo server of its own stands for the node behind the relay.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"

static char relay_bin[512], ctl[256];

/* An echo server on a port the kernel picks; its PID, the port in *port. */
static pid_t
echo_server(int *port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sin);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(lfd, 16) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) != 0)
		return -1;
	*port = ntohs(sin.sin_port);
	if ((pid = fork()) != 0) {
		close(lfd);
		return pid;
	}
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;) {
		int c = accept(lfd, NULL, NULL);

		if (c >= 0 && fork() == 0) {
			char buf[256];
			ssize_t n;

			while ((n = read(c, buf, sizeof(buf))) > 0)
				if (write(c, buf, (size_t)n) != n)
					break;
			_exit(0);
		}
		if (c >= 0)
			close(c);
	}
}

/* A connection to ip:port, from source (NULL: the kernel's choice). */
static int
dial(const char *source, const char *ip, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, ip, &sin.sin_addr);
	if (source != NULL) {
		struct sockaddr_in src = { .sin_family = AF_INET };

		inet_pton(AF_INET, source, &src.sin_addr);
		if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0)
			return -1;
	}
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* What comes back on fd within ms (empty: silence). */
static const char *
answer(int fd, int ms)
{
	static char buf[64];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	buf[0] = '\0';
	if (poll(&p, 1, ms) == 1 && (n = read(fd, buf, sizeof(buf) - 1)) > 0)
		buf[n] = '\0';
	return buf;
}

/* Milliseconds until fd is reset (read fails with ECONNRESET), within ms; -1: not. */
static long
reset_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec t0, t1;
	char buf[64];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (poll(&p, 1, ms) != 1 || read(fd, buf, sizeof(buf)) != -1 || errno != ECONNRESET)
		return -1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
}

static int
say(int fd, const char *what)
{
	return write(fd, what, strlen(what)) == (ssize_t)strlen(what);
}

/* flashsale-relay -c CTL WORDS: its exit status; its answer in out. */
static int
command(const char *words, char *out, size_t outlen)
{
	char cmd[1024];
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s -c %s %s", relay_bin, ctl, words);
	if ((f = popen(cmd, "r")) == NULL)
		return -1;
	out[0] = '\0';
	if (fgets(out, (int)outlen, f) == NULL)
		out[0] = '\0';
	rc = pclose(f);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int
main(void)
{
	const char *bindir = getenv("FLASHSALE_BINDIR"), *base_s = getenv("FLASHSALE_TEST_PORT_BASE");
	int base = base_s != NULL ? atoi(base_s) : 18080, port = 0, a, b, c, d, e, up = 0;
	char route[128], giving[128], src[64], out[256];
	long after;
	pid_t echo, relay;
	struct timespec t0, t1;

	snprintf(relay_bin, sizeof(relay_bin), "%s/deploy/relay/flashsale-relay", bindir ? bindir : ".");
	snprintf(ctl, sizeof(ctl), "/tmp/test_peer_relay.%d.sock", (int)getpid());
	echo = echo_server(&port);
	snprintf(route, sizeof(route), "node,peer@127.0.2.250:%d=127.0.0.1:%d", base + 51, port);
	snprintf(giving, sizeof(giving), "giving@127.0.2.250:%d=127.0.0.1:%d/400", base + 52, port);
	snprintf(src, sizeof(src), "far@127.0.2.251");
	if ((relay = fork()) == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(relay_bin, relay_bin, ctl, route, giving, src, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 50 && !up; i++) {
		up = command("show", out, sizeof(out)) == 0;
		if (!up)
			usleep(100000);
	}
	check(echo > 0 && up, "the relay starts and answers show");

	a = dial(NULL, "127.0.2.250", base + 51);
	check(a >= 0 && say(a, "one") && strcmp(answer(a, 2000), "one") == 0, "bytes go through and back");
	c = dial("127.0.2.251", "127.0.2.250", base + 51);
	check(c >= 0 && say(c, "far") && strcmp(answer(c, 2000), "far") == 0, "from a labelled source too");

	check(command("cut peer", out, sizeof(out)) == 0 && strncmp(out, "ok", 2) == 0, "cut peer: ok");
	check(say(a, "two") && strcmp(answer(a, 300), "") == 0, "a cut connection stays open and silent");
	b = dial(NULL, "127.0.2.250", base + 51);
	check(b >= 0 && say(b, "three") && strcmp(answer(b, 300), "") == 0,
	    "a new connection under the cut is accepted, and silent");
	check(command("show", out, sizeof(out)) == 0 && strstr(out, "cut peer") != NULL, "show names the cut");
	check(command("heal", out, sizeof(out)) == 0, "heal: ok");
	check(strcmp(answer(a, 2000), "two") == 0, "after the heal what waited goes through");
	check(strcmp(answer(b, 2000), "three") == 0, "and the connection made under the cut reaches the server");

	check(command("cut far", out, sizeof(out)) == 0, "cut far (a source label)");
	d = dial(NULL, "127.0.2.250", base + 51);
	check(say(c, "x") && strcmp(answer(c, 300), "") == 0, "the labelled source is silenced");
	check(d >= 0 && say(d, "y") && strcmp(answer(d, 2000), "y") == 0, "others still go through");
	check(command("heal", out, sizeof(out)) == 0 && strcmp(answer(c, 2000), "x") == 0, "healed, it flows");
	e = dial(NULL, "127.0.2.250", base + 52);
	check(e >= 0 && say(e, "four") && strcmp(answer(e, 2000), "four") == 0, "a route whose dialler gives up: it flows");
	check(command("cut giving", out, sizeof(out)) == 0, "cut giving");
	after = say(e, "five") ? reset_within(e, 3000) : -1;
	snprintf(out, sizeof(out), "cut, its connection is reset after the dialler's 400 ms (after %ld ms)", after);
	check(after >= 300, out);
	check(command("show", out, sizeof(out)) == 0 && strstr(out, "reset 1 ") != NULL, "show counts the reset");
	check(command("heal", out, sizeof(out)) == 0, "heal");
	check(command("bogus", out, sizeof(out)) == 1 && strncmp(out, "error", 5) == 0, "an unknown command: error");
	/* A long way: each chunk held 200 ms each way (tests/integration/single/edge_far_origin.sh). */
	check(command("delay peer 200", out, sizeof(out)) == 0, "delay peer 200: ok");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	check(say(a, "six") && strcmp(answer(a, 250), "") == 0, "a delayed connection: nothing back within 250 ms");
	check(strcmp(answer(a, 2000), "six") == 0, "then the echo comes");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	after = (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
	snprintf(out, sizeof(out), "held both ways: back after 400 ms or more (%ld ms)", after);
	check(after >= 400 && after < 2000, out);
	check(command("delay peer 0", out, sizeof(out)) == 0 && say(a, "seven") &&
		strcmp(answer(a, 150), "seven") == 0, "delay peer 0 lifts it");
	check(command("delay peer soon", out, sizeof(out)) == 1 && strncmp(out, "error", 5) == 0,
	    "a delay that is no number: error");

	kill(relay, SIGTERM);
	waitpid(relay, NULL, 0);
	kill(echo, SIGKILL);
	waitpid(echo, NULL, 0);
	{
		char cmd[600];
		int rc;

		const char *bad[] = { "nolabel=127.0.0.1:1", "x@127.0.2.250:1=127.0.0.1:1/0",
			"x@127.0.2.250:1=127.0.0.1:1/ms", "x@127.0.2.250:1=127.0.0.1:1/", NULL };

		for (int i = 0; bad[i] != NULL; i++) {
			snprintf(cmd, sizeof(cmd), "%s %s.bad '%s' 2>/dev/null", relay_bin, ctl, bad[i]);
			rc = system(cmd);
			snprintf(out, sizeof(out), "a bad spec is refused (exit 2): %s", bad[i]);
			check(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, out);
		}
	}
	return failures == 0 ? 0 : 1;
}
