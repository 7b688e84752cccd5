/*
 * nddctl doc-submit, doc-query, doc-get, doc-delete: documents and their
 * near duplicates.
 *
 * One document per request, except for doc-submit --jsonl, which reads
 * many, one JSON object per line ({"url": ..., "text": ...} or {"url": ...,
 * "html": ...}), sends them in doc batches (--batch documents, and within
 * half the daemon's max frame), keeps --window batches in flight and prints
 * one result line per input line, in input order, as the single
 * doc-submit would (a batch's neighbours are those that fit in about
 * 1 KiB: near_total, or a "more" line, counts the rest).  A line that is
 * not a document gets its own error line and is not sent.
 *
 * -n names the namespace of every document of the command, as it names
 * URL batches' (nddd_set_doc_namespace); --match the answer its
 * neighbours are found by (nddd_set_doc_match: verified or hamming; by
 * default the daemon's).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "nddctl.h"

/* A client for document requests in namespace ns (NULL: the default
 * one, checked already) by the answer match, or NULL when the daemon
 * cannot be reached. */
static nddd_client *
doc_connect(const struct nddctl_common *co, const char *ns,
    enum nddd_match match)
{
	nddd_client *c = nddctl_connect(co);

	if (c != NULL && nddd_set_doc_namespace(c, ns) == -1) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NULL;
	}
	if (c != NULL)
		nddd_set_doc_match(c, match);
	return c;
}

/* Parses --match ANSWER into *m: false (said why) if it is not one. */
static bool
match_arg(const char *arg, enum nddd_match *m)
{
	if (strcmp(arg, "verified") == 0)
		*m = NDDD_MATCH_VERIFIED;
	else if (strcmp(arg, "hamming") == 0)
		*m = NDDD_MATCH_HAMMING;
	else {
		fprintf(stderr, "nddctl: --match: verified or hamming, not "
		    "\"%s\"\n", arg);
		return false;
	}
	return true;
}

/* Parses -n NAMESPACE into *ns: false (said why) if it cannot be one. */
static bool
namespace_arg(const char *arg, const char **ns)
{
	if (!nddctl_namespace_ok(arg))
		return false;
	*ns = arg;
	return true;
}

/*
 * The bytes of a request the daemon takes for a document of namespace ns:
 * its frame ([server] max_frame, --max-frame) less the request's own
 * fields.
 */
static size_t
doc_room(const struct nddctl_common *co, const char *ns)
{
	size_t fields = 64 + (co->conn.token ? strlen(co->conn.token) + 6 :
	    0) + (ns != NULL ? strlen(ns) + 3 : 0);

	return co->max_frame > fields ? co->max_frame - fields : 0;
}

/*
 * The whole of FILE, or of standard input for "-" or NULL, if it holds at
 * most limit bytes.  A larger one is not read into memory: a file's size
 * says so at once, a pipe is read no further than limit bytes; then NULL
 * with *too_large set.  NULL too when it cannot be read (said on stderr).
 */
static char *
read_body(const char *path, size_t limit, size_t *len, bool *too_large)
{
	FILE *f = (path == NULL || strcmp(path, "-") == 0) ? stdin :
	    fopen(path, "rb");
	const char *name = f == stdin ? "standard input" : path;
	char *buf = NULL;
	size_t cap = 0;
	struct stat sb;
	bool failed = false;

	*len = 0;
	*too_large = false;
	if (f == NULL) {
		perror(path);
		return NULL;
	}
	if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) &&
	    (uint64_t)sb.st_size > limit) {
		*too_large = true;
		goto out;
	}
	for (;;) {
		size_t n;

		if (*len == cap) {
			char *grown;

			if (cap > limit) {
				*too_large = true;
				break;
			}
			cap = cap ? cap * 2 : 65536;
			if (cap > limit)
				cap = limit + 1;	/* one byte tells */
			if ((grown = realloc(buf, cap + 1)) == NULL) {
				fprintf(stderr, "nddctl: out of memory\n");
				failed = true;
				break;
			}
			buf = grown;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (*len > limit)
		*too_large = true;
	if (!*too_large && !failed && ferror(f)) {
		perror(name);
		failed = true;
	}
out:
	if (f != stdin)
		fclose(f);
	if (*too_large || failed) {
		free(buf);
		return NULL;
	}
	buf[*len] = '\0';
	return buf;
}

/*
 * A document nddctl refused to read, for want of room in a request: its
 * item's failure, as the daemon would say it.
 */
static int
refuse_large(const struct nddctl_common *co, const char *path, size_t limit,
    const char *key, const char *value)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "%s holds more than %zu bytes, the most "
	    "a request takes with --max-frame %zu (the daemon's [server] "
	    "max_frame)", path == NULL || strcmp(path, "-") == 0 ?
	    "standard input" : path, limit, co->max_frame);
	nddctl_print_failure(co, NDDD_RESOURCE_EXHAUSTED, msg, key, value,
	    value != NULL ? strlen(value) : 0);
	return NDDCTL_EXIT_ITEMS;
}

