/*
 * Integration tests of the server's edges: malformed, oversized, empty and
 * truncated frames, limits, backpressure, the memory of clients that do not
 * read, half-closed clients, running out of descriptors, graceful shutdown
 * (with a backlog too), start-up failures and a full store.  Raw sockets speak the framing directly where
 * the client library would refuse to misbehave.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "nddd.pb-c.h"
#include "testutil.h"

static int
fcntl_nonblock(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static int
fcntl_block(int fd)
{
	return fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
}

/* Bytes received ahead of parsing, and frames cut from them. */
struct pending {
	uint8_t *data;
	size_t len;
};

static void
pending_append(struct pending *p, const void *buf, size_t n)
{
	p->data = realloc(p->data, p->len + n);
	memcpy(p->data + p->len, buf, n);
	p->len += n;
}

/* The next response: from what is pending, reading more as needed. */
static Nddd__V1__Response *
pending_recv(struct pending *p, int fd)
{
	uint8_t buf[65536];

	for (;;) {
		if (p->len >= 4) {
			uint32_t len = (uint32_t)p->data[0] << 24 |
			    p->data[1] << 16 | p->data[2] << 8 | p->data[3];

			if (p->len >= 4 + (size_t)len) {
				Nddd__V1__Response *r =
				    nddd__v1__response__unpack(NULL, len,
				    p->data + 4);

				memmove(p->data, p->data + 4 + len,
				    p->len - 4 - len);
				p->len -= 4 + len;
				return r;
			}
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		ck_assert_msg(poll(&pfd, 1, 10000) == 1, "no reply in 10 s");
		if ((n = recv(fd, buf, sizeof(buf), 0)) <= 0)
			return NULL;
		pending_append(p, buf, (size_t)n);
	}
}

/* A working client on the side: the daemon still serves it. */
static void
assert_serving(const struct harness *h)
{
	static const char *const url[] = { "http://still.example/serving" };
	struct nddd_url_result res[1];
	nddd_client *c = harness_client(h);

	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, url, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_int_eq(res[0].code, NDDD_OK);
	nddd_close(c);
}

START_TEST(test_garbage_frame_closes_only_that_connection)
{
	static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01,
	    0x02 };
	struct harness h;
	Nddd__V1__Response *r;
	nddd_client *other;
	int fd;

	harness_init(&h, NULL);
	harness_start(&h);
	other = harness_client(&h);
	fd = harness_raw_connect(&h);
	harness_raw_frame(fd, garbage, sizeof(garbage));
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 0);
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__INVALID_ARGUMENT);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert(harness_raw_closed(fd));
	close(fd);
	/* A client connected before, and one connecting after, both work. */
	ck_assert_int_eq(nddd_send_stats(other, NULL), 0);
	nddd_close(other);
	assert_serving(&h);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_oversized_frame_refused_unread)
{
	struct harness h;
	Nddd__V1__Response *r;
	uint8_t hdr[4] = { 0x7f, 0xff, 0xff, 0xff };	/* 2 GiB announced */
	int fd;

	/* The harness writes [server] first; a second [server] section adds
	 * to it. */
	harness_init(&h, "[server]\nmax_frame = 64K\nmax_batch = 1000");
	harness_start(&h);
	fd = harness_raw_connect(&h);
	harness_raw_send(fd, hdr, 4);
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert(harness_raw_closed(fd));
	close(fd);
	assert_serving(&h);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_zero_length_and_truncated_frames)
{
	struct harness h;
	Nddd__V1__Response *r;
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__StatsRequest stats = NDDD__V1__STATS_REQUEST__INIT;
	uint8_t buf[64];
	size_t len;
	int fd;

	harness_init(&h, NULL);
	harness_start(&h);
	fd = harness_raw_connect(&h);
	/* An empty frame is an empty Request: no operation, refused, but the
	 * framing is intact and the connection stays. */
	harness_raw_frame(fd, NULL, 0);
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__INVALID_ARGUMENT);
	nddd__v1__response__free_unpacked(r, NULL);
	req.id = 77;
	req.op_case = NDDD__V1__REQUEST__OP_STATS;
	req.stats = &stats;
	len = nddd__v1__request__pack(&req, buf);
	harness_raw_frame(fd, buf, (uint32_t)len);
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 77);
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_STATS);
	nddd__v1__response__free_unpacked(r, NULL);
	/* A frame cut short, then the client goes away. */
	harness_raw_send(fd, "\0\0\1\0abc", 7);
	close(fd);
	/* A frame delivered a byte at a time is still one frame. */
	fd = harness_raw_connect(&h);
	{
		uint8_t hdr[4] = { 0, 0, 0, (uint8_t)len };

		for (int i = 0; i < 4; i++)
			harness_raw_send(fd, hdr + i, 1);
		for (size_t i = 0; i < len; i++) {
			harness_raw_send(fd, buf + i, 1);
			usleep(1000);
		}
	}
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 77);
	nddd__v1__response__free_unpacked(r, NULL);
	close(fd);
	assert_serving(&h);
	harness_cleanup(&h);
}
END_TEST

