/*
 * flashsale-load: the load generator of the sale rehearsal.
 *
 * It reads one line per shopper ("<bearer token> <purchase path>"), opens
 * keep-alive connections to a loopback server before the opening instant,
 * then sends every shopper's POST as fast as the connections allow, retrying
 * 503s and network errors the way real shoppers do.  Every request is
 * recorded, so the percentiles it prints are exact, not estimated.  A share
 * of the shoppers may be bots (at once) and the rest people (after a
 * reaction time); with --queue the shoppers walk a waiting room instead
 * (load_queue.c): join, wait their turn, take a pass, buy with it.
 *
 * This file holds main, the clocks and the signals; load.h lists the
 * others (parse, http, run, queue, report, selftest). It needs libsodium
 * (the proof of work) and lib/queue.c (the draw): the build links them.
 * Run it with --help for the options; --self-test checks the HTTP parser
 * and the queue's helpers.
 */
#include "load.h"

#include <sodium.h>

volatile sig_atomic_t ld_stop_signal;

void
ld_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(LD_NAME ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int64_t
ld_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
ld_unix_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
ld_cpu_us(const struct rusage *ru)
{
	return (int64_t)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000000 +
	    ru->ru_utime.tv_usec + ru->ru_stime.tv_usec;
}

static void
ld_on_signal(int sig)
{
	(void)sig;
	ld_stop_signal = 1;
}

/*
 * Setup and teardown.
 */

static int
ld_fd_limit(size_t want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return -1;
	if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ||
		    rl.rlim_max > want ? want : rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur < want) {
			ld_warn("%zu connections need %zu file descriptors; "
			    "the limit is %llu", want - 64, want,
			    (unsigned long long)rl.rlim_cur);
			return -1;
		}
	}
	return 0;
}


static void
ld_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = ld_on_signal;
	/* No SA_RESTART: epoll_wait must return so that the loop stops. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int
main(int argc, char **argv)
{
	struct epoll_event *evs = NULL;
	struct ld_run *run = NULL;
	char *buf = NULL;
	int rc = 1;

	if ((run = calloc(1, sizeof(*run))) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	run->ep = -1;
	run->o.host = "127.0.0.1";
	run->o.connections = 256;
	run->o.duration_max = 60;
	run->o.backoff_ms = 100;
	run->o.timeout_ms = 10000;
	run->o.bot_joins = 3;
	run->o.poll_rate = 20;
	run->o.page_poll_ms = 1000;
	if (ld_opts_parse(&run->o, argc, argv) == -1) {
		ld_warn("--help lists the options");
		goto fail;
	}
	if (run->o.help) {
		ld_usage(stdout);
		rc = 0;
		goto fail;
	}
	if (run->o.self_test) {
		rc = ld_self_test();
		goto fail;
	}
	if ((run->o.tokens == NULL) == (run->o.queue == NULL) ||
	    run->o.port == 0 || (run->o.queue != NULL && run->o.sale == 0)) {
		ld_warn("--tokens or --queue (with --sale), and --port, are "
		    "required; --help lists the options");
		goto fail;
	}
	if (run->o.react_max_ms > 0 && run->o.react_max_ms < run->o.react_min_ms) {
		ld_warn("--react-max-ms is below --react-min-ms");
		goto fail;
	}
	if (sodium_init() < 0) {
		ld_warn("sodium_init failed");
		goto fail;
	}
	run->rng = run->o.seed != 0 ? (uint64_t)run->o.seed :
	    (uint64_t)ld_unix_us() ^ (uint64_t)getpid() << 32;
	if (ld_addr_parse(run) == -1 ||
	    ld_fd_limit((size_t)run->o.connections + 64) == -1 ||
	    (run->o.queue != NULL ? ld_queue_load(run) : ld_tokens_load(run)) ==
	    -1 || ld_run_setup(run) == -1)
		goto fail;
	if ((evs = calloc(LD_EVENTS_MAX, sizeof(*evs))) == NULL ||
	    (buf = malloc(LD_RECV_BUF)) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	ld_signals();
	if (ld_warmup(run, evs, buf) == -1 || ld_loop(run, evs, buf) == -1)
		goto fail;
	if (run->o.csv != NULL && ld_csv_write(run) == -1)
		goto fail;
	if (run->o.queue_csv != NULL && run->q != NULL &&
	    ld_queue_csv_write(run) == -1)
		goto fail;
	if (ld_summary(run) == -1)
		goto fail;
	rc = 0;
fail:
	free(buf);
	free(evs);
	ld_run_free(run);
	return rc;
}
