/*
 * flashsale-relay: the peer links of the cluster topology, through one
 * process that a fault test can cut. A network partition on one machine:
 * the nodes keep running and their clients still reach them, but the
 * traffic between chosen nodes stops as if its packets were dropped.
 *
 *   flashsale-relay SOCKET SPEC...     relays until SIGTERM
 *   flashsale-relay -c SOCKET COMMAND  sends COMMAND, prints the answer
 *
 * SPEC is a route, LABELS@LISTEN_IP:PORT=TARGET_IP:PORT[/MS] (connections
 * to LISTEN are copied both ways to TARGET and carry the comma-separated
 * LABELS), or a source, LABEL@IP (connections from IP carry LABEL too).
 * MS: the dialling side's kernel gives up on a peer that went silent after
 * MS milliseconds (its TCP keepalives and TCP_USER_TIMEOUT). Behind the
 * relay it never could (the relay's own socket acknowledges its bytes and
 * answers its probes), so the relay does it for it: a connection of that
 * route cut for MS is reset (the dialler reads ECONNRESET where its
 * kernel would have said ETIMEDOUT).
 * COMMAND on the unix socket SOCKET: "cut LABEL" silences every connection
 * that carries LABEL, those open and those to come (accepted, never passed
 * on: a peer behind a partition neither answers nor refuses); "heal"
 * lifts every cut, and what waited flows; "show" prints the connections
 * relayed, refused (no room) and reset (MS above), and the labels cut
 * ("none"); "delay LABEL MS" holds every chunk that a connection carrying
 * LABEL reads, either way, for MS milliseconds before it is passed on (a
 * long way to the peer: a request and its answer take 2 x MS more;
 * "delay LABEL 0" lifts it). Each answers one line, "ok ..." or "error ...".
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_LABELS 64
#define MAX_ROUTES 64
#define MAX_SOURCES 32
#define MAX_PAIRS 1024
#define BUF_SIZE 16384

struct route {
	int fd;
	unsigned long long labels;
	struct sockaddr_in target;
	long gives_up_ms; /* the dialler's timeout for a silent peer; 0: none */
};

struct source {
	struct in_addr ip;
	unsigned long long labels;
};

/* One relayed connection: the side that dialled (0) and the target (1). */
struct pair {
	int fd[2]; /* fd[1] is -1 while a cut holds it back */
	int route;
	unsigned long long labels;
	long long cut_since_ms; /* when a cut first held it; 0: flowing */
	char buf[2][BUF_SIZE]; /* buf[d]: read from fd[d], not yet written */
	size_t len[2], off[2];
	long long due_ms[2]; /* buf[d] is not written before (a delay) */
};

static char label_name[MAX_LABELS][64];
static int nlabels;
static struct route route[MAX_ROUTES];
static int nroutes;
static struct source source[MAX_SOURCES];
static int nsources;
static struct pair *pair[MAX_PAIRS];
static unsigned long long cut_mask;
static long delay_ms[MAX_LABELS]; /* per label: chunks held this long */
static unsigned long relayed, refused, reset;
static volatile sig_atomic_t stopping;

static void
on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

/* A line of the log: the time, then WHAT and ARG. */
static void
say(const char *what, const char *arg)
{
	struct timespec ts;
	struct tm tm;
	char when[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%FT%T", &tm);
	fprintf(stderr, "%s.%03ldZ flashsale-relay: %s%s\n", when, ts.tv_nsec / 1000000, what, arg);
}

/* The bit of LABEL (added when new), or 0 when the table is full. */
static unsigned long long
label_bit(const char *label, size_t len)
{
	for (int i = 0; i < nlabels; i++)
		if (strlen(label_name[i]) == len && strncmp(label_name[i], label, len) == 0)
			return 1ULL << i;
	if (nlabels == MAX_LABELS || len == 0 || len >= sizeof(label_name[0]))
		return 0;
	memcpy(label_name[nlabels], label, len);
	label_name[nlabels][len] = '\0';
	return 1ULL << nlabels++;
}

static int
parse_addr(const char *s, size_t len, struct sockaddr_in *sin)
{
	char host[64];
	const char *colon = memchr(s, ':', len);
	char *end;
	long port;

	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	port = strtol(colon + 1, &end, 10);
	if (end != s + len || port <= 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((unsigned short)port);
	return inet_pton(AF_INET, host, &sin->sin_addr) == 1 ? 0 : -1;
}

static int
listen_on(const struct sockaddr_in *sin)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)sin, sizeof(*sin)) != 0 || listen(fd, 128) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* LABELS@LISTEN=TARGET[/MS] or LABEL@IP; 0, or -1 with a message. */
static int
parse_spec(const char *spec)
{
	const char *at = strchr(spec, '@'), *eq, *p, *slash;
	char *end;
	long gives_up_ms = 0;
	unsigned long long labels = 0, bit;
	struct sockaddr_in listen_sin;

	if (at == NULL)
		return -1;
	for (p = spec; p < at;) {
		const char *comma = memchr(p, ',', (size_t)(at - p));
		size_t len = comma != NULL ? (size_t)(comma - p) : (size_t)(at - p);

		if ((bit = label_bit(p, len)) == 0)
			return -1;
		labels |= bit;
		p += len + (comma != NULL);
	}
	if ((eq = strchr(at + 1, '=')) == NULL) {
		if (nsources == MAX_SOURCES || inet_pton(AF_INET, at + 1, &source[nsources].ip) != 1)
			return -1;
		source[nsources++].labels = labels;
		return 0;
	}
	if ((slash = strchr(eq + 1, '/')) != NULL) {
		errno = 0;
		gives_up_ms = strtol(slash + 1, &end, 10);
		if (errno != 0 || end == slash + 1 || *end != '\0' || gives_up_ms <= 0 || gives_up_ms > 3600000)
			return -1;
	} else {
		slash = eq + 1 + strlen(eq + 1);
	}
	if (nroutes == MAX_ROUTES || parse_addr(at + 1, (size_t)(eq - at - 1), &listen_sin) != 0 ||
	    parse_addr(eq + 1, (size_t)(slash - eq - 1), &route[nroutes].target) != 0)
		return -1;
	if ((route[nroutes].fd = listen_on(&listen_sin)) < 0) {
		say("cannot listen for ", spec);
		return -1;
	}
	route[nroutes].gives_up_ms = gives_up_ms;
	route[nroutes++].labels = labels;
	return 0;
}

