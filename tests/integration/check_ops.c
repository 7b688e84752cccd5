/*
 * Integration tests of what operators rely on: the metrics and health
 * endpoints (scraped over real HTTP), idle and slow-frame timeouts, the
 * verify operation, and the most request workers the configuration allows.
 */
#include <check.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

static int
tcp_connect(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* GET path over HTTP/1.0; returns the whole response (caller frees). */
static char *
http_get(int port, const char *path)
{
	int fd = tcp_connect(port);
	char req[256], *buf = NULL;
	size_t len = 0, cap = 0;

	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
	ck_assert_int_eq(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	for (;;) {
		ssize_t n;

		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			buf = realloc(buf, cap);
		}
		if ((n = recv(fd, buf + len, cap - len - 1, 0)) <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return buf;
}

/* The value of the sample line that starts with name (exactly). */
static double
sample(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	while ((p = strstr(p, name)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return atof(p + n + 1);
		p += n;
	}
	ck_abort_msg("no sample %s in:\n%s", name, text);
	return 0;
}

/* Stores a document through c, which must be answered. */
static void
assert_doc_stored(nddd_client *c, const char *url, const char *body)
{
	struct nddd_reply *r;
	uint64_t id;

	ck_assert_int_eq(nddd_send_doc_submit(c, url, strlen(url), body,
	    strlen(body), NDDD_TEXT, 0, &id), 0);
	ck_assert_ptr_nonnull(r = nddd_call(c, id));
	ck_assert_msg(r->kind == NDDD_REPLY_DOC, "%s", r->message ?
	    r->message : "");
	ck_assert(r->doc.created);
	nddd_reply_free(r);
}

START_TEST(test_metrics_and_health)
{
	struct harness h;
	int mport = harness_free_port();
	char conf[128], *text;
	const char *urls[] = { "http://m.example/1", "http://m.example/2",
	    "bad url" };
	struct nddd_url_result res[3];
	nddd_client *c;

	harness_init(&h, NULL);
	snprintf(conf, sizeof(conf), "[metrics]\nlisten = 127.0.0.1:%d", mport);
	harness_add_conf(&h, conf);
	harness_start(&h);
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, urls, 3, res, 3, 1, NULL,
	    NULL), 0);
	nddd_urls_results_free(res, 3);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, urls, 2, res, 1, 2, NULL,
	    NULL), 0);
	nddd_urls_results_free(res, 2);
	/* One of them in a namespace too. */
	ck_assert_int_eq(nddd_set_url_opts(c, &(struct nddd_url_opts){
	    .ns = "crawl-m" }), 0);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, urls, 1, res, 1, 1, NULL,
	    NULL), 0);
	nddd_urls_results_free(res, 1);
	/* And documents: one in the default namespace, two in docs-m. */
	assert_doc_stored(c, "http://m.example/d", "markets rallied");
	ck_assert_int_eq(nddd_set_doc_namespace(c, "docs-m"), 0);
	assert_doc_stored(c, "http://m.example/d", "markets rallied");
	assert_doc_stored(c, "http://m.example/e", "markets fell");
	nddd_close(c);

	text = http_get(mport, "/metrics");
	ck_assert_msg(strstr(text, "HTTP/1.0 200") || strstr(text, "HTTP/1.1 200"),
	    "%s", text);
	ck_assert(strstr(text, "# TYPE nddd_request_duration_seconds "
	    "histogram") != NULL);
	ck_assert_double_eq(sample(text,
	    "nddd_requests_total{op=\"url_submit\"}"), 2);
	ck_assert_double_eq(sample(text,
	    "nddd_requests_total{op=\"url_check\"}"), 2);
	ck_assert_double_eq(sample(text,
	    "nddd_request_duration_seconds_count{op=\"url_check\"}"), 2);
	ck_assert_double_eq(sample(text,
	    "nddd_request_duration_seconds_bucket{op=\"url_check\","
	    "le=\"+Inf\"}"), 2);
	ck_assert_double_eq(sample(text, "nddd_urls"), 3);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_urls{namespace=\"\"}"), 2);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_urls{namespace=\"crawl-m\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_urls{namespace=\"docs-m\"}"), 0);
	ck_assert_double_eq(sample(text, "nddd_docs"), 3);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_docs{namespace=\"\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_docs{namespace=\"crawl-m\"}"), 0);
	ck_assert_double_eq(sample(text,
	    "nddd_namespace_docs{namespace=\"docs-m\"}"), 2);
	ck_assert_double_eq(sample(text, "nddd_docs_dropping"), 0);
	ck_assert_double_eq(sample(text, "nddd_filter_nonzero"), 24);
	ck_assert_double_eq(sample(text, "nddd_url_submits_new_total"), 3);
	/* The URL store's write path: two durable groups, journaled and
	 * synced, not flushed yet. */
	ck_assert_double_eq(sample(text, "nddd_url_journal_entries"), 3);
	ck_assert_double_eq(sample(text, "nddd_url_group_commits_total"), 2);
	ck_assert_double_eq(sample(text, "nddd_url_journal_syncs_total"), 2);
	ck_assert_double_eq(sample(text, "nddd_url_segments"), 0);
	ck_assert_double_eq(sample(text, "nddd_url_merges_forced_total"), 0);
	ck_assert_double_eq(sample(text, "nddd_url_writes_pending"), 0);
	ck_assert_double_eq(sample(text, "nddd_connections_accepted_total"), 1);
	/* Its client gone, nothing is buffered or reserved any more: the
	 * budget's count gives back all it took. */
	ck_assert_double_eq(sample(text, "nddd_connection_buffer_bytes"), 0);
	ck_assert(sample(text, "nddd_store_bytes") > 0);
	free(text);

	text = http_get(mport, "/health");
	ck_assert_msg(strstr(text, " 200 ") && strstr(text, "\r\n\r\nok\n"),
	    "%s", text);
	free(text);
	text = http_get(mport, "/nothing");
	ck_assert_msg(strstr(text, " 404 ") != NULL, "%s", text);
	free(text);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