/*
 * Sends a batch of urls[0..refused) for op, which must be refused whole
 * with RESOURCE_EXHAUSTED for its id; then a url_check of urls[0..answered)
 * on the same connection, whose reply (checked to be URL results for its
 * id) is returned.
 */
static struct nddd_reply *
refused_whole_then_answered(nddd_client *c, enum nddd_url_op op,
    const char **urls, size_t refused, size_t answered)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_urls(c, op, urls, NULL, refused, &id), 0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	ck_assert_uint_eq(r->id, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_ERROR);
	ck_assert_int_eq(r->code, NDDD_RESOURCE_EXHAUSTED);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_CHECK, urls, NULL,
	    answered, &id), 0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	ck_assert_uint_eq(r->id, id);
	ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
	ck_assert_uint_eq(r->nresults, answered);
	return r;
}

START_TEST(test_batch_limit)
{
	struct harness h;
	nddd_client *c;
	struct nddd_reply *r;
	const char *urls[11];

	for (int i = 0; i < 11; i++)
		urls[i] = "http://x.example/";
	harness_init(&h, "[server]\nmax_batch = 10");
	harness_start(&h);
	c = harness_client(&h);
	r = refused_whole_then_answered(c, NDDD_URL_SUBMIT, urls, 11, 10);
	/* Nothing of the refused batch was stored. */
	ck_assert_uint_eq(r->results[0].count, 0);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

/*
 * A url_check (id 5) followed by 2-byte unknown fields (field 14, which
 * Request does not have) up to len bytes in all: what protobuf-c would keep
 * at many times its size.  Returns the buffer; *head is the length of the
 * url_check alone.
 */
static uint8_t *
unknown_field_flood(size_t *len, size_t *head)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	uint8_t *buf = malloc(*len);

	req.id = 5;
	req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
	req.url_check = &batch;
	*head = nddd__v1__request__pack(&req, buf);
	/* Field 100 (a varint), which no request has: a two-byte tag, then
	 * its value. */
	for (size_t i = *head; i + 2 < *len; i += 3) {
		buf[i] = 0xa0;
		buf[i + 1] = 0x06;
		buf[i + 2] = 0;
	}
	*len -= (*len - *head) % 3;
	return buf;
}

/* Sends a frame of payload on a new connection: refused, then closed. */
static void
assert_flood_refused(const struct harness *h, const uint8_t *payload,
    size_t len)
{
	Nddd__V1__Response *r;
	int fd = harness_raw_connect(h);

	harness_raw_frame(fd, payload, (uint32_t)len);
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 0);
	ck_assert_ptr_nonnull(r->status);
	ck_assert_int_eq(r->status->code, NDDD__V1__CODE__RESOURCE_EXHAUSTED);
	nddd__v1__response__free_unpacked(r, NULL);
	ck_assert(harness_raw_closed(fd));
	close(fd);
}

START_TEST(test_unknown_field_flood_refused_before_decoding_it)
{
	/* 1 MiB of unknown fields, decoded whole, would take about 50 MiB
	 * of the daemon's memory.  It is refused with RESOURCE_EXHAUSTED
	 * (its id cannot be known) and its connection closed; nobody else
	 * notices. */
	size_t head, len = 1 << 20;
	uint8_t *buf = unknown_field_flood(&len, &head);
	struct harness h;
	Nddd__V1__Response *r;
	int fd;

	harness_init(&h, NULL);
	harness_start(&h);
	assert_flood_refused(&h, buf, len);
	/* The same request with a few unknown fields is answered. */
	fd = harness_raw_connect(&h);
	harness_raw_frame(fd, buf, (uint32_t)head + 63);
	r = harness_raw_recv(fd);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->id, 5);
	ck_assert_int_eq(r->result_case, NDDD__V1__RESPONSE__RESULT_URLS);
	nddd__v1__response__free_unpacked(r, NULL);
	close(fd);
	assert_serving(&h);
	harness_cleanup(&h);
	free(buf);
}
END_TEST

START_TEST(test_floods_leave_no_memory_behind)
{
	/* Eight frames of 8 MiB of unknown fields, from anyone who can
	 * connect (no token is checked before decoding).  Decoded whole they
	 * took hundreds of MiB that the workers' arenas then kept; now each
	 * worker decodes at most its budget, and gives back what is above
	 * 4 MiB once the request is done.  The daemon's anonymous memory
	 * comes back to within 24 MiB of where it was (the daemon trims
	 * malloc's free memory every 5 s when idle). */
	size_t head, len = 8 << 20;
	uint8_t *buf = unknown_field_flood(&len, &head);
	struct harness h;
	long before, after = 0;

	harness_init(&h, "[server]\nworkers = 2");
	harness_start(&h);
	assert_serving(&h);
	before = harness_anon_bytes(&h);
	for (int i = 0; i < 8; i++)
		assert_flood_refused(&h, buf, len);
#ifndef __SANITIZE_ADDRESS__
	for (int tries = 0; tries < 40; tries++) {
		after = harness_anon_bytes(&h);
		if (after - before < 24L << 20)
			break;
		usleep(250 * 1000);
	}
	ck_assert_msg(after - before < 24L << 20,
	    "anonymous memory grew by %ld bytes", after - before);
#else
	/* AddressSanitizer's allocator holds freed memory in quarantine:
	 * the bound is the release build's; here the floods run for the
	 * sanitizer's sake. */
	(void)before;
	(void)after;
#endif
	assert_serving(&h);
	harness_cleanup(&h);
	free(buf);
}
END_TEST

