/*
 * libnddd: the C client library of nddd.
 *
 * One nddd_client is one TCP connection to a daemon.  Requests may be
 * pipelined: nddd_send_* queue a request and return its id at once;
 * nddd_recv returns the next reply, which may answer any request sent
 * (the server answers out of order).  nddd_urls does the common thing for
 * you: a whole list of URLs, cut into batches, pipelined, results in input
 * order; nddd_docs does the same for documents (doc_batch requests).
 *
 * Submits and deletes are acknowledged once as durable as asked
 * (nddd_set_durability); URL batches go to a namespace, submits with a
 * time to live, and results carry the times URLs were seen when asked
 * (nddd_set_url_opts); document requests go to a namespace too
 * (nddd_set_doc_namespace).  URLs can be canonicalized and hashed here, with
 * the daemon's own code, and sent as digests (nddd_use_digests,
 * nddd_send_digests, nddd_canon_new): the server then does not parse them.
 * Documents can be fingerprinted here too, with the daemon's own engine and
 * no daemon (nddd_engine_new).
 *
 * Errors: functions return 0 or -1; after -1, nddd_errstr says why (the
 * connection is then unusable unless the error was a protocol refusal of
 * one request, which arrives as a reply with a code instead).  A reply or a
 * URL result that failed carries a code (enum nddd_code, the protocol's)
 * and a message.
 *
 * Not thread-safe: use one client per thread.
 */
#ifndef LIBNDDD_NDDD_H
#define LIBNDDD_NDDD_H

#include <stddef.h>
#include <stdint.h>

#define NDDD_DEFAULT_PORT 6464

typedef struct nddd_client nddd_client;

/* The protocol's status codes. */
enum nddd_code {
	NDDD_OK = 0,
	NDDD_INVALID_ARGUMENT = 1,
	NDDD_NOT_FOUND = 2,
	NDDD_PERMISSION_DENIED = 3,
	NDDD_RESOURCE_EXHAUSTED = 4,
	NDDD_EMPTY_DOCUMENT = 5,
	NDDD_UNAVAILABLE = 6,
	NDDD_INTERNAL = 7,
	NDDD_FAILED_PRECONDITION = 8,	/* not set up for it: url_forget
					   with [urls] host_index off */
	NDDD_MOVED = 9,			/* a shard is being added: route
					   the item again (docs/sharding.md;
					   the shard clients do) */
};

/* "OK", "INVALID_ARGUMENT", ...: the code's protocol name. */
const char *nddd_code_name(enum nddd_code code);

enum nddd_url_op {
	NDDD_URL_SUBMIT,	/* record; count 1 = new, > 1 = duplicate */
	NDDD_URL_CHECK,		/* count 0 = never seen */
	NDDD_URL_DELETE,	/* count 0 = was not stored */
};

/*
 * When a submit or delete is acknowledged (the protocol's Durability).
 * NDDD_DURABLE: once on disk (fdatasync), surviving a power failure.
 * NDDD_RELAXED: once applied and written to the operating system, without
 * waiting for the disk: it survives a crash of nddd (kill -9), and may lose
 * the server's last [store] relaxed_sync_interval on a power failure.
 * NDDD_DURABILITY_DEFAULT: the server's choice (durable unless its [store]
 * sync is none).
 */
enum nddd_durability {
	NDDD_DURABILITY_DEFAULT,
	NDDD_DURABLE,
	NDDD_RELAXED,
};

/* Length of a URL digest: the MD5 of its canonical form. */
#define NDDD_DIGEST_LEN 16

struct nddd_url_result {
	enum nddd_code code;	/* NDDD_OK, or why this URL failed */
	uint64_t count;		/* reference count; see enum nddd_url_op */
	const char *message;	/* when code != NDDD_OK; owned by the reply */
	/* With with_times (nddd_set_url_opts), in milliseconds since the
	 * epoch: when the URL was first and last submitted, and when its time
	 * to live ends (0: never); all 0 for a URL never recorded, and
	 * without with_times.  A check of a URL whose time to live has passed
	 * answers count 0 with the times it had until the daemon reclaims
	 * the record in the background (then as never recorded); a submit
	 * that records it again answers the new record's. */
	uint64_t first_seen_ms, last_seen_ms, expires_ms;
};

/* The longest namespace name, in bytes. */
#define NDDD_NAMESPACE_MAX 64
/* The longest time to live the daemon takes: 100 years, in seconds. */
#define NDDD_TTL_MAX 3155760000u

/*
 * What every URL batch of a client carries besides its URLs
 * (nddd_set_url_opts).
 *
 * ns: the namespace, one of the independent sets of URLs that share a
 * daemon (one crawl, one spider, one customer); NULL or "": the default
 * one.  A name is at most NDDD_NAMESPACE_MAX bytes of ASCII letters,
 * digits, '.', '_' and '-'.  A check or delete in a namespace that does
 * not exist answers as an empty set; a submit creates it.
 *
 * ttl_seconds (submits only): a URL recorded as new is seen for that
 * long; afterwards a check answers unseen and a submit records it as new
 * again.  A duplicate submit does not postpone it.  0: the namespace's
 * default (nddd_send_namespace_set), none unless set.  At most
 * NDDD_TTL_MAX.
 *
 * with_times: results carry first_seen_ms, last_seen_ms and expires_ms.
 */
struct nddd_url_opts {
	const char *ns;
	uint64_t ttl_seconds;
	int with_times;
};

/*
 * A namespace, as namespace_set, namespace_drop and stats answer it: its
 * URLs and its documents (the same name names both).
 */
struct nddd_namespace {
	char name[NDDD_NAMESPACE_MAX + 1];	/* "": the default one */
	uint64_t urls;		/* stored, expired ones not yet reclaimed
				   included; for a drop, those being
				   forgotten */
	uint64_t default_ttl_seconds;	/* 0: none */
	uint64_t docs;		/* stored documents; for a drop, those
				   being forgotten */
};

