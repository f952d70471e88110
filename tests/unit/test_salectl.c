/*
 * Unit test of lib/salectl against a real PostgreSQL and Redis
 * (tests/unit/sale_fixture.h): the list of sales with their sums and
 * states, closing an open sale (Redis stops selling at once, PostgreSQL
 * says the new end) and extending one, and every refusal, with exact ends.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "salectl.h"
#include "expect.h"
#include "sale_fixture.h"

/* ends_at of the sale in PostgreSQL, in ms. */
static long long
ends_in_pg(struct fixture *f, uint64_t sale)
{
	char id[24];

	snprintf(id, sizeof(id), "%" PRIu64, sale);
	return fixture_long(f, "SELECT floor(extract(epoch FROM ends_at) * 1000)::bigint FROM sales "
	    "WHERE id = $1", id);
}

static void
test_states(void)
{
	struct fs_salectl_sale s = { .starts_ms = 1000, .ends_ms = 2000 };

	check(fs_salectl_state_at(&s, 999) == FS_SALECTL_SCHEDULED &&
	    fs_salectl_state_at(&s, 1000) == FS_SALECTL_OPEN &&
	    fs_salectl_state_at(&s, 1999) == FS_SALECTL_OPEN &&
	    fs_salectl_state_at(&s, 2000) == FS_SALECTL_ENDED,
	    "states: scheduled before the start, open from it, ended at the end exactly");
	check(strcmp(fs_salectl_state_name(FS_SALECTL_SCHEDULED), "scheduled") == 0 &&
	    strcmp(fs_salectl_state_name(FS_SALECTL_OPEN), "open") == 0 &&
	    strcmp(fs_salectl_state_name(FS_SALECTL_ENDED), "ended") == 0,
	    "states: their names as the list prints them");
}

int
main(void)
{
	struct fixture f;
	struct fs_salectl_sale list[4], s;
	struct fs_order o[3];
	struct fs_stock_hold h;
	uint64_t open, sched, ended, item[3];
	int64_t now, ends;
	char err[256];
	int n;

	test_states();
	if (fixture_start(&f, getenv("top_srcdir")) != 0 ||
	    fixture_sale(&f, -5, 3600, 600, 5, &open, &item[0]) != 0 ||
	    fixture_sale(&f, 3600, 600, 600, 3, &sched, &item[1]) != 0 ||
	    fixture_sale(&f, -3, 1, 600, 2, &ended, &item[2]) != 0 ||
	    fixture_buy(&f, open, item[0], "u1", 0, 1, &o[0]) != 0 ||
	    fixture_buy(&f, open, item[0], "u2", 0, 1, &o[1]) != 0) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	now = fs_clock_now_ms();
	n = fs_salectl_list(f.pg, list, 4, err, sizeof(err));
	check(n == 3 && list[0].id == open && list[1].id == sched && list[2].id == ended &&
	    list[0].items == 1 && list[0].quantity == 5 && list[0].sold == 2 &&
	    list[1].quantity == 3 && list[1].sold == 0 && list[0].window_s == 600 &&
	    strcmp(list[0].name, "unit sale") == 0,
	    "list: three sales oldest first, with their items' sums");
	check(n == 3 && fs_salectl_state_at(&list[0], now) == FS_SALECTL_OPEN &&
	    fs_salectl_state_at(&list[1], now) == FS_SALECTL_SCHEDULED &&
	    fs_salectl_state_at(&list[2], now) == FS_SALECTL_ENDED,
	    "list: open, scheduled, ended");
	check(fs_salectl_list(f.pg, list, 2, err, sizeof(err)) == 2 && list[0].id == sched &&
	    list[1].id == ended, "list: at most max, the latest ones");
	check(fs_salectl_get(f.pg, 999999, &s, err, sizeof(err)) == FS_SALECTL_UNKNOWN,
	    "get: an unknown sale");

	/* Close. */
	check(fs_salectl_close(f.pg, f.stock, 999999, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_UNKNOWN, "close: an unknown sale");
	check(fs_salectl_close(f.pg, f.stock, sched, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_NOT_STARTED && ends_in_pg(&f, sched) == s.ends_ms,
	    "close: a scheduled sale is refused, unchanged");
	check(fs_salectl_close(f.pg, f.stock, ended, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_ALREADY_ENDED && ends == s.ends_ms, "close: an ended sale is refused");
	now = fs_clock_now_ms();
	check(fs_salectl_close(f.pg, f.stock, open, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_OK && ends == now && ends_in_pg(&f, open) == now,
	    "close: the open sale ends now, in PostgreSQL to the millisecond");
	check(fs_stock_reserve(f.stock, open, item[0], "u3", "01900000-0000-7000-8000-0000000000c3",
	    fs_clock_now_ms(), &h) == FS_STOCK_SOLD_OUT && fixture_left(&f, open, item[0]) == 3,
	    "close: Redis sells nothing more (3 units stay)");
	check(fs_salectl_close(f.pg, f.stock, open, fs_clock_now_ms(), &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_ALREADY_ENDED, "close: twice is refused");

	/* Extend. */
	now = fs_clock_now_ms();
	check(fs_salectl_extend(f.pg, f.stock, sched, 0, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_BAD_SECONDS && fs_salectl_extend(f.pg, f.stock, sched,
	    FS_SALECTL_EXTEND_MAX + 1, now, &s, &ends, err, sizeof(err)) == FS_SALECTL_BAD_SECONDS,
	    "extend: 0 s and more than 30 days are refused");
	check(fs_salectl_get(f.pg, sched, &s, err, sizeof(err)) == FS_SALECTL_OK &&
	    fs_salectl_extend(f.pg, f.stock, sched, 600, now, &list[3], &ends, err, sizeof(err)) ==
	    FS_SALECTL_OK && ends == s.ends_ms + 600000 && ends_in_pg(&f, sched) == ends,
	    "extend: a scheduled sale ends 600 s later, in PostgreSQL too");
	check(fs_salectl_extend(f.pg, f.stock, open, 600, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_ALREADY_ENDED && ends_in_pg(&f, open) == ends,
	    "extend: a closed sale is never reopened");
	check(fs_salectl_extend(f.pg, f.stock, 999999, 60, now, &s, &ends, err, sizeof(err)) ==
	    FS_SALECTL_UNKNOWN, "extend: an unknown sale");

	/* Redis first: when it is away, nothing changes in PostgreSQL either. */
	test_redis_stop(&f.redis_srv);
	ends = ends_in_pg(&f, sched);
	check(fs_salectl_extend(f.pg, f.stock, sched, 60, fs_clock_now_ms(), &s, &ends, err,
	    sizeof(err)) == FS_SALECTL_ERROR && ends_in_pg(&f, sched) == s.ends_ms,
	    "Redis away: the extension fails and PostgreSQL keeps the end");
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}
