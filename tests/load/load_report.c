/* flashsale-load: the progress lines, the CSV and the summary. */
#include "load.h"

static const char *const ld_cat_names[LD_CAT__MAX] = {
	"202", "409", "410", "429", "503", "other", "neterr"
};

static const char *const ld_neterr_names[LD_NE__MAX] = {
	"none", "connect", "send", "recv", "closed", "timeout", "protocol"
};

void
ld_progress(struct ld_run *run, int64_t now)
{
	uint64_t completed = run->nrecs;
	double dt = (double)(now - run->prev_us) / 1e6;

	fprintf(stderr, "[%8.3fs] sent=%" PRIu64 " answered=%" PRIu64
	    " 202=%" PRIu64 " 409=%" PRIu64 " 410=%" PRIu64 " 429=%" PRIu64
	    " 503=%" PRIu64 " other=%" PRIu64 " neterr=%" PRIu64
	    " inflight=%" PRIu64 " rps=%.0f\n",
	    (double)(now - run->t0_us) / 1e6, run->sent,
	    completed - run->cat[LD_CAT_NETERR], run->cat[LD_CAT_202],
	    run->cat[LD_CAT_409], run->cat[LD_CAT_410], run->cat[LD_CAT_429],
	    run->cat[LD_CAT_503], run->cat[LD_CAT_OTHER],
	    run->cat[LD_CAT_NETERR], run->inflight,
	    dt > 0 ? (double)(completed - run->prev_completed) / dt : 0.0);
	run->prev_completed = completed;
	run->prev_us = now;
}

/*
 * Results.
 */

int
ld_csv_write(const struct ld_run *run)
{
	const struct ld_record *r;
	FILE *f = NULL;
	size_t i;

	if ((f = fopen(run->o.csv, "w")) == NULL)
		goto fail;
	fputs("t_ms,status,latency_us,attempt\n", f);
	for (i = 0; i < run->nrecs; i++) {
		r = &run->recs[i];
		fprintf(f, "%u.%03u,%d,%u,%u\n", r->t_us / 1000,
		    r->t_us % 1000, r->status, r->latency_us, r->attempt);
	}
	if (ferror(f)) {
		errno = EIO;
		goto fail;
	}
	if (fclose(f) != 0) {
		f = NULL;
		goto fail;
	}
	return 0;
fail:
	ld_warn("%s: %s", run->o.csv, strerror(errno));
	if (f != NULL)
		fclose(f);
	return -1;
}

static int
ld_cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest sample with p/10000 of them at or below it. */
static uint32_t
ld_pct(const uint32_t *v, size_t n, uint64_t p)
{
	uint64_t rank;

	if (n == 0)
		return 0;
	rank = (p * n + 9999) / 10000;
	return v[rank > 0 ? rank - 1 : 0];
}

struct ld_dist {
	uint64_t	 n;
	uint32_t	 p50, p90, p99, p999, max;
};

static void
ld_dist_of(uint32_t *v, size_t n, struct ld_dist *d)
{
	qsort(v, n, sizeof(*v), ld_cmp_u32);
	d->n = n;
	d->p50 = ld_pct(v, n, 5000);
	d->p90 = ld_pct(v, n, 9000);
	d->p99 = ld_pct(v, n, 9900);
	d->p999 = ld_pct(v, n, 9990);
	d->max = n > 0 ? v[n - 1] : 0;
}

/* What the summary prints, computed once from the records. */
struct ld_figures {
	struct ld_dist	 dist[LD_CAT__MAX + 1];	/* by outcome, then all */
	uint64_t	 final[LD_CAT__MAX + 1];	/* shoppers' last; unfinished */
	uint64_t	 peak;		/* completions in the best second */
	uint64_t	 unsent;	/* shoppers left waiting */
	int64_t		 nth_us;	/* opening to the Nth 202; -1: never */
	int64_t		 last_us;	/* opening to the last 202; -1: none */
	uint64_t	 bots, won, bots_won;	/* shoppers, by final 202 */
	int64_t		 cpu_us;	/* own CPU during the run */
	int64_t		 cpu_all_us;	/* with loading and the CSV */
	double		 el;		/* seconds from the opening */
	double		 per;		/* CPU us per request */
};

