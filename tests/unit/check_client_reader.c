/*
 * Tests for libnddd's reply reader (clients/libnddd/reader.c), with no
 * socket: Responses packed by the protocol code, framed as the daemon
 * frames them, fed byte by byte and in one piece, and the struct
 * nddd_reply that comes out checked; frames over the limit, malformed
 * ones, and replies naming items they do not have.
 *
 * The unit tests link the daemon's core library, not the client's: the
 * reader, which needs no other file of libnddd, is compiled in here.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../clients/libnddd/reader.c"

/* resp packed, with its 4-byte big-endian length first; *len its size. */
static unsigned char *
frame_of(const Nddd__V1__Response *resp, size_t *len)
{
	size_t n = nddd__v1__response__get_packed_size(resp);
	unsigned char *f = malloc(4 + n);

	ck_assert_ptr_nonnull(f);
	f[0] = (unsigned char)(n >> 24);
	f[1] = (unsigned char)(n >> 16);
	f[2] = (unsigned char)(n >> 8);
	f[3] = (unsigned char)n;
	nddd__v1__response__pack(resp, f + 4);
	*len = 4 + n;
	return f;
}

/* Feeds rd the frame of resp, whole. */
static void
feed_response(struct reader *rd, const Nddd__V1__Response *resp)
{
	size_t len;
	unsigned char *f = frame_of(resp, &len);

	ck_assert_int_eq(reader_feed(rd, f, len), 0);
	free(f);
}

/* That rd has no complete reply now. */
static void
expect_none(struct reader *rd)
{
	struct nddd_reply *r;

	ck_assert_int_eq(reader_get(rd, &r), 0);
	ck_assert_ptr_null(r);
}

/* That rd refuses its next frame, saying err. */
static void
expect_error(struct reader *rd, const char *err)
{
	struct nddd_reply *r;

	ck_assert_int_eq(reader_get(rd, &r), -1);
	ck_assert_ptr_null(r);
	ck_assert_str_eq(rd->err, err);
}

/* rd's next reply, which must come (the caller frees it). */
static struct nddd_reply *
next_reply(struct reader *rd)
{
	struct nddd_reply *r;

	ck_assert_int_eq(reader_get(rd, &r), 0);
	ck_assert_ptr_nonnull(r);
	return r;
}

/*
 * A URL batch's reply (id 7, from a shard of 3): counts 1, 2 and 0, the
 * third refused, and the times of each.
 */
static const Nddd__V1__Response *
url_response(void)
{
	static uint64_t counts[] = { 1, 2, 0 };
	static uint64_t first[] = { 1000, 2000, 0 };
	static uint64_t last[] = { 1001, 2001, 0 };
	static uint64_t expires[] = { 0, 5000, 0 };
	static Nddd__V1__Status st = NDDD__V1__STATUS__INIT;
	static Nddd__V1__ItemError err = NDDD__V1__ITEM_ERROR__INIT;
	static Nddd__V1__ItemError *errs[] = { &err };
	static Nddd__V1__UrlResults urls = NDDD__V1__URL_RESULTS__INIT;
	static Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;

	st.code = NDDD__V1__CODE__INVALID_ARGUMENT;
	st.message = (char *)"not a URL";
	err.index = 2;
	err.status = &st;
	urls.n_counts = 3;
	urls.counts = counts;
	urls.n_errors = 1;
	urls.errors = errs;
	urls.n_first_seen_ms = urls.n_last_seen_ms = urls.n_expires_ms = 3;
	urls.first_seen_ms = first;
	urls.last_seen_ms = last;
	urls.expires_ms = expires;
	resp.id = 7;
	resp.shards = 3;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &urls;
	return &resp;
}

