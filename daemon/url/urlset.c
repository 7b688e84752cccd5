/*
 * urlset: the set of seen URLs behind a counting Bloom filter.  See urlset.h.
 */
#include "urlset.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>

#include "log.h"

/* Counters per URL of capacity: 10 bytes of filter per URL (DESIGN 3). */
#define URLSET_COUNTERS_PER_URL 20
/* Version of the record layout and metadata below. */
#define URLSET_FORMAT "1"

struct urlset {
	struct store *st;
	struct cbf *filter;
	uint64_t m;
	struct urlcanon_options canon;
	EVP_MD *md5;		/* fetched once, shared by the keyers */
	/* Statistics, updated with relaxed atomics. */
	uint64_t checks, checks_filter_only, false_positives;
	uint64_t submits_new, submits_duplicate, deletes;
};

struct url_keyer {
	struct urlset *us;
	struct urlcanon *canon;
	EVP_MD_CTX *md_ctx;
};

static void
put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint64_t
get_le64(const uint8_t *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/*
 * Layout, little-endian: count u32, reserved u32 (0), first_seen_ms u64,
 * last_seen_ms u64, idx u32[8].
 */
void
urlset_record_encode(const struct url_record *r, uint8_t out[URLSET_RECORD_LEN])
{
	put_le32(out, r->count);
	put_le32(out + 4, 0);
	put_le64(out + 8, r->first_seen_ms);
	put_le64(out + 16, r->last_seen_ms);
	for (int i = 0; i < CBF_K; i++)
		put_le32(out + 24 + 4 * i, r->idx[i]);
}

int
urlset_record_decode(const void *data, size_t len, struct url_record *r)
{
	const uint8_t *p = data;

	if (len != URLSET_RECORD_LEN)
		return -1;
	r->count = get_le32(p);
	r->first_seen_ms = get_le64(p + 8);
	r->last_seen_ms = get_le64(p + 16);
	for (int i = 0; i < CBF_K; i++)
		r->idx[i] = get_le32(p + 24 + 4 * i);
	return 0;
}

/*
 * What a data directory fixes at creation: the filter's shape and the
 * canonicalization rules.  Each is checked against the configuration.
 */
struct fixed {
	const char *key;
	char value[64];
	const char *config_name;	/* what to tell the operator */
};

static int
urlset_metadata(struct urlset *us, const struct urlset_options *opts,
    char **cause)
{
	struct fixed fixed[] = {
		{ "urls.format", URLSET_FORMAT, "the URL record format" },
		{ "urls.cbf_m", "", "[urls] capacity (x20 counters)" },
		{ "urls.cbf_k", "", "the filter's k" },
		{ "urls.cbf_index", CBF_INDEX_SCHEME, "the filter's indexing" },
		{ "urls.strip_session_ids", "", "[urls] strip_session_ids" },
		{ "urls.strip_tracking", "", "[urls] strip_tracking" },
		{ "urls.sort_query", "", "[urls] sort_query" },
	};
	struct store_txn *txn;
	char buf[64];
	int rc, created = 0;

	snprintf(fixed[1].value, sizeof(fixed[1].value), "%" PRIu64, us->m);
	snprintf(fixed[2].value, sizeof(fixed[2].value), "%d", CBF_K);
	snprintf(fixed[4].value, sizeof(fixed[4].value), "%s",
	    opts->canon.strip_session_ids ? "yes" : "no");
	snprintf(fixed[5].value, sizeof(fixed[5].value), "%s",
	    opts->canon.strip_tracking ? "yes" : "no");
	snprintf(fixed[6].value, sizeof(fixed[6].value), "%s",
	    opts->canon.sort_query ? "yes" : "no");

	if ((rc = store_write_begin(us->st, &txn)) != STORE_OK)
		goto store_err;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		rc = store_meta_get(txn, fixed[i].key, buf, sizeof(buf));
		if (rc == STORE_NOTFOUND) {
			if ((rc = store_meta_put(txn, fixed[i].key,
			    fixed[i].value)) != STORE_OK) {
				store_abort(txn);
				goto store_err;
			}
			created = 1;
			continue;
		}
		if (rc != STORE_OK) {
			store_abort(txn);
			goto store_err;
		}
		if (strcmp(buf, fixed[i].value) != 0) {
			store_abort(txn);
			if (asprintf(cause, "the data directory was created "
			    "with %s = %s, but the configuration gives %s; "
			    "this is fixed per data directory: restore the "
			    "setting or use a new data directory",
			    fixed[i].key, buf, fixed[i].value) == -1)
				*cause = NULL;
			return -1;
		}
	}
	if ((rc = store_commit(txn)) != STORE_OK)
		goto store_err;
	if (created)
		log_info("%s: new URL store: %" PRIu64 " filter counters",
		    __func__, us->m);
	return 0;
store_err:
	if (asprintf(cause, "URL store metadata: %s", store_strstatus(rc)) ==
	    -1)
		*cause = NULL;
	return -1;
}