static void
close_pair(int i)
{
	close(pair[i]->fd[0]);
	if (pair[i]->fd[1] >= 0)
		close(pair[i]->fd[1]);
	free(pair[i]);
	pair[i] = NULL;
}

/* Dials the target of pair i; -1 when it refuses (the pair is closed). */
static int
dial(int i)
{
	const struct sockaddr_in *t = &route[pair[i]->route].target;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	/* Loopback: the connect completes or fails at once. */
	if (fd < 0 || connect(fd, (const struct sockaddr *)t, sizeof(*t)) != 0 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
		if (fd >= 0)
			close(fd);
		close_pair(i);
		return -1;
	}
	pair[i]->fd[1] = fd;
	return 0;
}

static void
accept_on(int r)
{
	struct sockaddr_in from;
	socklen_t len = sizeof(from);
	int fd = accept4(route[r].fd, (struct sockaddr *)&from, &len, SOCK_NONBLOCK | SOCK_CLOEXEC), i;

	if (fd < 0)
		return;
	for (i = 0; i < MAX_PAIRS && pair[i] != NULL; i++)
		;
	if (i == MAX_PAIRS || (pair[i] = calloc(1, sizeof(**pair))) == NULL) {
		refused++;
		close(fd);
		return;
	}
	pair[i]->fd[0] = fd;
	pair[i]->fd[1] = -1;
	pair[i]->route = r;
	pair[i]->labels = route[r].labels;
	for (int s = 0; s < nsources; s++)
		if (source[s].ip.s_addr == from.sin_addr.s_addr)
			pair[i]->labels |= source[s].labels;
	relayed++;
	if ((pair[i]->labels & cut_mask) == 0)
		dial(i);
}

static long long now_ms(void);

/* The longest delay of the labels a pair carries (0: none). */
static long
pair_delay(const struct pair *p)
{
	long ms = 0;

	for (int i = 0; i < nlabels; i++)
		if ((p->labels & (1ULL << i)) && delay_ms[i] > ms)
			ms = delay_ms[i];
	return ms;
}

/* Moves bytes of pair i in direction d (from fd[d] to fd[!d]); -1: closed. */
static int
pump(struct pair *p, int d, short rev_in, short rev_out)
{
	ssize_t n;

	if (p->len[d] == 0 && (rev_in & (POLLIN | POLLHUP | POLLERR))) {
		long delay = pair_delay(p);

		n = read(p->fd[d], p->buf[d], BUF_SIZE);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return -1;
		p->len[d] = n > 0 ? (size_t)n : 0;
		p->off[d] = 0;
		p->due_ms[d] = delay > 0 ? now_ms() + delay : 0;
		if (delay == 0)
			rev_out |= POLLOUT; /* try at once: usually it all goes */
	}
	if (p->len[d] > 0 && p->due_ms[d] > 0 && now_ms() >= p->due_ms[d]) {
		p->due_ms[d] = 0;
		rev_out |= POLLOUT; /* held long enough: try now */
	}
	if (p->len[d] > 0 && p->due_ms[d] == 0 && (rev_out & (POLLOUT | POLLERR))) {
		n = write(p->fd[!d], p->buf[d] + p->off[d], p->len[d]);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (n > 0) {
			p->off[d] += (size_t)n;
			p->len[d] -= (size_t)n;
		}
	}
	return 0;
}