struct nddd_stats {
	char version[32];
	uint64_t uptime_seconds;
	uint64_t urls;
	uint64_t docs;
	uint32_t near_k, near_blocks, near_tables;
	uint64_t near_bytes, near_distinct;
	char accel_backend[64];
	int accel_simulation;
	uint64_t accel_batches, accel_batches_failed, accel_docs, accel_bytes;
	uint64_t cbf_counters, cbf_nonzero, cbf_saturated, cbf_bytes;
	uint32_t cbf_k;
	uint64_t checks, checks_filter_only, filter_false_positives;
	uint64_t submits_new, submits_duplicate, deletes;
	uint64_t commits;
	uint64_t store_bytes;
	uint32_t connections;
	/* The canonicalization URL digests must be made with, e.g.
	 * "urlcanon/1 strip_session_ids=no strip_tracking=no sort_query=no";
	 * empty from a server without digests. */
	char canon[128];
	/* The URL store's write path (admin; zero otherwise). */
	struct {
		uint64_t journal_entries;	/* URLs changed since the
						   last flush */
		uint64_t journal_capacity;	/* ... at most, before one */
		uint64_t journal_bytes;		/* in the journal file now */
		uint64_t journal_bytes_written;	/* since start */
		uint64_t journal_syncs;		/* fdatasyncs of the journal */
		uint64_t groups;		/* group commits */
		uint64_t flushes;
		uint64_t merges;
		uint64_t merges_forced;		/* that held writers back */
		uint64_t segments;
		uint64_t small_segments;
		uint64_t records;		/* in segments, live or not */
		uint64_t dead_records;		/* not yet merged away */
		uint64_t store_bytes_written;	/* segments and bitmaps */
		uint64_t pending;		/* submits and deletes queued */
		uint64_t index_bytes;		/* memory of the URL index */
		uint64_t journal_table_bytes;	/* memory of the journal's
						   table */
		uint64_t host_runs;		/* runs of the host index */
		uint64_t host_keys;		/* their keys, dead ones
						   included */
		uint64_t host_merging;		/* 1: a merge of them is
						   under way */
	} url_store;
	/* The documents' write path (admin; zero otherwise). */
	struct {
		uint64_t journal_bytes;		/* in the store journal now */
		uint64_t journal_bytes_written;	/* since start */
		uint64_t journal_syncs;		/* fdatasyncs of it */
		uint64_t groups;		/* groups journaled */
		uint64_t checkpoints;		/* commits of what it held */
		uint64_t pending;		/* store keys changed since the
						   last */
		uint64_t failures;		/* groups or commits that lost
						   what was held */
	} doc_store;
	/* URLs of dropped namespaces not yet forgotten (counted in urls),
	 * and URLs reclaimed after their time to live.  The namespaces
	 * themselves come in the reply (nddd_reply: namespaces). */
	uint64_t urls_dropping;
	uint64_t urls_expired;
	/* Documents of dropped namespaces not yet forgotten (counted in
	 * docs). */
	uint64_t docs_dropping;
	/* Its place in a shard list (docs/sharding.md); shard_count 0:
	 * not a shard. */
	uint32_t shard_place, shard_count;
	int shard_importing, shard_keep_moved_docs;
	char shard_list[2049];		/* HOST:PORT,... */
	/* How neighbours are decided (docs/neardup.md): [near] answer
	 * ("verified" or "hamming"), [text] html ("main" or "whole"), the
	 * verified answer's thresholds; then (admin; zero otherwise) the
	 * sketch index's keys and memory, the candidates verified answers
	 * looked at and kept, the keys they passed over as too common, and
	 * the documents stored without a sketch. */
	char near_answer[16];
	char near_html[8];
	float near_containment, near_resemblance;
	uint64_t near_sketch_keys, near_sketch_bytes;
	uint64_t near_candidates, near_verified, near_keys_skipped;
	uint64_t near_unsketched;
};

struct nddd_verify {
	int consistent;		/* memory agrees with the store */
	uint64_t urls;		/* URL records read */
	uint64_t counter_mismatches;
	uint64_t docs;		/* document records read */
	uint64_t table_mismatches;
	uint64_t url_index_mismatches;	/* URLs the index or the segment
					   directory gets wrong */
	char detail[256];
};

enum nddd_doc_format {
	NDDD_TEXT,
	NDDD_HTML,
};

/* Which stored documents are a document's neighbours (docs/neardup.md). */
enum nddd_match {
	NDDD_MATCH_DEFAULT,	/* the server's [near] answer */
	NDDD_MATCH_VERIFIED,	/* candidates kept when similar enough; most
				   similar first, then oldest */
	NDDD_MATCH_HAMMING,	/* every document within k, nearest first,
				   then oldest: the paper's answer */
};

/* What an HTML document was judged by. */
enum nddd_content {
	NDDD_CONTENT_TEXT,	/* a text document */
	NDDD_CONTENT_MAIN,	/* a page's main content */
	NDDD_CONTENT_WHOLE,	/* a page's whole visible text */
};

/* A stored document near another, or near a query. */
struct nddd_neighbour {
	uint64_t doc_id;
	const char *url;	/* canonical, NUL-terminated; owned by the reply */
	size_t url_len;
	unsigned distance;	/* Hamming distance of the fingerprints */
	uint64_t group;
	uint64_t created_ms;	/* first submitted, ms since the epoch */
	/* The verified answer's estimates (0 to 1) of the two documents'
	 * shingle resemblance and containment, and whether they were
	 * estimated (not in a Hamming answer, nor for a document stored
	 * without a sketch). */
	float resemblance;
	float containment;
	int verified;
};

/*
 * A document (doc_submit, doc_get: doc_id, group, url, created set) or a
 * query's answer (simhash and near only).  near: the stored documents
 * that are its neighbours by the answer asked for (nddd_set_doc_match),
 * the document itself excluded; at most the server's max_results of them,
 * near_total in all.
 */
struct nddd_doc {
	uint64_t doc_id;	/* 0 for a query-only submit */
	uint64_t simhash;
	uint64_t group;		/* query-only submit: 0 if it would found one */
	int created;		/* a new document, not a re-submit */
	const char *url;	/* canonical; owned by the reply; "" for a
				   query's answer and a batch's result */
	size_t url_len;
	size_t nnear;
	struct nddd_neighbour *near;
	uint64_t near_total;
	enum nddd_content content;	/* submits and queries by body */
	/* Its sketch, when asked for (nddd_doc_item.with_sketch): the
	 * server's encoding, for nddd_send_doc_query_print; owned by the
	 * reply. */
	const unsigned char *sketch;
	size_t sketch_len;
	/* A result of a doc batch (NDDD_REPLY_DOCS, nddd_docs): NDDD_OK, or
	 * why this document failed (EMPTY_DOCUMENT, INVALID_ARGUMENT for a bad
	 * URL...), with the server's message; the other fields are then
	 * zero.  Always NDDD_OK elsewhere. */
	enum nddd_code code;
	const char *message;	/* when code != NDDD_OK; owned by the reply */
	/* When the document under its URL was first stored (ms since the
	 * epoch; a re-submit keeps it); for a query-only submit, that of the
	 * document already stored under the URL, whose id is stored_id (0:
	 * none). */
	uint64_t created_ms;
	uint64_t stored_id;
};

/*
 * A document of a doc batch (nddd_send_docs, nddd_docs).  The pointers are
 * read while the request is queued, not kept.  Zero it before setting
 * fields (an initializer does): releases may add fields whose zero is
 * today's behaviour.
 */
