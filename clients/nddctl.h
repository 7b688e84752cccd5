/*
 * nddctl: the command-line client of nddd.  Shared declarations of its
 * subcommands and helpers.
 */
#ifndef NDDCTL_H
#define NDDCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "nddd.h"

/* Exit statuses, documented in nddctl's help. */
#define NDDCTL_EXIT_OK		0	/* everything succeeded */
#define NDDCTL_EXIT_ITEMS	1	/* some items failed; see the output */
#define NDDCTL_EXIT_USAGE	2	/* bad command line or input */
#define NDDCTL_EXIT_UNREACHABLE	3	/* daemon unreachable or lost */
#define NDDCTL_EXIT_OUTPUT	4	/* the output could not be written */

/* Documents per doc batch of doc-submit --jsonl, unless --batch says. */
#define NDDCTL_DOC_BATCH	256

/* Options common to the commands that talk to a daemon. */
struct nddctl_common {
	const char *address;	/* -H HOST:PORT, or a shard list */
	bool json;		/* --json */
	struct nddd_options conn;	/* --timeout, --token, --tls... */
	size_t batch;		/* --batch */
	bool batch_given;	/* ... on the command line */
	size_t max_frame;	/* --max-frame: the daemon's [server] max_frame */
	unsigned window;	/* --window */
	bool progress;		/* progress bar allowed (stderr is a tty) */
	enum nddd_durability durability;	/* --relaxed, --durable */
	bool digests;		/* --digests: canonicalize here */
};

int nddctl_url_submit(const struct nddctl_common *co, int argc, char **argv);
int nddctl_url_check(const struct nddctl_common *co, int argc, char **argv);
int nddctl_url_delete(const struct nddctl_common *co, int argc, char **argv);
int nddctl_stats(const struct nddctl_common *co, int argc, char **argv);

/* The options of a URL command's --bulk (nddctl_urlbulk.c). */
struct nddctl_bulk {
	const char *path;	/* --bulk FILE, or "-" */
	size_t memory;		/* --bulk-memory BYTES; 0: libnddd's */
	const char *dir;	/* --spill-dir DIR; NULL: libnddd's */
	bool summary;		/* --summary: the phases' times on stderr */
};
int nddctl_url_bulk(const struct nddctl_common *co, enum nddd_url_op op,
    const struct nddd_url_opts *opts, const struct nddctl_bulk *bulk);
/*
 * A URL's result as url-check, url-submit and url-delete print it: the
 * text line "STATUS<TAB>COUNT<TAB>[times<TAB>]URL", or its JSON object,
 * or its failure (nddctl_print_failure).
 */
void nddctl_print_url_result(const struct nddctl_common *co,
    enum nddd_url_op op, bool times, const char *url, size_t len,
    const struct nddd_url_result *res);
int nddctl_verify(const struct nddctl_common *co, int argc, char **argv);
int nddctl_doc_submit(const struct nddctl_common *co, int argc, char **argv);
int nddctl_doc_query(const struct nddctl_common *co, int argc, char **argv);
int nddctl_doc_get(const struct nddctl_common *co, int argc, char **argv);
int nddctl_doc_delete(const struct nddctl_common *co, int argc, char **argv);
int nddctl_ns_set(const struct nddctl_common *co, int argc, char **argv);
int nddctl_ns_drop(const struct nddctl_common *co, int argc, char **argv);
int nddctl_forget_host(const struct nddctl_common *co, int argc,
    char **argv);
int nddctl_forget_prefix(const struct nddctl_common *co, int argc,
    char **argv);
int nddctl_reshard(const struct nddctl_common *co, int argc, char **argv);
int nddctl_simhash(int argc, char **argv);
int nddctl_text(int argc, char **argv);

/* Connects or prints why not; NULL means exit NDDCTL_EXIT_UNREACHABLE. */
nddd_client *nddctl_connect(const struct nddctl_common *co);
/* Whether -H names a shard list (addresses separated by commas). */
bool nddctl_sharded(const struct nddctl_common *co);
/*
 * Opens the shard list of -H or prints why not (no shard answers, their
 * settings differ); NULL means exit NDDCTL_EXIT_UNREACHABLE.
 */
nddd_shards *nddctl_open_shards(const struct nddctl_common *co);

/*
 * Parses arg, the value of option opt, as seconds of a time to live (0 to
 * NDDD_TTL_MAX) into *out, or says why not and returns false.
 */
bool nddctl_parse_ttl(const char *opt, const char *arg, uint64_t *out);
/* Whether name is a namespace name; says why not if it is not. */
bool nddctl_namespace_ok(const char *name);

/*
 * Writes s[0..len) to stdout as one field of a text line: a backslash, TAB,
 * CR, LF or other control byte becomes \\, \t, \r, \n or \xHH, so that
 * no field splits a line or a column.
 */
void nddctl_put_field(const char *s, size_t len);
/*
 * An item's failure on stdout: "error<TAB>CODE: message<TAB>value", its
 * fields escaped, or with --json {key: value, "error": {"code": CODE,
 * "message": message}} (value NULL: null, or an empty field).
 */
void nddctl_print_failure(const struct nddctl_common *co, enum nddd_code code,
    const char *message, const char *key, const char *value, size_t len);

/* Prints obj as one line of JSON on stdout and releases it. */
void nddctl_print_json(json_t *obj);
/* A JSON string of s[0..len); invalid UTF-8 bytes become U+FFFD. */
json_t *nddctl_json_string(const char *s, size_t len);

/*
 * A namespace as ns-set and stats print it: the text line
 * "namespace<TAB>urls<TAB>default_ttl_seconds<TAB>name", or the JSON
 * object {"name", "urls", "default_ttl_seconds"}.
 */
void nddctl_print_namespace(const struct nddd_namespace *ns);
json_t *nddctl_namespace_json(const struct nddd_namespace *ns);

/*
 * The fields of a --jsonl document line (not NUL-terminated; NULL when
 * absent), decoded in place by jsonl_parse_doc.
 */
struct jsonl_doc {
	const char *url, *text, *html;
	size_t url_len, text_len, html_len;
};

/*
 * Parses buf[0..len), one line, in place (buf is overwritten) when it is
 * an object of string values that jansson would take, and returns 0 with
 * its url, text and html in doc.  Returns -1 for anything else: parse the
 * (original) line with jansson, which says what it is.
 */
int jsonl_parse_doc(char *buf, size_t len, struct jsonl_doc *doc);
/*
 * Writes s[0..len) to out as a JSON string, as nddctl_json_string and
 * nddctl_print_json would.
 */
/*
 * Length of the valid UTF-8 sequence at s (1 to 4 bytes of the n there),
 * or 0: not UTF-8, an overlong form, a surrogate, or past U+10FFFF.
 */
size_t nddctl_utf8_seq(const unsigned char *s, size_t n);
void jsonl_put_string(FILE *out, const char *s, size_t len);

/* A progress line on stderr, redrawn at most ten times a second. */
struct progress {
	bool enabled;
	size_t done;
	double started, last_drawn;
	const char *what;
};
void progress_start(struct progress *p, bool enabled, const char *what);
/* Seconds on the monotonic clock. */
double nddctl_now(void);
void progress_update(struct progress *p, size_t done);
void progress_finish(struct progress *p);

#endif