static json_t *
json_hex(uint64_t fp)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%016" PRIx64, fp);
	return json_string(hex);
}

/*
 * A similarity as JSON writes it with three significant digits (what
 * jansson prints with JSON_REAL_PRECISION(3)), into buf (16 bytes).
 */
static const char *
similarity_text(float v, char buf[16])
{
	snprintf(buf, 16, "%.3g", (double)v);
	if (strpbrk(buf, ".e") == NULL)
		strcat(buf, ".0");
	return buf;
}

static json_t *
json_near(const struct nddd_doc *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->nnear; i++) {
		json_t *o = json_object();

		json_object_set_new(o, "doc_id",
		    json_integer((json_int_t)d->near[i].doc_id));
		json_object_set_new(o, "url", nddctl_json_string(d->near[i].url,
		    d->near[i].url_len));
		json_object_set_new(o, "distance",
		    json_integer(d->near[i].distance));
		if (d->near[i].verified) {
			json_object_set_new(o, "resemblance",
			    json_real(d->near[i].resemblance));
			json_object_set_new(o, "containment",
			    json_real(d->near[i].containment));
		}
		json_array_append_new(a, o);
	}
	return a;
}

/* A neighbour's line: near, id, distance, resemblance and containment
 * ("-" when not verified), URL. */
static void
print_near_text(const struct nddd_doc *d)
{
	char r[16], c[16];

	for (size_t i = 0; i < d->nnear; i++) {
		const struct nddd_neighbour *nb = &d->near[i];

		printf("near\t%" PRIu64 "\t%u\t%s\t%s\t", nb->doc_id,
		    nb->distance, nb->verified ? similarity_text(
		    nb->resemblance, r) : "-", nb->verified ?
		    similarity_text(nb->containment, c) : "-");
		nddctl_put_field(nb->url, strlen(nb->url));
		putchar('\n');
	}
	if (d->near_total > d->nnear)
		printf("more\t%" PRIu64 "\n", d->near_total - d->nnear);
}

/* What a page was judged by, as the protocol names it. */
static const char *
content_name(enum nddd_content c)
{
	return c == NDDD_CONTENT_MAIN ? "main" : c == NDDD_CONTENT_WHOLE ?
	    "whole" : "text";
}

/* Prints a document's result (doc-submit, doc-get), named by url. */
static void
print_doc(const struct nddctl_common *co, const char *url, size_t url_len,
    const struct nddd_doc *d)
{
	char r[16], c[16];

	/* What jansson would print of {"url", "doc_id", "simhash",
	 * "group", "content", "near", "near_total"}, without building it. */
	if (co->json) {
		fputs_unlocked("{\"url\": ", stdout);
		jsonl_put_string(stdout, url, url_len);
		printf(", \"doc_id\": %" PRId64 ", \"simhash\": \"%016" PRIx64
		    "\", \"group\": %" PRId64, (int64_t)d->doc_id, d->simhash,
		    (int64_t)d->group);
		if (d->content != NDDD_CONTENT_TEXT)
			printf(", \"content\": \"%s\"", content_name(
			    d->content));
		fputs_unlocked(", \"near\": [", stdout);
		for (size_t i = 0; i < d->nnear; i++) {
			const struct nddd_neighbour *nb = &d->near[i];

			printf("%s{\"doc_id\": %" PRId64 ", \"url\": ",
			    i > 0 ? ", " : "", (int64_t)nb->doc_id);
			jsonl_put_string(stdout, nb->url, nb->url_len);
			printf(", \"distance\": %u", nb->distance);
			if (nb->verified)
				printf(", \"resemblance\": %s, "
				    "\"containment\": %s", similarity_text(
				    nb->resemblance, r), similarity_text(
				    nb->containment, c));
			putc_unlocked('}', stdout);
		}
		putc_unlocked(']', stdout);
		if (d->near_total > d->nnear)
			printf(", \"near_total\": %" PRId64,
			    (int64_t)d->near_total);
		fputs_unlocked("}\n", stdout);
		return;
	}
	printf("doc\t%" PRIu64 "\t%016" PRIx64 "\t%" PRIu64 "\t",
	    d->doc_id, d->simhash, d->group);
	nddctl_put_field(url, url_len);
	putchar('\n');
	print_near_text(d);
}

