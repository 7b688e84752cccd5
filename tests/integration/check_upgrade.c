/*
 * Stores of other releases: a data directory written by nddd 0.1.0 (URL
 * store format 1, tests/data/store-v1) opens, is upgraded in place, and
 * answers exactly what that release answered; a store of a newer format is
 * refused with a message saying so, and not one byte of it changes.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "store.h"
#include "testutil.h"

/* Unpacks the format 1 fixture into h's data directory. */
static void
unpack_fixture(struct harness *h)
{
	char *src = tu_source_path("tests/data/store-v1/data.mdb.gz"), *cmd;

	ck_assert_int_eq(mkdir(h->data_dir, 0750), 0);
	ck_assert_int_ne(asprintf(&cmd, "gzip -dc '%s' > '%s/data.mdb'", src,
	    h->data_dir), -1);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	free(src);
}

/* The fixture's URLs with the counts nddd 0.1.0 gave them. */
struct expected {
	char *url[400];
	uint64_t count[400];
	size_t n;
};

static void
read_expected(struct expected *e)
{
	char *path = tu_source_path("tests/data/store-v1/expected.tsv");
	char *text = tu_read_file(path, NULL), *line, *save = NULL;

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
	ck_assert_uint_eq(e->n, 300);
}

static void
assert_expected(nddd_client *c, const struct expected *e, const char *when)
{
	struct nddd_url_result res[400];

	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
	    (const char *const *)e->url, e->n, res, 100, 4, NULL, NULL), 0);
	for (size_t i = 0; i < e->n; i++)
		ck_assert_msg(res[i].code == NDDD_OK &&
		    res[i].count == e->count[i], "%s: %s has count %llu, "
		    "nddd 0.1.0 said %llu", when, e->url[i],
		    (unsigned long long)res[i].count,
		    (unsigned long long)e->count[i]);
	nddd_urls_results_free(res, e->n);
}

START_TEST(test_previous_release_store_opens)
{
	struct harness h;
	struct expected e;
	struct nddd_verify v;
	struct nddd_reply *r;
	const char *fresh[] = { "http://v1.example/after-upgrade" };
	struct nddd_url_result res[1];
	nddd_client *c;
	uint64_t id;
	char *log;

	read_expected(&e);
	harness_init(&h, "[urls]\ncapacity = 1000\n");
	unpack_fixture(&h);
	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(log, "upgrading the URL store "
	    "from format 1") != NULL, "the upgrade is not in the log");
	free(log);

	c = harness_client(&h);
	assert_expected(c, &e, "after the upgrade");
	/* Its document, with the fingerprint and group it was given. */
	ck_assert_int_eq(nddd_send_doc_get(c, "http://v1.example/doc/1", 23,
	    &id), 0);
	r = nddd_call(c, id);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(r->kind == NDDD_REPLY_DOC, "doc_get: %s",
	    r->message ? r->message : "?");
	ck_assert_uint_eq(r->doc.simhash, 0xfc413432173729b0ULL);
	ck_assert_uint_eq(r->doc.group, 1);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	ck_assert_uint_eq(v.urls, 240);
	/* It goes on like any store. */
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, fresh, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);

	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(log != NULL && strstr(strstr(log, "upgrading") + 1,
	    "upgrading") == NULL, "upgraded twice");
	free(log);
	c = harness_client(&h);
	assert_expected(c, &e, "after a restart");
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, fresh, 1, res, 1, 1,
	    NULL, NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
	for (size_t i = 0; i < e.n; i++)
		free(e.url[i]);
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
	ck_assert_int_eq(store_meta_put(txn, "urls.format", "4"), STORE_OK);
	ck_assert_int_eq(store_commit(txn), STORE_OK);
	store_close(st);
	snprintf(path, sizeof(path), "%s/data.mdb", h.data_dir);
	before = tu_read_file(path, &blen);
	ck_assert_ptr_nonnull(before);

	ck_assert_int_eq(harness_start_failing(&h, &output), 1);
	ck_assert_msg(output != NULL && strstr(output, "format 4") != NULL &&
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
	tcase_add_test(tc, test_previous_release_store_opens);
	tcase_add_test(tc, test_newer_format_is_refused);
	suite_add_tcase(s, tc);
	return s;
}
