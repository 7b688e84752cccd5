/*
 * docset: the stored documents, their tables and groups.  See docset.h.
 */
#include "docset.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "docmove.h"
#include "le.h"
#include "log.h"

/*
 * Fixed part of a record: fp, group, created, updated; then the URL.  A
 * document of a named namespace adds a NUL (which no canonical URL holds),
 * its namespace's id (32 bits) and name; one of the default namespace has
 * nothing after its URL, as every record had before namespaces.
 */
#define DOC_FIXED_LEN 32
#define DOC_NS_LEN(name_len) (1 + 4 + (name_len))
/* Version of the record layout and metadata below: 2 names namespaces
 * (docns.c writes it with the first one) and reads records of 1. */
#define DOCSET_FORMAT "1"
#define DOCSET_FORMAT_MAX 2
/* docset_near for a namespace among others reads at least this many hits
 * at first. */
#define NEAR_NS_MIN_HITS 64

struct docset {
	struct store *st;
	struct nearidx *idx;
	struct docns *ns;
	struct docmove *move;	/* resharding's export session */
	unsigned k;
	uint64_t next_id;	/* writer thread */
};

/* Ids are keys in big-endian order, so that the table is in id order. */
static void
id_key(uint64_t id, uint8_t out[8])
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(id >> (56 - 8 * i));
}

static uint64_t
key_id(const uint8_t *k)
{
	uint64_t id = 0;

	for (int i = 0; i < 8; i++)
		id = (id << 8) | k[i];
	return id;
}

static int
record_decode(uint64_t id, const void *data, size_t len, struct doc_record *r)
{
	const uint8_t *p = data, *nul;
	size_t rest;

	if (len < DOC_FIXED_LEN)
		return -1;
	r->id = id;
	r->fp = le_get64(p);
	r->group = le_get64(p + 8);
	r->created_ms = le_get64(p + 16);
	r->updated_ms = le_get64(p + 24);
	r->url = (const char *)p + DOC_FIXED_LEN;
	r->url_len = len - DOC_FIXED_LEN;
	r->ns = DOCNS_DEFAULT;
	r->ns_name = "";
	r->ns_len = 0;
	if ((nul = memchr(r->url, '\0', r->url_len)) == NULL)
		return 0;
	rest = r->url_len - (size_t)(nul - (const uint8_t *)r->url);
	if (rest <= DOC_NS_LEN(0) || rest > DOC_NS_LEN(DOCNS_NAME_MAX))
		return -1;
	r->url_len -= rest;
	r->ns = le_get32(nul + 1);
	r->ns_name = (const char *)nul + DOC_NS_LEN(0);
	r->ns_len = rest - DOC_NS_LEN(0);
	return r->ns == DOCNS_DEFAULT || r->ns == DOCNS_NONE ? -1 : 0;
}

static int
record_put(struct store_txn *txn, const struct doc_record *r)
{
	size_t len = DOC_FIXED_LEN + r->url_len;
	uint8_t key[8], *val;
	int rc;

	if (r->ns != DOCNS_DEFAULT)
		len += DOC_NS_LEN(r->ns_len);
	if ((val = malloc(len)) == NULL)
		return STORE_FAILED;
	le_put64(val, r->fp);
	le_put64(val + 8, r->group);
	le_put64(val + 16, r->created_ms);
	le_put64(val + 24, r->updated_ms);
	memcpy(val + DOC_FIXED_LEN, r->url, r->url_len);
	if (r->ns != DOCNS_DEFAULT) {
		uint8_t *t = val + DOC_FIXED_LEN + r->url_len;

		t[0] = '\0';
		le_put32(t + 1, r->ns);
		memcpy(t + DOC_NS_LEN(0), r->ns_name, r->ns_len);
	}
	id_key(r->id, key);
	rc = store_put(txn, STORE_DOCS, key, sizeof(key), val, len, 0, NULL);
	free(val);
	return rc;
}

int
docset_record(struct docset *ds, struct store_txn *txn, uint64_t id,
    struct doc_record *out)
{
	struct store_val v;
	uint8_t key[8];
	int rc;

	(void)ds;
	id_key(id, key);
	if ((rc = store_get(txn, STORE_DOCS, key, sizeof(key), &v)) !=
	    STORE_OK)
		return rc;
	if (record_decode(id, v.data, v.len, out) == -1) {
		log_warnx("%s: document %" PRIu64 " has a short record",
		    __func__, id);
		return STORE_FAILED;
	}
	return STORE_OK;
}

struct records_scan {
	docset_record_fn fn;
	void *arg;
	bool bad;
};

static int
records_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct records_scan *rs = arg;
	struct doc_record r;

	if (klen != 8 || record_decode(key_id(key), val, vlen, &r) == -1) {
		log_warnx("%s: a document record has the wrong size",
		    __func__);
		rs->bad = true;
		return STORE_FAILED;
	}
	return rs->fn(&r, rs->arg);
}

int
docset_records(struct docset *ds, struct store_txn *txn, uint64_t from,
    docset_record_fn fn, void *arg)
{
	struct records_scan rs = { .fn = fn, .arg = arg };
	uint8_t key[8];
	int rc;

	(void)ds;
	id_key(from, key);
	rc = store_scan_from(txn, STORE_DOCS, key, sizeof(key), records_one,
	    &rs);
	return rs.bad ? STORE_FAILED : rc;
}

/* The id the URL index gives key, or 0. */
static int
lookup_id(struct store_txn *txn, const uint8_t key[DOCSET_KEY_LEN],
    uint64_t *id)
{
	struct store_val v;
	int rc = store_get(txn, STORE_DOC_URLS, key, DOCSET_KEY_LEN, &v);

	*id = 0;
	if (rc == STORE_NOTFOUND)
		return STORE_OK;
	if (rc != STORE_OK)
		return rc;
	if (v.len != 8) {
		log_warnx("%s: a document URL entry has the wrong size",
		    __func__);
		return STORE_FAILED;
	}
	*id = key_id(v.data);
	return STORE_OK;
}

