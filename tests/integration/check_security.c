/*
 * Integration tests of who may do what: token roles, their reload, the
 * refusal to listen openly without authentication, TLS with and without
 * client certificates (certificates made by the test itself with the
 * openssl command), and the refusal to run as root.
 */
#include <check.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#define READ_TOKEN  "read-token-0123456789"
#define WRITE_TOKEN "write-token-0123456789"
#define ADMIN_TOKEN "admin-token-0123456789"

static void
write_tokens(const struct harness *h, const char *text)
{
	char *path;
	FILE *f;

	ck_assert_int_ne(asprintf(&path, "%s/tokens", h->dir), -1);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	free(path);
}

/* One URL op with token; returns the code of its first item or of the
 * refusal, and the count in *count. */
static enum nddd_code
op_as(const struct harness *h, const char *token, enum nddd_url_op op,
    const char *url, uint64_t *count)
{
	struct nddd_options o = { .timeout_ms = 10000, .token = token };
	nddd_client *c = harness_client_opts(h->address, &o);
	struct nddd_reply *r;
	enum nddd_code code;
	uint64_t id;

	ck_assert_int_eq(nddd_send_urls(c, op, &url, NULL, 1, &id), 0);
	ck_assert_int_eq(nddd_recv(c, &r), 0);
	if (r->kind == NDDD_REPLY_ERROR) {
		code = r->code;
		*count = 0;
	} else {
		code = r->results[0].code;
		*count = r->results[0].count;
	}
	nddd_reply_free(r);
	nddd_close(c);
	return code;
}