struct rebuild {
	struct urlset *us;
	uint64_t records;
	const char *bad;
};

static int
rebuild_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct rebuild *rb = arg;
	struct url_record r;

	(void)key;
	if (klen != CBF_FP_LEN || urlset_record_decode(val, vlen, &r) == -1) {
		rb->bad = "a URL record has the wrong size";
		return -1;
	}
	for (int i = 0; i < CBF_K; i++) {
		if (r.idx[i] >= rb->us->m) {
			rb->bad = "a URL record names a counter beyond m";
			return -1;
		}
	}
	cbf_add(rb->us->filter, r.idx);
	rb->records++;
	return 0;
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct urlset *
urlset_open(struct store *st, const struct urlset_options *opts, char **cause)
{
	struct urlset *us;
	struct rebuild rb = { 0 };
	double t0;
	int rc;

	*cause = NULL;
	if ((us = calloc(1, sizeof(*us))) == NULL)
		return NULL;
	us->st = st;
	us->canon = opts->canon;
	/* Whole blocks of counters: round up. */
	us->m = (opts->capacity * URLSET_COUNTERS_PER_URL + CBF_BLOCK - 1) /
	    CBF_BLOCK * CBF_BLOCK;
	if (urlset_metadata(us, opts, cause) == -1)
		goto err;
	if ((us->filter = cbf_new(us->m)) == NULL ||
	    (us->md5 = EVP_MD_fetch(NULL, "MD5", NULL)) == NULL) {
		if (asprintf(cause, "cannot allocate the URL filter (%" PRIu64
		    " bytes) or MD5", us->m / 2) == -1)
			*cause = NULL;
		goto err;
	}

	t0 = now_seconds();
	rb.us = us;
	rc = store_scan(st, STORE_URLS, rebuild_one, &rb);
	if (rc != STORE_OK) {
		if (asprintf(cause, "rebuilding the URL filter: %s",
		    rb.bad ? rb.bad : store_strstatus(rc)) == -1)
			*cause = NULL;
		goto err;
	}
	log_info("%s: filter rebuilt from %" PRIu64 " URLs in %.3f s "
	    "(%" PRIu64 " of %" PRIu64 " counters non-zero)", __func__,
	    rb.records, now_seconds() - t0, cbf_stat_nonzero(us->filter),
	    us->m);
	if (rb.records > opts->capacity)
		log_warnx("%s: %" PRIu64 " URLs stored, above the capacity of "
		    "%" PRIu64 ": checks stay exact but read the store more",
		    __func__, rb.records, opts->capacity);
	return us;
err:
	urlset_free(us);
	return NULL;
}

void
urlset_free(struct urlset *us)
{
	if (us == NULL)
		return;
	cbf_free(us->filter);
	EVP_MD_free(us->md5);
	free(us);
}

const struct cbf *
urlset_filter(const struct urlset *us)
{
	return us->filter;
}

struct url_keyer *
urlset_keyer_new(struct urlset *us)
{
	struct url_keyer *k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	k->us = us;
	if ((k->canon = urlcanon_new(&us->canon)) == NULL ||
	    (k->md_ctx = EVP_MD_CTX_new()) == NULL ||
	    !EVP_DigestInit_ex2(k->md_ctx, us->md5, NULL)) {
		urlset_keyer_free(k);
		return NULL;
	}
	return k;
}

void
urlset_keyer_free(struct url_keyer *k)
{
	if (k == NULL)
		return;
	urlcanon_free(k->canon);
	EVP_MD_CTX_free(k->md_ctx);
	free(k);
}

