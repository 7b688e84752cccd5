/*
 * Stores of other releases: a data directory written by nddd 0.1.0 (URL
 * store format 1, tests/data/store-v1) or by nddd 0.2.0 (format 2, with
 * changes left in its journal, tests/data/store-v2) opens, is upgraded in
 * place once, and answers exactly what that release answered; one of
 * format 3 (nddd 0.3, made here by taking the host index out of a new
 * store) gains an empty host index and forgets say they are incomplete; a
 * store of a newer format is refused with a message saying so, and not
 * one byte of it changes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "store.h"
#include "testutil.h"
#include "urlset.h"

/* A data directory of an earlier release, under tests/data. */
struct fixture {
	const char *dir;	/* tests/data/store-vN */
	const char *files[3];	/* its files, each stored as NAME.gz */
	const char *release;	/* the nddd that wrote it */
	int format;		/* its URL store format */
	size_t n_urls;		/* lines of expected.tsv */
	uint64_t stored;	/* URLs it holds */
	const char *replayed;	/* what the log says of its journal's
				   replay; NULL: nothing to replay */
	const char *doc_url;	/* its document, with what it was given */
	uint64_t simhash, group;
	const char *fresh;	/* a URL to submit after the upgrade */
};

static const struct fixture store_v1 = {
	.dir = "tests/data/store-v1",
	.files = { "data.mdb" },
	.release = "0.1.0",
	.format = 1,
	.n_urls = 300,
	.stored = 240,
	.doc_url = "http://v1.example/doc/1",
	.simhash = 0xfc413432173729b0ULL,
	.group = 1,
	.fresh = "http://v1.example/after-upgrade",
};

static const struct fixture store_v2 = {
	.dir = "tests/data/store-v2",
	.files = { "data.mdb", "urls.journal" },
	.release = "0.2.0",
	.format = 2,
	.n_urls = 320,
	.stored = 260,
	.replayed = "20 URL changes of 1 journal frames replayed",
	.doc_url = "http://v2.example/doc/1",
	.simhash = 0xfc413432173729b0ULL,
	.group = 1,
	.fresh = "http://v2.example/after-upgrade",
};

/* Unpacks fixture f into h's data directory. */
static void
unpack_fixture(struct harness *h, const struct fixture *f)
{
	ck_assert_int_eq(mkdir(h->data_dir, 0750), 0);
	for (size_t i = 0; i < 3 && f->files[i] != NULL; i++) {
		char *rel, *src, *cmd;

		ck_assert_int_ne(asprintf(&rel, "%s/%s.gz", f->dir,
		    f->files[i]), -1);
		src = tu_source_path(rel);
		ck_assert_int_ne(asprintf(&cmd, "gzip -dc '%s' > '%s/%s'",
		    src, h->data_dir, f->files[i]), -1);
		ck_assert_int_eq(system(cmd), 0);
		free(cmd);
		free(src);
		free(rel);
	}
}

/* A fixture's URLs with the counts its release gave them. */
struct expected {
	char *url[400];
	uint64_t count[400];
	size_t n;
};

static void
read_expected(struct expected *e, const struct fixture *f)
{
	char *rel, *path, *text, *line, *save = NULL;

	ck_assert_int_ne(asprintf(&rel, "%s/expected.tsv", f->dir), -1);
	path = tu_source_path(rel);
	text = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(text);
	e->n = 0;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char state[16], url[256];
		unsigned long long count;

		ck_assert_int_eq(sscanf(line, "%15s %llu %255s", state, &count,
		    url), 3);
		ck_assert_uint_lt(e->n, 400);
		e->url[e->n] = strdup(url);
		e->count[e->n++] = count;
	}
	free(text);
	free(path);
	free(rel);
	ck_assert_uint_eq(e->n, f->n_urls);
}

static void
free_expected(struct expected *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->url[i]);
}

static void
assert_expected(nddd_client *c, const struct expected *e,
    const struct fixture *f, const char *when)
{
	struct nddd_url_result res[400];

	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
	    (const char *const *)e->url, e->n, res, 100, 4, NULL, NULL), 0);
	for (size_t i = 0; i < e->n; i++)
		ck_assert_msg(res[i].code == NDDD_OK &&
		    res[i].count == e->count[i], "%s: %s has count %llu, "
		    "nddd %s said %llu", when, e->url[i],
		    (unsigned long long)res[i].count, f->release,
		    (unsigned long long)e->count[i]);
	nddd_urls_results_free(res, e->n);
}

