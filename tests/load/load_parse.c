/* flashsale-load: the command line and the token file. */
#include "load.h"

#include <stddef.h>

/*
 * Command line.
 */

void
ld_usage(FILE *f)
{
	fputs("usage: " LD_NAME " --tokens FILE|--queue FILE --port N [options]\n"
	    "  --tokens FILE       a line a shopper: <bearer token> <path>\n"
	    "  --host ADDR         127.0.0.0/8 or ::1 only (127.0.0.1)\n"
	    "  --port N            server port\n"
	    "  --connections C     keep-alive connections (256)\n"
	    "  --duration-max S    hard stop after the opening (60)\n"
	    "  --requests-max N    in all (shoppers * (1 + retries))\n"
	    "  --retries R         after a 503 or a network error (0)\n"
	    "  --backoff-ms MS     first backoff after a network error (100)\n"
	    "  --timeout-ms MS     a request unanswered by then fails (10000)\n"
	    "  --start-at UNIX_MS  the opening instant (once connected)\n"
	    "  --expect-202 N      time from the opening to the Nth 202\n"
	    "  --csv FILE          t_ms,status,latency_us,attempt a request\n"
	    "                      (status 0: a network error)\n"
	    "  --progress          a line a second on stderr\n"
	    "  --seed N            seed of the retry jitter (the clock)\n"
	    "  --get               GET the paths (a token \"-\": none sent)\n"
	    "  --pass-header       the token is a pass (Flashsale-Pass)\n"
	    "  --source-ips N      connections speak from N addresses\n"
	    "                      127.100.0.1... (IPv4; 0: the kernel's)\n"
	    "  --bots-permille N   this share of shoppers are bots (0): they\n"
	    "                      press at once, people after a reaction\n"
	    "  --react-min-ms MS   a person's reaction, from (0)\n"
	    "  --react-max-ms MS   ... to (0: nobody waits, one burst)\n"
	    "The waiting room's journey (instead of --tokens):\n"
	    "  --queue FILE        a line a shopper: <sub> <token> <path>\n"
	    "                      join, wait, pass, buy with the pass\n"
	    "  --sale S            the sale (its waiting room)\n"
	    "  --bot-joins K       a bot joins from K connections (3)\n"
	    "  --poll-rate R       status documents asked a second (20)\n"
	    "  --page-poll-ms MS   a person's page polls this often (1000)\n"
	    "  --join-only         each shopper joins, nothing more (the\n"
	    "                      join's benchmark); no status polls\n"
	    "  --join-rate R       the shoppers' first joins spread at R a\n"
	    "                      second, in file order (0: all at once)\n"
	    "  --other-items       a shopper whose item answers 410 to its\n"
	    "                      pass buys another item of the file's\n"
	    "                      paths not yet seen sold out, as the sale\n"
	    "                      page offers (off: the journey ends)\n"
	    "  --walk-away-permille N  this share of the people (0) join,\n"
	    "                      then never come back (the tab closed)\n"
	    "  --queue-csv FILE    t_ms,state,joined,admitted,through,\n"
	    "                      units_left,passes_out a status read\n"
	    "  --self-test         check the response parser, then exit\n"
	    "Defaults in parentheses.\n", f);
}

enum ld_opt_kind { LD_OPT_STRING, LD_OPT_INT, LD_OPT_FLAG };

