/*
 * A loopback TCP relay in front of a unix-socket server, for the tests of
 * what a remote server's silence does to a client: a child process that
 * accepts on 127.0.0.1 (a port the kernel picks) and copies bytes both
 * ways to the socket. SIGSTOP freezes it (the connections stay open and
 * say nothing, like a hung host); SIGUSR1 severs the connections it holds
 * without telling their clients: the server sees them close, the clients
 * see nothing ever again (a peer that went away without a FIN). New
 * connections are relayed as before. Stopped by its PID.
 */
#ifndef FS_TEST_RELAY_H
#define FS_TEST_RELAY_H

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define RELAY_PAIRS 64

struct test_relay {
	pid_t pid;
	int port;
};

static volatile sig_atomic_t relay_sever;

static void
relay_on_usr1(int sig)
{
	(void)sig;
	relay_sever = 1;
}

/* The child's loop: pairs of (client, upstream) descriptors, -1 when free. */
static void
relay_serve(int lfd, const char *upstream)
{
	int client[RELAY_PAIRS], server[RELAY_PAIRS];
	struct pollfd pfd[1 + 2 * RELAY_PAIRS];
	struct sockaddr_un sun;
	char buf[16384];

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", upstream);
	for (int i = 0; i < RELAY_PAIRS; i++)
		client[i] = server[i] = -1;
	for (;;) {
		int n = 1;

		if (relay_sever) {
			/* The clients' sockets stay open and unread: silence, not a close. */
			for (int i = 0; i < RELAY_PAIRS; i++)
				if (server[i] >= 0) {
					close(server[i]);
					server[i] = -1;
				}
			relay_sever = 0;
		}
		pfd[0].fd = lfd;
		pfd[0].events = POLLIN;
		for (int i = 0; i < RELAY_PAIRS; i++) {
			pfd[n].fd = server[i] >= 0 ? client[i] : -1;
			pfd[n++].events = POLLIN;
			pfd[n].fd = server[i];
			pfd[n++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (pfd[0].revents & POLLIN) {
			int c = accept(lfd, NULL, NULL), u, slot = -1;

			for (int i = 0; i < RELAY_PAIRS && slot < 0; i++)
				if (client[i] < 0)
					slot = i;
			if (c >= 0 && slot >= 0 && (u = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0) {
				if (connect(u, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
					client[slot] = c;
					server[slot] = u;
				} else {
					close(u);
					close(c);
				}
			} else if (c >= 0) {
				close(c);
			}
		}
		for (int i = 0; i < RELAY_PAIRS; i++) {
			short cr = pfd[1 + 2 * i].revents, sr = pfd[2 + 2 * i].revents;
			ssize_t got;
			int dead = 0;

			if (server[i] < 0)
				continue;
			if (cr & (POLLIN | POLLHUP | POLLERR))
				dead |= (got = read(client[i], buf, sizeof(buf))) <= 0 ||
				    write(server[i], buf, (size_t)got) != got;
			if (!dead && (sr & (POLLIN | POLLHUP | POLLERR)))
				dead |= (got = read(server[i], buf, sizeof(buf))) <= 0 ||
				    write(client[i], buf, (size_t)got) != got;
			if (dead) {
				close(client[i]);
				close(server[i]);
				client[i] = server[i] = -1;
			}
		}
	}
}

/* Starts a relay to the unix socket upstream; 0 with r->port set, or -1. */
static int
test_relay_start(struct test_relay *r, const char *upstream)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int lfd;

	r->pid = -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		return -1;
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 || listen(lfd, 16) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &len) != 0) {
		close(lfd);
		return -1;
	}
	r->port = ntohs(sin.sin_port);
	if ((r->pid = fork()) < 0) {
		close(lfd);
		return -1;
	}
	if (r->pid == 0) {
		struct sigaction sa;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = relay_on_usr1;
		sigaction(SIGUSR1, &sa, NULL);
		relay_serve(lfd, upstream);
		_exit(0);
	}
	close(lfd);
	return 0;
}

/* Stops the relay by its PID (SIGCONT first, in case it is frozen). */
static void
test_relay_stop(struct test_relay *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		kill(r->pid, SIGCONT);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = -1;
}

#endif