/* The fixture's document, with the fingerprint and group it was given. */
static void
assert_document(nddd_client *c, const struct fixture *f)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_doc_get(c, f->doc_url, strlen(f->doc_url),
	    &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->kind == NDDD_REPLY_DOC, "doc_get: %s",
	    r->message ? r->message : "?");
	ck_assert_uint_eq(r->doc.simhash, f->simhash);
	ck_assert_uint_eq(r->doc.group, f->group);
	nddd_reply_free(r);
}

/* The text both releases' fixtures stored as their document. */
static const char fixture_text[] = "Oil prices rose sharply on Monday after "
    "the cartel agreed to cut output";

/* The neighbours of the fixture's text in the default namespace. */
static struct nddd_reply *
query_fixture_text(nddd_client *c)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_doc_query(c, fixture_text,
	    strlen(fixture_text), NDDD_TEXT, -1, &id), 0);
	ck_assert_ptr_nonnull(r = nddd_call(c, id));
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_QUERY);
	return r;
}

/*
 * The release's document was stored without a sketch: the stats count
 * it, and a verified query of its text keeps it by distance alone,
 * unverified; submitted again, it has a sketch, and the same query
 * verifies it.
 */
static void
assert_legacy_document(nddd_client *c, const struct fixture *f)
{
	struct nddd_stats st;
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.near_unsketched, 1);
	r = query_fixture_text(c);
	ck_assert_uint_eq(r->doc.near_total, 1);
	ck_assert_uint_eq(r->doc.near[0].doc_id, 1);
	ck_assert_uint_eq(r->doc.near[0].distance, 0);
	ck_assert_int_eq(r->doc.near[0].verified, 0);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_doc_submit(c, f->doc_url, strlen(f->doc_url),
	    fixture_text, strlen(fixture_text), NDDD_TEXT, 0, &id), 0);
	ck_assert_ptr_nonnull(r = nddd_call(c, id));
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
	ck_assert_uint_eq(r->doc.doc_id, 1);
	ck_assert(!r->doc.created);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.near_unsketched, 0);
	r = query_fixture_text(c);
	ck_assert_uint_eq(r->doc.near_total, 1);
	ck_assert_int_eq(r->doc.near[0].verified, 1);
	ck_assert(r->doc.near[0].resemblance == 1.0f);
	nddd_reply_free(r);
}

/*
 * The fixture's document stored again in namespace ns: a new document
 * there, with the same fingerprint, founding its own group, with no
 * neighbour (the release's document is the default namespace's).
 * Returns its id.
 */
static uint64_t
store_in_namespace(nddd_client *c, const struct fixture *f, const char *ns)
{
	struct nddd_reply *r;
	uint64_t id, doc_id;

	ck_assert_int_eq(nddd_set_doc_namespace(c, ns), 0);
	ck_assert_int_eq(nddd_send_doc_submit(c, f->doc_url,
	    strlen(f->doc_url), fixture_text, strlen(fixture_text), NDDD_TEXT,
	    0, &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->kind == NDDD_REPLY_DOC, "doc_submit: %s",
	    r->message ? r->message : "?");
	ck_assert(r->doc.created);
	ck_assert_uint_eq(r->doc.simhash, f->simhash);
	ck_assert_uint_ne(r->doc.doc_id, 1);
	ck_assert_uint_eq(r->doc.group, r->doc.doc_id);
	ck_assert_uint_eq(r->doc.near_total, 0);
	doc_id = r->doc.doc_id;
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_set_doc_namespace(c, NULL), 0);
	return doc_id;
}

/* The document of the fixture's URL in namespace ns has id doc_id. */
static void
assert_namespace_document(nddd_client *c, const struct fixture *f,
    const char *ns, uint64_t doc_id)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_set_doc_namespace(c, ns), 0);
	ck_assert_int_eq(nddd_send_doc_get(c, f->doc_url, strlen(f->doc_url),
	    &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
	ck_assert_uint_eq(r->doc.doc_id, doc_id);
	ck_assert_uint_eq(r->doc.near_total, 0);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_set_doc_namespace(c, NULL), 0);
}

static void
assert_consistent(nddd_client *c, uint64_t urls)
{
	struct nddd_verify v;

	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	ck_assert_uint_eq(v.urls, urls);
}

