#include "config.h"

#include "log.h"
#include "settle.h"

/* Confirms the live orders of o's sale among orders[from..n); 0 or -1. */
static int
confirm_sale(fs_stock *stock, const struct fs_order *const *orders, size_t from, size_t n,
    struct fs_settle_counts *counts)
{
	enum { BATCH = 500 };
	const char *ids[BATCH];
	uint64_t sale = orders[from]->sale;
	size_t k = 0;

	for (size_t j = from; j < n; j++) {
		if (!fs_orders_status_live(orders[j]->status) || orders[j]->sale != sale)
			continue;
		ids[k++] = orders[j]->id;
		if (k == BATCH) {
			if (fs_stock_confirm(stock, sale, ids, k) != 0)
				return -1;
			counts->confirmed += k;
			k = 0;
		}
	}
	if (k > 0) {
		if (fs_stock_confirm(stock, sale, ids, k) != 0)
			return -1;
		counts->confirmed += k;
	}
	return 0;
}

/* True when an earlier live order of the same sale was confirmed with this one. */
static int
confirmed_before(const struct fs_order *const *orders, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (fs_orders_status_live(orders[j]->status) && orders[j]->sale == orders[i]->sale)
			return 1;
	return 0;
}

int
fs_settle_holds(fs_stock *stock, const struct fs_order *const *orders, size_t n,
    struct fs_settle_counts *counts)
{
	for (size_t i = 0; i < n; i++) {
		const struct fs_order *o = orders[i];
		int rel;

		if (fs_orders_status_live(o->status)) {
			if (!confirmed_before(orders, i) &&
			    confirm_sale(stock, orders, i, n, counts) != 0)
				return -1;
			continue;
		}
		if ((rel = fs_stock_release(stock, o->sale, o->item, o->id)) == 1)
			counts->released++;
		else if (rel < 0 && stock->err == FS_STOCK_ERR_IO)
			return -1;
		else if (rel < 0)
			fs_log_error("order %s: %s", o->id, stock->errstr);
	}
	return 0;
}