struct nddd_doc_item {
	const char *url;	/* its identity, canonicalized by the server */
	size_t url_len;
	const void *body;
	size_t body_len;
	enum nddd_doc_format format;
	int query_only;		/* compute and answer, store nothing */
	uint64_t group;		/* join this group (0: the server chooses
				   its first neighbour's, or a new one) */
	int new_group;		/* found a group of its own instead */
	enum nddd_match match;	/* DEFAULT: the client's (nddd_set_doc_match) */
	int with_sketch;	/* send its sketch back */
};

/* The most documents a doc batch may carry (the server refuses more). */
#define NDDD_DOC_BATCH_MAX 4096
/* The server's default [server] max_frame, the client's until told
 * otherwise (nddd_set_max_frame). */
#define NDDD_DEFAULT_MAX_FRAME (8u << 20)

enum nddd_reply_kind {
	NDDD_REPLY_ERROR,	/* the request was refused as a whole */
	NDDD_REPLY_URLS,
	NDDD_REPLY_STATS,
	NDDD_REPLY_VERIFY,
	NDDD_REPLY_DOC,		/* doc_submit, doc_get */
	NDDD_REPLY_DOC_QUERY,
	NDDD_REPLY_DOC_DELETE,
	NDDD_REPLY_DOCS,	/* doc batch */
	NDDD_REPLY_NAMESPACE,	/* namespace_set, namespace_drop */
	NDDD_REPLY_FORGET,	/* url_forget */
	NDDD_REPLY_SHARD,	/* shard_set */
	NDDD_REPLY_MOVED,	/* shard_export */
};

/*
 * Adding a shard (docs/sharding.md): what `nddctl reshard` drives.  A
 * daemon's place in a shard list.
 */
struct nddd_shard_state {
	uint32_t place;
	uint32_t shards;	/* 0: not a shard */
	int importing;
	int keep_moved_docs;
	const char *list;	/* HOST:PORT,...; NULL: none */
};

/*
 * A page of keys that move to another shard, as the exporting daemon
 * answered it (its MovedKeys, packed), to be given to the importing
 * daemon as it is.
 */
struct nddd_moved {
	uint64_t session;
	uint64_t url_cursor, doc_cursor;	/* where the next page starts */
	int done;
	size_t nurls, ndocs;			/* what it carries */
	unsigned char *packed;			/* owned */
	size_t packed_len;
};

enum nddd_export_step {
	NDDD_EXPORT_BEGIN,
	NDDD_EXPORT_PAGE,
	NDDD_EXPORT_CHANGED,
	NDDD_EXPORT_END,
};

struct nddd_reply {
	uint64_t id;		/* the request's id; 0 for connection errors */
	enum nddd_reply_kind kind;
	enum nddd_code code;	/* NDDD_OK unless kind is NDDD_REPLY_ERROR */
	const char *message;
	size_t nresults;	/* NDDD_REPLY_URLS: one per URL sent */
	struct nddd_url_result *results;
	struct nddd_stats stats;	/* NDDD_REPLY_STATS */
	struct nddd_verify verify;	/* NDDD_REPLY_VERIFY */
	struct nddd_doc doc;		/* NDDD_REPLY_DOC, _DOC_QUERY */
	uint64_t deleted_id;		/* NDDD_REPLY_DOC_DELETE: 0 if none */
	/* NDDD_REPLY_DOCS: one result per document sent, in order, each
	 * with its own code; neighbours cut to those that fit in about 1 KiB
	 * (near_total counts them all; nddd_send_doc_get lists them). */
	size_t ndocs;
	struct nddd_doc *docs;
	/* NDDD_REPLY_STATS: every namespace, the default one first;
	 * NDDD_REPLY_NAMESPACE: the one set or dropped. */
	size_t nnamespaces;
	struct nddd_namespace *namespaces;
	struct nddd_moved moved;	/* NDDD_REPLY_MOVED */
	uint64_t forgotten;		/* NDDD_REPLY_FORGET: URLs deleted */
	int complete;			/* ... 0: the store holds URLs its
					   host index never saw (stored by
					   nddd 0.3 or with the index off) */
};

/* How to connect; zero values are the defaults. */
struct nddd_options {
	int timeout_ms;		/* connecting, and each wait; 0: forever */
	const char *token;	/* sent with every request; NULL: none */
	int tls;		/* speak TLS */
	const char *tls_ca;	/* CA file for the server's certificate;
				   NULL: the system's store */
	const char *tls_cert;	/* client certificate (PEM), if asked for */
	const char *tls_key;	/* its private key (PEM) */
	const char *tls_name;	/* name the certificate must carry; NULL:
				   the host part of the address */
};

/*
 * Connects to address ("host:port", "[v6addr]:port", or "host" for the
 * default port), with timeout_ms for connecting and for each later wait
 * (0: wait forever).  Returns NULL with *err set (caller frees) on failure.
 */
nddd_client *nddd_connect(const char *address, int timeout_ms, char **err);
/*
 * The same with options: a token, TLS (the server's certificate is
 * verified, its name checked; an IP address is checked against the
 * certificate's IP entries).
 */
nddd_client *nddd_connect_opts(const char *address,
    const struct nddd_options *opts, char **err);
void nddd_close(nddd_client *c);

/* Why the last call failed. */
const char *nddd_errstr(const nddd_client *c);
/*
 * The number of places in the shard list the server last said it belongs
 * to (Response.shards; 0: it is not a shard): the shard clients read the
 * list from its stats when it names more places than they route by.
 */
uint32_t nddd_server_shards(const nddd_client *c);

/*
 * Resharding (admin; docs/sharding.md, "Adding a shard").  Sets the
 * daemon's place in a shard list; answers once every write admitted
 * before is done.  Returns 0 or -1 (nddd_errstr).
 */
int nddd_shard_set(nddd_client *c, const struct nddd_shard_state *st);
/*
 * A step of an export session (the protocol's ShardExport): *out gets
 * the page (free it with nddd_moved_free).  shards: BEGIN's new list
 * length; place: BEGIN's place when the daemon has no shard state.
 */
int nddd_shard_export(nddd_client *c, enum nddd_export_step step,
    uint32_t shards, uint32_t place, uint64_t session, uint64_t url_cursor,
    uint64_t doc_cursor, struct nddd_moved *out);
/* Gives a page to a daemon to import. */
int nddd_shard_import(nddd_client *c, const struct nddd_moved *keys);
/* Turns a page into the deletion of its keys (for their old owner to drop
 * them): -1 if memory is short. */