/* The options: where each goes in struct ld_opts, an integer's range. */
static const struct ld_opt {
	const char	*name;
	enum ld_opt_kind kind;
	size_t		 off;
	int64_t		 min;
	int64_t		 max;
} ld_optab[] = {
	{ "tokens", LD_OPT_STRING, offsetof(struct ld_opts, tokens), 0, 0 },
	{ "host", LD_OPT_STRING, offsetof(struct ld_opts, host), 0, 0 },
	{ "csv", LD_OPT_STRING, offsetof(struct ld_opts, csv), 0, 0 },
	{ "port", LD_OPT_INT, offsetof(struct ld_opts, port), 1, 65535 },
	{ "connections", LD_OPT_INT, offsetof(struct ld_opts, connections), 1,
	    LD_CONNECTIONS_MAX },
	{ "duration-max", LD_OPT_INT, offsetof(struct ld_opts, duration_max), 1,
	    LD_DURATION_MAX_S },
	{ "requests-max", LD_OPT_INT, offsetof(struct ld_opts, requests_max), 1,
	    LD_REQUESTS_MAX },
	{ "retries", LD_OPT_INT, offsetof(struct ld_opts, retries), 0,
	    LD_RETRIES_MAX },
	{ "backoff-ms", LD_OPT_INT, offsetof(struct ld_opts, backoff_ms), 1,
	    LD_BACKOFF_MAX_MS },
	{ "timeout-ms", LD_OPT_INT, offsetof(struct ld_opts, timeout_ms), 1,
	    LD_TIMEOUT_MAX_MS },
	/* From 2001 on: a value in seconds is refused, not waited. */
	{ "start-at", LD_OPT_INT, offsetof(struct ld_opts, start_at),
	    1000000000000LL, 100000000000000LL },
	{ "expect-202", LD_OPT_INT, offsetof(struct ld_opts, expect_202), 1,
	    LD_REQUESTS_MAX },
	{ "seed", LD_OPT_INT, offsetof(struct ld_opts, seed), 1, INT64_MAX },
	{ "bots-permille", LD_OPT_INT, offsetof(struct ld_opts, bots_permille),
	    0, 1000 },
	{ "react-min-ms", LD_OPT_INT, offsetof(struct ld_opts, react_min_ms), 0,
	    LD_REACT_MAX_MS },
	{ "react-max-ms", LD_OPT_INT, offsetof(struct ld_opts, react_max_ms), 0,
	    LD_REACT_MAX_MS },
	{ "queue", LD_OPT_STRING, offsetof(struct ld_opts, queue), 0, 0 },
	{ "queue-csv", LD_OPT_STRING, offsetof(struct ld_opts, queue_csv), 0,
	    0 },
	{ "sale", LD_OPT_INT, offsetof(struct ld_opts, sale), 1, INT64_MAX },
	{ "bot-joins", LD_OPT_INT, offsetof(struct ld_opts, bot_joins), 1,
	    LD_BOT_JOINS_MAX },
	{ "poll-rate", LD_OPT_INT, offsetof(struct ld_opts, poll_rate), 1,
	    LD_POLL_RATE_MAX },
	{ "page-poll-ms", LD_OPT_INT, offsetof(struct ld_opts, page_poll_ms),
	    1, LD_REACT_MAX_MS },
	{ "join-only", LD_OPT_FLAG, offsetof(struct ld_opts, join_only), 0, 0 },
	{ "join-rate", LD_OPT_INT, offsetof(struct ld_opts, join_rate), 0,
	    LD_JOIN_RATE_MAX },
	{ "other-items", LD_OPT_FLAG, offsetof(struct ld_opts, other_items), 0,
	    0 },
	{ "walk-away-permille", LD_OPT_INT, offsetof(struct ld_opts,
	    walk_away_permille), 0, 1000 },
	{ "get", LD_OPT_FLAG, offsetof(struct ld_opts, get), 0, 0 },
	{ "pass-header", LD_OPT_FLAG, offsetof(struct ld_opts, pass_header), 0,
	    0 },
	{ "source-ips", LD_OPT_INT, offsetof(struct ld_opts, source_ips), 0,
	    65000 },
	{ "progress", LD_OPT_FLAG, offsetof(struct ld_opts, progress), 0, 0 },
	{ "self-test", LD_OPT_FLAG, offsetof(struct ld_opts, self_test), 0, 0 },
	{ "help", LD_OPT_FLAG, offsetof(struct ld_opts, help), 0, 0 },
};

/* The option named by the nlen bytes at arg, or NULL. */
static const struct ld_opt *
ld_opt_find(const char *arg, size_t nlen)
{
	size_t i;

	for (i = 0; i < sizeof(ld_optab) / sizeof(ld_optab[0]); i++)
		if (strlen(ld_optab[i].name) == nlen &&
		    strncmp(ld_optab[i].name, arg, nlen) == 0)
			return &ld_optab[i];
	return NULL;
}

/* Stores val, a string or an integer within the option's range. */
static int
ld_opt_set(struct ld_opts *o, const struct ld_opt *opt, const char *val)
{
	char *end;
	long long v;

	if (opt->kind == LD_OPT_STRING) {
		if (*val == '\0') {
			ld_warn("--%s: empty value", opt->name);
			return -1;
		}
		*(const char **)(void *)((char *)o + opt->off) = val;
		return 0;
	}
	errno = 0;
	v = strtoll(val, &end, 10);
	if (errno != 0 || end == val || *end != '\0' || v < opt->min ||
	    v > opt->max) {
		ld_warn("--%s: '%s' is not an integer in %" PRId64 "..%" PRId64,
		    opt->name, val, opt->min, opt->max);
		return -1;
	}
	*(int64_t *)(void *)((char *)o + opt->off) = v;
	return 0;
}