/*
 * Prints one reply for the document given as url (NULL when there is
 * none, as for doc-query).  Returns 0, or 1 when the reply is a refusal.
 */
static int
print_reply(const struct nddctl_common *co, const char *url, size_t url_len,
    const struct nddd_reply *r)
{
	json_t *o;

	switch (r->kind) {
	case NDDD_REPLY_ERROR:
		nddctl_print_failure(co, r->code, r->message, "url", url,
		    url_len);
		return 1;
	case NDDD_REPLY_DOC:
		print_doc(co, url, url_len, &r->doc);
		break;
	case NDDD_REPLY_DOC_QUERY:
		if (co->json) {
			o = json_object();
			json_object_set_new(o, "simhash", json_hex(r->doc.simhash));
			if (r->doc.content != NDDD_CONTENT_TEXT)
				json_object_set_new(o, "content", json_string(
				    content_name(r->doc.content)));
			json_object_set_new(o, "near", json_near(&r->doc));
			if (r->doc.near_total > r->doc.nnear)
				json_object_set_new(o, "near_total",
				    json_integer((json_int_t)
				    r->doc.near_total));
			nddctl_print_json(o);
			return 0;
		}
		printf("simhash\t%016" PRIx64 "\n", r->doc.simhash);
		print_near_text(&r->doc);
		break;
	case NDDD_REPLY_DOC_DELETE:
		if (co->json) {
			o = json_object();
			json_object_set_new(o, "url",
			    nddctl_json_string(url, url_len));
			json_object_set_new(o, "status", json_string(
			    r->deleted_id ? "deleted" : "not_found"));
			nddctl_print_json(o);
			return 0;
		}
		printf("%s\t%" PRIu64 "\t", r->deleted_id ? "deleted" :
		    "not_found", r->deleted_id);
		nddctl_put_field(url, url_len);
		putchar('\n');
		break;
	default:
		printf("error\tunexpected reply\n");
		return 1;
	}
	return 0;
}

/* Sends one request built by the caller and prints its reply. */
static int
finish_one(const struct nddctl_common *co, nddd_client *c, uint64_t id,
    int sent, const char *url)
{
	struct nddd_reply *r;
	int status;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL) {
		fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
		nddd_close(c);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	status = print_reply(co, url, url ? strlen(url) : 0, r) ?
	    NDDCTL_EXIT_ITEMS : NDDCTL_EXIT_OK;
	nddd_reply_free(r);
	nddd_close(c);
	return status;
}

/* One line of --jsonl input on its way. */
struct line {
	char *url;		/* NULL for a line without one */
	size_t url_len;
	char *error;		/* the line's own error: it was not sent */
	enum nddd_code code;	/* of that error */
};

/*
 * Lines read together: the documents among them went in one doc batch, in
 * order (the reply's j-th result is the j-th line without an error).
 */
struct batch {
	struct line *lines;
	size_t nlines, cap;
	size_t ndocs;
	uint64_t id;
	struct nddd_reply *reply;
	bool answered;		/* replied to, or nothing was sent */
};

/* The input of --jsonl and what is parsed of it, not yet in a batch. */
struct jsonl_source {
	FILE *f;
	char *buf;		/* getline's */
	size_t cap, lineno;
	bool eof;
	int query_only;
	size_t max_docs, max_bytes, room;
	/* The batch being filled: its documents and where their bodies
	 * are until the batch is queued: lines decoded in the arena, or
	 * jansson's values (roots, NULL for the others). */
	struct nddd_doc_item *items;
	json_t **roots;
	size_t nitems, bytes;
	struct chunk *arena;
	/* A parsed document that did not fit in the last batch, and its
	 * body's copy once that batch's arena is gone. */
	struct line carry;
	struct nddd_doc_item carry_item;
	json_t *carry_root;
	bool carried;
	char *owned;
};

