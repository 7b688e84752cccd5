/*
 * Tests for reply: what a client receives for its request whatever went
 * wrong while the answer was built.  Replies here have no connection:
 * reply_take_frames gives the frames reply_finish would send.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include <event2/buffer.h>

#include "frame.h"
#include "nddd.pb-c.h"
#include "reply.h"
#include "store.h"

static struct reply
new_reply(uint64_t id, size_t max_frame)
{
	return (struct reply){ .id = id, .max_frame = max_frame };
}

/* The one frame in frames, decoded (frames are freed). */
static Nddd__V1__Response *
only_response(struct evbuffer *frames)
{
	Nddd__V1__Response *r;
	uint8_t *p;
	uint32_t len;

	ck_assert_ptr_nonnull(frames);
	ck_assert_int_eq(frame_peek(frames, 1 << 20, &len), FRAME_READY);
	p = malloc(len + 1);
	ck_assert_ptr_nonnull(p);
	frame_copy(frames, len, p);
	r = nddd__v1__response__unpack(NULL, len, p);
	free(p);
	ck_assert_ptr_nonnull(r);
	frame_consume(frames, len);
	ck_assert_uint_eq(evbuffer_get_length(frames), 0);
	evbuffer_free(frames);
	return r;
}

static void
assert_status(Nddd__V1__Response *r, uint64_t id, Nddd__V1__Code code)
{
	ck_assert_uint_eq(r->id, id);
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, code);
	ck_assert_ptr_nonnull(r->status->message);
	nddd__v1__response__free_unpacked(r, NULL);
}

/* A UrlResults message of n counts, for request id. */
static void
add_results(struct reply *rp, size_t n)
{
	Nddd__V1__Response resp = NDDD__V1__RESPONSE__INIT;
	Nddd__V1__UrlResults res = NDDD__V1__URL_RESULTS__INIT;
	uint64_t *counts = calloc(n + 1, sizeof(*counts));

	for (size_t i = 0; i < n; i++)
		counts[i] = i;
	res.n_counts = n;
	res.counts = counts;
	resp.id = rp->id;
	resp.result_case = NDDD__V1__RESPONSE__RESULT_URLS;
	resp.urls = &res;
	reply_message(rp, &resp.base);
	free(counts);
}

static bool
always(void)
{
	return true;
}

START_TEST(test_answer_goes_out_whole)
{
	struct reply rp = new_reply(7, 1 << 20);
	Nddd__V1__Response *r;

	add_results(&rp, 1000);
	ck_assert(!rp.refused);
	r = only_response(reply_take_frames(&rp));
	ck_assert_uint_eq(r->id, 7);
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_URLS);
	ck_assert_uint_eq(r->urls->n_counts, 1000);
	ck_assert_uint_eq(r->urls->counts[999], 999);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert(!rp.refused);
}
END_TEST

START_TEST(test_lost_frame_becomes_internal)
{
	/* Out of memory while the answer is written: the client still gets
	 * an answer to its id, and the request counts as refused. */
	struct reply rp = new_reply(42, 1 << 20);

	reply_fault_hook = always;
	add_results(&rp, 10);
	reply_fault_hook = NULL;
	ck_assert(rp.lost);
	assert_status(only_response(reply_take_frames(&rp)), 42,
	    NDDD__V1__CODE__INTERNAL);
	ck_assert(rp.refused);
}
END_TEST

START_TEST(test_lost_error_becomes_internal)
{
	/* An error that cannot be written: the same. */
	struct reply rp = new_reply(43, 1 << 20);

	reply_fault_hook = always;
	reply_error(&rp, NDDD__V1__CODE__NOT_FOUND, "no document has this URL");
	reply_fault_hook = NULL;
	assert_status(only_response(reply_take_frames(&rp)), 43,
	    NDDD__V1__CODE__INTERNAL);
}
END_TEST

START_TEST(test_nothing_answered_becomes_internal)
{
	struct reply rp = new_reply(44, 1 << 20);

	assert_status(only_response(reply_take_frames(&rp)), 44,
	    NDDD__V1__CODE__INTERNAL);
	ck_assert(rp.refused);
}
END_TEST

START_TEST(test_reply_over_the_frame_limit_is_refused)
{
	/* 1,000 counts pack to about 2 KB: past a 1 KB limit the client
	 * gets RESOURCE_EXHAUSTED for its id instead of a frame it would
	 * refuse. */
	struct reply rp = new_reply(45, 1024);

	add_results(&rp, 1000);
	ck_assert(rp.refused);
	ck_assert(!rp.lost);
	assert_status(only_response(reply_take_frames(&rp)), 45,
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	/* At the limit exactly, it goes out. */
	{
		struct reply fits = new_reply(46, 1 << 20);
		struct evbuffer *frames;
		size_t len;

		add_results(&fits, 1000);
		frames = reply_take_frames(&fits);
		len = evbuffer_get_length(frames) - FRAME_HEADER_LEN;
		evbuffer_free(frames);
		fits = new_reply(46, len);
		add_results(&fits, 1000);
		ck_assert(!fits.refused);
		frames = reply_take_frames(&fits);
		ck_assert_uint_eq(evbuffer_get_length(frames),
		    len + FRAME_HEADER_LEN);
		evbuffer_free(frames);
	}
}
END_TEST

START_TEST(test_store_errors)
{
	struct reply full = new_reply(1, 1 << 20), io = new_reply(2, 1 << 20);
	struct reply disk = new_reply(3, 1 << 20);

	reply_store_error(&full, STORE_FULL);
	assert_status(only_response(reply_take_frames(&full)), 1,
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	reply_store_error(&io, EIO);
	assert_status(only_response(reply_take_frames(&io)), 2,
	    NDDD__V1__CODE__INTERNAL);
	reply_store_error(&disk, STORE_NOSPACE);
	assert_status(only_response(reply_take_frames(&disk)), 3,
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	ck_assert(full.refused && io.refused && disk.refused);
}
END_TEST

START_TEST(test_moved_reply_has_nothing_to_finish)
{
	struct reply from = new_reply(9, 1 << 20), to;

	from.conn = (struct conn *)&from;	/* any non-NULL: not used */
	reply_move(&to, &from);
	ck_assert_ptr_null(from.conn);
	ck_assert_ptr_eq(to.conn, (struct conn *)&from);
	ck_assert_uint_eq(to.id, 9);
	reply_finish(&from);	/* nothing: it was moved */
}
END_TEST

Suite *reply_suite(void);

Suite *
reply_suite(void)
{
	Suite *s = suite_create("reply");
	TCase *tc = tcase_create("reply");

	tcase_add_test(tc, test_answer_goes_out_whole);
	tcase_add_test(tc, test_lost_frame_becomes_internal);
	tcase_add_test(tc, test_lost_error_becomes_internal);
	tcase_add_test(tc, test_nothing_answered_becomes_internal);
	tcase_add_test(tc, test_reply_over_the_frame_limit_is_refused);
	tcase_add_test(tc, test_store_errors);
	tcase_add_test(tc, test_moved_reply_has_nothing_to_finish);
	suite_add_tcase(s, tc);
	return s;
}