/* One command line of the control socket; the answer goes into out. */
static void
command(char *line, char *out, size_t outlen)
{
	unsigned long long bit;

	line[strcspn(line, "\r\n")] = '\0';
	if (strncmp(line, "cut ", 4) == 0) {
		if ((bit = label_bit(line + 4, strlen(line + 4))) == 0) {
			snprintf(out, outlen, "error no room for label %s\n", line + 4);
			return;
		}
		cut_mask |= bit;
		say("cut ", line + 4);
		snprintf(out, outlen, "ok cut %s\n", line + 4);
	} else if (strcmp(line, "heal") == 0) {
		cut_mask = 0;
		for (int i = 0; i < MAX_PAIRS; i++) {
			if (pair[i] == NULL)
				continue;
			pair[i]->cut_since_ms = 0;
			if (pair[i]->fd[1] < 0)
				dial(i);
		}
		say("healed", "");
		snprintf(out, outlen, "ok healed\n");
	} else if (strncmp(line, "delay ", 6) == 0) {
		char *sp = strrchr(line + 6, ' '), *end;
		long ms;

		errno = 0;
		ms = sp != NULL ? strtol(sp + 1, &end, 10) : -1;
		if (sp == NULL || errno != 0 || end == sp + 1 || *end != '\0' || ms < 0 || ms > 60000) {
			snprintf(out, outlen, "error want delay LABEL MS (0..60000)\n");
			return;
		}
		*sp = '\0';
		if ((bit = label_bit(line + 6, strlen(line + 6))) == 0) {
			snprintf(out, outlen, "error no room for label %s\n", line + 6);
			return;
		}
		for (int i = 0; i < nlabels; i++)
			if (bit == 1ULL << i)
				delay_ms[i] = ms;
		say("delay ", line + 6);
		snprintf(out, outlen, "ok delay %s %ld\n", line + 6, ms);
	} else if (strcmp(line, "show") == 0) {
		size_t o = (size_t)snprintf(out, outlen, "ok relayed %lu refused %lu reset %lu cut", relayed,
		    refused, reset);

		if (cut_mask == 0)
			o += (size_t)snprintf(out + o, outlen - o, " none");
		for (int i = 0; i < nlabels && o < outlen; i++)
			if (cut_mask & (1ULL << i))
				o += (size_t)snprintf(out + o, outlen - o, " %s", label_name[i]);
		if (o < outlen)
			snprintf(out + o, outlen - o, "\n");
	} else {
		snprintf(out, outlen, "error unknown command\n");
	}
}

static void
control(int cfd)
{
	char line[256], out[4096];
	ssize_t n;
	int fd = accept4(cfd, NULL, NULL, SOCK_CLOEXEC);
	struct timeval tv = { 2, 0 };

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, line, sizeof(line) - 1);
	if (n > 0) {
		line[n] = '\0';
		command(line, out, sizeof(out));
		if (write(fd, out, strlen(out)) < 0)
			say("control answer lost", "");
	}
	close(fd);
}

static int
unix_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun->sun_path))
		return -1;
	strcpy(sun->sun_path, path);
	return 0;
}

