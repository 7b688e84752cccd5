/*
 * docset: the stored documents, their tables and groups.  See docset.h.
 */
#include "docset.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "docimage.h"
#include "le.h"
#include "log.h"
#include "md5.h"
#include "sketchidx.h"

/*
 * Fixed part of a record: fp, group, created, updated.  Bit 63 of the
 * group's word (group ids are below 2^63) says that the record's sketch
 * comes next, as sketch_encode writes it (its second byte says its
 * length); then the URL.  A document of a named namespace adds a NUL
 * (which no canonical URL holds), its namespace's id (32 bits) and name;
 * one of the default namespace has nothing after its URL, as every record
 * had before namespaces.
 */
#define DOC_FIXED_LEN 32
#define DOC_NS_LEN(name_len) (1 + 4 + (name_len))
#define DOC_HAS_SKETCH (UINT64_C(1) << 63)
/* Version of the record layout and metadata below: 2 names namespaces
 * (docns.c writes it with the first one), 3 keeps sketches; records of 1
 * and 2 are read too. */
#define DOCSET_FORMAT "3"
#define DOCSET_FORMAT_MAX 3
/* docset_near for a namespace among others reads at least this many hits
 * at first. */
#define NEAR_NS_MIN_HITS 64
/* A verified answer looks at most this many candidates of each kind
 * (within k; from the sketch index): each costs a record read. */
#define VERIFY_MAX 4096
/* A record's fixed fields and its largest sketch: what judges it. */
#define RECORD_HEAD_MAX	(DOC_FIXED_LEN + SKETCH_WIRE_MAX)

