/*
 * lib/fcgi's connection limits (issue 36, item 3), for both kinds of
 * worker, each in a process of its own serving a real listening socket as
 * spawn-fcgi hands it over, with FLASHSALE_FCGI_READ_TIMEOUT_MS and
 * FLASHSALE_FCGI_IDLE_TIMEOUT_MS set as a handler gets them:
 * - a peer that sends half a record and waits is closed after the read
 *   timeout, and meanwhile another connection is served (the one worker
 *   thread was pinned forever before: it waited for the rest);
 * - a peer that trickles a request a byte at a time is closed after the
 *   read timeout too (counted from the request's first byte);
 * - a connection with nothing on it, and a kept one after its answer, are
 *   closed after the idle timeout, and not before nginx's own (400 ms);
 * - SIGTERM ends the process within FS_FCGI_STOP_GRACE_MS and a wake even
 *   with a half record on a connection and a read timeout of a minute (a
 *   stop hung on it before).
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/wait.h>

#include "expect.h"
#include "clock.h"
#include "fcgi.h"
#include "fcgi_client.h"

#define READ_MS 400
#define IDLE_MS 1200
/* How late a close may come: a worker looks every 500 ms, and this machine is shared. */
#define SLACK_MS 1500

/* --- the services: one worker each, so that a pinned worker shows ------------ */

static int
setup(void *app)
{
	(void)app;
	return 1;
}

static void
teardown(void *app)
{
	(void)app;
}

static void
handle(fs_fcgi *f, void *ctx)
{
	(void)ctx;
	fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"ok\":1}", 8);
}

static const struct fs_fcgi_service thread_service = {
	"test-fcgi-timeout", setup, teardown, NULL, NULL, handle, NULL, 0, NULL
};
static const struct fs_fcgi_service loop_service = {
	"test-fcgi-timeout", setup, teardown, NULL, NULL, handle, NULL, 1, NULL
};

/* --- a FastCGI client --------------------------------------------------------- */

/* A whole request (BEGIN, one parameter, the ends of both streams); keep: FCGI_KEEP_CONN. */
static size_t
request(unsigned char *out, int id, int keep)
{
	unsigned char begin[8] = { 0, 1, (unsigned char)(keep ? 1 : 0), 0, 0, 0, 0, 0 };
	static const unsigned char param[] = "\x0c\x02" "DOCUMENT_URI/x";
	size_t o = 0;

	o += test_fcgi_record(out + o, 1, id, begin, 8);
	o += test_fcgi_record(out + o, 4, id, param, sizeof(param) - 1);
	o += test_fcgi_record(out + o, 4, id, "", 0);
	o += test_fcgi_record(out + o, 5, id, "", 0);
	return o;
}

static void
send_all(int fd, const void *buf, size_t len)
{
	if (write(fd, buf, len) != (ssize_t)len) {
		perror("write");
		exit(2);
	}
}

/*
 * Waits up to ms for the server to end the connection (reading and
 * dropping what it sends); how long it took, or -1 when it stayed open.
 */
static int64_t
closed_within(int fd, int ms)
{
	int64_t t0 = fs_clock_mono_ms(), left;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[4096];

	while ((left = t0 + ms - fs_clock_mono_ms()) > 0) {
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if (read(fd, b, sizeof(b)) <= 0)
			return fs_clock_mono_ms() - t0;
	}
	return -1;
}

/* Reads one answer's records until END_REQUEST within ms; 1 when it says 200. */
static int
answered(int fd, int ms)
{
	int64_t t0 = fs_clock_mono_ms(), left;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char b[4096];
	size_t have = 0;
	ssize_t n;

	while ((left = t0 + ms - fs_clock_mono_ms()) > 0 && have < sizeof(b) - 1) {
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		if ((n = read(fd, b + have, sizeof(b) - 1 - have)) <= 0)
			return 0;
		have += (size_t)n;
		/* END_REQUEST: type 3, 8 bytes of content, after the 200. */
		for (size_t i = 0; i + 16 <= have; i++)
			if (b[i] == 1 && b[i + 1] == 3 && b[i + 5] == 8) {
				b[have] = '\0';
				return memmem(b, have, "Status: 200", 11) != NULL;
			}
	}
	return 0;
}

