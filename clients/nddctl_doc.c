/*
 * nddctl doc-submit, doc-query, doc-get, doc-delete: documents and their
 * near duplicates.
 *
 * One document per request.  doc-submit --jsonl reads many, one JSON object
 * per line ({"url": ..., "text": ...} or {"url": ..., "html": ...}), keeps
 * --window of them in flight and prints one result line per input line, in
 * input order.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nddctl.h"

/* The whole of FILE, or of standard input for "-" or NULL. */
static char *
read_body(const char *path, size_t *len)
{
	FILE *f = (path == NULL || strcmp(path, "-") == 0) ? stdin :
	    fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (f == NULL) {
		perror(path);
		return NULL;
	}
	for (;;) {
		size_t n;

		if (*len == cap) {
			char *grown;

			cap = cap ? cap * 2 : 65536;
			if ((grown = realloc(buf, cap + 1)) == NULL) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = grown;
		}
		n = fread(buf + *len, 1, cap - *len, f);
		*len += n;
		if (n == 0)
			break;
	}
	if (buf != NULL && ferror(f)) {
		perror(path ? path : "standard input");
		free(buf);
		buf = NULL;
	}
	if (f != stdin)
		fclose(f);
	if (buf != NULL)
		buf[*len] = '\0';
	return buf;
}

static json_t *
json_hex(uint64_t fp)
{
	char hex[17];

	snprintf(hex, sizeof(hex), "%016" PRIx64, fp);
	return json_string(hex);
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
		json_array_append_new(a, o);
	}
	return a;
}

static void
print_near_text(const struct nddd_doc *d)
{
	for (size_t i = 0; i < d->nnear; i++) {
		printf("near\t%" PRIu64 "\t%u\t", d->near[i].doc_id,
		    d->near[i].distance);
		nddctl_put_field(d->near[i].url, strlen(d->near[i].url));
		putchar('\n');
	}
	if (d->near_total > d->nnear)
		printf("more\t%" PRIu64 "\n", d->near_total - d->nnear);
}

/*
 * Prints one reply for the document given as url (NULL when there is
 * none, as for doc-query).  Returns 0, or 1 when the reply is a refusal.
 */