struct docset {
	struct store *st;
	struct nearidx *idx;
	struct sketchidx *sketches;
	struct docns *ns;
	/* The change hook: fn and release set by the writer before arg is
	 * published (release; other threads read arg with acquire). */
	docset_change_fn change_fn;
	void (*change_release)(void *);
	void *change_arg;
	unsigned k;
	float resemblance, containment;
	uint64_t next_id;	/* writer thread */
	uint64_t unsketched;	/* writer thread; read by any */
	bool from_image;	/* opened from the restart image */
	/* Counts of the verified answers (any thread, atomic). */
	uint64_t candidates, verified, keys_skipped;
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

/*
 * A record's fixed fields and its sketch into r, all but its URL and
 * namespace: what a verified answer needs to judge a candidate.  Returns
 * where the URL starts, or 0 when the record is short.
 */
static size_t
record_head(uint64_t id, const uint8_t *p, size_t len, struct doc_record *r)
{
	size_t at = DOC_FIXED_LEN;

	if (len < DOC_FIXED_LEN)
		return 0;
	r->id = id;
	r->fp = le_get64(p);
	r->group = le_get64(p + 8);
	r->created_ms = le_get64(p + 16);
	r->updated_ms = le_get64(p + 24);
	r->sketch = NULL;
	r->sketch_len = 0;
	if (r->group & DOC_HAS_SKETCH) {
		r->group &= ~DOC_HAS_SKETCH;
		if (len < at + 6 || (r->sketch_len = 6 + 4 * (size_t)p[at +
		    1]) > len - at)
			return 0;
		r->sketch = p + at;
		at += r->sketch_len;
	}
	return at;
}

static int
record_decode(uint64_t id, const void *data, size_t len, struct doc_record *r)
{
	const uint8_t *p = data, *nul;
	size_t rest, at;

	if ((at = record_head(id, p, len, r)) == 0)
		return -1;
	r->url = (const char *)p + at;
	r->url_len = len - at;
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

/* Puts record r, with sketch sk (NULL: none). */
static int
record_put(struct store_txn *txn, const struct doc_record *r,
    const struct sketch *sk)
{
	uint8_t sketch[SKETCH_WIRE_MAX];
	size_t slen = sk != NULL ? sketch_encode(sk, sketch) : 0;
	size_t len = DOC_FIXED_LEN + slen + r->url_len;
	uint8_t key[8], *val;
	int rc;

	if (r->ns != DOCNS_DEFAULT)
		len += DOC_NS_LEN(r->ns_len);
	if ((val = malloc(len)) == NULL)
		return STORE_FAILED;
	le_put64(val, r->fp);
	le_put64(val + 8, r->group | (sk != NULL ? DOC_HAS_SKETCH : 0));
	le_put64(val + 16, r->created_ms);
	le_put64(val + 24, r->updated_ms);
	memcpy(val + DOC_FIXED_LEN, sketch, slen);
	memcpy(val + DOC_FIXED_LEN + slen, r->url, r->url_len);
	if (r->ns != DOCNS_DEFAULT) {
		uint8_t *t = val + DOC_FIXED_LEN + slen + r->url_len;

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
docset_record_sketch(const struct doc_record *r, struct sketch *sk)
{
	if (r->sketch == NULL || sketch_decode(r->sketch, r->sketch_len, sk) ==
	    -1)
		return -1;
	return 0;
}

/* Document id's record, undecoded, into v.  Returns a store status. */
static int
record_get(struct store_txn *txn, uint64_t id, struct store_val *v)
{
	uint8_t key[8];

	id_key(id, key);
	return store_get(txn, STORE_DOCS, key, sizeof(key), v);
}

static int
short_record(uint64_t id)
{
	log_warnx("document %" PRIu64 " has a short record", id);
	return STORE_FAILED;
}

int
docset_record(struct docset *ds, struct store_txn *txn, uint64_t id,
    struct doc_record *out)
{
	struct store_val v;
	int rc;

	(void)ds;
	if ((rc = record_get(txn, id, &v)) != STORE_OK)
		return rc;
	if (record_decode(id, v.data, v.len, out) == -1)
		return short_record(id);
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

/*
 * The list of the first max of the n records recs (found: in order) and
 * their answers' fields in nb_of, in one allocation: the list, then every
 * URL.  NULL when out of memory (or n is 0).
 */
static struct docset_neighbour *
neighbours_copy(const struct doc_record *recs, const struct docset_neighbour
    *fields, size_t n)
{
	struct docset_neighbour *nb;
	size_t bytes = 0;
	char *urls;

	for (size_t i = 0; i < n; i++)
		bytes += recs[i].url_len + 1;
	if (n == 0 || (nb = malloc(n * sizeof(*nb) + bytes)) == NULL)
		return NULL;
	urls = (char *)(nb + n);
	for (size_t i = 0; i < n; i++) {
		nb[i] = fields[i];
		nb[i].id = recs[i].id;
		nb[i].group = recs[i].group;
		nb[i].created_ms = recs[i].created_ms;
		nb[i].url = urls;
		nb[i].url_len = recs[i].url_len;
		memcpy(urls, recs[i].url, recs[i].url_len);
		urls[recs[i].url_len] = '\0';
		urls += recs[i].url_len + 1;
	}
	return nb;
}

/* The Hamming answer: docset_near's hits with their records. */
static int
neighbours_hamming(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const struct docset_query *q, size_t max, struct docset_neighbour **out,
    size_t *n, uint64_t *total)
{
	struct nearidx_hit hits_stack[NEIGHBOURS_ON_STACK + 1], *hits;
	struct doc_record recs_stack[NEIGHBOURS_ON_STACK], *recs = NULL;
	struct docset_neighbour fields_stack[NEIGHBOURS_ON_STACK],
	    *fields = NULL;
	bool on_stack = max <= NEIGHBOURS_ON_STACK;
	size_t got, found = 0;
	int64_t t;
	int rc = STORE_FAILED;

	hits = on_stack ? hits_stack : malloc((max + 1) * sizeof(*hits));
	if (hits == NULL)
		goto nomem;
	if ((t = docset_near(ds, ns, q->fp, q->k, q->exclude, q->exclude_fp,
	    hits, max)) < 0) {
		if (q->k > ds->k)
			log_warnx("%s: k %u is above %u", __func__, q->k,
			    ds->k);
		goto fail;
	}
	got = (size_t)t < max ? (size_t)t : max;
	if (on_stack) {
		recs = recs_stack;
		fields = fields_stack;
	} else if (got > 0 && ((recs = malloc(got * sizeof(*recs))) == NULL ||
	    (fields = calloc(got, sizeof(*fields))) == NULL))
		goto nomem;
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
		memset(&fields[found], 0, sizeof(fields[found]));
		fields[found].distance = hits[i].distance;
		found++;
	}
	if (found > 0 && (*out = neighbours_copy(recs, fields, found)) ==
	    NULL)
		goto nomem;
	*n = found;
	*total = (uint64_t)t;
	rc = STORE_OK;
	goto done;
nomem:
	log_warnx("%s: out of memory", __func__);
	rc = STORE_FAILED;
fail:
done:
	if (!on_stack) {
		free(recs);
		free(fields);
		free(hits);
	}
	return rc;
}

/* Keeps the documents of one namespace (sketchidx's filter). */
struct ns_filter {
	const struct docns *ns;
	uint32_t id;
};

static int
in_namespace(uint32_t id, void *arg)
{
	const struct ns_filter *f = arg;

	return docns_tag(f->ns, id) == f->id;
}

/* A neighbour kept by a verified answer, with its record. */
struct kept {
	struct doc_record rec;
	struct docset_neighbour nb;
};

/* Most similar first, then oldest; documents without a sketch (kept by
 * distance) after the verified ones, nearest first, then oldest. */
static int
cmp_kept(const void *a, const void *b)
{
	const struct docset_neighbour *x = &((const struct kept *)a)->nb;
	const struct docset_neighbour *y = &((const struct kept *)b)->nb;

	if (x->verified != y->verified)
		return x->verified ? -1 : 1;
	if (x->verified && x->resemblance != y->resemblance)
		return x->resemblance > y->resemblance ? -1 : 1;
	if (!x->verified && x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The candidates of a verified answer: the documents within k, then
 * those of the sketch index that are not among them, into ids[] (room
 * for 2 * VERIFY_MAX); returns how many, or -1 when memory is short.
 */
static int64_t
verified_candidates(struct docset *ds, uint32_t ns,
    const struct docset_query *q, uint64_t *ids)
{
	struct nearidx_hit *hits = malloc((VERIFY_MAX + 1) * sizeof(*hits));
	uint32_t *sk = malloc(VERIFY_MAX * sizeof(*sk));
	struct ns_filter f = { .ns = ds->ns, .id = ns };
	struct sketchidx_counts counts = { 0, 0 };
	size_t nh, nall, n = 0;
	int64_t t, c = -1;

	if (hits == NULL || sk == NULL)
		goto out;
	if ((t = near_hits(ds, ns, q->fp, ds->k, q->exclude, q->exclude_fp,
	    hits, VERIFY_MAX, true)) < 0)
		goto out;
	nh = (size_t)t < VERIFY_MAX ? (size_t)t : VERIFY_MAX;
	for (size_t i = 0; i < nh; i++)
		ids[n++] = hits[i].doc_id;
	qsort(ids, n, sizeof(*ids), cmp_u64);
	if ((t = sketchidx_candidates(ds->sketches, q->sketch, ns ==
	    DOCNS_DEFAULT && docns_named_docs(ds->ns) == 0 ? NULL :
	    in_namespace, &f, (uint32_t)q->exclude, sk, VERIFY_MAX,
	    &counts)) < 0)
		goto out;
	__atomic_add_fetch(&ds->keys_skipped, counts.keys_skipped,
	    __ATOMIC_RELAXED);
	nall = n;
	for (size_t i = 0; i < (size_t)t && i < VERIFY_MAX; i++)
		if (bsearch(&(uint64_t){ sk[i] }, ids, nh, sizeof(*ids),
		    cmp_u64) == NULL)
			ids[nall++] = sk[i];
	c = (int64_t)nall;
out:
	free(hits);
	free(sk);
	return c;
}

/*
 * The verified answer: each candidate's record read; kept when its
 * sketch's resemblance or containment with q's passes its threshold, or,
 * stored without a sketch, when within k.
 */
static int
neighbours_verified(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const struct docset_query *q, size_t max, struct docset_neighbour **out,
    size_t *n, uint64_t *total)
{
	uint64_t *ids = malloc(2 * VERIFY_MAX * sizeof(*ids));
	struct kept *kept = NULL;
	struct store_val *vals = NULL;
	struct docset_neighbour *fields = NULL;
	struct doc_record *recs = NULL;
	struct sketch rsk;
	size_t nk = 0, listed;
	int64_t nc = -1;
	int rc = STORE_FAILED;

	if (ids == NULL || (nc = verified_candidates(ds, ns, q, ids)) < 0)
		goto nomem;
	if (nc > 0 && ((kept = malloc((size_t)nc * sizeof(*kept))) == NULL ||
	    (vals = malloc((size_t)nc * sizeof(*vals))) == NULL))
		goto nomem;
	__atomic_add_fetch(&ds->candidates, (uint64_t)nc, __ATOMIC_RELAXED);
	/*
	 * Every candidate's record found first, in key order, and its head
	 * fetched: the memory misses of all of them overlap, where reading
	 * each sketch in turn would wait for each (a sketch is up to 8
	 * cache lines, most candidates are judged by it and fail).
	 */
	qsort(ids, (size_t)nc, sizeof(*ids), cmp_u64);
	for (int64_t i = 0; i < nc; i++) {
		if ((rc = record_get(txn, ids[i], &vals[i])) == STORE_NOTFOUND)
			vals[i].data = NULL;	/* not committed yet */
		else if (rc != STORE_OK)
			goto fail;
		else
			for (size_t o = 0; o < vals[i].len && o < RECORD_HEAD_MAX;
			    o += 64)
				__builtin_prefetch((const uint8_t *)
				    vals[i].data + o);
	}
	for (int64_t i = 0; i < nc; i++) {
		struct kept *k = &kept[nk];
		struct sketch_similarity sim;
		struct store_val v = vals[i];

		/* Each is judged by its record's head, and only one kept is
		 * decoded whole. */
		if (v.data == NULL)
			continue;
		if (record_head(ids[i], v.data, v.len, &k->rec) == 0) {
			rc = short_record(ids[i]);
			goto fail;
		}
		memset(&k->nb, 0, sizeof(k->nb));
		k->nb.id = ids[i];
		k->nb.distance = (unsigned)__builtin_popcountll(q->fp ^
		    k->rec.fp);
		if (docset_record_sketch(&k->rec, &rsk) == 0) {
			sketch_compare(q->sketch, &rsk, &sim);
			if (sim.containment < ds->containment ||
			    sim.resemblance < ds->resemblance)
				continue;
			k->nb.verified = true;
			k->nb.resemblance = sim.resemblance;
			k->nb.containment = sim.containment;
		} else if (k->nb.distance > ds->k)
			continue;
		if (record_decode(ids[i], v.data, v.len, &k->rec) == -1) {
			rc = short_record(ids[i]);
			goto fail;
		}
		if (k->rec.ns != ns)
			continue;	/* moved */
		nk++;
	}
	__atomic_add_fetch(&ds->verified, nk, __ATOMIC_RELAXED);
	if (nk > 1)	/* kept is NULL without candidates */
		qsort(kept, nk, sizeof(*kept), cmp_kept);
	listed = nk < max ? nk : max;
	if (listed > 0) {
		if ((recs = malloc(listed * sizeof(*recs))) == NULL ||
		    (fields = malloc(listed * sizeof(*fields))) == NULL)
			goto nomem;
		for (size_t i = 0; i < listed; i++) {
			recs[i] = kept[i].rec;
			fields[i] = kept[i].nb;
		}
		if ((*out = neighbours_copy(recs, fields, listed)) == NULL)
			goto nomem;
	}
	*n = listed;
	*total = nk;
	rc = STORE_OK;
	goto done;
nomem:
	log_warnx("%s: out of memory", __func__);
	rc = STORE_FAILED;
fail:
done:
	free(ids);
	free(kept);
	free(vals);
	free(recs);
	free(fields);
	return rc;
}

int
docset_neighbours(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const struct docset_query *q, size_t max, struct docset_neighbour **out,
    size_t *n, uint64_t *total)
{
	*out = NULL;
	*n = 0;
	*total = 0;
	if (q->sketch == NULL)
		return neighbours_hamming(ds, txn, ns, q, max, out, n, total);
	if (ns == DOCNS_NONE)
		return STORE_OK;
	return neighbours_verified(ds, txn, ns, q, max, out, n, total);
}

/*
 * The group a document of namespace ns would join by the answer q asks
 * for, reading the neighbours' records through txn: its first
 * neighbour's, or 0 when it has none.  Returns a store status.
 */
static int
group_for(struct docset *ds, struct store_txn *txn, uint32_t ns,
    const struct docset_query *q, uint64_t *group)
{
	struct docset_neighbour *nb;
	uint64_t total;
	size_t n;
	int rc;

	*group = 0;
	if ((rc = docset_neighbours(ds, txn, ns, q, 1, &nb, &n, &total)) !=
	    STORE_OK)
		return rc;
	if (n > 0)
		*group = nb[0].group;
	docset_neighbours_free(nb, n);
	return STORE_OK;
}

/* The keys of record r's sketch into keys (their count in *nkeys), and
 * whether it has one. */
static bool
record_keys(const struct doc_record *r, uint32_t keys[SKETCH_KEYS],
    uint8_t *nkeys)
{
	struct sketch sk;

	*nkeys = 0;
	if (docset_record_sketch(r, &sk) == -1)
		return false;
	*nkeys = (uint8_t)sketch_keys(&sk, keys);
	return true;
}

/* Takes document id with fingerprint fp and sketch keys keys[0..nkeys)
 * (sketchless: none) out of the tables, the sketch index and its
 * namespace's count. */
static int
tables_remove(struct docset *ds, uint64_t fp, uint64_t id, uint32_t ns,
    const uint32_t *keys, size_t nkeys, bool sketchless)
{
	if (nearidx_delete(ds->idx, fp, id) != 1) {
		log_warnx("%s: document %" PRIu64 " was not in the tables",
		    __func__, id);
		return STORE_FAILED;
	}
	if (sketchidx_delete(ds->sketches, (uint32_t)id, keys, nkeys) !=
	    nkeys)
		log_warnx("%s: document %" PRIu64 " was not in the sketch "
		    "index under all its keys", __func__, id);
	if (sketchless)
		__atomic_sub_fetch(&ds->unsketched, 1, __ATOMIC_RELAXED);
	docns_count(ds->ns, ns, -1);
	return STORE_OK;
}

/*
 * Puts document id with fingerprint fp and sketch keys keys[0..nkeys)
 * (sketchless: none) of namespace ns into the tables and the sketch
 * index: tagged and counted first, so that a query that finds it knows
 * its namespace.
 */
static int
tables_insert(struct docset *ds, uint64_t fp, uint64_t id, uint32_t ns,
    const uint32_t *keys, size_t nkeys, bool sketchless)
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
	if (sketchidx_insert(ds->sketches, (uint32_t)id, keys, nkeys) == -1) {
		nearidx_delete(ds->idx, fp, id);
		docns_count(ds->ns, ns, -1);
		return STORE_FAILED;
	}
	if (sketchless)
		__atomic_add_fetch(&ds->unsketched, 1, __ATOMIC_RELAXED);
	return STORE_OK;
}

/* Tells the change hook of a change of the document of ns and url,
 * before the change: a change the hook refuses is not made. */
static int
note_change(struct docset *ds, struct store_txn *txn, const char *ns,
    size_t ns_len, const char *url, size_t url_len)
{
	if (ds->change_fn != NULL && ds->change_fn(ds->change_arg,
	    store_txn_id(txn), ns, ns_len, url, url_len) == -1)
		return STORE_FAILED;
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
    uint64_t fp, const struct sketch *sk, uint64_t join,
    const struct put_times *t, struct doc_record *out, bool *created,
    struct doc_undo *undo, struct docset_near_list *near)
{
	struct docset_query q = { .fp = fp, .sketch = sk, .k = ds->k };
	struct doc_record old, r;
	uint64_t id, group = 0;
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
		undo->rem_sketchless = !record_keys(&old, undo->rem_keys,
		    &undo->rem_nkeys);
		if ((rc = tables_remove(ds, old.fp, id, old.ns, undo->rem_keys,
		    undo->rem_nkeys, undo->rem_sketchless)) != STORE_OK)
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
	if (near != NULL && near->hamming)
		q.sketch = NULL;
	if (near != NULL) {
		/* Its neighbours (it is out of the tables now) and its group,
		 * the first one's: one search for both. */
		if ((rc = docset_neighbours(ds, txn, nsid, &q, near->max > 0 ?
		    near->max : 1, &near->list, &near->n, &near->total)) !=
		    STORE_OK)
			return rc;
		group = near->n > 0 ? near->list[0].group : 0;
		if (near->n > near->max)
			near->n = near->max;
	} else if (join == 0 && (rc = group_for(ds, txn, nsid, &q, &group)) !=
	    STORE_OK)
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
	r.sketch = NULL;
	r.sketch_len = 0;
	if ((rc = record_put(txn, &r, sk)) != STORE_OK)
		return rc;
	undo->ins_nkeys = sk != NULL ? (uint8_t)sketch_keys(sk,
	    undo->ins_keys) : 0;
	undo->ins_sketchless = sk == NULL;
	if ((rc = tables_insert(ds, fp, id, nsid, undo->ins_keys,
	    undo->ins_nkeys, undo->ins_sketchless)) != STORE_OK)
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
    uint64_t fp, const struct sketch *sk, uint64_t join, uint64_t now_ms,
    struct doc_record *out, bool *created, struct doc_undo *undo,
    struct docset_near_list *near)
{
	struct put_times t = { .now_ms = now_ms };

	return put_doc(ds, txn, ns, key, url, url_len, fp, sk, join, &t, out,
	    created, undo, near);
}

int
docset_put_times(struct docset *ds, struct store_txn *txn, const char *ns,
    const uint8_t key[DOCSET_KEY_LEN], const char *url, size_t url_len,
    uint64_t fp, const struct sketch *sk, uint64_t join, uint64_t created_ms,
    uint64_t updated_ms, struct doc_record *out, bool *created,
    struct doc_undo *undo)
{
	struct put_times t = { .given = true, .created_ms = created_ms,
	    .updated_ms = updated_ms };

	return put_doc(ds, txn, ns, key, url, url_len, fp, sk, join, &t, out,
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
	/* Its sketch's keys while r's memory is the record's: deleting the
	 * record may reuse it. */
	undo->rem_sketchless = !record_keys(r, undo->rem_keys,
	    &undo->rem_nkeys);
	id_key(r->id, idk);
	if ((rc = store_del(txn, STORE_DOCS, idk, sizeof(idk))) != STORE_OK ||
	    (rc = lookup_id(txn, key, &owner)) != STORE_OK)
		return rc;
	if (owner == r->id && (rc = store_del(txn, STORE_DOC_URLS, key,
	    DOCSET_KEY_LEN)) != STORE_OK)
		return rc;
	if ((rc = tables_remove(ds, r->fp, r->id, r->ns, undo->rem_keys,
	    undo->rem_nkeys, undo->rem_sketchless)) != STORE_OK)
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
		sketchidx_delete(ds->sketches, (uint32_t)undo->ins_id,
		    undo->ins_keys, undo->ins_nkeys);
		if (undo->ins_sketchless)
			__atomic_sub_fetch(&ds->unsketched, 1, __ATOMIC_RELAXED);
		docns_count(ds->ns, undo->ins_ns, -1);
	}
	if (undo->removed) {
		/* Its tag is still its own: a tag outlives its document. */
		docns_count(ds->ns, undo->rem_ns, 1);
		if (nearidx_insert(ds->idx, undo->rem_fp, undo->rem_id) == -1 ||
		    sketchidx_insert(ds->sketches, (uint32_t)undo->rem_id,
		    undo->rem_keys, undo->rem_nkeys) == -1)
			fatalx("%s: cannot restore document %" PRIu64,
			    __func__, undo->rem_id);
		if (undo->rem_sketchless)
			__atomic_add_fetch(&ds->unsketched, 1, __ATOMIC_RELAXED);
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

int
docset_set_change_hook(struct docset *ds, docset_change_fn fn,
    void (*release)(void *), void *arg)
{
	if (ds->change_fn != NULL)
		return -1;
	ds->change_fn = fn;
	ds->change_release = release;
	__atomic_store_n(&ds->change_arg, arg, __ATOMIC_RELEASE);
	return 0;
}

void *
docset_change_hook_arg(struct docset *ds)
{
	return __atomic_load_n(&ds->change_arg, __ATOMIC_ACQUIRE);
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

void
docset_key(const char *ns, size_t ns_len, const char *url, size_t url_len,
    uint8_t key[DOCSET_KEY_LEN])
{
	uint8_t mask[DOCNS_MASK_LEN];

	md5_digest(url, url_len, key);
	if (ns_len == 0)
		return;
	docns_mask(ns, ns_len, mask);
	for (size_t i = 0; i < DOCSET_KEY_LEN; i++)
		key[i] ^= mask[i];
}

/* The key of document r. */
static void
record_key(const struct doc_record *r, uint8_t key[DOCSET_KEY_LEN])
{
	docset_key(r->ns_name, r->ns == DOCNS_DEFAULT ? 0 : r->ns_len,
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
		record_key(&r, key);
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
	/* Records with sketches from now on: a release that reads none
	 * must not open the store. */
	if ((store_meta_get(txn, "docs.format", buf, sizeof(buf)) !=
	    STORE_OK || strtoul(buf, NULL, 10) < DOCSET_FORMAT_MAX) &&
	    (rc = store_meta_put(txn, "docs.format", DOCSET_FORMAT)) !=
	    STORE_OK) {
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
	/* The arrays are a restart image's (docimage.h), not to be freed. */
	bool borrowed;
	/* What the sketch index files (NULL: the keys are only checked). */
	struct sketchidx_stage *stage;
	uint64_t keys;		/* the records' sketch keys */
	uint64_t unsketched;
	uint64_t max_id;
	struct stray_ns *stray;
	size_t nstray;
	/* The scan stops at this id (0: at the last record). */
	uint64_t end;
	bool ended;
	const char *bad;
};

/* Notes namespace id (named name[0..len)) if the registry lacks it. */
static int
load_stray(struct load *ld, uint32_t id, const char *name, size_t len)
{
	struct stray_ns *grown;

	if (id == DOCNS_DEFAULT || docns_name(ld->ns, id,
	    (char[DOCNS_NAME_MAX + 1]){ 0 }))
		return 0;
	for (size_t i = 0; i < ld->nstray; i++)
		if (ld->stray[i].id == id)
			return 0;
	if ((grown = realloc(ld->stray, (ld->nstray + 1) *
	    sizeof(*grown))) == NULL)
		return -1;
	ld->stray = grown;
	grown[ld->nstray].id = id;
	memcpy(grown[ld->nstray].name, name, len);
	grown[ld->nstray].name[len] = '\0';
	ld->nstray++;
	return 0;
}

/* Room in ld's arrays for n documents; -1 if memory is short. */
static int
load_reserve(struct load *ld, size_t n)
{
	size_t cap = ld->cap ? ld->cap : 65536;
	uint64_t *f;
	uint32_t *s;

	if (n <= ld->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	if ((f = realloc(ld->fps, cap * sizeof(*f))) == NULL)
		return -1;
	ld->fps = f;
	if ((f = realloc(ld->ids, cap * sizeof(*f))) == NULL)
		return -1;
	ld->ids = f;
	if ((s = realloc(ld->nss, cap * sizeof(*s))) == NULL)
		return -1;
	ld->nss = s;
	ld->cap = cap;
	return 0;
}

/* Notes record r's sketch keys for the sketch index; -1 when memory is
 * short. */
static int
load_keys(struct load *ld, const struct doc_record *r)
{
	uint32_t keys[SKETCH_KEYS];
	uint8_t n;

	if (!record_keys(r, keys, &n)) {
		if (r->sketch != NULL)
			log_warnx("load_one: document %" PRIu64 " has a "
			    "damaged sketch: found by distance alone", r->id);
		ld->unsketched++;
		return 0;
	}
	ld->keys += n;
	if (ld->stage == NULL)
		return 0;
	return sketchidx_stage_add(ld->stage, (uint32_t)r->id, keys, n);
}

static int
load_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct load *ld = arg;
	struct doc_record r;

	if (klen == 8 && ld->end != 0 && key_id(key) >= ld->end) {
		ld->ended = true;
		return -1;
	}
	if (klen != 8 || record_decode(key_id(key), val, vlen, &r) == -1) {
		ld->bad = "a document record has the wrong size";
		return -1;
	}
	if (load_reserve(ld, ld->n + 1) == -1 || load_stray(ld, r.ns,
	    r.ns_name, r.ns_len) == -1 || load_keys(ld, &r) == -1) {
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

static void
load_free(struct load *ld)
{
	if (!ld->borrowed) {
		free(ld->fps);
		free(ld->ids);
		free(ld->nss);
	}
	free(ld->stray);
	sketchidx_stage_free(ld->stage);
}

/*
 * Appends what b gathered to a (b's ids all above a's), b's sketch keys
 * moved, not copied; b keeps its arrays for load_free.  -1 if memory is
 * short.
 */
static int
load_join(struct load *a, struct load *b)
{
	if (load_reserve(a, a->n + b->n) == -1)
		return -1;
	if (b->n > 0) {
		memcpy(a->fps + a->n, b->fps, b->n * sizeof(*a->fps));
		memcpy(a->ids + a->n, b->ids, b->n * sizeof(*a->ids));
		memcpy(a->nss + a->n, b->nss, b->n * sizeof(*a->nss));
		a->n += b->n;
	}
	for (size_t i = 0; i < b->nstray; i++)
		if (load_stray(a, b->stray[i].id, b->stray[i].name,
		    strlen(b->stray[i].name)) == -1)
			return -1;
	if (a->stage != NULL)
		sketchidx_stage_join(a->stage, b->stage);
	a->keys += b->keys;
	a->unsketched += b->unsketched;
	if (b->max_id > a->max_id)
		a->max_id = b->max_id;
	return 0;
}

/* One part of the scan: the records from id from up to ld->end (0: to
 * the last), in a read transaction of its own. */
struct load_part {
	struct store *st;
	struct load *ld;
	uint64_t from;
	int rc;
};

static void *
load_part_run(void *arg)
{
	struct load_part *p = arg;
	struct store_txn *rd = store_reader_new(p->st);
	uint8_t key[8];

	p->rc = STORE_FAILED;
	if (rd == NULL) {
		p->ld->bad = "out of memory";
		return NULL;
	}
	if ((p->rc = store_reader_begin(rd)) == STORE_OK) {
		id_key(p->from, key);
		p->rc = store_scan_from(rd, STORE_DOCS, key, sizeof(key),
		    load_one, p->ld);
		if (p->ld->ended)
			p->rc = STORE_OK;
		store_reader_end(rd);
	}
	store_reader_free(rd);
	return NULL;
}

/*
 * Reads every document record into ld: the ids below the middle of those
 * given out in this thread, the rest in a thread of its own (decoding
 * the records and gathering their sketch keys is the longest part of a
 * start of millions of documents, one CPU's work), then joined.  In
 * this thread alone if no thread can be started.  Returns a store status;
 * ld->bad may say more.
 */
static int
load_scan(struct store *st, struct load *ld)
{
	struct load upper = { .ns = ld->ns };
	struct load_part lo = { st, ld, 0, 0 }, hi = { st, &upper, 0, 0 };
	struct store_txn *rd;
	char buf[32];
	pthread_t t;
	bool threaded;

	if ((rd = store_reader_new(st)) == NULL)
		return STORE_FAILED;
	if (store_reader_begin(rd) == STORE_OK) {
		if (store_meta_get(rd, "docs.next_id", buf, sizeof(buf)) ==
		    STORE_OK)
			hi.from = strtoull(buf, NULL, 10) / 2;
		store_reader_end(rd);
	}
	store_reader_free(rd);
	if (hi.from < 2)
		hi.from = 0;	/* one part: the whole table */
	ld->end = hi.from;
	if (hi.from != 0 && ld->stage != NULL &&
	    (upper.stage = sketchidx_stage_new()) == NULL) {
		ld->bad = "out of memory";
		return STORE_FAILED;
	}
	threaded = hi.from != 0 && pthread_create(&t, NULL, load_part_run,
	    &hi) == 0;
	load_part_run(&lo);
	if (threaded)
		pthread_join(t, NULL);
	else if (hi.from != 0 && lo.rc == STORE_OK)
		load_part_run(&hi);
	if (lo.rc == STORE_OK && hi.from != 0 && hi.rc != STORE_OK) {
		lo.rc = hi.rc;
		ld->bad = upper.bad;
	} else if (lo.rc == STORE_OK && hi.from != 0 &&
	    load_join(ld, &upper) == -1) {
		lo.rc = STORE_FAILED;
		ld->bad = "out of memory";
	}
	load_free(&upper);
	return lo.rc;
}

struct sketch_load {
	struct sketchidx *x;
	struct load *ld;
	const struct docimage *im;	/* the index's image, or NULL */
	unsigned threads;
	int rc;
	const char *why;
};

static void *
sketch_load_run(void *arg)
{
	struct sketch_load *sl = arg;
	const void *p;
	size_t len;

	if (sl->im == NULL) {
		sl->rc = sketchidx_bulk_load(sl->x, sl->ld->stage,
		    sl->threads);
		sl->why = "out of memory";
		return NULL;
	}
	docimage_sketches(sl->im, &p, &len);
	sl->rc = sketchidx_image_load(sl->x, p, len, sl->threads, &sl->why);
	return NULL;
}

/*
 * Fills the simhash tables and the sketch index from what the scan
 * gathered (or from im, a restart image), the sketch index in a thread of
 * its own (they share nothing), which shares its shards out among as many
 * threads as there are CPUs: at start-up the sketch index takes three
 * times the tables' time (10 million documents, 2 CPUs: 9.2 s alone
 * against 3.4 s).  In this thread alone if no thread can be started.
 * *damaged tells a failure the image's.
 */
static int
load_tables(struct docset *ds, struct load *ld, const struct docimage *im,
    bool *damaged, char **cause)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct sketch_load sl = { ds->sketches, ld, im, cpus > 1 ?
	    (unsigned)cpus : 1, -1, NULL };
	pthread_t t;
	bool threaded;
	int rc = 0;

	threaded = pthread_create(&t, NULL, sketch_load_run, &sl) == 0;
	if (ld->n > 0 && nearidx_bulk_load(ds->idx, ld->fps, ld->ids, ld->n,
	    cause) == -1)
		rc = -1;
	if (threaded)
		pthread_join(t, NULL);
	else
		sketch_load_run(&sl);
	if (sl.rc == -1) {
		*damaged = strcmp(sl.why, "damaged") == 0;
		if (rc == 0 && asprintf(cause, "the sketch index: %s",
		    sl.why) == -1)
			*cause = NULL;
		rc = -1;
	}
	return rc;
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

/* What the scan would gather, from im: its arrays, borrowed. */
static void
load_image(struct load *ld, const struct docimage *im)
{
	const struct docimage_docs *d = docimage_docs(im);

	ld->fps = (uint64_t *)d->fps;
	ld->ids = (uint64_t *)d->ids;
	ld->nss = (uint32_t *)d->nss;
	ld->n = ld->cap = d->n;
	ld->borrowed = true;
	ld->max_id = d->max_id;
	ld->unsketched = d->unsketched;
}

/*
 * docset_open from the records, or from im (a restart image) if not
 * NULL; *damaged tells a failure the image's.
 */
static struct docset *
docset_load(struct store *st, const struct docset_options *opts,
    const struct docimage *im, bool *damaged, char **cause)
{
	struct nearidx_config nc;
	struct docset *ds;
	struct load ld = { 0 };
	int rc;

	*cause = NULL;
	*damaged = false;
	if ((ds = calloc(1, sizeof(*ds))) == NULL)
		return NULL;
	ds->st = st;
	ds->k = opts->k;
	ds->resemblance = opts->resemblance;
	ds->containment = opts->containment;
	ds->next_id = 1;
	nearidx_config_defaults(&nc);
	nc.k = opts->k;
	nc.blocks = opts->blocks;
	if ((ds->ns = open_namespaces(st, cause)) == NULL)
		goto err;
	ld.ns = ds->ns;
	if (im != NULL)
		load_image(&ld, im);
	else if ((ld.stage = sketchidx_stage_new()) == NULL)
		goto err;
	else if ((rc = load_scan(st, &ld)) != STORE_OK) {
		if (asprintf(cause, "loading documents: %s", ld.bad ? ld.bad :
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		goto err;
	}
	nc.expected = ld.n;
	if ((ds->idx = nearidx_new(&nc, cause)) == NULL)
		goto err;
	if ((ds->sketches = sketchidx_new(ld.n)) == NULL)
		goto err;
	if (docset_metadata(ds, opts, ld.n, cause) == -1 ||
	    adopt_strays(ds, &ld, cause) == -1 ||
	    load_namespaces(ds, &ld, cause) == -1)
		goto err;
	if (ld.max_id >= ds->next_id)
		ds->next_id = ld.max_id + 1;
	if (load_tables(ds, &ld, im, damaged, cause) == -1)
		goto err;
	ds->unsketched = ld.unsketched;
	ds->from_image = im != NULL;
	load_free(&ld);
	return ds;
err:
	load_free(&ld);
	docset_free(ds);
	return NULL;
}

struct docset *
docset_open(struct store *st, const struct docset_options *opts, char **cause)
{
	uint64_t t0 = clock_mono_ms();
	struct docimage *im = docimage_open(st);
	struct docset *ds;
	bool damaged;

	ds = docset_load(st, opts, im, &damaged, cause);
	if (ds == NULL && damaged) {
		log_warnx("%s: %s: %s: the documents are read from the store",
		    __func__, DOCIMAGE_FILE, *cause ? *cause : "damaged");
		free(*cause);
		docimage_close(im);
		im = NULL;
		ds = docset_load(st, opts, NULL, &damaged, cause);
	}
	if (ds != NULL) {
		log_info("%s: %" PRIu64 " documents in %u tables (k = %u, %u "
		    "blocks, %s), %" PRIu64 " sketch keys, from %s in %.3f s",
		    __func__, nearidx_count(ds->idx), nearidx_tables(ds->idx),
		    opts->k, opts->blocks, nearidx_simd(ds->idx),
		    sketchidx_entries(ds->sketches), im != NULL ?
		    "the restart image" : "the records",
		    (double)(clock_mono_ms() - t0) / 1000);
		if (ds->unsketched > 0)
			log_warnx("%s: %" PRIu64 " documents were stored "
			    "without a sketch (by nddd 0.4): they are "
			    "neighbours by Hamming distance alone, unverified, "
			    "until their pages are submitted again "
			    "(docs/neardup.md, \"Upgrading\")", __func__,
			    ds->unsketched);
	}
	docimage_close(im);
	return ds;
}

int
docset_save_image(struct docset *ds, char **cause)
{
	struct load ld = { .ns = ds->ns };
	uint64_t t0 = clock_mono_ms();
	struct docimage_docs docs;
	int rc;

	*cause = NULL;
	/* Every record is read again: in the file's order, if it has left
	 * memory since the start (10 million documents read at random, as
	 * the map is, took 60 s). */
	store_warm(ds->st);
	if ((rc = load_scan(ds->st, &ld)) != STORE_OK) {
		if (asprintf(cause, "reading the documents: %s", ld.bad ?
		    ld.bad : store_strstatus(rc)) == -1)
			*cause = NULL;
		load_free(&ld);
		return -1;
	}
	/* Nothing to save time on; strays are adopted at the next start. */
	if (ld.n == 0 || ld.nstray > 0) {
		load_free(&ld);
		return 0;
	}
	/* The sketch index is written from memory: only if it agrees with
	 * the records, which a start from them would heal. */
	if (sketchidx_entries(ds->sketches) != ld.keys) {
		if (asprintf(cause, "the sketch index holds %" PRIu64 " keys, "
		    "the records %" PRIu64, sketchidx_entries(ds->sketches),
		    ld.keys) == -1)
			*cause = NULL;
		load_free(&ld);
		return -1;
	}
	docs = (struct docimage_docs){ ld.fps, ld.ids, ld.nss, ld.n,
	    ld.max_id, ld.unsketched };
	rc = docimage_save(ds->st, &docs, ds->sketches, cause);
	if (rc == 0)
		log_info("%s: %zu documents and %" PRIu64 " sketch keys kept "
		    "in %s for the next start, in %.1f s", __func__, ld.n,
		    sketchidx_entries(ds->sketches), DOCIMAGE_FILE,
		    (double)(clock_mono_ms() - t0) / 1000);
	load_free(&ld);
	return rc;
}

void
docset_free(struct docset *ds)
{
	if (ds == NULL)
		return;
	nearidx_free(ds->idx);
	sketchidx_free(ds->sketches);
	docns_free(ds->ns);
	if (ds->change_release != NULL)
		ds->change_release(ds->change_arg);
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
	out->sketch_entries = sketchidx_entries(ds->sketches);
	out->sketch_bytes = sketchidx_memory_bytes(ds->sketches);
	out->unsketched = __atomic_load_n(&ds->unsketched, __ATOMIC_RELAXED);
	out->from_image = ds->from_image;
	out->candidates = __atomic_load_n(&ds->candidates, __ATOMIC_RELAXED);
	out->verified = __atomic_load_n(&ds->verified, __ATOMIC_RELAXED);
	out->keys_skipped = __atomic_load_n(&ds->keys_skipped,
	    __ATOMIC_RELAXED);
	out->resemblance = ds->resemblance;
	out->containment = ds->containment;
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
	uint64_t keys;		/* sketch keys the records name */
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

/* Whether the sketch index files record r under each of its keys. */
static bool
verify_keys(struct verify_scan *vs, const struct doc_record *r)
{
	uint32_t keys[SKETCH_KEYS];
	uint8_t n;

	if (!record_keys(r, keys, &n))
		return true;
	vs->keys += n;
	for (uint8_t i = 0; i < n; i++)
		if (!sketchidx_has(vs->ds->sketches, (uint32_t)r->id, keys[i]))
			return false;
	return true;
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
	if (!verify_keys(vs, &r)) {
		vs->out->table_mismatches++;
		verify_note(vs->out, "missing from the sketch index", r.id);
	}
	/* Its namespace must know it, and queries must see it there. */
	if (!verify_count(vs, &r) ||
	    docns_tag(vs->ds->ns, r.id) != r.ns) {
		vs->out->table_mismatches++;
		verify_note(vs->out, "its namespace is not the one it has in "
		    "memory", r.id);
	}
	/* Its URL, in its namespace, must lead back to it. */
	record_key(&r, md5);
	if (lookup_id(vs->txn, md5, &id) != STORE_OK || id != r.id) {
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
	if (sketchidx_entries(ds->sketches) != vs.keys) {
		out->table_mismatches++;
		if (out->detail[0] == '\0')
			snprintf(out->detail, sizeof(out->detail), "the sketch "
			    "index holds %" PRIu64 " keys, the records name %"
			    PRIu64, sketchidx_entries(ds->sketches), vs.keys);
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
