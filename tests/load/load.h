/*
 * flashsale-load: what its files share (flashsale-load.c says what it
 * does). load_parse.c reads the command line and the token file,
 * load_http.c parses the server's answers, load_run.c opens the
 * connections and runs the sale, load_queue.c walks the waiting room's
 * journey (join, status, pass, purchase) with load_qwire.c reading its
 * answers and solving its proofs of work, load_report.c prints what
 * happened, load_selftest.c checks the parser and the queue's helpers.
 */
#ifndef FS_LOAD_H
#define FS_LOAD_H

/* Included first by each file: the configuration and the feature macros. */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

/* epoll, getrusage and friends are outside C11: ask for POSIX 2008 + XSI. */
#if !defined(_GNU_SOURCE) && !defined(_XOPEN_SOURCE)
#define _XOPEN_SOURCE 700
#endif

#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define LD_NAME			"flashsale-load"
#define LD_LINE_MAX		4096	/* token-file line, without CR LF */
#define LD_SHOPPERS_MAX		1000000
#define LD_ARENA_MAX		((size_t)1 << 31)	/* rendered requests */
#define LD_READ_BUF		(1 << 20)	/* token-file read buffer */
#define LD_HEAD_MAX		8192	/* response status line and headers */
#define LD_CHUNK_LINE_MAX	1024	/* chunk-size line with extensions */
#define LD_TRAILER_MAX		8192
#define LD_BODY_MAX		((uint64_t)64 << 20)	/* skipped; bounded */
#define LD_RECV_BUF		65536
#define LD_EVENTS_MAX		1024
#define LD_CONNECTIONS_MAX	20000
#define LD_RETRIES_MAX		10
#define LD_REQUESTS_MAX		(LD_SHOPPERS_MAX * (1LL + LD_RETRIES_MAX))
#define LD_DURATION_MAX_S	3600	/* record times fit uint32 us */
#define LD_TIMEOUT_MAX_MS	600000
#define LD_BACKOFF_MAX_MS	10000
#define LD_BACKOFF_CAP_MS	2000	/* longest network-error backoff */
#define LD_RETRY_AFTER_MAX_S	60
#define LD_JITTER_US		250000	/* spread after a Retry-After */
#define LD_WARMUP_MAX_US	2000000	/* connecting, without --start-at */
#define LD_START_AHEAD_MAX_MS	(24 * 3600 * 1000LL)
#define LD_SWEEP_US		50000	/* request timeout granularity */
#define LD_SECOND_US		1000000
#define LD_BODY_KEEP		2048	/* response body bytes kept for reading */
#define LD_QREQ_MAX		2048	/* a queue journey's request, rendered */
#define LD_QTOKEN_MAX		192	/* a ticket or a pass, NUL included */
#define LD_SUB_MAX		96	/* an account id (the token's sub) */
#define LD_BOT_JOINS_MAX	16
#define LD_ITEMS_MAX		100	/* --other-items: the sale's distinct purchase paths */
#define LD_POLL_RATE_MAX	1000
#define LD_JOIN_RATE_MAX	1000000
#define LD_POLLS_INFLIGHT_MAX	4
#define LD_REACT_MAX_MS		60000

/* The steps of the waiting room's journey; a job is (shopper, step). */
enum ld_kind {
	LD_K_BUY,		/* the purchase (the only step without a queue) */
	LD_K_JOIN,
	LD_K_PASS,
	LD_K_POLL,		/* the status document: no shopper */
	LD_K__MAX
};
#define LD_JOB_SHIFT		20	/* shoppers < 2^20 (LD_SHOPPERS_MAX) */
#define LD_JOB(s, k)		((uint32_t)(s) | (uint32_t)(k) << LD_JOB_SHIFT)
#define LD_JOB_SHOPPER(j)	((j) & ((1U << LD_JOB_SHIFT) - 1))
#define LD_JOB_KIND(j)		((enum ld_kind)((j) >> LD_JOB_SHIFT))

/* Outcomes, as counted, reported and plotted. */
enum ld_cat {
	LD_CAT_202,
	LD_CAT_409,
	LD_CAT_410,
	LD_CAT_429,
	LD_CAT_503,
	LD_CAT_OTHER,
	LD_CAT_NETERR,
	LD_CAT__MAX
};

/* Why a request got no HTTP answer. */
enum ld_neterr {
	LD_NE_NONE,
	LD_NE_CONNECT,
	LD_NE_SEND,
	LD_NE_RECV,
	LD_NE_CLOSED,
	LD_NE_TIMEOUT,
	LD_NE_PROTOCOL,
	LD_NE__MAX
};