/* A process serving svc on a new socket at path, with the limits in its environment. */
static pid_t
serve_process(const struct fs_fcgi_service *svc, const char *path, int read_ms, int idle_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char v[32];
	pid_t pid;
	int lfd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 64) != 0) {
		perror("listen");
		exit(2);
	}
	fflush(stdout); /* the child's exit must not print the parent's lines again */
	if ((pid = fork()) == 0) {
		static int app;

		snprintf(v, sizeof(v), "%d", read_ms);
		setenv("FLASHSALE_FCGI_READ_TIMEOUT_MS", v, 1);
		snprintf(v, sizeof(v), "%d", idle_ms);
		setenv("FLASHSALE_FCGI_IDLE_TIMEOUT_MS", v, 1);
		if (dup2(lfd, 0) != 0)
			_exit(2);
		close(lfd);
		exit(fs_fcgi_serve(svc, &app));
	}
	close(lfd);
	return pid;
}

/* Waits up to ms for the process to exit; how long it took, or -1 (then it is killed). */
static int64_t
exited_within(pid_t pid, int ms, int *status)
{
	int64_t t0 = fs_clock_mono_ms();
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	while (fs_clock_mono_ms() - t0 < ms) {
		if (waitpid(pid, status, WNOHANG) == pid)
			return fs_clock_mono_ms() - t0;
		nanosleep(&pause, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, status, 0);
	return -1;
}

/*
 * A connection that the worker has taken (its kept request answered),
 * then half a BEGIN_REQUEST record on it: its header and half its body.
 */
static int
half_record(const char *path, int id)
{
	unsigned char req[512], begin[8] = { 0, 1, 1, 0, 0, 0, 0, 0 };
	int fd = test_fcgi_dial(path);
	size_t n = request(req, id, 1);

	send_all(fd, req, n);
	if (!answered(fd, 5000)) {
		fprintf(stderr, "the worker did not take the connection\n");
		exit(2);
	}
	n = test_fcgi_record(req, 1, id + 1, begin, 8);
	send_all(fd, req, n - 4);
	return fd;
}

/* --- the limits --------------------------------------------------------------- */

static void
limits(const struct fs_fcgi_service *svc, const char *kind)
{
	unsigned char req[512];
	char path[108], what[160];
	int stuck, other, status;
	int64_t ms, t0;
	size_t n;
	pid_t pid;

	snprintf(path, sizeof(path), "/tmp/test-fcgi-timeout.%ld.sock", (long)getpid());
	pid = serve_process(svc, path, READ_MS, IDLE_MS);

	/* Half a record on a connection the worker holds, then nothing. */
	stuck = half_record(path, 1);
	t0 = fs_clock_mono_ms();
	/* One worker: a second connection is served only when the first does not pin it. */
	other = test_fcgi_dial(path);
	n = request(req, 2, 0);
	send_all(other, req, n);
	snprintf(what, sizeof(what),
	    "%s: another connection is answered while one holds half a record", kind);
	check(answered(other, READ_MS + SLACK_MS), what);
	close(other);
	ms = closed_within(stuck, READ_MS + SLACK_MS) >= 0 ? fs_clock_mono_ms() - t0 : -1;
	snprintf(what, sizeof(what),
	    "%s: the connection with half a record is closed after the read timeout (%lld ms)",
	    kind, (long long)ms);
	check(ms >= READ_MS - 50, what);
	close(stuck);

	/* A request a byte at a time, 100 ms apart: bytes keep coming, the request is not whole. */
	stuck = test_fcgi_dial(path);
	n = request(req, 3, 1);
	{
		struct timespec gap = { 0, 100 * 1000 * 1000 };
		size_t i;

		t0 = fs_clock_mono_ms();
		for (i = 0; i < n && fs_clock_mono_ms() - t0 < READ_MS + SLACK_MS; i++) {
			if (write(stuck, req + i, 1) != 1)
				break;
			nanosleep(&gap, NULL);
		}
		snprintf(what, sizeof(what),
		    "%s: a request trickled a byte every 100 ms is cut off at the read timeout "
		    "(%zu of %zu bytes sent)", kind, i, n);
		check(i < n && closed_within(stuck, SLACK_MS) >= 0, what);
	}
	close(stuck);

	/* Nothing sent at all: idle, closed after the idle timeout, not before nginx's 400 ms. */
	stuck = test_fcgi_dial(path);
	ms = closed_within(stuck, IDLE_MS + SLACK_MS);
	snprintf(what, sizeof(what),
	    "%s: a connection with nothing on it is closed after the idle timeout (%lld ms)", kind,
	    (long long)ms);
	check(ms >= IDLE_MS - 100, what);
	close(stuck);

	/* A kept connection after its answer: open past nginx's keepalive_timeout, closed at idle. */
	stuck = test_fcgi_dial(path);
	n = request(req, 4, 1);
	send_all(stuck, req, n);
	snprintf(what, sizeof(what), "%s: a kept connection's request is answered", kind);
	check(answered(stuck, SLACK_MS), what);
	ms = closed_within(stuck, IDLE_MS + SLACK_MS);
	snprintf(what, sizeof(what),
	    "%s: the kept connection stays open past 400 ms and closes at the idle timeout (%lld ms)",
	    kind, (long long)ms);
	check(ms >= IDLE_MS - 100, what);
	close(stuck);

	kill(pid, SIGTERM);
	snprintf(what, sizeof(what), "%s: the process stops with 0", kind);
	check(exited_within(pid, 5000, &status) >= 0 && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, what);
	unlink(path);
}

/*
 * A stop with a peer that holds half a record, under a read timeout of a
 * minute: the process ends within the stop's grace and a wake.
 */
static void
stop_bound(const struct fs_fcgi_service *svc, const char *kind)
{
	unsigned char req[512];
	char path[108], what[160];
	int stuck, other, status;
	int64_t ms;
	size_t n;
	pid_t pid;

	snprintf(path, sizeof(path), "/tmp/test-fcgi-timeout-stop.%ld.sock", (long)getpid());
	pid = serve_process(svc, path, 60000, 600000);
	/* The process serves (it answered) before the stuck peer comes. */
	other = test_fcgi_dial(path);
	n = request(req, 1, 0);
	send_all(other, req, n);
	snprintf(what, sizeof(what), "%s (stop): the process serves", kind);
	check(answered(other, 5000), what);
	close(other);
	stuck = half_record(path, 2);
	kill(pid, SIGTERM);
	ms = exited_within(pid, FS_FCGI_STOP_GRACE_MS + 500 + SLACK_MS + 2000, &status);
	snprintf(what, sizeof(what),
	    "%s: SIGTERM with half a record on a connection ends the process in %lld ms "
	    "(bound: %d + %d ms and the machine's slack)", kind, (long long)ms,
	    FS_FCGI_STOP_GRACE_MS, 500);
	check(ms >= 0 && ms <= FS_FCGI_STOP_GRACE_MS + 500 + SLACK_MS && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0, what);
	snprintf(what, sizeof(what), "%s (stop): the stuck connection was closed", kind);
	check(closed_within(stuck, 100) >= 0, what);
	close(stuck);
	unlink(path);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN); /* a write to a connection the server cut off fails instead */
	limits(&thread_service, "threads");
	limits(&loop_service, "loop");
	stop_bound(&thread_service, "threads");
	stop_bound(&loop_service, "loop");
	return failures == 0 ? 0 : 1;
}