int nddd_moved_as_deletions(struct nddd_moved *m);
void nddd_moved_free(struct nddd_moved *m);

/*
 * Queues a URL batch (n URLs; lens[i] their lengths, or lens NULL for
 * NUL-terminated strings) and sends what the socket takes.  *id is the
 * request's id.  The batch must respect the server's max_batch.
 */
int nddd_send_urls(nddd_client *c, enum nddd_url_op op,
    const char *const *urls, const size_t *lens, size_t n, uint64_t *id);
int nddd_send_stats(nddd_client *c, uint64_t *id);

/*
 * The durability every later url_submit and url_delete of c asks for
 * (nddd_send_urls, nddd_send_digests, nddd_urls); NDDD_DURABILITY_DEFAULT
 * until set.  Checks carry none.
 */
void nddd_set_durability(nddd_client *c, enum nddd_durability d);

/*
 * The namespace, time to live and times every later URL batch of c
 * carries (nddd_send_urls, nddd_send_digests, nddd_urls; the time to live
 * only submits); o NULL: the default namespace, none, none, as until set.
 * The name is copied.  Returns -1, c unchanged and still usable, for a
 * name the daemon would refuse (nddd_namespace_valid) or a time to live
 * over NDDD_TTL_MAX, as nddd_errstr says.
 */
int nddd_set_url_opts(nddd_client *c, const struct nddd_url_opts *o);

/*
 * Whether the daemon takes name as a namespace: at most
 * NDDD_NAMESPACE_MAX bytes of ASCII letters, digits, '.', '_' and '-'
 * ("" is the default namespace).
 */
int nddd_namespace_valid(const char *name);

/*
 * Namespace settings (admin), answered by a NDDD_REPLY_NAMESPACE.
 * nddd_send_namespace_set gives the namespace name (created if need be;
 * "" is the default one) a default time to live for the URLs submitted
 * to it without one (0: none), for submits from now on, not for URLs
 * recorded before.  nddd_send_namespace_drop drops one: its name is free
 * at once (a submit to it starts an empty set) and its URLs and documents
 * are forgotten in the background; the reply counts them.  Dropping the
 * default namespace is refused INVALID_ARGUMENT, one with neither URLs
 * nor documents NOT_FOUND.  A
 * name that is not valid, or a time to live over NDDD_TTL_MAX: -1,
 * nothing sent, the connection still usable.
 */
int nddd_send_namespace_set(nddd_client *c, const char *name,
    uint64_t default_ttl_seconds, uint64_t *id);
int nddd_send_namespace_drop(nddd_client *c, const char *name,
    uint64_t *id);

/*
 * Forgets URLs by host or by prefix (admin) in the namespace ns (NULL or
 * "": the default one), answered by a NDDD_REPLY_FORGET whose forgotten
 * counts the URLs deleted, once the deletions are durable.  Deletions are
 * exact, filter counters included.
 *
 * nddd_send_url_forget_host forgets every URL of host, a host name as
 * canonical URLs carry it (lower case, no port), whatever its scheme or
 * port; with subdomains, those of every host under it too ("example.com"
 * takes "www.example.com", never "badexample.com").
 * nddd_send_url_forget_prefix forgets every URL whose canonical form
 * begins with prefix[0..len), a URL the daemon canonicalizes as it does a
 * submitted one (a prefix that is not a URL it takes is INVALID_ARGUMENT).
 *
 * The daemon finds the URLs in an index of the canonical text of the URLs
 * submitted as text: URLs submitted as digests, and URLs stored by a
 * daemon before that index existed, are not found; a daemon whose
 * [urls] host_index is off keeps no such index and refuses the request.
 * An unknown namespace answers 0.  A namespace name that is not valid, an
 * empty host or prefix: -1, nothing sent, the connection still usable.
 */
int nddd_send_url_forget_host(nddd_client *c, const char *ns,
    const char *host, int subdomains, uint64_t *id);
int nddd_send_url_forget_prefix(nddd_client *c, const char *ns,
    const char *prefix, size_t len, uint64_t *id);

/*
 * Queues a batch of n URL digests (NDDD_DIGEST_LEN bytes each, concatenated
 * in digests; see nddd_canon_digest) made with the canonicalization named
 * canon_id, which must be the server's exactly (nddd_stats: canon).  The
 * reply has one result per digest, in order; a server of another
 * canonicalization refuses the whole batch (a NDDD_REPLY_ERROR with
 * NDDD_INVALID_ARGUMENT).  Otherwise as nddd_send_urls.
 */
int nddd_send_digests(nddd_client *c, enum nddd_url_op op,
    const char *canon_id, const unsigned char *digests, size_t n,
    uint64_t *id);
int nddd_send_verify(nddd_client *c, uint64_t *id);

/*
 * The namespace every later document request of c acts in
 * (nddd_send_doc_*, nddd_send_docs, nddd_docs): one of the independent
 * sets of documents that share a daemon, as URL namespaces are (the same
 * name names a set of URLs and a set of documents).  NULL or "": the
 * default namespace, as until set.  A document's identity is its
 * namespace and URL: neighbours and groups are found, and gets, deletes
 * and queries answered, among the documents of the namespace only.  The
 * name is copied.  Returns -1, c unchanged and still usable, for a name
 * the daemon would refuse (nddd_namespace_valid), as nddd_errstr says.
 */
int nddd_set_doc_namespace(nddd_client *c, const char *ns);

/*
 * The answer every later document request of c asks for (submits, gets,
 * queries, and the items of doc batches that leave theirs at
 * NDDD_MATCH_DEFAULT); NDDD_MATCH_DEFAULT, the server's, until set.
 */
void nddd_set_doc_match(nddd_client *c, enum nddd_match m);

/*
 * Document operations, in the client's document namespace
 * (nddd_set_doc_namespace).  A document is named by its URL; its body is
 * text or HTML.  query_only: compute and answer, store nothing.  k: the
 * Hamming answer within that distance (at most the server's k), or -1 for
 * the client's answer (nddd_set_doc_match).  nddd_send_doc_query_simhash
 * has only the Hamming answer (k -1: the server's k);
 * nddd_send_doc_query_print asks with a fingerprint and a sketch the
 * server sent (nddd_doc.sketch), for the answer a body would get.
 */
int nddd_send_doc_submit(nddd_client *c, const char *url, size_t url_len,
    const void *body, size_t body_len, enum nddd_doc_format format,
    int query_only, uint64_t *id);
int nddd_send_doc_query(nddd_client *c, const void *body, size_t body_len,
    enum nddd_doc_format format, int k, uint64_t *id);
int nddd_send_doc_query_simhash(nddd_client *c, uint64_t simhash, int k,
    uint64_t *id);