/* The control socket's listening descriptor, or -1. */
static int
control_socket(const char *path)
{
	struct sockaddr_un sun;
	int fd;

	if (unix_addr(path, &sun) != 0 || (fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -1;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || listen(fd, 8) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The poll set: the control socket, the routes, then two per live pair. */
static nfds_t
poll_set(struct pollfd *pfd, int cfd, int *slot)
{
	nfds_t n = 0;

	pfd[n].fd = cfd;
	pfd[n++].events = POLLIN;
	for (int r = 0; r < nroutes; r++) {
		pfd[n].fd = route[r].fd;
		pfd[n++].events = POLLIN;
	}
	for (int i = 0; i < MAX_PAIRS; i++) {
		struct pair *p = pair[i];

		slot[i] = -1;
		if (p == NULL || p->fd[1] < 0 || (p->labels & cut_mask))
			continue; /* a cut pair is left alone: silence */
		slot[i] = (int)n;
		for (int d = 0; d < 2; d++) {
			pfd[n].fd = p->fd[d];
			pfd[n].events = (short)((p->len[d] == 0 ? POLLIN : 0) |
			    (p->len[!d] > 0 && p->due_ms[!d] == 0 ? POLLOUT : 0));
			n++;
		}
	}
	return n;
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The cut connections whose dialler would have given up by now (their
 * route's MS): reset, as its kernel would have ended them. Returns the
 * milliseconds until the next one is due (-1: none waits).
 */
static long
give_up(void)
{
	long long now;
	long next = -1;

	if (cut_mask == 0)
		return -1;
	now = now_ms();
	for (int i = 0; i < MAX_PAIRS; i++) {
		struct pair *p = pair[i];
		long ms = p != NULL ? route[p->route].gives_up_ms : 0;
		struct linger abort_it = { 1, 0 };

		if (p == NULL || ms == 0 || (p->labels & cut_mask) == 0)
			continue;
		if (p->cut_since_ms == 0)
			p->cut_since_ms = now;
		if (now - p->cut_since_ms < ms) {
			long left = (long)(p->cut_since_ms + ms - now);

			next = next < 0 || left < next ? left : next;
			continue;
		}
		setsockopt(p->fd[0], SOL_SOCKET, SO_LINGER, &abort_it, sizeof(abort_it));
		close_pair(i);
		reset++;
	}
	return next;
}

/* Milliseconds until the next held chunk is due (-1: none is held). */
static long
held_due(void)
{
	long long now = now_ms();
	long next = -1;

	for (int i = 0; i < MAX_PAIRS; i++)
		for (int d = 0; pair[i] != NULL && d < 2; d++) {
			long left;

			if (pair[i]->len[d] == 0 || pair[i]->due_ms[d] == 0)
				continue;
			left = pair[i]->due_ms[d] > now ? (long)(pair[i]->due_ms[d] - now) : 0;
			next = next < 0 || left < next ? left : next;
		}
	return next;
}

static int
serve(const char *ctl)
{
	static struct pollfd pfd[1 + MAX_ROUTES + 2 * MAX_PAIRS];
	static int slot[MAX_PAIRS];
	int cfd = control_socket(ctl);

	if (cfd < 0) {
		say("cannot listen on ", ctl);
		return 1;
	}
	say("relaying, control socket ", ctl);
	while (!stopping) {
		long due = give_up(), held = held_due();
		nfds_t n = poll_set(pfd, cfd, slot);

		if (held >= 0 && (due < 0 || held < due))
			due = held;

		if (poll(pfd, n, due >= 0 && due < 1000 ? (int)due + 1 : 1000) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pfd[0].revents & POLLIN)
			control(cfd);
		for (int r = 0; r < nroutes; r++)
			if (pfd[1 + r].revents & POLLIN)
				accept_on(r);
		for (int i = 0; i < MAX_PAIRS; i++) {
			struct pollfd *s = &pfd[slot[i] >= 0 ? slot[i] : 0];

			if (slot[i] < 0 || pair[i] == NULL || (pair[i]->labels & cut_mask))
				continue;
			if (pump(pair[i], 0, s[0].revents, s[1].revents) != 0 ||
			    pump(pair[i], 1, s[1].revents, s[0].revents) != 0)
				close_pair(i);
		}
	}
	unlink(ctl);
	say("stopped", "");
	return 0;
}

/* -c SOCKET WORD...: one command, its answer on standard output. */
static int
client(const char *path, int argc, char **argv)
{
	struct sockaddr_un sun;
	char line[256] = "", out[4096];
	size_t o = 0;
	ssize_t n;
	int fd;

	for (int i = 0; i < argc; i++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, "%s%s", i ? " " : "", argv[i]);
	if (o + 2 > sizeof(line) || unix_addr(path, &sun) != 0 ||
	    (fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
		return 2;
	strcat(line, "\n");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 || write(fd, line, strlen(line)) < 0 ||
	    (n = read(fd, out, sizeof(out) - 1)) <= 0) {
		fprintf(stderr, "flashsale-relay: no answer from %s\n", path);
		close(fd);
		return 2;
	}
	close(fd);
	out[n] = '\0';
	fputs(out, stdout);
	return strncmp(out, "ok", 2) == 0 ? 0 : 1;
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	struct rlimit nofile;

	if (argc >= 4 && strcmp(argv[1], "-c") == 0)
		return client(argv[2], argc - 3, argv + 3);
	if (argc < 3) {
		fprintf(stderr, "usage: flashsale-relay SOCKET SPEC... | -c SOCKET cut LABEL|heal|show|delay LABEL MS\n"
				"  SPEC: LABELS@LISTEN_IP:PORT=TARGET_IP:PORT[/MS] or LABEL@IP\n");
		return 2;
	}
	for (int i = 2; i < argc; i++)
		if (parse_spec(argv[i]) != 0) {
			fprintf(stderr, "flashsale-relay: bad spec '%s'\n", argv[i]);
			return 2;
		}
	/* Two descriptors a pair: room for all of them (cut links pile up). */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 2 * MAX_PAIRS + 128) {
		nofile.rlim_cur = nofile.rlim_max < 2 * MAX_PAIRS + 128 ? nofile.rlim_max : 2 * MAX_PAIRS + 128;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return serve(argv[1]);
}