int
docset_get(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const uint8_t key[DOCSET_KEY_LEN], struct doc_record *out)
{
	uint64_t id;
	int rc;

	if (ns == DOCNS_NONE)
		return STORE_NOTFOUND;
	if ((rc = lookup_id(txn, key, &id)) != STORE_OK)
		return rc;
	if (id == 0)
		return STORE_NOTFOUND;
	if ((rc = docset_record(ds, txn, id, out)) != STORE_OK)
		return rc;
	/* A dropped namespace's document, not yet forgotten, under the key
	 * the name's new namespace would give it. */
	return out->ns == ns ? STORE_OK : STORE_NOTFOUND;
}

/*
 * docset_near for namespace ns when the tables hold documents of others:
 * every hit within kq is looked at, by its tag, and those of other
 * namespaces passed over.  With need_total false, only the first max
 * hits matter (a group's decision), and the count returned is only at
 * least their number: a prefix that holds them spares reading all hits.
 */
static int64_t
near_in_ns(struct docset *ds, uint32_t ns, uint64_t fp, unsigned kq,
    uint64_t exclude, struct nearidx_hit *out, size_t max, bool need_total)
{
	struct nearidx_hit *all = NULL, *grown;
	size_t cap = max + 1 < NEAR_NS_MIN_HITS ? NEAR_NS_MIN_HITS : max + 1;
	size_t n, kept = 0;
	uint64_t in_ns = 0;
	int64_t total;

	for (;;) {
		if ((grown = realloc(all, cap * sizeof(*all))) == NULL) {
			free(all);
			log_warnx("%s: out of memory", __func__);
			return -1;
		}
		all = grown;
		if ((total = nearidx_query(ds->idx, fp, kq, all, cap)) < 0) {
			free(all);
			return total;
		}
		if ((size_t)total <= cap)
			break;
		if (!need_total) {
			size_t mine = 0;

			for (size_t i = 0; i < cap && mine < max; i++)
				mine += all[i].doc_id != exclude &&
				    docns_tag(ds->ns, all[i].doc_id) == ns;
			if (mine >= max)
				break;
		}
		/* All of them, with room for a few stored meanwhile. */
		cap = (size_t)total + (size_t)total / 8 + 16;
	}
	n = (size_t)total < cap ? (size_t)total : cap;
	for (size_t i = 0; i < n; i++) {
		if (all[i].doc_id == exclude ||
		    docns_tag(ds->ns, all[i].doc_id) != ns)
			continue;
		if (kept < max)
			out[kept++] = all[i];
		in_ns++;
	}
	free(all);
	return (int64_t)in_ns;
}

/* docset_near, and for a group's decision (need_total false) less. */
static int64_t
near_hits(struct docset *ds, uint32_t ns, uint64_t fp, unsigned kq,
    uint64_t exclude, uint64_t exclude_fp, struct nearidx_hit *out,
    size_t max, bool need_total)
{
	int64_t total;
	size_t n;
	bool found = false;

	if (kq > ds->k)
		return -1;
	if (ns == DOCNS_NONE)
		return 0;
	if (ns != DOCNS_DEFAULT || docns_named_docs(ds->ns) > 0)
		return near_in_ns(ds, ns, fp, kq, exclude, out, max,
		    need_total);
	/* One more than asked: the excluded document may be among them. */
	total = nearidx_query(ds->idx, fp, kq, out, exclude ? max + 1 : max);
	if (total < 0)
		return total;
	/* A document of a named namespace stored meanwhile may be among
	 * the hits: counted before it entered the tables, so a count read
	 * after the query tells. */
	if (docns_named_docs(ds->ns) > 0)
		return near_in_ns(ds, ns, fp, kq, exclude, out, max,
		    need_total);
	if (exclude == 0)
		return total;
	n = (size_t)total < max + 1 ? (size_t)total : max + 1;
	for (size_t i = 0; i < n && !found; i++) {
		if (out[i].doc_id != exclude)
			continue;
		memmove(&out[i], &out[i + 1], (n - i - 1) * sizeof(*out));
		found = true;
	}
	/* Not among all the hits: not in the tables within kq, whatever its
	 * record said (the writer may be moving it to a new fingerprint).
	 * Beyond the hits returned, its fingerprint tells. */
	if (found || ((size_t)total > n &&
	    (unsigned)__builtin_popcountll(fp ^ exclude_fp) <= kq))
		total--;
	return total;
}

int64_t
docset_near(struct docset *ds, uint32_t ns, uint64_t fp, unsigned kq,
    uint64_t exclude, uint64_t exclude_fp, struct nearidx_hit *out,
    size_t max)
{
	return near_hits(ds, ns, fp, kq, exclude, exclude_fp, out, max, true);
}

void
docset_neighbours_free(struct docset_neighbour *nb, size_t n)
{
	(void)n;	/* one allocation holds the list and its URLs */
	free(nb);
}

/* Neighbours read per call on the stack, and not in memory of their own
 * (a batch's document reads at most DOCREQ_BATCH_NEAR_MAX, 24). */
#define NEIGHBOURS_ON_STACK 32