int nddd_send_doc_query_print(nddd_client *c, uint64_t simhash,
    const void *sketch, size_t sketch_len, uint64_t *id);
/* nddd_send_doc_query with the client's answer, the body's sketch sent
 * back too (nddd_doc.sketch). */
int nddd_send_doc_query_sketch(nddd_client *c, const void *body,
    size_t body_len, enum nddd_doc_format format, uint64_t *id);
int nddd_send_doc_get(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id);
int nddd_send_doc_delete(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id);

/*
 * Queues a doc batch: docs[0..n), each stored, or answered only when its
 * query_only is set, in order, answered together by one NDDD_REPLY_DOCS
 * (stored documents once durable as the server's [store] sync makes
 * them).  It needs the write role unless every document is query_only.
 * n must be 1 to nddd_doc_batch_limit's count, and the documents' sizes
 * (nddd_doc_item_size) must add up to at most the client's max frame less
 * 64 bytes and the token: otherwise -1, nothing sent, and the connection
 * stays usable.
 */
int nddd_send_docs(nddd_client *c, const struct nddd_doc_item *docs,
    size_t n, uint64_t *id);

/*
 * The server's [server] max_frame, if not the default NDDD_DEFAULT_MAX_FRAME
 * (8 MiB): doc batches are cut to fit it (nddd_doc_batch_limit).
 */
void nddd_set_max_frame(nddd_client *c, size_t max_frame);

/* The bytes the document d adds to a doc batch's frame (encoded). */
size_t nddd_doc_item_size(const struct nddd_doc_item *d);

/*
 * How much a doc batch should carry with the client's max frame: returns
 * the most documents (at most NDDD_DOC_BATCH_MAX, and no more than the
 * server answers within max_frame: about 1.1 KiB of reply each), and sets
 * *max_bytes to the most bytes of documents (nddd_doc_item_size) a batch
 * should hold: half the max frame, so that a frame stays well under the
 * limit.  A document larger than that goes in a batch of its own; one
 * larger than the max frame less 64 bytes and the token cannot be sent.
 */
size_t nddd_doc_batch_limit(const nddd_client *c, size_t *max_bytes);

/* Requests sent whose replies have not been received. */
size_t nddd_outstanding(const nddd_client *c);

/*
 * Waits for the next reply (sending queued requests meanwhile) and returns
 * it in *out; free it with nddd_reply_free.  Returns -1 on a connection
 * error, a timeout or a malformed reply.
 */
int nddd_recv(nddd_client *c, struct nddd_reply **out);
void nddd_reply_free(struct nddd_reply *r);

/*
 * Applies op to urls[0..n) in batches of batch URLs with up to window
 * batches in flight, and fills results[0..n) in input order.  Messages in
 * results stay valid until nddd_urls_results_free.  progress, if not NULL,
 * is called with the number of URLs answered so far.  Batches carry the
 * client's URL options (nddd_set_url_opts), and submits and deletes ask
 * for its durability; after nddd_use_digests, URLs go as digests.
 * Returns -1 on a connection error (every URL not answered then carries
 * NDDD_UNAVAILABLE and the error), or when a batch is refused as a whole
 * (every result of that batch then carries the refusal's code).
 */
int nddd_urls(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    size_t n, struct nddd_url_result *results, size_t batch,
    unsigned window, void (*progress)(size_t done, void *arg), void *arg);
void nddd_urls_results_free(struct nddd_url_result *results, size_t n);
/*
 * nddd_urls for n digests made already (NDDD_DIGEST_LEN bytes each,
 * concatenated; see nddd_canon_digest) with the canonicalization canon_id,
 * the server's (nddd_send_digests).
 */
int nddd_digests(nddd_client *c, enum nddd_url_op op, const char *canon_id,
    const unsigned char *digests, size_t n, struct nddd_url_result *results,
    size_t batch, unsigned window);

/*
 * Bulk URL requests: a set of URLs too large to ask about at random (a
 * frontier file, a crawl's links of the last hour), sent in the store's
 * key order so that the daemon reads each page of its store once, in large
 * reads, however much larger than its memory the store is
 * (docs/urlstore.md, "Bulk checks").  Each answer is exactly the one the
 * online request would give at the moment it is sent.
 *
 * nddd_bulk_new asks the daemon its canonicalization (a stats request;
 * call it with no request outstanding).  nddd_bulk_add hashes each URL
 * here and keeps it, spilling to a file in dir past memory bytes;
 * nddd_bulk_run sends them all (checks as digests, submits and deletes as
 * their text, with the client's URL options and durability: namespace,
 * time to live), batch URLs a request, window requests in flight, and
 * nddd_bulk_result gives each URL's answer by its place in the input.
 * Memory: the memory setting, plus one of 256 key ranges of the records
 * (32 bytes a URL, and the text of submits and deletes), plus the
 * results, 4 bytes a URL in a file of dir that the kernel caches.
 * Shard lists are not served: one nddd_bulk per daemon.
 */
typedef struct nddd_bulk nddd_bulk;

struct nddd_bulk_opts {
	size_t memory;		/* bytes of URLs held before spilling;
				   0: 256 MiB */
	const char *dir;	/* for the spill and results files (unlinked
				   at once); NULL: $TMPDIR, or /tmp */
	size_t batch;		/* URLs a request; 0: 4096 */
	unsigned window;	/* requests in flight; 0: 8 */
};

/*
 * A bulk request of op on c (o may be NULL).  Returns NULL with *err set
 * (caller frees; NULL when out of memory) when the daemon cannot be asked
 * its canonicalization, this library cannot reproduce it, or dir cannot
 * be written.
 */
nddd_bulk *nddd_bulk_new(nddd_client *c, enum nddd_url_op op,
    const struct nddd_bulk_opts *o, char **err);
/*
 * Adds url[0..len), the next in the input.  A URL the daemon would refuse
 * is answered here (its result says why).  Returns 0, or -1 when the
 * spill file cannot be written or memory is short (nddd_bulk_errstr).
 */
int nddd_bulk_add(nddd_bulk *b, const char *url, size_t len);
/*
 * nddd_bulk_add of urls[0..n) (lens[i] bytes each), the next n in the
 * input, hashed on as many threads as there are processors (up to 4)
 * when n is large: the way to add millions.
 */
int nddd_bulk_add_many(nddd_bulk *b, const char *const *urls,
    const size_t *lens, size_t n);
/* URLs added, and the bytes of them spilled so far. */
uint64_t nddd_bulk_count(const nddd_bulk *b);
uint64_t nddd_bulk_spilled(const nddd_bulk *b);
/*
 * Sends every URL added and takes the answers; progress, if not NULL, is
 * called with the URLs answered so far and their total.  Returns 0 when
 * every URL was answered (a URL's failure, or its batch's refusal, is its
 * result), or -1 (nddd_bulk_errstr) when the connection failed (every URL
 * not answered then says NDDD_UNAVAILABLE) or the files in dir did.
 */
