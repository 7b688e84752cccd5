/*
 * libnddd: the C client library of nddd.  See nddd.h.
 *
 * The socket is non-blocking; the client keeps an output buffer of encoded
 * requests and an input buffer of received bytes, and a wait always both
 * sends and receives, so a pipelining client never deadlocks against a
 * server that has stopped reading until its replies are read.  With TLS,
 * the same happens through OpenSSL on the same socket.
 *
 * Digests are made with urlcanon, the daemon's own canonicalizer (from the
 * fingerprint library), and OpenSSL's MD5, as the daemon keys URLs
 * (urlset_key_canonical): a digest made here and a URL sent as text reach
 * the same record.
 */
#include "nddd.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "nddd.pb-c.h"
#include "urlcanon.h"

/* Largest reply frame accepted: a reply to the largest batch is ~1 MiB. */
#define NDDD_MAX_REPLY (64u << 20)

/*
 * The most a doc batch's reply takes, as the server bounds it
 * (docreq_batch_reply_bound): a base, and per document a result of at most
 * 1 KiB and an item error.  The server refuses a batch whose bound passes
 * its max_frame.
 */
#define DOC_REPLY_BASE 4096
#define DOC_REPLY_ITEM (1024 + 96)
/* A request frame's own fields around its documents (id, the op's tag and
 * length), with room to spare; the token comes on top. */
#define DOC_FRAME_OVERHEAD 64

struct nddd_client {
	int fd;
	SSL_CTX *tls_ctx;	/* NULL for plain TCP */
	SSL *ssl;
	char *token;
	int timeout_ms;
	uint64_t next_id;
	size_t outstanding;
	char err[256];
	unsigned char *out;	/* queued bytes: out[out_off..out_len) */
	size_t out_off, out_len, out_cap;
	unsigned char *in;	/* received bytes: in[in_off..in_len) */
	size_t in_off, in_len, in_cap;
	enum nddd_durability durability;	/* of submits and deletes */
	struct nddd_url_opts url_opts;	/* of URL batches; ns owned, NULL:
					   the default namespace */
	char *doc_ns;		/* of document requests; NULL: the default
				   namespace */
	enum nddd_match doc_match;	/* of document requests */
	size_t max_frame;	/* the server's [server] max_frame */
	nddd_canon *canon;	/* nddd_urls sends digests; NULL: URLs */
	uint32_t server_shards;	/* the last reply's Response.shards */
};

struct nddd_canon {
	struct urlcanon *uc;
	EVP_MD *md5;
	EVP_MD_CTX *md_ctx;
	char id[URLCANON_ID_LEN];
};

uint32_t
nddd_server_shards(const nddd_client *c)
{
	return c->server_shards;
}

const char *
nddd_code_name(enum nddd_code code)
{
	static const char *const names[] = {
		"OK", "INVALID_ARGUMENT", "NOT_FOUND", "PERMISSION_DENIED",
		"RESOURCE_EXHAUSTED", "EMPTY_DOCUMENT", "UNAVAILABLE",
		"INTERNAL", "FAILED_PRECONDITION", "MOVED",
	};

	if ((unsigned)code < sizeof(names) / sizeof(names[0]))
		return names[code];
	return "UNKNOWN";
}

static int
fail(nddd_client *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
fail(nddd_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
	return -1;
}

const char *
nddd_errstr(const nddd_client *c)
{
	return c->err;
}

static int
split_address(const char *address, char *host, size_t hsize, char *port,
    size_t psize)
{
	const char *colon;
	size_t hlen;

	if (address[0] == '[') {
		const char *close = strchr(address, ']');

		if (close == NULL)
			return -1;
		hlen = (size_t)(close - address - 1);
		if (hlen >= hsize)
			return -1;
		memcpy(host, address + 1, hlen);
		host[hlen] = '\0';
		if (close[1] == '\0')
			snprintf(port, psize, "%d", NDDD_DEFAULT_PORT);
		else if (close[1] == ':' && close[2] != '\0')
			snprintf(port, psize, "%s", close + 2);
		else
			return -1;
		return 0;
	}
	colon = strrchr(address, ':');
	hlen = colon ? (size_t)(colon - address) : strlen(address);
	if (hlen >= hsize || hlen == 0)
		return -1;
	memcpy(host, address, hlen);
	host[hlen] = '\0';
	if (colon == NULL)
		snprintf(port, psize, "%d", NDDD_DEFAULT_PORT);
	else if (colon[1] != '\0')
		snprintf(port, psize, "%s", colon + 1);
	else
		return -1;
	return 0;
}

static int
connect_one(const struct addrinfo *ai, int timeout_ms, int *err)
{
	struct pollfd pfd;
	socklen_t len = sizeof(*err);
	int fd, one = 1;

	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, ai->ai_protocol);
	if (fd == -1) {
		*err = errno;
		return -1;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) == -1) {
		if (errno != EINPROGRESS) {
			*err = errno;
			close(fd);
			return -1;
		}
		pfd.fd = fd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1) != 1) {
			*err = ETIMEDOUT;
			close(fd);
			return -1;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, err, &len) == -1 ||
		    *err != 0) {
			close(fd);
			return -1;
		}
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
tls_fail(char **err, const char *what)
{
	char buf[256];

	ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
	if (asprintf(err, "TLS: %s: %s", what, buf) == -1)
		*err = NULL;
	return -1;
}

/* Waits until fd is ready for events or the deadline passes. */
static int
wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };

	return poll(&pfd, 1, timeout_ms > 0 ? timeout_ms : -1) == 1 ? 0 : -1;
}

static int
tls_start(nddd_client *c, const char *host, const struct nddd_options *o,
    char **err)
{
	const char *name = o->tls_name ? o->tls_name : host;
	int rc;

	if ((c->tls_ctx = SSL_CTX_new(TLS_client_method())) == NULL)
		return tls_fail(err, "cannot create a context");
	SSL_CTX_set_min_proto_version(c->tls_ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(c->tls_ctx, SSL_VERIFY_PEER, NULL);
	if ((o->tls_ca ? SSL_CTX_load_verify_locations(c->tls_ctx, o->tls_ca,
	    NULL) : SSL_CTX_set_default_verify_paths(c->tls_ctx)) != 1)
		return tls_fail(err, o->tls_ca ? o->tls_ca : "CA store");
	if (o->tls_cert != NULL && (SSL_CTX_use_certificate_chain_file(
	    c->tls_ctx, o->tls_cert) != 1 || SSL_CTX_use_PrivateKey_file(
	    c->tls_ctx, o->tls_key ? o->tls_key : o->tls_cert,
	    SSL_FILETYPE_PEM) != 1))
		return tls_fail(err, o->tls_cert);
	if ((c->ssl = SSL_new(c->tls_ctx)) == NULL ||
	    SSL_set_fd(c->ssl, c->fd) != 1)
		return tls_fail(err, "cannot set up the connection");
	SSL_set_mode(c->ssl, SSL_MODE_ENABLE_PARTIAL_WRITE |
	    SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* An address is checked against the certificate's IP entries, a
	 * name against its DNS names. */
	if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), name) != 1) {
		if (SSL_set1_host(c->ssl, name) != 1)
			return tls_fail(err, "cannot set the name to verify");
		SSL_set_tlsext_host_name(c->ssl, name);
	}
	for (;;) {
		if ((rc = SSL_connect(c->ssl)) == 1)
			return 0;
		switch (SSL_get_error(c->ssl, rc)) {
		case SSL_ERROR_WANT_READ:
			if (wait_fd(c->fd, POLLIN, c->timeout_ms) == -1)
				goto timeout;
			break;
		case SSL_ERROR_WANT_WRITE:
			if (wait_fd(c->fd, POLLOUT, c->timeout_ms) == -1)
				goto timeout;
			break;
		default:
			if (SSL_get_verify_result(c->ssl) != X509_V_OK) {
				if (asprintf(err, "TLS: the server's "
				    "certificate does not verify: %s",
				    X509_verify_cert_error_string(
				    SSL_get_verify_result(c->ssl))) == -1)
					*err = NULL;
				return -1;
			}
			return tls_fail(err, "handshake failed");
		}
	}
timeout:
	if (asprintf(err, "TLS: handshake timed out") == -1)
		*err = NULL;
	return -1;
}

nddd_client *
nddd_connect(const char *address, int timeout_ms, char **err)
{
	struct nddd_options o = { .timeout_ms = timeout_ms };

	return nddd_connect_opts(address, &o, err);
}

nddd_client *
nddd_connect_opts(const char *address, const struct nddd_options *o,
    char **err)
{
	struct addrinfo hints, *res = NULL, *ai;
	char host[256], port[16];
	nddd_client *c;
	int rc, last = ECONNREFUSED;

	*err = NULL;
	if (split_address(address, host, sizeof(host), port,
	    sizeof(port)) == -1) {
		if (asprintf(err, "%s: not an address (host:port)",
		    address) == -1)
			*err = NULL;
		return NULL;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &res)) != 0) {
		if (asprintf(err, "%s: %s", address, gai_strerror(rc)) == -1)
			*err = NULL;
		return NULL;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		freeaddrinfo(res);
		return NULL;
	}
	c->fd = -1;
	c->timeout_ms = o->timeout_ms;
	c->next_id = 1;
	c->max_frame = NDDD_DEFAULT_MAX_FRAME;
	if (o->token != NULL && (c->token = strdup(o->token)) == NULL)
		goto err;
	for (ai = res; ai != NULL && c->fd == -1; ai = ai->ai_next)
		c->fd = connect_one(ai, o->timeout_ms, &last);
	freeaddrinfo(res);
	res = NULL;
	if (c->fd == -1) {
		if (asprintf(err, "cannot connect to %s: %s", address,
		    strerror(last)) == -1)
			*err = NULL;
		goto err;
	}
	if (o->tls && tls_start(c, host, o, err) == -1)
		goto err;
	return c;