int
docset_neighbours(struct docset *ds, struct store_txn *txn, uint32_t ns,
    uint64_t fp, unsigned kq, uint64_t exclude, uint64_t exclude_fp,
    size_t max, struct docset_neighbour **out, size_t *n, uint64_t *total)
{
	struct nearidx_hit hits_stack[NEIGHBOURS_ON_STACK + 1], *hits;
	struct doc_record recs_stack[NEIGHBOURS_ON_STACK], *recs = NULL;
	struct docset_neighbour *nb = NULL;
	bool on_stack = max <= NEIGHBOURS_ON_STACK;
	size_t got, found = 0, bytes = 0;
	char *urls;
	int64_t t;
	int rc = STORE_FAILED;

	*out = NULL;
	*n = 0;
	*total = 0;
	hits = on_stack ? hits_stack : malloc((max + 1) * sizeof(*hits));
	if (hits == NULL)
		goto nomem;
	if ((t = docset_near(ds, ns, fp, kq, exclude, exclude_fp, hits,
	    max)) < 0) {
		if (kq > ds->k)
			log_warnx("%s: k %u is above %u", __func__, kq, ds->k);
		goto fail;
	}
	got = (size_t)t < max ? (size_t)t : max;
	if (on_stack)
		recs = recs_stack;
	else if (got > 0 && (recs = malloc(got * sizeof(*recs))) == NULL)
		goto nomem;
	/* The records first (their URLs stay valid in txn), then one
	 * allocation for the list and every URL. */
	for (size_t i = 0; i < got; i++) {
		rc = docset_record(ds, txn, hits[i].doc_id, &recs[found]);
		if (rc == STORE_NOTFOUND || (rc == STORE_OK &&
		    recs[found].ns != ns)) {
			/* Not committed yet: not a neighbour yet; or its id
			 * was taken back and given to another's. */
			t--;
			continue;
		}
		if (rc != STORE_OK)
			goto fail;	/* the store said why */
		hits[found].distance = hits[i].distance;
		bytes += recs[found].url_len + 1;
		found++;
	}
	if (found > 0) {
		if ((nb = malloc(found * sizeof(*nb) + bytes)) == NULL)
			goto nomem;
		urls = (char *)(nb + found);
		for (size_t i = 0; i < found; i++) {
			nb[i].id = recs[i].id;
			nb[i].group = recs[i].group;
			nb[i].created_ms = recs[i].created_ms;
			nb[i].distance = hits[i].distance;
			nb[i].url = urls;
			nb[i].url_len = recs[i].url_len;
			memcpy(urls, recs[i].url, recs[i].url_len);
			urls[recs[i].url_len] = '\0';
			urls += recs[i].url_len + 1;
		}
	}
	if (!on_stack) {
		free(recs);
		free(hits);
	}
	*out = nb;
	*n = found;
	*total = (uint64_t)t;
	return STORE_OK;
nomem:
	log_warnx("%s: out of memory", __func__);
	rc = STORE_FAILED;
fail:
	if (!on_stack) {
		free(recs);
		free(hits);
	}
	return rc;
}

int
docset_group_for(struct docset *ds, struct store_txn *txn, uint32_t ns,
    uint64_t fp, uint64_t exclude, uint64_t exclude_fp, uint64_t *group)
{
	struct nearidx_hit hit[2];
	struct doc_record r;
	int64_t t;
	int rc;

	*group = 0;
	if ((t = near_hits(ds, ns, fp, ds->k, exclude, exclude_fp, hit, 1,
	    false)) < 0)
		return STORE_FAILED;
	if (t == 0)
		return STORE_OK;
	/* Sorted by distance, then id: the nearest, and of those the
	 * oldest. */
	if ((rc = docset_record(ds, txn, hit[0].doc_id, &r)) != STORE_OK)
		return rc;
	*group = r.group;
	return STORE_OK;
}

/* Takes document id with fingerprint fp out of the tables and its
 * namespace's count. */
static int
tables_remove(struct docset *ds, uint64_t fp, uint64_t id, uint32_t ns)
{
	if (nearidx_delete(ds->idx, fp, id) != 1) {
		log_warnx("%s: document %" PRIu64 " was not in the tables",
		    __func__, id);
		return STORE_FAILED;
	}
	docns_count(ds->ns, ns, -1);
	return STORE_OK;
}

/*
 * Puts document id with fingerprint fp of namespace ns into the tables:
 * tagged and counted first, so that a query that finds it knows its
 * namespace.
 */
static int
tables_insert(struct docset *ds, uint64_t fp, uint64_t id, uint32_t ns)
{
	if (docns_tag_set(ds->ns, id, ns) == -1) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	docns_count(ds->ns, ns, 1);
	if (nearidx_insert(ds->idx, fp, id) == -1) {
		docns_count(ds->ns, ns, -1);
		return STORE_FAILED;
	}
	return STORE_OK;
}

/* Notes a change of the document of ns and url for resharding, before
 * the change: a change that cannot be noted is not made. */
static int
note_change(struct docset *ds, struct store_txn *txn, const char *ns,
    size_t ns_len, const char *url, size_t url_len)
{
	if (docmove_note(ds->move, store_txn_id(txn), ns, ns_len, url,
	    url_len) == -1) {
		log_warnx("%s: out of memory", __func__);
		return STORE_FAILED;
	}
	return STORE_OK;
}

/* The times a put stores: now (a new document's creation, a known one's
 * kept), or both given. */
struct put_times {
	uint64_t now_ms;
	bool given;
	uint64_t created_ms, updated_ms;
};

static int
put_doc(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, uint64_t join, const struct put_times *t,
    struct doc_record *out, bool *created, struct doc_undo *undo,
    struct docset_near_list *near)
{
	struct doc_record old, r;
	uint64_t id, group;
	uint32_t nsid;
	uint8_t idk[8];
	char next[32];
	int rc;