/* Where the incremental response parser stands. */
enum ld_rsp_state {
	LD_RSP_HEAD,		/* status line and headers, kept in head[] */
	LD_RSP_LENGTH,		/* Content-Length body, skipped */
	LD_RSP_CHUNK_SIZE,
	LD_RSP_CHUNK_EXT,
	LD_RSP_CHUNK_SIZE_LF,
	LD_RSP_CHUNK_DATA,
	LD_RSP_CHUNK_DATA_CR,
	LD_RSP_CHUNK_DATA_LF,
	LD_RSP_TRAILER_START,
	LD_RSP_TRAILER_LINE,
	LD_RSP_TRAILER_LF,
	LD_RSP_UNTIL_CLOSE,	/* no length given: the body ends at EOF */
	LD_RSP_DONE,
	LD_RSP__MAX
};

enum ld_prs {
	LD_PRS_MORE,
	LD_PRS_DONE,
	LD_PRS_ERROR,
	LD_PRS__MAX
};

struct ld_rsp {
	enum ld_rsp_state state;
	int		 status;
	int		 keep_alive;
	int		 retry_after;	/* seconds; -1 when absent or a date */
	uint64_t	 remaining;	/* body or chunk bytes left to skip */
	uint64_t	 body;		/* body bytes announced or seen */
	size_t		 line;		/* bytes of a chunk line or trailers */
	unsigned	 digits;	/* hex digits of the chunk size */
	size_t		 head_len;
	size_t		 line_start;	/* current header line in head[] */
	char		 errstr[96];
	char		 head[LD_HEAD_MAX];
	size_t		 kept;		/* body bytes in kbody[] (the first ones) */
	char		 kbody[LD_BODY_KEEP];
};

struct ld_opts {
	const char	*tokens;
	const char	*host;
	const char	*csv;
	int64_t		 port;
	int64_t		 connections;
	int64_t		 duration_max;	/* seconds from the opening */
	int64_t		 requests_max;	/* 0: shoppers * (1 + retries) */
	int64_t		 retries;
	int64_t		 backoff_ms;
	int64_t		 timeout_ms;
	int64_t		 start_at;	/* unix ms; 0: open after the warm-up */
	int64_t		 expect_202;
	int64_t		 seed;
	/* Two populations: bots press at once, people after a reaction. */
	int64_t		 bots_permille;
	int64_t		 react_min_ms;
	int64_t		 react_max_ms;	/* 0: nobody waits (one burst) */
	/* The waiting room's journey (--queue). */
	const char	*queue;		/* "<sub> <token> <purchase path>" lines */
	const char	*queue_csv;
	int64_t		 sale;
	int64_t		 bot_joins;
	int64_t		 poll_rate;	/* status documents asked per second */
	int64_t		 page_poll_ms;	/* a person's page asks this often */
	int		 join_only;	/* the journey stops once joined */
	int64_t		 join_rate;	/* joins a second at most (0: as fast as possible) */
	int		 other_items;	/* a pass told 410 buys another item */
	int64_t		 walk_away_permille;	/* people who join, then never come back */
	int64_t		 source_ips;	/* 0: the kernel's choice */
	int		 get;		/* GET instead of POST */
	int		 pass_header;	/* tokens are passes (Flashsale-Pass) */
	int		 progress;
	int		 self_test;
	int		 help;
};

struct ld_retry {
	int64_t		 due_us;
	uint32_t	 shopper;
};

struct ld_record {
	uint32_t	 t_us;		/* completion, from the opening */
	uint32_t	 latency_us;
	int16_t		 status;	/* 0: network error */
	uint8_t		 attempt;
	uint8_t		 neterr;	/* enum ld_neterr */
};

struct ld_conn {
	int		 fd;
	uint32_t	 gen;		/* tells stale epoll events apart */
	int		 connecting;
	int		 want_out;	/* EPOLLOUT is registered */
	int64_t		 shopper;	/* -1 while free */
	unsigned	 attempt;
	uint32_t	 job;		/* LD_JOB(shopper, kind) */
	const char	*req;		/* the request being sent */
	size_t		 req_len;
	char		*qbuf;		/* a queue step's request (--queue) */
	size_t		 sent;		/* request bytes written */
	int64_t		 dispatch_us;
	int64_t		 write_us;	/* first write: latency starts here */
	struct ld_rsp	 rsp;
};

struct ld_queue;

struct ld_run {
	struct ld_opts	 o;
	struct ld_queue	*q;		/* the journey's state; NULL without --queue */
	struct sockaddr_storage addr;
	socklen_t	 addrlen;
	char		 hosthdr[80];

	/* Shoppers: their requests rendered once, in one arena. */
	char		*arena;
	size_t		 arena_len;
	size_t		 arena_cap;
	uint32_t	*req_off;
	uint16_t	*req_len;
	uint8_t		*attempts;
	uint8_t		*outcome;	/* enum ld_cat + 1; 0: unfinished */
	size_t		 nshoppers;
	size_t		 shoppers_cap;