int
urlset_key_canonical(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **canon, size_t *canon_len,
    const char **cause)
{
	const char *c;
	size_t clen;
	unsigned int mdlen;

	if ((c = urlcanon_canonicalize(k->canon, url, len, &clen,
	    cause)) == NULL)
		return -1;
	/* Re-initializing with no digest named reuses the fetched MD5
	 * without reallocating its state. */
	if (!EVP_DigestInit_ex2(k->md_ctx, NULL, NULL) ||
	    !EVP_DigestUpdate(k->md_ctx, c, clen) ||
	    !EVP_DigestFinal_ex(k->md_ctx, key->fp, &mdlen) ||
	    mdlen != CBF_FP_LEN)
		fatalx("%s: MD5 failed", __func__);
	cbf_indices(k->us->filter, key->fp, key->idx);
	*canon = c;
	*canon_len = clen;
	return 0;
}

int
urlset_key(struct url_keyer *k, const char *url, size_t len,
    struct url_key *key, const char **cause)
{
	const char *canon;
	size_t canon_len;

	return urlset_key_canonical(k, url, len, key, &canon, &canon_len,
	    cause);
}

void
urlset_prefetch(const struct urlset *us, const struct url_key *key)
{
	cbf_prefetch(us->filter, key->idx);
}

int
urlset_check(struct urlset *us, struct store_txn *rd,
    const struct url_key *key, uint64_t *count, struct urlset_tally *tally)
{
	struct store_val v;
	struct url_record r;
	int rc;

	tally->checks++;
	*count = 0;
	if (!cbf_maybe(us->filter, key->idx)) {
		tally->filter_only++;
		return STORE_OK;
	}
	rc = store_get(rd, STORE_URLS, key->fp, CBF_FP_LEN, &v);
	if (rc == STORE_NOTFOUND) {
		tally->false_positives++;
		return STORE_OK;
	}
	if (rc != STORE_OK)
		return rc;
	if (urlset_record_decode(v.data, v.len, &r) == -1) {
		log_warnx("%s: a URL record has the wrong size", __func__);
		return STORE_FAILED;
	}
	*count = r.count;
	return STORE_OK;
}

void
urlset_add_tally(struct urlset *us, const struct urlset_tally *tally)
{
	__atomic_fetch_add(&us->checks, tally->checks, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->checks_filter_only, tally->filter_only,
	    __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->false_positives, tally->false_positives,
	    __ATOMIC_RELAXED);
}

int
urlset_submit(struct urlset *us, struct store_txn *txn,
    const struct url_key *key, uint64_t now_ms, uint64_t *count, bool *added)
{
	struct url_record r = {
		.count = 1,
		.first_seen_ms = now_ms,
		.last_seen_ms = now_ms,
	};
	uint8_t buf[URLSET_RECORD_LEN];
	struct store_val old;
	int rc;

	*added = false;
	memcpy(r.idx, key->idx, sizeof(r.idx));
	urlset_record_encode(&r, buf);
	rc = store_put(txn, STORE_URLS, key->fp, CBF_FP_LEN, buf, sizeof(buf),
	    STORE_NOOVERWRITE, &old);
	if (rc == STORE_OK) {
		/* Increment before commit: see the header. */
		cbf_add(us->filter, key->idx);
		*added = true;
		*count = 1;
		return STORE_OK;
	}
	if (rc != STORE_EXISTS)
		return rc;
	if (urlset_record_decode(old.data, old.len, &r) == -1) {
		log_warnx("%s: a URL record has the wrong size", __func__);
		return STORE_FAILED;
	}
	if (r.count < UINT32_MAX)
		r.count++;
	r.last_seen_ms = now_ms;
	urlset_record_encode(&r, buf);
	rc = store_put(txn, STORE_URLS, key->fp, CBF_FP_LEN, buf, sizeof(buf),
	    0, NULL);
	if (rc != STORE_OK)
		return rc;
	*count = r.count;
	return STORE_OK;
}

int
urlset_delete(struct urlset *us, struct store_txn *txn,
    const struct url_key *key, uint64_t *count, uint32_t removed_idx[CBF_K])
{
	struct store_val v;
	struct url_record r;
	int rc;

	(void)us;
	*count = 0;
	rc = store_get(txn, STORE_URLS, key->fp, CBF_FP_LEN, &v);
	if (rc == STORE_NOTFOUND)
		return STORE_OK;
	if (rc != STORE_OK)
		return rc;
	if (urlset_record_decode(v.data, v.len, &r) == -1) {
		log_warnx("%s: a URL record has the wrong size", __func__);
		return STORE_FAILED;
	}
	if ((rc = store_del(txn, STORE_URLS, key->fp, CBF_FP_LEN)) != STORE_OK)
		return rc;
	/* The stored indices, not recomputed ones: they are what the
	 * submit incremented. */
	memcpy(removed_idx, r.idx, sizeof(r.idx));
	*count = r.count;
	return STORE_OK;
}