/* The fresh URL's count, from a submit or a check. */
static uint64_t
fresh_count(nddd_client *c, const struct fixture *f, enum nddd_url_op op)
{
	const char *urls[] = { f->fresh };
	struct nddd_url_result res[1];
	uint64_t count;

	ck_assert_int_eq(nddd_urls(c, op, urls, 1, res, 1, 1, NULL, NULL), 0);
	ck_assert_int_eq(res[0].code, NDDD_OK);
	count = res[0].count;
	nddd_urls_results_free(res, 1);
	return count;
}

/* The URL store format recorded in h's store (the daemon stopped). */
static int
store_format(const struct harness *h)
{
	struct store_options so = { .dir = h->data_dir,
	    .map_size = 64 << 20, .sync = STORE_SYNC_FULL };
	struct store *st;
	struct store_txn *txn;
	char *cause, buf[16];

	st = store_open(&so, &cause);
	ck_assert_msg(st != NULL, "%s", cause);
	txn = store_reader_new(st);
	ck_assert_ptr_nonnull(txn);
	ck_assert_int_eq(store_reader_begin(txn), STORE_OK);
	ck_assert_int_eq(store_meta_get(txn, "urls.format", buf, sizeof(buf)),
	    STORE_OK);
	store_reader_end(txn);
	store_reader_free(txn);
	store_close(st);
	return atoi(buf);
}

/*
 * Opens fixture f with this nddd: the upgrade is logged (and the journal's
 * replay, if it has one), every URL has the count its release gave, its
 * document is there, verify agrees, a submit goes through, the store is of
 * the current format; a second start upgrades nothing and answers the
 * same.
 */
static void
check_release_store(const struct fixture *f)
{
	struct harness h;
	struct expected e;
	nddd_client *c;
	char *log, upgrading[64];
	size_t first_len;
	uint64_t ns_doc;

	read_expected(&e, f);
	harness_init(&h, "[urls]\ncapacity = 1000\n");
	unpack_fixture(&h, f);
	harness_start(&h);
	log = tu_read_file(h.log_path, &first_len);
	snprintf(upgrading, sizeof(upgrading), "upgrading the URL store from "
	    "format %d", f->format);
	ck_assert_msg(log != NULL && strstr(log, upgrading) != NULL,
	    "the upgrade is not in the log");
	ck_assert_msg(f->replayed == NULL || strstr(log, f->replayed) != NULL,
	    "the journal's replay is not in the log");
	free(log);

	c = harness_client(&h);
	assert_expected(c, &e, f, "after the upgrade");
	assert_document(c, f);
	assert_consistent(c, f->stored);
	/* It goes on like any store, with documents in namespaces beside
	 * the release's, which stays the default namespace's. */
	ck_assert_uint_eq(fresh_count(c, f, NDDD_URL_SUBMIT), 1);
	ns_doc = store_in_namespace(c, f, "after-upgrade");
	assert_document(c, f);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	ck_assert_int_eq(store_format(&h), URLSET_FORMAT);

	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_ptr_nonnull(log);
	ck_assert_msg(strstr(log + first_len, "upgrading") == NULL,
	    "upgraded twice");
	free(log);
	c = harness_client(&h);
	assert_expected(c, &e, f, "after a restart");
	assert_document(c, f);
	assert_namespace_document(c, f, "after-upgrade", ns_doc);
	ck_assert_uint_eq(fresh_count(c, f, NDDD_URL_CHECK), 1);
	assert_consistent(c, f->stored + 1);
	/* The host index holds the URL stored since, not the release's: a
	 * forget finds the one and says it could not look at the others. */
	{
		uint64_t id;
		struct nddd_reply *r;

		ck_assert_int_eq(nddd_send_url_forget_prefix(c, "", f->fresh,
		    strlen(f->fresh), &id), 0);
		ck_assert_ptr_nonnull(r = nddd_call(c, id));
		ck_assert_int_eq(r->kind, NDDD_REPLY_FORGET);
		ck_assert_uint_eq(r->forgotten, 1);
		ck_assert_int_eq(r->complete, 0);
		nddd_reply_free(r);
	}
	ck_assert_uint_eq(fresh_count(c, f, NDDD_URL_CHECK), 0);
	assert_consistent(c, f->stored);
	assert_legacy_document(c, f);
	assert_document(c, f);
	assert_consistent(c, f->stored);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	free_expected(&e);
}

START_TEST(test_store_v1_opens)
{
	check_release_store(&store_v1);
}
END_TEST

