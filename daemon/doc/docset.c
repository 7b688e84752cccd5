/*
 * docset: the stored documents, their tables and groups.  See docset.h.
 */
#include "docset.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "le.h"
#include "log.h"

/* Fixed part of a record: fp, group, created, updated (then the URL). */
#define DOC_FIXED_LEN 32
/* Version of the record layout and metadata below. */
#define DOCSET_FORMAT "1"

struct docset {
	struct store *st;
	struct nearidx *idx;
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
	const uint8_t *p = data;

	if (len < DOC_FIXED_LEN)
		return -1;
	r->id = id;
	r->fp = le_get64(p);
	r->group = le_get64(p + 8);
	r->created_ms = le_get64(p + 16);
	r->updated_ms = le_get64(p + 24);
	r->url = (const char *)p + DOC_FIXED_LEN;
	r->url_len = len - DOC_FIXED_LEN;
	return 0;
}

static int
record_put(struct store_txn *txn, const struct doc_record *r)
{
	uint8_t key[8], *val;
	int rc;

	if ((val = malloc(DOC_FIXED_LEN + r->url_len)) == NULL)
		return STORE_FAILED;
	le_put64(val, r->fp);
	le_put64(val + 8, r->group);
	le_put64(val + 16, r->created_ms);
	le_put64(val + 24, r->updated_ms);
	memcpy(val + DOC_FIXED_LEN, r->url, r->url_len);
	id_key(r->id, key);
	rc = store_put(txn, STORE_DOCS, key, sizeof(key), val,
	    DOC_FIXED_LEN + r->url_len, 0, NULL);
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
docset_get(struct docset *ds, struct store_txn *txn,
    const uint8_t key[DOCSET_KEY_LEN], struct doc_record *out)
{
	uint64_t id;
	int rc;

	if ((rc = lookup_id(txn, key, &id)) != STORE_OK)
		return rc;
	if (id == 0)
		return STORE_NOTFOUND;
	return docset_record(ds, txn, id, out);
}

int64_t
docset_near(struct docset *ds, uint64_t fp, unsigned kq, uint64_t exclude,
    uint64_t exclude_fp, struct nearidx_hit *out, size_t max)
{
	int64_t total;
	size_t n;
	bool found = false;

	if (kq > ds->k)
		return -1;
	/* One more than asked: the excluded document may be among them. */
	total = nearidx_query(ds->idx, fp, kq, out, exclude ? max + 1 : max);
	if (total < 0 || exclude == 0)
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

void
docset_neighbours_free(struct docset_neighbour *nb, size_t n)
{
	(void)n;	/* one allocation holds the list and its URLs */
	free(nb);
}

int
docset_neighbours(struct docset *ds, struct store_txn *txn, uint64_t fp,
    unsigned kq, uint64_t exclude, uint64_t exclude_fp, size_t max,
    struct docset_neighbour **out, size_t *n, uint64_t *total)
{
	struct nearidx_hit *hits = malloc((max + 1) * sizeof(*hits));
	struct doc_record *recs = NULL;
	struct docset_neighbour *nb = NULL;
	size_t got, found = 0, bytes = 0;
	char *urls;
	int64_t t;
	int rc = STORE_FAILED;

	*out = NULL;
	*n = 0;
	*total = 0;
	if (hits == NULL)
		goto nomem;
	if ((t = docset_near(ds, fp, kq, exclude, exclude_fp, hits, max)) < 0) {
		log_warnx("%s: k %u is above %u", __func__, kq, ds->k);
		goto fail;
	}
	got = (size_t)t < max ? (size_t)t : max;
	if (got > 0 && (recs = malloc(got * sizeof(*recs))) == NULL)
		goto nomem;
	/* The records first (their URLs stay valid in txn), then one
	 * allocation for the list and every URL. */
	for (size_t i = 0; i < got; i++) {
		rc = docset_record(ds, txn, hits[i].doc_id, &recs[found]);
		if (rc == STORE_NOTFOUND) {
			t--;	/* not committed yet: not a neighbour yet */
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
			nb[i].distance = hits[i].distance;
			nb[i].url = urls;
			nb[i].url_len = recs[i].url_len;
			memcpy(urls, recs[i].url, recs[i].url_len);
			urls[recs[i].url_len] = '\0';
			urls += recs[i].url_len + 1;
		}
	}
	free(recs);
	free(hits);
	*out = nb;
	*n = found;
	*total = (uint64_t)t;
	return STORE_OK;
nomem:
	log_warnx("%s: out of memory", __func__);
	rc = STORE_FAILED;
fail:
	free(recs);
	free(hits);
	return rc;
}

int
docset_group_for(struct docset *ds, struct store_txn *txn, uint64_t fp,
    uint64_t exclude, uint64_t exclude_fp, uint64_t *group)
{
	struct nearidx_hit hit[2];
	struct doc_record r;
	int rc;

	*group = 0;
	if (docset_near(ds, fp, ds->k, exclude, exclude_fp, hit, 1) <= 0)
		return STORE_OK;
	/* Sorted by distance, then id: the nearest, and of those the
	 * oldest. */
	if ((rc = docset_record(ds, txn, hit[0].doc_id, &r)) != STORE_OK)
		return rc;
	*group = r.group;
	return STORE_OK;
}

int
docset_put(struct docset *ds, struct store_txn *txn,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, uint64_t now_ms, struct doc_record *out, bool *created,
    struct doc_undo *undo, struct docset_near_list *near)
{
	struct doc_record old, r;
	uint64_t id, group;
	uint8_t idk[8];
	char next[32];
	int rc;

	memset(undo, 0, sizeof(*undo));
	*created = false;
	if ((rc = lookup_id(txn, key, &id)) != STORE_OK)
		return rc;
	if (id != 0) {
		if ((rc = docset_record(ds, txn, id, &old)) != STORE_OK)
			return rc;
		/* The page changed: out of the tables before its group is
		 * decided again. */
		if (nearidx_delete(ds->idx, old.fp, id) != 1) {
			log_warnx("%s: document %" PRIu64 " was not in the "
			    "tables", __func__, id);
			return STORE_FAILED;
		}
		undo->removed = true;
		undo->rem_fp = old.fp;
		undo->rem_id = id;
		r.created_ms = old.created_ms;
	} else {
		if (ds->next_id > NEARIDX_MAX_DOC_ID) {
			log_warnx("%s: document ids are exhausted", __func__);
			return STORE_FULL;
		}
		id = ds->next_id++;
		undo->new_id = id;
		*created = true;
		r.created_ms = now_ms;
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
		if ((rc = docset_neighbours(ds, txn, fp, ds->k, 0, 0,
		    near->max > 0 ? near->max : 1, &near->list, &near->n,
		    &near->total)) != STORE_OK)
			return rc;
		group = near->n > 0 ? near->list[0].group : 0;
		if (near->n > near->max)
			near->n = near->max;
	} else if ((rc = docset_group_for(ds, txn, fp, 0, 0, &group)) !=
	    STORE_OK)
		return rc;
	r.id = id;
	r.fp = fp;
	r.group = group ? group : id;
	r.updated_ms = now_ms;
	r.url = url;
	r.url_len = url_len;
	if ((rc = record_put(txn, &r)) != STORE_OK)
		return rc;
	if (nearidx_insert(ds->idx, fp, id) == -1)
		return STORE_FAILED;
	undo->inserted = true;
	undo->ins_fp = fp;
	undo->ins_id = id;
	/* What was stored, without reading it back. */
	*out = r;
	return STORE_OK;
}

int
docset_delete(struct docset *ds, struct store_txn *txn,
    const uint8_t key[DOCSET_KEY_LEN], uint64_t *id, struct doc_undo *undo)
{
	struct doc_record r;
	uint8_t idk[8];
	int rc;

	memset(undo, 0, sizeof(*undo));
	if ((rc = lookup_id(txn, key, id)) != STORE_OK || *id == 0)
		return rc;
	if ((rc = docset_record(ds, txn, *id, &r)) != STORE_OK)
		return rc;
	id_key(*id, idk);
	if ((rc = store_del(txn, STORE_DOCS, idk, sizeof(idk))) != STORE_OK ||
	    (rc = store_del(txn, STORE_DOC_URLS, key, DOCSET_KEY_LEN)) !=
	    STORE_OK)
		return rc;
	if (nearidx_delete(ds->idx, r.fp, *id) != 1) {
		log_warnx("%s: document %" PRIu64 " was not in the tables",
		    __func__, *id);
		return STORE_FAILED;
	}
	undo->removed = true;
	undo->rem_fp = r.fp;
	undo->rem_id = *id;
	return STORE_OK;
}

void
docset_undo(struct docset *ds, const struct doc_undo *undo)
{
	/* Undone the last first: the earliest id taken is the next. */
	if (undo->new_id != 0)
		ds->next_id = undo->new_id;
	if (undo->inserted && nearidx_delete(ds->idx, undo->ins_fp,
	    undo->ins_id) != 1)
		fatalx("%s: cannot take back document %" PRIu64, __func__,
		    undo->ins_id);
	if (undo->removed && nearidx_insert(ds->idx, undo->rem_fp,
	    undo->rem_id) == -1)
		fatalx("%s: cannot restore document %" PRIu64, __func__,
		    undo->rem_id);
}

/*
 * The metadata a data directory fixes once it holds documents: the term
 * hash decides every fingerprint, so old and new ones must agree.  The stop
 * words do too, but changing them is allowed (with a warning): fewer stop
 * words make fingerprints drift, not nonsense.
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
	if (ndocs == 0 && ((rc = store_meta_put(txn, "docs.format",
	    DOCSET_FORMAT)) != STORE_OK || (rc = store_meta_put(txn,
	    "docs.term_hash", th)) != STORE_OK || (rc = store_meta_put(txn,
	    "docs.stopwords", opts->stopwords_digest)) != STORE_OK)) {
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

struct load {
	uint64_t *fps, *ids;
	size_t n, cap;
	uint64_t max_id;
	const char *bad;
};

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

		if (f != NULL)
			ld->fps = f;
		if (f == NULL || (f = realloc(ld->ids, cap * sizeof(*f))) ==
		    NULL) {
			ld->bad = "out of memory";
			return -1;
		}
		ld->ids = f;
		ld->cap = cap;
	}
	ld->fps[ld->n] = r.fp;
	ld->ids[ld->n++] = r.id;
	if (r.id > ld->max_id)
		ld->max_id = r.id;
	return 0;
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
	nearidx_config_defaults(&nc);
	nc.k = opts->k;
	nc.blocks = opts->blocks;
	if ((rc = store_scan(st, STORE_DOCS, load_one, &ld)) != STORE_OK) {
		if (asprintf(cause, "loading documents: %s", ld.bad ? ld.bad :
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		goto err;
	}
	nc.expected = ld.n;
	if ((ds->idx = nearidx_new(&nc, cause)) == NULL)
		goto err;
	if (docset_metadata(ds, opts, ld.n, cause) == -1)
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
	return ds;
err:
	free(ld.fps);
	free(ld.ids);
	docset_free(ds);
	return NULL;
}

void
docset_free(struct docset *ds)
{
	if (ds == NULL)
		return;
	nearidx_free(ds->idx);
	free(ds);
}

unsigned
docset_k(const struct docset *ds)
{
	return ds->k;
}

int
docset_stats(struct docset *ds, struct store_txn *txn,
    struct docset_stats *out)
{
	int rc = store_count(txn, STORE_DOCS, &out->docs);

	out->distinct = nearidx_distinct(ds->idx);
	out->table_bytes = nearidx_memory_bytes(ds->idx);
	out->k = ds->k;
	out->blocks = nearidx_blocks(ds->idx);
	out->tables = nearidx_tables(ds->idx);
	return rc;
}

struct verify_scan {
	struct docset *ds;
	struct store_txn *txn;
	struct docset_verify *out;
	struct nearidx_hit *hits;
	size_t cap;
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
verify_doc(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct verify_scan *vs = arg;
	struct doc_record r;
	uint8_t md5[DOCSET_KEY_LEN];
	unsigned int mdlen;
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
	/* Its URL must lead back to it. */
	if (!EVP_Digest(r.url, r.url_len, md5, &mdlen, EVP_md5(), NULL) ||
	    lookup_id(vs->txn, md5, &id) != STORE_OK || id != r.id) {
		vs->out->url_mismatches++;
		verify_note(vs->out, "its URL does not lead to it", r.id);
	}
	return 0;
}

int
docset_verify(struct docset *ds, struct docset_verify *out)
{
	struct verify_scan vs = { .ds = ds, .out = out, .cap = 64 };
	uint64_t urls = 0;
	char *cause = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((vs.txn = store_reader_new(ds->st)) == NULL ||
	    (vs.hits = malloc(vs.cap * sizeof(*vs.hits))) == NULL) {
		store_reader_free(vs.txn);
		return STORE_FAILED;
	}
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
		return vs.bad ? STORE_FAILED : rc;
	}
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
