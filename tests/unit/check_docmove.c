/*
 * Tests for docmove on real stores: a shard's export (pages read while
 * documents keep changing, then the changed set drained) imported into an
 * empty set leaves there exactly the moving documents, with their
 * fingerprints, global groups, times and URLs, and tables that answer as
 * brute force over the records does; importing the same documents as
 * deleted into the exporter takes exactly them away.  Also: no session,
 * a replaced session, a read older than the session, changes handed out
 * only once committed where the read sees them, imports taken back on
 * abort.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docmove.h"
#include "docset.h"
#include "jumphash.h"
#include "store.h"
#include "testutil.h"

#define SHARDS 4
#define PLACE 1
#define URLS 300		/* per namespace */
#define GONE_URLS 40
#define GLOBAL(place, g) ((uint64_t)((place) + 1) << 48 | (g))

static const char *const live_ns[] = { "", "news" };

struct fixture {
	char *dir;
	struct store *st;
	struct docset *ds;
};

static void
fx_open(struct fixture *fx)
{
	struct store_options so = { .map_size = 256 << 20,
	    .sync = STORE_SYNC_NONE };
	struct docset_options o = { .k = 3, .blocks = 4,
	    .term_hash = SIMHASH_TERM_HASH_SDBM_FMIX64,
	    .stopwords_digest = "test" };
	char *cause = NULL;

	so.dir = fx->dir = tu_tmpdir();
	fx->st = store_open(&so, &cause);
	ck_assert_msg(fx->st != NULL, "%s", cause ? cause : "store");
	fx->ds = docset_open(fx->st, &o, &cause);
	ck_assert_msg(fx->ds != NULL, "%s", cause ? cause : "docset");
}

static void
fx_close(struct fixture *fx)
{
	docset_free(fx->ds);
	store_close(fx->st);
	tu_rmtree(fx->dir);
	free(fx->dir);
}

static void
url_of(unsigned i, char *buf, size_t size)
{
	snprintf(buf, size, "http://h%u.example.com/page/%u", i % 37, i);
}

static uint32_t
owner(const char *url, size_t len, uint32_t shards)
{
	uint8_t digest[DOCSET_KEY_LEN];

	docset_key("", 0, url, len, digest);
	return jump_hash_owner(digest, shards);
}

/* What the writer would do in a transaction: random puts and deletes. */
struct model {
	uint64_t rng;
	uint64_t fps[2 * URLS];	/* fingerprints put, to make near ones */
	size_t nfps;
	uint64_t now_ms;
};

static void
random_put(struct fixture *fx, struct store_txn *txn, struct model *md,
    const char *ns, const char *url)
{
	struct doc_record r;
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t fp, join = 0;
	bool created;

	if (md->nfps > 0 && tu_rand_below(&md->rng, 3) == 0) {
		/* Near an earlier one: groups form. */
		fp = md->fps[tu_rand_below(&md->rng, md->nfps)];
		for (uint64_t b = tu_rand_below(&md->rng, 3); b > 0; b--)
			fp ^= UINT64_C(1) << tu_rand_below(&md->rng, 64);
	} else
		fp = tu_rand(&md->rng);
	if (md->nfps < sizeof(md->fps) / sizeof(md->fps[0]))
		md->fps[md->nfps++] = fp;
	/* A group a client decided among shards: global already. */
	if (tu_rand_below(&md->rng, 6) == 0)
		join = GLOBAL(6, 1 + tu_rand_below(&md->rng, 1000));
	docset_key(ns, strlen(ns), url, strlen(url), key);
	ck_assert_int_eq(docset_put(fx->ds, txn, ns, key, url, strlen(url), fp,
	    NULL, join, md->now_ms, &r, &created, &undo, NULL), STORE_OK);
}

static void
random_delete(struct fixture *fx, struct store_txn *txn, const char *ns,
    const char *url)
{
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t id;

	docset_key(ns, strlen(ns), url, strlen(url), key);
	ck_assert_int_eq(docset_delete(fx->ds, txn, ns, key, &id, &undo),
	    STORE_OK);
}

