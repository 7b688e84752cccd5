/*
 * Tests for frame, request and operation: the decoder without sockets
 * (bytes go into an evbuffer, which is plain memory): truncated, oversized,
 * zero-length, back-to-back and garbage frames; the memory decoding may
 * take; the operation table against the protocol's own description; and
 * request validation.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "arena.h"
#include "frame.h"
#include "operation.h"
#include "request.h"
#include "testutil.h"

static void
add_header(struct evbuffer *b, uint32_t len)
{
	uint8_t h[4] = { len >> 24, len >> 16, len >> 8, len };

	evbuffer_add(b, h, 4);
}

/*
 * A frame whose bytes lie in many chains (as reads of a socket leave a
 * large one): frame_peek sees it whole without moving a byte, frame_copy
 * gives its payload exactly, and frame_consume leaves the next frame.
 */
START_TEST(test_copy_across_chains)
{
	enum { LEN = 300000 };
	struct evbuffer *b = evbuffer_new();
	uint8_t *payload = malloc(LEN), *out = malloc(LEN + 1);
	uint32_t len;
	size_t at = 0;
	uint64_t seed = 3;

	ck_assert_ptr_nonnull(payload);
	ck_assert_ptr_nonnull(out);
	for (size_t i = 0; i < LEN; i++)
		payload[i] = (uint8_t)tu_rand(&seed);
	add_header(b, LEN);
	/* Pieces of odd sizes, each its own chain. */
	while (at < LEN) {
		size_t n = 1 + tu_rand_below(&seed, 40000);

		if (n > LEN - at)
			n = LEN - at;
		evbuffer_add_reference(b, payload + at, n, NULL, NULL);
		at += n;
	}
	add_header(b, 1);
	evbuffer_add(b, "z", 1);
	ck_assert_int_eq(frame_peek(b, LEN - 1, &len), FRAME_OVERSIZED);
	ck_assert_int_eq(frame_peek(b, LEN, &len), FRAME_READY);
	ck_assert_uint_eq(len, LEN);
	out[LEN] = 0xee;
	frame_copy(b, len, out);
	ck_assert_int_eq(memcmp(out, payload, LEN), 0);
	ck_assert_uint_eq(out[LEN], 0xee);
	frame_consume(b, len);
	ck_assert_int_eq(frame_peek(b, 10, &len), FRAME_READY);
	ck_assert_uint_eq(len, 1);
	frame_copy(b, len, out);
	ck_assert_uint_eq(out[0], 'z');
	evbuffer_free(b);
	free(payload);
	free(out);
}
END_TEST

START_TEST(test_truncated_and_complete)
{
	struct evbuffer *b = evbuffer_new();
	uint8_t p[5];
	uint32_t len;

	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "\0\0", 2);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "\0\5", 2);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "hel", 3);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_INCOMPLETE);
	evbuffer_add(b, "lo", 2);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_READY);
	ck_assert_uint_eq(len, 5);
	frame_copy(b, len, p);
	ck_assert_int_eq(memcmp(p, "hello", 5), 0);
	frame_consume(b, len);
	ck_assert_uint_eq(evbuffer_get_length(b), 0);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_oversized_before_payload)
{
	struct evbuffer *b = evbuffer_new();
	uint32_t len;

	/* Only the header is here: the verdict needs no payload. */
	add_header(b, 101);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_OVERSIZED);
	ck_assert_uint_eq(len, 101);
	evbuffer_drain(b, 4);
	add_header(b, 0xffffffffu);
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_OVERSIZED);
	evbuffer_drain(b, 4);
	add_header(b, 100);	/* exactly the limit is fine */
	ck_assert_int_eq(frame_peek(b, 100, &len), FRAME_INCOMPLETE);
	evbuffer_free(b);
}
END_TEST