	memset(undo, 0, sizeof(*undo));
	*created = false;
	if ((rc = note_change(ds, txn, ns, strlen(ns), url, url_len)) !=
	    STORE_OK)
		return rc;
	if ((nsid = docns_find(ds->ns, ns, strlen(ns))) == DOCNS_NONE) {
		if ((rc = docns_create(ds->ns, txn, ns, &nsid)) != STORE_OK)
			return rc;
		undo->new_ns = nsid;
	}
	if ((rc = lookup_id(txn, key, &id)) != STORE_OK)
		return rc;
	if (id != 0) {
		if ((rc = docset_record(ds, txn, id, &old)) != STORE_OK)
			return rc;
		/* The page changed: out of the tables before its group is
		 * decided again. */
		if ((rc = tables_remove(ds, old.fp, id, old.ns)) != STORE_OK)
			return rc;
		undo->removed = true;
		undo->rem_fp = old.fp;
		undo->rem_id = id;
		undo->rem_ns = old.ns;
		r.created_ms = old.created_ms;
		if (old.ns != nsid) {
			/* A dropped namespace's document, not yet forgotten,
			 * under the key: it is forgotten now, and this one
			 * is new in the name's new namespace. */
			if (!docns_dropping(ds->ns, old.ns))
				log_warnx("%s: documents %" PRIu64 " of two "
				    "namespaces share a key", __func__, id);
			id_key(id, idk);
			if ((rc = store_del(txn, STORE_DOCS, idk,
			    sizeof(idk))) != STORE_OK)
				return rc;
			id = 0;
		}
	}
	if (id == 0) {
		if (ds->next_id > NEARIDX_MAX_DOC_ID) {
			log_warnx("%s: document ids are exhausted", __func__);
			return STORE_FULL;
		}
		id = ds->next_id++;
		undo->new_id = id;
		*created = true;
		r.created_ms = t->now_ms;
		id_key(id, idk);
		snprintf(next, sizeof(next), "%" PRIu64, ds->next_id);
		if ((rc = store_put(txn, STORE_DOC_URLS, key, DOCSET_KEY_LEN,
		    idk, sizeof(idk), 0, NULL)) != STORE_OK ||
		    (rc = store_meta_put(txn, "docs.next_id", next)) !=
		    STORE_OK)
			return rc;
	}
	if (near != NULL) {
		/* Its neighbours (it is out of the tables now) and its group,
		 * the nearest one's: one search for both. */
		if ((rc = docset_neighbours(ds, txn, nsid, fp, ds->k, 0, 0,
		    near->max > 0 ? near->max : 1, &near->list, &near->n,
		    &near->total)) != STORE_OK)
			return rc;
		group = near->n > 0 ? near->list[0].group : 0;
		if (near->n > near->max)
			near->n = near->max;
	} else if (join == 0 && (rc = docset_group_for(ds, txn, nsid, fp, 0,
	    0, &group)) != STORE_OK)
		return rc;
	if (join != 0)
		group = join == DOCSET_OWN_GROUP ? id : join;
	r.id = id;
	r.fp = fp;
	r.group = group ? group : id;
	r.updated_ms = t->now_ms;
	if (t->given) {
		r.created_ms = t->created_ms;
		r.updated_ms = t->updated_ms;
	}
	r.url = url;
	r.url_len = url_len;
	r.ns = nsid;
	r.ns_name = ns;
	r.ns_len = strlen(ns);
	if ((rc = record_put(txn, &r)) != STORE_OK)
		return rc;
	if ((rc = tables_insert(ds, fp, id, nsid)) != STORE_OK)
		return rc;
	undo->inserted = true;
	undo->ins_fp = fp;
	undo->ins_id = id;
	undo->ins_ns = nsid;
	/* What was stored, without reading it back. */
	*out = r;
	return STORE_OK;
}

int
docset_put(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, uint64_t join, uint64_t now_ms, struct doc_record *out,
    bool *created, struct doc_undo *undo, struct docset_near_list *near)
{
	struct put_times t = { .now_ms = now_ms };

	return put_doc(ds, txn, ns, key, url, url_len, fp, join, &t, out,
	    created, undo, near);
}

int
docset_put_times(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, uint64_t join, uint64_t created_ms, uint64_t updated_ms,
    struct doc_record *out, bool *created, struct doc_undo *undo)
{
	struct put_times t = { .given = true, .created_ms = created_ms,
	    .updated_ms = updated_ms };

	return put_doc(ds, txn, ns, key, url, url_len, fp, join, &t, out,
	    created, undo, NULL);
}

/* Deletes document r (its record, its URL's entry if the entry is its,
 * its place in the tables), noting in undo how to take it back. */
static int
forget_record(struct docset *ds, struct store_txn *txn,
    const uint8_t key[DOCSET_KEY_LEN], const struct doc_record *r,
    struct doc_undo *undo)
{
	uint8_t idk[8];
	uint64_t owner;
	int rc;

	memset(undo, 0, sizeof(*undo));
	if ((rc = note_change(ds, txn, r->ns_name, r->ns_len, r->url,
	    r->url_len)) != STORE_OK)
		return rc;
	id_key(r->id, idk);
	if ((rc = store_del(txn, STORE_DOCS, idk, sizeof(idk))) != STORE_OK ||
	    (rc = lookup_id(txn, key, &owner)) != STORE_OK)
		return rc;
	if (owner == r->id && (rc = store_del(txn, STORE_DOC_URLS, key,
	    DOCSET_KEY_LEN)) != STORE_OK)
		return rc;
	if ((rc = tables_remove(ds, r->fp, r->id, r->ns)) != STORE_OK)
		return rc;
	undo->removed = true;
	undo->rem_fp = r->fp;
	undo->rem_id = r->id;
	undo->rem_ns = r->ns;
	return STORE_OK;
}