/* One writer transaction of ops random puts and deletes. */
static void
random_txn(struct fixture *fx, struct model *md, unsigned ops)
{
	struct store_txn *txn;
	char url[96];

	md->now_ms += 10;
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	for (unsigned i = 0; i < ops; i++) {
		const char *ns = live_ns[tu_rand_below(&md->rng, 2)];

		url_of((unsigned)tu_rand_below(&md->rng, URLS), url,
		    sizeof(url));
		if (tu_rand_below(&md->rng, 8) == 0)
			random_delete(fx, txn, ns, url);
		else
			random_put(fx, txn, md, ns, url);
	}
	ck_assert_int_eq(store_commit(txn), STORE_OK);
}

/* Imports docs[0 .. n) into fx through the import job, committed. */
static void
import_all(struct fixture *fx, const struct doc_moved *docs, size_t n)
{
	struct docmove_import_job j;
	struct store_txn *txn;

	ck_assert_int_eq(docmove_import_job_init(&j, fx->ds, docs, n, NULL,
	    NULL), STORE_OK);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(j.wj.ops->apply(&j.wj, txn), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	j.wj.ops->committed(&j.wj);
	docmove_import_job_clear(&j);
}

static void
begin_session(struct fixture *fx, uint32_t shards, uint32_t place)
{
	struct docmove_begin_job j;
	struct store_txn *txn;

	docmove_begin_job_init(&j, fx->ds, shards, place, NULL, NULL);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(j.wj.ops->apply(&j.wj, txn), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	j.wj.ops->committed(&j.wj);
	ck_assert(docmove_open(fx->ds));
}

/* One page through a reader of its own. */
static int
page(struct fixture *fx, uint64_t *cursor, size_t max,
    struct doc_moved **out, size_t *n, bool *done)
{
	struct store_txn *rd = store_reader_new(fx->st);
	int rc;

	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	rc = docmove_page(fx->ds, rd, cursor, max, out, n, done);
	store_reader_end(rd);
	store_reader_free(rd);
	return rc;
}

static int
changed(struct fixture *fx, size_t max, struct doc_moved **out, size_t *n,
    bool *more)
{
	struct store_txn *rd = store_reader_new(fx->st);
	int rc;

	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	rc = docmove_changed(fx->ds, rd, max, out, n, more);
	store_reader_end(rd);
	store_reader_free(rd);
	return rc;
}

/* A record copied out of its transaction. */
struct rec {
	uint64_t id, fp, group, created_ms, updated_ms;
	uint32_t ns;
	char ns_name[DOCNS_NAME_MAX + 1];
	char url[128];
};

struct rec_list {
	struct rec *r;
	size_t n, cap;
};

static int
collect_one(const struct doc_record *r, void *arg)
{
	struct rec_list *l = arg;
	struct rec *c;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 256;
		l->r = realloc(l->r, l->cap * sizeof(*l->r));
		ck_assert_ptr_nonnull(l->r);
	}
	c = &l->r[l->n++];
	memset(c, 0, sizeof(*c));
	c->id = r->id;
	c->fp = r->fp;
	c->group = r->group;
	c->created_ms = r->created_ms;
	c->updated_ms = r->updated_ms;
	c->ns = r->ns;
	ck_assert_uint_lt(r->url_len, sizeof(c->url));
	memcpy(c->url, r->url, r->url_len);
	memcpy(c->ns_name, r->ns_name, r->ns_len);
	return 0;
}

/* Every record of fx, in id order. */
static struct rec_list
records(struct fixture *fx)
{
	struct rec_list l = { 0 };
	struct store_txn *rd = store_reader_new(fx->st);

	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(docset_records(fx->ds, rd, 0, collect_one, &l),
	    STORE_OK);
	store_reader_end(rd);
	store_reader_free(rd);
	return l;
}

static bool
moves(struct fixture *fx, const struct rec *r, uint32_t shards,
    uint32_t place)
{
	return !docns_dropping(docset_namespaces(fx->ds), r->ns) &&
	    owner(r->url, strlen(r->url), shards) != place;
}

static void
verify_clean(struct fixture *fx)
{
	struct docset_verify v;

	ck_assert_int_eq(docset_verify(fx->ds, &v), STORE_OK);
	ck_assert_msg(v.table_mismatches == 0 && v.url_mismatches == 0, "%s",
	    v.detail);
}

static int
cmp_hit(const void *a, const void *b)
{
	const struct nearidx_hit *x = a, *y = b;

	if (x->distance != y->distance)
		return x->distance < y->distance ? -1 : 1;
	return (x->doc_id > y->doc_id) - (x->doc_id < y->doc_id);
}

/* docset_near over fx against brute force over its records l, for each
 * record's fingerprint and random ones, in each live namespace. */
static void
near_matches_brute_force(struct fixture *fx, const struct rec_list *l,
    uint64_t seed)
{
	struct nearidx_hit *got, *want;
	uint64_t rng = seed;

	got = calloc(l->n + 1, sizeof(*got));
	want = calloc(l->n + 1, sizeof(*want));
	ck_assert(got != NULL && want != NULL);
	for (size_t q = 0; q < l->n + 50; q++) {
		uint64_t fp = q < l->n ? l->r[q].fp : tu_rand(&rng);

		for (size_t s = 0; s < 2; s++) {
			uint32_t nsid = docset_ns_find(fx->ds, live_ns[s]);
			size_t nw = 0;
			int64_t total;

			for (size_t i = 0; i < l->n; i++) {
				unsigned d = (unsigned)__builtin_popcountll(fp ^
				    l->r[i].fp);

				if (l->r[i].ns != nsid || d > 3)
					continue;
				want[nw].doc_id = l->r[i].id;
				want[nw].fp = l->r[i].fp;
				want[nw++].distance = d;
			}
			qsort(want, nw, sizeof(*want), cmp_hit);
			total = docset_near(fx->ds, nsid, fp, 3, 0, 0, got,
			    l->n + 1);
			ck_assert_int_eq(total, (int64_t)nw);
			for (size_t i = 0; i < nw; i++) {
				ck_assert_uint_eq(got[i].doc_id,
				    want[i].doc_id);
				ck_assert_uint_eq(got[i].distance,
				    want[i].distance);
			}
		}
	}
	free(got);
	free(want);
}

static const struct rec *
find_rec(const struct rec_list *l, const char *ns, const char *url)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->r[i].ns_name, ns) == 0 &&
		    strcmp(l->r[i].url, url) == 0)
			return &l->r[i];
	return NULL;
}