int nddd_bulk_run(nddd_bulk *b,
    void (*progress)(uint64_t done, uint64_t total, void *arg), void *arg);
/*
 * The answer to the i-th URL added, after nddd_bulk_run: NDDD_OK with its
 * count in *count (as enum nddd_url_op says), or the code of its failure
 * with *message (owned by b) saying why.
 */
enum nddd_code nddd_bulk_result(const nddd_bulk *b, uint64_t i,
    uint64_t *count, const char **message);
/* Why the last call failed. */
const char *nddd_bulk_errstr(const nddd_bulk *b);
void nddd_bulk_free(nddd_bulk *b);

/*
 * Stores (or, for those with query_only, only looks up) docs[0..n) in doc
 * batches of at most batch documents (0: 256; always within
 * nddd_doc_batch_limit, by count and by bytes) with up to window batches
 * in flight, and fills results[0..n) in input order: each with its code,
 * the others' going on when one fails.  A document too large for a frame
 * of its own is not sent: its result is NDDD_RESOURCE_EXHAUSTED.  The
 * results' URLs are "" (their position names them) and their neighbours
 * cut to about 1 KiB (near_total counts them all).  Results stay valid
 * until nddd_docs_results_free.  progress, if not NULL, is called with the
 * number of documents answered so far.  Returns -1 on a connection error
 * (every document not answered then carries NDDD_UNAVAILABLE and the
 * error), or when a batch is refused as a whole (every result of that
 * batch then carries the refusal's code).
 */
int nddd_docs(nddd_client *c, const struct nddd_doc_item *docs, size_t n,
    struct nddd_doc *results, size_t batch, unsigned window,
    void (*progress)(size_t done, void *arg), void *arg);
void nddd_docs_results_free(struct nddd_doc *results, size_t n);

/*
 * With on, nddd_urls canonicalizes and hashes URLs here and sends their
 * digests: it asks the server which canonicalization it uses (a stats
 * request; a read token suffices) and makes that canonicalizer.  A URL it
 * refuses is answered here (NDDD_INVALID_ARGUMENT, with the message the
 * server would give) and not sent; results stay in input order.  With on
 * 0, URLs are sent as they are again.  Call it with no request
 * outstanding: replies to others are dropped while it waits.  Returns -1
 * with *err set (caller frees; also in nddd_errstr) when the server cannot
 * be asked, states no canonicalization (too old), or names one this
 * library cannot reproduce (another version); the client then keeps
 * sending as it did.
 */
int nddd_use_digests(nddd_client *c, int on, char **err);

/*
 * Stats, in one call (a read token gets only version, uptime, urls, docs,
 * the tables' layout and canon).  The namespaces come only with the reply
 * to nddd_send_stats (nddd_reply: namespaces).
 */
int nddd_stats(nddd_client *c, struct nddd_stats *out);
/* Verification, in one call (admin).  It reads the whole store. */
int nddd_verify(nddd_client *c, struct nddd_verify *out);
/*
 * nddd_send_url_forget_host and nddd_send_url_forget_prefix in one call,
 * the number of URLs deleted in *forgotten.  Returns -1 when the request
 * cannot be sent or is refused, nddd_errstr saying why (a refusal with
 * its code's name: "url_forget refused: PERMISSION_DENIED: ...").  As
 * with nddd_call, replies to other requests are dropped while it waits.
 */
int nddd_url_forget_host(nddd_client *c, const char *ns, const char *host,
    int subdomains, uint64_t *forgotten);
int nddd_url_forget_prefix(nddd_client *c, const char *ns,
    const char *prefix, size_t len, uint64_t *forgotten);

/*
 * Waits for the reply to the request id (sent with a nddd_send_* call),
 * dropping replies to any other request meanwhile.  Returns it (free it
 * with nddd_reply_free; it may be a refusal, NDDD_REPLY_ERROR, also one
 * with id 0 for the connection), or NULL on a connection error.
 */
struct nddd_reply *nddd_call(nddd_client *c, uint64_t id);

/*
 * Local canonicalization: the daemon's own code (urlcanon), to make the
 * digests of nddd_send_digests.  One nddd_canon per thread.
 */
typedef struct nddd_canon nddd_canon;

/*
 * A canonicalizer for canon_id, a server's StatsResult.canon ("urlcanon/1
 * strip_session_ids=no strip_tracking=no sort_query=no").  Returns NULL
 * with *err set (caller frees; NULL when out of memory) when the id names
 * settings or a version this library cannot reproduce.  Free it with
 * nddd_canon_free.
 */
nddd_canon *nddd_canon_new(const char *canon_id, char **err);
void nddd_canon_free(nddd_canon *k);
/* Its id, as given to nddd_canon_new; owned by k. */
const char *nddd_canon_id(const nddd_canon *k);
/*
 * The canonical form of url[0..len), *out_len bytes (not NUL-terminated),
 * valid until the next call with k; NULL, with *cause (static) the
 * server's message, for a URL the server would refuse.
 */
const char *nddd_canon_url(nddd_canon *k, const char *url, size_t len,
    size_t *out_len, const char **cause);
/*
 * The digest of url[0..len): the MD5 of its canonical form, as the server
 * would key it.  Returns 0, or -1 for a URL the server would refuse, with
 * *cause (static) the message it would send.
 */
int nddd_canon_digest(nddd_canon *k, const char *url, size_t len,
    unsigned char digest[NDDD_DIGEST_LEN], const char **cause);
/*
 * nddd_canon_digest for n URLs at once (for bindings: one call per batch):
 * urls holds them concatenated, lens[i] the length of each.  Writes the
 * i-th digest at digests + NDDD_DIGEST_LEN * i (zeroes for an invalid one)
 * and valid[i] 1 or 0.  Returns the number of valid URLs; nddd_canon_digest
 * on an invalid one says why.
 */
size_t nddd_canon_digests(nddd_canon *k, const char *urls,
    const size_t *lens, size_t n, unsigned char *digests, int *valid);

/*
 * Shards: several independent daemons, each owning a share of the URLs,
 * and the routing of URL batches over them.  A URL belongs to the shard
 * nddd_shard_of names for the digest of its canonical form (the MD5 that
 * keys it in a daemon, whatever its namespace), over the shard list in its
 * order: a jump consistent hash, so that a list grown by one address at
 * its end moves only the URLs the new shard takes (docs/sharding.md).
 * Every client of a sharded service must be given the same list in the
 * same order.
 */
