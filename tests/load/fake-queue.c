/*
 * fake-queue: a stand-in waiting room for the load generator's self-test
 * (tests/load/self-test.sh), so that the journey of --queue is checked by
 * make check without a stack. One process, poll(2), loopback only; the
 * rules are docs/QUEUE.md's in miniature:
 *   GET  /api/flash-sales/sales/1/queue       the status document
 *   POST /api/flash-sales/sales/1/queue       join ("Bearer <sub>"; the
 *        proof of work checked with lib/queue, 4 bits); the place is the
 *        draw of the seed before the opening, 2^52 + n after it
 *   POST /api/flash-sales/sales/1/queue/pass  {"ticket":"T<sub>"}: a pass
 *        once the place is admitted, else 409
 *   POST /buy, /buy/K                         Flashsale-Pass: P<sub>:
 *        202, 409 (holds one), 410 (its item sold out), 403 (no pass)
 * Admission: from the opening, ADMIT places every 100 ms, in order.
 * The UNITS are ITEMS items' (1 by default; /buy is item 1, /buy/K item
 * K), split evenly, the remainder to the first.
 *
 *   fake-queue PORTFILE UNITS OPEN_IN_MS ADMIT [ITEMS]
 * Writes its port to PORTFILE, serves 60 s at most, exits on SIGTERM.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "queue.h"

#define FQ_CONNS	64
#define FQ_PLACES	20000
#define FQ_BUF		8192
#define FQ_SUB		64
#define FQ_BITS		4
#define FQ_ITEMS	8

struct fq_place {
	char	 sub[FQ_SUB];
	int64_t	 score;
	int	 holds, passed;
};

static struct fq_place places[FQ_PLACES];
static size_t nplaces, admitted;
static int64_t opens_ms, late_n, units, through = -1;
static int64_t item_units[FQ_ITEMS + 1]; /* [K]: item K's units left */
static int nitems = 1;
static int sorted, admit_step;
static unsigned char seed[FS_QUEUE_SEEDBYTES];
static volatile sig_atomic_t stop;

static int64_t
fq_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
fq_on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static struct fq_place *
fq_find(const char *sub)
{
	size_t i;

	for (i = 0; i < nplaces; i++)
		if (strcmp(places[i].sub, sub) == 0)
			return &places[i];
	return NULL;
}

static int
fq_cmp(const void *a, const void *b)
{
	const struct fq_place *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	return strcmp(x->sub, y->sub);
}

/* From the opening: sorted once, then ADMIT more places every 100 ms. */
static void
fq_admit(int64_t now)
{
	size_t want;

	if (now < opens_ms)
		return;
	if (!sorted) {
		qsort(places, nplaces, sizeof(places[0]), fq_cmp);
		sorted = 1;
	}
	want = (size_t)((now - opens_ms) / 100 + 1) * (size_t)admit_step;
	admitted = want < nplaces ? want : nplaces;
	through = admitted > 0 ? places[admitted - 1].score : -1;
}