START_TEST(test_reply_longer_than_max_frame_refused)
{
	/* 1,000 invalid URLs fit a 16 KiB frame; their 1,000 item errors do
	 * not.  The client gets RESOURCE_EXHAUSTED for that request, not a
	 * frame it must refuse, and its connection goes on. */
	struct harness h;
	nddd_client *c;
	struct nddd_reply *r;
	const char *urls[1000];

	for (int i = 0; i < 1000; i++)
		urls[i] = "not a url";
	harness_init(&h, "[server]\nmax_frame = 16K\nmax_batch = 1000");
	harness_start(&h);
	c = harness_client(&h);
	r = refused_whole_then_answered(c, NDDD_URL_CHECK, urls, 1000, 10);
	ck_assert_int_eq(r->results[9].code, NDDD_INVALID_ARGUMENT);
	nddd_reply_free(r);
	nddd_close(c);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_connection_limit)
{
	struct harness h;
	nddd_client *a, *b;
	struct nddd_reply *r;
	uint64_t id;

	harness_init(&h, "[server]\nmax_connections = 1");
	harness_start(&h);
	a = harness_client(&h);
	ck_assert_int_eq(nddd_send_stats(a, &id), 0);
	ck_assert_int_eq(nddd_recv(a, &r), 0);
	nddd_reply_free(r);
	b = harness_client(&h);
	ck_assert_int_eq(nddd_recv(b, &r), 0);
	ck_assert_uint_eq(r->id, 0);
	ck_assert_int_eq(r->code, NDDD_RESOURCE_EXHAUSTED);
	nddd_reply_free(r);
	ck_assert_int_eq(nddd_recv(b, &r), -1);	/* then closed */
	nddd_close(b);
	nddd_close(a);
	/* The slot is free again once a leaves. */
	usleep(100000);
	assert_serving(&h);
	harness_cleanup(&h);
}
END_TEST

/*
 * A whole frame (header included) of a URL batch request: op (url_submit
 * or url_check) with request id id, of n URLs: prefix followed by the
 * item's index when numbered, prefix alone otherwise.
 */
static uint8_t *
url_batch_frame(Nddd__V1__Request__OpCase op, uint64_t id, const char *prefix,
    bool numbered, size_t n, size_t *framelen)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData *items = calloc(n, sizeof(*items));
	uint8_t *buf;
	size_t len;

	for (size_t i = 0; i < n; i++) {
		char *u;

		if (numbered)
			ck_assert_int_ne(asprintf(&u, "%s%zu", prefix, i), -1);
		else
			u = strdup(prefix);
		items[i].data = (uint8_t *)u;
		items[i].len = strlen(u);
	}
	batch.n_urls = n;
	batch.urls = items;
	req.id = id;
	req.op_case = op;
	if (op == NDDD__V1__REQUEST__OP_URL_SUBMIT)
		req.url_submit = &batch;
	else
		req.url_check = &batch;
	len = nddd__v1__request__get_packed_size(&req);
	buf = malloc(len + 4);
	buf[0] = (uint8_t)(len >> 24);
	buf[1] = (uint8_t)(len >> 16);
	buf[2] = (uint8_t)(len >> 8);
	buf[3] = (uint8_t)len;
	nddd__v1__request__pack(&req, buf + 4);
	for (size_t i = 0; i < n; i++)
		free(items[i].data);
	free(items);
	*framelen = len + 4;
	return buf;
}