/* That rd's next reply is url_response's, and frees it. */
static void
expect_url_reply(struct reader *rd)
{
	struct nddd_reply *r = next_reply(rd);

	ck_assert_uint_eq(r->id, 7);
	ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
	ck_assert_uint_eq(r->nresults, 3);
	ck_assert_uint_eq(r->results[0].count, 1);
	ck_assert_int_eq(r->results[0].code, NDDD_OK);
	ck_assert_ptr_null(r->results[0].message);
	ck_assert_uint_eq(r->results[1].count, 2);
	ck_assert_uint_eq(r->results[1].first_seen_ms, 2000);
	ck_assert_uint_eq(r->results[1].last_seen_ms, 2001);
	ck_assert_uint_eq(r->results[1].expires_ms, 5000);
	ck_assert_int_eq(r->results[2].code, NDDD_INVALID_ARGUMENT);
	ck_assert_str_eq(r->results[2].message, "not a URL");
	ck_assert_uint_eq(rd->shards, 3);
	nddd_reply_free(r);
}

static const uint8_t doc_sketch[] = { 1, 2, 3, 4, 5 };

/* A document's reply (id 8): its URL, a neighbour, its sketch. */
static const Nddd__V1__Response *
doc_response(void)
{
	static Nddd__V1__Neighbour nb = NDDD__V1__NEIGHBOUR__INIT;
	static Nddd__V1__Neighbour *near[] = { &nb };
	static Nddd__V1__DocResult d = NDDD__V1__DOC_RESULT__INIT;
	static Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;

	nb.doc_id = 41;
	nb.url.data = (uint8_t *)"http://b.example/";
	nb.url.len = strlen("http://b.example/");
	nb.distance = 3;
	nb.group = 40;
	d.doc_id = 42;
	d.simhash = 0x0123456789abcdefULL;
	d.group = 40;
	d.n_near = 1;
	d.near = near;
	d.near_total = 1;
	d.url.data = (uint8_t *)"http://a.example/";
	d.url.len = strlen("http://a.example/");
	d.created = 1;
	d.sketch.data = (uint8_t *)doc_sketch;
	d.sketch.len = sizeof(doc_sketch);
	resp.id = 8;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_DOC;
	resp.doc = &d;
	return &resp;
}

/* That rd's next reply is doc_response's, and frees it. */
static void
expect_doc_reply(struct reader *rd)
{
	struct nddd_reply *r = next_reply(rd);

	ck_assert_uint_eq(r->id, 8);
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
	ck_assert_uint_eq(r->doc.doc_id, 42);
	ck_assert_uint_eq(r->doc.simhash, 0x0123456789abcdefULL);
	ck_assert_str_eq(r->doc.url, "http://a.example/");
	ck_assert_uint_eq(r->doc.url_len, strlen("http://a.example/"));
	ck_assert_int_eq(r->doc.created, 1);
	ck_assert_uint_eq(r->doc.nnear, 1);
	ck_assert_uint_eq(r->doc.near[0].doc_id, 41);
	ck_assert_uint_eq(r->doc.near[0].distance, 3);
	ck_assert_str_eq(r->doc.near[0].url, "http://b.example/");
	ck_assert_uint_eq(r->doc.sketch_len, sizeof(doc_sketch));
	ck_assert_mem_eq(r->doc.sketch, doc_sketch, sizeof(doc_sketch));
	/* This reply said no shards. */
	ck_assert_uint_eq(rd->shards, 0);
	nddd_reply_free(r);
}

/* Byte by byte: nothing comes out until the frame's last byte is in. */
START_TEST(test_byte_by_byte)
{
	struct reader *rd = reader_new();
	size_t len;
	unsigned char *f = frame_of(url_response(), &len);

	ck_assert_ptr_nonnull(rd);
	expect_none(rd);
	for (size_t i = 0; i + 1 < len; i++) {
		ck_assert_int_eq(reader_feed(rd, f + i, 1), 0);
		expect_none(rd);
	}
	ck_assert_int_eq(reader_feed(rd, f + len - 1, 1), 0);
	expect_url_reply(rd);
	expect_none(rd);
	free(f);
	reader_free(rd);
}
END_TEST

/* Two frames in one piece come out in order, then nothing. */
START_TEST(test_one_piece)
{
	struct reader *rd = reader_new();
	size_t ulen, dlen;
	unsigned char *u = frame_of(url_response(), &ulen);
	unsigned char *d = frame_of(doc_response(), &dlen);
	unsigned char *both = malloc(ulen + dlen);

	ck_assert_ptr_nonnull(both);
	memcpy(both, u, ulen);
	memcpy(both + ulen, d, dlen);
	ck_assert_int_eq(reader_feed(rd, both, ulen + dlen), 0);
	expect_url_reply(rd);
	expect_doc_reply(rd);
	expect_none(rd);
	free(u);
	free(d);
	free(both);
	reader_free(rd);
}
END_TEST

