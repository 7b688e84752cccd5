/*
 * Tests for docset on a real store: groups as DESIGN section 6 defines them
 * (nearest neighbour's group, ties to the oldest, re-submits re-decided),
 * aborts taken back, neighbour answers against brute force over the stored
 * records, and identical ids, groups and answers after a reopen; namespaces
 * (separate neighbours and groups, keys masked as URL keys are, a
 * namespace's creation, drop and forgetting taken back on abort, counts
 * kept across a reopen); the verified answer against a model of its rule
 * (candidates within k or sharing keys, kept by their estimates,
 * documents without a sketch by distance), through deletes, aborts and a
 * reopen.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "docimage.h"
#include "docset.h"
#include "store.h"
#include "testutil.h"

struct fixture {
	char *dir;
	struct store *st;
	struct docset *ds;
};

static void
open_docs(struct fixture *fx, enum simhash_term_hash th, char **cause)
{
	/* No fsync per test transaction: durability is not what is tested. */
	struct store_options so = { .dir = fx->dir, .map_size = 256 << 20,
	    .sync = STORE_SYNC_NONE };
	struct docset_options o = { .k = 3, .blocks = 4, .term_hash = th,
	    .stopwords_digest = "test", .containment = 0.2f,
	    .resemblance = 0.05f };

	*cause = NULL;
	if (fx->st == NULL) {
		fx->st = store_open(&so, cause);
		ck_assert_ptr_nonnull(fx->st);
	}
	fx->ds = docset_open(fx->st, &o, cause);
}

static void
close_docs(struct fixture *fx)
{
	docset_free(fx->ds);
	store_close(fx->st);
	fx->ds = NULL;
	fx->st = NULL;
}

/* How a test reopens the documents. */
enum reopen {
	FROM_RECORDS,	/* no image: the records are scanned */
	FROM_IMAGE,	/* through the restart image of a clean stop */
	STALE_IMAGE,	/* an image, then a commit: the records */
	DAMAGED_IMAGE,	/* an image cut short: the records */
};

static char *
image_path(const struct fixture *fx)
{
	char *path;

	ck_assert_int_ne(asprintf(&path, "%s/%s", fx->dir, DOCIMAGE_FILE),
	    -1);
	return path;
}

/*
 * Saves the restart image, then (STALE_IMAGE) calls commit(fx, arg), a
 * write the image has not seen, or (DAMAGED_IMAGE) cuts the image short;
 * closes and reopens.  The image is used only as FROM_IMAGE and is gone
 * after the open either way.
 */
static void
reopen_docs(struct fixture *fx, enum reopen how,
    void (*commit)(struct fixture *, void *), void *arg)
{
	char *path = image_path(fx), *cause;
	struct docset_stats st;
	struct stat sb;

	if (how != FROM_RECORDS) {
		ck_assert_int_eq(docset_save_image(fx->ds, &cause), 0);
		ck_assert_int_eq(stat(path, &sb), 0);
		if (how == STALE_IMAGE)
			commit(fx, arg);
		if (how == DAMAGED_IMAGE)
			ck_assert_int_eq(truncate(path, sb.st_size - 8), 0);
	}
	close_docs(fx);
	open_docs(fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_msg(fx->ds != NULL, "%s", cause);
	docset_stats(fx->ds, &st);
	ck_assert_int_eq(st.from_image, how == FROM_IMAGE);
	ck_assert_int_eq(stat(path, &sb), -1);
	free(path);
}

static void
key_of(const char *url, uint8_t key[DOCSET_KEY_LEN])
{
	/* Any 16 bytes name a document here: the URL, padded. */
	memset(key, 0, DOCSET_KEY_LEN);
	memcpy(key, url, strlen(url) < DOCSET_KEY_LEN ? strlen(url) :
	    DOCSET_KEY_LEN);
}

/* Puts one document in its own transaction; returns its record. */
/* Stores url with fingerprint fp, joining group join (0: decided). */
static struct doc_record
put_join(struct fixture *fx, const char *url, uint64_t fp, uint64_t join,
    bool *created)
{
	struct store_txn *txn;
	struct doc_record r;
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	bool c;

	key_of(url, key);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_put(fx->ds, txn, "", key, url, strlen(url),
	    fp, NULL, join, 1000, &r, &c, &undo, NULL), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	if (created)
		*created = c;
	r.url = NULL;	/* it pointed into the transaction */
	return r;
}

static struct doc_record
put(struct fixture *fx, const char *url, uint64_t fp, bool *created)
{
	return put_join(fx, url, fp, 0, created);
}

static uint64_t
del(struct fixture *fx, const char *url)
{
	struct store_txn *txn;
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t id;

	key_of(url, key);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_delete(fx->ds, txn, "", key, &id, &undo),
	    STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	return id;
}

/* Fails only counts. */
static int
fail_counts(const char *call)
{
	return strcmp(call, "count") == 0;
}

/*
 * A store that cannot count its records makes verify fail, not report a
 * false mismatch; once it can, verify and the statistics (which count
 * from memory) agree with what is stored.
 */
START_TEST(test_store_failures_surface)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct docset_stats stats;
	struct docset_verify v;
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_ptr_nonnull(fx.ds);
	/* Keyed as the daemon keys them (verify checks it): URL, MD5. */
	for (int i = 0; i < 2; i++) {
		const char *url = i ? "http://b.example/" : "http://a.example/";
		uint8_t key[DOCSET_KEY_LEN];
		unsigned int mdlen;
		struct store_txn *txn;
		struct doc_record r;
		struct doc_undo undo;
		bool c;

		ck_assert(EVP_Digest(url, strlen(url), key, &mdlen, EVP_md5(),
		    NULL));
		ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
		ck_assert_int_eq(docset_put(fx.ds, txn, "", key, url,
		    strlen(url), i ? 0xff00ff00ff00ff00ULL : 0x1234, NULL, 0, 1000, &r,
		    &c, &undo, NULL), STORE_OK);
		ck_assert_int_eq(store_commit(txn), STORE_OK);
	}
	store_fault_hook = fail_counts;
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_FAILED);
	ck_assert_uint_eq(v.url_mismatches, 0);
	store_fault_hook = NULL;

	docset_stats(fx.ds, &stats);
	ck_assert_uint_eq(stats.docs, 2);
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_OK);
	ck_assert_uint_eq(v.records, 2);
	ck_assert_uint_eq(v.url_mismatches + v.table_mismatches, 0);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/* Fails only record reads. */