START_TEST(test_backpressure_on_a_client_that_does_not_read)
{
	struct harness h;
	uint8_t *buf;
	size_t len, sent_frames = 0, replies = 0, off = 0;
	struct pending pend = { 0 };
	int fd, flags;
	char asan[256], *saved_asan;
	long before, after;

	harness_init(&h, "[server]\noutput_high_water = 64K\n"
	    "max_inflight = 4");
	/* Under AddressSanitizer freed memory waits in a quarantine before
	 * reuse, which would count here as memory held for the client. */
	saved_asan = getenv("ASAN_OPTIONS");
	saved_asan = saved_asan != NULL ? strdup(saved_asan) : NULL;
	snprintf(asan, sizeof(asan), "%s%squarantine_size_mb=0",
	    saved_asan != NULL ? saved_asan : "",
	    saved_asan != NULL ? ":" : "");
	setenv("ASAN_OPTIONS", asan, 1);
	harness_start(&h);
	if (saved_asan != NULL)
		setenv("ASAN_OPTIONS", saved_asan, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(saved_asan);
	/* The frame's length, header included, is len + 4 below. */
	buf = url_batch_frame(NDDD__V1__REQUEST__OP_URL_CHECK, 0,
	    "http://bp.example/", true, 1000, &len);
	len -= 4;

	fd = harness_raw_connect(&h);
	flags = 4096;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &flags, sizeof(flags));
	before = harness_anon_bytes(&h);
	/* Send checks without reading a reply until the daemon stops
	 * reading: our sends then stall (non-blocking: EAGAIN). */
	ck_assert_int_eq(fcntl_nonblock(fd), 0);
	for (int stalls = 0; stalls < 50 && sent_frames < 100000;) {
		ssize_t n = send(fd, buf + off, len + 4 - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			if (off == len + 4) {
				sent_frames++;
				off = 0;
			}
			continue;
		}
		ck_assert_msg(n == -1 && errno == EAGAIN, "send failed");
		stalls++;
		usleep(20000);
	}
	ck_assert_msg(sent_frames < 100000, "the daemon never stopped reading");
	after = harness_anon_bytes(&h);
	/* Replies queued for us are bounded by the high-water mark and the
	 * in-flight limit, not by what we sent (the socket buffers hold the
	 * rest). */
	ck_assert_msg(after - before < 32L << 20,
	    "anonymous memory grew by %ld bytes", after - before);
	/* Others are served meanwhile. */
	assert_serving(&h);
	/* Now read everything: every request sent gets its reply.  The
	 * frame we were half-way through is finished as the daemon reads
	 * again, which it does as we read. */
	if (off > 0) {
		sent_frames++;
		while (off > 0 && off < len + 4) {
			struct pollfd pfd = { .fd = fd,
			    .events = POLLOUT | POLLIN };
			uint8_t sink[65536];
			ssize_t n;

			ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
			if (pfd.revents & POLLOUT) {
				n = send(fd, buf + off, len + 4 - off,
				    MSG_NOSIGNAL);
				if (n > 0)
					off += (size_t)n;
			}
			if ((pfd.revents & POLLIN) && off < len + 4) {
				/* Keep what we read: it is the start of the
				 * replies, parsed below from rbuf. */
				n = recv(fd, sink, sizeof(sink), 0);
				ck_assert_int_gt(n, 0);
				pending_append(&pend, sink, (size_t)n);
			}
		}
	}
	ck_assert_int_eq(fcntl_block(fd), 0);
	while (replies < sent_frames) {
		Nddd__V1__Response *r = pending_recv(&pend, fd);

		ck_assert_ptr_nonnull(r);
		ck_assert_int_eq(r->result_case,
		    NDDD__V1__RESPONSE__RESULT_URLS);
		nddd__v1__response__free_unpacked(r, NULL);
		replies++;
	}
	free(pend.data);
	close(fd);
	free(buf);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_sigterm_answers_in_flight_requests)
{
	const size_t n = 5000;
	const char **urls = malloc(n * sizeof(*urls));
	struct harness h;
	nddd_client *c;
	struct nddd_reply *r;
	uint64_t ids[5];
	size_t answered = 0;

	harness_init(&h, NULL);
	harness_start(&h);
	for (size_t i = 0; i < n; i++) {
		char *u;

		ck_assert_int_ne(asprintf(&u, "http://term.example/%zu", i),
		    -1);
		urls[i] = u;
	}
	c = harness_client(&h);
	for (int b = 0; b < 5; b++)
		ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_SUBMIT,
		    urls + b * 1000, NULL, 1000, &ids[b]), 0);
	/* Give the frames time to arrive, then ask the daemon to stop. */
	usleep(50000);
	kill(h.pid, SIGTERM);
	while (nddd_recv(c, &r) == 0) {
		ck_assert_int_eq(r->kind, NDDD_REPLY_URLS);
		answered++;
		nddd_reply_free(r);
	}
	ck_assert_uint_eq(answered, 5);
	nddd_close(c);
	h.pid = (waitpid(h.pid, &(int){0}, 0), 0);
	/* Everything answered is there after a restart. */
	harness_start(&h);
	c = harness_client(&h);
	{
		struct nddd_url_result *res = calloc(n, sizeof(*res));

		ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, urls, n, res,
		    1000, 2, NULL, NULL), 0);
		for (size_t i = 0; i < n; i++)
			ck_assert_uint_eq(res[i].count, 1);
		free(res);
	}
	nddd_close(c);
	for (size_t i = 0; i < n; i++)
		free((char *)urls[i]);
	free(urls);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_bad_configuration_stops_startup)
{
	struct harness h;
	char *out;

	harness_init(&h, "[server]\nmax_frame = lots\nbogus = 1\n"
	    "[urls]\nsort_query = maybe\n[nope]\nx = 1");
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_ptr_nonnull(out);
	/* Every error, each with file:line. */
	ck_assert_msg(strstr(out, "nddd.conf:15: max_frame") != NULL, "%s",
	    out);
	ck_assert_msg(strstr(out, "nddd.conf:16: unknown key 'bogus'") !=
	    NULL, "%s", out);
	ck_assert_msg(strstr(out, "nddd.conf:18: sort_query") != NULL, "%s",
	    out);
	ck_assert_msg(strstr(out, "nddd.conf:20: unknown section [nope]") !=
	    NULL, "%s", out);
	free(out);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_unwritable_data_dir_stops_startup)
{
	struct harness h;
	char *out, *conf;

	harness_init(&h, NULL);
	ck_assert_int_eq(mkdir(h.data_dir, 0500), 0);
	if (geteuid() == 0) {
		/* root writes anywhere: use a path under a regular file. */
		FILE *f = fopen(h.conf_path, "a");

		fprintf(f, "[store]\ndata_dir = %s/nddd.conf/data\n", h.dir);
		fclose(f);
	}
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_ptr_nonnull(out);
	ck_assert_msg(strstr(out, "data directory") != NULL, "%s", out);
	free(out);
	(void)conf;
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_full_store_answers_resource_exhausted)
{
	struct harness h;
	nddd_client *c;
	char **urls = calloc(1000, sizeof(*urls));
	struct nddd_url_result res[1000];
	int full = 0, round;
	uint64_t stored_before_full = 0;
	struct nddd_stats st;

	harness_init(&h, "[store]\nmap_size = 1M");
	harness_start(&h);
	c = harness_client(&h);
	for (round = 0; round < 100 && !full; round++) {
		struct nddd_reply *r;
		uint64_t id;

		for (int i = 0; i < 1000; i++) {
			free(urls[i]);
			ck_assert_int_ne(asprintf(&urls[i],
			    "http://full.example/%d/%d", round, i), -1);
		}
		ck_assert_int_eq(nddd_send_urls(c, NDDD_URL_SUBMIT,
		    (const char *const *)urls, NULL, 1000, &id), 0);
		ck_assert_int_eq(nddd_recv(c, &r), 0);
		if (r->kind == NDDD_REPLY_ERROR) {
			ck_assert_int_eq(r->code, NDDD_RESOURCE_EXHAUSTED);
			full = 1;
		}
		nddd_reply_free(r);
	}
	ck_assert_msg(full, "a 1 MiB store never filled");
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	stored_before_full = st.urls;
	ck_assert_uint_eq(stored_before_full, (uint64_t)(round - 1) * 1000);
	/* Reads still work; the refused batch left nothing behind. */
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK,
	    (const char *const *)urls, 1000, res, 1000, 1, NULL, NULL), 0);
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(res[i].count, 0);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	/* With a larger map, everything is intact and writes resume. */
	{
		FILE *f = fopen(h.conf_path, "a");

		fprintf(f, "\n[store]\nmap_size = 64M\n");
		fclose(f);
	}
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_eq(st.urls, stored_before_full);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT,
	    (const char *const *)urls, 1000, res, 1000, 1, NULL, NULL), 0);
	ck_assert_uint_eq(res[999].count, 1);
	nddd_close(c);
	for (int i = 0; i < 1000; i++)
		free(urls[i]);
	free(urls);
	harness_cleanup(&h);
}
END_TEST