int
docset_delete(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], uint64_t *id, struct doc_undo *undo)
{
	struct doc_record r;
	uint32_t nsid = docns_find(ds->ns, ns, strlen(ns));
	int rc;

	memset(undo, 0, sizeof(*undo));
	*id = 0;
	if (nsid == DOCNS_NONE)
		return STORE_OK;
	if ((rc = lookup_id(txn, key, id)) != STORE_OK || *id == 0)
		return rc;
	if ((rc = docset_record(ds, txn, *id, &r)) != STORE_OK)
		return rc;
	if (r.ns != nsid) {
		*id = 0;	/* a dropped namespace's, not this one's */
		return STORE_OK;
	}
	return forget_record(ds, txn, key, &r, undo);
}

void
docset_undo(struct docset *ds, const struct doc_undo *undo)
{
	/* Undone the last first: the earliest id taken is the next. */
	if (undo->new_id != 0)
		ds->next_id = undo->new_id;
	if (undo->inserted) {
		if (nearidx_delete(ds->idx, undo->ins_fp, undo->ins_id) != 1)
			fatalx("%s: cannot take back document %" PRIu64,
			    __func__, undo->ins_id);
		docns_count(ds->ns, undo->ins_ns, -1);
	}
	if (undo->removed) {
		/* Its tag is still its own: a tag outlives its document. */
		docns_count(ds->ns, undo->rem_ns, 1);
		if (nearidx_insert(ds->idx, undo->rem_fp, undo->rem_id) == -1)
			fatalx("%s: cannot restore document %" PRIu64,
			    __func__, undo->rem_id);
	}
	if (undo->new_ns != 0)
		docns_uncreate(ds->ns, undo->new_ns);
}

uint32_t
docset_ns_find(struct docset *ds, const char *name)
{
	return docns_find(ds->ns, name, strlen(name));
}

struct docns *
docset_namespaces(struct docset *ds)
{
	return ds->ns;
}

struct docmove *
docset_move(struct docset *ds)
{
	return ds->move;
}

int
docset_ns_drop(struct docset *ds, struct store_txn *txn, const char *name,
    uint32_t *id, uint64_t *docs, struct docset_ns_undo *undo)
{
	int rc;

	memset(undo, 0, sizeof(*undo));
	*docs = 0;
	*id = docns_find(ds->ns, name, strlen(name));
	if (*id == DOCNS_NONE || *id == DOCNS_DEFAULT)
		return STORE_NOTFOUND;
	if ((rc = docns_drop(ds->ns, txn, *id)) != STORE_OK)
		return rc;
	undo->dropped = *id;
	*docs = docns_docs(ds->ns, *id);
	return STORE_OK;
}

int
docset_key(const char *ns, size_t ns_len, const char *url, size_t url_len,
    uint8_t key[DOCSET_KEY_LEN])
{
	uint8_t mask[DOCNS_MASK_LEN];
	unsigned int mdlen;

	if (!EVP_Digest(url, url_len, key, &mdlen, EVP_md5(), NULL) ||
	    mdlen != DOCSET_KEY_LEN)
		return -1;
	if (ns_len == 0)
		return 0;
	docns_mask(ns, ns_len, mask);
	for (size_t i = 0; i < DOCSET_KEY_LEN; i++)
		key[i] ^= mask[i];
	return 0;
}

/* The key of document r. */
static int
record_key(const struct doc_record *r, uint8_t key[DOCSET_KEY_LEN])
{
	return docset_key(r->ns_name, r->ns == DOCNS_DEFAULT ? 0 : r->ns_len,
	    r->url, r->url_len, key);
}

int
docset_ns_forget(struct docset *ds, struct store_txn *txn, uint32_t id,
    uint64_t *from, uint64_t scan, size_t max, struct doc_undo *undo,
    size_t *n, bool *done, struct docset_ns_undo *nsundo)
{
	uint64_t at = *from > 0 ? *from : 1, end = ds->next_id, stop, left;
	uint8_t key[DOCSET_KEY_LEN];
	struct doc_record r;
	int rc;

	memset(nsundo, 0, sizeof(*nsundo));
	*n = 0;
	*done = false;
	/* A namespace left without documents, or never given one, has
	 * nothing to look for. */
	if (docns_docs(ds->ns, id) == 0)
		at = end;
	stop = at >= end || end - at <= scan ? end : at + scan;
	while (*n < max && (at = docns_tag_next(ds->ns, id, at, stop)) <
	    stop) {
		rc = docset_record(ds, txn, at, &r);
		if (rc == STORE_NOTFOUND || (rc == STORE_OK && r.ns != id)) {
			at++;	/* a tag outlives its document */
			continue;
		}
		if (rc != STORE_OK)
			return rc;
		if (record_key(&r, key) == -1)
			return STORE_FAILED;
		if ((rc = forget_record(ds, txn, key, &r, &undo[*n])) !=
		    STORE_OK)
			return rc;
		(*n)++;
		at++;
	}
	*from = at;
	if ((left = docns_docs(ds->ns, id)) > 0 && at < end)
		return STORE_OK;
	if (left > 0) {
		/* Every id looked at, from the first on, since no document
		 * takes a dropped namespace's id: the count was wrong. */
		log_warnx("%s: dropped document namespace %" PRIu32 " counted "
		    "%" PRIu64 " documents that are not there", __func__, id,
		    left);
		if (*n > 0) {
			*from = 1;	/* another look first */
			return STORE_OK;
		}
		docns_count(ds->ns, id, -(int64_t)left);
	}
	if ((rc = docns_retire(ds->ns, txn, id)) != STORE_OK) {
		docns_count(ds->ns, id, (int64_t)left);
		return rc;
	}
	nsundo->retired = id;
	nsundo->uncounted = left;
	*done = true;
	return STORE_OK;
}

void
docset_ns_undo(struct docset *ds, const struct docset_ns_undo *undo)
{
	if (undo->retired != 0) {
		docns_unretire(ds->ns, undo->retired);
		docns_count(ds->ns, undo->retired, (int64_t)undo->uncounted);
	}
	if (undo->dropped != 0)
		docns_undrop(ds->ns, undo->dropped);
}