void
urlset_undo_add(struct urlset *us, const struct url_key *key)
{
	cbf_remove(us->filter, key->idx);
}

void
urlset_count_committed(struct urlset *us, uint64_t submits_new,
    uint64_t submits_duplicate)
{
	__atomic_fetch_add(&us->submits_new, submits_new, __ATOMIC_RELAXED);
	__atomic_fetch_add(&us->submits_duplicate, submits_duplicate,
	    __ATOMIC_RELAXED);
}

void
urlset_commit_remove(struct urlset *us, const uint32_t idx[CBF_K])
{
	cbf_remove(us->filter, idx);
	__atomic_fetch_add(&us->deletes, 1, __ATOMIC_RELAXED);
}

void
urlset_stats(struct urlset *us, struct store_txn *rd, struct urlset_stats *out)
{
	out->urls = store_count(rd, STORE_URLS);
	out->checks = __atomic_load_n(&us->checks, __ATOMIC_RELAXED);
	out->checks_filter_only = __atomic_load_n(&us->checks_filter_only,
	    __ATOMIC_RELAXED);
	out->filter_false_positives = __atomic_load_n(&us->false_positives,
	    __ATOMIC_RELAXED);
	out->submits_new = __atomic_load_n(&us->submits_new, __ATOMIC_RELAXED);
	out->submits_duplicate = __atomic_load_n(&us->submits_duplicate,
	    __ATOMIC_RELAXED);
	out->deletes = __atomic_load_n(&us->deletes, __ATOMIC_RELAXED);
}

struct verify_scan {
	struct urlset *us;
	struct cbf *fresh;
	struct urlset_verify *out;
	const char *bad;
};

static int
verify_one(const void *key, size_t klen, const void *val, size_t vlen,
    void *arg)
{
	struct verify_scan *vs = arg;
	struct url_record r;
	uint32_t idx[CBF_K];

	if (klen != CBF_FP_LEN || urlset_record_decode(val, vlen, &r) == -1) {
		vs->bad = "a URL record has the wrong size";
		return -1;
	}
	cbf_indices(vs->us->filter, key, idx);
	if (memcmp(idx, r.idx, sizeof(idx)) != 0) {
		if (vs->out->index_mismatches++ == 0)
			snprintf(vs->out->detail, sizeof(vs->out->detail),
			    "record %" PRIu64 " stores indices other than its "
			    "fingerprint's", vs->out->records);
	}
	for (int i = 0; i < CBF_K; i++)
		if (r.idx[i] >= vs->us->m) {
			vs->bad = "a URL record names a counter beyond m";
			return -1;
		}
	cbf_add(vs->fresh, r.idx);
	vs->out->records++;
	return 0;
}

int
urlset_verify(struct urlset *us, struct urlset_verify *out)
{
	struct verify_scan vs = { .us = us, .out = out };
	int rc;

	memset(out, 0, sizeof(*out));
	if ((vs.fresh = cbf_new(us->m)) == NULL) {
		snprintf(out->detail, sizeof(out->detail), "out of memory");
		return STORE_FAILED;
	}
	rc = store_scan(us->st, STORE_URLS, verify_one, &vs);
	if (rc != STORE_OK) {
		snprintf(out->detail, sizeof(out->detail), "%s",
		    vs.bad ? vs.bad : store_strstatus(rc));
		cbf_free(vs.fresh);
		return vs.bad ? STORE_FAILED : rc;
	}
	for (uint64_t i = 0; i < us->m; i++) {
		if (cbf_counter(us->filter, i) == cbf_counter(vs.fresh, i) &&
		    cbf_true_count(us->filter, i) ==
		    cbf_true_count(vs.fresh, i))
			continue;
		if (out->counter_mismatches++ == 0 &&
		    out->index_mismatches == 0)
			snprintf(out->detail, sizeof(out->detail),
			    "counter %" PRIu64 " is %u (true count %" PRIu64
			    ") in memory, %u (%" PRIu64 ") from the store", i,
			    cbf_counter(us->filter, i),
			    cbf_true_count(us->filter, i),
			    cbf_counter(vs.fresh, i),
			    cbf_true_count(vs.fresh, i));
	}
	cbf_free(vs.fresh);
	return STORE_OK;
}
