/*
 * fs-json: the shell tests read JSON as JSON with it (tests/integration/
 * lib.sh's json_get, the benchmarks, the load rehearsal). Not installed.
 *
 *   fs-json [-l] [-q] [-w PATH=VALUE]... PATH
 *
 * Reads JSON values from standard input (one, or several one after the
 * other, as a topic's messages come; 32 MiB at most) and prints, for each
 * value, what is at PATH, one a line: a string bare, anything else as JSON
 * text ("." prints the value as it was written).
 *
 *   PATH   "." the value itself; ".name" a member; "[N]" element N of an
 *          array; "[]" every element (of an object: every member's
 *          value); chained: ".items[0].itemId",
 *          ".data.groups[].rules[].name".
 *   -w PATH=VALUE  only the values where PATH is VALUE (as printed);
 *          several -w must all hold.
 *   -l     JSON lines: one value a line, and a line that is not JSON is
 *          skipped (an order topic carries junk on purpose).
 *   -q     a value without PATH fails quietly (json_get's optional members).
 *
 * Exits 0 when every value (selected by -w) has PATH; 1 when one has not,
 * or the input is not JSON, is empty or too long (with a message naming
 * the value and its line); 2 on a usage error.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define INPUT_MAX   (32u << 20) /* bytes of standard input */
#define DEPTH_MAX   64          /* nesting of a value */
#define STEPS_MAX   32          /* steps of a path */
#define NAME_MAX_   128         /* bytes of a member name in a path */
#define WHERE_MAX   8           /* -w options */
#define PRINT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

enum step_kind { STEP_MEMBER, STEP_INDEX, STEP_EACH };

struct step {
	enum step_kind kind;
	char name[NAME_MAX_];
	size_t index;
};

struct path {
	const char *text;
	struct step steps[STEPS_MAX];
	int n;
};

struct where {
	struct path path;
	const char *want;
};

struct opts {
	int lines, quiet, nwhere;
	struct where where[WHERE_MAX];
	struct path path;
};

/* What a walk of a path over one value saw: its ends, or where it stopped. */
struct walk {
	const char *want; /* NULL: print every end; else: does one end equal it? */
	int ends, matched, missing;
};

static void
usage(void)
{
	fprintf(stderr, "usage: fs-json [-l] [-q] [-w PATH=VALUE]... PATH\n"
			"  PATH: . | .name | [N] | [] chained, e.g. .items[0].itemId\n");
	exit(2);
}

