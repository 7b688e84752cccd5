/*
 * docns: the namespaces of documents: their names, ids and document
 * counts, and the namespace of every stored document.
 *
 * A namespace is an independent set of documents (one crawl, one
 * customer) sharing the document store and its tables.  The default
 * namespace is "" with id 0 and always exists; it holds the documents
 * stored before namespaces existed.  A named namespace takes the next id
 * when its first document is stored.  Ids are never reused: dropping a
 * namespace frees its name at once (a document stored under it then
 * starts a new namespace, with a new id), while the documents that keep
 * the old id are forgotten in the background (docset.h) and the id is
 * retired when none is left.  These are the documents' own namespaces:
 * the URL set keeps its registry of the same names (urlns.h), written by
 * another thread; the two share names, never ids.
 *
 * The store's metadata holds the registry, changed in the store writer's
 * transactions (with the documents that need the change, so that no
 * document ever names an id the metadata lacks):
 *
 *	docs.ns.next		the next id
 *	docs.ns/NAME		"ID" for each named namespace
 *	docs.ns_drop/ID		"NAME": dropped, documents not all forgotten
 *
 * In memory, besides the registry, the namespace id of every document id
 * (docns_tag): the near-duplicate tables know fingerprints and document
 * ids only, and a query keeps the hits of its own namespace by this exact
 * id, without reading their records.  It costs 4 bytes per document id,
 * allocated only once a document of a named namespace exists.
 *
 * Threads.  The store writer changes the registry, the counts and the
 * tags (and takes back its changes when a transaction aborts); any thread
 * looks names up, lists the namespaces and reads tags: the registry under
 * a read lock, tags and counts without one (a tag is written before its
 * document enters the tables, whose release of it orders the tag before
 * any query that finds the document).
 */
#ifndef NDDD_DOCNS_H
#define NDDD_DOCNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define DOCNS_NAME_MAX		64
#define DOCNS_DEFAULT		0		/* the default namespace's id */
#define DOCNS_NONE		UINT32_MAX	/* no namespace of that name */
/* Named namespaces with documents at most, dropped ones included (a
 * request that would create another is refused). */
#define DOCNS_MAX		16384
/* The length of a key's namespace mask (an MD5). */
#define DOCNS_MASK_LEN		16

struct docns_info {
	char name[DOCNS_NAME_MAX + 1];
	uint32_t id;
	uint64_t docs;			/* stored documents */
	bool dropping;
};

struct docns;

/*
 * Reads the registry from the metadata through txn (a begun reader or
 * the write transaction).  Returns NULL with *cause (caller frees; NULL
 * when memory is short) on failure.
 */
struct docns *docns_open(struct store_txn *txn, char **cause);
void docns_free(struct docns *r);

/*
 * The mask of a document key in the namespace name[0..len) (not empty):
 * the MD5 of "nddd.ns/" and the name, as the URL set masks its keys.  A
 * document's key in a named namespace is its canonical URL's MD5 XORed
 * with it; in the default namespace, the MD5 alone.
 */
void docns_mask(const char *name, size_t len, uint8_t out[DOCNS_MASK_LEN]);

/*
 * Any thread: the id of the live namespace named name[0..len), or
 * DOCNS_NONE ("" is DOCNS_DEFAULT).
 */
uint32_t docns_find(struct docns *r, const char *name, size_t len);
/* Any thread: whether DOCNS_MAX named namespaces exist. */
bool docns_full(struct docns *r);

/*
 * Writer, in txn: creates the namespace named name (valid, not empty, not
 * live) and records it in the metadata.  Returns a store status, *id the
 * new id.  docns_uncreate takes it back after txn aborted.
 */
int docns_create(struct docns *r, struct store_txn *txn, const char *name,
    uint32_t *id);
void docns_uncreate(struct docns *r, uint32_t id);
/*
 * Writer, in txn: drops namespace id (named, live): its name is free from
 * now on; it is listed as dropping until docns_retire.  Returns a store
 * status.  docns_undrop takes it back after txn aborted.
 */
int docns_drop(struct docns *r, struct store_txn *txn, uint32_t id);
void docns_undrop(struct docns *r, uint32_t id);
/*
 * Writer, in txn: forgets dropped namespace id, whose documents are all
 * gone.  Returns a store status.  docns_unretire takes it back after txn
 * aborted.
 */
int docns_retire(struct docns *r, struct store_txn *txn, uint32_t id);
void docns_unretire(struct docns *r, uint32_t id);
/*
 * Writer, at opening: a stored document names id, which the registry
 * lacks (damage): the namespace is taken for a dropped one named name, so
 * that its documents are forgotten, and recorded so in txn.
 */
int docns_adopt(struct docns *r, struct store_txn *txn, uint32_t id,
    const char *name, size_t len);

/* Writer: adds delta to namespace id's count of documents (if it exists). */
void docns_count(struct docns *r, uint32_t id, int64_t delta);
/* Any thread: the documents of named namespaces (live or dropping). */
uint64_t docns_named_docs(const struct docns *r);
/* Any thread: the documents of dropped namespaces still there. */
uint64_t docns_dropping_docs(struct docns *r);
/* Any thread: namespace id's documents (0 if there is no such id). */
uint64_t docns_docs(struct docns *r, uint32_t id);
/* Any thread: whether id is a dropped namespace's. */
bool docns_dropping(struct docns *r, uint32_t id);
/*
 * Any thread: the dropped namespaces' ids, at most max of them, in ids;
 * returns how many there are.
 */
size_t docns_dropped(struct docns *r, uint32_t *ids, size_t max);
/* Any thread: the name of namespace id (live or dropping) into name;
 * false if there is no such id. */
bool docns_name(struct docns *r, uint32_t id, char name[DOCNS_NAME_MAX + 1]);
/*
 * Any thread: the namespaces, the default one first, then the live ones
 * by name, then the dropped ones, in a new array (caller frees) of *n;
 * NULL when memory is short.
 */
struct docns_info *docns_list(struct docns *r, size_t *n);

/*
 * Writer: document doc_id is in namespace ns.  Returns -1 if memory is
 * short (nothing changes).  A tag outlives its document: a query finds
 * ids in the tables only, and an id is given out again only after its
 * document's put was taken back, which sets the tag anew.
 */
int docns_tag_set(struct docns *r, uint64_t doc_id, uint32_t ns);
/* Any thread: the namespace of document doc_id (DOCNS_DEFAULT unless
 * set). */
uint32_t docns_tag(const struct docns *r, uint64_t doc_id);
/*
 * Any thread: the first document id in [from, end) tagged ns (not
 * DOCNS_DEFAULT), or end if there is none.  Reads 4 bytes per id of the
 * range, skipping ranges where no named namespace has documents.
 */
uint64_t docns_tag_next(const struct docns *r, uint32_t ns, uint64_t from,
    uint64_t end);

#endif