/* Stores GONE_URLS documents in namespace "gone" and drops it. */
static void
gone_namespace(struct fixture *fx, struct model *md)
{
	struct store_txn *txn;
	struct docset_ns_undo nsu;
	uint64_t docs;
	uint32_t id;
	char url[96];

	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	for (unsigned i = 0; i < GONE_URLS; i++) {
		url_of(i, url, sizeof(url));
		random_put(fx, txn, md, "gone", url);
	}
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_ns_drop(fx->ds, txn, "gone", &id, &docs, &nsu),
	    STORE_OK);
	ck_assert_uint_eq(docs, GONE_URLS);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
}

/* Forgets a few documents of the dropped namespaces. */
static void
forget_step(struct fixture *fx, uint64_t *from)
{
	struct doc_undo undo[4];
	struct docset_ns_undo nsu;
	struct store_txn *txn;
	uint32_t ids[4];
	size_t n;
	bool done;

	if (docset_ns_dropped(fx->ds, ids, 4) == 0)
		return;
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_ns_forget(fx->ds, txn, ids[0], from, 1000, 4,
	    undo, &n, &done, &nsu), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
}

/*
 * The model test: a set with documents in two namespaces (and a dropped
 * one) exports to an empty one while it keeps changing.
 */
START_TEST(test_export_import_model)
{
	struct fixture a = { 0 }, b = { 0 };
	struct model md = { .rng = 0xd0c5eed + (uint64_t)_i, .now_ms = 1000 };
	struct rec_list la, lb, kept, after;
	struct doc_moved *docs, *gone;
	size_t n, ngone = 0, moving = 0, pages = 0;
	uint64_t cursor = 0, forget_from = 0;
	bool done = false, more;

	fx_open(&a);
	fx_open(&b);
	for (unsigned t = 0; t < 40; t++)
		random_txn(&a, &md, 15);
	gone_namespace(&a, &md);
	begin_session(&a, SHARDS, PLACE);

	/* Pages, with the documents changing between them. */
	while (!done) {
		ck_assert_int_eq(page(&a, &cursor, 29, &docs, &n, &done),
		    STORE_OK);
		for (size_t i = 0; i < n; i++) {
			ck_assert(!docs[i].deleted);
			ck_assert_uint_ne(owner(docs[i].url, docs[i].url_len,
			    SHARDS), PLACE);
			ck_assert_str_ne(docs[i].ns, "gone");
			ck_assert_uint_ge(docs[i].group, UINT64_C(1) << 48);
		}
		import_all(&b, docs, n);
		docmove_free(docs, n);
		random_txn(&a, &md, 10);
		if (pages++ % 3 == 0)
			forget_step(&a, &forget_from);
		ck_assert_uint_lt(pages, 1000);
	}
	/* The changed set, while the documents still change. */
	for (unsigned round = 0; round < 6; round++) {
		ck_assert_int_eq(changed(&a, 31, &docs, &n, &more), STORE_OK);
		import_all(&b, docs, n);
		docmove_free(docs, n);
		random_txn(&a, &md, 10);
		forget_step(&a, &forget_from);
	}
	/* Then no more changes: drained. */
	do {
		ck_assert_int_eq(changed(&a, 31, &docs, &n, &more), STORE_OK);
		import_all(&b, docs, n);
		docmove_free(docs, n);
	} while (more);

	/* b holds exactly a's moving documents, groups made global. */
	la = records(&a);
	lb = records(&b);
	kept = (struct rec_list){ 0 };
	for (size_t i = 0; i < la.n; i++) {
		const struct rec *r = &la.r[i], *c;

		if (!moves(&a, r, SHARDS, PLACE)) {
			collect_one(&(struct doc_record){ .id = r->id,
			    .fp = r->fp, .group = r->group,
			    .created_ms = r->created_ms,
			    .updated_ms = r->updated_ms, .url = r->url,
			    .url_len = strlen(r->url), .ns = r->ns,
			    .ns_name = r->ns_name,
			    .ns_len = strlen(r->ns_name) }, &kept);
			continue;
		}
		moving++;
		c = find_rec(&lb, r->ns_name, r->url);
		ck_assert_msg(c != NULL, "%s in \"%s\" did not move", r->url,
		    r->ns_name);
		ck_assert_uint_eq(c->fp, r->fp);
		ck_assert_uint_eq(c->group, r->group >> 48 ? r->group :
		    GLOBAL(PLACE, r->group));
		ck_assert_uint_eq(c->created_ms, r->created_ms);
		ck_assert_uint_eq(c->updated_ms, r->updated_ms);
	}
	ck_assert_uint_gt(moving, 100);
	ck_assert_uint_gt(kept.n, 50);
	ck_assert_uint_eq(lb.n, moving);
	verify_clean(&b);
	near_matches_brute_force(&b, &lb, 17);

	/* The old owner drops what it handed off: exactly that goes. */
	gone = calloc(moving, sizeof(*gone));
	ck_assert_ptr_nonnull(gone);
	for (size_t i = 0; i < lb.n; i++) {
		snprintf(gone[ngone].ns, sizeof(gone[ngone].ns), "%s",
		    lb.r[i].ns_name);
		gone[ngone].url = lb.r[i].url;
		gone[ngone].url_len = strlen(lb.r[i].url);
		gone[ngone++].deleted = true;
	}
	import_all(&a, gone, ngone);
	free(gone);
	/* Imports are not changes to export. */
	ck_assert_int_eq(changed(&a, 31, &docs, &n, &more), STORE_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	after = records(&a);
	ck_assert_uint_eq(after.n, kept.n);
	for (size_t i = 0; i < kept.n; i++) {
		ck_assert_uint_eq(after.r[i].id, kept.r[i].id);
		ck_assert_uint_eq(after.r[i].fp, kept.r[i].fp);
		ck_assert_uint_eq(after.r[i].group, kept.r[i].group);
		ck_assert_uint_eq(after.r[i].created_ms, kept.r[i].created_ms);
		ck_assert_uint_eq(after.r[i].updated_ms, kept.r[i].updated_ms);
		ck_assert_str_eq(after.r[i].url, kept.r[i].url);
		ck_assert_str_eq(after.r[i].ns_name, kept.r[i].ns_name);
	}
	verify_clean(&a);
	near_matches_brute_force(&a, &after, 23);
	docmove_end(a.ds);
	ck_assert(!docmove_open(a.ds));

	free(la.r);
	free(lb.r);
	free(kept.r);
	free(after.r);
	fx_close(&a);
	fx_close(&b);
}
END_TEST

/* The first URL from index i on whose owner among shards is not place. */
static unsigned
moving_url(unsigned i, uint32_t shards, uint32_t place, char *url,
    size_t size)
{
	for (;; i++) {
		url_of(i, url, size);
		if (owner(url, strlen(url), shards) != place)
			return i;
	}
}

static void
put_one(struct fixture *fx, const char *ns, const char *url, uint64_t fp)
{
	struct store_txn *txn;
	struct doc_record r;
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	bool created;

	docset_key(ns, strlen(ns), url, strlen(url), key);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_put(fx->ds, txn, ns, key, url, strlen(url), fp,
	    NULL, 0, 5000, &r, &created, &undo, NULL), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
}

/*
 * Without a session nothing is exported; a begin a read does not see is
 * refused; a change is handed out only to a read that sees it; a second
 * begin starts afresh; an import whose transaction aborts is taken back.
 */
START_TEST(test_sessions)
{
	struct fixture a = { 0 }, b = { 0 };
	struct store_txn *old, *rd, *txn;
	struct doc_moved *docs;
	struct docmove_import_job j;
	struct rec_list l;
	size_t n, want;
	uint64_t cursor = 0;
	bool done, more;
	char url[96];
	unsigned at;

	fx_open(&a);
	fx_open(&b);
	ck_assert(!docmove_open(a.ds));
	ck_assert_int_eq(page(&a, &cursor, 10, &docs, &n, &done),
	    DOCMOVE_NOSESSION);
	ck_assert_ptr_null(docs);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(changed(&a, 10, &docs, &n, &more), DOCMOVE_NOSESSION);
	ck_assert_str_eq(docmove_strstatus(DOCMOVE_NOSESSION),
	    "no export session");
	for (unsigned i = 0; i < 60; i++) {
		url_of(i, url, sizeof(url));
		put_one(&a, i % 2 ? "news" : "", url, 0x1234567ULL * (i + 1));
	}

	/* A read older than the begin could miss what came before it. */
	old = store_reader_new(a.st);
	ck_assert_int_eq(store_reader_begin(old), STORE_OK);
	begin_session(&a, SHARDS, PLACE);
	ck_assert_int_eq(docmove_page(a.ds, old, &cursor, 10, &docs, &n,
	    &done), DOCMOVE_STALE);
	store_reader_end(old);

	/* A change committed after the read began waits for a later read. */
	at = moving_url(1000, SHARDS, PLACE, url, sizeof(url));
	ck_assert_int_eq(store_reader_begin(old), STORE_OK);
	put_one(&a, "news", url, 42);
	ck_assert_int_eq(docmove_changed(a.ds, old, 10, &docs, &n, &more),
	    STORE_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert(more);
	store_reader_end(old);
	store_reader_free(old);
	ck_assert_int_eq(changed(&a, 10, &docs, &n, &more), STORE_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert(!more);
	ck_assert_str_eq(docs[0].ns, "news");
	ck_assert_str_eq(docs[0].url, url);
	ck_assert_uint_eq(docs[0].fp, 42);
	ck_assert(!docs[0].deleted);
	docmove_free(docs, n);

	/* A delete is handed out as deleted. */
	url_of(at, url, sizeof(url));
	ck_assert_int_eq(store_write_begin(a.st, &txn), STORE_OK);
	random_delete(&a, txn, "news", url);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_int_eq(changed(&a, 10, &docs, &n, &more), STORE_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert(docs[0].deleted);
	ck_assert_str_eq(docs[0].url, url);
	docmove_free(docs, n);
	/* A change of a document that stays is not noted. */
	for (unsigned i = 2000;; i++) {
		url_of(i, url, sizeof(url));
		if (owner(url, strlen(url), SHARDS) == PLACE)
			break;
	}
	put_one(&a, "", url, 7);
	ck_assert_int_eq(changed(&a, 10, &docs, &n, &more), STORE_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);

	/* A second begin replaces the session and its changed set. */
	moving_url(3000, SHARDS, PLACE, url, sizeof(url));
	put_one(&a, "", url, 9);
	begin_session(&a, SHARDS, 2);
	ck_assert_int_eq(changed(&a, 10, &docs, &n, &more), STORE_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert(!more);
	l = records(&a);
	want = 0;
	for (size_t i = 0; i < l.n; i++)
		want += moves(&a, &l.r[i], SHARDS, 2);
	cursor = 0;
	done = false;
	rd = store_reader_new(a.st);
	while (!done) {
		ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
		ck_assert_int_eq(docmove_page(a.ds, rd, &cursor, 7, &docs, &n,
		    &done), STORE_OK);
		store_reader_end(rd);
		for (size_t i = 0; i < n; i++) {
			ck_assert_uint_ne(owner(docs[i].url, docs[i].url_len,
			    SHARDS), 2);
			ck_assert_uint_eq(docs[i].group >> 48, 3);
		}
		ck_assert_uint_le(n, want);
		want -= n;
		docmove_free(docs, n);
	}
	ck_assert_uint_eq(want, 0);
	store_reader_free(rd);

	/* An import whose transaction aborts leaves nothing. */
	cursor = 0;
	ck_assert_int_eq(page(&a, &cursor, 20, &docs, &n, &done), STORE_OK);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(docmove_import_job_init(&j, b.ds, docs, n, NULL,
	    NULL), STORE_OK);
	ck_assert_int_eq(store_write_begin(b.st, &txn), STORE_OK);
	ck_assert_int_eq(j.wj.ops->apply(&j.wj, txn), STORE_OK);
	store_abort(txn);
	j.wj.ops->aborted(&j.wj);
	docmove_import_job_clear(&j);
	verify_clean(&b);
	free(l.r);
	l = records(&b);
	ck_assert_uint_eq(l.n, 0);
	/* Not a document: refused before any transaction. */
	docs[0].group = 0;
	ck_assert_int_eq(docmove_import_job_init(&j, b.ds, docs, n, NULL,
	    NULL), DOCMOVE_INVALID);
	docmove_free(docs, n);

	docmove_end(a.ds);
	ck_assert(!docmove_open(a.ds));
	cursor = 0;
	ck_assert_int_eq(page(&a, &cursor, 10, &docs, &n, &done),
	    DOCMOVE_NOSESSION);
	free(l.r);
	fx_close(&a);
	fx_close(&b);
}
END_TEST

Suite *docmove_suite(void);

Suite *
docmove_suite(void)
{
	Suite *s = suite_create("docmove");
	TCase *tc = tcase_create("docmove");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_export_import_model, 0, 2);
	tcase_add_test(tc, test_sessions);
	suite_add_tcase(s, tc);
	return s;
}