err:
	if (res != NULL)
		freeaddrinfo(res);
	nddd_close(c);
	return NULL;
}

void
nddd_close(nddd_client *c)
{
	if (c == NULL)
		return;
	if (c->ssl != NULL) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	SSL_CTX_free(c->tls_ctx);
	nddd_canon_free(c->canon);
	free((char *)c->url_opts.ns);
	free(c->doc_ns);
	free(c->token);
	if (c->fd != -1)
		close(c->fd);
	free(c->out);
	free(c->in);
	free(c);
}

size_t
nddd_outstanding(const nddd_client *c)
{
	return c->outstanding;
}

static int
grow(unsigned char **buf, size_t *cap, size_t need)
{
	size_t ncap = *cap ? *cap : 65536;
	unsigned char *p;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if ((p = realloc(*buf, ncap)) == NULL)
		return -1;
	*buf = p;
	*cap = ncap;
	return 0;
}

/*
 * Moves bytes through the socket or TLS: returns the count, 0 when it
 * would block (*want says for what: POLLIN or POLLOUT), -1 on an error
 * (with c->err set) and, for reads, -2 at the end of the stream.
 */
static ssize_t
io_write(nddd_client *c, const void *buf, size_t len, short *want)
{
	ssize_t n;
	int rc;

	*want = POLLOUT;
	if (c->ssl == NULL) {
		n = send(c->fd, buf, len, MSG_NOSIGNAL);
		if (n >= 0)
			return n;
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return fail(c, "send: %s", strerror(errno));
	}
	ERR_clear_error();
	if ((rc = SSL_write(c->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX :
	    len))) > 0)
		return rc;
	switch (SSL_get_error(c->ssl, rc)) {
	case SSL_ERROR_WANT_WRITE:
		return 0;
	case SSL_ERROR_WANT_READ:
		*want = POLLIN;
		return 0;
	default:
		return fail(c, "TLS write failed");
	}
}

static ssize_t
io_read(nddd_client *c, void *buf, size_t len, short *want)
{
	ssize_t n;
	int rc;

	*want = POLLIN;
	if (c->ssl == NULL) {
		n = recv(c->fd, buf, len, 0);
		if (n > 0)
			return n;
		if (n == 0)
			return -2;
		if (errno == EAGAIN || errno == EINTR)
			return 0;
		return fail(c, "recv: %s", strerror(errno));
	}
	ERR_clear_error();
	if ((rc = SSL_read(c->ssl, buf, (int)(len > INT32_MAX ? INT32_MAX :
	    len))) > 0)
		return rc;
	switch (SSL_get_error(c->ssl, rc)) {
	case SSL_ERROR_WANT_READ:
		return 0;
	case SSL_ERROR_WANT_WRITE:
		*want = POLLOUT;
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return -2;
	default:
		/* A peer that closes without close_notify ends the stream
		 * all the same. */
		if (ERR_peek_error() == 0)
			return -2;
		return fail(c, "TLS read failed");
	}
}

