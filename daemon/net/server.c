/*
 * server: the TCP front end on libevent.  See server.h.
 */
#include "server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "config.h"
#include "frame.h"
#include "listener.h"
#include "log.h"
#include "metrics.h"
#include "tls.h"

/*
 * Bytes read from a socket per callback: several batches at a time.  A
 * plain TCP socket is read here (conn_sock_read_cb), not by libevent's
 * bufferevent, which reads at most 4 KiB per call: a 1 MiB frame took 256
 * wake-ups, ioctls and readvs.
 */
#define SERVER_READ_CHUNK (256 * 1024)
/*
 * While a frame this much larger than what is buffered of it is on its
 * way, a plain TCP socket wakes the loop only once a read's worth of it
 * (SERVER_READ_CHUNK, or the rest) is there (SO_RCVLOWAT), not for every
 * segment.
 */
#define SERVER_LOWAT_MIN (64 * 1024)
/* How often a shutdown looks whether the last replies have drained. */
#define SERVER_DRAIN_POLL_MS 20
/*
 * Past buffer_memory, a connection holding more than this (buffered and
 * reserved) is not read until there is room again, looked at every
 * SERVER_BUDGET_POLL_MS; one holding less is, and its requests are refused
 * in a few bytes each.
 */
#define SERVER_BUDGET_SLACK (64 * 1024)
#define SERVER_BUDGET_POLL_MS 100

struct conn {
	struct server *srv;
	struct bufferevent *bev;
	struct event *frame_timer;	/* armed while a frame is incomplete */
	TAILQ_ENTRY(conn) entry;
	char peer[INET6_ADDRSTRLEN + 8];
	unsigned refs;		/* 1 while open, +1 per request in flight */
	uint32_t inflight;
	size_t reserved;	/* reply bytes its requests in flight may add */
	size_t buffered;	/* bytes in its input and output buffers */
	struct evbuffer_cb_entry *input_cb, *output_cb;
	/* Plain TCP: the socket's read event (the bufferevent writes only),
	 * and its SO_RCVLOWAT.  NULL with TLS, which the bufferevent reads. */
	struct event *read_ev;
	evutil_socket_t fd;
	int lowat;
	bool read_full;		/* the last read filled its space */
	bool open;		/* false once the socket is gone */
	bool closing;		/* close as soon as the output has drained */
	bool half_closed;	/* the client sent EOF: close once answered */
	bool paused;		/* reading stopped: backpressure */
	bool in_read;		/* conn_read_cb is running */
};

TAILQ_HEAD(conn_list, conn);

struct server {
	struct event_base *base;
	const struct config *cfg;
	struct server_handler handler;
	struct metrics *metrics;
	struct listener *listener;	/* plain TCP, or NULL */
	struct listener *tls_listener;	/* or NULL */
	SSL_CTX *tls;
	struct conn_list conns;
	uint32_t nconns;		/* read by workers: atomic */
	/* All connections' buffers and reservations ([server]
	 * buffer_memory); the loop's alone. */
	size_t buffered, reserved;
	struct event *budget_timer;	/* resumes reading once there is room */
	bool shutting_down;
	struct event *drain_timer;
	uint64_t drain_polls;
	uint64_t drain_timeout_polls;	/* left for replies to be taken */
};

static void conn_read_cb(struct bufferevent *bev, void *arg);
static void conn_write_cb(struct bufferevent *bev, void *arg);
static void conn_event_cb(struct bufferevent *bev, short what, void *arg);

static struct timeval
ms_timeval(uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000 * 1000);
	return tv;
}

static void
conn_unref(struct conn *c)
{
	if (--c->refs > 0)
		return;
	if (c->frame_timer != NULL)
		event_free(c->frame_timer);
	free(c);
}

/* Starts or stops reading c: its own read event (plain TCP), or its
 * bufferevent's (TLS); reading is timed for idle_timeout either way. */
static void
conn_reading(struct conn *c, bool on)
{
	struct timeval idle;

	if (c->read_ev == NULL) {
		if (on)
			bufferevent_enable(c->bev, EV_READ);
		else
			bufferevent_disable(c->bev, EV_READ);
		return;
	}
	if (!on) {
		event_del(c->read_ev);
		return;
	}
	idle = ms_timeval(c->srv->cfg->idle_timeout_ms);
	event_add(c->read_ev, c->srv->cfg->idle_timeout_ms > 0 ? &idle :
	    NULL);
}