static int
fail_gets(const char *call)
{
	return strcmp(call, "get") == 0;
}

/*
 * Neighbours with their records: a document the reader's snapshot does
 * not hold yet is left out (and not counted), and a record that cannot be
 * read fails the call instead of passing for one not stored yet.
 */
START_TEST(test_neighbours_visible_and_failing)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	const uint64_t x = 0x0123456789abcdefULL;
	struct docset_neighbour *nb;
	struct store_txn *rd;
	uint64_t total;
	size_t n;
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_ptr_nonnull(fx.ds);
	put(&fx, "http://a.example/", x, NULL);
	put(&fx, "http://b.example/", x ^ 1, NULL);
	rd = store_reader_new(fx.st);
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	put(&fx, "http://c.example/", x ^ 2, NULL);	/* after the snapshot */

	ck_assert_int_eq(docset_neighbours(fx.ds, rd, DOCNS_DEFAULT,
	    &(struct docset_query){ .fp = x, .k = 3 }, 10, &nb, &n, &total), STORE_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(total, 2);
	ck_assert_str_eq(nb[0].url, "http://a.example/");
	ck_assert_uint_eq(nb[0].distance, 0);
	ck_assert_str_eq(nb[1].url, "http://b.example/");
	ck_assert_uint_eq(nb[1].distance, 1);
	docset_neighbours_free(nb, n);

	store_fault_hook = fail_gets;
	ck_assert_int_eq(docset_neighbours(fx.ds, rd, DOCNS_DEFAULT,
	    &(struct docset_query){ .fp = x, .k = 3 }, 10, &nb, &n, &total), STORE_FAILED);
	store_fault_hook = NULL;
	ck_assert_uint_eq(n, 0);
	store_reader_end(rd);

	/* A newer snapshot holds all three. */
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	ck_assert_int_eq(docset_neighbours(fx.ds, rd, DOCNS_DEFAULT,
	    &(struct docset_query){ .fp = x, .k = 3 }, 10, &nb, &n, &total), STORE_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(total, 3);
	docset_neighbours_free(nb, n);
	store_reader_end(rd);
	store_reader_free(rd);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_groups)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	const uint64_t a = 0x0123456789abcdefULL, c = ~a;
	struct doc_record r;
	bool created;
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_msg(fx.ds != NULL, "%s", cause);
	/* A founds group 1; B, one bit away, joins it; C, far, founds 3. */
	r = put(&fx, "a", a, &created);
	ck_assert(created);
	ck_assert_uint_eq(r.id, 1);
	ck_assert_uint_eq(r.group, 1);
	r = put(&fx, "b", a ^ 1, NULL);
	ck_assert_uint_eq(r.id, 2);
	ck_assert_uint_eq(r.group, 1);
	r = put(&fx, "c", c, NULL);
	ck_assert_uint_eq(r.group, 3);
	/* D: 1 from C, 3 from nobody else: the nearest is C. */
	r = put(&fx, "d", c ^ 0x100, NULL);
	ck_assert_uint_eq(r.id, 4);
	ck_assert_uint_eq(r.group, 3);
	/* E: 2 from A (id 1) and 3 from B: the nearest, A. */
	r = put(&fx, "e", a ^ 0x6, NULL);
	ck_assert_uint_eq(r.group, 1);
	/* G: 1 from B, 2 from A: the nearest, B, whose group is 1. */
	r = put(&fx, "g", a ^ 0x3, NULL);
	ck_assert_uint_eq(r.id, 6);
	ck_assert_uint_eq(r.group, 1);
	/* A tie between groups: P founds one, Q (6 bits from P) another; T,
	 * 3 bits from each, joins the older, P's. */
	r = put(&fx, "p", 0, NULL);
	ck_assert_uint_eq(r.id, 7);
	ck_assert_uint_eq(r.group, 7);
	r = put(&fx, "q", 0x3f, NULL);
	ck_assert_uint_eq(r.group, 8);
	r = put(&fx, "t", 0x07, NULL);
	ck_assert_uint_eq(r.group, 7);
	/* A re-submit keeps its id, takes the new fingerprint, and has its
	 * group decided again: far from all, B founds its own group. */
	r = put(&fx, "b", 0xf0f0f0f0f0f0f0f0ULL, &created);
	ck_assert(!created);
	ck_assert_uint_eq(r.id, 2);
	ck_assert_uint_eq(r.group, 2);
	ck_assert_uint_eq(r.fp, 0xf0f0f0f0f0f0f0f0ULL);
	/* ... and near C it joins C's group. */
	r = put(&fx, "b", c ^ 0x10000, NULL);
	ck_assert_uint_eq(r.id, 2);
	ck_assert_uint_eq(r.group, 3);
	/* Deleting A leaves E's group alone; a newcomer near E joins it. */
	ck_assert_uint_eq(del(&fx, "a"), 1);
	ck_assert_uint_eq(del(&fx, "a"), 0);
	r = put(&fx, "h", a ^ 0x6 ^ 0x80, NULL);
	ck_assert_uint_eq(r.group, 1);
	ck_assert_uint_eq(r.id, 10);
	/* A group given (a sharded client decided it elsewhere) is kept,
	 * whatever the neighbours here; a newcomer near it joins it. */
	r = put_join(&fx, "i", c, 0x2000000000005ULL, NULL);
	ck_assert_uint_eq(r.id, 11);
	ck_assert_uint_eq(r.group, 0x2000000000005ULL);
	r = put(&fx, "j", c, NULL);
	ck_assert_uint_eq(r.group, 3);	/* C is older than I */
	r = put(&fx, "k", 0x5555555555555555ULL, NULL);
	r = put(&fx, "l", 0x5555555555555555ULL ^ 1, NULL);
	ck_assert_uint_eq(r.group, 13);	/* K's */
	/* Told to found one: its own id, with K one bit away. */
	r = put_join(&fx, "m", 0x5555555555555555ULL ^ 2, DOCSET_OWN_GROUP,
	    NULL);
	ck_assert_uint_eq(r.id, 15);
	ck_assert_uint_eq(r.group, 15);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_abort_is_taken_back)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct {
		struct doc_undo u;
	} undo[3];
	struct store_txn *txn;
	struct nearidx_hit hits[8];
	struct doc_record r;
	uint8_t key[DOCSET_KEY_LEN];
	uint64_t id;
	bool created;
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	put(&fx, "x", 100, NULL);
	/* In one aborted transaction: x changed twice and y added; undone
	 * in reverse order, x must be back as it was. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	key_of("x", key);
	ck_assert_int_eq(docset_put(fx.ds, txn, "", key, "x", 1, 200, NULL, 0, 1, &r,
	    &created, &undo[0].u, NULL), STORE_OK);
	ck_assert_int_eq(docset_put(fx.ds, txn, "", key, "x", 1, 300, NULL, 0, 1, &r,
	    &created, &undo[1].u, NULL), STORE_OK);
	key_of("y", key);
	ck_assert_int_eq(docset_put(fx.ds, txn, "", key, "y", 1, 100, NULL, 0, 1, &r,
	    &created, &undo[2].u, NULL), STORE_OK);
	store_abort(txn);
	for (int i = 2; i >= 0; i--)
		docset_undo(fx.ds, &undo[i].u);
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 100, 0, 0, 0, hits,
	    8), 1);
	ck_assert_uint_eq(hits[0].doc_id, 1);
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 300, 0, 0, 0, hits,
	    8), 0);
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 200, 0, 0, 0, hits,
	    8), 0);
	/* y's id was given back: a full disk refusing new documents over
	 * and over must not use ids up. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_int_eq(docset_put(fx.ds, txn, "", key, "y", 1, 100, NULL, 0, 1, &r,
	    &created, &undo[2].u, NULL), STORE_OK);
	ck_assert(created);
	ck_assert_uint_eq(r.id, 2);
	store_abort(txn);
	docset_undo(fx.ds, &undo[2].u);
	/* A delete taken back, too. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	key_of("x", key);
	ck_assert_int_eq(docset_delete(fx.ds, txn, "", key, &id, &undo[0].u),
	    STORE_OK);
	store_abort(txn);
	docset_undo(fx.ds, &undo[0].u);
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 100, 0, 0, 0, hits,
	    8), 1);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_near_excludes_only_what_is_there)
{
	/* A query that excludes a document lowers the total only for a
	 * document the tables hold: one being re-submitted meanwhile (not
	 * in the tables under the fingerprint its reader saw) must not cut
	 * a real neighbour off (found by fuzz_dispatch). */
	struct fixture fx = { .dir = tu_tmpdir() };
	struct nearidx_hit hits[8];
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	put(&fx, "x", 100, NULL);	/* id 1 */
	put(&fx, "y", 101, NULL);	/* id 2, at distance 1 */
	/* Id 3 is in no table, though its fingerprint is within k. */
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 100, 1, 3, 100,
	    hits, 8), 2);
	/* Excluding a document that is there: the other one is left. */
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 100, 1, 1, 100,
	    hits, 8), 1);
	ck_assert_uint_eq(hits[0].doc_id, 2);
	/* The excluded one beyond the hits asked for still counts out. */
	ck_assert_int_eq(docset_near(fx.ds, DOCNS_DEFAULT, 100, 1, 2, 101,
	    hits, 1), 1);
	ck_assert_uint_eq(hits[0].doc_id, 1);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/* Brute force over the stored fingerprints. */
