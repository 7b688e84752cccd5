/*
 * client: libnddd's connection (see nddd.h for its interface, nddd_impl.h
 * for the library's other files): connecting, TLS, the output buffer of
 * queued requests, and nddd_recv, which feeds the reply reader
 * (reader.c) from the socket.
 *
 * The socket is non-blocking; the client keeps an output buffer of encoded
 * requests and an input buffer of received bytes (the reader's), and a
 * wait always both sends and receives, so a pipelining client never
 * deadlocks against a server that has stopped reading until its replies
 * are read.  With TLS, the same happens through OpenSSL on the same
 * socket.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "nddd.h"
#include "nddd_impl.h"
#include "nddd.pb-c.h"

uint32_t
nddd_server_shards(const nddd_client *c)
{
	return c->server_shards;
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

/* The TLS handshake on c's connected socket, both ways non-blocking. */
static int
tls_handshake(nddd_client *c, char **err)
{
	int rc;

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

static int
tls_start(nddd_client *c, const char *host, const struct nddd_options *o,
    char **err)
{
	const char *name = o->tls_name ? o->tls_name : host;

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
	return tls_handshake(c, err);
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
	if ((c->rd = reader_new()) == NULL)
		goto err;
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
	reader_free(c->rd);
	free(c);
}

size_t
nddd_outstanding(const nddd_client *c)
{
	return c->outstanding;
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
		return client_fail(c, "send: %s", strerror(errno));
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
		return client_fail(c, "TLS write failed");
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
		return client_fail(c, "recv: %s", strerror(errno));
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
		return client_fail(c, "TLS read failed");
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

int
client_queue(nddd_client *c, Nddd__V1__Request *req, uint64_t *id)
{
	size_t size, pos;

	if (c->fd == -1)
		return client_fail(c, "not connected");
	req->id = c->next_id++;
	if (c->token != NULL)
		req->token = c->token;
	size = nddd__v1__request__get_packed_size(req);
	if (size > UINT32_MAX)
		return client_fail(c, "request too large");
	/* Compact before growing. */
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (buf_grow(&c->out, &c->out_cap, c->out_len + 4 + size) == -1)
		return client_fail(c, "out of memory");
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

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Sends what is queued and reads what has come into the reader, waiting
 * for the socket (until deadline, in ms of now_ms; 0: forever) when it
 * has nothing now.  Returns -1 with c's error when the connection failed
 * or the deadline passed.
 */
static int
client_receive(nddd_client *c, long long deadline)
{
	struct pollfd pfd = { .fd = c->fd, .events = 0 };
	unsigned char *buf;
	size_t room;
	int wait = -1;
	short want;
	ssize_t n;

	if (c->out_off < c->out_len && flush_some(c) == -1)
		return -1;
	if ((buf = reader_space(c->rd, 65536, &room)) == NULL)
		return client_fail(c, "out of memory");
	n = io_read(c, buf, room, &want);
	if (n == -2)
		return client_fail(c, "connection closed by the server");
	if (n < 0)
		return -1;
	if (n > 0) {
		reader_wrote(c->rd, (size_t)n);
		return 0;
	}
	/* Nothing to read now: wait for the socket (and for room to send, if
	 * requests are queued). */
	pfd.events = want;
	if (c->out_off < c->out_len)
		pfd.events |= POLLOUT;
	if (deadline) {
		long long left = deadline - now_ms();

		if (left <= 0)
			return client_fail(c, "timed out waiting for a reply");
		wait = (int)left;
	}
	if (poll(&pfd, 1, wait) == -1 && errno != EINTR)
		return client_fail(c, "poll: %s", strerror(errno));
	return 0;
}

int
nddd_recv(nddd_client *c, struct nddd_reply **out)
{
	long long deadline = c->timeout_ms > 0 ? now_ms() + c->timeout_ms : 0;
	int rc;

	*out = NULL;
	if (c->fd == -1)
		return client_fail(c, "not connected");
	for (;;) {
		rc = reader_get(c->rd, out);
		c->server_shards = c->rd->shards;
		if (rc == -1)
			return client_fail(c, "%s", c->rd->err);
		if (*out != NULL) {
			/* Replies with id 0 answer no request: the server
			 * refused the connection or a frame. */
			if ((*out)->id != 0 && c->outstanding > 0)
				c->outstanding--;
			return 0;
		}
		if (client_receive(c, deadline) == -1)
			return -1;
	}
}
