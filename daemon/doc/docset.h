/*
 * docset: the stored documents, the near-duplicate tables over their
 * fingerprints, and their story groups.
 *
 * A document is named by its namespace (docns.h) and its URL
 * (canonicalized as URLs are; the MD5 of the canonical form is its key in
 * the default namespace, XORed with the namespace's mask in a named one)
 * and stored as a record: id, fingerprint, group, first and last
 * submission times, its shingle sketch (text/sketch.h), canonical URL,
 * and for a named namespace its id and name (records written before
 * namespaces existed have none: the default namespace's; records written
 * before sketches have none either).  Ids grow from 1 in order of first
 * submission, so a smaller id is an older document.  The tables (nearidx)
 * hold every stored fingerprint, and the sketch index (sketchidx) every
 * sketch's keys, of every namespace; both are rebuilt from the records at
 * start-up (or read from the restart image of a clean stop, docimage.h),
 * and a query keeps the hits of its own namespace.
 *
 * Neighbours (docs/neardup.md).  The verified answer: the candidates, the
 * documents within the configured k of the fingerprint and those the
 * sketch index names, kept when their sketches' estimated containment
 * reaches its threshold and their resemblance its floor; most similar
 * (resemblance) first,
 * then oldest.  A document stored without a sketch (by nddd 0.4) is kept
 * when it is within k, unverified.  The Hamming answer (the paper's): the
 * documents within a distance, nearest first, then oldest.
 *
 * Groups (DESIGN section 6).  A document joins the group of its first
 * neighbour (of its namespace, by the answer it is stored with: the most
 * similar, then the oldest); with none, it founds a group whose id is its
 * own.  A re-submitted URL keeps its id, takes its new fingerprint and
 * sketch and has its group decided again the same way.  Other documents
 * keep their groups: a group id is stable, also across restarts and
 * deletes (the documents of a group may outlive its founder).
 *
 * Dropping a namespace (docset_ns_drop) frees its name at once; its
 * documents are then forgotten a few at a time (docset_ns_forget), each
 * exactly as docset_delete forgets one, until none is left and the
 * namespace is retired.  Until then they answer to no one: a query, get
 * or delete under the name sees the name's new namespace only, and a put
 * of the same URL there replaces the dropped document.
 *
 * The change hook (docset_set_change_hook).  Each put and each delete (a
 * namespace's forgetting included) first tells the hook, if one is
 * registered, which document it changes; a change the hook refuses fails
 * with STORE_FAILED.  Resharding's export session is such a hook
 * (docmove.h): it notes the documents that move, and none goes
 * unexported.  The document set knows nothing more of its hook.
 *
 * Threads.  The store writer calls docset_put, docset_delete and the
 * namespace changes inside its transaction, and the undo functions after
 * an abort; they change the tables at once (later documents of the same
 * transaction must see earlier ones to find their group).  Any thread may
 * read: docset_near needs no transaction, docset_get and docset_record
 * read through the caller's.
 */
#ifndef NDDD_DOCSET_H
#define NDDD_DOCSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docns.h"
#include "nearidx.h"
#include "simhash.h"
#include "sketch.h"
#include "store.h"

#define DOCSET_KEY_LEN 16	/* MD5 of the canonical URL (masked) */
/* docset_put's join for "a group of its own"; groups given are below. */
#define DOCSET_OWN_GROUP UINT64_MAX

struct docset_options {
	unsigned k;			/* [near] k */
	unsigned blocks;		/* [near] blocks */
	enum simhash_term_hash term_hash;
	const char *stopwords_digest;	/* names the stop-word list in use */
	float resemblance;		/* [near] resemblance: the floor */
	float containment;		/* [near] containment: the threshold */
};

struct doc_record {
	uint64_t id;
	uint64_t fp;
	uint64_t group;
	uint64_t created_ms;
	uint64_t updated_ms;
	const char *url;	/* in the store's memory: valid until the
				   transaction that read it ends */
	size_t url_len;
	const uint8_t *sketch;	/* its encoding (sketch_encode), as url;
				   NULL: stored without one */
	size_t sketch_len;
	uint32_t ns;		/* its namespace's id (docns.h) */
	const char *ns_name;	/* its name, "" for the default one; as url */
	size_t ns_len;
};