/* One step of a path at *s (".name", "[N]", "[]"); advances *s. 0 or -1. */
static int
step_parse(const char **s, struct step *st)
{
	const char *p = *s;
	size_t len;
	char *end;

	if (*p == '.') {
		len = strspn(++p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-");
		if (len == 0 || len >= sizeof(st->name))
			return -1;
		st->kind = STEP_MEMBER;
		memcpy(st->name, p, len);
		st->name[len] = '\0';
		*s = p + len;
		return 0;
	}
	if (*p != '[')
		return -1;
	if (p[1] == ']') {
		st->kind = STEP_EACH;
		*s = p + 2;
		return 0;
	}
	if (p[1] < '0' || p[1] > '9')
		return -1;
	errno = 0;
	st->index = strtoul(p + 1, &end, 10);
	if (errno != 0 || *end != ']' || st->index > INT_MAX)
		return -1;
	st->kind = STEP_INDEX;
	*s = end + 1;
	return 0;
}

static int
path_parse(const char *text, struct path *p)
{
	const char *s = text;

	p->text = text;
	p->n = 0;
	if (strcmp(text, ".") == 0)
		return 0;
	while (*s != '\0') {
		if (p->n == STEPS_MAX || step_parse(&s, &p->steps[p->n]) != 0)
			return -1;
		p->n++;
	}
	return p->n > 0 ? 0 : -1;
}

/* The text a value prints as: a string bare, anything else as JSON. */
static const char *
value_text(json_object *v, size_t *len)
{
	const char *t;

	if (json_object_is_type(v, json_type_string)) {
		*len = (size_t)json_object_get_string_len(v);
		return json_object_get_string(v);
	}
	t = json_object_to_json_string_ext(v, PRINT_FLAGS);
	*len = strlen(t);
	return t;
}

/* An end of a walk: printed, or compared with the wanted text. */
static void
walk_end(struct walk *w, json_object *v, const char *raw, size_t rawlen)
{
	const char *t = raw;
	size_t len = rawlen;

	w->ends++;
	if (t == NULL)
		t = value_text(v, &len);
	if (w->want == NULL) {
		fwrite(t, 1, len, stdout);
		putchar('\n');
	} else if (strlen(w->want) == len && memcmp(w->want, t, len) == 0) {
		w->matched = 1;
	}
}

/*
 * Follows the steps of p from step i over v (raw: v as written, for ".").
 * A member or element that is not there counts as missing; "[]" goes on
 * with each element.
 */
static void
walk(struct walk *w, const struct path *p, int i, json_object *v, const char *raw, size_t rawlen)
{
	const struct step *st = &p->steps[i];
	json_object *next;

	if (i == p->n) {
		walk_end(w, v, raw, rawlen);
		return;
	}
	switch (st->kind) {
	case STEP_MEMBER:
		if (!json_object_is_type(v, json_type_object) ||
		    !json_object_object_get_ex(v, st->name, &next))
			break;
		walk(w, p, i + 1, next, NULL, 0);
		return;
	case STEP_INDEX:
		if (!json_object_is_type(v, json_type_array) ||
		    st->index >= json_object_array_length(v))
			break;
		walk(w, p, i + 1, json_object_array_get_idx(v, st->index), NULL, 0);
		return;
	case STEP_EACH:
		if (json_object_is_type(v, json_type_object)) {
			json_object_object_foreach(v, key, val) {
				(void)key;
				walk(w, p, i + 1, val, NULL, 0);
			}
			return;
		}
		if (!json_object_is_type(v, json_type_array))
			break;
		for (size_t k = 0; k < json_object_array_length(v); k++)
			walk(w, p, i + 1, json_object_array_get_idx(v, k), NULL, 0);
		return;
	}
	w->missing++;
}

/* Line number (from 1) of byte off of the input. */
static size_t
line_of(const char *in, size_t off)
{
	size_t line = 1;

	for (size_t i = 0; i < off; i++)
		line += in[i] == '\n';
	return line;
}

/*
 * One value of the input: printed when every -w holds. 0, or 1 when it
 * has not the path.
 */
static int
value_do(const struct opts *o, json_object *v, const char *raw, size_t rawlen, size_t nth,
    size_t line)
{
	struct walk w;

	for (int i = 0; i < o->nwhere; i++) {
		memset(&w, 0, sizeof(w));
		w.want = o->where[i].want;
		walk(&w, &o->where[i].path, 0, v, raw, rawlen);
		if (!w.matched)
			return 0;
	}
	memset(&w, 0, sizeof(w));
	walk(&w, &o->path, 0, v, raw, rawlen);
	if (w.missing == 0)
		return 0;
	if (!o->quiet)
		fprintf(stderr, "fs-json: value %zu (line %zu) has no %s\n", nth, line, o->path.text);
	return 1;
}

static size_t
skip_space(const char *in, size_t off, size_t len)
{
	while (off < len && strchr(" \t\r\n", in[off]) != NULL && in[off] != '\0')
		off++;
	return off;
}

/*
 * Parses the value that starts at in[off] strictly; *end gets the offset
 * after it (and the blanks after it). NULL, with *bad set, when it is not
 * JSON. The input ends with a NUL byte beyond len, which ends a number.
 */
static json_object *
value_parse(json_tokener *tok, char *in, size_t off, size_t len, size_t *end, int *bad)
{
	json_object *v;
	size_t stop;
	char saved;

	/* Where the value ends (json-c's loose mode stops after it)... */
	json_tokener_reset(tok);
	json_tokener_set_flags(tok, 0);
	v = json_tokener_parse_ex(tok, in + off, (int)(len + 1 - off));
	if (json_tokener_get_error(tok) != json_tokener_success) {
		*bad = 1;
		*end = off + json_tokener_get_parse_end(tok);
		return NULL;
	}
	json_object_put(v);
	stop = off + json_tokener_get_parse_end(tok);
	/* ... then that much again strictly, on its own. */
	saved = in[stop];
	in[stop] = '\0';
	json_tokener_reset(tok);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	v = json_tokener_parse_ex(tok, in + off, (int)(stop + 1 - off));
	in[stop] = saved;
	*bad = json_tokener_get_error(tok) != json_tokener_success;
	*end = skip_space(in, stop, len);
	return *bad ? NULL : v;
}

/* The blanks around in[off .. off + len) taken off: its length. */
static size_t
trimmed(const char *in, size_t *off, size_t len)
{
	while (len > 0 && strchr(" \t\r\n", in[*off]) != NULL)
		(*off)++, len--;
	while (len > 0 && strchr(" \t\r\n", in[*off + len - 1]) != NULL)
		len--;
	return len;
}

/* The input as values one after the other. 0, or 1. */
static int
run_values(const struct opts *o, char *in, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(DEPTH_MAX);
	size_t off = skip_space(in, 0, len), end, nth = 0, raw;
	json_object *v;
	int bad, rc = 0;

	if (tok == NULL || off == len) {
		fprintf(stderr, "fs-json: %s\n", tok == NULL ? "out of memory" : "no JSON value on standard input");
		json_tokener_free(tok);
		return 1;
	}
	while (off < len) {
		nth++;
		if ((v = value_parse(tok, in, off, len, &end, &bad)) == NULL && bad) {
			fprintf(stderr, "fs-json: value %zu (line %zu) is not JSON: %s\n", nth,
			    line_of(in, end), json_tokener_error_desc(json_tokener_get_error(tok)));
			rc = 1;
			break;
		}
		raw = off;
		rc |= value_do(o, v, in + raw, trimmed(in, &raw, end - off), nth, line_of(in, off));
		json_object_put(v);
		off = end;
	}
	json_tokener_free(tok);
	return rc;
}

/* The input as JSON lines; a line that is not JSON is skipped. 0, or 1. */
static int
run_lines(const struct opts *o, char *in, size_t len)
{
	json_tokener *tok = json_tokener_new_ex(DEPTH_MAX);
	size_t off = 0, line = 0, eol, end, raw;
	json_object *v;
	int bad, rc = 0;

	if (tok == NULL)
		return fprintf(stderr, "fs-json: out of memory\n"), 1;
	for (; off < len; off = eol + 1) {
		line++;
		for (eol = off; eol < len && in[eol] != '\n';)
			eol++;
		in[eol] = '\0';
		raw = off;
		if (trimmed(in, &raw, eol - off) == 0)
			continue;
		v = value_parse(tok, in, raw, eol, &end, &bad);
		if (!bad && end == eol)
			rc |= value_do(o, v, in + raw, trimmed(in, &raw, eol - raw), line, line);
		json_object_put(v);
	}
	json_tokener_free(tok);
	return rc;
}

/* Standard input, NUL-terminated, at most INPUT_MAX bytes; NULL if not. */
static char *
read_input(size_t *len)
{
	char *in = malloc(INPUT_MAX + 2);
	size_t n;

	if (in == NULL)
		return fprintf(stderr, "fs-json: out of memory\n"), NULL;
	n = fread(in, 1, INPUT_MAX + 1, stdin);
	if (ferror(stdin) || n > INPUT_MAX) {
		fprintf(stderr, "fs-json: %s\n",
		    ferror(stdin) ? "cannot read standard input" : "input over 32 MiB");
		free(in);
		return NULL;
	}
	if (memchr(in, '\0', n) != NULL) {
		fprintf(stderr, "fs-json: the input holds a NUL byte: not JSON\n");
		free(in);
		return NULL;
	}
	in[n] = '\0';
	*len = n;
	return in;
}

static void
opts_parse(int argc, char **argv, struct opts *o)
{
	struct where *w;
	char *eq;

	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-l") == 0) {
			o->lines = 1;
		} else if (strcmp(argv[i], "-q") == 0) {
			o->quiet = 1;
		} else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc && o->nwhere < WHERE_MAX) {
			w = &o->where[o->nwhere++];
			if ((eq = strchr(argv[++i], '=')) == NULL)
				usage();
			*eq = '\0';
			w->want = eq + 1;
			if (path_parse(argv[i], &w->path) != 0)
				usage();
		} else if (i == argc - 1 && path_parse(argv[i], &o->path) == 0) {
			return;
		} else {
			usage();
		}
	}
	usage();
}

int
main(int argc, char **argv)
{
	struct opts o;
	size_t len;
	char *in;
	int rc;

	opts_parse(argc, argv, &o);
	if ((in = read_input(&len)) == NULL)
		return 1;
	rc = o.lines ? run_lines(&o, in, len) : run_values(&o, in, len);
	free(in);
	if (fflush(stdout) != 0)
		return fprintf(stderr, "fs-json: cannot write: %s\n", strerror(errno)), 1;
	return rc;
}