/*
 * A connection that sends frame over and over and never reads, until the
 * daemon stops reading it (sends stall for 300 ms).  Returns its socket.
 */
static int
flood_without_reading(const struct harness *h, const uint8_t *frame,
    size_t len)
{
	int fd = harness_raw_connect(h), small = 4096;
	size_t off = 0, frames = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	ck_assert_int_eq(fcntl_nonblock(fd), 0);
	for (int stalls = 0; stalls < 15 && frames < 100000;) {
		ssize_t n = send(fd, frame + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += (size_t)n;
			if (off == len) {
				frames++;
				off = 0;
			}
			stalls = 0;
			continue;
		}
		ck_assert_msg(n == -1 && errno == EAGAIN, "send failed");
		stalls++;
		usleep(20000);
	}
	ck_assert_msg(frames < 100000, "the daemon never stopped reading");
	return fd;
}

/* The daemon's open connections, by its own count. */
static uint32_t
connections_open(const struct harness *h)
{
	nddd_client *c = harness_client(h);
	struct nddd_stats st;

	ck_assert_int_eq(nddd_stats(c, &st), 0);
	nddd_close(c);
	return st.connections - 1;	/* not this one */
}

START_TEST(test_clients_that_do_not_read_are_bounded_and_closed)
{
	/* Twenty connections send checks of 10,000 invalid URLs (30 KB
	 * asked, 310 KB answered) and read nothing.  Each may hold
	 * output_high_water (4 MiB here) plus the bound of one reply in the
	 * making (10,000 items: under 1 MiB) plus a frame being read:
	 * about 6 MiB, 120 MiB for twenty.  Before the replies' bounds were
	 * counted, every request in flight (max_inflight: 64) queued its
	 * reply past the mark: 472 MiB was measured.  Then write_timeout
	 * closes them all, and their memory goes back. */
	struct harness h;
	size_t len;
	uint8_t *frame = url_batch_frame(NDDD__V1__REQUEST__OP_URL_CHECK, 1, "x",
	    false, 10000, &len);
	int fds[20];
	long before, after, closed_at = 0;

	harness_init(&h, "[server]\nworkers = 2\nwrite_timeout = 15s\n"
	    "output_high_water = 4M");
	harness_start(&h);
	assert_serving(&h);
	before = harness_anon_bytes(&h);
	for (int i = 0; i < 20; i++)
		fds[i] = flood_without_reading(&h, frame, len);
	after = harness_anon_bytes(&h);
#ifndef __SANITIZE_ADDRESS__
	ck_assert_msg(after - before < 160L << 20,
	    "anonymous memory grew by %ld MiB for 20 clients",
	    (after - before) >> 20);
#endif
	assert_serving(&h);
	ck_assert_uint_eq(connections_open(&h), 20);
	/* Taking no reply for write_timeout closes them. */
	for (int tries = 0; tries < 250; tries++) {
		if (connections_open(&h) == 0)
			break;
		usleep(100000);
	}
	ck_assert_uint_eq(connections_open(&h), 0);
	for (int i = 0; i < 20; i++)
		close(fds[i]);
#ifndef __SANITIZE_ADDRESS__
	for (int tries = 0; tries < 40; tries++) {
		closed_at = harness_anon_bytes(&h);
		if (closed_at - before < 24L << 20)
			break;
		usleep(250 * 1000);
	}
	ck_assert_msg(closed_at - before < 24L << 20,
	    "%ld MiB still held after the connections closed",
	    (closed_at - before) >> 20);
#else
	/* The sanitizer's quarantine keeps freed memory: the bounds are
	 * the release build's. */
	(void)before;
	(void)after;
	(void)closed_at;
#endif
	free(frame);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_buffer_memory_budget_refuses_new_requests)
{
	/* With room for all connections' buffers of about one flooding
	 * client, a second flood fills it: a new request is answered
	 * RESOURCE_EXHAUSTED at once, and served again once the floods are
	 * gone. */
	static const char *const url[] = { "http://budget.example/" };
	struct harness h;
	size_t len;
	uint8_t *frame = url_batch_frame(NDDD__V1__REQUEST__OP_URL_CHECK, 1, "x",
	    false, 10000, &len);
	struct nddd_url_result res[1];
	nddd_client *c;
	int fds[3], rc = 0;

	harness_init(&h, "[server]\nbuffer_memory = 4M\n"
	    "output_high_water = 2M");
	harness_start(&h);
	for (int i = 0; i < 3; i++)
		fds[i] = flood_without_reading(&h, frame, len);
	c = harness_client(&h);
	rc = nddd_urls(c, NDDD_URL_CHECK, url, 1, res, 1, 1, NULL, NULL);
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(res[0].code, NDDD_RESOURCE_EXHAUSTED);
	ck_assert_ptr_nonnull(strstr(res[0].message, "buffer_memory"));
	nddd_urls_results_free(res, 1);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	/* Closed, their buffers are freed (the daemon notices at once). */
	for (int tries = 0; tries < 50; tries++) {
		rc = nddd_urls(c, NDDD_URL_CHECK, url, 1, res, 1, 1, NULL,
		    NULL);
		if (rc == 0)
			break;
		nddd_urls_results_free(res, 1);
		usleep(100000);
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(res[0].code, NDDD_OK);
	nddd_urls_results_free(res, 1);
	nddd_close(c);
	free(frame);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_half_closed_client_gets_its_replies)
{
	/* A client sends its submits, shuts down its sending side and then
	 * reads: the submits are committed and every reply arrives. */
	struct harness h;
	size_t len, replies = 0;
	uint8_t *frame;
	Nddd__V1__Response *r;
	struct pending pend = { 0 };
	int fd;

	harness_init(&h, NULL);
	harness_start(&h);
	fd = harness_raw_connect(&h);
	for (uint64_t id = 1; id <= 5; id++) {
		frame = url_batch_frame(NDDD__V1__REQUEST__OP_URL_SUBMIT, id,
		    "http://half.example/", true, 1000, &len);
		harness_raw_send(fd, frame, len);
		free(frame);
	}
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	while ((r = pending_recv(&pend, fd)) != NULL) {
		ck_assert_int_eq(r->result_case,
		    NDDD__V1__RESPONSE__RESULT_URLS);
		ck_assert_uint_eq(r->urls->n_counts, 1000);
		ck_assert_uint_eq(r->urls->n_errors, 0);
		replies++;
		nddd__v1__response__free_unpacked(r, NULL);
	}
	ck_assert_uint_eq(replies, 5);
	free(pend.data);
	close(fd);
	harness_cleanup(&h);
}
END_TEST

/* CPU seconds the process has used (utime + stime, /proc/PID/stat). */
static double
cpu_seconds(pid_t pid)
{
	char path[64], line[1024], *p;
	unsigned long utime, stime;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
	fclose(f);
	/* Fields 14 and 15, after the command name in parentheses. */
	ck_assert_ptr_nonnull(p = strrchr(line, ')'));
	ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
	    "%*u %*u %lu %lu", &utime, &stime), 2);
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