size_t
docset_ns_dropped(struct docset *ds, uint32_t *ids, size_t max)
{
	return docns_dropped(ds->ns, ids, max);
}

/*
 * The metadata a data directory fixes once it holds documents: the term
 * hash decides every fingerprint, so old and new ones must agree.  The stop
 * words do too, but changing them is allowed (with a warning): fewer stop
 * words make fingerprints drift, not nonsense.  Records of a format this
 * code does not know are refused.
 */
static int
docset_metadata(struct docset *ds, const struct docset_options *opts,
    uint64_t ndocs, char **cause)
{
	const char *th = simhash_term_hash_name(opts->term_hash);
	struct store_txn *txn;
	char buf[128];
	int rc;

	if ((rc = store_write_begin(ds->st, &txn)) != STORE_OK)
		goto store_err;
	rc = store_meta_get(txn, "docs.format", buf, sizeof(buf));
	if (rc == STORE_OK && strtoul(buf, NULL, 10) > DOCSET_FORMAT_MAX) {
		store_abort(txn);
		if (asprintf(cause, "the documents are stored in format %s, "
		    "newer than this nddd reads (%d)", buf,
		    DOCSET_FORMAT_MAX) == -1)
			*cause = NULL;
		return -1;
	}
	rc = store_meta_get(txn, "docs.term_hash", buf, sizeof(buf));
	if (rc == STORE_OK && ndocs > 0 && strcmp(buf, th) != 0) {
		store_abort(txn);
		if (asprintf(cause, "the stored documents were fingerprinted "
		    "with [simhash] term_hash = %s, but the configuration "
		    "gives %s; fingerprints of the two do not mix: restore the "
		    "setting or use a new data directory", buf, th) == -1)
			*cause = NULL;
		return -1;
	}
	if (rc != STORE_OK && rc != STORE_NOTFOUND) {
		store_abort(txn);
		goto store_err;
	}
	rc = store_meta_get(txn, "docs.stopwords", buf, sizeof(buf));
	if (rc == STORE_OK && ndocs > 0 &&
	    strcmp(buf, opts->stopwords_digest) != 0)
		log_warnx("%s: the stop words differ from those the stored "
		    "documents were fingerprinted with: near duplicates across "
		    "the change may be missed", __func__);
	if (ndocs == 0 && ((rc = store_meta_put(txn, "docs.term_hash", th)) !=
	    STORE_OK || (rc = store_meta_put(txn, "docs.stopwords",
	    opts->stopwords_digest)) != STORE_OK)) {
		store_abort(txn);
		goto store_err;
	}
	/* Format 1 until a namespace is named (docns.c). */
	if (store_meta_get(txn, "docs.format", buf, sizeof(buf)) ==
	    STORE_NOTFOUND && (rc = store_meta_put(txn, "docs.format",
	    DOCSET_FORMAT)) != STORE_OK) {
		store_abort(txn);
		goto store_err;
	}
	if (store_meta_get(txn, "docs.next_id", buf, sizeof(buf)) == STORE_OK)
		ds->next_id = strtoull(buf, NULL, 10);
	if ((rc = store_commit(txn)) != STORE_OK)
		goto store_err;
	return 0;
store_err:
	if (asprintf(cause, "document metadata: %s", store_strstatus(rc)) ==
	    -1)
		*cause = NULL;
	return -1;
}

/* A namespace id a record names that the registry lacks, and its name. */
struct stray_ns {
	uint32_t id;
	char name[DOCNS_NAME_MAX + 1];
};

struct load {
	struct docns *ns;
	uint64_t *fps, *ids;
	uint32_t *nss;
	size_t n, cap;
	uint64_t max_id;
	struct stray_ns *stray;
	size_t nstray;
	const char *bad;
};

/* Notes record r's namespace if the registry lacks it. */
static int
load_stray(struct load *ld, const struct doc_record *r)
{
	struct stray_ns *grown;

	if (r->ns == DOCNS_DEFAULT || docns_name(ld->ns, r->ns,
	    (char[DOCNS_NAME_MAX + 1]){ 0 }))
		return 0;
	for (size_t i = 0; i < ld->nstray; i++)
		if (ld->stray[i].id == r->ns)
			return 0;
	if ((grown = realloc(ld->stray, (ld->nstray + 1) *
	    sizeof(*grown))) == NULL)
		return -1;
	ld->stray = grown;
	grown[ld->nstray].id = r->ns;
	memcpy(grown[ld->nstray].name, r->ns_name, r->ns_len);
	grown[ld->nstray].name[r->ns_len] = '\0';
	ld->nstray++;
	return 0;
}

static int
load_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct load *ld = arg;
	struct doc_record r;

	if (klen != 8 || record_decode(key_id(key), val, vlen, &r) == -1) {
		ld->bad = "a document record has the wrong size";
		return -1;
	}
	if (ld->n == ld->cap) {
		size_t cap = ld->cap ? ld->cap * 2 : 65536;
		uint64_t *f = realloc(ld->fps, cap * sizeof(*f));
		uint32_t *s;

		if (f != NULL)
			ld->fps = f;
		if (f == NULL || (f = realloc(ld->ids, cap * sizeof(*f))) ==
		    NULL) {
			ld->bad = "out of memory";
			return -1;
		}
		ld->ids = f;
		if ((s = realloc(ld->nss, cap * sizeof(*s))) == NULL) {
			ld->bad = "out of memory";
			return -1;
		}
		ld->nss = s;
		ld->cap = cap;
	}
	if (load_stray(ld, &r) == -1) {
		ld->bad = "out of memory";
		return -1;
	}
	ld->fps[ld->n] = r.fp;
	ld->nss[ld->n] = r.ns;
	ld->ids[ld->n++] = r.id;
	if (r.id > ld->max_id)
		ld->max_id = r.id;
	return 0;
}