/* A block of the arena lines are decoded in. */
struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

#define ARENA_CHUNK (1u << 20)

/* len bytes of the arena, which keep their place until arena_reset. */
static char *
arena_alloc(struct jsonl_source *src, size_t len)
{
	struct chunk *ch = src->arena;

	if (ch == NULL || ch->cap - ch->used < len) {
		size_t cap = len > ARENA_CHUNK ? len : ARENA_CHUNK;

		if ((ch = malloc(sizeof(*ch) + cap)) == NULL)
			return NULL;
		ch->next = src->arena;
		ch->used = 0;
		ch->cap = cap;
		src->arena = ch;
	}
	ch->used += len;
	return ch->data + ch->used - len;
}

/* Empties the arena, keeping one ordinary chunk; all with all. */
static void
arena_reset(struct jsonl_source *src, bool all)
{
	struct chunk *keep = NULL, *ch, *next;

	for (ch = src->arena; ch != NULL; ch = next) {
		next = ch->next;
		if (!all && keep == NULL && ch->cap == ARENA_CHUNK) {
			keep = ch;
			keep->used = 0;
			keep->next = NULL;
		} else
			free(ch);
	}
	src->arena = keep;
}

static void
line_set_error(struct line *l, enum nddd_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
line_set_error(struct line *l, enum nddd_code code, const char *fmt, ...)
{
	va_list ap;

	l->code = code;
	va_start(ap, fmt);
	if (vasprintf(&l->error, fmt, ap) == -1)
		l->error = strdup("out of memory");
	va_end(ap);
}

/* parse_line's checks of a line's fields (jd), however it was read. */
static int
parse_fields(struct line *l, struct nddd_doc_item *d,
    const struct jsonl_doc *jd, size_t lineno, int query_only)
{
	if (jd->url != NULL) {
		l->url_len = jd->url_len;
		if ((l->url = malloc(l->url_len + 1)) != NULL) {
			memcpy(l->url, jd->url, l->url_len);
			l->url[l->url_len] = '\0';
		}
	}
	if (jd->url == NULL || (jd->text != NULL) == (jd->html != NULL)) {
		line_set_error(l, NDDD_INVALID_ARGUMENT, "line %zu: want "
		    "{\"url\": ..., \"text\": ...} or {\"url\": ..., "
		    "\"html\": ...}", lineno);
		return -1;
	}
	if (l->url == NULL) {
		line_set_error(l, NDDD_INTERNAL, "line %zu: out of memory",
		    lineno);
		return -1;
	}
	*d = (struct nddd_doc_item){
		.url = l->url,
		.url_len = l->url_len,
		.body = jd->html ? jd->html : jd->text,
		.body_len = jd->html ? jd->html_len : jd->text_len,
		.format = jd->html ? NDDD_HTML : NDDD_TEXT,
		.query_only = query_only,
	};
	return 0;
}

/*
 * Parses one line into l and, for a document, d (its body points into
 * the arena or into *root, which the caller releases once the document
 * is queued).  Returns 0 for a document, -1 for a line that is not one
 * (l->error says why).
 */
static int
parse_line(struct jsonl_source *src, const char *buf, size_t len,
    struct line *l, struct nddd_doc_item *d, json_t **root)
{
	size_t lineno = src->lineno;
	struct jsonl_doc jd;
	json_error_t err;
	json_t *url, *text, *html;
	char *copy;

	/* The common lines, decoded in a copy that lasts until the batch
	 * is queued; jansson for the others. */
	*root = NULL;
	if ((copy = arena_alloc(src, len)) != NULL) {
		memcpy(copy, buf, len);
		if (jsonl_parse_doc(copy, len, &jd) == 0)
			return parse_fields(l, d, &jd, lineno, src->query_only);
		src->arena->used -= len;
	}
	*root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
	if (*root == NULL || !json_is_object(*root)) {
		line_set_error(l, NDDD_INVALID_ARGUMENT, "line %zu: not a JSON "
		    "object%s%s", lineno, *root ? "" : ": ",
		    *root ? "" : err.text);
		return -1;
	}
	/* The same checks as for the common lines. */
	memset(&jd, 0, sizeof(jd));
	if (json_is_string(url = json_object_get(*root, "url"))) {
		jd.url = json_string_value(url);
		jd.url_len = json_string_length(url);
	}
	if (json_is_string(text = json_object_get(*root, "text"))) {
		jd.text = json_string_value(text);
		jd.text_len = json_string_length(text);
	}
	if (json_is_string(html = json_object_get(*root, "html"))) {
		jd.html = json_string_value(html);
		jd.html_len = json_string_length(html);
	}
	return parse_fields(l, d, &jd, lineno, src->query_only);
}

/* Room for one more line in b. */
static struct line *
batch_add_line(struct batch *b)
{
	if (b->nlines == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 64;
		struct line *grown = realloc(b->lines, ncap * sizeof(*grown));

		if (grown == NULL)
			return NULL;
		b->lines = grown;
		b->cap = ncap;
	}
	memset(&b->lines[b->nlines], 0, sizeof(b->lines[0]));
	return &b->lines[b->nlines++];
}

/* Adds the parsed document (l, d, root) to the batch being filled. */
static int
batch_add_doc(struct jsonl_source *src, struct batch *b,
    const struct line *l, const struct nddd_doc_item *d, json_t *root,
    size_t size)
{
	struct line *nl = batch_add_line(b);

	if (nl == NULL)
		return -1;
	*nl = *l;
	src->items[src->nitems] = *d;
	src->roots[src->nitems++] = root;
	src->bytes += size;
	b->ndocs++;
	return 0;
}

/*
 * Reads lines into b until it holds max_docs documents or max_bytes of
 * them (a document that does not fit waits for the next batch; one alone
 * may be larger), too many lines, or the input ends.  Returns -1 on an
 * input error or when out of memory.
 */
static int
read_batch(struct jsonl_source *src, struct batch *b)
{
	b->nlines = b->ndocs = 0;
	b->reply = NULL;
	b->answered = false;
	src->nitems = src->bytes = 0;
	if (src->carried) {
		src->carried = false;
		if (batch_add_doc(src, b, &src->carry, &src->carry_item,
		    src->carry_root, nddd_doc_item_size(&src->carry_item)) == -1)
			return -1;
	}
	while (b->ndocs < src->max_docs && b->nlines < 4 * src->max_docs &&
	    !src->eof) {
		struct line l = { 0 };
		struct nddd_doc_item d;
		json_t *root = NULL;
		struct line *bl;
		ssize_t n = getline(&src->buf, &src->cap, src->f);
		size_t size;

		if (n == -1) {
			if (ferror(src->f)) {
				perror("nddctl: --jsonl");
				return -1;
			}
			src->eof = true;
			break;
		}
		src->lineno++;
		if (strspn(src->buf, " \t\r\n") == (size_t)n)
			continue;	/* blank lines carry nothing */
		if (parse_line(src, src->buf, (size_t)n, &l, &d,
		    &root) == 0) {
			size = nddd_doc_item_size(&d);
			if (size > src->room) {
				line_set_error(&l, NDDD_RESOURCE_EXHAUSTED,
				    "line %zu: a document of %zu bytes "
				    "exceeds the max frame", src->lineno,
				    size);
			} else if (b->ndocs > 0 &&
			    src->bytes + size > src->max_bytes) {
				src->carry = l;
				src->carry_item = d;
				src->carry_root = root;
				src->carried = true;
				break;
			} else {
				if (batch_add_doc(src, b, &l, &d, root,
				    size) == -1)
					goto oom;
				continue;
			}
		}
		json_decref(root);
		if ((bl = batch_add_line(b)) == NULL)
			goto oom;
		*bl = l;
		continue;
oom:
		json_decref(root);
		free(l.url);
		free(l.error);
		fprintf(stderr, "nddctl: out of memory\n");
		return -1;
	}
	return 0;
}

/*
 * Releases the bodies of the documents queued (the arena, jansson's
 * values), but that of the document carried to the next batch, which is
 * copied out of the arena.  Returns -1 when out of memory.
 */
static int
release_bodies(struct jsonl_source *src)
{
	for (size_t i = 0; i < src->nitems; i++)
		json_decref(src->roots[i]);
	src->nitems = 0;
	free(src->owned);
	src->owned = NULL;
	if (src->carried && src->carry_root == NULL) {
		if ((src->owned = malloc(src->carry_item.body_len + 1)) ==
		    NULL) {
			fprintf(stderr, "nddctl: out of memory\n");
			return -1;
		}
		memcpy(src->owned, src->carry_item.body,
		    src->carry_item.body_len);
		src->carry_item.body = src->owned;
	}
	arena_reset(src, false);
	return 0;
}

/* Prints a batch's lines; returns whether any failed. */
static bool
print_batch(const struct nddctl_common *co, const struct batch *b)
{
	const struct nddd_reply *r = b->reply;
	bool failed = false;

	for (size_t i = 0, j = 0; i < b->nlines; i++) {
		const struct line *l = &b->lines[i];

		if (l->error != NULL) {
			nddctl_print_failure(co, l->code, l->error, "url",
			    l->url, l->url_len);
			failed = true;
		} else if (r->kind == NDDD_REPLY_DOCS && j < r->ndocs) {
			const struct nddd_doc *d = &r->docs[j++];

			if (d->code == NDDD_OK)
				print_doc(co, l->url, l->url_len, d);
			else {
				nddctl_print_failure(co, d->code, d->message,
				    "url", l->url, l->url_len);
				failed = true;
			}
		} else {
			nddctl_print_failure(co, r->kind == NDDD_REPLY_ERROR ?
			    r->code : NDDD_INTERNAL, r->kind ==
			    NDDD_REPLY_ERROR ? r->message :
			    "reply has too few results", "url", l->url,
			    l->url_len);
			failed = true;
		}
	}
	return failed;
}

static void
batch_clear(struct batch *b)
{
	for (size_t i = 0; i < b->nlines; i++) {
		free(b->lines[i].url);
		free(b->lines[i].error);
	}
	b->nlines = b->ndocs = 0;
	nddd_reply_free(b->reply);
	b->reply = NULL;
}

static int
submit_jsonl(const struct nddctl_common *co, const char *path,
    const char *ns, enum nddd_match match, size_t batch, int query_only)
{
	struct jsonl_source src = { .query_only = query_only };
	unsigned window = co->window;
	struct batch *ring = calloc(window, sizeof(*ring));
	struct progress prog;
	size_t head = 0, count = 0, done = 0;
	bool failed = false;
	int status = NDDCTL_EXIT_OK;
	nddd_client *c = NULL;

	src.f = (path == NULL || strcmp(path, "-") == 0) ? stdin :
	    fopen(path, "r");
	if (src.f == NULL) {
		perror(path);
		free(ring);
		return NDDCTL_EXIT_USAGE;
	}
	if (ring == NULL || (c = doc_connect(co, ns, match)) == NULL) {
		status = ring ? NDDCTL_EXIT_UNREACHABLE : NDDCTL_EXIT_USAGE;
		goto out;
	}
	nddd_set_max_frame(c, co->max_frame);
	src.max_docs = nddd_doc_batch_limit(c, &src.max_bytes);
	if (batch < src.max_docs)
		src.max_docs = batch;
	/* What a batch of one may take: the frame less its own fields (and
	 * the document's namespace). */
	src.room = doc_room(co, ns);
	src.items = calloc(src.max_docs, sizeof(*src.items));
	src.roots = calloc(src.max_docs, sizeof(*src.roots));
	if (src.items == NULL || src.roots == NULL) {
		fprintf(stderr, "nddctl: out of memory\n");
		status = NDDCTL_EXIT_USAGE;
		goto out;
	}
	progress_start(&prog, co->progress, "documents");
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		/* Keep the window full. */
		while (count < window && (!src.eof || src.carried)) {
			struct batch *b = &ring[(head + count) % window];
			int sent = 0;

			if (read_batch(&src, b) == -1) {
				release_bodies(&src);
				progress_finish(&prog);
				status = NDDCTL_EXIT_USAGE;
				goto out;
			}
			if (b->nlines == 0)
				break;
			if (b->ndocs == 0)
				b->answered = true;	/* nothing to ask */
			else
				sent = nddd_send_docs(c, src.items, b->ndocs,
				    &b->id);
			count++;
			if (release_bodies(&src) == -1) {
				progress_finish(&prog);
				status = NDDCTL_EXIT_USAGE;
				goto out;
			}
			if (sent == -1)
				goto lost;
		}
		/* Print what is complete, in input order. */
		while (count > 0 && ring[head].answered) {
			failed |= print_batch(co, &ring[head]);
			done += ring[head].nlines;
			batch_clear(&ring[head]);
			head = (head + 1) % window;
			count--;
		}
		fflush(stdout);
		progress_update(&prog, done);
		if (count == 0) {
			if (src.eof && !src.carried)
				break;
			continue;
		}
		/* The oldest batch is not answered: its request is out. */
		if (nddd_recv(c, &r) == -1)
			goto lost;
		for (k = 0; k < count; k++)
			if (!ring[(head + k) % window].answered &&
			    ring[(head + k) % window].id == r->id)
				break;
		if (k == count) {
			fprintf(stderr, "nddctl: daemon: %s: %s\n",
			    nddd_code_name(r->code),
			    r->message ? r->message : "unexpected reply");
			nddd_reply_free(r);
			progress_finish(&prog);
			status = NDDCTL_EXIT_UNREACHABLE;
			goto out;
		}
		ring[(head + k) % window].reply = r;
		ring[(head + k) % window].answered = true;
	}
	progress_finish(&prog);
	status = failed ? NDDCTL_EXIT_ITEMS : NDDCTL_EXIT_OK;
	goto out;
lost:
	progress_finish(&prog);
	fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
	status = NDDCTL_EXIT_UNREACHABLE;
out:
	if (ring != NULL) {
		for (size_t i = 0; i < window; i++) {
			batch_clear(&ring[i]);
			free(ring[i].lines);
		}
		free(ring);
	}
	if (src.carried) {
		json_decref(src.carry_root);
		free(src.carry.url);
	}
	free(src.owned);
	arena_reset(&src, true);
	free(src.items);
	free(src.roots);
	free(src.buf);
	if (src.f != stdin)
		fclose(src.f);
	nddd_close(c);
	return status;
}