/* What a put or delete changed in the tables and the namespaces, to take
 * back on abort. */
struct doc_undo {
	bool inserted;
	uint64_t ins_fp, ins_id;
	uint32_t ins_ns;
	uint32_t ins_keys[SKETCH_KEYS];	/* its sketch's keys */
	uint8_t ins_nkeys;
	bool ins_sketchless;
	bool removed;
	uint64_t rem_fp, rem_id;
	uint32_t rem_ns;
	uint32_t rem_keys[SKETCH_KEYS];
	uint8_t rem_nkeys;
	bool rem_sketchless;
	uint64_t new_id;	/* the id a put took for a new document, 0:
				   none; it is given out again (a full disk
				   must not use ids up) */
	uint32_t new_ns;	/* a namespace the put created, 0: none */
};

/* What a namespace's drop or a step of its forgetting changed. */
struct docset_ns_undo {
	uint32_t dropped;	/* the namespace dropped, 0: none */
	uint32_t retired;	/* the namespace retired, 0: none */
	uint64_t uncounted;	/* ... its count, found wrong, set to 0 */
};

struct docset_stats {
	uint64_t docs;
	uint64_t dropping;	/* of dropped namespaces, still there */
	uint64_t distinct;	/* distinct fingerprints */
	uint64_t table_bytes;
	unsigned k, blocks, tables;
	uint64_t sketch_entries;	/* keys filed in the sketch index */
	uint64_t sketch_bytes;		/* its memory */
	uint64_t unsketched;		/* documents stored without a sketch */
	uint64_t candidates;		/* looked at by verified answers */
	uint64_t verified;		/* ... and kept */
	uint64_t keys_skipped;		/* sketch keys passed over as common */
	float resemblance, containment;	/* the thresholds */
	bool from_image;	/* the tables were read from the restart image */
};

struct docset_verify {
	uint64_t records;
	uint64_t table_mismatches;	/* records the tables miss, or extras;
					   namespaces whose count or tags
					   disagree with the records */
	uint64_t url_mismatches;	/* URL index entries that disagree */
	char detail[256];
};

struct docset;

/*
 * A change hook: called by the store writer, in transaction txn_id, before
 * a put or delete changes the document of namespace ns[0..ns_len) ("":
 * the default one) and canonical URL url[0..url_len).  Returns 0, or -1
 * (having logged why) to fail the change.
 */
typedef int (*docset_change_fn)(void *arg, uint64_t txn_id, const char *ns,
    size_t ns_len, const char *url, size_t url_len);

/*
 * Opens the documents of st: checks the term hash against the one stored
 * documents were fingerprinted with (fixed once there are documents),
 * records it otherwise, and loads the tables from every record, or from
 * the restart image the last clean stop left if the store is as it was
 * then (docimage.h).  Returns NULL with *cause (caller frees) on failure.
 */
struct docset *docset_open(struct store *st, const struct docset_options *opts,
    char **cause);
/*
 * Leaves the restart image for the next start (none without documents).
 * Called as the daemon stops, once nothing writes to the store any more.
 * Returns 0, or -1 with *cause (caller frees; NULL if memory was short).
 */
int docset_save_image(struct docset *ds, char **cause);
void docset_free(struct docset *ds);

/* The configured k: the most a query may ask for. */
unsigned docset_k(const struct docset *ds);
/* The namespaces of the documents. */
struct docns *docset_namespaces(struct docset *ds);
/*
 * Store writer thread (or before it starts): registers the change hook fn
 * with arg, once; release(arg), unless release is NULL, runs in
 * docset_free.  Returns -1, registering nothing, if a hook is registered
 * already.
 */
int docset_set_change_hook(struct docset *ds, docset_change_fn fn,
    void (*release)(void *), void *arg);