/* Records the namespaces that records name and the registry lacks as
 * dropped ones, in a transaction of their own. */
static int
adopt_strays(struct docset *ds, const struct load *ld, char **cause)
{
	struct store_txn *txn;
	int rc;

	if (ld->nstray == 0)
		return 0;
	if ((rc = store_write_begin(ds->st, &txn)) != STORE_OK)
		goto err;
	for (size_t i = 0; i < ld->nstray; i++) {
		log_warnx("%s: documents name namespace %s (id %" PRIu32 "), "
		    "which the metadata lacks: taken for a dropped one, they "
		    "are forgotten", __func__, ld->stray[i].name,
		    ld->stray[i].id);
		if ((rc = docns_adopt(ds->ns, txn, ld->stray[i].id,
		    ld->stray[i].name, strlen(ld->stray[i].name))) !=
		    STORE_OK) {
			store_abort(txn);
			goto err;
		}
	}
	if ((rc = store_commit(txn)) == STORE_OK)
		return 0;
err:
	if (asprintf(cause, "document namespaces: %s", store_strstatus(rc)) ==
	    -1)
		*cause = NULL;
	return -1;
}

/* Each loaded document's tag and count. */
static int
load_namespaces(struct docset *ds, const struct load *ld, char **cause)
{
	uint32_t run_ns = DOCNS_DEFAULT;
	int64_t run = 0;

	for (size_t i = 0; i < ld->n; i++) {
		if (ld->nss[i] != run_ns) {
			docns_count(ds->ns, run_ns, run);
			run_ns = ld->nss[i];
			run = 0;
		}
		run++;
		if (ld->nss[i] != DOCNS_DEFAULT &&
		    docns_tag_set(ds->ns, ld->ids[i], ld->nss[i]) == -1) {
			*cause = NULL;	/* out of memory */
			return -1;
		}
	}
	docns_count(ds->ns, run_ns, run);
	return 0;
}

/* The namespace registry, read before the records that name it. */
static struct docns *
open_namespaces(struct store *st, char **cause)
{
	struct store_txn *rd = store_reader_new(st);
	struct docns *ns = NULL;
	int rc;

	if (rd == NULL || (rc = store_reader_begin(rd)) != STORE_OK) {
		if (asprintf(cause, "document namespaces: %s", rd == NULL ?
		    "out of memory" : store_strstatus(rc)) == -1)
			*cause = NULL;
		store_reader_free(rd);
		return NULL;
	}
	ns = docns_open(rd, cause);
	store_reader_end(rd);
	store_reader_free(rd);
	return ns;
}