typedef struct nddd_shards nddd_shards;

/* The most addresses of a shard list. */
#define NDDD_SHARDS_MAX 4096

/* Lamping and Veach's jump consistent hash of key over buckets (> 0). */
uint32_t nddd_jump_hash(uint64_t key, uint32_t buckets);
/*
 * The shard (0 to nshards - 1) of a URL digest: the jump hash of its
 * first 8 bytes read big-endian.
 */
uint32_t nddd_shard_of(const unsigned char digest[NDDD_DIGEST_LEN],
    uint32_t nshards);
/* nddd_shard_of for n digests at once (for bindings): into shard[0..n). */
void nddd_shards_route(const unsigned char *digests, size_t n,
    uint32_t nshards, uint32_t *shard);

/*
 * Connects to every shard of addresses[0..n) with opts (NULL: the
 * defaults; the strings are copied) and reads the canonicalization each
 * one states.  Returns NULL with *err set (caller frees; NULL when out of
 * memory) when the list is empty, too long or names a shard twice, when no
 * shard answers, or when two shards canonicalize URLs differently: routing
 * by one canonical form and keying by another would store a URL twice.  A
 * shard that does not answer is down: calls answer its URLs
 * NDDD_UNAVAILABLE, and each call tries it again (it is then refused,
 * down, if its settings differ from the others').
 */
nddd_shards *nddd_shards_open(const char *const *addresses, size_t n,
    const struct nddd_options *opts, char **err);
void nddd_shards_close(nddd_shards *s);
size_t nddd_shards_count(const nddd_shards *s);
/* The i-th address, as given; NULL past the end. */
const char *nddd_shards_address(const nddd_shards *s, size_t i);
/* The canonicalization every shard states. */
const char *nddd_shards_canon_id(const nddd_shards *s);
/* Why the last call of s that returned -1 failed. */
const char *nddd_shards_errstr(const nddd_shards *s);

/*
 * With on, URLs go to the shards as their digests, made here anyway for
 * the routing: the daemons then do not canonicalize them again, but keep
 * no text of them for nddd_send_url_forget_host and _prefix to find.  Off
 * (the default): the URLs themselves.
 */
void nddd_shards_use_digests(nddd_shards *s, int on);
/* nddd_set_durability and nddd_set_url_opts for every shard. */
void nddd_shards_set_durability(nddd_shards *s, enum nddd_durability d);
int nddd_shards_set_url_opts(nddd_shards *s, const struct nddd_url_opts *o);

/*
 * nddd_urls over the shards: urls[0..n) (NUL-terminated) are
 * canonicalized and hashed here, each shard gets its URLs (or their
 * digests) in batches of batch with up to window in flight, the shards in
 * parallel, and results[0..n) come back in input order.  A URL no daemon
 * would take is answered here (NDDD_INVALID_ARGUMENT); the URLs of a
 * shard that is down, or whose connection fails during the call,
 * NDDD_UNAVAILABLE with the shard's address in their message (a submit
 * among them may have been recorded before its connection failed:
 * submitting it again answers duplicate).  Returns 0, or -1 when out of
 * memory.  Free the messages
 * with nddd_urls_results_free.
 */
int nddd_shards_urls(nddd_shards *s, enum nddd_url_op op,
    const char *const *urls, size_t n, struct nddd_url_result *results,
    size_t batch, unsigned window);

/*
 * Documents over the shards.  A document is stored on the shard of its
 * URL; its neighbours and its group are found among every shard's
 * documents, as one daemon holding them all would find them, by the
 * answer the shards give (their [near] answer, which they must state
 * alike with its thresholds) or the one asked for
 * (nddd_shards_set_doc_match): the group of its first neighbour (the
 * most similar, or for the Hamming answer the nearest), of those the
 * oldest (first submitted: in the order this handle stored them when it
 * stored them all and still remembers, else by the times the shards
 * stamped, then the earlier shard in the list, then the smaller id;
 * docs/sharding.md); the documents of a call count as submitted in input
 * order, after every stored one.  Ids are global (nddd_shards_global_id): doc ids, group ids
 * and neighbours' ids carry their shard.  A shard that is down fails the
 * documents it owns (NDDD_UNAVAILABLE) and is missing from the others'
 * neighbours and groups until it is back; documents of another client
 * stored on other shards at the same moment are not seen as neighbours.
 *
 * nddd_shards_set_doc_namespace: the namespace of later document calls
 * (NULL or "": the default one).  nddd_shards_set_doc_match: their
 * answer (NDDD_MATCH_DEFAULT: the shards').
 *
 * nddd_shards_docs: as nddd_docs, docs[0..n) in chunks of batch (0: 256;
 * at most NDDD_DOC_BATCH_MAX) decided and stored together; the items'
 * group and new_group are the routing's own.  Results carry every
 * shard's neighbours (not cut to 1 KiB), url "".  Returns -1 only when
 * out of memory; free the results with nddd_docs_results_free.
 *
 * nddd_shards_doc_query: the stored documents near a body, from every
 * shard, merged nearest first then oldest, in *out (url ""; free it with
 * nddd_docs_results_free(out, 1)); a refusal (EMPTY_DOCUMENT...) in
 * out->code.  Returns -1 when no shard answers or out of memory.
 */
int nddd_shards_set_doc_namespace(nddd_shards *s, const char *ns);
void nddd_shards_set_doc_match(nddd_shards *s, enum nddd_match m);
int nddd_shards_docs(nddd_shards *s, const struct nddd_doc_item *docs,
    size_t n, struct nddd_doc *results, size_t batch);
int nddd_shards_doc_query(nddd_shards *s, const void *body, size_t body_len,
    enum nddd_doc_format format, struct nddd_doc *out);
/*
 * A shard's document or group id as sharded clients give it: id (below
 * 2^48) with the shard's place in the list plus one in its top 16 bits;
 * 0, and an id already global, as they are.
 */
uint64_t nddd_shards_global_id(size_t shard, uint64_t id);

/*
 * Local fingerprints: the daemon's own simhash engine (DESIGN section 4,
 * docs/simhash.md), to fingerprint documents without a daemon, bit for bit
 * as a daemon of the same settings does ([simhash] term_hash, stopwords
 * and simd).  One nddd_engine per thread (it holds the engine's working
 * memory); any number of them in a process.
 */
typedef struct nddd_engine nddd_engine;

/* What a document's bytes are (the protocol's text, html, and the
 * accelerators' input: terms separated by spaces, taken as they are). */
enum nddd_format {
	NDDD_FORMAT_TEXT = 0,
	NDDD_FORMAT_HTML = 1,
	NDDD_FORMAT_PREPROCESSED = 2,
};