/* Closes the socket now; the conn lives on while requests hold it. */
static void
conn_close(struct conn *c)
{
	struct server *srv = c->srv;

	if (!c->open)
		return;
	c->open = false;
	if (c->frame_timer != NULL)
		evtimer_del(c->frame_timer);
	if (c->read_ev != NULL) {
		event_free(c->read_ev);		/* before the socket closes */
		c->read_ev = NULL;
	}
	/* Its buffers go with it; replies still to come are dropped. */
	evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->input_cb);
	evbuffer_remove_cb_entry(bufferevent_get_output(c->bev),
	    c->output_cb);
	srv->buffered -= c->buffered;
	c->buffered = 0;
	bufferevent_free(c->bev);
	c->bev = NULL;
	TAILQ_REMOVE(&srv->conns, c, entry);
	__atomic_fetch_sub(&srv->nconns, 1, __ATOMIC_RELAXED);
	log_debug("%s: %s closed", __func__, c->peer);
	conn_unref(c);
}

/* Stops reading and closes once what was queued has been sent. */
static void
conn_close_after_flush(struct conn *c)
{
	if (!c->open)
		return;
	c->closing = true;
	conn_reading(c, false);
	if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0) {
		conn_close(c);
		return;
	}
	bufferevent_setwatermark(c->bev, EV_WRITE, 0, 0);
}

/*
 * Closes a connection whose client has finished sending once every request
 * it sent is answered and the answers are sent: a client may shut down its
 * side of the socket and still read what it is owed.
 */
static void
conn_close_when_answered(struct conn *c)
{
	if (c->open && c->half_closed && c->inflight == 0 &&
	    evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
		conn_close(c);
}

/*
 * Reading stops while the replies queued and those its requests in flight
 * may still produce exceed output_high_water: a connection then holds at
 * most that much plus the largest reply of the request read last, whether
 * or not its client reads.
 */
static bool
conn_should_pause(const struct conn *c)
{
	const struct config *cfg = c->srv->cfg;

	if (c->inflight >= cfg->max_inflight ||
	    evbuffer_get_length(bufferevent_get_output(c->bev)) +
	    c->reserved > cfg->output_high_water)
		return true;
	/* Otherwise a client that does not read would fill its
	 * output_high_water with refusals, and all of them together would
	 * pass buffer_memory after all. */
	return conn_buffers_full(c) &&
	    c->buffered + c->reserved > SERVER_BUDGET_SLACK;
}

static void
conn_update_reading(struct conn *c)
{
	if (!c->open || c->closing || c->half_closed ||
	    c->srv->shutting_down)
		return;
	if (conn_should_pause(c)) {
		if (!c->paused) {
			c->paused = true;
			conn_reading(c, false);
			/* A frame stalled by us is not the client's delay. */
			if (c->frame_timer != NULL)
				evtimer_del(c->frame_timer);
		}
		/* Room may come from other connections: look again. */
		if (conn_buffers_full(c) &&
		    !evtimer_pending(c->srv->budget_timer, NULL)) {
			struct timeval tv = ms_timeval(SERVER_BUDGET_POLL_MS);

			evtimer_add(c->srv->budget_timer, &tv);
		}
	} else if (c->paused) {
		c->paused = false;
		conn_reading(c, true);
		/* Frames already buffered raise no read event: go on now. */
		conn_read_cb(c->bev, c);
	}
}

/*
 * Plain TCP with nothing queued: the reply is written at once, in this turn
 * of the loop, and only what the socket does not take is queued for the
 * bufferevent.  A client waiting for each reply then costs one write
 * instead of a write event registered, a turn of the loop, the write and
 * the event removed.  (An error is left for the next read to find.)
 */
void
conn_send_buffer(struct conn *c, struct evbuffer *buf)
{
	struct evbuffer *out;

	if (!c->open)
		return;
	out = bufferevent_get_output(c->bev);
	if (c->read_ev != NULL && evbuffer_get_length(out) == 0)
		(void)evbuffer_write(buf, c->fd);
	if (evbuffer_get_length(buf) > 0 && evbuffer_add_buffer(out, buf) ==
	    -1) {
		log_warnx("%s: %s: out of memory for a reply", __func__,
		    c->peer);
		conn_close(c);
		return;
	}
	conn_update_reading(c);
}

void
conn_send_error(struct conn *c, uint64_t id, Nddd__V1__Code code,
    const char *message)
{
	if (!c->open)
		return;
	if (frame_write_error(bufferevent_get_output(c->bev), id, code,
	    message) != 0) {
		conn_close(c);
		return;
	}
	conn_update_reading(c);
}

void
conn_fail(struct conn *c, Nddd__V1__Code code, const char *message)
{
	if (!c->open || c->closing)
		return;
	log_info("%s: %s: %s; closing", __func__, c->peer, message);
	c->srv->metrics->connections_failed++;
	conn_send_error(c, 0, code, message);
	conn_close_after_flush(c);
}

void
conn_hold(struct conn *c, size_t reply_bound)
{
	c->refs++;
	c->inflight++;
	c->reserved += reply_bound;
	c->srv->reserved += reply_bound;
	conn_update_reading(c);
}

void
conn_release(struct conn *c, size_t reply_bound)
{
	c->inflight--;
	c->reserved -= reply_bound;
	c->srv->reserved -= reply_bound;
	conn_update_reading(c);
	conn_close_when_answered(c);
	conn_unref(c);
}

/* Connections paused while buffers were full: read those that may be now. */
static void
budget_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	struct conn *c, *next;

	(void)fd;
	(void)what;
	for (c = TAILQ_FIRST(&srv->conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->paused)
			conn_update_reading(c);	/* re-arms the timer if need be */
	}
}