	/* Shoppers waiting for a connection, first come first served. */
	uint32_t	*ready;		/* jobs */
	size_t		 ready_head;
	size_t		 ready_len;
	size_t		 ready_cap;
	size_t		 heap_cap;

	/* Shoppers waiting to retry: a min-heap on the due time. */
	struct ld_retry	*heap;
	size_t		 heap_len;

	struct ld_conn	*conns;
	size_t		 nconns;
	uint32_t	*free_open;	/* free connections with a socket */
	size_t		 nfree_open;
	uint32_t	*free_closed;	/* free connections to reconnect */
	size_t		 nfree_closed;

	struct ld_record *recs;
	size_t		 nrecs;
	size_t		 recs_cap;

	int		 ep;
	uint64_t	 rng;
	int64_t		 t0_us;		/* monotonic time of the opening */
	int64_t		 t0_unix_ms;
	int64_t		 deadline_us;
	int64_t		 end_us;
	const char	*stop_reason;
	struct rusage	 ru0;

	uint64_t	 sent;		/* requests handed to a connection */
	uint64_t	 inflight;
	uint64_t	 done;		/* shoppers with a final outcome */
	uint64_t	 cat[LD_CAT__MAX];
	uint64_t	 neterr[LD_NE__MAX];
	uint64_t	 status[600];
	uint64_t	 connects;
	uint64_t	 idle_closes;
	uint64_t	 warm_fails;
	uint64_t	 cut;		/* in flight at the stop */
	uint64_t	 late_retries;	/* a retry would fall after the stop */
	uint64_t	 prev_completed;
	int64_t		 prev_us;
	int		 last_errno;
	char		 last_proto[96];
};

/* Set by SIGINT and SIGTERM: the run stops, the summary is printed. */
extern volatile sig_atomic_t ld_stop_signal;

/* flashsale-load.c: messages and clocks. */
void	 ld_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
int64_t	 ld_now_us(void);
int64_t	 ld_unix_us(void);
int64_t	 ld_cpu_us(const struct rusage *);

/* load_parse.c: the command line and the token file. */
void	 ld_usage(FILE *);
int	 ld_opts_parse(struct ld_opts *, int, char **);
int	 ld_addr_parse(struct ld_run *);
int	 ld_tokens_load(struct ld_run *);

/* load_http.c: the incremental HTTP/1.1 response parser. */
void	 ld_rsp_reset(struct ld_rsp *);
enum ld_prs ld_rsp_feed(struct ld_rsp *, const char *, size_t, size_t *);
enum ld_prs ld_rsp_eof(struct ld_rsp *);

/* load_run.c: the connections and the run. */
uint64_t ld_rand(struct ld_run *);
int64_t	 ld_rand_below(struct ld_run *, int64_t);
int	 ld_is_bot(const struct ld_run *, size_t);
int	 ld_walks_away(const struct ld_run *, size_t);
int64_t	 ld_react_us(struct ld_run *);
void	 ld_schedule(struct ld_run *, int64_t, uint32_t);
void	 ld_record(struct ld_run *, const struct ld_conn *, int, int, int64_t);
int64_t	 ld_retry_delay_us(struct ld_run *, unsigned, int);
int	 ld_run_setup(struct ld_run *);
void	 ld_run_free(struct ld_run *);
int	 ld_warmup(struct ld_run *, struct epoll_event *, char *);
int	 ld_loop(struct ld_run *, struct epoll_event *, char *);
enum ld_cat ld_cat_of(int);

/* load_queue.c: the waiting room's journey (--queue). */
int	 ld_queue_load(struct ld_run *);
int	 ld_queue_start(struct ld_run *);
void	 ld_queue_render(struct ld_run *, struct ld_conn *);
void	 ld_queue_done(struct ld_run *, struct ld_conn *, int, int, int64_t);
void	 ld_queue_tick(struct ld_run *, int64_t);
int64_t	 ld_queue_next_us(const struct ld_run *);
int	 ld_queue_csv_write(const struct ld_run *);
void	 ld_queue_summary(const struct ld_run *);
void	 ld_queue_free(struct ld_queue *);

/* load_qwire.c: the queue's answers and proofs (the self-test checks them). */
int	 ld_json_str(const char *, size_t, const char *, char *, size_t);
int	 ld_json_int(const char *, size_t, const char *, int64_t *);
int	 ld_json_time_ms(const char *, size_t, const char *, int64_t *);
int	 ld_pow_solve(uint64_t, const char *, unsigned, uint32_t *);
int	 ld_pow_ok(uint64_t, const char *, uint32_t, unsigned);

/* load_report.c: what the run did. */
void	 ld_progress(struct ld_run *, int64_t);
int	 ld_csv_write(const struct ld_run *);
int	 ld_summary(struct ld_run *);

/* load_selftest.c: the parser's self-test (TAP); 0 when it passes. */
int	 ld_self_test(void);

#endif