struct model {
	uint64_t fp[3000];
	bool live[3000];
};

static void
check_against_model(struct fixture *fx, const struct model *m, uint64_t q,
    unsigned k)
{
	static struct nearidx_hit hits[4000];
	int64_t total = docset_near(fx->ds, DOCNS_DEFAULT, q, k, 0, 0, hits,
	    4000);
	int64_t want = 0;
	uint64_t last_id = 0;
	unsigned last_d = 0;

	for (int i = 0; i < 3000; i++)
		want += m->live[i] &&
		    (unsigned)__builtin_popcountll(m->fp[i] ^ q) <= k;
	ck_assert_int_eq(total, want);
	/* Plain tests in the loop: Check records every passed assertion. */
	for (int64_t i = 0; i < total; i++) {
		uint64_t id = hits[i].doc_id;

		if (id < 1 || id > 3000 || !m->live[id - 1])
			ck_abort_msg("document %llu is not stored",
			    (unsigned long long)id);
		if (hits[i].distance !=
		    (unsigned)__builtin_popcountll(m->fp[id - 1] ^ q))
			ck_abort_msg("document %llu at the wrong distance",
			    (unsigned long long)id);
		/* Nearest first, then oldest. */
		if (i > 0 && !(hits[i].distance > last_d ||
		    (hits[i].distance == last_d && id > last_id)))
			ck_abort_msg("hits out of order at %lld", (long long)i);
		last_d = hits[i].distance;
		last_id = id;
	}
}