int
ld_opts_parse(struct ld_opts *o, int argc, char **argv)
{
	const struct ld_opt *opt;
	const char *arg, *val, *eq;
	size_t nlen;
	int a;

	for (a = 1; a < argc; a++) {
		arg = argv[a];
		if (strncmp(arg, "--", 2) != 0) {
			ld_warn("unexpected argument '%s'", arg);
			return -1;
		}
		arg += 2;
		eq = strchr(arg, '=');
		nlen = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
		if ((opt = ld_opt_find(arg, nlen)) == NULL) {
			ld_warn("unknown option '--%.*s'", (int)nlen, arg);
			return -1;
		}
		if (opt->kind == LD_OPT_FLAG) {
			if (eq != NULL) {
				ld_warn("--%s takes no value", opt->name);
				return -1;
			}
			*(int *)(void *)((char *)o + opt->off) = 1;
			continue;
		}
		if (eq != NULL)
			val = eq + 1;
		else if (a + 1 < argc)
			val = argv[++a];
		else {
			ld_warn("--%s needs a value", opt->name);
			return -1;
		}
		if (ld_opt_set(o, opt, val) == -1)
			return -1;
	}
	return 0;
}

/* Loopback literals only: this tool must never load anyone else. */
int
ld_addr_parse(struct ld_run *run)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)&run->addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&run->addr;
	char host[64];
	size_t n = strlen(run->o.host);
	int port = (int)run->o.port;

	if (n >= 2 && run->o.host[0] == '[' && run->o.host[n - 1] == ']')
		snprintf(host, sizeof(host), "%.*s", (int)(n - 2),
		    run->o.host + 1);
	else if (strcmp(run->o.host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	else if (n < sizeof(host))
		snprintf(host, sizeof(host), "%s", run->o.host);
	else
		goto fail;
	memset(&run->addr, 0, sizeof(run->addr));
	if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
		if ((ntohl(sin->sin_addr.s_addr) >> 24) != 127)
			goto fail;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		run->addrlen = sizeof(*sin);
		snprintf(run->hosthdr, sizeof(run->hosthdr), "%s:%d", host,
		    port);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &sin6->sin6_addr) == 1) {
		if (!IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
			goto fail;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		run->addrlen = sizeof(*sin6);
		snprintf(run->hosthdr, sizeof(run->hosthdr), "[%s]:%d", host,
		    port);
		return 0;
	}
fail:
	ld_warn("--host %s: only loopback addresses (127.0.0.0/8, ::1) are "
	    "allowed, and names are not resolved", run->o.host);
	return -1;
}

/*
 * Token file.
 */

static int
ld_visible(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] <= 0x20 || (unsigned char)p[i] >= 0x7f)
			return 0;
	return 1;
}

static void
ld_put(struct ld_run *run, const char *p, size_t n)
{
	memcpy(run->arena + run->arena_len, p, n);
	run->arena_len += n;
}

/* Room for one more shopper in the request offsets and lengths. */
static int
ld_shoppers_grow(struct ld_run *run)
{
	size_t cap;
	void *p;

	if (run->nshoppers < run->shoppers_cap)
		return 0;
	cap = run->shoppers_cap == 0 ? 4096 : run->shoppers_cap * 2;
	if (cap > LD_SHOPPERS_MAX)
		cap = LD_SHOPPERS_MAX;
	if ((p = realloc(run->req_off, cap * sizeof(uint32_t))) == NULL)
		return -1;
	run->req_off = p;
	if ((p = realloc(run->req_len, cap * sizeof(uint16_t))) == NULL)
		return -1;
	run->req_len = p;
	run->shoppers_cap = cap;
	return 0;
}

/* Room for need more bytes in the arena: 0, -1 out of memory, -2 too big. */
static int
ld_arena_reserve(struct ld_run *run, size_t need)
{
	size_t cap;
	void *p;

	if (run->arena_len + need <= run->arena_cap)
		return 0;
	cap = run->arena_cap == 0 ? (size_t)1 << 20 : run->arena_cap * 2;
	if (cap > LD_ARENA_MAX)
		cap = LD_ARENA_MAX;
	if (run->arena_len + need > cap)
		return -2;
	if ((p = realloc(run->arena, cap)) == NULL)
		return -1;
	run->arena = p;
	run->arena_cap = cap;
	return 0;
}

/*
 * Renders one shopper's request; a line is "<token> <path>": a POST with
 * the token as a bearer token, or (--pass-header) as a waiting room's
 * pass; with --get a GET, without any token when it is "-".
 */