/* Waits up to limit_ms for the peer to close fd; returns the wait. */
static long
ms_until_closed(int fd, long limit_ms)
{
	struct timespec a, b;
	char buf[4096];

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		clock_gettime(CLOCK_MONOTONIC, &b);
		long waited = (b.tv_sec - a.tv_sec) * 1000 +
		    (b.tv_nsec - a.tv_nsec) / 1000000;

		if (waited > limit_ms)
			return -1;
		if (poll(&pfd, 1, 50) == 1 && recv(fd, buf, sizeof(buf), 0) <= 0)
			return waited;
	}
}

START_TEST(test_metrics_listener_limits)
{
	/* The metrics listener holds at most 16 connections: a 17th is
	 * closed at once, and /metrics answers again once they go.  A
	 * request head over 16 KiB is refused.  Bound beyond loopback, it
	 * says in the log that anyone may read the figures. */
	struct harness h;
	int mport = harness_free_port(), idle[16], fd;
	char conf[128], *text, *log, *big;
	size_t biglen = 20000;

	harness_init(&h, NULL);
	snprintf(conf, sizeof(conf), "[metrics]\nlisten = 0.0.0.0:%d", mport);
	harness_add_conf(&h, conf);
	harness_start(&h);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_ptr_nonnull(strstr(log, "beyond loopback"));
	free(log);
	for (int i = 0; i < 16; i++)
		idle[i] = tcp_connect(mport);
	usleep(200000);
	fd = tcp_connect(mport);
	ck_assert_int_ge(ms_until_closed(fd, 2000), 0);
	close(fd);
	for (int i = 0; i < 16; i++)
		close(idle[i]);
	usleep(200000);
	text = http_get(mport, "/health");
	ck_assert_msg(strstr(text, " 200 ") != NULL, "%s", text);
	free(text);
	big = malloc(biglen + 1);
	memset(big, 'a', biglen);
	big[biglen] = '\0';
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 27);
	fd = tcp_connect(mport);
	ck_assert_int_eq(send(fd, big, biglen, MSG_NOSIGNAL), (ssize_t)biglen);
	{
		char reply[256];
		ssize_t n = recv(fd, reply, sizeof(reply) - 1, 0);

		ck_assert_int_gt(n, 0);
		reply[n] = '\0';
		ck_assert_msg(strstr(reply, " 431 ") != NULL, "%s", reply);
	}
	close(fd);
	free(big);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_idle_and_slow_frame_timeouts)
{
	struct harness h;
	int fd;
	long waited;

	harness_init(&h, "[server]\nidle_timeout = 1s\nframe_timeout = 1500ms");
	harness_start(&h);
	/* Silent: closed after about a second. */
	fd = tcp_connect(h.port);
	waited = ms_until_closed(fd, 5000);
	ck_assert_msg(waited >= 800 && waited < 3000, "idle close after %ld ms",
	    waited);
	close(fd);
	/* A frame trickled a byte at a time, each well within the idle
	 * timeout: the frame timeout still closes it. */
	fd = tcp_connect(h.port);
	ck_assert_int_eq(send(fd, "\0\0\0\x40", 4, 0), 4);
	for (int i = 0; i < 10; i++) {
		usleep(300000);
		if (send(fd, "x", 1, MSG_NOSIGNAL) != 1)
			break;
	}
	waited = ms_until_closed(fd, 5000);
	ck_assert_msg(waited >= 0, "a trickled frame was never cut off");
	close(fd);
	/* A connection waiting on a reply is not idle; a busy one is fine. */
	{
		nddd_client *c = harness_client(&h);
		struct nddd_stats st;

		for (int i = 0; i < 3; i++) {
			usleep(600000);
			ck_assert_int_eq(nddd_stats(c, &st), 0);
		}
		nddd_close(c);
	}
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_verify_after_mixed_load)
{
	struct harness h;
	nddd_client *c;
	struct nddd_verify v;
	struct nddd_url_result *res;
	char **urls = malloc(5000 * sizeof(*urls));

	/* A small filter so that counters saturate. */
	harness_init(&h, "[urls]\ncapacity = 100");
	harness_start(&h);
	for (int i = 0; i < 5000; i++)
		ck_assert_int_ne(asprintf(&urls[i], "http://v.example/%d", i),
		    -1);
	res = calloc(5000, sizeof(*res));
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT,
	    (const char *const *)urls, 5000, res, 500, 4, NULL, NULL), 0);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_DELETE,
	    (const char *const *)urls + 1000, 2500, res, 500, 4, NULL, NULL),
	    0);
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	ck_assert_uint_eq(v.urls, 2500);
	ck_assert_uint_eq(v.counter_mismatches, 0);
	nddd_close(c);
	for (int i = 0; i < 5000; i++)
		free(urls[i]);
	free(urls);
	free(res);
	harness_cleanup(&h);
}
END_TEST