/*
 * An engine's settings, the daemon's [simhash] section; zeroes (or a NULL
 * opts) are the defaults.
 *
 * term_hash: "sdbm-fmix64" (NULL: the default) or "sdbm".
 * stopwords: a stop-word list file, or "none"; NULL: stopwords_text if
 *   given, else the file nddd_engine_default_stopwords finds.
 * stopwords_text, stopwords_len: the content of a list file, in memory
 *   (a binding that ships the list to other machines); used when
 *   stopwords is NULL and stopwords_text is not.
 * simd: "auto", "avx512", "avx2" or "scalar": the vector code of the
 *   whole process from now on (all give the same bits); NULL: as it is
 *   (auto unless chosen before).
 * html: what an HTML page is judged by, the daemon's [text] html: "main"
 *   (NULL: the default), its main content, or "whole", all its text.
 */
struct nddd_engine_opts {
	const char *term_hash;
	const char *stopwords;
	const char *stopwords_text;
	size_t stopwords_len;
	const char *simd;
	const char *html;
};

/*
 * Makes an engine.  Returns NULL with *err set (the caller frees it; NULL
 * when out of memory) for an unknown term hash or level, a level this CPU
 * cannot run, a stop-word list that cannot be read (file:line: reason), or
 * no list found.  Free it with nddd_engine_free.
 */
nddd_engine *nddd_engine_new(const struct nddd_engine_opts *opts,
    char **err);
void nddd_engine_free(nddd_engine *e);
/*
 * The fingerprint of body[0..len) (any bytes; a page's main content, as
 * the engine's html says) in *fp.  Returns NDDD_OK, NDDD_EMPTY_DOCUMENT
 * when no term is left (*fp 0: the daemon refuses such a document),
 * NDDD_INVALID_ARGUMENT for an unknown format, or NDDD_INTERNAL when
 * memory is short.
 */
enum nddd_code nddd_engine_simhash(nddd_engine *e, const void *body,
    size_t len, enum nddd_format format, uint64_t *fp);
/*
 * nddd_engine_simhash for n documents of one format at once (for
 * bindings: one call per batch): bodies holds them concatenated, lens[i]
 * the length of each.  Writes fps[i], and ok[i] 1, or 0 for a document
 * without terms (fps[i] 0).  Returns the number of fingerprints, or
 * (size_t)-1 for an unknown format.
 */
size_t nddd_engine_simhashes(nddd_engine *e, enum nddd_format format,
    const char *bodies, const size_t *lens, size_t n, uint64_t *fps,
    unsigned char *ok);
/*
 * The text a daemon of the engine's settings judges body by
 * (docs/neardup.md): a text document itself; a page's main content, or
 * its whole visible text when it has no article or the engine's html is
 * "whole" (then as nddctl text prints it: a line per block).  *text is
 * the engine's, valid until its next call, *content says which.
 * Returns NDDD_OK, NDDD_INVALID_ARGUMENT for an unknown format, or
 * NDDD_INTERNAL when memory is short.
 */
enum nddd_code nddd_engine_text(nddd_engine *e, const void *body, size_t len,
    enum nddd_format format, const char **text, size_t *text_len,
    enum nddd_content *content);

/* The longest sketch (the server's encoding), and the most hashes one
 * holds. */
#define NDDD_SKETCH_MAX 518
#define NDDD_SKETCH_HASHES 128

/* What a daemon keeps of a document: its print. */
struct nddd_print {
	uint64_t simhash;
	enum nddd_content content;
	size_t sketch_len;
	unsigned char sketch[NDDD_SKETCH_MAX];	/* as DocResult.sketch */
};

/*
 * The print of body, as a daemon of the engine's settings makes it.
 * Returns as nddd_engine_simhash (the print is zero but for NDDD_OK).
 */
enum nddd_code nddd_engine_print(nddd_engine *e, const void *body,
    size_t len, enum nddd_format format, struct nddd_print *out);
/*
 * nddd_engine_print for n documents of one format at once, for bindings:
 * bodies concatenated, lens[i] each one's length.  Writes fps[i], ok[i]
 * (0: no terms), content[i], and the sketch decoded: shingles[i] (its
 * count of distinct shingles), nhashes[i] and its hashes, ascending, in
 * hashes[i * NDDD_SKETCH_HASHES ...] (the rest of the row zero).  Returns
 * the number of documents with terms, or (size_t)-1 for an unknown format
 * or when memory is short.
 */
size_t nddd_engine_prints(nddd_engine *e, enum nddd_format format,
    const char *bodies, const size_t *lens, size_t n, uint64_t *fps,
    unsigned char *ok, unsigned char *content, uint32_t *shingles,
    uint32_t *nhashes, uint32_t *hashes);

/*
 * The similarity of two documents' sketches (a daemon's estimate, bit for
 * bit): resemblance (|A n B| / |A u B|) and containment (|A n B| / the
 * smaller one's size).  nddd_sketch_compare takes two encodings and
 * returns 0, or -1 when one is not a sketch; nddd_sketch_similarities
 * takes m pairs (a[i], b[i]) of rows of decoded sketches, laid out as
 * nddd_engine_prints writes them, into res[i] and con[i].
 */
int nddd_sketch_compare(const void *a, size_t alen, const void *b,
    size_t blen, float *resemblance, float *containment);
void nddd_sketch_similarities(const uint32_t *shingles,
    const uint32_t *nhashes, const uint32_t *hashes, const int64_t *a,
    const int64_t *b, size_t m, float *res, float *con);
/* How many of a sketch's hashes are its keys, which a daemon files it
 * under (its first ones); how many of a query's first NDDD_SKETCH_PROBES
 * hashes a stored document's keys must be, at least, for the document to
 * be a candidate. */
#define NDDD_SKETCH_KEYS 16
#define NDDD_SKETCH_MIN_KEYS 2
#define NDDD_SKETCH_PROBES 64

/*
 * Where the engine's stop words came from: the file, "none", or "" for
 * stopwords_text; owned by e.  And how many words it has.
 */
const char *nddd_engine_stopwords(const nddd_engine *e);
size_t nddd_engine_stopwords_count(const nddd_engine *e);
/* The vector code the process runs: "avx512", "avx2" or "scalar". */
const char *nddd_engine_simd(void);
/*
 * The default stop-word list, as nddctl simhash finds it: the first of
 * $NDDD_STOPWORDS, ./conf/stopwords.txt, the conf/stopwords.txt of the
 * source tree the program or this library was built in (../conf,
 * ../../conf or ../../../conf from its file), and /etc/nddd/stopwords.txt
 * (make install).  Returns the path (the caller frees it), or NULL when
 * there is none.
 */
char *nddd_engine_default_stopwords(void);

#endif