/* Latencies grouped by outcome, each group sorted, then all of them. */
static int
ld_latencies(const struct ld_run *run, struct ld_figures *f)
{
	size_t i, k, off[LD_CAT__MAX + 1], fill[LD_CAT__MAX];
	uint32_t *lat;

	if ((lat = malloc((run->nrecs + 1) * sizeof(*lat))) == NULL)
		return -1;
	off[0] = 0;
	for (k = 0; k < LD_CAT__MAX; k++)
		off[k + 1] = off[k] + run->cat[k];
	memcpy(fill, off, sizeof(fill));
	for (i = 0; i < run->nrecs; i++)
		lat[fill[ld_cat_of(run->recs[i].status)]++] =
		    run->recs[i].latency_us;
	for (k = 0; k < LD_CAT__MAX; k++)
		ld_dist_of(lat + off[k], off[k + 1] - off[k], &f->dist[k]);
	for (i = 0; i < run->nrecs; i++)
		lat[i] = run->recs[i].latency_us;
	ld_dist_of(lat, run->nrecs, &f->dist[LD_CAT__MAX]);
	free(lat);
	return 0;
}

/* The completions of the best second, from 100 ms bins. */
static int
ld_best_second(const struct ld_run *run, uint64_t *peak)
{
	size_t i, nbins = run->end_us > run->t0_us ?
	    (size_t)((run->end_us - run->t0_us) / 100000) + 2 : 2;
	uint64_t *bins, win;

	if ((bins = calloc(nbins, sizeof(*bins))) == NULL)
		return -1;
	for (i = 0; i < run->nrecs; i++)
		if (run->recs[i].t_us / 100000 < nbins)
			bins[run->recs[i].t_us / 100000]++;
	for (i = win = *peak = 0; i < nbins; i++) {
		win += bins[i] - (i >= 10 ? bins[i - 10] : 0);
		if (win > *peak)
			*peak = win;
	}
	free(bins);
	return 0;
}

static int
ld_figures_of(const struct ld_run *run, struct ld_figures *f)
{
	struct rusage ru;
	uint64_t n202 = 0;
	size_t i;

	memset(f, 0, sizeof(*f));
	f->el = (double)(run->end_us - run->t0_us) / 1e6;
	if (f->el <= 0)
		f->el = 1e-6;
	getrusage(RUSAGE_SELF, &ru);
	f->cpu_us = ld_cpu_us(&ru) - ld_cpu_us(&run->ru0);
	f->cpu_all_us = ld_cpu_us(&ru);
	f->per = run->nrecs > 0 ? (double)f->cpu_us / (double)run->nrecs : 0;
	if (ld_latencies(run, f) == -1 || ld_best_second(run, &f->peak) == -1)
		return -1;
	/* Records are in completion order, so the Nth 202 is the Nth seen. */
	f->nth_us = -1;
	for (i = 0; i < run->nrecs && run->o.expect_202 > 0; i++)
		if (run->recs[i].status == 202 &&
		    ++n202 == (uint64_t)run->o.expect_202) {
			f->nth_us = run->recs[i].t_us;
			break;
		}
	f->last_us = -1;
	for (i = 0; i < run->nrecs; i++)
		if (run->recs[i].status == 202)
			f->last_us = run->recs[i].t_us;
	for (i = 0; i < run->nshoppers; i++) {
		f->final[run->outcome[i] == 0 ? LD_CAT__MAX :
		    run->outcome[i] - 1U]++;
		f->bots += (uint64_t)ld_is_bot(run, i);
		f->won += run->outcome[i] == LD_CAT_202 + 1;
		f->bots_won += run->outcome[i] == LD_CAT_202 + 1 &&
		    ld_is_bot(run, i);
	}
	f->unsent = run->ready_len + run->heap_len;
	return 0;
}