bool
conn_buffers_full(const struct conn *c)
{
	const struct server *srv = c->srv;

	return srv->buffered + srv->reserved > srv->cfg->buffer_memory;
}

size_t
server_buffered(const struct server *srv)
{
	return srv->buffered + srv->reserved;
}

/*
 * Sets c's socket to wake the loop once enough of an incomplete frame has
 * arrived to be worth a read (SERVER_LOWAT_MIN): missing is what the frame
 * at the front of its input still lacks (0: none is waited for).  Never
 * more than that: those bytes come, or the frame timer ends the wait.
 */
static void
conn_set_lowat(struct conn *c, size_t missing)
{
	int want = 1;

	if (c->read_ev == NULL)
		return;
	if (missing >= SERVER_LOWAT_MIN)
		want = missing < SERVER_READ_CHUNK ? (int)missing :
		    SERVER_READ_CHUNK;
	if (want != c->lowat && setsockopt(c->fd, SOL_SOCKET,
	    SO_RCVLOWAT, &want, sizeof(want)) == 0)
		c->lowat = want;
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t missing = 0, have;
	uint32_t len;
	char msg[128];

	if (c->in_read)
		return;		/* resumed from within this loop: it goes on */
	c->in_read = true;
	c->refs++;		/* c stays allocated while we look at it */
	while (c->open && !c->closing && !c->paused) {
		enum frame_status st = frame_peek(in, c->srv->cfg->max_frame,
		    &len);

		if (st == FRAME_INCOMPLETE) {
			have = evbuffer_get_length(in);
			if (have >= FRAME_HEADER_LEN)
				missing = FRAME_HEADER_LEN + (size_t)len - have;
			break;
		}
		if (st == FRAME_OVERSIZED) {
			snprintf(msg, sizeof(msg), "frame of %u bytes exceeds "
			    "the limit of %llu", len,
			    (unsigned long long)c->srv->cfg->max_frame);
			conn_fail(c, NDDD__V1__CODE__RESOURCE_EXHAUSTED, msg);
			break;
		}
		if (c->frame_timer != NULL)
			evtimer_del(c->frame_timer);
		c->srv->handler.frame(c->srv->handler.arg, c, in, len);
		if (!c->open)
			break;
		frame_consume(in, len);
	}
	if (c->open)
		conn_set_lowat(c, missing);
	/* The rest of a frame must follow within frame_timeout of its
	 * first byte; the timer keeps running across reads until then. */
	if (c->open && !c->closing && !c->paused && c->frame_timer != NULL &&
	    evbuffer_get_length(in) > 0 &&
	    !evtimer_pending(c->frame_timer, NULL)) {
		struct timeval tv = ms_timeval(c->srv->cfg->frame_timeout_ms);

		evtimer_add(c->frame_timer, &tv);
	}
	c->in_read = false;
	conn_unref(c);
}