START_TEST(test_zero_length_and_back_to_back)
{
	struct evbuffer *b = evbuffer_new();
	uint8_t p[2];
	uint32_t len;

	add_header(b, 0);
	add_header(b, 2);
	evbuffer_add(b, "ab", 2);
	add_header(b, 1);
	ck_assert_int_eq(frame_peek(b, 10, &len), FRAME_READY);
	ck_assert_uint_eq(len, 0);
	frame_consume(b, len);
	ck_assert_int_eq(frame_peek(b, 10, &len), FRAME_READY);
	ck_assert_uint_eq(len, 2);
	frame_copy(b, len, p);
	ck_assert_int_eq(memcmp(p, "ab", 2), 0);
	frame_consume(b, len);
	ck_assert_int_eq(frame_peek(b, 10, &len), FRAME_INCOMPLETE);
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
	const struct operation *op;
	struct arena a;
	uint8_t p[64];
	const char *msg;
	uint32_t len;

	arena_init(&a, 1024);
	req.id = 123456789012345ULL;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	batch.n_urls = 2;
	batch.urls = urls;
	req.url_check = &batch;
	ck_assert_int_eq(frame_write(b, &req.base), 0);
	ck_assert_int_eq(frame_peek(b, 1000, &len), FRAME_READY);
	ck_assert_uint_le(len, sizeof(p));
	frame_copy(b, len, p);
	ck_assert_int_eq(request_decode(&a, p, len, &lim, &got, &msg),
	    NDDD__V1__CODE__OK);
	ck_assert_uint_eq(got->id, 123456789012345ULL);
	op = operation_of(got);
	ck_assert_str_eq(op->name, "url_check");
	ck_assert_int_eq(operation_role(op, got), ROLE_READ);
	ck_assert_int_eq(operation_validate(op, got, &lim, &msg),
	    NDDD__V1__CODE__OK);
	/* Bytes survive, embedded NUL included. */
	ck_assert_uint_eq(got->url_check->urls[0].len, 3);
	ck_assert_int_eq(memcmp(got->url_check->urls[0].data, "a\0b", 3), 0);
	lim.max_batch = 1;
	ck_assert_int_eq(operation_validate(op, got, &lim, &msg),
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
	ck_assert_int_eq(request_decode(&a, garbage, sizeof(garbage), &lim,
	    &r, &msg), NDDD__V1__CODE__INVALID_ARGUMENT);
	ck_assert_ptr_null(r);
	ck_assert_int_eq(request_decode(&a, wrong_type, sizeof(wrong_type),
	    &lim, &r, &msg), NDDD__V1__CODE__INVALID_ARGUMENT);
	/* An empty payload is a valid, empty Request: refused politely. */
	ck_assert_int_eq(request_decode(&a, (const uint8_t *)"", 0, &lim, &r,
	    &msg), NDDD__V1__CODE__OK);
	ck_assert_str_eq(operation_of(r)->name, "invalid");
	msg = NULL;
	ck_assert_int_eq(operation_validate(operation_of(r), r, &lim, &msg),
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
		if (request_decode(&a, buf, len, &lim, &r, &msg) ==
		    NDDD__V1__CODE__OK)
			(void)operation_validate(operation_of(r), r, &lim,
			    &msg);
	}
	arena_release(&a);
}
END_TEST

/* Packs req into a fresh buffer (caller frees); *len its length. */
static uint8_t *
pack_request(const Nddd__V1__Request *req, size_t *len)
{
	uint8_t *buf;

	*len = nddd__v1__request__get_packed_size(req);
	buf = malloc(*len + 1);
	ck_assert_uint_eq(nddd__v1__request__pack(req, buf), *len);
	return buf;
}

START_TEST(test_arena_limit)
{
	struct arena a;

	arena_init(&a, 64);
	arena_set_limit(&a, 100);
	ck_assert_ptr_nonnull(arena_alloc(&a, 50));	/* 64 with alignment */
	ck_assert_ptr_nonnull(arena_alloc(&a, 30));	/* 96 */
	ck_assert(!a.over_limit);
	ck_assert_ptr_null(arena_alloc(&a, 8));		/* 112 > 100 */
	ck_assert(a.over_limit);
	ck_assert(!a.out_of_memory);
	/* A reset gives the budget back and forgets the failure. */
	arena_reset(&a);
	ck_assert(!a.over_limit);
	ck_assert_ptr_nonnull(arena_alloc(&a, 96));
	/* No limit: anything malloc can give. */
	arena_set_limit(&a, 0);
	ck_assert_ptr_nonnull(arena_alloc(&a, 1 << 20));
	/* A limit below what is already handed out refuses everything. */
	arena_set_limit(&a, 10);
	ck_assert_ptr_null(arena_alloc(&a, 1));
	ck_assert(a.over_limit);
	/* A reset keeps the largest block only up to keep_max. */
	arena_set_limit(&a, 0);
	a.keep_max = 4096;
	arena_reset(&a);
	ck_assert_ptr_null(a.head);	/* the 1 MiB block went back */
	ck_assert_ptr_nonnull(arena_alloc(&a, 1000));
	arena_reset(&a);
	ck_assert_ptr_nonnull(a.head);	/* a small one stays */
	arena_release(&a);
}
END_TEST

START_TEST(test_decode_budget_fits_real_requests)
{
	/* The requests that take the most memory for their size: max_batch
	 * URLs of 0 and 1 bytes, a batch of long URLs filling the frame, a
	 * document of 4 MiB.  Each decodes; so does everything after. */
	enum { MAX_BATCH = 10000 };
	struct request_limits lim = { .max_batch = MAX_BATCH };
	static ProtobufCBinaryData urls[MAX_BATCH];
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT, *got;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	Nddd__V1__DocSubmit doc = NDDD__V1__DOC_SUBMIT__INIT;
	static const size_t url_lens[] = { 0, 1, 800 };
	char *text = malloc(4 << 20);
	struct arena a;
	const char *msg;
	uint8_t *buf;
	size_t len;

	memset(text, 'a', 4 << 20);
	for (size_t i = 0; i < 4 << 20; i += 8)
		text[i] = ' ';
	arena_init(&a, 64 * 1024);
	req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
	req.url_submit = &batch;
	batch.n_urls = MAX_BATCH;
	batch.urls = urls;
	for (size_t l = 0; l < sizeof(url_lens) / sizeof(url_lens[0]); l++) {
		for (size_t i = 0; i < MAX_BATCH; i++) {
			urls[i].len = url_lens[l];
			urls[i].data = (uint8_t *)text;
		}
		buf = pack_request(&req, &len);
		arena_reset(&a);
		ck_assert_msg(request_decode(&a, buf, len, &lim, &got, &msg) ==
		    NDDD__V1__CODE__OK, "URLs of %zu bytes: %s", url_lens[l],
		    msg);
		ck_assert_uint_eq(got->url_submit->n_urls, MAX_BATCH);
		/* The operation's own allocations are not bounded. */
		ck_assert_ptr_nonnull(arena_alloc(&a, 8 * len));
		free(buf);
	}
	req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
	req.doc_submit = &doc;
	doc.url.data = (uint8_t *)"http://a.example/";
	doc.url.len = 17;
	doc.body.data = (uint8_t *)text;
	doc.body.len = 4 << 20;
	buf = pack_request(&req, &len);
	arena_reset(&a);
	ck_assert_int_eq(request_decode(&a, buf, len, &lim, &got, &msg),
	    NDDD__V1__CODE__OK);
	ck_assert_uint_eq(got->doc_submit->body.len, 4 << 20);
	free(buf);
	arena_release(&a);
	free(text);
}
END_TEST

START_TEST(test_unknown_field_flood_refused)
{
	/* A valid url_check followed by 3-byte unknown fields (field 100,
	 * which Request does not have, a varint 0): protobuf-c keeps each
	 * at many times its size. */
	struct request_limits lim = { .max_batch = 10000 };
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT, *got;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	size_t head, len = 1 << 20;
	struct arena a;
	const char *msg = NULL;
	uint8_t *buf = malloc(len);

	req.id = 5;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	req.url_check = &batch;
	head = nddd__v1__request__pack(&req, buf);
	for (size_t i = head; i + 2 < len; i += 3) {
		buf[i] = 0xa0;
		buf[i + 1] = 0x06;
		buf[i + 2] = 0;
	}
	len -= (len - head) % 3;
	arena_init(&a, 64 * 1024);
	ck_assert_int_eq(request_decode(&a, buf, len, &lim, &got, &msg),
	    NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	ck_assert_ptr_nonnull(msg);
	ck_assert(a.handed_out <= request_decode_budget(len, &lim));
	/* A few unknown fields (a newer client's) are fine. */
	arena_reset(&a);
	ck_assert_int_eq(request_decode(&a, buf, head + 201, &lim, &got,
	    &msg), NDDD__V1__CODE__OK);
	ck_assert_uint_eq(got->id, 5);
	arena_release(&a);
	free(buf);
}
END_TEST

START_TEST(test_operation_table_matches_the_protocol)
{
	/* Every operation of the Request's oneof has its own row, named as
	 * the protocol names it; nothing else does. */
	const ProtobufCMessageDescriptor *d = &nddd__v1__request__descriptor;
	unsigned rows = 0;

	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
		const struct operation *op;

		if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		req.op_case = (Nddd__V1__Request__OpCase)f->id;
		op = operation_of(&req);
		ck_assert_msg(op != operation_invalid(), "%s has no row",
		    f->name);
		ck_assert_str_eq(op->name, f->name);
		ck_assert_ptr_nonnull(op->run);
		ck_assert_ptr_eq(operation_at(operation_index(op)), op);
		rows++;
	}
	ck_assert_uint_eq(rows + 1, operation_count());
	ck_assert_str_eq(operation_invalid()->name, "invalid");
	ck_assert_ptr_null(operation_at(operation_count()));
}
END_TEST

START_TEST(test_operation_roles)
{
	/* The roles proto/nddd.proto documents. */
	static const struct {
		Nddd__V1__Request__OpCase op;
		enum role role;
	} want[] = {
		{ NDDD__V1__REQUEST__OP_URL_CHECK, ROLE_READ },
		{ NDDD__V1__REQUEST__OP_STATS, ROLE_READ },
		{ NDDD__V1__REQUEST__OP_DOC_QUERY, ROLE_READ },
		{ NDDD__V1__REQUEST__OP_DOC_GET, ROLE_READ },
		{ NDDD__V1__REQUEST__OP_URL_SUBMIT, ROLE_WRITE },
		{ NDDD__V1__REQUEST__OP_DOC_SUBMIT, ROLE_WRITE },
		{ NDDD__V1__REQUEST__OP_URL_DELETE, ROLE_ADMIN },
		{ NDDD__V1__REQUEST__OP_DOC_DELETE, ROLE_ADMIN },
		{ NDDD__V1__REQUEST__OP_VERIFY, ROLE_ADMIN },
		{ NDDD__V1__REQUEST__OP__NOT_SET, ROLE_ADMIN },
	};
	Nddd__V1__DocSubmit ds = NDDD__V1__DOC_SUBMIT__INIT;

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

		req.op_case = want[i].op;
		if (want[i].op == NDDD__V1__REQUEST__OP_DOC_SUBMIT)
			req.doc_submit = &ds;
		ck_assert_int_eq(operation_role(operation_of(&req), &req),
		    want[i].role);
	}
	/* Asking which story a page would join only reads. */
	{
		Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

		ds.query_only = true;
		req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
		req.doc_submit = &ds;
		ck_assert_int_eq(operation_role(operation_of(&req), &req),
		    ROLE_READ);
	}
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
	tcase_add_test(tc, test_copy_across_chains);
	tcase_add_test(tc, test_oversized_before_payload);
	tcase_add_test(tc, test_zero_length_and_back_to_back);
	tcase_add_test(tc, test_write_round_trip);
	tcase_add_test(tc, test_garbage_and_empty_requests);
	tcase_add_test(tc, test_random_bytes_never_crash);
	tcase_add_test(tc, test_arena_limit);
	tcase_add_test(tc, test_decode_budget_fits_real_requests);
	tcase_add_test(tc, test_unknown_field_flood_refused);
	tcase_add_test(tc, test_operation_table_matches_the_protocol);
	tcase_add_test(tc, test_operation_roles);
	suite_add_tcase(s, tc);
	return s;
}
