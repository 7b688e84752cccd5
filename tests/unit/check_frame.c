/*
 * Tests for frame and request: the decoder without sockets (bytes go into
 * an evbuffer, which is plain memory): truncated, oversized, zero-length,
 * back-to-back and garbage frames, and request validation.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "arena.h"
#include "frame.h"
#include "request.h"
#include "testutil.h"

static void
add_header(struct evbuffer *b, uint32_t len)
{
	uint8_t h[4] = { len >> 24, len >> 16, len >> 8, len };

	evbuffer_add(b, h, 4);
}

START_TEST(test_truncated_and_complete)
{
	struct evbuffer *b = evbuffer_new();
	const uint8_t *p;
	uint32_t len;

	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "\0\0", 2);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "\0\5", 2);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "hel", 3);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "lo", 2);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_READY);
	ck_assert_uint_eq(len, 5);
	ck_assert_int_eq(memcmp(p, "hello", 5), 0);
	frame_consume(b, len);
	ck_assert_uint_eq(evbuffer_get_length(b), 0);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_oversized_before_payload)
{
	struct evbuffer *b = evbuffer_new();
	const uint8_t *p;
	uint32_t len;

	/* Only the header is here: the verdict needs no payload. */
	add_header(b, 101);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_OVERSIZED);
	ck_assert_uint_eq(len, 101);
	evbuffer_drain(b, 4);
	add_header(b, 0xffffffffu);
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_OVERSIZED);
	evbuffer_drain(b, 4);
	add_header(b, 100);	/* exactly the limit is fine */
	ck_assert_int_eq(frame_next(b, 100, &p, &len), FRAME_INCOMPLETE);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_zero_length_and_back_to_back)
{
	struct evbuffer *b = evbuffer_new();
	const uint8_t *p;
	uint32_t len;

	add_header(b, 0);
	add_header(b, 2);
	evbuffer_add(b, "ab", 2);
	add_header(b, 1);
	ck_assert_int_eq(frame_next(b, 10, &p, &len), FRAME_READY);
	ck_assert_uint_eq(len, 0);
	frame_consume(b, len);
	ck_assert_int_eq(frame_next(b, 10, &p, &len), FRAME_READY);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(memcmp(p, "ab", 2), 0);
	frame_consume(b, len);
	ck_assert_int_eq(frame_next(b, 10, &p, &len), FRAME_INCOMPLETE);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_write_round_trip)
{
	struct evbuffer *b = evbuffer_new();
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT, *got;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData urls[2] = { { 3, (uint8_t *)"a\0b" },
	    { 1, (uint8_t *)"c" } };
	struct request_limits lim = { .max_batch = 10 };
	struct arena a;
	const uint8_t *p;
	const char *msg;
	uint32_t len;

	arena_init(&a, 1024);
	req.id = 123456789012345ULL;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	batch.n_urls = 2;
	batch.urls = urls;
	req.url_check = &batch;
	ck_assert_int_eq(frame_write(b, &req.base), 0);
	ck_assert_int_eq(frame_next(b, 1000, &p, &len), FRAME_READY);
	got = request_decode(&a, p, len);
	ck_assert_ptr_nonnull(got);
	ck_assert_uint_eq(got->id, 123456789012345ULL);
	ck_assert_int_eq(request_validate(got, &lim, &msg),
	    NDDD__V1__CODE__OK);
	ck_assert_ptr_eq(request_url_batch(got), got->url_check);
	/* Bytes survive, embedded NUL included. */
	ck_assert_uint_eq(got->url_check->urls[0].len, 3);
	ck_assert_int_eq(memcmp(got->url_check->urls[0].data, "a\0b", 3), 0);
	lim.max_batch = 1;
	ck_assert_int_eq(request_validate(got, &lim, &msg),
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	arena_release(&a);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_garbage_and_empty_requests)
{
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t wrong_type[] = { 0x10, 0x01, 0x1a, 0x05, 'x' };
	struct request_limits lim = { .max_batch = 10 };
	struct arena a;
	Nddd__V1__Request *r;
	const char *msg;

	arena_init(&a, 1024);
	ck_assert_ptr_null(request_decode(&a, garbage, sizeof(garbage)));
	ck_assert_ptr_null(request_decode(&a, wrong_type, sizeof(wrong_type)));
	/* An empty payload is a valid, empty Request: refused politely. */
	r = request_decode(&a, (const uint8_t *)"", 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(request_validate(r, &lim, &msg),
	    NDDD__V1__CODE__INVALID_ARGUMENT);
	ck_assert_ptr_nonnull(msg);
	arena_release(&a);
}
END_TEST

START_TEST(test_random_bytes_never_crash)
{
	/* Random payloads, many of them valid-looking varints: each either
	 * fails to decode or decodes into a request that validates or is
	 * refused; under the sanitizers this also checks bounds. */
	struct request_limits lim = { .max_batch = 100 };
	uint64_t seed = 99;
	struct arena a;
	uint8_t buf[256];

	arena_init(&a, 4096);
	for (int n = 0; n < 200000; n++) {
		size_t len = tu_rand_below(&seed, sizeof(buf));
		Nddd__V1__Request *r;
		const char *msg;

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)tu_rand(&seed);
		if (len > 0 && n % 2)
			buf[0] = 0x12;	/* field 2, length-delimited */
		arena_reset(&a);
		r = request_decode(&a, buf, len);
		if (r != NULL)
			(void)request_validate(r, &lim, &msg);
	}
	arena_release(&a);
}
END_TEST

Suite *frame_suite(void);

Suite *
frame_suite(void)
{
	Suite *s = suite_create("frame");
	TCase *tc = tcase_create("frame");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_truncated_and_complete);
	tcase_add_test(tc, test_oversized_before_payload);
	tcase_add_test(tc, test_zero_length_and_back_to_back);
	tcase_add_test(tc, test_write_round_trip);
	tcase_add_test(tc, test_garbage_and_empty_requests);
	tcase_add_test(tc, test_random_bytes_never_crash);
	suite_add_tcase(s, tc);
	return s;
}
