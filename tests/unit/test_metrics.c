/*
 * Unit test of lib/metrics: counting in memory and in a block file, the
 * reader's sums over live and ended processes (folded once, never twice),
 * the histogram, ticks files, and files that are not ours.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "metrics.h"

/* The whole text of one scrape of dir (the caller frees it), or NULL. */
static char *
scrape(const char *dir)
{
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	int rc;

	if (out == NULL)
		return NULL;
	rc = fs_metrics_write(dir, out, err, sizeof(err));
	fclose(out);
	if (rc != 0) {
		printf("# scrape: %s\n", err);
		free(text);
		return NULL;
	}
	return text;
}

/* True when text has exactly this line. */
static int
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, line, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

static int
file_exists(const char *dir, const char *name)
{
	char path[512];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}

static void
write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((f = fopen(path, "w")) != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

/* A process that counts, then ends: its block must be folded. */
static void
run_child(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		fs_metrics_open("test-child");
		fs_metrics_add(FS_M_REDIS_ERRORS, 3);
		fs_metrics_answer(202);
		fs_metrics_answer(202);
		fs_metrics_answer(999);
		fs_metrics_request_done(300 * 1000);
		fs_metrics_request_done(7 * 1000 * 1000 * 1000ull);
		fs_metrics_gauge_set(FS_M_WORKERS, 9);
		_exit(0);
	}
	waitpid(pid, &status, 0);
}

int
main(void)
{
	char dir[] = "/tmp/fs-test-metrics.XXXXXX", name[64], *text;
	struct timespec t0, t1;
	enum { N = 10000000 };

	unsetenv("FLASHSALE_METRICS_DIR");
	check(fs_metrics_open("test-parent") == -1, "without a directory: memory only");
	fs_metrics_count(FS_M_PG_ERRORS);
	check(fs_metrics_value(FS_M_PG_ERRORS) == 1, "counted in memory");

	if (mkdtemp(dir) == NULL)
		return 1;
	/*
	 * The series that alerts watch with increase() are there at 0 before
	 * any process of their program ran: reconcile's first run may be the
	 * one that finds a violation, and a series that appears at 1 is no
	 * increase to Prometheus (FlashsaleReconcileViolation, FlashsaleForgedOrders).
	 */
	text = scrape(dir);
	check(text != NULL && has_line(text, "flashsale_reconcile_violations_total{program=\"flashsale-admin\"} 0"),
	    "reconcile's violations at 0 before flashsale-admin ever ran");
	check(text != NULL &&
		has_line(text, "flashsale_consumer_unauthenticated_total{program=\"flashsale-consumer\",reason=\"bad_mac\"} 0"),
	    "forged orders at 0 before the consumer ever ran");
	check(text != NULL && has_line(text, "flashsale_processes{program=\"flashsale-admin\"} 0"),
	    "and no live process of it");
	free(text);
	setenv("FLASHSALE_METRICS_DIR", dir, 1);
	check(fs_metrics_open("Bad Name") == -1, "a program name outside [a-z0-9-] is refused");
	check(fs_metrics_open("test-parent") == 0, "block file mapped");
	check(fs_metrics_value(FS_M_PG_ERRORS) == 1, "what memory counted moves into the block");
	snprintf(name, sizeof(name), "test-parent.%ld.metrics", (long)getpid());
	check(file_exists(dir, name), "the block is <program>.<pid>.metrics");
	fs_metrics_gauge_set(FS_M_WORKERS, 4);
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, 1);
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, -1);
	fs_metrics_add(FS_M_KAFKA_QUEUE_WAIT_US, 2000123);

	run_child();
	run_child();
	write_file(dir, "nginx-sold_out.ticks", ".\n.\n.\n.\n.\n");
	write_file(dir, "Bad-Name.ticks", ".\n");
	write_file(dir, "junk.1.metrics", "not a block");

	for (int round = 0; round < 2; round++) {
		text = scrape(dir);
		check(text != NULL, "scrape");
		if (text == NULL)
			break;
		check(has_line(text, "flashsale_pg_errors_total{program=\"test-parent\"} 1"),
		    "a live process's counter");
		check(has_line(text, "flashsale_redis_errors_total{program=\"test-child\"} 6"),
		    "two ended processes summed once");
		check(has_line(text, "flashsale_http_requests_total{program=\"test-child\",code=\"202\"} 4"),
		    "answers by code");
		check(strstr(text, "code=\"999\"") == NULL, "codes outside 100-599 are not counted");
		check(has_line(text,
			  "flashsale_http_request_duration_seconds_bucket{program=\"test-child\",le=\"0.00025\"} 0"),
		    "300 us is above the 250 us bucket");
		check(has_line(text,
			  "flashsale_http_request_duration_seconds_bucket{program=\"test-child\",le=\"0.0005\"} 2"),
		    "and inside the 500 us one (cumulative)");
		check(has_line(text,
			  "flashsale_http_request_duration_seconds_bucket{program=\"test-child\",le=\"5\"} 2"),
		    "7 s is above the last bound");
		check(has_line(text,
			  "flashsale_http_request_duration_seconds_bucket{program=\"test-child\",le=\"+Inf\"} 4"),
		    "+Inf holds every request");
		check(has_line(text, "flashsale_http_request_duration_seconds_count{program=\"test-child\"} 4"),
		    "count");
		check(has_line(text, "flashsale_http_request_duration_seconds_sum{program=\"test-child\"} 14.000600"),
		    "sum in seconds");
		check(has_line(text, "flashsale_kafka_queue_wait_seconds_total{program=\"test-parent\"} 2.000123"),
		    "microseconds counted, shown in seconds");
		check(has_line(text, "flashsale_workers{program=\"test-parent\"} 4") &&
			strstr(text, "flashsale_workers{program=\"test-child\"}") == NULL,
		    "gauges of live processes only");
		check(has_line(text, "flashsale_workers_busy{program=\"test-parent\"} 0"),
		    "a gauge back to zero");
		check(has_line(text, "flashsale_processes{program=\"test-parent\"} 1") &&
			has_line(text, "flashsale_processes{program=\"test-child\"} 0"),
		    "live processes per program");
		check(has_line(text, "flashsale_answers_without_handler_total{by=\"nginx\",answer=\"sold_out\"} 5"),
		    "ticks: one per line");
		check(strstr(text, "Bad") == NULL, "a ticks file with a bad name is ignored");
		check(strstr(text, "# TYPE flashsale_consumer_orders_total counter") != NULL,
		    "every family has its TYPE");
		free(text);
	}
	check(file_exists(dir, "retired.test-child.metrics"), "ended processes folded per program");
	check(!file_exists(dir, "junk.1.metrics"), "a file that is no block is removed");

	/* The cost of one count, for the record (not asserted: the machine is shared). */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < N; i++)
		fs_metrics_count(FS_M_CONSUMER_BATCHES);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	check(fs_metrics_value(FS_M_CONSUMER_BATCHES) == N, "ten million counts, none lost");
	printf("# %.1f ns per count\n",
	    ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / N);

	snprintf(name, sizeof(name), "rm -rf '%s'", dir);
	if (system(name) != 0)
		return 1;
	return failures == 0 ? 0 : 1;
}