struct docset *
docset_open(struct store *st, const struct docset_options *opts, char **cause)
{
	struct nearidx_config nc;
	struct docset *ds;
	struct load ld = { 0 };
	int rc;

	*cause = NULL;
	if ((ds = calloc(1, sizeof(*ds))) == NULL)
		return NULL;
	ds->st = st;
	ds->k = opts->k;
	ds->next_id = 1;
	if ((ds->move = docmove_new()) == NULL)
		goto err;
	nearidx_config_defaults(&nc);
	nc.k = opts->k;
	nc.blocks = opts->blocks;
	if ((ds->ns = open_namespaces(st, cause)) == NULL)
		goto err;
	ld.ns = ds->ns;
	if ((rc = store_scan(st, STORE_DOCS, load_one, &ld)) != STORE_OK) {
		if (asprintf(cause, "loading documents: %s", ld.bad ? ld.bad :
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		goto err;
	}
	nc.expected = ld.n;
	if ((ds->idx = nearidx_new(&nc, cause)) == NULL)
		goto err;
	if (docset_metadata(ds, opts, ld.n, cause) == -1 ||
	    adopt_strays(ds, &ld, cause) == -1 ||
	    load_namespaces(ds, &ld, cause) == -1)
		goto err;
	if (ld.max_id >= ds->next_id)
		ds->next_id = ld.max_id + 1;
	if (ld.n > 0 && nearidx_bulk_load(ds->idx, ld.fps, ld.ids, ld.n,
	    cause) == -1)
		goto err;
	log_info("%s: %zu documents in %u tables (k = %u, %u blocks, %s)",
	    __func__, ld.n, nearidx_tables(ds->idx), opts->k, opts->blocks,
	    nearidx_simd(ds->idx));
	free(ld.fps);
	free(ld.ids);
	free(ld.nss);
	free(ld.stray);
	return ds;
err:
	free(ld.fps);
	free(ld.ids);
	free(ld.nss);
	free(ld.stray);
	docset_free(ds);
	return NULL;
}

void
docset_free(struct docset *ds)
{
	if (ds == NULL)
		return;
	nearidx_free(ds->idx);
	docns_free(ds->ns);
	docmove_destroy(ds->move);
	free(ds);
}

unsigned
docset_k(const struct docset *ds)
{
	return ds->k;
}

void
docset_stats(struct docset *ds, struct docset_stats *out)
{
	/* Not the store's count of records: it misses what the store writer
	 * holds in its open transaction (defer.h). */
	out->docs = docns_docs(ds->ns, DOCNS_DEFAULT) +
	    docns_named_docs(ds->ns);
	out->dropping = docns_dropping_docs(ds->ns);
	out->distinct = nearidx_distinct(ds->idx);
	out->table_bytes = nearidx_memory_bytes(ds->idx);
	out->k = ds->k;
	out->blocks = nearidx_blocks(ds->idx);
	out->tables = nearidx_tables(ds->idx);
}

struct verify_scan {
	struct docset *ds;
	struct store_txn *txn;
	struct docset_verify *out;
	struct nearidx_hit *hits;
	size_t cap;
	/* The namespaces, by id, and the records counted for each. */
	struct docns_info *ns;
	size_t nns;
	uint64_t *counted;
	const char *bad;
};

static void
verify_note(struct docset_verify *out, const char *what, uint64_t id)
{
	if (out->detail[0] == '\0')
		snprintf(out->detail, sizeof(out->detail), "document %" PRIu64
		    ": %s", id, what);
}

static int
cmp_info_id(const void *a, const void *b)
{
	const struct docns_info *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Counts record r in its namespace; false if the registry lacks it. */
static bool
verify_count(struct verify_scan *vs, const struct doc_record *r)
{
	size_t lo = 0, hi = vs->nns;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (vs->ns[mid].id == r->ns) {
			vs->counted[mid]++;
			return strlen(vs->ns[mid].name) == r->ns_len &&
			    memcmp(vs->ns[mid].name, r->ns_name, r->ns_len) ==
			    0;
		}
		if (vs->ns[mid].id < r->ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int
verify_doc(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct verify_scan *vs = arg;
	struct doc_record r;
	uint8_t md5[DOCSET_KEY_LEN];
	uint64_t id;
	int64_t total;
	bool found = false;

	if (klen != 8 || record_decode(key_id(key), val, vlen, &r) == -1) {
		vs->bad = "a document record has the wrong size";
		return -1;
	}
	vs->out->records++;
	for (;;) {
		total = nearidx_query(vs->ds->idx, r.fp, 0, vs->hits, vs->cap);
		if (total < 0 || (size_t)total <= vs->cap)
			break;
		free(vs->hits);
		vs->cap = (size_t)total * 2;
		if ((vs->hits = malloc(vs->cap * sizeof(*vs->hits))) == NULL) {
			vs->bad = "out of memory";
			return -1;
		}
	}
	for (int64_t i = 0; i < total; i++)
		found |= vs->hits[i].doc_id == r.id;
	if (!found) {
		vs->out->table_mismatches++;
		verify_note(vs->out, "missing from the tables", r.id);
	}
	/* Its namespace must know it, and queries must see it there. */
	if (!verify_count(vs, &r) ||
	    docns_tag(vs->ds->ns, r.id) != r.ns) {
		vs->out->table_mismatches++;
		verify_note(vs->out, "its namespace is not the one it has in "
		    "memory", r.id);
	}
	/* Its URL, in its namespace, must lead back to it. */
	if (record_key(&r, md5) == -1 ||
	    lookup_id(vs->txn, md5, &id) != STORE_OK || id != r.id) {
		vs->out->url_mismatches++;
		verify_note(vs->out, "its URL does not lead to it", r.id);
	}
	return 0;
}

/* Each namespace's count against its records. */
static void
verify_counts(struct verify_scan *vs)
{
	for (size_t i = 0; i < vs->nns; i++) {
		if (vs->ns[i].docs == vs->counted[i])
			continue;
		vs->out->table_mismatches++;
		if (vs->out->detail[0] == '\0')
			snprintf(vs->out->detail, sizeof(vs->out->detail),
			    "namespace \"%s\" counts %" PRIu64 " documents, "
			    "the store holds %" PRIu64, vs->ns[i].name,
			    vs->ns[i].docs, vs->counted[i]);
	}
}

int
docset_verify(struct docset *ds, struct docset_verify *out)
{
	struct verify_scan vs = { .ds = ds, .out = out, .cap = 64 };
	uint64_t urls = 0;
	char *cause = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	/* Alone in the writer: no count changes meanwhile. */
	if ((vs.ns = docns_list(ds->ns, &vs.nns)) == NULL ||
	    (vs.counted = calloc(vs.nns + 1, sizeof(*vs.counted))) == NULL ||
	    (vs.txn = store_reader_new(ds->st)) == NULL ||
	    (vs.hits = malloc(vs.cap * sizeof(*vs.hits))) == NULL) {
		store_reader_free(vs.txn);
		free(vs.ns);
		free(vs.counted);
		return STORE_FAILED;
	}
	qsort(vs.ns, vs.nns, sizeof(*vs.ns), cmp_info_id);
	if ((rc = store_reader_begin(vs.txn)) == STORE_OK) {
		rc = store_scan_txn(vs.txn, STORE_DOCS, verify_doc, &vs);
		if (rc == STORE_OK)
			rc = store_count(vs.txn, STORE_DOC_URLS, &urls);
		store_reader_end(vs.txn);
	}
	store_reader_free(vs.txn);
	free(vs.hits);
	if (rc != STORE_OK) {
		snprintf(out->detail, sizeof(out->detail), "%s",
		    vs.bad ? vs.bad : store_strstatus(rc));
		free(vs.ns);
		free(vs.counted);
		return vs.bad ? STORE_FAILED : rc;
	}
	verify_counts(&vs);
	free(vs.ns);
	free(vs.counted);
	/* No URL without its document, no entry in the tables without its
	 * record. */
	if (urls != out->records) {
		out->url_mismatches++;
		if (out->detail[0] == '\0')
			snprintf(out->detail, sizeof(out->detail), "%" PRIu64
			    " URL index entries for %" PRIu64 " documents",
			    urls, out->records);
	}
	if (nearidx_count(ds->idx) != out->records) {
		out->table_mismatches++;
		if (out->detail[0] == '\0')
			snprintf(out->detail, sizeof(out->detail), "the tables "
			    "hold %" PRIu64 " documents, the store %" PRIu64,
			    nearidx_count(ds->idx), out->records);
	}
	if (nearidx_verify(ds->idx, &cause) == -1) {
		out->table_mismatches++;
		if (out->detail[0] == '\0')
			snprintf(out->detail, sizeof(out->detail), "tables: %s",
			    cause ? cause : "inconsistent");
		free(cause);
	}
	return STORE_OK;
}