int
nddctl_doc_submit(const struct nddctl_common *co, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "html", no_argument, NULL, 'H' },
		{ "query-only", no_argument, NULL, 'q' },
		{ "jsonl", no_argument, NULL, 'j' },
		{ "batch", required_argument, NULL, 'b' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "match", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL, *ns = NULL;
	enum nddd_match match = NDDD_MATCH_DEFAULT;
	int ch, html = 0, query_only = 0, jsonl = 0, batch_opt = 0, sent;
	char *body, *end;
	bool too_large;
	size_t room, len, batch = co->batch_given ? co->batch :
	    NDDCTL_DOC_BATCH;
	long v;
	uint64_t id;
	nddd_client *c;

	while ((ch = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u': url = optarg; break;
		case 'H': html = 1; break;
		case 'q': query_only = 1; break;
		case 'j': jsonl = 1; break;
		case 'n':
			if (!namespace_arg(optarg, &ns))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'm':
			if (!match_arg(optarg, &match))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'b':
			v = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || v < 1 ||
			    v > NDDD_DOC_BATCH_MAX) {
				fprintf(stderr, "nddctl: --batch: 1 to %d "
				    "documents\n", NDDD_DOC_BATCH_MAX);
				return NDDCTL_EXIT_USAGE;
			}
			batch = (size_t)v;
			batch_opt = 1;
			break;
		default: goto usage;
		}
	}
	if (argc - optind > 1 || (jsonl && (url || html)) ||
	    (!jsonl && (url == NULL || batch_opt)))
		goto usage;
	if (jsonl)
		return submit_jsonl(co, argv[optind], ns, match, batch,
		    query_only);
	room = doc_room(co, ns);
	if ((body = read_body(argv[optind], room, &len, &too_large)) == NULL)
		return too_large ? refuse_large(co, argv[optind], room, "url",
		    url) : NDDCTL_EXIT_USAGE;
	if ((c = doc_connect(co, ns, match)) == NULL) {
		free(body);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_set_max_frame(c, co->max_frame);
	sent = nddd_send_doc_submit(c, url, strlen(url), body, len,
	    html ? NDDD_HTML : NDDD_TEXT, query_only, &id);
	free(body);
	return finish_one(co, c, id, sent, url);
usage:
	fprintf(stderr, "usage: nddctl doc-submit [-n NAMESPACE] [--match "
	    "verified|hamming] --url URL\n"
	    "           [--html] [--query-only] [FILE|-]\n"
	    "       nddctl doc-submit [-n NAMESPACE] [--match verified|hamming] "
	    "--jsonl\n"
	    "           [--batch N] [--query-only] [FILE|-]\n");
	return NDDCTL_EXIT_USAGE;
}