START_TEST(test_store_v2_opens)
{
	check_release_store(&store_v2);
}
END_TEST

/* A url_forget of host in the default namespace: how many, and whether
 * the index held every stored URL. */
static uint64_t
forget_host(nddd_client *c, const char *host, int *complete)
{
	struct nddd_reply *r;
	uint64_t id, n;

	ck_assert_int_eq(nddd_send_url_forget_host(c, "", host, 0, &id), 0);
	ck_assert_ptr_nonnull(r = nddd_call(c, id));
	ck_assert_int_eq(r->kind, NDDD_REPLY_FORGET);
	n = r->forgotten;
	*complete = r->complete;
	nddd_reply_free(r);
	return n;
}

/*
 * A store of format 3 (nddd 0.3: format 4 less the host index) becomes
 * format 4 at the first start without a rewrite: its URLs stay, the index
 * starts empty, and every forget says it could not look at them.
 */
START_TEST(test_format3_store_gains_index)
{
	struct store_options so = { .map_size = 64 << 20,
	    .sync = STORE_SYNC_FULL };
	const char *old[] = { "http://old.example/a" };
	const char *fresh[] = { "http://fresh.example/b" };
	struct nddd_url_result res[1];
	struct harness h;
	struct store *st;
	struct store_txn *txn;
	nddd_client *c;
	char *cause, *log;
	int complete;

	harness_init(&h, NULL);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, old, 1, res, 1, 1,
	    NULL, NULL), 0);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	/* What nddd 0.3 would have left: no host index, format 3. */
	so.dir = h.data_dir;
	st = store_open(&so, &cause);
	ck_assert_msg(st != NULL, "%s", cause);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_drop(txn, STORE_URL_HOSTS), STORE_OK);
	ck_assert_int_eq(store_meta_put(txn, "urls.format", "3"), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(st);

	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(log, "not in the host index") !=
	    NULL, "the log does not say the index misses URLs");
	free(log);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, old, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_urls_results_free(res, 1);
	ck_assert_uint_eq(forget_host(c, "old.example", &complete), 0);
	ck_assert_int_eq(complete, 0);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, fresh, 1, res, 1, 1,
	    NULL, NULL), 0);
	nddd_urls_results_free(res, 1);
	ck_assert_uint_eq(forget_host(c, "fresh.example", &complete), 1);
	ck_assert_int_eq(complete, 0);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	ck_assert_int_eq(store_format(&h), URLSET_FORMAT);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_newer_format_is_refused)
{
	struct store_options so = { .map_size = 64 << 20,
	    .sync = STORE_SYNC_FULL };
	struct harness h;
	struct store *st;
	struct store_txn *txn;
	char *cause, *output, *before, *after, path[512];
	size_t blen, alen;

	harness_init(&h, NULL);
	harness_start(&h);
	ck_assert_int_eq(harness_stop(&h), 0);
	so.dir = h.data_dir;
	st = store_open(&so, &cause);
	ck_assert_msg(st != NULL, "%s", cause);
	ck_assert_int_eq(store_write_begin(st, &txn), STORE_OK);
	ck_assert_int_eq(store_meta_put(txn, "urls.format", "5"), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(st);
	snprintf(path, sizeof(path), "%s/data.mdb", h.data_dir);
	before = tu_read_file(path, &blen);
	ck_assert_ptr_nonnull(before);

	ck_assert_int_eq(harness_start_failing(&h, &output), 1);
	ck_assert_msg(output != NULL && strstr(output, "format 5") != NULL &&
	    strstr(output, "nothing was changed") != NULL, "%s",
	    output ? output : "(no output)");
	after = tu_read_file(path, &alen);
	ck_assert_ptr_nonnull(after);
	ck_assert_msg(alen == blen && memcmp(before, after, blen) == 0,
	    "the refused store changed");
	free(output);
	free(before);
	free(after);
	harness_cleanup(&h);
}
END_TEST

Suite *upgrade_suite(void);

Suite *
upgrade_suite(void)
{
	Suite *s = suite_create("upgrade");
	TCase *tc = tcase_create("upgrade");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_store_v1_opens);
	tcase_add_test(tc, test_store_v2_opens);
	tcase_add_test(tc, test_newer_format_is_refused);
	tcase_add_test(tc, test_format3_store_gains_index);
	suite_add_tcase(s, tc);
	return s;
}