/* Lines of the daemon's log that contain needle. */
static int
log_lines_with(const struct harness *h, const char *needle)
{
	char *log = tu_read_file(h->log_path, NULL), *p;
	int n = 0;

	ck_assert_ptr_nonnull(log);
	for (p = log; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	free(log);
	return n;
}

START_TEST(test_out_of_descriptors_neither_spins_nor_floods_the_log)
{
	/* The daemon's descriptor limit is lowered to what it has open plus
	 * two (prlimit); forty clients then connect.  The kernel queues them, accept()
	 * fails with EMFILE, and the listener must neither retry at once
	 * (a core spinning) nor log each failure; the client connected
	 * before is served throughout, and once descriptors are free new
	 * clients are accepted again. */
	struct harness h;
	struct rlimit low, old;
	nddd_client *before;
	int fds[40], open_fds = 0;
	double cpu0, cpu1;
	char path[64];
	DIR *dir;

	harness_init(&h, NULL);
	harness_start(&h);
	before = harness_client(&h);
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)h.pid);
	ck_assert_ptr_nonnull(dir = opendir(path));
	while (readdir(dir) != NULL)
		open_fds++;
	closedir(dir);
	ck_assert_int_eq(prlimit(h.pid, RLIMIT_NOFILE, NULL, &old), 0);
	/* The soft limit only: raising it back needs no privilege.  The
	 * count includes "." and "..": two descriptors to spare. */
	low.rlim_cur = (rlim_t)open_fds;
	low.rlim_max = old.rlim_max;
	ck_assert_int_eq(prlimit(h.pid, RLIMIT_NOFILE, &low, NULL), 0);
	for (int i = 0; i < 40; i++)
		fds[i] = harness_raw_connect(&h);
	cpu0 = cpu_seconds(h.pid);
	sleep(2);
	cpu1 = cpu_seconds(h.pid);
	ck_assert_msg(cpu1 - cpu0 < 0.5, "%.2f s of CPU in 2 s while out "
	    "of descriptors", cpu1 - cpu0);
	/* One warning for the spell (the daemon logs at debug level
	 * here: each retry would show). */
	ck_assert_int_eq(log_lines_with(&h, "accept: "), 1);
	{
		static const char *const url[] = { "http://fd.example/" };
		struct nddd_url_result res[1];

		ck_assert_int_eq(nddd_urls(before, NDDD_URL_SUBMIT, url, 1,
		    res, 1, 1, NULL, NULL), 0);
		ck_assert_int_eq(res[0].code, NDDD_OK);
	}
	for (int i = 0; i < 40; i++)
		close(fds[i]);
	ck_assert_int_eq(prlimit(h.pid, RLIMIT_NOFILE, &old, NULL), 0);
	assert_serving(&h);
	ck_assert_int_ge(log_lines_with(&h, "accepting again"), 1);
	nddd_close(before);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_sigterm_with_a_backlog_finishes_every_request)
{
	/* Four clients keep document and URL submits in flight, durable,
	 * and the daemon is told to stop with shutdown_timeout = 0: every
	 * request accepted is still finished before the workers, the
	 * accelerator and the writers are freed (the sanitizer build checks
	 * that nothing is touched after), the daemon exits 0, and every
	 * submit acknowledged is there after a restart. */
	enum { CLIENTS = 4, WINDOW = 32 };
	struct harness h;
	nddd_client *c[CLIENTS];
	char url[128], body[256];
	uint64_t acked[CLIENTS] = { 0 }, sent[CLIENTS] = { 0 }, id;
	struct nddd_reply *r;
	int status;

	harness_init(&h, "[server]\nshutdown_timeout = 0\n[store]\n"
	    "sync = full");
	harness_start(&h);
	for (int i = 0; i < CLIENTS; i++)
		c[i] = harness_client(&h);
	/* Fill the pipes, then stop while they are full. */
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < CLIENTS; i++)
			while (nddd_outstanding(c[i]) < WINDOW) {
				uint64_t n = sent[i]++;

				snprintf(url, sizeof(url),
				    "http://bl.example/%d/%llu", i,
				    (unsigned long long)n);
				snprintf(body, sizeof(body), "backlog document "
				    "%d %llu of the shutdown test, with some "
				    "words", i, (unsigned long long)n);
				ck_assert_int_eq(n % 2 ? nddd_send_urls(c[i],
				    NDDD_URL_SUBMIT, (const char *[]){ url },
				    NULL, 1, &id) : nddd_send_doc_submit(c[i],
				    url, strlen(url), body, strlen(body),
				    NDDD_TEXT, 0, &id), 0);
			}
	kill(h.pid, SIGTERM);
	for (int i = 0; i < CLIENTS; i++) {
		while (nddd_recv(c[i], &r) == 0) {
			ck_assert_msg(r->kind != NDDD_REPLY_ERROR, "%s",
			    r->message ? r->message : "error");
			acked[i]++;
			nddd_reply_free(r);
		}
		nddd_close(c[i]);
	}
	ck_assert_int_eq(waitpid(h.pid, &status, 0), h.pid);
	h.pid = 0;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "nddd did not exit 0 (status %d)", status);
	/* Replies are sent in order: the first acked[i] are durable. */
	harness_start(&h);
	c[0] = harness_client(&h);
	for (int i = 0; i < CLIENTS; i++)
		for (uint64_t n = 0; n < acked[i]; n++) {
			snprintf(url, sizeof(url), "http://bl.example/%d/%llu",
			    i, (unsigned long long)n);
			if (n % 2) {
				struct nddd_url_result res[1];

				ck_assert_int_eq(nddd_urls(c[0],
				    NDDD_URL_CHECK, (const char *[]){ url },
				    1, res, 1, 1, NULL, NULL), 0);
				ck_assert_uint_eq(res[0].count, 1);
			} else {
				ck_assert_int_eq(nddd_send_doc_get(c[0], url,
				    strlen(url), &id), 0);
				ck_assert_int_eq(nddd_recv(c[0], &r), 0);
				ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
				nddd_reply_free(r);
			}
		}
	nddd_close(c[0]);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_document_replies_stay_within_their_bound)
{
	/* Forty copies of one page under URLs of 16,000 bytes: listing them
	 * all as neighbours would take 640 KB.  A reply lists the nearest
	 * that fit 128 KiB (eight) and says how many there are
	 * (near_total). */
	struct harness h;
	nddd_client *c;
	struct nddd_reply *r;
	static const char body[] = "the same story told forty times over, "
	    "word for word, by forty sites";
	char *url = malloc(16100);
	size_t len;
	uint64_t id;

	harness_init(&h, "[near]\nmax_results = 1000");
	harness_start(&h);
	c = harness_client(&h);
	for (int i = 0; i < 41; i++) {
		len = (size_t)snprintf(url, 64, "http://long.example/%d/", i);
		memset(url + len, 'a', 16000);
		len += 16000;
		ck_assert_int_eq(nddd_send_doc_submit(c, url, len, body,
		    strlen(body), NDDD_TEXT, 0, &id), 0);
		ck_assert_int_eq(nddd_recv(c, &r), 0);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		ck_assert_uint_eq(r->doc.near_total, (uint64_t)i);
		/* A submit's reply also carries the document's own URL:
		 * room for one fewer. */
		ck_assert_uint_le(r->doc.nnear, 8);
		if (i >= 8)
			ck_assert_uint_ge(r->doc.nnear, 7);
		nddd_reply_free(r);
	}
	ck_assert_int_eq(nddd_send_doc_query(c, body, strlen(body), NDDD_TEXT,
	    -1, &id), 0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	ck_assert_int_eq(r->kind, NDDD_REPLY_DOC_QUERY);
	ck_assert_uint_eq(r->doc.near_total, 41);
	ck_assert_uint_eq(r->doc.nnear, 8);
	nddd_reply_free(r);
	nddd_close(c);
	free(url);
	harness_cleanup(&h);
}
END_TEST

Suite *server_suite(void);

Suite *
server_suite(void)
{
	Suite *s = suite_create("server");
	TCase *tc = tcase_create("server");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_garbage_frame_closes_only_that_connection);
	tcase_add_test(tc, test_oversized_frame_refused_unread);
	tcase_add_test(tc, test_zero_length_and_truncated_frames);
	tcase_add_test(tc, test_batch_limit);
	tcase_add_test(tc, test_unknown_field_flood_refused_before_decoding_it);
	tcase_add_test(tc, test_floods_leave_no_memory_behind);
	tcase_add_test(tc, test_reply_longer_than_max_frame_refused);
	tcase_add_test(tc, test_connection_limit);
	tcase_add_test(tc, test_backpressure_on_a_client_that_does_not_read);
	tcase_add_test(tc, test_sigterm_answers_in_flight_requests);
	tcase_add_test(tc, test_bad_configuration_stops_startup);
	tcase_add_test(tc, test_unwritable_data_dir_stops_startup);
	tcase_add_test(tc, test_full_store_answers_resource_exhausted);
	tcase_add_test(tc, test_clients_that_do_not_read_are_bounded_and_closed);
	tcase_add_test(tc, test_buffer_memory_budget_refuses_new_requests);
	tcase_add_test(tc, test_half_closed_client_gets_its_replies);
	tcase_add_test(tc, test_out_of_descriptors_neither_spins_nor_floods_the_log);
	tcase_add_test(tc, test_sigterm_with_a_backlog_finishes_every_request);
	tcase_add_test(tc, test_document_replies_stay_within_their_bound);
	suite_add_tcase(s, tc);
	return s;
}