int
nddctl_doc_query(const struct nddctl_common *co, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "k", required_argument, NULL, 'k' },
		{ "html", no_argument, NULL, 'H' },
		{ "simhash", required_argument, NULL, 's' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "match", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *hex = NULL, *ns = NULL;
	enum nddd_match match = NDDD_MATCH_DEFAULT;
	int ch, html = 0, k = -1, sent;
	char *body = NULL, *end;
	size_t len;
	bool too_large;
	uint64_t id, fp = 0;
	nddd_client *c;

	while ((ch = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!namespace_arg(optarg, &ns))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'k':
			k = (int)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || k < 0 || k > 64)
				goto usage;
			break;
		case 'H': html = 1; break;
		case 's': hex = optarg; break;
		case 'm':
			if (!match_arg(optarg, &match))
				return NDDCTL_EXIT_USAGE;
			break;
		default: goto usage;
		}
	}
	/* A fingerprint alone, or a distance: the Hamming answer only. */
	if (argc - optind > 1 || (hex && (html || argc > optind)) ||
	    (match == NDDD_MATCH_VERIFIED && (hex != NULL || k >= 0)))
		goto usage;
	if (hex != NULL) {
		/* Exactly 16 hex digits: a fingerprint, not a prefix. */
		if (strlen(hex) != 16 || strspn(hex, "0123456789abcdefABCDEF")
		    != 16) {
			fprintf(stderr, "nddctl: --simhash wants 16 hex "
			    "digits\n");
			return NDDCTL_EXIT_USAGE;
		}
		fp = strtoull(hex, NULL, 16);
	} else if ((body = read_body(argv[optind], doc_room(co, ns), &len,
	    &too_large)) == NULL)
		return too_large ? refuse_large(co, argv[optind], doc_room(co,
		    ns), "simhash", NULL) : NDDCTL_EXIT_USAGE;
	if ((c = doc_connect(co, ns, match)) == NULL) {
		free(body);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	nddd_set_max_frame(c, co->max_frame);
	if (hex != NULL)
		sent = nddd_send_doc_query_simhash(c, fp, k, &id);
	else
		sent = nddd_send_doc_query(c, body, len, html ? NDDD_HTML :
		    NDDD_TEXT, k, &id);
	free(body);
	return finish_one(co, c, id, sent, NULL);
usage:
	fprintf(stderr, "usage: nddctl doc-query [-n NAMESPACE] [--match "
	    "verified|hamming | --k N]\n"
	    "           [--html] [FILE|-]\n"
	    "       nddctl doc-query [-n NAMESPACE] [--k N] --simhash HEX\n");
	return NDDCTL_EXIT_USAGE;
}