/* Any thread: the change hook's arg, NULL until one is registered. */
void *docset_change_hook_arg(struct docset *ds);
/*
 * The key of the document of canonical URL url[0..url_len) in namespace
 * ns[0..ns_len) (empty: the default one): the URL's MD5, XORed with the
 * namespace's mask (docns_mask) in a named one.
 */
void docset_key(const char *ns, size_t ns_len, const char *url, size_t url_len,
    uint8_t key[DOCSET_KEY_LEN]);
/*
 * Any thread: the id of the namespace named name (checked as URL
 * namespaces are; "": the default one), DOCNS_NONE if it has no
 * documents.  Reads with a namespace of DOCNS_NONE find nothing.
 */
uint32_t docset_ns_find(struct docset *ds, const char *name);

/* A document's neighbours, as docset_neighbours gives them. */
struct docset_near_list {
	size_t max;			/* in: at most this many listed */
	bool hamming;			/* in: the Hamming answer within k */
	struct docset_neighbour *list;	/* free with docset_neighbours_free */
	size_t n;
	uint64_t total;			/* neighbours, listed or not */
};

/*
 * Writer thread, in txn.  Stores the document key/url of namespace ns (a
 * checked name, "" for the default one; created if it has no documents)
 * with fingerprint fp and sketch sk (NULL: none, a document found by
 * Hamming distance alone) at now_ms: a new id and a new group for a new URL,
 * the same id and a re-decided group for a known one (a document of a
 * dropped namespace under the same key is forgotten first); with join
 * not 0, the group is join instead (a client decided it among several
 * servers' documents), or with DOCSET_OWN_GROUP a group of its own.  *out is the
 * stored record (its url is the caller's url, its sketch NULL), *created
 * says which case it was, and *undo what to take back if txn aborts.
 * near, if not NULL, gets the document's neighbours (itself left out) by
 * the answer it asks for (verified, unless near->hamming or sk is NULL),
 * found by the same search that decides its group; the caller frees its
 * list, also on failure.  Returns a store status.
 */
int docset_put(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, const struct sketch *sk, uint64_t join, uint64_t now_ms,
    struct doc_record *out, bool *created, struct doc_undo *undo,
    struct docset_near_list *near);
/*
 * docset_put with the document's times given instead of now: created_ms
 * and updated_ms are stored as they are, whether the URL is new or known
 * (resharding copies a document with the times its first shard stamped).
 * Its neighbours are not asked for.
 */
int docset_put_times(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, const struct sketch *sk, uint64_t join, uint64_t created_ms,
    uint64_t updated_ms, struct doc_record *out, bool *created,
    struct doc_undo *undo);
/*
 * Writer thread, in txn.  Deletes the document named by key in namespace
 * ns (a checked name); *id is its id, 0 if there was none.  Returns a
 * store status.
 */
int docset_delete(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], uint64_t *id, struct doc_undo *undo);
/* Writer thread: takes back a put or delete whose transaction aborted
 * (several: in the reverse order of their doing). */
void docset_undo(struct docset *ds, const struct doc_undo *undo);

/*
 * The record of the document named by key in namespace ns (an id, or
 * DOCNS_NONE), STORE_NOTFOUND if none.
 */
int docset_get(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const uint8_t key[DOCSET_KEY_LEN], struct doc_record *out);
/* The sketch record r was stored with, into *sk: 0, or -1 when it has
 * none (stored by nddd 0.4, or without one). */
int docset_record_sketch(const struct doc_record *r, struct sketch *sk);
/* The record of document id (STORE_NOTFOUND if none). */
int docset_record(struct docset *ds, struct store_txn *txn, uint64_t id,
    struct doc_record *out);
/*
 * Calls fn for each record from document id from on, in id order, read
 * through txn, until fn returns non-zero.  Returns that value, else a
 * store status (STORE_FAILED for a damaged record).
 */
typedef int (*docset_record_fn)(const struct doc_record *r, void *arg);
int docset_records(struct docset *ds, struct store_txn *txn, uint64_t from,
    docset_record_fn fn, void *arg);