/* The statuses counted as "other", and the network errors, if any. */
static void
ld_print_errors(const struct ld_run *run)
{
	int code, first = 1;
	size_t k;

	for (code = 100; code < 600; code++) {
		if (run->status[code] == 0 ||
		    ld_cat_of(code) != LD_CAT_OTHER)
			continue;
		printf("%s%d=%" PRIu64, first ? "other statuses: " : " ", code,
		    run->status[code]);
		first = 0;
	}
	if (!first)
		putchar('\n');
	if (run->cat[LD_CAT_NETERR] == 0 && run->warm_fails == 0)
		return;
	printf("network errors:");
	for (k = 1; k < LD_NE__MAX; k++)
		printf(" %s=%" PRIu64, ld_neterr_names[k], run->neterr[k]);
	printf(" (warm-up connect failures %" PRIu64 ")", run->warm_fails);
	if (run->last_errno != 0)
		printf("; last system error: %s", strerror(run->last_errno));
	if (run->last_proto[0] != '\0')
		printf("; last protocol error: %s", run->last_proto);
	putchar('\n');
}

/* The summary for people: what ran, the latency table, the outcomes. */
static void
ld_print_text(const struct ld_run *run, const struct ld_figures *f)
{
	size_t k;

	printf("%s: %zu shoppers, %zu connections to %s, retries %" PRId64
	    ", opening at %" PRId64 " ms, stopped: %s\n", LD_NAME,
	    run->nshoppers, run->nconns, run->hosthdr, run->o.retries,
	    run->t0_unix_ms, run->stop_reason);
	printf("elapsed %.3f s from the opening; %" PRIu64 " requests sent, "
	    "%zu completed, %" PRIu64 " cut at the stop, %" PRIu64
	    " shoppers left waiting\n", f->el, run->sent, run->nrecs, run->cut,
	    f->unsent);
	printf("requests/s %.1f overall, %" PRIu64 " in the best second\n",
	    (double)run->nrecs / f->el, f->peak);
	printf("%-8s %10s %10s %10s %10s %10s %10s %10s   (latency us, "
	    "nearest rank)\n", "outcome", "count", "req/s", "p50", "p90",
	    "p99", "p99.9", "max");
	for (k = 0; k <= LD_CAT__MAX; k++)
		printf("%-8s %10" PRIu64 " %10.1f %10u %10u %10u %10u %10u\n",
		    k < LD_CAT__MAX ? ld_cat_names[k] : "all", f->dist[k].n,
		    (double)f->dist[k].n / f->el, f->dist[k].p50, f->dist[k].p90,
		    f->dist[k].p99, f->dist[k].p999, f->dist[k].max);
	ld_print_errors(run);
	printf("connects started %" PRIu64 ", idle connections closed by the "
	    "server %" PRIu64 "\n", run->connects, run->idle_closes);
	printf("shoppers' final outcome:");
	for (k = 0; k < LD_CAT__MAX; k++)
		printf(" %s=%" PRIu64, ld_cat_names[k], f->final[k]);
	printf(" unfinished=%" PRIu64 " (retries past the stop %" PRIu64 ")\n",
	    f->final[LD_CAT__MAX], run->late_retries);
	if (run->o.expect_202 > 0 && f->nth_us >= 0)
		printf("opening to the 202 number %" PRId64 ": %.3f ms\n",
		    run->o.expect_202, (double)f->nth_us / 1000);
	else if (run->o.expect_202 > 0)
		printf("opening to the 202 number %" PRId64 ": never "
		    "(%" PRIu64 " 202s)\n", run->o.expect_202,
		    run->cat[LD_CAT_202]);
	printf("own CPU %.3f s during the run: %.2f us per request "
	    "(%.3f s with loading and CSV)\n", (double)f->cpu_us / 1e6, f->per,
	    (double)f->cpu_all_us / 1e6);
}