START_TEST(test_roles)
{
	struct harness h;
	char conf[512];
	uint64_t n;
	const char *u = "http://roles.example/";
	struct nddd_options o = { .timeout_ms = 10000 };
	struct nddd_stats st;
	struct nddd_verify v;
	nddd_client *c;

	harness_init(&h, NULL);
	write_tokens(&h, "# tokens\n" READ_TOKEN " read\n" WRITE_TOKEN
	    " write\n\n" ADMIN_TOKEN " admin  # ops\n");
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s/tokens", h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);

	/* No token, an unknown token: nothing is allowed. */
	ck_assert_int_eq(op_as(&h, NULL, NDDD_URL_CHECK, u, &n),
	    NDDD_PERMISSION_DENIED);
	ck_assert_int_eq(op_as(&h, "not-a-known-token-at-all", NDDD_URL_SUBMIT,
	    u, &n), NDDD_PERMISSION_DENIED);
	/* read: checks only; its refused submit changed nothing. */
	ck_assert_int_eq(op_as(&h, READ_TOKEN, NDDD_URL_SUBMIT, u, &n),
	    NDDD_PERMISSION_DENIED);
	ck_assert_int_eq(op_as(&h, READ_TOKEN, NDDD_URL_CHECK, u, &n), NDDD_OK);
	ck_assert_uint_eq(n, 0);
	/* write: submits, but no deletes. */
	ck_assert_int_eq(op_as(&h, WRITE_TOKEN, NDDD_URL_SUBMIT, u, &n),
	    NDDD_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(op_as(&h, WRITE_TOKEN, NDDD_URL_DELETE, u, &n),
	    NDDD_PERMISSION_DENIED);
	ck_assert_int_eq(op_as(&h, READ_TOKEN, NDDD_URL_CHECK, u, &n), NDDD_OK);
	ck_assert_uint_eq(n, 1);
	/* admin: everything. */
	ck_assert_int_eq(op_as(&h, ADMIN_TOKEN, NDDD_URL_DELETE, u, &n),
	    NDDD_OK);
	ck_assert_uint_eq(n, 1);

	/* Stats: basic for read, full for admin; verify: admin only. */
	o.token = READ_TOKEN;
	c = harness_client_opts(h.address, &o);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_str_ne(st.version, "");
	ck_assert_uint_eq(st.cbf_counters, 0);
	ck_assert_int_eq(nddd_verify(c, &v), -1);
	ck_assert_msg(strstr(nddd_errstr(c), "PERMISSION_DENIED") != NULL,
	    "%s", nddd_errstr(c));
	nddd_close(c);
	o.token = ADMIN_TOKEN;
	c = harness_client_opts(h.address, &o);
	ck_assert_int_eq(nddd_stats(c, &st), 0);
	ck_assert_uint_gt(st.cbf_counters, 0);
	ck_assert_int_eq(nddd_verify(c, &v), 0);
	ck_assert(v.consistent);
	nddd_close(c);

	/* Documents: read may query and ask what a page would join, write
	 * may store, only admin may delete. */
	{
		struct nddd_reply *r;
		uint64_t id;
		const char *body = "a story about roles and tokens";

		o.token = READ_TOKEN;
		c = harness_client_opts(h.address, &o);
		ck_assert_int_eq(nddd_send_doc_submit(c, u, strlen(u), body,
		    strlen(body), NDDD_TEXT, 0, &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->code, NDDD_PERMISSION_DENIED);
		nddd_reply_free(r);
		ck_assert_int_eq(nddd_send_doc_submit(c, u, strlen(u), body,
		    strlen(body), NDDD_TEXT, 1, &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		ck_assert_uint_eq(r->doc.doc_id, 0);
		nddd_reply_free(r);
		nddd_close(c);
		o.token = WRITE_TOKEN;
		c = harness_client_opts(h.address, &o);
		ck_assert_int_eq(nddd_send_doc_submit(c, u, strlen(u), body,
		    strlen(body), NDDD_TEXT, 0, &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		ck_assert_uint_eq(r->doc.doc_id, 1);
		nddd_reply_free(r);
		ck_assert_int_eq(nddd_send_doc_delete(c, u, strlen(u), &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->code, NDDD_PERMISSION_DENIED);
		nddd_reply_free(r);
		ck_assert_int_eq(nddd_send_doc_get(c, u, strlen(u), &id), 0);
		r = nddd_call(c, id);
		ck_assert_int_eq(r->kind, NDDD_REPLY_DOC);
		nddd_reply_free(r);
		nddd_close(c);
		o.token = ADMIN_TOKEN;
		c = harness_client_opts(h.address, &o);
		ck_assert_int_eq(nddd_send_doc_delete(c, u, strlen(u), &id), 0);
		r = nddd_call(c, id);
		ck_assert_uint_eq(r->deleted_id, 1);
		nddd_reply_free(r);
		nddd_close(c);
	}

	/* SIGHUP reloads: the read token goes, a new one comes. */
	write_tokens(&h, ADMIN_TOKEN " admin\nfresh-token-0123456789 read\n");
	kill(h.pid, SIGHUP);
	usleep(300000);
	ck_assert_int_eq(op_as(&h, READ_TOKEN, NDDD_URL_CHECK, u, &n),
	    NDDD_PERMISSION_DENIED);
	ck_assert_int_eq(op_as(&h, "fresh-token-0123456789", NDDD_URL_CHECK, u,
	    &n), NDDD_OK);
	/* A bad file on reload keeps the old tokens. */
	write_tokens(&h, "short admin\n");
	kill(h.pid, SIGHUP);
	usleep(300000);
	ck_assert_int_eq(op_as(&h, "fresh-token-0123456789", NDDD_URL_CHECK, u,
	    &n), NDDD_OK);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_bad_token_file_stops_startup)
{
	struct harness h;
	char conf[512], *out;

	harness_init(&h, NULL);
	write_tokens(&h, "tooshort read\nabcdefghijklmnopqrstuvwxyz root\n");
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s/tokens", h.dir);
	harness_add_conf(&h, conf);
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_msg(strstr(out, "tokens:1: token shorter") != NULL, "%s",
	    out);
	ck_assert_msg(strstr(out, "tokens:2: unknown role") != NULL, "%s",
	    out);
	free(out);
	harness_cleanup(&h);
}
END_TEST

/*
 * Waits up to 10 s for needle in the daemon's log; returns the log
 * (caller frees), failing the test if needle never shows.
 */
static char *
wait_for_log(const struct harness *h, const char *needle)
{
	char *log = NULL;

	for (int i = 0; i < 200; i++) {
		free(log);
		log = tu_read_file(h->log_path, NULL);
		if (log != NULL && strstr(log, needle) != NULL)
			return log;
		usleep(50000);
	}
	ck_abort_msg("'%s' not in the log:\n%s", needle, log ? log : "");
	return log;
}

/*
 * A token never reaches the log, even in a line whose columns are
 * swapped (where the "role" is the token) or whose role is unknown; the
 * error still names the file and the line.
 */
#define SECRET "s3cret-that-must-not-be-logged-0123"
#define SECRET2 "an0ther-s3cret-never-logged-4567"

START_TEST(test_token_never_logged)
{
	struct harness h;
	char conf[512], want[600], *out, *log;

	harness_init(&h, NULL);
	write_tokens(&h, ADMIN_TOKEN " admin\nadmin " SECRET "\n"
	    "# a comment\n" SECRET2 " " SECRET "\n" SECRET "\n");
	snprintf(conf, sizeof(conf), "[auth]\ntokens_file = %s/tokens", h.dir);
	harness_add_conf(&h, conf);
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_msg(strstr(out, SECRET) == NULL && strstr(out, SECRET2) ==
	    NULL, "a token in the output:\n%s", out);
	snprintf(want, sizeof(want), "%s/tokens:2: the role comes first",
	    h.dir);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s/tokens:4: unknown role", h.dir);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	snprintf(want, sizeof(want), "%s/tokens:5: want TOKEN ROLE", h.dir);
	ck_assert_msg(strstr(out, want) != NULL, "%s", out);
	free(out);

	/* A reload of such a file is refused as quietly. */
	write_tokens(&h, ADMIN_TOKEN " admin\n");
	harness_start(&h);
	write_tokens(&h, ADMIN_TOKEN " admin\nwrite " SECRET "\n");
	kill(h.pid, SIGHUP);
	snprintf(want, sizeof(want), "%s/tokens:2: the role comes first",
	    h.dir);
	log = wait_for_log(&h, want);
	ck_assert_msg(strstr(log, "keeping the old tokens") != NULL, "%s",
	    log);
	ck_assert_int_eq(harness_stop(&h), 0);
	free(log);
	log = tu_read_file(h.log_path, NULL);
	ck_assert_msg(strstr(log, SECRET) == NULL, "a token in the log:\n%s",
	    log);
	free(log);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_open_listener_needs_authentication)
{
	struct harness h;
	char conf[512], *out;

	harness_init(&h, NULL);
	snprintf(conf, sizeof(conf), "[server]\nlisten = 0.0.0.0:%d", h.port);
	harness_add_conf(&h, conf);
	ck_assert_int_ne(harness_start_failing(&h, &out), 0);
	ck_assert_msg(strstr(out, "refusing to listen on 0.0.0.0") != NULL,
	    "%s", out);
	free(out);
	/* Insisting works, with a warning. */
	harness_add_conf(&h, "[auth]\nallow_unauthenticated = yes");
	harness_start(&h);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);

	/* With tokens, an open listener is fine. */
	harness_init(&h, NULL);
	write_tokens(&h, ADMIN_TOKEN " admin\n");
	snprintf(conf, sizeof(conf), "[server]\nlisten = 0.0.0.0:%d\n[auth]\n"
	    "tokens_file = %s/tokens", h.port, h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);
}
END_TEST

static void
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;

	va_start(ap, fmt);
	ck_assert_int_ne(vasprintf(&cmd, fmt, ap), -1);
	va_end(ap);
	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
	free(cmd);
}

/* A CA, a server certificate for 127.0.0.1 and a client certificate. */
static void
make_certs(const char *dir)
{
	sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
	    "-subj /CN=test-ca -keyout ca.key -out ca.pem 2>/dev/null", dir);
	sh("cd %s && openssl req -newkey rsa:2048 -nodes -subj /CN=localhost "
	    "-keyout server.key -out server.csr 2>/dev/null && "
	    "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext && "
	    "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key "
	    "-CAcreateserial -days 2 -extfile ext -out server.pem 2>/dev/null",
	    dir);
	sh("cd %s && openssl req -newkey rsa:2048 -nodes -subj /CN=crawler "
	    "-keyout client.key -out client.csr 2>/dev/null && "
	    "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key "
	    "-CAcreateserial -days 2 -out client.pem 2>/dev/null", dir);
	/* Other subjects of the same CA: another client, and one whose
	 * subject has two common names. */
	sh("cd %s && for s in intruder:/O=nddd/CN=intruder "
	    "twice:/CN=intruder/CN=crawler; do n=${s%%%%:*}; "
	    "openssl req -newkey rsa:2048 -nodes -subj ${s#*:} -keyout $n.key "
	    "-out $n.csr 2>/dev/null && openssl x509 -req -in $n.csr "
	    "-CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out $n.pem "
	    "2>/dev/null || exit 1; done", dir);
	/* A second CA the server does not trust. */
	sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
	    "-subj /CN=other-ca -keyout other.key -out other.pem 2>/dev/null "
	    "&& openssl req -newkey rsa:2048 -nodes -subj /CN=stranger "
	    "-keyout stranger.key -out stranger.csr 2>/dev/null && "
	    "openssl x509 -req -in stranger.csr -CA other.pem -CAkey other.key "
	    "-CAcreateserial -days 2 -out stranger.pem 2>/dev/null", dir);
}

static char *
in_dir(const char *dir, const char *name)
{
	char *p;

	ck_assert_int_ne(asprintf(&p, "%s/%s", dir, name), -1);
	return p;
}

/*
 * The server must refuse a client certificate: either at connect or, as
 * TLS 1.3 finishes the client's handshake before the server checks the
 * certificate, at first use.
 */
static void
assert_cert_refused(const char *addr, const struct nddd_options *o)
{
	const char *u[] = { "http://tls.example/" };
	struct nddd_url_result res[1];
	nddd_client *c;
	char *err;

	c = nddd_connect_opts(addr, o, &err);
	if (c != NULL) {
		ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, u, 1, res, 1, 1,
		    NULL, NULL), -1);
		/* The connection failed: the URL was not answered. */
		ck_assert_int_eq(res[0].code, NDDD_UNAVAILABLE);
		nddd_urls_results_free(res, 1);
		nddd_close(c);
	} else
		free(err);
}

START_TEST(test_tls)
{
	struct harness h;
	char conf[1024], addr[64], *ca, *cert, *key, *scert, *skey, *err;
	int tls_port = harness_free_port();
	struct nddd_options o = { .timeout_ms = 10000, .tls = 1 };
	struct nddd_url_result res[1];
	const char *u[] = { "http://tls.example/" };
	nddd_client *c;

	harness_init(&h, NULL);
	make_certs(h.dir);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", tls_port);
	snprintf(conf, sizeof(conf), "[tls]\nlisten = %s\ncert = %s/server.pem\n"
	    "key = %s/server.key\n", addr, h.dir, h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);
	ca = in_dir(h.dir, "ca.pem");
	o.tls_ca = ca;
	c = harness_client_opts(addr, &o);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, u, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_close(c);
	/* The plain listener sees the same data. */
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, u, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_close(c);
	/* A client that does not trust the server's CA refuses it. */
	o.tls_ca = in_dir(h.dir, "other.pem");
	ck_assert_ptr_null(nddd_connect_opts(addr, &o, &err));
	ck_assert_msg(strstr(err, "does not verify") != NULL, "%s", err);
	free(err);
	free((char *)o.tls_ca);
	ck_assert_int_eq(harness_stop(&h), 0);

	/* Client certificates required. */
	snprintf(conf, sizeof(conf), "[tls]\nclient_ca = %s/ca.pem\n", h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);
	o.tls_ca = ca;
	assert_cert_refused(addr, &o);		/* none */
	scert = in_dir(h.dir, "stranger.pem");
	skey = in_dir(h.dir, "stranger.key");
	o.tls_cert = scert;
	o.tls_key = skey;
	assert_cert_refused(addr, &o);		/* signed by another CA */
	cert = in_dir(h.dir, "client.pem");
	key = in_dir(h.dir, "client.key");
	o.tls_cert = cert;
	o.tls_key = key;
	c = harness_client_opts(addr, &o);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, u, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, 1);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	free(ca);
	free(cert);
	free(key);
	free(scert);
	free(skey);
	harness_cleanup(&h);
}
END_TEST