START_TEST(test_near_and_reopen_against_brute_force)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	static struct model m;
	static uint64_t group_before[3000];
	uint64_t seed = 31337, base[20];
	char url[32], *cause;
	struct doc_record r;
	struct store_txn *rd;
	uint8_t key[DOCSET_KEY_LEN];

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	for (int b = 0; b < 20; b++)
		base[b] = tu_rand(&seed);
	/* Clusters around 20 bases, at distances 0..5, plus strangers. */
	for (int i = 0; i < 3000; i++) {
		uint64_t fp = tu_rand(&seed);

		if (i % 3 != 0) {
			fp = base[tu_rand_below(&seed, 20)];
			for (unsigned d = (unsigned)tu_rand_below(&seed, 6);
			    d > 0; d--)
				fp ^= 1ULL << tu_rand_below(&seed, 64);
		}
		snprintf(url, sizeof(url), "u%d", i);
		r = put(&fx, url, fp, NULL);
		ck_assert_uint_eq(r.id, (uint64_t)i + 1);
		m.fp[i] = fp;
		m.live[i] = true;
	}
	for (int i = 0; i < 3000; i += 7) {
		snprintf(url, sizeof(url), "u%d", i);
		del(&fx, url);
		m.live[i] = false;
	}
	for (int q = 0; q < 300; q++) {
		uint64_t fp = base[q % 20] ^ (1ULL << (q % 64));

		check_against_model(&fx, &m, fp, (unsigned)(q % 4));
	}
	/* Reopen: the same ids, groups and answers. */
	rd = store_reader_new(fx.st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	for (int i = 0; i < 3000; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		key_of(url, key);
		group_before[i] = docset_get(fx.ds, rd, DOCNS_DEFAULT, key,
		    &r) == STORE_OK ? r.group : 0;
	}
	store_reader_end(rd);
	store_reader_free(rd);
	close_docs(&fx);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_msg(fx.ds != NULL, "%s", cause);
	rd = store_reader_new(fx.st);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	for (int i = 0; i < 3000; i++) {
		int rc;

		snprintf(url, sizeof(url), "u%d", i);
		key_of(url, key);
		rc = docset_get(fx.ds, rd, DOCNS_DEFAULT, key, &r);
		ck_assert_int_eq(rc, m.live[i] ? STORE_OK : STORE_NOTFOUND);
		if (rc == STORE_OK) {
			ck_assert_uint_eq(r.id, (uint64_t)i + 1);
			ck_assert_uint_eq(r.group, group_before[i]);
			ck_assert_uint_eq(r.fp, m.fp[i]);
		}
	}
	store_reader_end(rd);
	store_reader_free(rd);
	for (int q = 0; q < 300; q++)
		check_against_model(&fx, &m, base[q % 20] ^ (3ULL << (q % 60)),
		    (unsigned)(q % 4));
	/* New ids continue after the old ones. */
	r = put(&fx, "new", 42, NULL);
	ck_assert_uint_eq(r.id, 3001);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/*
 * A damaged document record refuses the open with a cause, whichever half
 * of the start-up scan (by id, each half by a thread) reads it; the same
 * store without it opens with every other document.
 */
START_TEST(test_damaged_record_refuses_open)
{
	static const uint64_t bad_ids[] = { 3, 97 };	/* of 100: each half */
	uint64_t bad = bad_ids[_i];
	struct fixture fx = { .dir = tu_tmpdir() };
	struct docset_stats stats;
	struct store_txn *txn;
	uint8_t key[8];
	char url[32], *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	for (int i = 0; i < 100; i++) {
		snprintf(url, sizeof(url), "u%d", i);
		ck_assert_uint_eq(put(&fx, url, (uint64_t)i * 0x9e3779b9,
		    NULL).id, (uint64_t)i + 1);
	}
	close_docs(&fx);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_msg(fx.ds != NULL, "%s", cause);
	docset_free(fx.ds);
	fx.ds = NULL;
	for (int i = 0; i < 8; i++)
		key[i] = (uint8_t)(bad >> (56 - 8 * i));
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_int_eq(store_put(txn, STORE_DOCS, key, sizeof(key), "x", 1,
	    0, NULL), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_ptr_null(fx.ds);
	ck_assert_ptr_nonnull(cause);
	ck_assert_msg(strstr(cause, "loading documents: a document record "
	    "has the wrong size") != NULL, "%s", cause);
	free(cause);
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_int_eq(store_del(txn, STORE_DOCS, key, sizeof(key)),
	    STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_msg(fx.ds != NULL, "%s", cause);
	docset_stats(fx.ds, &stats);
	ck_assert_uint_eq(stats.docs, 99);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

START_TEST(test_term_hash_fixed_once_documents_exist)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	char *cause;

	/* Without documents the term hash may change... */
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM, &cause);
	ck_assert_ptr_nonnull(fx.ds);
	close_docs(&fx);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_ptr_nonnull(fx.ds);
	put(&fx, "one", 1, NULL);
	close_docs(&fx);
	/* ... with them, not. */
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM, &cause);
	ck_assert_ptr_null(fx.ds);
	ck_assert_msg(strstr(cause, "term_hash = sdbm-fmix64") != NULL, "%s",
	    cause);
	free(cause);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/*
 * A put that also lists the document's neighbours (one search for them and
 * the group) gives the ids and groups of a plain put, and the list
 * docset_neighbours gives right after: fingerprints near each other, with
 * re-submits, in one transaction.
 */
START_TEST(test_put_with_neighbours)
{
	struct fixture a = { .dir = tu_tmpdir() }, b = { .dir = tu_tmpdir() };
	struct store_txn *ta, *tb;
	uint64_t rng = 7;
	char *cause;

	open_docs(&a, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	open_docs(&b, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_int_eq(store_write_begin(a.st, &ta), STORE_OK);
	ck_assert_int_eq(store_write_begin(b.st, &tb), STORE_OK);
	for (int i = 0; i < 400; i++) {
		/* 40 URLs, fingerprints of 3 bits in 8: many within k. */
		uint64_t fp = 0;
		char url[32];
		uint8_t key[DOCSET_KEY_LEN];
		struct doc_record ra, rb;
		struct doc_undo ua, ub;
		struct docset_near_list near = { .max = i % 5 };
		struct docset_neighbour *nb;
		size_t n;
		uint64_t total;
		bool ca, cb;

		for (int bit = 0; bit < 3; bit++)
			fp |= 1ULL << tu_rand_below(&rng, 8);
		snprintf(url, sizeof(url), "u%d", (int)tu_rand_below(&rng,
		    40));
		key_of(url, key);
		ck_assert_int_eq(docset_put(a.ds, ta, "", key, url, strlen(url),
		    fp, NULL, 0, 1000, &ra, &ca, &ua, NULL), STORE_OK);
		ck_assert_int_eq(docset_put(b.ds, tb, "", key, url, strlen(url),
		    fp, NULL, 0, 1000, &rb, &cb, &ub, &near), STORE_OK);
		ck_assert_uint_eq(rb.id, ra.id);
		ck_assert_uint_eq(rb.group, ra.group);
		ck_assert_int_eq(cb, ca);
		ck_assert_int_eq(docset_neighbours(a.ds, ta, DOCNS_DEFAULT,
		    &(struct docset_query){ .fp = fp, .k = 3, .exclude = ra.id,
		    .exclude_fp = fp }, near.max, &nb, &n, &total), STORE_OK);
		ck_assert_uint_eq(near.total, total);
		ck_assert_uint_eq(near.n, n);
		for (size_t j = 0; j < n; j++) {
			ck_assert_uint_eq(near.list[j].id, nb[j].id);
			ck_assert_uint_eq(near.list[j].distance,
			    nb[j].distance);
			ck_assert_uint_eq(near.list[j].group, nb[j].group);
			ck_assert_str_eq(near.list[j].url, nb[j].url);
		}
		docset_neighbours_free(nb, n);
		docset_neighbours_free(near.list, near.n);
	}
	ck_assert_int_eq(store_commit(ta), STORE_OK);
	ck_assert_int_eq(store_commit(tb), STORE_OK);
	close_docs(&a);
	close_docs(&b);
	tu_rmtree(a.dir);
	tu_rmtree(b.dir);
	free(a.dir);
	free(b.dir);
}
END_TEST

/* ids, a scratch of 16 uint64_t, as room for uint32_t ids. */
static uint32_t *
ids_u32(uint64_t *ids)
{
	return (uint32_t *)(void *)ids;
}

/* Puts key/url in namespace ns in txn (which stays open). */
static struct doc_record
put_in(struct fixture *fx, struct store_txn *txn, const char *ns,
    const char *url, uint64_t fp, struct doc_undo *undo)
{
	struct doc_record r;
	uint8_t key[DOCSET_KEY_LEN], mask[DOCNS_MASK_LEN];
	bool c;


	/* The daemon's keys: forgetting a dropped namespace's documents
	 * finds their URLs' entries by them. */
	ck_assert(EVP_Digest(url, strlen(url), key, NULL, EVP_md5(), NULL));
	if (ns[0] != '\0') {
		docns_mask(ns, strlen(ns), mask);
		for (size_t i = 0; i < DOCSET_KEY_LEN; i++)
			key[i] ^= mask[i];
	}
	ck_assert_int_eq(docset_put(fx->ds, txn, ns, key, url, strlen(url),
	    fp, NULL, 0, 1000, &r, &c, undo, NULL), STORE_OK);
	r.url = NULL;
	r.ns_name = NULL;
	return r;
}

/* The ids docset_near finds at distance 0 of fp in namespace ns. */
static int64_t
near_in(struct fixture *fx, const char *ns, uint64_t fp, uint64_t *ids)
{
	struct nearidx_hit hits[16];
	int64_t n = docset_near(fx->ds, docset_ns_find(fx->ds, ns), fp, 0, 0,
	    0, hits, 16);

	for (int64_t i = 0; i < n && i < 16; i++)
		ids[i] = hits[i].doc_id;
	return n;
}

/* The key mask of a namespace is the URL set's: MD5("nddd.ns/" NAME). */
START_TEST(test_namespace_mask)
{
	uint8_t mask[DOCNS_MASK_LEN], md5[16];
	unsigned int len;

	docns_mask("crawl-7", 7, mask);
	ck_assert(EVP_Digest("nddd.ns/crawl-7", 15, md5, &len, EVP_md5(),
	    NULL));
	ck_assert_mem_eq(mask, md5, sizeof(md5));
}
END_TEST

/*
 * One fingerprint in three namespaces: each sees its own only, and groups
 * form within each; the creation of a namespace and its documents are
 * taken back with their transaction; a drop frees the name at once, its
 * forgetting goes step by step (an aborted step taken back), and counts
 * and answers are those of the store after a reopen.
 */
START_TEST(test_namespaces)
{
	struct fixture fx = { .dir = tu_tmpdir() };
	struct store_txn *txn;
	struct doc_undo u[8], fu[4];
	struct docset_ns_undo nu, nd;
	struct docset_verify v;
	struct doc_record r;
	uint64_t ids[16], from, docs;
	uint32_t id, none;
	size_t n;
	bool done;
	char *cause;

	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_uint_eq(put_in(&fx, txn, "", "x", 7, &u[0]).id, 1);
	r = put_in(&fx, txn, "a", "x", 7, &u[1]);
	ck_assert_uint_eq(r.id, 2);
	ck_assert_uint_eq(r.group, 2);	/* not the default one's group */
	r = put_in(&fx, txn, "a", "y", 7, &u[2]);
	ck_assert_uint_eq(r.group, 2);
	ck_assert_uint_eq(put_in(&fx, txn, "b", "x", 7, &u[3]).group, 4);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_int_eq(near_in(&fx, "", 7, ids), 1);
	ck_assert_uint_eq(ids[0], 1);
	ck_assert_int_eq(near_in(&fx, "a", 7, ids), 2);
	ck_assert_uint_eq(ids[0] + ids[1], 5);
	ck_assert_int_eq(near_in(&fx, "b", 7, ids), 1);
	ck_assert_uint_eq(ids[0], 4);
	ck_assert_int_eq(near_in(&fx, "c", 7, ids), 0);

	/* A new namespace and its document, taken back. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	put_in(&fx, txn, "c", "x", 7, &u[4]);
	ck_assert_int_eq(near_in(&fx, "c", 7, ids), 1);
	store_abort(txn);
	docset_undo(fx.ds, &u[4]);
	ck_assert_uint_eq(docset_ns_find(fx.ds, "c"), DOCNS_NONE);
	ck_assert_int_eq(near_in(&fx, "c", 7, ids), 0);

	/* a dropped: its name is free at once. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	ck_assert_int_eq(docset_ns_drop(fx.ds, txn, "a", &id, &docs, &nd),
	    STORE_OK);
	ck_assert_uint_eq(docs, 2);
	ck_assert_int_eq(docset_ns_drop(fx.ds, txn, "nothing", &none, &docs,
	    &nu), STORE_NOTFOUND);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	ck_assert_uint_eq(docset_ns_find(fx.ds, "a"), DOCNS_NONE);
	ck_assert_int_eq(near_in(&fx, "a", 7, ids), 0);
	ck_assert_uint_eq(docset_ns_dropped(fx.ds, ids_u32(ids), 4), 1);
	/* A step that forgets one, aborted, then the whole, in two. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	from = 0;
	ck_assert_int_eq(docset_ns_forget(fx.ds, txn, id, &from, 100, 1, fu,
	    &n, &done, &nu), STORE_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert(!done);
	store_abort(txn);
	docset_ns_undo(fx.ds, &nu);
	docset_undo(fx.ds, &fu[0]);
	ck_assert_uint_eq(docns_docs(docset_namespaces(fx.ds), id), 2);
	from = 0;
	for (int step = 0; step < 2; step++) {
		ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
		ck_assert_int_eq(docset_ns_forget(fx.ds, txn, id, &from, 100,
		    1, fu, &n, &done, &nu), STORE_OK);
		ck_assert_uint_eq(n, 1);
		ck_assert_int_eq(done, step == 1);
		ck_assert_int_eq(store_commit(txn), STORE_OK);
	}
	ck_assert_uint_eq(docset_ns_dropped(fx.ds, ids_u32(ids), 4), 0);
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_OK);
	ck_assert_msg(v.table_mismatches == 0 && v.url_mismatches == 0, "%s",
	    v.detail);
	ck_assert_uint_eq(v.records, 2);

	/* a again: a new namespace, empty. */
	ck_assert_int_eq(store_write_begin(fx.st, &txn), STORE_OK);
	r = put_in(&fx, txn, "a", "x", 7, &u[5]);
	ck_assert_uint_eq(r.group, r.id);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	reopen_docs(&fx, (enum reopen)_i, NULL, NULL);
	ck_assert_int_eq(near_in(&fx, "a", 7, ids), 1);
	ck_assert_uint_eq(ids[0], r.id);
	ck_assert_int_eq(near_in(&fx, "b", 7, ids), 1);
	ck_assert_uint_eq(docns_docs(docset_namespaces(fx.ds),
	    docset_ns_find(fx.ds, "b")), 1);
	ck_assert_uint_eq(docns_docs(docset_namespaces(fx.ds), DOCNS_DEFAULT),
	    1);
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_OK);
	ck_assert_msg(v.table_mismatches == 0 && v.url_mismatches == 0, "%s",
	    v.detail);
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
}
END_TEST

/* ---- The verified answer against a model of its rule. ---- */

/* A stored document of the model. */
struct vdoc {
	uint64_t id;
	uint64_t fp;
	bool sketched;
	struct sketch sk;
	bool live;
};

static int
cmp_hash(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/*
 * A sketch of n hashes from a small pool (so that documents share some),
 * for a document of shingles shingles (>= n).
 */
static void
pool_sketch(uint64_t *seed, uint32_t pool, uint32_t n, uint32_t shingles,
    struct sketch *s)
{
	memset(s, 0, sizeof(*s));
	while (s->n < n) {
		uint32_t v = 1 + (uint32_t)tu_rand_below(seed, pool) *
		    40503u;
		bool dup = false;

		for (uint32_t i = 0; i < s->n && !dup; i++)
			dup = s->h[i] == v;
		if (!dup)
			s->h[s->n++] = v;
	}
	qsort(s->h, s->n, sizeof(s->h[0]), cmp_hash);
	s->shingles = shingles;
}

/* Whether the model keeps stored document d for query q (fp, sketch). */
static bool
model_keeps(const struct vdoc *d, uint64_t fp, const struct sketch *q,
    struct sketch_similarity *sim)
{
	unsigned dist = (unsigned)__builtin_popcountll(d->fp ^ fp);
	uint32_t keys[SKETCH_KEYS];
	size_t nkeys, shared = 0;

	memset(sim, 0, sizeof(*sim));
	if (!d->live)
		return false;
	if (!d->sketched)
		return dist <= 3;
	nkeys = sketch_keys(&d->sk, keys);
	for (size_t k = 0; k < nkeys; k++)
		for (uint32_t j = 0; j < q->n && j < SKETCH_PROBES; j++)
			shared += keys[k] == q->h[j];
	if (dist > 3 && shared < SKETCH_MIN_KEYS)
		return false;
	sketch_compare(q, &d->sk, sim);
	return sim->containment >= 0.2f && sim->resemblance >= 0.05f;
}

struct vhit {
	uint64_t id;
	bool verified;
	float res;
	unsigned dist;
};

static int
cmp_vhit(const void *a, const void *b)
{
	const struct vhit *x = a, *y = b;

	if (x->verified != y->verified)
		return x->verified ? -1 : 1;
	if (x->verified && x->res != y->res)
		return x->res > y->res ? -1 : 1;
	if (!x->verified && x->dist != y->dist)
		return x->dist < y->dist ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* Every query of the model through docset_neighbours, and compared. */
static void
check_verified(struct fixture *fx, const struct vdoc *docs, size_t n,
    uint64_t *seed)
{
	struct store_txn *rd = store_reader_new(fx->st);
	struct vhit *want = calloc(n + 1, sizeof(*want));

	ck_assert_ptr_nonnull(rd);
	ck_assert_ptr_nonnull(want);
	ck_assert_int_eq(store_reader_begin(rd), STORE_OK);
	for (int t = 0; t < 200; t++) {
		const struct vdoc *like = &docs[tu_rand_below(seed, n)];
		struct docset_neighbour *nb;
		struct sketch q;
		uint64_t fp, total;
		size_t got, m = 0;

		/* Near a stored one: half its hashes, some new ones. */
		pool_sketch(seed, 400, 20 + (uint32_t)tu_rand_below(seed, 60),
		    0, &q);
		q.shingles = q.n;
		for (uint32_t i = 0; i < like->sk.n && i < q.n; i += 2)
			q.h[i] = like->sk.h[i];
		qsort(q.h, q.n, sizeof(q.h[0]), cmp_hash);
		for (uint32_t i = 1; i < q.n; i++)
			if (q.h[i] == q.h[i - 1])
				q.h[i - 1] = 0x7fffff00u + i;
		qsort(q.h, q.n, sizeof(q.h[0]), cmp_hash);
		fp = like->fp ^ (UINT64_C(1) << tu_rand_below(seed, 64)) ^
		    (tu_rand_below(seed, 2) ? UINT64_C(1) << 7 : 0);
		for (size_t i = 0; i < n; i++) {
			struct sketch_similarity sim;

			if (!model_keeps(&docs[i], fp, &q, &sim))
				continue;
			want[m++] = (struct vhit){ .id = docs[i].id,
			    .verified = docs[i].sketched,
			    .res = sim.resemblance,
			    .dist = (unsigned)__builtin_popcountll(
			    docs[i].fp ^ fp) };
		}
		qsort(want, m, sizeof(*want), cmp_vhit);
		ck_assert_int_eq(docset_neighbours(fx->ds, rd, DOCNS_DEFAULT,
		    &(struct docset_query){ .fp = fp, .sketch = &q, .k = 3 },
		    n, &nb, &got, &total), STORE_OK);
		ck_assert_uint_eq(total, m);
		ck_assert_uint_eq(got, m);
		for (size_t i = 0; i < m; i++) {
			ck_assert_uint_eq(nb[i].id, want[i].id);
			ck_assert_int_eq(nb[i].verified, want[i].verified);
			ck_assert(nb[i].resemblance == (want[i].verified ?
			    want[i].res : 0));
		}
		docset_neighbours_free(nb, got);
	}
	store_reader_end(rd);
	store_reader_free(rd);
	free(want);
}

/* Stores docs[i] (a sketch or none) under URL number i. */
static void
put_vdoc(struct fixture *fx, struct vdoc *d, int i)
{
	struct store_txn *txn;
	struct doc_record r;
	struct doc_undo undo;
	uint8_t key[DOCSET_KEY_LEN];
	char url[32];
	bool c;

	snprintf(url, sizeof(url), "v%d", i);
	key_of(url, key);
	ck_assert_int_eq(store_write_begin(fx->st, &txn), STORE_OK);
	ck_assert_int_eq(docset_put(fx->ds, txn, "", key, url, strlen(url),
	    d->fp, d->sketched ? &d->sk : NULL, 0, 1000, &r, &c, &undo,
	    NULL), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	d->id = r.id;
	d->live = true;
}

/* A commit a restart image has not seen: document v2 deleted. */
static void
delete_v2(struct fixture *fx, void *docs)
{
	ck_assert_uint_eq(del(fx, "v2"), ((struct vdoc *)docs)[2].id);
	((struct vdoc *)docs)[2].live = false;
}

/*
 * Documents with sketches over a small pool of hashes (and some without
 * a sketch, as nddd 0.4 stored them), fingerprints in clusters: every
 * answer is the model's, in its order, before and after deletes,
 * re-submits and a reopen (each way of enum reopen: a stale image would
 * still answer v2); an aborted put leaves no trace in the answers.
 */
START_TEST(test_verified_against_model)
{
	enum { N = 400 };
	struct fixture fx = { .dir = tu_tmpdir() };
	struct vdoc *docs = calloc(N, sizeof(*docs));
	struct docset_stats st;
	struct docset_verify v;
	uint64_t seed = 123, base[8];
	char *cause;

	ck_assert_ptr_nonnull(docs);
	for (int i = 0; i < 8; i++)
		base[i] = tu_rand(&seed);
	open_docs(&fx, SIMHASH_TERM_HASH_SDBM_FMIX64, &cause);
	ck_assert_ptr_nonnull(fx.ds);
	for (int i = 0; i < N; i++) {
		struct vdoc *d = &docs[i];
		uint32_t n = 1 + (uint32_t)tu_rand_below(&seed, SKETCH_K);

		d->fp = base[i % 8] ^ (UINT64_C(1) << tu_rand_below(&seed,
		    64)) ^ (UINT64_C(1) << tu_rand_below(&seed, 64));
		d->sketched = i % 10 != 3;
		/* A whole set, or the smallest of a larger one. */
		if (i % 3 == 0)
			n = SKETCH_K;
		pool_sketch(&seed, 400, n, n < SKETCH_K ? n : n +
		    (uint32_t)tu_rand_below(&seed, 3 * n), &d->sk);
		put_vdoc(&fx, d, i);
	}
	check_verified(&fx, docs, N, &seed);
	docset_stats(fx.ds, &st);
	ck_assert_uint_eq(st.unsketched, N / 10);
	ck_assert_uint_gt(st.candidates, 0);
	/* Deletes, and re-submits with new sketches. */
	for (int i = 0; i < N; i += 7) {
		char url[32];

		snprintf(url, sizeof(url), "v%d", i);
		ck_assert_uint_eq(del(&fx, url), docs[i].id);
		docs[i].live = false;
	}
	for (int i = 1; i < N; i += 11) {
		pool_sketch(&seed, 400, 30, 30, &docs[i].sk);
		docs[i].sketched = true;
		put_vdoc(&fx, &docs[i], i);
	}
	check_verified(&fx, docs, N, &seed);
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_OK);
	ck_assert_msg(v.table_mismatches == 0, "%s", v.detail);
	/* The same answers after a reopen, the same tables, and the next
	 * document gets the next id. */
	reopen_docs(&fx, (enum reopen)_i, delete_v2, docs);
	check_verified(&fx, docs, N, &seed);
	ck_assert_int_eq(docset_verify(fx.ds, &v), STORE_OK);
	ck_assert_msg(v.table_mismatches == 0, "%s", v.detail);
	{
		struct vdoc next = { .fp = base[0] };
		uint64_t unsketched = 0, max_id = 0;

		for (int i = 0; i < N; i++) {
			unsketched += docs[i].live && !docs[i].sketched;
			if (docs[i].id > max_id)
				max_id = docs[i].id;
		}
		docset_stats(fx.ds, &st);
		ck_assert_uint_eq(st.unsketched, unsketched);
		put_vdoc(&fx, &next, N);
		ck_assert_uint_eq(next.id, max_id + 1);
	}
	close_docs(&fx);
	tu_rmtree(fx.dir);
	free(fx.dir);
	free(docs);
}
END_TEST

Suite *docset_suite(void);

Suite *
docset_suite(void)
{
	Suite *s = suite_create("docset");
	TCase *tc = tcase_create("docset");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_put_with_neighbours);
	tcase_add_test(tc, test_groups);
	tcase_add_test(tc, test_abort_is_taken_back);
	tcase_add_test(tc, test_near_excludes_only_what_is_there);
	tcase_add_test(tc, test_near_and_reopen_against_brute_force);
	tcase_add_loop_test(tc, test_damaged_record_refuses_open, 0, 2);
	tcase_add_test(tc, test_term_hash_fixed_once_documents_exist);
	tcase_add_test(tc, test_store_failures_surface);
	tcase_add_test(tc, test_neighbours_visible_and_failing);
	tcase_add_test(tc, test_namespace_mask);
	tcase_add_loop_test(tc, test_namespaces, FROM_RECORDS, STALE_IMAGE);
	tcase_add_loop_test(tc, test_verified_against_model, FROM_RECORDS,
	    DAMAGED_IMAGE + 1);
	suite_add_tcase(s, tc);
	return s;
}