/* A neighbour, copied out of a transaction. */
struct docset_neighbour {
	uint64_t id;
	uint64_t group;
	uint64_t created_ms;
	unsigned distance;
	bool verified;		/* its similarity was estimated and passed */
	float resemblance;	/* verified: the estimates */
	float containment;
	char *url;		/* url_len bytes and a NUL */
	size_t url_len;
};

/* What a search for neighbours looks for. */
struct docset_query {
	uint64_t fp;
	const struct sketch *sketch;	/* the verified answer; NULL: the
					   Hamming answer */
	unsigned k;			/* the Hamming answer's distance */
	uint64_t exclude;		/* a document left out (0: none), */
	uint64_t exclude_fp;		/* ... and its fingerprint */
};

/*
 * The neighbours of q in namespace ns, with their URLs and groups read
 * through txn, at most max listed (the first by the answer's order).
 * Records txn does not see (a document stored by a transaction not yet
 * committed) or that are another namespace's (a document moving
 * meanwhile) are left out.  Returns a store status: STORE_OK with the
 * list in *out (free it with docset_neighbours_free), its length in *n
 * and how many neighbours there are in *total; the status of a record
 * that could not be read; STORE_FAILED when out of memory or q->k is
 * above k.
 */
int docset_neighbours(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const struct docset_query *q, size_t max, struct docset_neighbour **out,
    size_t *n, uint64_t *total);
void docset_neighbours_free(struct docset_neighbour *nb, size_t n);

/*
 * The stored documents of namespace ns (an id; DOCNS_NONE: none) within kq
 * (<= docset_k) of fp, nearest first, then oldest, except the document
 * exclude (0: none) whose fingerprint is exclude_fp.  Writes at most max
 * hits to out and returns how many there are in all, or -1 if kq is above
 * k or memory is short (the hits of other namespaces are passed over, and
 * when there are more than fit in out, all are read into memory of its
 * own).  Any thread.
 */
int64_t docset_near(struct docset *ds, uint32_t ns, uint64_t fp, unsigned kq,
    uint64_t exclude, uint64_t exclude_fp, struct nearidx_hit *out,
    size_t max);


/*
 * Writer thread, in txn: drops the namespace named name (checked, not
 * the default one): its name is free at once.  *id is its id and *docs
 * its documents, to be forgotten by docset_ns_forget; STORE_NOTFOUND if
 * the name has no documents.  *undo says what to take back if txn aborts.
 */
int docset_ns_drop(struct docset *ds, struct store_txn *txn, const char *name,
    uint32_t *id, uint64_t *docs, struct docset_ns_undo *undo);
/*
 * Writer thread, in txn: forgets at most max documents of dropped
 * namespace id, looking from document id *from on (0 at first) at most
 * scan ids; *from is where to look next.  Each forgotten document's undo
 * is in undo[0 .. *n).  When the namespace has no document left it is
 * retired (*done; docset_ns_undo takes it back with the rest).  Returns a
 * store status.
 */
int docset_ns_forget(struct docset *ds, struct store_txn *txn, uint32_t id,
    uint64_t *from, uint64_t scan, size_t max, struct doc_undo *undo,
    size_t *n, bool *done, struct docset_ns_undo *nsundo);
/* Writer thread: takes back a drop or retirement whose transaction
 * aborted (first: then the forgotten documents' undo, the last first). */
void docset_ns_undo(struct docset *ds, const struct docset_ns_undo *undo);
/* Any thread: the dropped namespaces whose documents are not all
 * forgotten, at most max in ids; returns how many there are. */
size_t docset_ns_dropped(struct docset *ds, uint32_t *ids, size_t max);

/* Any thread: statistics.  docs counts the documents as the namespaces
 * count them (verify checks the counts against the records). */
void docset_stats(struct docset *ds, struct docset_stats *out);

/*
 * Writer thread, no transaction open: checks the tables, the sketch
 * index, the URL index and the namespaces (each one's count, each
 * document's tag) against the records.  Returns a store status; findings in *out.
 */
int docset_verify(struct docset *ds, struct docset_verify *out);

#endif