/*
 * Plain TCP: what the socket holds, up to SERVER_READ_CHUNK, in one readv
 * into c's input; then its frames.  End of file, an error and silence for
 * idle_timeout are told as the bufferevent tells them.
 */
static void
conn_sock_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec vec[2];
	int avail = 0, nvec;
	ssize_t n;

	if (what & EV_TIMEOUT) {
		conn_event_cb(c->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, c);
		return;
	}
	/* The socket is asked how much it holds only when it may hold more
	 * than 4 KiB: a client sending small requests one at a time saves
	 * the system call. */
	if (!(c->read_full || c->lowat > 4096) ||
	    ioctl(fd, FIONREAD, &avail) == -1 || avail < 4096)
		avail = 4096;
	else if (avail > SERVER_READ_CHUNK)
		avail = SERVER_READ_CHUNK;
	/* A bufferevent's input only takes what the bufferevent reads: its
	 * end is frozen, and thawed here as the bufferevent does. */
	evbuffer_unfreeze(in, 0);
	if ((nvec = evbuffer_reserve_space(in, avail, vec, 2)) < 0) {
		evbuffer_freeze(in, 0);
		log_warnx("%s: %s: out of memory", __func__, c->peer);
		conn_close(c);
		return;
	}
	do
		n = readv(fd, (struct iovec *)vec, nvec);
	while (n == -1 && errno == EINTR);
	if (n <= 0) {
		int err = errno;

		evbuffer_commit_space(in, vec, 0);
		evbuffer_freeze(in, 0);
		if (n == -1 && (err == EAGAIN || err == EWOULDBLOCK))
			return;
		errno = err;	/* for the log */
		conn_event_cb(c->bev, BEV_EVENT_READING | (n == 0 ?
		    BEV_EVENT_EOF : BEV_EVENT_ERROR), c);
		return;
	}
	c->read_full = n >= avail;
	if ((size_t)n <= vec[0].iov_len) {
		vec[0].iov_len = (size_t)n;
		nvec = 1;
	} else
		vec[1].iov_len = (size_t)n - vec[0].iov_len;
	evbuffer_commit_space(in, vec, nvec);
	evbuffer_freeze(in, 0);
	conn_read_cb(c->bev, c);
}

static void
frame_timeout_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	conn_fail(c, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
	    "frame not received whole within frame_timeout");
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->closing) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_close(c);
		return;
	}
	conn_update_reading(c);
	conn_close_when_answered(c);
}

/* The client sent EOF: nothing more will come, but it is owed replies. */
static void
conn_half_close(struct conn *c)
{
	c->half_closed = true;
	conn_reading(c, false);
	if (c->frame_timer != NULL)
		evtimer_del(c->frame_timer);
	log_debug("%s: %s: end of its requests (%u in flight)", __func__,
	    c->peer, c->inflight);
	conn_close_when_answered(c);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	unsigned long tls_err;
	char why[256];

	if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_WRITING)) {
		/* Not a byte of its replies taken for write_timeout. */
		log_info("%s: %s: takes no replies (%zu bytes waiting); "
		    "closing", __func__, c->peer,
		    evbuffer_get_length(bufferevent_get_output(bev)));
		c->srv->metrics->connections_failed++;
		conn_close(c);
		return;
	}
	if (what & BEV_EVENT_TIMEOUT) {
		/* Silent for idle_timeout.  Still owed replies, or held back by
		 * us: not idle. */
		if (c->inflight > 0 || c->paused ||
		    evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
			conn_reading(c, true);
			return;
		}
		log_debug("%s: %s: idle; closing", __func__, c->peer);
		conn_close(c);
		return;
	}
	if (what & BEV_EVENT_ERROR) {
		while ((tls_err = bufferevent_get_openssl_error(bev)) != 0) {
			/* Never NULL, unlike the reason string alone. */
			ERR_error_string_n(tls_err, why, sizeof(why));
			log_info("%s: %s: TLS: %s", __func__, c->peer, why);
		}
		log_debug("%s: %s: %s", __func__, c->peer,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR) &&
	    !c->closing) {
		conn_half_close(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		conn_close(c);
}

/* Keeps the connection's and the server's count of buffered bytes. */
static void
conn_buffer_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct conn *c = arg;

	(void)buf;
	c->buffered = c->buffered + info->n_added - info->n_deleted;
	c->srv->buffered = c->srv->buffered + info->n_added - info->n_deleted;
}