/* One write an answer: two would meet Nagle and the client's delayed ACK. */
static int
fq_answer(int fd, int status, const char *body)
{
	char out[2048];
	int n;

	n = snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\n\r\n%s", status,
	    strlen(body), body);
	if (n < 0 || (size_t)n >= sizeof(out))
		return -1;
	return send(fd, out, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

/* The value of header name (lower case here) into out, or "". */
static void
fq_header(const char *req, const char *name, char *out, size_t max)
{
	const char *p = strcasestr(req, name), *e;

	out[0] = '\0';
	if (p == NULL)
		return;
	p += strlen(name);
	while (*p == ' ')
		p++;
	e = strstr(p, "\r\n");
	if (e != NULL && (size_t)(e - p) < max) {
		memcpy(out, p, (size_t)(e - p));
		out[e - p] = '\0';
	}
}

static int
fq_status(int fd, int64_t now)
{
	char body[1024], hex[2 * FS_QUEUE_SEEDBYTES + 3];

	if (now >= opens_ms) {
		hex[0] = '"';
		sodium_bin2hex(hex + 1, sizeof(hex) - 2, seed, sizeof(seed));
		strcat(hex, "\"");
	} else
		strcpy(hex, "null");
	snprintf(body, sizeof(body), "{\"sale\": 1, \"opensAt\": %" PRId64 ", "
	    "\"state\": \"%s\", \"seed\": %s, "
	    "\"joined\": %zu, \"admitted\": %zu, \"through\": %" PRId64
	    ", \"rate\": 2.5, \"unitsLeft\": %" PRId64 ", \"passesOut\": 0, "
	    "\"powBits\": %d}", opens_ms, now < opens_ms ? "prequeue" : units == 0 ?
	    "soldout" : "open", hex, nplaces, admitted, through, units,
	    FQ_BITS);
	return fq_answer(fd, 200, body);
}

static int
fq_join(int fd, const char *req, const char *body, int64_t now)
{
	char auth[128], out[256], nonce[40];
	const char *sub, *p;
	struct fq_place *pl;
	size_t n;

	fq_header(req, "\nauthorization:", auth, sizeof(auth));
	if (strncmp(auth, "Bearer ", 7) != 0 || strlen(auth + 7) >= FQ_SUB)
		return fq_answer(fd, 401, "{\"error\":\"UNAUTHENTICATED\"}");
	sub = auth + 7;
	if ((p = strstr(body, "\"pow\":\"")) == NULL ||
	    (n = strcspn(p + 7, "\"")) >= sizeof(nonce))
		return fq_answer(fd, 400, "{\"error\":\"BAD_POW\"}");
	memcpy(nonce, p + 7, n);
	nonce[n] = '\0';
	if (fs_queue_pow_check(1, sub, nonce, n, FQ_BITS) != FS_QUEUE_OK)
		return fq_answer(fd, 400, "{\"error\":\"BAD_POW\"}");
	if ((pl = fq_find(sub)) == NULL) {
		if (nplaces == FQ_PLACES)
			return fq_answer(fd, 503, "{\"error\":\"TRY_AGAIN\"}");
		pl = &places[nplaces++];
		snprintf(pl->sub, sizeof(pl->sub), "%s", sub);
		pl->score = now < opens_ms ? fs_queue_draw(seed, sub, strlen(sub)) :
		    FS_QUEUE_LATE_BASE + ++late_n;
	}
	if (now < opens_ms)
		snprintf(out, sizeof(out), "{\"ticket\": \"T%s\", \"score\": null}", sub);
	else
		snprintf(out, sizeof(out), "{\"ticket\": \"T%s\", \"score\": %" PRId64 "}",
		    sub, pl->score);
	return fq_answer(fd, 200, out);
}

static int
fq_pass(int fd, const char *body)
{
	char out[256], sub[FQ_SUB];
	const char *p = strstr(body, "\"ticket\":\"T");
	struct fq_place *pl;
	size_t n;

	if (p == NULL || (n = strcspn(p + 11, "\"")) >= sizeof(sub))
		return fq_answer(fd, 403, "{\"error\":\"BAD_TICKET\"}");
	memcpy(sub, p + 11, n);
	sub[n] = '\0';
	if ((pl = fq_find(sub)) == NULL)
		return fq_answer(fd, 404, "{\"error\":\"NOT_IN_QUEUE\"}");
	if (!sorted || pl - places >= (ptrdiff_t)admitted)
		return fq_answer(fd, 409, "{\"error\":\"NOT_YET\"}");
	pl->passed++;
	snprintf(out, sizeof(out), "{\"pass\": \"P%s\", \"expiresAt\": 1}", sub);
	return fq_answer(fd, 200, out);
}

static int
fq_buy(int fd, const char *req)
{
	char pass[128];
	struct fq_place *pl;
	int item = req[9] == '/' ? atoi(req + 10) : 1;

	if (item < 1 || item > nitems)
		return fq_answer(fd, 404, "{\"error\":\"ITEM_NOT_FOUND\"}");
	fq_header(req, "\nflashsale-pass:", pass, sizeof(pass));
	if (pass[0] != 'P' || (pl = fq_find(pass + 1)) == NULL || !pl->passed)
		return fq_answer(fd, 403, "{\"error\":\"NOT_ADMITTED\"}");
	if (pl->holds)
		return fq_answer(fd, 409, "{\"error\":\"ALREADY_PURCHASED\"}");
	if (item_units[item] == 0)
		return fq_answer(fd, 410, "{\"error\":\"SOLD_OUT\"}");
	item_units[item]--;
	units--;
	pl->holds = 1;
	return fq_answer(fd, 202, "{\"orderId\":\"x\"}");
}

/* One whole request in buf (head and Content-Length body): answers it. */
static int
fq_serve(int fd, char *buf, size_t len, size_t *used)
{
	char *end = strstr(buf, "\r\n\r\n"), cl[16];
	size_t blen;
	int64_t now = fq_now_ms();

	if (end == NULL)
		return 1;
	fq_header(buf, "\ncontent-length:", cl, sizeof(cl));
	blen = (size_t)strtoul(cl, NULL, 10);
	if ((size_t)(end + 4 - buf) + blen > len)
		return 1;
	*used = (size_t)(end + 4 - buf) + blen;
	end[2] = '\0';
	fq_admit(now);
	if (strncmp(buf, "GET /api/flash-sales/sales/1/queue ", 35) == 0)
		return fq_status(fd, now);
	if (strncmp(buf, "POST /api/flash-sales/sales/1/queue ", 36) == 0)
		return fq_join(fd, buf, end + 4, now);
	if (strncmp(buf, "POST /api/flash-sales/sales/1/queue/pass ", 41) == 0)
		return fq_pass(fd, end + 4);
	if (strncmp(buf, "POST /buy ", 10) == 0 || strncmp(buf, "POST /buy/", 10) == 0)
		return fq_buy(fd, buf);
	return fq_answer(fd, 404, "{\"error\":\"NOT_FOUND\"}");
}

int
main(int argc, char **argv)
{
	static char bufs[FQ_CONNS][FQ_BUF];
	size_t have[FQ_CONNS] = { 0 }, used;
	struct pollfd pf[FQ_CONNS + 1];
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int64_t deadline;
	ssize_t n;
	FILE *f;
	int i, c, rc, one = 1;

	if ((argc != 5 && argc != 6) || sodium_init() < 0)
		return 2;
	units = atoll(argv[2]);
	nitems = argc == 6 ? atoi(argv[5]) : 1;
	if (units < 0 || nitems < 1 || nitems > FQ_ITEMS)
		return 2;
	for (i = 1; i <= nitems; i++)
		item_units[i] = units / nitems + (i == 1 ? units % nitems : 0);
	opens_ms = fq_now_ms() + atoll(argv[3]);
	admit_step = atoi(argv[4]);
	deadline = fq_now_ms() + 60000;
	randombytes_buf(seed, sizeof(seed));
	signal(SIGTERM, fq_on_term);
	signal(SIGPIPE, SIG_IGN);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pf[0].fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(pf[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(pf[0].fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(pf[0].fd, 128) == -1 ||
	    getsockname(pf[0].fd, (struct sockaddr *)&sin, &sl) == -1 ||
	    (f = fopen(argv[1], "w")) == NULL)
		return 1;
	fprintf(f, "%d\n", ntohs(sin.sin_port));
	fclose(f);
	pf[0].events = POLLIN;
	for (i = 1; i <= FQ_CONNS; i++)
		pf[i].fd = -1;
	while (!stop && fq_now_ms() < deadline) {
		for (i = 0; i <= FQ_CONNS; i++)
			pf[i].events = POLLIN;
		if (poll(pf, FQ_CONNS + 1, 100) <= 0)
			continue;
		if ((pf[0].revents & POLLIN) && (c = accept(pf[0].fd, NULL, NULL)) != -1) {
			for (i = 1; i <= FQ_CONNS && pf[i].fd != -1; i++)
				;
			if (i > FQ_CONNS)
				close(c);
			else {
				pf[i].fd = c;
				have[i - 1] = 0;
			}
		}
		for (i = 1; i <= FQ_CONNS; i++) {
			if (pf[i].fd == -1 || !(pf[i].revents & (POLLIN | POLLHUP)))
				continue;
			n = recv(pf[i].fd, bufs[i - 1] + have[i - 1],
			    FQ_BUF - 1 - have[i - 1], 0);
			if (n <= 0) {
				close(pf[i].fd);
				pf[i].fd = -1;
				continue;
			}
			have[i - 1] += (size_t)n;
			bufs[i - 1][have[i - 1]] = '\0';
			while ((rc = fq_serve(pf[i].fd, bufs[i - 1], have[i - 1],
			    &used)) == 0) {
				memmove(bufs[i - 1], bufs[i - 1] + used,
				    have[i - 1] - used + 1);
				have[i - 1] -= used;
			}
			if (rc == -1) {
				close(pf[i].fd);
				pf[i].fd = -1;
			}
		}
	}
	return 0;
}