/* Writes what the socket takes now.  Returns -1 on a socket error. */
static int
flush_some(nddd_client *c)
{
	short want;

	while (c->out_off < c->out_len) {
		ssize_t n = io_write(c, c->out + c->out_off,
		    c->out_len - c->out_off, &want);

		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	return 0;
}

static int
queue_request(nddd_client *c, Nddd__V1__Request *req, uint64_t *id)
{
	size_t size, pos;

	if (c->fd == -1)
		return fail(c, "not connected");
	req->id = c->next_id++;
	if (c->token != NULL)
		req->token = c->token;
	size = nddd__v1__request__get_packed_size(req);
	if (size > UINT32_MAX)
		return fail(c, "request too large");
	/* Compact before growing. */
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (grow(&c->out, &c->out_cap, c->out_len + 4 + size) == -1)
		return fail(c, "out of memory");
	pos = c->out_len;
	c->out[pos] = (unsigned char)(size >> 24);
	c->out[pos + 1] = (unsigned char)(size >> 16);
	c->out[pos + 2] = (unsigned char)(size >> 8);
	c->out[pos + 3] = (unsigned char)size;
	nddd__v1__request__pack(req, c->out + pos + 4);
	c->out_len += 4 + size;
	c->outstanding++;
	if (id != NULL)
		*id = req->id;
	return flush_some(c);
}

void
nddd_set_durability(nddd_client *c, enum nddd_durability d)
{
	c->durability = d;
}

int
nddd_namespace_valid(const char *name)
{
	size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789._-");

	return name[n] == '\0' && n <= NDDD_NAMESPACE_MAX;
}

/*
 * Refuses here what the daemon would refuse, so that a caller learns it
 * before anything is sent; the daemon checks all the same.
 */
static int
check_ns_and_ttl(nddd_client *c, const char *name, uint64_t ttl_seconds)
{
	if (!nddd_namespace_valid(name))
		return fail(c, "not a namespace name: at most %d bytes of ASCII "
		    "letters, digits, '.', '_' and '-'", NDDD_NAMESPACE_MAX);
	if (ttl_seconds > NDDD_TTL_MAX)
		return fail(c, "a time to live of %llu s: at most %u s (100 "
		    "years)", (unsigned long long)ttl_seconds, NDDD_TTL_MAX);
	return 0;
}

int
nddd_set_url_opts(nddd_client *c, const struct nddd_url_opts *o)
{
	static const struct nddd_url_opts none;
	char *ns = NULL;

	if (o == NULL)
		o = &none;
	if (check_ns_and_ttl(c, o->ns ? o->ns : "", o->ttl_seconds) == -1)
		return -1;
	if (o->ns != NULL && o->ns[0] != '\0' && (ns = strdup(o->ns)) == NULL)
		return fail(c, "out of memory");
	free((char *)c->url_opts.ns);
	c->url_opts = *o;
	c->url_opts.ns = ns;
	return 0;
}

int
nddd_set_doc_namespace(nddd_client *c, const char *ns)
{
	char *copy = NULL;

	if (ns == NULL)
		ns = "";
	if (check_ns_and_ttl(c, ns, 0) == -1)
		return -1;
	if (ns[0] != '\0' && (copy = strdup(ns)) == NULL)
		return fail(c, "out of memory");
	free(c->doc_ns);
	c->doc_ns = copy;
	return 0;
}

void
nddd_set_doc_match(nddd_client *c, enum nddd_match m)
{
	c->doc_match = m;
}

/* The protocol's Match for m, or the client's when m is the default. */
static Nddd__V1__Match
match_of(const nddd_client *c, enum nddd_match m)
{
	if (m == NDDD_MATCH_DEFAULT)
		m = c->doc_match;
	return m == NDDD_MATCH_VERIFIED ? NDDD__V1__MATCH__MATCH_VERIFIED :
	    m == NDDD_MATCH_HAMMING ? NDDD__V1__MATCH__MATCH_HAMMING :
	    NDDD__V1__MATCH__MATCH_DEFAULT;
}

/*
 * The bytes the client's document namespace adds to a DocSubmit (its
 * field), and to the batch's length of it (one more, at most), and the
 * client's answer (2).
 */
static size_t
doc_ns_bytes(const nddd_client *c)
{
	size_t len = c->doc_ns != NULL ? strlen(c->doc_ns) : 0;

	return (len > 0 ? 1 + 1 + len + 1 : 0) + 2;
}

/*
 * Queues batch as op, with the client's URL options, and its durability
 * where op changes.
 */
static int
queue_batch(nddd_client *c, enum nddd_url_op op, Nddd__V1__UrlBatch *batch,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

	switch (op) {
	case NDDD_URL_SUBMIT:
		req.op_case = NDDD__V1__REQUEST__OP_URL_SUBMIT;
		req.url_submit = batch;
		break;
	case NDDD_URL_CHECK:
		req.op_case = NDDD__V1__REQUEST__OP_URL_CHECK;
		req.url_check = batch;
		break;
	case NDDD_URL_DELETE:
		req.op_case = NDDD__V1__REQUEST__OP_URL_DELETE;
		req.url_delete = batch;
		break;
	default:
		return fail(c, "unknown URL operation %d", (int)op);
	}
	/* The enums share their numbers with the protocol's. */
	if (op != NDDD_URL_CHECK)
		batch->durability = (Nddd__V1__Durability)c->durability;
	if (c->url_opts.ns != NULL)
		batch->namespace_ = (char *)c->url_opts.ns;
	if (op == NDDD_URL_SUBMIT)
		batch->ttl_seconds = c->url_opts.ttl_seconds;
	batch->with_times = c->url_opts.with_times != 0;
	return queue_request(c, &req, id);
}

int
nddd_send_urls(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    const size_t *lens, size_t n, uint64_t *id)
{
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;
	ProtobufCBinaryData *items;
	int rc;

	if ((items = calloc(n + 1, sizeof(*items))) == NULL)
		return fail(c, "out of memory");
	for (size_t i = 0; i < n; i++) {
		items[i].data = (uint8_t *)urls[i];
		items[i].len = lens ? lens[i] : strlen(urls[i]);
	}
	batch.n_urls = n;
	batch.urls = items;
	rc = queue_batch(c, op, &batch, id);
	free(items);
	return rc;
}

int
nddd_send_digests(nddd_client *c, enum nddd_url_op op, const char *canon_id,
    const unsigned char *digests, size_t n, uint64_t *id)
{
	Nddd__V1__UrlBatch batch = NDDD__V1__URL_BATCH__INIT;

	if (n > SIZE_MAX / NDDD_DIGEST_LEN)
		return fail(c, "request too large");
	batch.digests.data = (uint8_t *)digests;
	batch.digests.len = n * NDDD_DIGEST_LEN;
	batch.canon = (char *)(canon_id ? canon_id : "");
	return queue_batch(c, op, &batch, id);
}

int
nddd_send_namespace_set(nddd_client *c, const char *name,
    uint64_t default_ttl_seconds, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceSet m = NDDD__V1__NAMESPACE_SET__INIT;

	if (check_ns_and_ttl(c, name, default_ttl_seconds) == -1)
		return -1;
	m.name = (char *)name;
	m.default_ttl_seconds = default_ttl_seconds;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_SET;
	req.namespace_set = &m;
	return queue_request(c, &req, id);
}

int
nddd_send_namespace_drop(nddd_client *c, const char *name, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__NamespaceDrop m = NDDD__V1__NAMESPACE_DROP__INIT;

	if (check_ns_and_ttl(c, name, 0) == -1)
		return -1;
	m.name = (char *)name;
	req.op_case = NDDD__V1__REQUEST__OP_NAMESPACE_DROP;
	req.namespace_drop = &m;
	return queue_request(c, &req, id);
}

/* The namespace and the request of a url_forget; m holds the rest. */
static int
send_forget(nddd_client *c, const char *ns, Nddd__V1__UrlForget *m,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;

	if (ns != NULL) {
		if (check_ns_and_ttl(c, ns, 0) == -1)
			return -1;
		m->namespace_ = (char *)ns;
	}
	req.op_case = NDDD__V1__REQUEST__OP_URL_FORGET;
	req.url_forget = m;
	return queue_request(c, &req, id);
}

int
nddd_send_url_forget_host(nddd_client *c, const char *ns, const char *host,
    int subdomains, uint64_t *id)
{
	Nddd__V1__UrlForget m = NDDD__V1__URL_FORGET__INIT;

	/* Neither a host nor a prefix: the daemon would refuse it. */
	if (host == NULL || host[0] == '\0')
		return fail(c, "url_forget: an empty host");
	m.host = (char *)host;
	m.subdomains = subdomains != 0;
	return send_forget(c, ns, &m, id);
}

int
nddd_send_url_forget_prefix(nddd_client *c, const char *ns,
    const char *prefix, size_t len, uint64_t *id)
{
	Nddd__V1__UrlForget m = NDDD__V1__URL_FORGET__INIT;

	if (prefix == NULL || len == 0)
		return fail(c, "url_forget: an empty prefix");
	m.prefix.data = (uint8_t *)prefix;
	m.prefix.len = len;
	return send_forget(c, ns, &m, id);
}

int
nddd_send_doc_submit(nddd_client *c, const char *url, size_t url_len,
    const void *body, size_t body_len, enum nddd_doc_format format,
    int query_only, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocSubmit d = NDDD__V1__DOC_SUBMIT__INIT;

	d.url.data = (uint8_t *)url;
	d.url.len = url_len;
	d.body.data = (uint8_t *)body;
	d.body.len = body_len;
	d.format = format == NDDD_HTML ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
	d.query_only = query_only != 0;
	d.namespace_ = c->doc_ns;
	d.match = match_of(c, NDDD_MATCH_DEFAULT);
	req.op_case = NDDD__V1__REQUEST__OP_DOC_SUBMIT;
	req.doc_submit = &d;
	return queue_request(c, &req, id);
}

void
nddd_set_max_frame(nddd_client *c, size_t max_frame)
{
	c->max_frame = max_frame > 0 ? max_frame : NDDD_DEFAULT_MAX_FRAME;
}

/* The DocSubmit message of d, pointing at d's bytes. */
static void
doc_submit_of(Nddd__V1__DocSubmit *m, const struct nddd_doc_item *d)
{
	nddd__v1__doc_submit__init(m);
	m->url.data = (uint8_t *)d->url;
	m->url.len = d->url_len;
	m->body.data = (uint8_t *)d->body;
	m->body.len = d->body_len;
	m->format = d->format == NDDD_HTML ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
	m->query_only = d->query_only != 0;
	m->group = d->group;
	m->new_group = d->new_group != 0;
	m->with_sketch = d->with_sketch != 0;
	m->match = d->match == NDDD_MATCH_VERIFIED ?
	    NDDD__V1__MATCH__MATCH_VERIFIED : d->match == NDDD_MATCH_HAMMING ?
	    NDDD__V1__MATCH__MATCH_HAMMING : NDDD__V1__MATCH__MATCH_DEFAULT;
}

size_t
nddd_doc_item_size(const struct nddd_doc_item *d)
{
	Nddd__V1__DocSubmit m;
	size_t inner, len;

	doc_submit_of(&m, d);
	inner = nddd__v1__doc_submit__get_packed_size(&m);
	/* DocBatch.docs: a one-byte tag, the length's varint, the DocSubmit. */
	for (len = 1; inner >> (7 * len) != 0; len++)
		;
	return 1 + len + inner;
}

/* The most bytes of documents one frame of c can carry. */
static size_t
doc_frame_room(const nddd_client *c)
{
	size_t over = DOC_FRAME_OVERHEAD + (c->token ? strlen(c->token) +
	    6 : 0);

	return c->max_frame > over ? c->max_frame - over : 0;
}

size_t
nddd_doc_batch_limit(const nddd_client *c, size_t *max_bytes)
{
	size_t n = c->max_frame > DOC_REPLY_BASE + DOC_REPLY_ITEM ?
	    (c->max_frame - DOC_REPLY_BASE) / DOC_REPLY_ITEM : 1;

	if (max_bytes != NULL)
		*max_bytes = c->max_frame / 2;
	return n < NDDD_DOC_BATCH_MAX ? n : NDDD_DOC_BATCH_MAX;
}

int
nddd_send_docs(nddd_client *c, const struct nddd_doc_item *docs, size_t n,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocBatch batch = NDDD__V1__DOC_BATCH__INIT;
	Nddd__V1__DocSubmit *items, **ptrs;
	size_t bytes = 0, limit = nddd_doc_batch_limit(c, NULL);
	int rc;

	if (n == 0 || n > limit)
		return fail(c, "a doc batch of %zu documents: send 1 to %zu",
		    n, limit);
	for (size_t i = 0; i < n; i++)
		bytes += nddd_doc_item_size(&docs[i]) + doc_ns_bytes(c);
	if (bytes > doc_frame_room(c))
		return fail(c, "a doc batch of %zu bytes exceeds the max frame "
		    "(%zu bytes)", bytes, c->max_frame);
	items = malloc(n * sizeof(*items));
	ptrs = malloc(n * sizeof(*ptrs));
	if (items == NULL || ptrs == NULL) {
		free(items);
		free(ptrs);
		return fail(c, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		doc_submit_of(&items[i], &docs[i]);
		items[i].namespace_ = c->doc_ns;
		items[i].match = match_of(c, docs[i].match);
		ptrs[i] = &items[i];
	}
	batch.n_docs = n;
	batch.docs = ptrs;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_BATCH;
	req.doc_batch = &batch;
	rc = queue_request(c, &req, id);
	free(items);
	free(ptrs);
	return rc;
}

static int
send_query(nddd_client *c, Nddd__V1__DocQuery *q, int k, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__Distance dist = NDDD__V1__DISTANCE__INIT;

	if (k >= 0) {
		dist.k = (uint32_t)k;
		q->max_distance = &dist;
	} else if (q->what_case != NDDD__V1__DOC_QUERY__WHAT_SIMHASH)
		q->match = match_of(c, NDDD_MATCH_DEFAULT);
	q->namespace_ = c->doc_ns;
	req.op_case = NDDD__V1__REQUEST__OP_DOC_QUERY;
	req.doc_query = q;
	return queue_request(c, &req, id);
}

/* Asks for the neighbours of a body: within k (-1: the answer the
 * client's match says), its sketch sent back if asked. */
static int
send_body_query(nddd_client *c, const void *body, size_t body_len,
    enum nddd_doc_format format, int k, bool with_sketch, uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
	Nddd__V1__DocBody b = NDDD__V1__DOC_BODY__INIT;

	b.body.data = (uint8_t *)body;
	b.body.len = body_len;
	b.format = format == NDDD_HTML ? NDDD__V1__DOC_FORMAT__HTML :
	    NDDD__V1__DOC_FORMAT__TEXT;
	q.what_case = NDDD__V1__DOC_QUERY__WHAT_BODY;
	q.body = &b;
	q.with_sketch = with_sketch;
	return send_query(c, &q, k, id);
}

int
nddd_send_doc_query(nddd_client *c, const void *body, size_t body_len,
    enum nddd_doc_format format, int k, uint64_t *id)
{
	return send_body_query(c, body, body_len, format, k, false, id);
}

int
nddd_send_doc_query_sketch(nddd_client *c, const void *body,
    size_t body_len, enum nddd_doc_format format, uint64_t *id)
{
	return send_body_query(c, body, body_len, format, -1, true, id);
}

int
nddd_send_doc_query_simhash(nddd_client *c, uint64_t simhash, int k,
    uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;

	q.what_case = NDDD__V1__DOC_QUERY__WHAT_SIMHASH;
	q.simhash = simhash;
	return send_query(c, &q, k, id);
}

int
nddd_send_doc_query_print(nddd_client *c, uint64_t simhash,
    const void *sketch, size_t sketch_len, uint64_t *id)
{
	Nddd__V1__DocQuery q = NDDD__V1__DOC_QUERY__INIT;
	Nddd__V1__DocPrint p = NDDD__V1__DOC_PRINT__INIT;

	p.simhash = simhash;
	p.sketch.data = (uint8_t *)sketch;
	p.sketch.len = sketch_len;
	q.what_case = NDDD__V1__DOC_QUERY__WHAT_PRINT;
	q.print = &p;
	return send_query(c, &q, -1, id);
}

static int
send_ref(nddd_client *c, int get, const char *url, size_t url_len,
    uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__DocRef ref = NDDD__V1__DOC_REF__INIT;

	ref.url.data = (uint8_t *)url;
	ref.url.len = url_len;
	ref.namespace_ = c->doc_ns;
	if (get) {
		ref.match = match_of(c, NDDD_MATCH_DEFAULT);
		req.op_case = NDDD__V1__REQUEST__OP_DOC_GET;
		req.doc_get = &ref;
	} else {
		req.op_case = NDDD__V1__REQUEST__OP_DOC_DELETE;
		req.doc_delete = &ref;
	}
	return queue_request(c, &req, id);
}

int
nddd_send_doc_get(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id)
{
	return send_ref(c, 1, url, url_len, id);
}

int
nddd_send_doc_delete(nddd_client *c, const char *url, size_t url_len,
    uint64_t *id)
{
	return send_ref(c, 0, url, url_len, id);
}

int
nddd_send_verify(nddd_client *c, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__VerifyRequest v = NDDD__V1__VERIFY_REQUEST__INIT;

	req.op_case = NDDD__V1__REQUEST__OP_VERIFY;
	req.verify = &v;
	return queue_request(c, &req, id);
}

int
nddd_send_stats(nddd_client *c, uint64_t *id)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__StatsRequest stats = NDDD__V1__STATS_REQUEST__INIT;

	req.op_case = NDDD__V1__REQUEST__OP_STATS;
	req.stats = &stats;
	return queue_request(c, &req, id);
}

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sets *frame to the next complete frame's payload, or NULL. */
static int
next_frame(nddd_client *c, const unsigned char **frame, uint32_t *len)
{
	const unsigned char *p = c->in + c->in_off;
	size_t have = c->in_len - c->in_off;

	*frame = NULL;
	if (have < 4)
		return 0;
	*len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
	if (*len > NDDD_MAX_REPLY)
		return fail(c, "reply of %u bytes exceeds the client's limit",
		    *len);
	if (have >= 4 + (size_t)*len)
		*frame = p + 4;
	return 0;
}

static char *
dup_message(const Nddd__V1__Status *st)
{
	return strdup(st && st->message ? st->message : "");
}

static void
copy_stats(struct nddd_stats *o, const Nddd__V1__StatsResult *s)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->version, sizeof(o->version), "%s",
	    s->version ? s->version : "");
	o->uptime_seconds = s->uptime_seconds;
	o->urls = s->urls;
	if (s->cbf != NULL) {
		o->cbf_counters = s->cbf->counters;
		o->cbf_nonzero = s->cbf->nonzero;
		o->cbf_saturated = s->cbf->saturated;
		o->cbf_bytes = s->cbf->bytes;
		o->cbf_k = s->cbf->k;
	}
	o->checks = s->checks;
	o->checks_filter_only = s->checks_filter_only;
	o->filter_false_positives = s->filter_false_positives;
	o->submits_new = s->submits_new;
	o->submits_duplicate = s->submits_duplicate;
	o->deletes = s->deletes;
	o->commits = s->commits;
	o->store_bytes = s->store_bytes;
	o->connections = s->connections;
	o->docs = s->docs;
	snprintf(o->canon, sizeof(o->canon), "%s", s->canon ? s->canon : "");
	if (s->url_store != NULL) {
		const Nddd__V1__UrlStoreStats *u = s->url_store;

		o->url_store.journal_entries = u->journal_entries;
		o->url_store.journal_capacity = u->journal_capacity;
		o->url_store.journal_bytes = u->journal_bytes;
		o->url_store.journal_bytes_written = u->journal_bytes_written;
		o->url_store.journal_syncs = u->journal_syncs;
		o->url_store.groups = u->groups;
		o->url_store.flushes = u->flushes;
		o->url_store.merges = u->merges;
		o->url_store.merges_forced = u->merges_forced;
		o->url_store.segments = u->segments;
		o->url_store.small_segments = u->small_segments;
		o->url_store.records = u->records;
		o->url_store.dead_records = u->dead_records;
		o->url_store.store_bytes_written = u->store_bytes_written;
		o->url_store.pending = u->pending;
		o->url_store.index_bytes = u->index_bytes;
		o->url_store.journal_table_bytes = u->journal_table_bytes;
		o->url_store.host_runs = u->host_runs;
		o->url_store.host_keys = u->host_keys;
		o->url_store.host_merging = u->host_merging;
	}
	if (s->doc_store != NULL) {
		const Nddd__V1__DocStoreStats *d = s->doc_store;

		o->doc_store.journal_bytes = d->journal_bytes;
		o->doc_store.journal_bytes_written = d->journal_bytes_written;
		o->doc_store.journal_syncs = d->journal_syncs;
		o->doc_store.groups = d->groups;
		o->doc_store.checkpoints = d->checkpoints;
		o->doc_store.pending = d->pending;
		o->doc_store.failures = d->failures;
	}
	o->urls_dropping = s->urls_dropping;
	o->urls_expired = s->urls_expired;
	o->docs_dropping = s->docs_dropping;
	if (s->shard != NULL) {
		o->shard_place = s->shard->place;
		o->shard_count = s->shard->shards;
		o->shard_importing = s->shard->importing;
		o->shard_keep_moved_docs = s->shard->keep_moved_docs;
		snprintf(o->shard_list, sizeof(o->shard_list), "%s",
		    s->shard->shard_list != NULL ? s->shard->shard_list : "");
	}
	if (s->near != NULL) {
		o->near_k = s->near->k;
		o->near_blocks = s->near->blocks;
		o->near_tables = s->near->tables;
		o->near_bytes = s->near->bytes;
		o->near_distinct = s->near->distinct;
		snprintf(o->near_answer, sizeof(o->near_answer), "%s",
		    s->near->answer != NULL ? s->near->answer : "");
		snprintf(o->near_html, sizeof(o->near_html), "%s",
		    s->near->html != NULL ? s->near->html : "");
		o->near_containment = s->near->containment;
		o->near_resemblance = s->near->resemblance;
		o->near_sketch_keys = s->near->sketch_keys;
		o->near_sketch_bytes = s->near->sketch_bytes;
		o->near_candidates = s->near->candidates;
		o->near_verified = s->near->verified;
		o->near_keys_skipped = s->near->keys_skipped;
		o->near_unsketched = s->near->unsketched;
	}
	if (s->accel != NULL) {
		snprintf(o->accel_backend, sizeof(o->accel_backend), "%s",
		    s->accel->backend ? s->accel->backend : "");
		o->accel_simulation = s->accel->simulation;
		o->accel_batches = s->accel->batches;
		o->accel_batches_failed = s->accel->batches_failed;
		o->accel_docs = s->accel->docs;
		o->accel_bytes = s->accel->bytes;
	}
}