/*
 * The most request workers [server] workers allows: each holds read
 * transactions of the store, and the store's reader table must have a slot
 * for every one of them, the writers' and the loop's (LMDB's default, 126,
 * does not: such a daemon would not start).  Checks, submits, document
 * queries and verify, from several clients at once, all read.
 */
START_TEST(test_most_workers)
{
	enum { NURLS = 20000, NCLIENTS = 4, NDOCS = 200 };
	struct harness h;
	nddd_client *c[NCLIENTS];
	struct nddd_url_result *res;
	struct nddd_verify v;
	struct nddd_reply *r;
	char **urls = malloc(NURLS * sizeof(*urls)), body[128], url[64];
	uint64_t id;
	int i, k;

	harness_init(&h, "[server]\nworkers = 256");
	harness_start(&h);
	for (i = 0; i < NURLS; i++)
		ck_assert_int_ne(asprintf(&urls[i], "http://w.example/%d", i),
		    -1);
	res = calloc(NURLS, sizeof(*res));
	for (k = 0; k < NCLIENTS; k++)
		c[k] = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c[0], NDDD_URL_SUBMIT,
	    (const char *const *)urls, NURLS, res, 50, 64, NULL, NULL), 0);
	nddd_urls_results_free(res, NURLS);
	/* Many requests in flight on every connection, then every reply. */
	for (i = 0; i < NDOCS; i++) {
		snprintf(url, sizeof(url), "http://w.example/doc/%d", i);
		snprintf(body, sizeof(body), "worker %d reads the store %d "
		    "times over", i, i * 7);
		ck_assert_int_eq(nddd_send_doc_submit(c[i % NCLIENTS], url,
		    strlen(url), body, strlen(body), NDDD_TEXT, 0, &id), 0);
	}
	for (k = 0; k < NCLIENTS; k++) {
		for (i = 0; i < 64; i++) {
			ck_assert_int_eq(nddd_send_urls(c[k], NDDD_URL_CHECK,
			    (const char *const *)urls + (size_t)(i * 300),
			    NULL, 300, &id), 0);
			snprintf(body, sizeof(body), "worker %d reads the "
			    "store %d times over", i, i * 7);
			ck_assert_int_eq(nddd_send_doc_query(c[k], body,
			    strlen(body), NDDD_TEXT, -1, &id), 0);
		}
	}
	for (k = 0; k < NCLIENTS; k++) {
		while (nddd_outstanding(c[k]) > 0) {
			ck_assert_int_eq(nddd_recv(c[k], &r), 0);
			ck_assert_msg(r->code == NDDD_OK, "reply %" PRIu64
			    ": code %d: %s", r->id, (int)r->code,
			    r->message ? r->message : "");
			if (r->kind == NDDD_REPLY_URLS)
				for (size_t j = 0; j < r->nresults; j++)
					ck_assert_uint_eq(r->results[j].count,
					    1);
			nddd_reply_free(r);
		}
	}
	ck_assert_int_eq(nddd_verify(c[0], &v), 0);
	ck_assert_msg(v.consistent, "%s", v.detail);
	ck_assert_uint_eq(v.urls, NURLS);
	for (k = 0; k < NCLIENTS; k++)
		nddd_close(c[k]);
	ck_assert_int_eq(harness_stop(&h), 0);
	for (i = 0; i < NURLS; i++)
		free(urls[i]);
	free(urls);
	free(res);
	harness_cleanup(&h);
}
END_TEST

Suite *ops_suite(void);

Suite *
ops_suite(void)
{
	Suite *s = suite_create("ops");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_metrics_and_health);
	tcase_add_test(tc, test_metrics_listener_limits);
	tcase_add_test(tc, test_idle_and_slow_frame_timeouts);
	tcase_add_test(tc, test_verify_after_mixed_load);
	tcase_add_test(tc, test_most_workers);
	suite_add_tcase(s, tc);
	return s;
}