/* One line for scripts: stable keys, no spaces inside values. */
static void
ld_print_line(const struct ld_run *run, const struct ld_figures *f)
{
	const struct ld_dist *d;
	const char *name;
	size_t k;

	printf("summary shoppers=%zu connections=%zu retries=%" PRId64
	    " stop=%s sent=%" PRIu64 " completed=%zu cut=%" PRIu64
	    " unsent=%" PRIu64 " elapsed_ms=%.3f rps=%.1f peak_rps_1s=%"
	    PRIu64, run->nshoppers, run->nconns, run->o.retries,
	    run->stop_reason, run->sent, run->nrecs, run->cut, f->unsent,
	    f->el * 1000, (double)run->nrecs / f->el, f->peak);
	for (k = 0; k <= LD_CAT__MAX; k++) {
		name = k < LD_CAT__MAX ? ld_cat_names[k] : "all";
		d = &f->dist[k];
		printf(" n_%s=%" PRIu64 " rps_%s=%.1f p50_%s_us=%u p90_%s_us=%u"
		    " p99_%s_us=%u p999_%s_us=%u max_%s_us=%u", name, d->n,
		    name, (double)d->n / f->el, name, d->p50, name, d->p90,
		    name, d->p99, name, d->p999, name, d->max);
	}
	for (k = 0; k < LD_CAT__MAX; k++)
		printf(" final_%s=%" PRIu64, ld_cat_names[k], f->final[k]);
	printf(" final_unfinished=%" PRIu64, f->final[LD_CAT__MAX]);
	for (k = 1; k < LD_NE__MAX; k++)
		printf(" neterr_%s=%" PRIu64, ld_neterr_names[k],
		    run->neterr[k]);
	printf(" expect_202=%" PRId64 " t_nth_202_ms=%.3f t_last_202_ms=%.3f"
	    " bots=%" PRIu64 " won=%" PRIu64 " bots_won=%" PRIu64
	    " cpu_us=%" PRId64 " cpu_us_per_req=%.3f\n", run->o.expect_202,
	    f->nth_us >= 0 ? (double)f->nth_us / 1000 : -1.0,
	    f->last_us >= 0 ? (double)f->last_us / 1000 : -1.0, f->bots,
	    f->won, f->bots_won, f->cpu_us, f->per);
}

/*
 * Who won: the bots' share of the units beside their share of the
 * accounts (a fair sale gives a ratio near 1).
 */
static void
ld_print_fairness(const struct ld_run *run, const struct ld_figures *f)
{
	size_t nshoppers = run->nshoppers, stayed = 0, k;
	double acc = 100.0 * (double)f->bots / (double)nshoppers;
	double won = f->won > 0 ? 100.0 * (double)f->bots_won /
	    (double)f->won : 0.0;

	printf("fairness: bots %.1f%% of accounts won %.1f%% of units "
	    "(ratio %.2f)\n", acc, won, acc > 0 ? won / acc : 0.0);
	if (run->o.walk_away_permille == 0)
		return;
	/*
	 * With people walking away the units go to the accounts that stayed
	 * (bots never walk away): their share there is the fair one.
	 */
	for (k = 0; k < nshoppers; k++)
		stayed += (size_t)!ld_walks_away(run, k);
	acc = stayed > 0 ? 100.0 * (double)f->bots / (double)stayed : 0.0;
	printf("fairness-stayed: bots %.1f%% of the %zu accounts that stayed "
	    "won %.1f%% of units (ratio %.2f)\n", acc, stayed, won,
	    acc > 0 ? won / acc : 0.0);
}

int
ld_summary(struct ld_run *run)
{
	struct ld_figures f;

	if (ld_figures_of(run, &f) == -1) {
		ld_warn("out of memory for the summary");
		return -1;
	}
	ld_print_text(run, &f);
	if (run->o.bots_permille > 0)
		ld_print_fairness(run, &f);
	if (run->q != NULL)
		ld_queue_summary(run);
	ld_print_line(run, &f);
	fflush(stdout);
	return 0;
}