static int
by_url(const struct nddctl_common *co, int argc, char **argv, int get)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "match", required_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL, *ns = NULL;
	enum nddd_match match = NDDD_MATCH_DEFAULT;
	uint64_t id;
	nddd_client *c;
	int ch, sent;

	while ((ch = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'n':
			if (!namespace_arg(optarg, &ns))
				return NDDCTL_EXIT_USAGE;
			break;
		case 'm':
			/* doc-get's neighbours; a delete has none. */
			if (!get || !match_arg(optarg, &match))
				goto usage;
			break;
		case 'u':
			url = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (url == NULL || optind != argc)
		goto usage;
	if ((c = doc_connect(co, ns, match)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = get ? nddd_send_doc_get(c, url, strlen(url), &id) :
	    nddd_send_doc_delete(c, url, strlen(url), &id);
	return finish_one(co, c, id, sent, url);
usage:
	fprintf(stderr, "usage: nddctl %s [-n NAMESPACE]%s --url URL\n",
	    argv[0], get ? " [--match verified|hamming]" : "");
	return NDDCTL_EXIT_USAGE;
}

int
nddctl_doc_get(const struct nddctl_common *co, int argc, char **argv)
{
	return by_url(co, argc, argv, 1);
}

int
nddctl_doc_delete(const struct nddctl_common *co, int argc, char **argv)
{
	return by_url(co, argc, argv, 0);
}