/*
 * [tls] client_cn: of the clients of the CA, only those whose subject's
 * common name is listed are served; the log names the subjects refused.
 * A client served may connect again (a new handshake each time: libnddd
 * keeps no session).
 */
START_TEST(test_tls_client_cn)
{
	struct harness h;
	char conf[1024], addr[64], *ca, *cert, *key, *log;
	int tls_port = harness_free_port();
	struct nddd_options o = { .timeout_ms = 10000, .tls = 1 };
	struct nddd_url_result res[1];
	const char *u[] = { "http://cn.example/" };
	nddd_client *c;

	harness_init(&h, NULL);
	make_certs(h.dir);
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", tls_port);
	snprintf(conf, sizeof(conf), "[tls]\nlisten = %s\ncert = %s/server.pem\n"
	    "key = %s/server.key\nclient_ca = %s/ca.pem\n"
	    "client_cn = ops, crawler\n", addr, h.dir, h.dir, h.dir);
	harness_add_conf(&h, conf);
	harness_start(&h);
	ca = in_dir(h.dir, "ca.pem");
	o.tls_ca = ca;

	/* crawler is listed: served, twice. */
	cert = in_dir(h.dir, "client.pem");
	key = in_dir(h.dir, "client.key");
	o.tls_cert = cert;
	o.tls_key = key;
	for (int i = 0; i < 2; i++) {
		c = harness_client_opts(addr, &o);
		ck_assert_int_eq(nddd_urls(c, NDDD_URL_SUBMIT, u, 1, res, 1, 1,
		    NULL, NULL), 0);
		ck_assert_uint_eq(res[0].count, (uint64_t)i + 1);
		nddd_close(c);
	}
	free(cert);
	free(key);

	/* intruder, of the same CA, is not; nor a subject of two CNs. */
	cert = in_dir(h.dir, "intruder.pem");
	key = in_dir(h.dir, "intruder.key");
	o.tls_cert = cert;
	o.tls_key = key;
	assert_cert_refused(addr, &o);
	log = wait_for_log(&h, "client certificate 'CN=intruder,O=nddd' is "
	    "not one of [tls] client_cn; refused");
	free(log);
	free(cert);
	free(key);
	cert = in_dir(h.dir, "twice.pem");
	key = in_dir(h.dir, "twice.key");
	o.tls_cert = cert;
	o.tls_key = key;
	assert_cert_refused(addr, &o);
	log = wait_for_log(&h, "client certificate 'CN=crawler,CN=intruder' "
	    "is not one of [tls] client_cn");
	free(log);
	free(cert);
	free(key);

	/* Nothing the refused clients sent was carried out. */
	c = harness_client(&h);
	ck_assert_int_eq(nddd_urls(c, NDDD_URL_CHECK, u, 1, res, 1, 1, NULL,
	    NULL), 0);
	ck_assert_uint_eq(res[0].count, 2);
	nddd_close(c);
	ck_assert_int_eq(harness_stop(&h), 0);
	harness_cleanup(&h);

	/* A list without client_ca is refused at start-up. */
	harness_init(&h, NULL);
	snprintf(conf, sizeof(conf), "[tls]\nlisten = %s\ncert = %s/server.pem\n"
	    "key = %s/server.key\nclient_cn = crawler\n", addr, h.dir, h.dir);
	harness_add_conf(&h, conf);
	ck_assert_int_ne(harness_start_failing(&h, &log), 0);
	ck_assert_msg(strstr(log, "client_cn needs [tls] client_ca") != NULL,
	    "%s", log);
	free(log);
	free(ca);
	harness_cleanup(&h);
}
END_TEST