static int
print_reply(const struct nddctl_common *co, const char *url, size_t url_len,
    const struct nddd_reply *r)
{
	json_t *o = json_object(), *e;

	if (r->kind == NDDD_REPLY_ERROR) {
		if (co->json) {
			e = json_object();
			json_object_set_new(o, "url", url ?
			    nddctl_json_string(url, url_len) : json_null());
			json_object_set_new(e, "code",
			    json_string(nddd_code_name(r->code)));
			json_object_set_new(e, "message",
			    nddctl_json_string(r->message ? r->message : "",
			    r->message ? strlen(r->message) : 0));
			json_object_set_new(o, "error", e);
			nddctl_print_json(o);
		} else {
			json_decref(o);
			nddctl_print_error(nddd_code_name(r->code),
			    r->message, url, url_len);
		}
		return 1;
	}
	switch (r->kind) {
	case NDDD_REPLY_DOC:
		if (co->json) {
			json_object_set_new(o, "url",
			    nddctl_json_string(url, url_len));
			json_object_set_new(o, "doc_id",
			    json_integer((json_int_t)r->doc.doc_id));
			json_object_set_new(o, "simhash", json_hex(r->doc.simhash));
			json_object_set_new(o, "group",
			    json_integer((json_int_t)r->doc.group));
			json_object_set_new(o, "near", json_near(&r->doc));
			if (r->doc.near_total > r->doc.nnear)
				json_object_set_new(o, "near_total",
				    json_integer((json_int_t)
				    r->doc.near_total));
			nddctl_print_json(o);
			return 0;
		}
		printf("doc\t%" PRIu64 "\t%016" PRIx64 "\t%" PRIu64 "\t",
		    r->doc.doc_id, r->doc.simhash, r->doc.group);
		nddctl_put_field(url, url_len);
		putchar('\n');
		print_near_text(&r->doc);
		break;
	case NDDD_REPLY_DOC_QUERY:
		if (co->json) {
			json_object_set_new(o, "simhash", json_hex(r->doc.simhash));
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
		json_decref(o);
		return 1;
	}
	json_decref(o);
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
struct pending {
	char *url;		/* NULL for a line that was not a document */
	size_t url_len;
	uint64_t id;
	struct nddd_reply *reply;
	char *error;		/* the line's own error, when not sent */
};

static int
parse_line(const char *line, size_t lineno, struct pending *p,
    const char **body, size_t *body_len, enum nddd_doc_format *fmt,
    json_t **root)
{
	json_error_t err;
	json_t *url, *text, *html;

	*root = json_loads(line, JSON_REJECT_DUPLICATES, &err);
	if (*root == NULL || !json_is_object(*root)) {
		if (asprintf(&p->error, "line %zu: not a JSON object%s%s",
		    lineno, *root ? "" : ": ", *root ? "" : err.text) == -1)
			p->error = NULL;
		return -1;
	}
	url = json_object_get(*root, "url");
	text = json_object_get(*root, "text");
	html = json_object_get(*root, "html");
	if (json_is_string(url)) {
		p->url_len = json_string_length(url);
		if ((p->url = malloc(p->url_len + 1)) != NULL) {
			memcpy(p->url, json_string_value(url), p->url_len);
			p->url[p->url_len] = '\0';
		}
	}
	if (!json_is_string(url) || json_is_string(text) ==
	    json_is_string(html)) {
		if (asprintf(&p->error, "line %zu: want {\"url\": ..., "
		    "\"text\": ...} or {\"url\": ..., \"html\": ...}",
		    lineno) == -1)
			p->error = NULL;
		return -1;
	}
	*fmt = json_is_string(html) ? NDDD_HTML : NDDD_TEXT;
	*body = json_string_value(json_is_string(html) ? html : text);
	*body_len = json_string_length(json_is_string(html) ? html : text);
	return 0;
}

static int
print_pending(const struct nddctl_common *co, struct pending *p)
{
	int failed;

	if (p->error != NULL) {
		json_t *o = json_object(), *e = json_object();

		if (co->json) {
			json_object_set_new(o, "url", p->url ?
			    nddctl_json_string(p->url, p->url_len) :
			    json_null());
			json_object_set_new(e, "code",
			    json_string("INVALID_ARGUMENT"));
			json_object_set_new(e, "message",
			    json_string(p->error));
			json_object_set_new(o, "error", e);
			nddctl_print_json(o);
		} else {
			json_decref(o);
			json_decref(e);
			nddctl_print_error("INVALID_ARGUMENT", p->error,
			    p->url, p->url_len);
		}
		failed = 1;
	} else
		failed = print_reply(co, p->url, p->url_len, p->reply);
	free(p->url);
	free(p->error);
	nddd_reply_free(p->reply);
	memset(p, 0, sizeof(*p));
	return failed;
}

static int
submit_jsonl(const struct nddctl_common *co, const char *path)
{
	FILE *f = (path == NULL || strcmp(path, "-") == 0) ? stdin :
	    fopen(path, "r");
	unsigned window = co->window;
	struct pending *ring = calloc(window, sizeof(*ring));
	struct progress prog;
	size_t head = 0, count = 0, lineno = 0, done = 0, cap = 0;
	char *line = NULL;
	int eof = 0, failed = 0, status = NDDCTL_EXIT_OK;
	nddd_client *c;

	if (f == NULL) {
		perror(path);
		free(ring);
		return NDDCTL_EXIT_USAGE;
	}
	if ((c = nddctl_connect(co)) == NULL) {
		free(ring);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	progress_start(&prog, co->progress, "documents");
	for (;;) {
		struct nddd_reply *r;
		size_t k;

		while (count < window && !eof) {
			struct pending *p = &ring[(head + count) % window];
			const char *body;
			size_t body_len;
			enum nddd_doc_format fmt;
			json_t *root = NULL;
			ssize_t n = getline(&line, &cap, f);

			if (n == -1) {
				eof = 1;
				break;
			}
			lineno++;
			if (strspn(line, " \t\r\n") == (size_t)n)
				continue;	/* blank lines carry nothing */
			count++;
			if (parse_line(line, lineno, p, &body, &body_len, &fmt,
			    &root) == 0 && nddd_send_doc_submit(c, p->url,
			    p->url_len, body, body_len, fmt, 0, &p->id) == -1) {
				json_decref(root);
				goto lost;
			}
			json_decref(root);
		}
		/* Print what is complete, in input order. */
		while (count > 0 && (ring[head].error != NULL ||
		    ring[head].reply != NULL)) {
			failed |= print_pending(co, &ring[head]);
			head = (head + 1) % window;
			count--;
			progress_update(&prog, ++done);
		}
		fflush(stdout);
		if (count == 0 && eof)
			break;
		if (count == 0)
			continue;
		if (nddd_recv(c, &r) == -1)
			goto lost;
		for (k = 0; k < count; k++) {
			struct pending *p = &ring[(head + k) % window];

			if (p->error == NULL && p->reply == NULL &&
			    p->id == r->id)
				break;
		}
		if (k == count) {
			fprintf(stderr, "nddctl: daemon: %s: %s\n",
			    nddd_code_name(r->code),
			    r->message ? r->message : "unexpected reply");
			nddd_reply_free(r);
			status = NDDCTL_EXIT_UNREACHABLE;
			goto out;
		}
		ring[(head + k) % window].reply = r;
	}
	progress_finish(&prog);
	status = failed ? NDDCTL_EXIT_ITEMS : NDDCTL_EXIT_OK;
	goto out;
lost:
	progress_finish(&prog);
	fprintf(stderr, "nddctl: %s\n", nddd_errstr(c));
	status = NDDCTL_EXIT_UNREACHABLE;
out:
	for (size_t i = 0; i < window; i++) {
		free(ring[i].url);
		free(ring[i].error);
		nddd_reply_free(ring[i].reply);
	}
	free(ring);
	free(line);
	if (f != stdin)
		fclose(f);
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
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL;
	int ch, html = 0, query_only = 0, jsonl = 0, sent;
	char *body;
	size_t len;
	uint64_t id;
	nddd_client *c;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'u': url = optarg; break;
		case 'H': html = 1; break;
		case 'q': query_only = 1; break;
		case 'j': jsonl = 1; break;
		default: goto usage;
		}
	}
	if (argc - optind > 1 || (jsonl && (url || html || query_only)) ||
	    (!jsonl && url == NULL))
		goto usage;
	if (jsonl)
		return submit_jsonl(co, argv[optind]);
	if ((body = read_body(argv[optind], &len)) == NULL)
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL) {
		free(body);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	sent = nddd_send_doc_submit(c, url, strlen(url), body, len,
	    html ? NDDD_HTML : NDDD_TEXT, query_only, &id);
	free(body);
	return finish_one(co, c, id, sent, url);
usage:
	fprintf(stderr, "usage: nddctl doc-submit --url URL [--html] "
	    "[--query-only] [FILE|-]\n"
	    "       nddctl doc-submit --jsonl [FILE|-]\n");
	return NDDCTL_EXIT_USAGE;
}

int
nddctl_doc_query(const struct nddctl_common *co, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "k", required_argument, NULL, 'k' },
		{ "html", no_argument, NULL, 'H' },
		{ "simhash", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const char *hex = NULL;
	int ch, html = 0, k = -1, sent;
	char *body = NULL, *end;
	size_t len;
	uint64_t id, fp = 0;
	nddd_client *c;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (ch) {
		case 'k':
			k = (int)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || k < 0 || k > 64)
				goto usage;
			break;
		case 'H': html = 1; break;
		case 's': hex = optarg; break;
		default: goto usage;
		}
	}
	if (argc - optind > 1 || (hex && (html || argc > optind)))
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
	} else if ((body = read_body(argv[optind], &len)) == NULL)
		return NDDCTL_EXIT_USAGE;
	if ((c = nddctl_connect(co)) == NULL) {
		free(body);
		return NDDCTL_EXIT_UNREACHABLE;
	}
	if (hex != NULL)
		sent = nddd_send_doc_query_simhash(c, fp, k, &id);
	else
		sent = nddd_send_doc_query(c, body, len, html ? NDDD_HTML :
		    NDDD_TEXT, k, &id);
	free(body);
	return finish_one(co, c, id, sent, NULL);
usage:
	fprintf(stderr, "usage: nddctl doc-query [--k N] [--html] [FILE|-]\n"
	    "       nddctl doc-query [--k N] --simhash HEX\n");
	return NDDCTL_EXIT_USAGE;
}

static int
by_url(const struct nddctl_common *co, int argc, char **argv, int get)
{
	static const struct option longopts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL;
	uint64_t id;
	nddd_client *c;
	int ch, sent;

	while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (ch != 'u')
			goto usage;
		url = optarg;
	}
	if (url == NULL || optind != argc)
		goto usage;
	if ((c = nddctl_connect(co)) == NULL)
		return NDDCTL_EXIT_UNREACHABLE;
	sent = get ? nddd_send_doc_get(c, url, strlen(url), &id) :
	    nddd_send_doc_delete(c, url, strlen(url), &id);
	return finish_one(co, c, id, sent, url);
usage:
	fprintf(stderr, "usage: nddctl %s --url URL\n", argv[0]);
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