/* The n namespaces m[0..n) into r's.  Returns -1 when out of memory. */
static int
copy_namespaces(struct nddd_reply *r, Nddd__V1__NamespaceInfo *const *m,
    size_t n)
{
	if ((r->namespaces = calloc(n + 1, sizeof(*r->namespaces))) == NULL)
		return -1;
	r->nnamespaces = n;
	for (size_t i = 0; i < n; i++) {
		struct nddd_namespace *ns = &r->namespaces[i];

		snprintf(ns->name, sizeof(ns->name), "%s",
		    m[i]->name ? m[i]->name : "");
		ns->urls = m[i]->urls;
		ns->default_ttl_seconds = m[i]->default_ttl_seconds;
		ns->docs = m[i]->docs;
	}
	return 0;
}

/*
 * The times of a URL batch's reply into r's results: each list holds one
 * per URL, or none when the batch did not ask for them.
 */
static int
copy_times(nddd_client *c, struct nddd_reply *r,
    const Nddd__V1__UrlResults *m)
{
	size_t n = r->nresults;

	if (m->n_first_seen_ms == 0 && m->n_last_seen_ms == 0 &&
	    m->n_expires_ms == 0)
		return 0;
	if (m->n_first_seen_ms != n || m->n_last_seen_ms != n ||
	    m->n_expires_ms != n)
		return fail(c, "reply has %zu, %zu and %zu times for %zu URLs",
		    m->n_first_seen_ms, m->n_last_seen_ms, m->n_expires_ms, n);
	for (size_t i = 0; i < n; i++) {
		r->results[i].first_seen_ms = m->first_seen_ms[i];
		r->results[i].last_seen_ms = m->last_seen_ms[i];
		r->results[i].expires_ms = m->expires_ms[i];
	}
	return 0;
}