static void
format_peer(const struct sockaddr *sa, char *buf, size_t size)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		evutil_inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		evutil_inet_ntop(AF_INET6, &in6->sin6_addr, host,
		    sizeof(host));
		port = ntohs(in6->sin6_port);
	}
	snprintf(buf, size, "%s:%u", host, port);
}

static void
accept_conn(struct server *srv, evutil_socket_t fd, const struct sockaddr *sa,
    SSL *ssl)
{
	struct conn *c;
	struct timeval idle, write;
	int one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto err;
	c->srv = srv;
	c->refs = 1;
	c->fd = fd;
	c->lowat = 1;
	format_peer(sa, c->peer, sizeof(c->peer));
	/* Replies are whole frames already: send them at once. */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (ssl != NULL)
		c->bev = bufferevent_openssl_socket_new(srv->base, fd, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	else
		c->bev = bufferevent_socket_new(srv->base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		goto err;
	if (ssl != NULL)
		bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
	else if ((c->read_ev = event_new(srv->base, fd, EV_READ | EV_PERSIST,
	    conn_sock_read_cb, c)) == NULL)
		goto err_bev;
	if (srv->cfg->frame_timeout_ms > 0)
		c->frame_timer = evtimer_new(srv->base, frame_timeout_cb, c);
	c->input_cb = evbuffer_add_cb(bufferevent_get_input(c->bev),
	    conn_buffer_cb, c);
	c->output_cb = evbuffer_add_cb(bufferevent_get_output(c->bev),
	    conn_buffer_cb, c);
	if (c->input_cb == NULL || c->output_cb == NULL)
		goto err_bev;
	c->open = true;
	TAILQ_INSERT_TAIL(&srv->conns, c, entry);
	__atomic_fetch_add(&srv->nconns, 1, __ATOMIC_RELAXED);
	srv->metrics->connections_accepted++;
	bufferevent_set_max_single_read(c->bev, SERVER_READ_CHUNK);
	bufferevent_set_max_single_write(c->bev, SERVER_READ_CHUNK);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
	bufferevent_setwatermark(c->bev, EV_WRITE,
	    srv->cfg->output_high_water / 2, 0);
	/* Reading: silence (idle_timeout).  Writing: a socket that takes no
	 * byte while replies wait (write_timeout). */
	idle = ms_timeval(srv->cfg->idle_timeout_ms);
	write = ms_timeval(srv->cfg->write_timeout_ms);
	bufferevent_set_timeouts(c->bev, c->read_ev == NULL &&
	    srv->cfg->idle_timeout_ms > 0 ? &idle : NULL,
	    srv->cfg->write_timeout_ms > 0 ? &write : NULL);
	if (srv->nconns > srv->cfg->max_connections) {
		log_warnx("%s: %s refused: %u connections open", __func__,
		    c->peer, srv->nconns - 1);
		srv->metrics->connections_refused++;
		conn_send_error(c, 0, NDDD__V1__CODE__RESOURCE_EXHAUSTED,
		    "too many connections (max_connections)");
		conn_close_after_flush(c);
		return;
	}
	bufferevent_enable(c->bev, EV_WRITE);
	conn_reading(c, true);
	log_debug("%s: %s connected%s", __func__, c->peer,
	    ssl ? " (TLS)" : "");
	return;
err_bev:
	/* The bufferevent owns the socket (and the SSL) now. */
	if (c->read_ev != NULL)
		event_free(c->read_ev);
	if (c->input_cb != NULL)
		evbuffer_remove_cb_entry(bufferevent_get_input(c->bev),
		    c->input_cb);
	bufferevent_free(c->bev);
	free(c);
	return;
err:
	if (c != NULL && c->bev == NULL && ssl != NULL)
		SSL_free(ssl);
	free(c);
	evutil_closesocket(fd);
}

static void
accept_cb(void *arg, evutil_socket_t fd, const struct sockaddr *sa)
{
	accept_conn(arg, fd, sa, NULL);
}

static void
accept_tls_cb(void *arg, evutil_socket_t fd, const struct sockaddr *sa)
{
	struct server *srv = arg;
	SSL *ssl = SSL_new(srv->tls);

	if (ssl == NULL) {
		evutil_closesocket(fd);
		return;
	}
	accept_conn(srv, fd, sa, ssl);
}

struct server *
server_new(struct event_base *base, const struct config *cfg,
    const struct server_handler *h, struct metrics *m, char **cause)
{
	struct server *srv;

	*cause = NULL;
	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->base = base;
	srv->cfg = cfg;
	srv->handler = *h;
	srv->metrics = m;
	TAILQ_INIT(&srv->conns);
	if ((srv->budget_timer = evtimer_new(base, budget_cb, srv)) == NULL)
		goto err;
	if (cfg->listen != NULL && (srv->listener = listener_new(base,
	    "listener", cfg->listen, accept_cb, srv, cause)) == NULL)
		goto err;
	if (cfg->tls_listen != NULL) {
		if ((srv->tls = tls_context_new(cfg, cause)) == NULL ||
		    (srv->tls_listener = listener_new(base, "TLS listener",
		    cfg->tls_listen, accept_tls_cb, srv, cause)) == NULL)
			goto err;
	}
	return srv;
err:
	server_free(srv);
	return NULL;
}

void
server_free(struct server *srv)
{
	struct conn *c;

	if (srv == NULL)
		return;
	while ((c = TAILQ_FIRST(&srv->conns)) != NULL)
		conn_close(c);
	listener_free(srv->listener);
	listener_free(srv->tls_listener);
	if (srv->drain_timer != NULL)
		event_free(srv->drain_timer);
	if (srv->budget_timer != NULL)
		event_free(srv->budget_timer);
	SSL_CTX_free(srv->tls);
	free(srv);
}

bool
server_shutting_down(const struct server *srv)
{
	return srv->shutting_down;
}

uint32_t
server_connections(const struct server *srv)
{
	return __atomic_load_n(&srv->nconns, __ATOMIC_RELAXED);
}

/* Replies not yet taken by their clients. */
static bool
server_replies_queued(struct server *srv)
{
	struct conn *c;

	TAILQ_FOREACH(c, &srv->conns, entry)
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
			return true;
	return false;
}

/*
 * Every request accepted is finished, however long the disk takes: its
 * jobs touch the store, the writers and the accelerator, which are freed
 * only after the loop ends.  What a shutdown gives up after
 * shutdown_timeout is only the delivery of replies that clients are slow
 * to take.
 */
static void
drain_cb(evutil_socket_t fd, short what, void *arg)
{
	struct server *srv = arg;
	size_t pending = srv->handler.pending(srv->handler.arg);
	struct conn *c;

	(void)fd;
	(void)what;
	if (pending > 0) {
		/* Every ten seconds, say what it waits for. */
		if (++srv->drain_polls % (10000 / SERVER_DRAIN_POLL_MS) == 0)
			log_info("%s: %zu requests still in progress",
			    __func__, pending);
		return;
	}
	TAILQ_FOREACH(c, &srv->conns, entry)
		if (c->inflight > 0)
			return;		/* its reply is on its way */
	if (server_replies_queued(srv) &&
	    srv->drain_timeout_polls-- > 0)
		return;
	if (server_replies_queued(srv))
		log_warnx("%s: replies still queued after shutdown_timeout; "
		    "closing", __func__);
	while ((c = TAILQ_FIRST(&srv->conns)) != NULL)
		conn_close(c);
	event_del(srv->drain_timer);
	event_base_loopexit(srv->base, NULL);
}

void
server_shutdown(struct server *srv)
{
	struct timeval tv = { 0, SERVER_DRAIN_POLL_MS * 1000 };
	struct conn *c;

	if (srv->shutting_down)
		return;
	srv->shutting_down = true;
	listener_free(srv->listener);
	listener_free(srv->tls_listener);
	srv->listener = srv->tls_listener = NULL;
	TAILQ_FOREACH(c, &srv->conns, entry) {
		conn_reading(c, false);
		if (c->frame_timer != NULL)
			evtimer_del(c->frame_timer);
	}
	srv->drain_timeout_polls = srv->cfg->shutdown_timeout_ms /
	    SERVER_DRAIN_POLL_MS;
	srv->drain_timer = event_new(srv->base, -1, EV_PERSIST, drain_cb, srv);
	event_add(srv->drain_timer, &tv);
	log_info("%s: no longer accepting; finishing %u connections",
	    __func__, srv->nconns);
}
