/* Unit test of lib/watch: reading the purchase outcomes out of /metrics. */
#include "config.h"

#include <string.h>

#include "watch.h"
#include "expect.h"

int
main(void)
{
	static const char text[] =
	    "# HELP flashsale_http_requests_total Answers by program and status.\n"
	    "# TYPE flashsale_http_requests_total counter\n"
	    "flashsale_http_requests_total{program=\"flashsale-purchase\",code=\"202\"} 17\n"
	    "flashsale_http_requests_total{program=\"flashsale-order\",code=\"200\"} 5\n"
	    "flashsale_http_requests_total{program=\"flashsale-purchase\",code=\"410\"} 2.5e3\n"
	    "flashsale_http_requests_total{program=\"flashsale-purchase\"} 9\n"
	    "flashsale_http_requests_total_bogus{program=\"flashsale-purchase\",code=\"503\"} 1\n"
	    "flashsale_answers_without_handler_total{by=\"nginx\",answer=\"sold_out\"} 123456\n"
	    "flashsale_answers_without_handler_total{by=\"nginx\",answer=\"a-very-long-answer-name-that-does-not-fit\"} 1\n"
	    "flashsale_answers_without_handler_total{by=\"edge\"";
	struct fs_watch_count c[FS_WATCH_COUNTS_MAX];
	int n = fs_watch_parse_counts(text, c, FS_WATCH_COUNTS_MAX);

	check(n == 3, "three purchase outcomes: other programs, bad lines and labels are skipped");
	check(n >= 1 && strcmp(c[0].name, "202") == 0 && c[0].value == 17 && c[0].rate == -1,
	    "the handler's answers by status");
	check(n >= 2 && strcmp(c[1].name, "410") == 0 && c[1].value == 2500, "a value in e notation");
	check(n >= 3 && strcmp(c[2].name, "nginx:sold_out") == 0 && c[2].value == 123456,
	    "answers without the handler, by who and what");
	check(fs_watch_parse_counts(text, c, 1) == 1, "at most max");
	check(fs_watch_parse_counts("", c, FS_WATCH_COUNTS_MAX) == 0, "nothing in nothing");
	return failures == 0 ? 0 : 1;
}