/*
 * Fills d from a DocResult (or a query's simhash and neighbours, with m
 * NULL).  The neighbours and every string but the message live in one
 * block: the neighbour array first, then the URLs; without neighbours the
 * block starts with the document's URL, and an empty URL with no
 * neighbours takes none ("").  doc_release frees it.  Returns -1 when out
 * of memory.
 */
static int
doc_copy(struct nddd_doc *d, const Nddd__V1__DocResult *m,
    Nddd__V1__Neighbour **near, size_t n, uint64_t total,
    const ProtobufCBinaryData *sketch)
{
	size_t url_len = m != NULL ? m->url.len : 0, size;
	size_t sketch_len = sketch->len;
	char *p;

	d->near_total = total;
	if (m != NULL) {
		d->doc_id = m->doc_id;
		d->simhash = m->simhash;
		d->group = m->group;
		d->created = m->created;
		d->created_ms = m->created_ms;
		d->stored_id = m->stored_id;
		d->content = (enum nddd_content)m->content;
	}
	d->url = "";
	d->url_len = 0;
	d->sketch = NULL;
	d->sketch_len = 0;
	if (n == 0 && url_len == 0 && sketch_len == 0)
		return 0;
	size = n * sizeof(*d->near) + url_len + 1 + sketch_len;
	for (size_t i = 0; i < n; i++)
		size += near[i]->url.len + 1;
	if ((p = malloc(size)) == NULL)
		return -1;
	if (n > 0) {
		d->near = (struct nddd_neighbour *)(void *)p;
		p += n * sizeof(*d->near);
		d->nnear = n;
	}
	for (size_t i = 0; i < n; i++) {
		d->near[i].doc_id = near[i]->doc_id;
		d->near[i].distance = near[i]->distance;
		d->near[i].group = near[i]->group;
		d->near[i].created_ms = near[i]->created_ms;
		d->near[i].resemblance = near[i]->resemblance;
		d->near[i].containment = near[i]->containment;
		d->near[i].verified = near[i]->verified;
		d->near[i].url_len = near[i]->url.len;
		d->near[i].url = p;
		if (near[i]->url.len > 0)
			memcpy(p, near[i]->url.data, near[i]->url.len);
		p[near[i]->url.len] = '\0';
		p += near[i]->url.len + 1;
	}
	if (url_len > 0)
		memcpy(p, m->url.data, url_len);
	p[url_len] = '\0';
	d->url = p;
	d->url_len = url_len;
	if (sketch_len > 0) {
		d->sketch = memcpy(p + url_len + 1, sketch->data, sketch_len);
		d->sketch_len = sketch_len;
	}
	return 0;
}

/* Frees what doc_copy and an item error gave d, and empties it. */
static void
doc_release(struct nddd_doc *d)
{
	if (d->nnear > 0)
		free(d->near);
	else if (d->url_len > 0 || d->sketch_len > 0)
		free((char *)d->url);
	free((char *)d->message);
	memset(d, 0, sizeof(*d));
}

/* The results of a doc batch's reply, and its item errors, into r. */
static int
convert_docs(nddd_client *c, struct nddd_reply *r,
    const Nddd__V1__DocResults *m)
{
	r->ndocs = m->n_docs;
	if ((r->docs = calloc(r->ndocs + 1, sizeof(*r->docs))) == NULL)
		return fail(c, "out of memory");
	for (size_t i = 0; i < r->ndocs; i++) {
		const Nddd__V1__DocResult *d = m->docs[i];

		if (doc_copy(&r->docs[i], d, d->near, d->n_near,
		    d->near_total, &d->sketch) == -1)
			return fail(c, "out of memory");
	}
	for (size_t i = 0; i < m->n_errors; i++) {
		const Nddd__V1__ItemError *e = m->errors[i];
		struct nddd_doc *d;

		if (e->index >= r->ndocs)
			return fail(c, "reply names document %u of %zu",
			    e->index, r->ndocs);
		d = &r->docs[e->index];
		d->code = e->status ? (enum nddd_code)e->status->code :
		    NDDD_INTERNAL;
		if (d->code == NDDD_OK)
			d->code = NDDD_INTERNAL;
		free((char *)d->message);
		if ((d->message = dup_message(e->status)) == NULL)
			return fail(c, "out of memory");
	}
	return 0;
}

/* Keeps a page of moved keys as it came, packed again. */
static int
moved_keep(struct nddd_moved *out, const Nddd__V1__MovedKeys *m)
{
	out->session = m->session;
	out->url_cursor = m->url_cursor;
	out->doc_cursor = m->doc_cursor;
	out->done = m->done;
	out->nurls = m->n_urls;
	out->ndocs = m->n_docs;
	out->packed_len = nddd__v1__moved_keys__get_packed_size(m);
	if ((out->packed = malloc(out->packed_len + 1)) == NULL)
		return -1;
	nddd__v1__moved_keys__pack(m, out->packed);
	return 0;
}

void
nddd_moved_free(struct nddd_moved *m)
{
	free(m->packed);
	m->packed = NULL;
	m->packed_len = 0;
}

int
nddd_moved_as_deletions(struct nddd_moved *m)
{
	Nddd__V1__MovedKeys *k = nddd__v1__moved_keys__unpack(NULL,
	    m->packed_len, m->packed);
	struct nddd_moved del = *m;
	size_t kept = 0;
	int rc;

	if (k == NULL)
		return -1;
	/* Texts alone change nothing to delete. */
	for (size_t i = 0; i < k->n_urls; i++) {
		Nddd__V1__MovedUrl *u = k->urls[i];

		if (u->text_only)
			continue;
		u->count = 0;
		u->first_seen_ms = u->last_seen_ms = u->expires_ms = 0;
		u->url.len = 0;
		k->urls[kept++] = u;
	}
	/* The dropped ones are still freed with the message: its count of
	 * them is restored first. */
	for (size_t i = 0; i < k->n_docs; i++)
		k->docs[i]->deleted = 1;
	{
		size_t n_urls = k->n_urls;

		k->n_urls = kept;
		del.packed_len = nddd__v1__moved_keys__get_packed_size(k);
		rc = (del.packed = malloc(del.packed_len + 1)) == NULL ? -1 : 0;
		if (rc == 0)
			nddd__v1__moved_keys__pack(k, del.packed);
		k->n_urls = n_urls;
	}
	nddd__v1__moved_keys__free_unpacked(k, NULL);
	if (rc == -1)
		return -1;
	free(m->packed);
	*m = del;
	m->nurls = kept;
	return 0;
}