static int
ld_tokens_line(struct ld_run *run, const char *line, size_t len,
    size_t lineno)
{
	static const char m2[] = " HTTP/1.1\r\nHost: ",
	    m4[] = "\r\nContent-Length: 0\r\n\r\n";
	const char *m1 = run->o.get ? "GET " : "POST ";
	const char *m3 = run->o.pass_header ? "\r\nFlashsale-Pass: " :
	    "\r\nAuthorization: Bearer ";
	const char *path;
	size_t toklen, pathlen, need, i;
	int rc;

	if (len > 0 && line[len - 1] == '\r')
		len--;
	if (len == 0 || line[0] == '#')
		return 0;
	if (len > LD_LINE_MAX) {
		ld_warn("%s:%zu: line too long (over %d bytes)", run->o.tokens,
		    lineno, LD_LINE_MAX);
		return -1;
	}
	for (toklen = 0; toklen < len && line[toklen] != ' ' &&
	    line[toklen] != '\t'; toklen++)
		;
	for (i = toklen; i < len && (line[i] == ' ' || line[i] == '\t'); i++)
		;
	path = line + i;
	for (pathlen = len - i; pathlen > 0 && (path[pathlen - 1] == ' ' ||
	    path[pathlen - 1] == '\t'); pathlen--)
		;
	if (pathlen == 0 || path[0] != '/' || !ld_visible(line, toklen) ||
	    !ld_visible(path, pathlen)) {
		ld_warn("%s:%zu: expected '<token> </path?query>' in "
		    "printable ASCII", run->o.tokens, lineno);
		return -1;
	}
	if (run->nshoppers == LD_SHOPPERS_MAX) {
		ld_warn("%s: more than %d shoppers", run->o.tokens,
		    LD_SHOPPERS_MAX);
		return -1;
	}
	if (toklen == 1 && line[0] == '-' && run->o.get) {
		m3 = "";
		toklen = 0;
	}
	need = strlen(m1) + pathlen + sizeof(m2) - 1 +
	    strlen(run->hosthdr) + strlen(m3) + toklen + sizeof(m4) - 1;
	if (ld_shoppers_grow(run) == -1 || (rc = ld_arena_reserve(run, need)) == -1) {
		ld_warn("out of memory reading %s", run->o.tokens);
		return -1;
	}
	if (rc == -2) {
		ld_warn("%s: requests too big in all (over %zu MiB)",
		    run->o.tokens, LD_ARENA_MAX >> 20);
		return -1;
	}
	run->req_off[run->nshoppers] = (uint32_t)run->arena_len;
	run->req_len[run->nshoppers] = (uint16_t)need;
	ld_put(run, m1, strlen(m1));
	ld_put(run, path, pathlen);
	ld_put(run, m2, sizeof(m2) - 1);
	ld_put(run, run->hosthdr, strlen(run->hosthdr));
	ld_put(run, m3, strlen(m3));
	ld_put(run, line, toklen);
	ld_put(run, m4, sizeof(m4) - 1);
	run->nshoppers++;
	return 0;
}

/* Reads the file in big blocks; a line never outgrows the block. */
int
ld_tokens_load(struct ld_run *run)
{
	char *buf = NULL;
	const char *nl;
	size_t have = 0, start, len, lineno = 0;
	ssize_t n;
	int fd = -1, eof = 0;

	if ((buf = malloc(LD_READ_BUF)) == NULL) {
		ld_warn("out of memory");
		goto fail;
	}
	if ((fd = open(run->o.tokens, O_RDONLY | O_CLOEXEC)) == -1) {
		ld_warn("%s: %s", run->o.tokens, strerror(errno));
		goto fail;
	}
	while (!eof) {
		n = read(fd, buf + have, LD_READ_BUF - have);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			ld_warn("%s: %s", run->o.tokens, strerror(errno));
			goto fail;
		}
		eof = n == 0;
		have += (size_t)n;
		start = 0;
		while (start < have) {
			nl = memchr(buf + start, '\n', have - start);
			if (nl == NULL && !eof)
				break;
			len = nl != NULL ? (size_t)(nl - (buf + start)) :
			    have - start;
			lineno++;
			if (memchr(buf + start, '\0', len) != NULL) {
				ld_warn("%s:%zu: NUL byte", run->o.tokens,
				    lineno);
				goto fail;
			}
			if (ld_tokens_line(run, buf + start, len, lineno) == -1)
				goto fail;
			start += len + (nl != NULL);
		}
		/* The line being read, plus CR, must fit what a line may be. */
		if (have - start > LD_LINE_MAX + 1) {
			ld_warn("%s:%zu: line too long (over %d bytes)",
			    run->o.tokens, lineno + 1, LD_LINE_MAX);
			goto fail;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	if (run->nshoppers == 0) {
		ld_warn("%s: no shoppers", run->o.tokens);
		goto fail;
	}
	close(fd);
	free(buf);
	return 0;
fail:
	if (fd != -1)
		close(fd);
	free(buf);
	return -1;
}