START_TEST(test_refuses_root)
{
	struct harness h;
	char *cmd, *out;
	int status;

	if (geteuid() != 0) {
		printf("test_refuses_root: SKIPPED: not running as root\n");
		return;
	}
	harness_init(&h, NULL);
	ck_assert_int_ne(asprintf(&cmd, "%s -c %s > %s/out 2>&1",
	    getenv("NDDD_BIN") ? getenv("NDDD_BIN") : "daemon/nddd",
	    h.conf_path, h.dir), -1);
	status = system(cmd);
	ck_assert_int_ne(status, 0);
	free(cmd);
	ck_assert_int_ne(asprintf(&cmd, "%s/out", h.dir), -1);
	out = tu_read_file(cmd, NULL);
	ck_assert_msg(out && strstr(out, "refusing to run as root"), "%s", out);
	free(out);
	free(cmd);
	harness_cleanup(&h);
}
END_TEST

Suite *security_suite(void);

Suite *
security_suite(void)
{
	Suite *s = suite_create("security");
	TCase *tc = tcase_create("security");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_roles);
	tcase_add_test(tc, test_bad_token_file_stops_startup);
	tcase_add_test(tc, test_token_never_logged);
	tcase_add_test(tc, test_open_listener_needs_authentication);
	tcase_add_test(tc, test_tls);
	tcase_add_test(tc, test_tls_client_cn);
	tcase_add_test(tc, test_refuses_root);
	suite_add_tcase(s, tc);
	return s;
}