/* Written into the reader's own space, as nddd_recv reads a socket. */
START_TEST(test_space)
{
	struct reader *rd = reader_new();
	unsigned char *p;
	size_t len, room;
	unsigned char *f = frame_of(doc_response(), &len);

	p = reader_space(rd, len, &room);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_ge(room, len);
	memcpy(p, f, len - 1);
	reader_wrote(rd, len - 1);
	expect_none(rd);
	p = reader_space(rd, 1, &room);
	ck_assert_ptr_nonnull(p);
	*p = f[len - 1];
	reader_wrote(rd, 1);
	expect_doc_reply(rd);
	free(f);
	reader_free(rd);
}
END_TEST

/* A refusal: the error's code and message. */
START_TEST(test_error_reply)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__Status st = NDDD__V1__STATUS__INIT;
	struct reader *rd = reader_new();
	struct nddd_reply *r;

	st.code = NDDD__V1__CODE__PERMISSION_DENIED;
	st.message = (char *)"a token of role read";
	resp.id = 9;
	resp.status = &st;
	feed_response(rd, &resp);
	r = next_reply(rd);
	ck_assert_uint_eq(r->id, 9);
	ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_PERMISSION_DENIED);
	ck_assert_str_eq(r->message, "a token of role read");
	ck_assert_str_eq(nddd_code_name(r->code), "PERMISSION_DENIED");
	nddd_reply_free(r);
	reader_free(rd);
}
END_TEST

/* A frame over the limit is refused from its length alone, and stays. */
START_TEST(test_oversized)
{
	struct reader *rd = reader_new();
	size_t len;
	unsigned char *f = frame_of(url_response(), &len);
	char err[64];

	rd->max_frame = len - 5;
	ck_assert_int_eq(reader_feed(rd, f, 4), 0);
	snprintf(err, sizeof(err), "reply of %zu bytes exceeds the client's "
	    "limit", len - 4);
	expect_error(rd, err);
	expect_error(rd, err);
	free(f);
	reader_free(rd);
}
END_TEST

/* A malformed frame is dropped with an error; the next one reads. */
START_TEST(test_malformed)
{
	static const unsigned char junk[] = { 0, 0, 0, 3, 0xff, 0xff, 0xff };
	struct reader *rd = reader_new();

	ck_assert_int_eq(reader_feed(rd, junk, sizeof(junk)), 0);
	feed_response(rd, doc_response());
	expect_error(rd, "malformed reply");
	expect_doc_reply(rd);
	reader_free(rd);
}
END_TEST

/* An item error past the results is the reply's fault, not a crash. */
START_TEST(test_item_out_of_range)
{
	static uint64_t counts[] = { 1 };
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__UrlResults urls = NDDD__V1__URL_RESULTS__INIT;
	Nddd__V1__ItemError err = NDDD__V1__ITEM_ERROR__INIT;
	Nddd__V1__ItemError *errs[] = { &err };
	struct reader *rd = reader_new();

	err.index = 5;
	urls.n_counts = 1;
	urls.counts = counts;
	urls.n_errors = 1;
	urls.errors = errs;
	resp.id = 10;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &urls;
	feed_response(rd, &resp);
	expect_error(rd, "reply names item 5 of 1");
	expect_none(rd);
	reader_free(rd);
}
END_TEST

Suite *client_reader_suite(void);

Suite *
client_reader_suite(void)
{
	Suite *s = suite_create("client_reader");
	TCase *tc = tcase_create("client_reader");

	tcase_add_test(tc, test_byte_by_byte);
	tcase_add_test(tc, test_one_piece);
	tcase_add_test(tc, test_space);
	tcase_add_test(tc, test_error_reply);
	tcase_add_test(tc, test_oversized);
	tcase_add_test(tc, test_malformed);
	tcase_add_test(tc, test_item_out_of_range);
	suite_add_tcase(s, tc);
	return s;
}