static struct nddd_reply *
convert(nddd_client *c, const Nddd__V1__Response *resp)
{
	struct nddd_reply *r = calloc(1, sizeof(*r));

	if (r == NULL)
		return NULL;
	r->id = resp->id;
	if (resp->status != NULL && resp->status->code != 0) {
		r->kind = NDDD_REPLY_ERROR;
		r->code = (enum nddd_code)resp->status->code;
		r->message = dup_message(resp->status);
		return r;
	}
	switch (resp->result_case) {
	case NDDD__V1__RESPONSE__RESULT_URLS:
		r->kind = NDDD_REPLY_URLS;
		r->nresults = resp->urls->n_counts;
		r->results = calloc(r->nresults + 1, sizeof(*r->results));
		if (r->results == NULL)
			goto oom;
		for (size_t i = 0; i < r->nresults; i++)
			r->results[i].count = resp->urls->counts[i];
		for (size_t i = 0; i < resp->urls->n_errors; i++) {
			const Nddd__V1__ItemError *e = resp->urls->errors[i];

			if (e->index >= r->nresults) {
				fail(c, "reply names item %u of %zu", e->index,
				    r->nresults);
				nddd_reply_free(r);
				return NULL;
			}
			r->results[e->index].code = e->status ?
			    (enum nddd_code)e->status->code : NDDD_INTERNAL;
			r->results[e->index].message = dup_message(e->status);
		}
		if (copy_times(c, r, resp->urls) == -1) {
			nddd_reply_free(r);
			return NULL;
		}
		return r;
	case NDDD__V1__RESPONSE__RESULT_STATS:
		r->kind = NDDD_REPLY_STATS;
		copy_stats(&r->stats, resp->stats);
		if (copy_namespaces(r, resp->stats->namespaces,
		    resp->stats->n_namespaces) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_NAMESPACE:
		r->kind = NDDD_REPLY_NAMESPACE;
		if (copy_namespaces(r, &resp->namespace_, 1) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_SHARD:
		r->kind = NDDD_REPLY_SHARD;
		return r;
	case NDDD__V1__RESPONSE__RESULT_MOVED:
		r->kind = NDDD_REPLY_MOVED;
		if (moved_keep(&r->moved, resp->moved) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_FORGET:
		r->kind = NDDD_REPLY_FORGET;
		r->forgotten = resp->forget->forgotten;
		r->complete = resp->forget->complete;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC:
		r->kind = NDDD_REPLY_DOC;
		if (doc_copy(&r->doc, resp->doc, resp->doc->near,
		    resp->doc->n_near, resp->doc->near_total,
		    &resp->doc->sketch) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC_QUERY:
		r->kind = NDDD_REPLY_DOC_QUERY;
		r->doc.simhash = resp->doc_query->simhash;
		r->doc.content = (enum nddd_content)resp->doc_query->content;
		if (doc_copy(&r->doc, NULL, resp->doc_query->near,
		    resp->doc_query->n_near, resp->doc_query->near_total,
		    &resp->doc_query->sketch) == -1)
			goto oom;
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOCS:
		r->kind = NDDD_REPLY_DOCS;
		if (convert_docs(c, r, resp->docs) == -1) {
			nddd_reply_free(r);
			return NULL;
		}
		return r;
	case NDDD__V1__RESPONSE__RESULT_DOC_DELETE:
		r->kind = NDDD_REPLY_DOC_DELETE;
		r->deleted_id = resp->doc_delete->doc_id;
		return r;
	case NDDD__V1__RESPONSE__RESULT_VERIFY:
		r->kind = NDDD_REPLY_VERIFY;
		r->verify.consistent = resp->verify->consistent;
		r->verify.urls = resp->verify->urls;
		r->verify.counter_mismatches =
		    resp->verify->counter_mismatches;
		r->verify.docs = resp->verify->docs;
		r->verify.table_mismatches = resp->verify->table_mismatches;
		r->verify.url_index_mismatches =
		    resp->verify->url_index_mismatches;
		snprintf(r->verify.detail, sizeof(r->verify.detail), "%s",
		    resp->verify->detail ? resp->verify->detail : "");
		return r;
	default:
		r->kind = NDDD_REPLY_ERROR;
		r->code = NDDD_INTERNAL;
		r->message = strdup("reply carries no result");
		return r;
	}
oom:
	nddd_reply_free(r);
	fail(c, "out of memory");
	return NULL;
}

int
nddd_recv(nddd_client *c, struct nddd_reply **out)
{
	long long deadline = c->timeout_ms > 0 ? now_ms() + c->timeout_ms : 0;
	const unsigned char *frame;
	uint32_t len;

	*out = NULL;
	if (c->fd == -1)
		return fail(c, "not connected");
	for (;;) {
		struct pollfd pfd = { .fd = c->fd, .events = 0 };
		int wait = -1;
		short want;
		ssize_t n;

		if (next_frame(c, &frame, &len) == -1)
			return -1;
		if (frame != NULL) {
			Nddd__V1__Response *resp =
			    nddd__v1__response__unpack(NULL, len, frame);

			c->in_off += 4 + (size_t)len;
			if (resp == NULL)
				return fail(c, "malformed reply");
			c->server_shards = resp->shards;
			*out = convert(c, resp);
			nddd__v1__response__free_unpacked(resp, NULL);
			if (*out == NULL)
				return -1;
			/* Replies with id 0 answer no request: the server
			 * refused the connection or a frame. */
			if ((*out)->id != 0 && c->outstanding > 0)
				c->outstanding--;
			return 0;
		}
		if (c->out_off < c->out_len && flush_some(c) == -1)
			return -1;
		if (c->in_off > 0) {
			memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		if (grow(&c->in, &c->in_cap, c->in_len + 65536) == -1)
			return fail(c, "out of memory");
		n = io_read(c, c->in + c->in_len, c->in_cap - c->in_len, &want);
		if (n == -2)
			return fail(c, "connection closed by the server");
		if (n < 0)
			return -1;
		if (n > 0) {
			c->in_len += (size_t)n;
			continue;
		}
		/* Nothing to read now: wait for the socket (and for room to
		 * send, if requests are queued). */
		pfd.events = want;
		if (c->out_off < c->out_len)
			pfd.events |= POLLOUT;
		if (deadline) {
			long long left = deadline - now_ms();

			if (left <= 0)
				return fail(c, "timed out waiting for a reply");
			wait = (int)left;
		}
		if (poll(&pfd, 1, wait) == -1 && errno != EINTR)
			return fail(c, "poll: %s", strerror(errno));
	}
}

void
nddd_reply_free(struct nddd_reply *r)
{
	if (r == NULL)
		return;
	if (r->results != NULL)
		for (size_t i = 0; i < r->nresults; i++)
			free((char *)r->results[i].message);
	free(r->results);
	doc_release(&r->doc);
	if (r->docs != NULL)
		for (size_t i = 0; i < r->ndocs; i++)
			doc_release(&r->docs[i]);
	free(r->docs);
	free(r->namespaces);
	nddd_moved_free(&r->moved);
	free((char *)r->message);
	free(r);
}

/*
 * A batch of nddd_urls or nddd_docs in flight: items [base, base + n) of
 * the call's input, of which those at pos[0..nsent) (positions in the
 * batch) were sent; the others were answered already (URLs the client
 * refused with digests, documents too large for a frame).  URL batches
 * without digests send them all and have no pos.
 */
struct inflight {
	uint64_t id;
	size_t base, n;
	size_t *pos;
	size_t nsent;
};

/*
 * Batch k of the *nfl in flight is answered: the last takes its place,
 * and its slot of positions goes to the free ones after them.
 */
static void
inflight_retire(struct inflight *fl, size_t *nfl, size_t k)
{
	size_t *slot = fl[k].pos;

	fl[k] = fl[--*nfl];
	fl[*nfl].pos = slot;
}

/*
 * Waits for the reply to one of the nfl batches in flight: returns its
 * index, with the reply in *rp, or (size_t)-1 when the connection failed
 * or the reply is to no batch of ours (a refusal of the connection, id 0).
 */
static size_t
recv_inflight(nddd_client *c, const struct inflight *fl, size_t nfl,
    struct nddd_reply **rp)
{
	struct nddd_reply *r;
	size_t k;

	if (nddd_recv(c, &r) == -1)
		return (size_t)-1;
	for (k = 0; k < nfl && fl[k].id != r->id; k++)
		;
	if (k < nfl) {
		*rp = r;
		return k;
	}
	if (r->kind == NDDD_REPLY_ERROR)
		fail(c, "%s: %s", nddd_code_name(r->code), r->message);
	else
		fail(c, "reply to an unknown request %llu",
		    (unsigned long long)r->id);
	nddd_reply_free(r);
	return (size_t)-1;
}

/*
 * Digests of urls[0..n) into digests; the valid ones' positions go to pos,
 * the invalid ones get their result now.  Returns how many are valid, or
 * (size_t)-1 when out of memory.
 */
static size_t
canon_batch(nddd_canon *k, const char *const *urls, size_t n,
    struct nddd_url_result *results, unsigned char *digests, size_t *pos)
{
	size_t nv = 0;

	for (size_t i = 0; i < n; i++) {
		const char *cause;

		if (nddd_canon_digest(k, urls[i], strlen(urls[i]),
		    digests + nv * NDDD_DIGEST_LEN, &cause) == 0) {
			pos[nv++] = i;
			continue;
		}
		results[i].code = NDDD_INVALID_ARGUMENT;
		results[i].count = 0;
		if ((results[i].message = strdup(cause)) == NULL)
			return (size_t)-1;
	}
	return nv;
}

/* Moves reply r's results into the batch f's places of results. */
static int
take_results(const struct inflight *f, struct nddd_reply *r,
    struct nddd_url_result *results)
{
	size_t n = f->pos != NULL ? f->nsent : f->n;
	int rc = 0;

	for (size_t j = 0; j < n; j++) {
		struct nddd_url_result *res =
		    &results[f->base + (f->pos != NULL ? f->pos[j] : j)];

		if (r->kind == NDDD_REPLY_URLS && j < r->nresults) {
			*res = r->results[j];
			r->results[j].message = NULL;
		} else {
			res->code = r->kind == NDDD_REPLY_ERROR ? r->code :
			    NDDD_INTERNAL;
			res->message = strdup(r->message ? r->message :
			    "reply has too few results");
			rc = -1;
		}
	}
	return rc;
}

/*
 * Every result of urls the call could not get an answer for, after a
 * connection error: those of the batches in flight and those not sent.
 */
static void
fail_unanswered(const nddd_client *c, const struct inflight *fl, size_t nfl,
    struct nddd_url_result *results, size_t sent, size_t n)
{
	for (size_t k = 0; k < nfl; k++) {
		size_t m = fl[k].pos != NULL ? fl[k].nsent : fl[k].n;

		for (size_t j = 0; j < m; j++) {
			struct nddd_url_result *res = &results[fl[k].base +
			    (fl[k].pos != NULL ? fl[k].pos[j] : j)];

			res->code = NDDD_UNAVAILABLE;
			res->message = strdup(c->err);
		}
	}
	for (size_t i = sent; i < n; i++) {
		if (results[i].code != NDDD_OK)
			continue;	/* refused here before sending */
		results[i].code = NDDD_UNAVAILABLE;
		results[i].message = strdup(c->err);
	}
}

/*
 * What a URL loop sends: urls as text (or as the digests the client's
 * canonicalizer makes of them, after nddd_use_digests), or digests made
 * already with the canonicalization canon_id.
 */
struct url_source {
	const char *const *urls;
	const unsigned char *digests;
	const char *canon_id;
};

/* nddd_urls and nddd_digests: batches of src, pipelined. */
static int
url_loop(nddd_client *c, enum nddd_url_op op, const struct url_source *src,
    size_t n, struct nddd_url_result *results, size_t batch,
    unsigned window, void (*progress)(size_t done, void *arg), void *arg)
{
	struct inflight *fl;
	unsigned char *digests = NULL;
	size_t *pos = NULL;
	size_t sent = 0, done = 0, nfl = 0;
	int canon = src->urls != NULL && c->canon != NULL, rc = 0;

	if (batch == 0)
		batch = 1000;
	if (window == 0)
		window = 1;
	if ((fl = calloc(window, sizeof(*fl))) == NULL)
		return fail(c, "out of memory");
	if (canon) {
		/* One scratch buffer of digests (copied out when queued), and
		 * a slot of positions per batch in flight; fl[nfl..window)
		 * hold the free slots. */
		digests = calloc(batch, NDDD_DIGEST_LEN);
		pos = calloc((size_t)window * batch, sizeof(*pos));
		if (digests == NULL || pos == NULL) {
			rc = fail(c, "out of memory");
			goto out;
		}
		for (unsigned i = 0; i < window; i++)
			fl[i].pos = pos + (size_t)i * batch;
	}
	memset(results, 0, n * sizeof(*results));
	while (done < n) {
		struct nddd_reply *r;
		size_t k;

		while (sent < n && nfl < window) {
			size_t m = n - sent < batch ? n - sent : batch;
			struct inflight *f = &fl[nfl];
			int ok;

			f->base = sent;
			f->n = m;
			if (src->digests != NULL) {
				ok = nddd_send_digests(c, op, src->canon_id,
				    src->digests + sent * NDDD_DIGEST_LEN, m,
				    &f->id) == 0;
			} else if (!canon) {
				ok = nddd_send_urls(c, op, src->urls + sent,
				    NULL, m, &f->id) == 0;
			} else {
				f->nsent = canon_batch(c->canon,
				    src->urls + sent, m, results + sent,
				    digests, f->pos);
				if (f->nsent == (size_t)-1) {
					rc = fail(c, "out of memory");
					goto out;
				}
				/* Refused here, every one: nothing to ask. */
				if (f->nsent == 0) {
					sent += m;
					done += m;
					if (progress != NULL)
						progress(done, arg);
					continue;
				}
				ok = nddd_send_digests(c, op, c->canon->id,
				    digests, f->nsent, &f->id) == 0;
			}
			if (!ok) {
				fail_unanswered(c, fl, nfl, results, sent, n);
				rc = -1;
				goto out;
			}
			nfl++;
			sent += m;
		}
		if (nfl == 0)
			continue;	/* the rest was answered here */
		if ((k = recv_inflight(c, fl, nfl, &r)) == (size_t)-1) {
			fail_unanswered(c, fl, nfl, results, sent, n);
			rc = -1;
			goto out;
		}
		if (take_results(&fl[k], r, results) == -1)
			rc = -1;
		if (r->kind == NDDD_REPLY_ERROR)
			fail(c, "batch refused: %s: %s",
			    nddd_code_name(r->code), r->message);
		done += fl[k].n;
		inflight_retire(fl, &nfl, k);
		nddd_reply_free(r);
		if (progress != NULL)
			progress(done, arg);
	}
out:
	free(fl);
	free(digests);
	free(pos);
	return rc;
}

int
nddd_urls(nddd_client *c, enum nddd_url_op op, const char *const *urls,
    size_t n, struct nddd_url_result *results, size_t batch,
    unsigned window, void (*progress)(size_t done, void *arg), void *arg)
{
	struct url_source src = { .urls = urls };

	return url_loop(c, op, &src, n, results, batch, window, progress, arg);
}

int
nddd_digests(nddd_client *c, enum nddd_url_op op, const char *canon_id,
    const unsigned char *digests, size_t n, struct nddd_url_result *results,
    size_t batch, unsigned window)
{
	struct url_source src = { .digests = digests, .canon_id = canon_id };

	return url_loop(c, op, &src, n, results, batch, window, NULL, NULL);
}

void
nddd_urls_results_free(struct nddd_url_result *results, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free((char *)results[i].message);
		results[i].message = NULL;
	}
}

/* Moves a doc batch reply's results into f's places of results. */
static int
take_docs(const struct inflight *f, struct nddd_reply *r,
    struct nddd_doc *results)
{
	int rc = 0;

	for (size_t j = 0; j < f->nsent; j++) {
		struct nddd_doc *res = &results[f->base + f->pos[j]];

		if (r->kind == NDDD_REPLY_DOCS && j < r->ndocs) {
			*res = r->docs[j];
			memset(&r->docs[j], 0, sizeof(r->docs[j]));
			continue;
		}
		res->code = r->kind == NDDD_REPLY_ERROR ? r->code :
		    NDDD_INTERNAL;
		res->message = strdup(r->kind == NDDD_REPLY_ERROR && r->message ?
		    r->message : "reply has too few results");
		res->url = "";
		rc = -1;
	}
	return rc;
}

/*
 * nddd_docs' documents without an answer after a connection error: those
 * of the batches fl[0..nfl) (sent, or failing to be) and those not sent
 * from sent on, NDDD_UNAVAILABLE with the error.
 */
static void
fail_unanswered_docs(const nddd_client *c, const struct inflight *fl,
    size_t nfl, struct nddd_doc *results, size_t sent, size_t n)
{
	for (size_t k = 0; k < nfl; k++)
		for (size_t j = 0; j < fl[k].nsent; j++) {
			struct nddd_doc *d = &results[fl[k].base + fl[k].pos[j]];

			d->code = NDDD_UNAVAILABLE;
			d->message = strdup(c->err);
		}
	for (size_t i = sent; i < n; i++) {
		results[i].code = NDDD_UNAVAILABLE;
		results[i].message = strdup(c->err);
	}
}

int
nddd_docs(nddd_client *c, const struct nddd_doc_item *docs, size_t n,
    struct nddd_doc *results, size_t batch, unsigned window,
    void (*progress)(size_t done, void *arg), void *arg)
{
	struct nddd_doc_item *items = NULL;
	struct inflight *fl;
	size_t *pos = NULL, max_bytes, room = doc_frame_room(c);
	size_t sent = 0, done = 0, nfl = 0, limit;
	int rc = 0;

	limit = nddd_doc_batch_limit(c, &max_bytes);
	if (batch == 0)
		batch = 256;
	if (batch > limit)
		batch = limit;
	if (window == 0)
		window = 1;
	memset(results, 0, n * sizeof(*results));
	for (size_t i = 0; i < n; i++)
		results[i].url = "";
	fl = calloc(window, sizeof(*fl));
	items = calloc(batch, sizeof(*items));
	pos = calloc((size_t)window * batch, sizeof(*pos));
	if (fl == NULL || items == NULL || pos == NULL) {
		rc = fail(c, "out of memory");
		goto out;
	}
	/* fl[nfl..window) hold the free slots of positions. */
	for (unsigned i = 0; i < window; i++)
		fl[i].pos = pos + (size_t)i * batch;
	while (done < n) {
		struct nddd_reply *r;
		size_t k;

		while (sent < n && nfl < window) {
			struct inflight *f = &fl[nfl];
			size_t bytes = 0;

			f->base = sent;
			f->n = f->nsent = 0;
			/* By count and by bytes; a document over the half
			 * frame goes alone, one over the frame not at all. */
			while (sent + f->n < n && f->n < batch) {
				const struct nddd_doc_item *d =
				    &docs[sent + f->n];
				size_t size = nddd_doc_item_size(d) +
				    doc_ns_bytes(c);

				if (size > room) {
					struct nddd_doc *res =
					    &results[sent + f->n];

					res->code = NDDD_RESOURCE_EXHAUSTED;
					if (asprintf((char **)&res->message,
					    "a document of %zu bytes exceeds "
					    "the max frame (%zu bytes)", size,
					    c->max_frame) == -1)
						res->message = NULL;
					f->n++;
					continue;
				}
				if (f->nsent > 0 && bytes + size > max_bytes)
					break;
				bytes += size;
				items[f->nsent] = *d;
				f->pos[f->nsent++] = f->n++;
			}
			sent += f->n;
			if (f->nsent == 0) {
				/* Every one refused here: nothing to ask. */
				done += f->n;
				if (progress != NULL)
					progress(done, arg);
				continue;
			}
			if (nddd_send_docs(c, items, f->nsent, &f->id) == -1) {
				fail_unanswered_docs(c, fl, nfl + 1, results,
				    sent, n);
				rc = -1;
				goto out;
			}
			nfl++;
		}
		if (nfl == 0)
			continue;	/* the rest was answered here */
		if ((k = recv_inflight(c, fl, nfl, &r)) == (size_t)-1) {
			fail_unanswered_docs(c, fl, nfl, results, sent, n);
			rc = -1;
			goto out;
		}
		if (take_docs(&fl[k], r, results) == -1) {
			rc = -1;
			if (r->kind == NDDD_REPLY_ERROR)
				fail(c, "batch refused: %s: %s",
				    nddd_code_name(r->code), r->message);
			else
				fail(c, "reply to a doc batch has too few "
				    "results");
		}
		done += fl[k].n;
		inflight_retire(fl, &nfl, k);
		nddd_reply_free(r);
		if (progress != NULL)
			progress(done, arg);
	}
out:
	free(fl);
	free(items);
	free(pos);
	return rc;
}

void
nddd_docs_results_free(struct nddd_doc *results, size_t n)
{
	for (size_t i = 0; i < n; i++)
		doc_release(&results[i]);
}

struct nddd_reply *
nddd_call(nddd_client *c, uint64_t id)
{
	struct nddd_reply *r;

	for (;;) {
		if (nddd_recv(c, &r) == -1)
			return NULL;
		/* id 0: the server refused the connection itself. */
		if (r->id == id || r->id == 0)
			return r;
		nddd_reply_free(r);
	}
}

int
nddd_verify(nddd_client *c, struct nddd_verify *out)
{
	struct nddd_reply *r;
	uint64_t id;

	if (nddd_send_verify(c, &id) == -1 || (r = nddd_call(c, id)) == NULL)
		return -1;
	if (r->kind != NDDD_REPLY_VERIFY) {
		fail(c, "verify refused: %s: %s", nddd_code_name(r->code),
		    r->message ? r->message : "");
		nddd_reply_free(r);
		return -1;
	}
	*out = r->verify;
	nddd_reply_free(r);
	return 0;
}

/*
 * Waits for the reply to the url_forget id (sent: what sending it
 * returned) and takes its count.
 */
static int
forget_finish(nddd_client *c, int sent, uint64_t id, uint64_t *forgotten)
{
	struct nddd_reply *r;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL)
		return -1;
	if (r->kind != NDDD_REPLY_FORGET) {
		if (r->kind == NDDD_REPLY_ERROR)
			fail(c, "url_forget refused: %s: %s",
			    nddd_code_name(r->code),
			    r->message ? r->message : "");
		else
			fail(c, "url_forget: the reply has no count");
		nddd_reply_free(r);
		return -1;
	}
	*forgotten = r->forgotten;
	nddd_reply_free(r);
	return 0;
}

int
nddd_url_forget_host(nddd_client *c, const char *ns, const char *host,
    int subdomains, uint64_t *forgotten)
{
	uint64_t id = 0;
	int sent;

	sent = nddd_send_url_forget_host(c, ns, host, subdomains, &id);
	return forget_finish(c, sent, id, forgotten);
}

int
nddd_url_forget_prefix(nddd_client *c, const char *ns, const char *prefix,
    size_t len, uint64_t *forgotten)
{
	uint64_t id = 0;
	int sent;

	sent = nddd_send_url_forget_prefix(c, ns, prefix, len, &id);
	return forget_finish(c, sent, id, forgotten);
}

/*
 * The reply to request id of a call named what, if it is of kind; else
 * NULL with the refusal in c's error.  sent: what queueing it returned.
 */
static struct nddd_reply *
call_for(nddd_client *c, int sent, uint64_t id, enum nddd_reply_kind kind,
    const char *what)
{
	struct nddd_reply *r;

	if (sent == -1 || (r = nddd_call(c, id)) == NULL)
		return NULL;
	if (r->kind == kind)
		return r;
	fail(c, "%s refused: %s: %s", what, nddd_code_name(r->code),
	    r->message ? r->message : "");
	nddd_reply_free(r);
	return NULL;
}

int
nddd_stats(nddd_client *c, struct nddd_stats *out)
{
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent = nddd_send_stats(c, &id);

	if ((r = call_for(c, sent, id, NDDD_REPLY_STATS, "stats")) == NULL)
		return -1;
	*out = r->stats;
	nddd_reply_free(r);
	return 0;
}

int
nddd_use_digests(nddd_client *c, int on, char **err)
{
	struct nddd_stats st;
	nddd_canon *k;

	*err = NULL;
	if (!on) {
		nddd_canon_free(c->canon);
		c->canon = NULL;
		return 0;
	}
	if (nddd_stats(c, &st) == -1)
		goto err;
	if (st.canon[0] == '\0') {
		fail(c, "the server states no canonicalization: it takes no "
		    "digests (too old)");
		goto err;
	}
	if ((k = nddd_canon_new(st.canon, err)) == NULL) {
		fail(c, "%s", *err ? *err : "out of memory");
		return -1;
	}
	nddd_canon_free(c->canon);
	c->canon = k;
	return 0;
err:
	*err = strdup(c->err);
	return -1;
}

nddd_canon *
nddd_canon_new(const char *canon_id, char **err)
{
	struct urlcanon_options opts;
	nddd_canon *k;

	*err = NULL;
	if (canon_id == NULL || urlcanon_parse_id(canon_id, &opts) == -1) {
		if (asprintf(err, "canonicalization \"%s\" cannot be "
		    "reproduced here (this library makes urlcanon/%d)",
		    canon_id ? canon_id : "", URLCANON_VERSION) == -1)
			*err = NULL;
		return NULL;
	}
	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	urlcanon_id(&opts, k->id);
	/* The MD5 is fetched once; each digest re-initializes the context
	 * with it rather than looking it up again. */
	if ((k->uc = urlcanon_new(&opts)) == NULL ||
	    (k->md5 = EVP_MD_fetch(NULL, "MD5", NULL)) == NULL ||
	    (k->md_ctx = EVP_MD_CTX_new()) == NULL ||
	    !EVP_DigestInit_ex2(k->md_ctx, k->md5, NULL)) {
		if (k->uc != NULL && asprintf(err, "OpenSSL offers no MD5") ==
		    -1)
			*err = NULL;
		nddd_canon_free(k);
		return NULL;
	}
	return k;
}

void
nddd_canon_free(nddd_canon *k)
{
	if (k == NULL)
		return;
	EVP_MD_CTX_free(k->md_ctx);
	EVP_MD_free(k->md5);
	urlcanon_free(k->uc);
	free(k);
}

const char *
nddd_canon_id(const nddd_canon *k)
{
	return k->id;
}

const char *
nddd_canon_url(nddd_canon *k, const char *url, size_t len, size_t *out_len,
    const char **cause)
{
	return urlcanon_canonicalize(k->uc, url, len, out_len, cause);
}

int
nddd_canon_digest(nddd_canon *k, const char *url, size_t len,
    unsigned char digest[NDDD_DIGEST_LEN], const char **cause)
{
	const char *canon;
	size_t clen;
	unsigned int mdlen;

	/* What urlset_key_canonical does in the daemon. */
	if ((canon = urlcanon_canonicalize(k->uc, url, len, &clen,
	    cause)) == NULL)
		return -1;
	if (!EVP_DigestInit_ex2(k->md_ctx, NULL, NULL) ||
	    !EVP_DigestUpdate(k->md_ctx, canon, clen) ||
	    !EVP_DigestFinal_ex(k->md_ctx, digest, &mdlen) ||
	    mdlen != NDDD_DIGEST_LEN) {
		*cause = "MD5 failed";
		return -1;
	}
	return 0;
}

size_t
nddd_canon_digests(nddd_canon *k, const char *urls, const size_t *lens,
    size_t n, unsigned char *digests, int *valid)
{
	const char *cause;
	size_t off = 0, nvalid = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char *d = digests + i * NDDD_DIGEST_LEN;

		valid[i] = nddd_canon_digest(k, urls + off, lens[i], d,
		    &cause) == 0;
		if (valid[i])
			nvalid++;
		else
			memset(d, 0, NDDD_DIGEST_LEN);
		off += lens[i];
	}
	return nvalid;
}

int
nddd_shard_set(nddd_client *c, const struct nddd_shard_state *st)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__ShardState m = NDDD__V1__SHARD_STATE__INIT;
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent;

	m.place = st->place;
	m.shards = st->shards;
	m.importing = st->importing != 0;
	m.keep_moved_docs = st->keep_moved_docs != 0;
	m.shard_list = (char *)(st->list != NULL ? st->list : "");
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_SET;
	req.shard_set = &m;
	sent = queue_request(c, &req, &id);
	if ((r = call_for(c, sent, id, NDDD_REPLY_SHARD, "shard_set")) == NULL)
		return -1;
	nddd_reply_free(r);
	return 0;
}

int
nddd_shard_export(nddd_client *c, enum nddd_export_step step,
    uint32_t shards, uint32_t place, uint64_t session, uint64_t url_cursor,
    uint64_t doc_cursor, struct nddd_moved *out)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__ShardExport m = NDDD__V1__SHARD_EXPORT__INIT;
	struct nddd_reply *r;
	uint64_t id = 0;
	int sent;

	memset(out, 0, sizeof(*out));
	m.step = (Nddd__V1__ExportStep)step;
	m.shards = shards;
	m.place = place;
	m.session = session;
	m.url_cursor = url_cursor;
	m.doc_cursor = doc_cursor;
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_EXPORT;
	req.shard_export = &m;
	sent = queue_request(c, &req, &id);
	if ((r = call_for(c, sent, id, NDDD_REPLY_MOVED, "shard_export")) ==
	    NULL)
		return -1;
	*out = r->moved;
	memset(&r->moved, 0, sizeof(r->moved));
	nddd_reply_free(r);
	return 0;
}

int
nddd_shard_import(nddd_client *c, const struct nddd_moved *keys)
{
	Nddd__V1__Request req = NDDD__V1__REQUEST__INIT;
	Nddd__V1__MovedKeys *m;
	struct nddd_reply *r;
	uint64_t id = 0;
	int rc;

	if ((m = nddd__v1__moved_keys__unpack(NULL, keys->packed_len,
	    keys->packed)) == NULL)
		return fail(c, "shard_import: not a page of moved keys");
	req.op_case = NDDD__V1__REQUEST__OP_SHARD_IMPORT;
	req.shard_import = m;
	rc = queue_request(c, &req, &id);
	nddd__v1__moved_keys__free_unpacked(m, NULL);
	if ((r = call_for(c, rc, id, NDDD_REPLY_MOVED, "shard_import")) ==
	    NULL)
		return -1;
	nddd_reply_free(r);
	return 0;
}
