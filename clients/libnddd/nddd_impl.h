/*
 * nddd_impl: what the files of libnddd share.  Not installed: users see
 * nddd.h alone.  The library, by concern (as hiredis is):
 *
 *   client.c       the connection: connecting, TLS, the output buffer and
 *                  the queueing of requests, nddd_recv's waits
 *   reader.c       the reply reader, with no I/O: frames in, struct
 *                  nddd_reply out (bytes fed by nddd_recv, or by a test)
 *   request.c      the request encoders (nddd_send_*) and the settings
 *                  the requests carry (namespaces, durability, match)
 *   bulk.c         the pipelined loops: nddd_urls, nddd_digests, nddd_docs
 *   urlbulk.c      bulk URL checks and submits in the store's key order
 *                  (nddd_bulk_*)
 *   call.c         the synchronous calls: nddd_call, nddd_stats,
 *                  nddd_verify, nddd_url_forget_*
 *   canon.c        canonicalization and digests (nddd_canon_*,
 *                  nddd_use_digests)
 *   shard_admin.c  one daemon's shard state and its moved keys (resharding)
 *   shards.c, shard_docs.c  a shard list's client (shards_impl.h)
 *   engine.c       local fingerprints (engine.h)
 *
 * Internal names have no nddd_ prefix: libnddd.so exports nddd_* only.
 */
#ifndef LIBNDDD_NDDD_IMPL_H
#define LIBNDDD_NDDD_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/types.h>

#include "nddd.h"
#include "nddd.pb-c.h"

/* Largest reply frame accepted: a reply to the largest batch is ~1 MiB. */
#define READER_MAX_REPLY (64u << 20)

/*
 * The reply reader (reader.c): received bytes in buf[off..len), each
 * complete frame turned into a struct nddd_reply.  It does no I/O: the
 * caller writes into its buffer (reader_space, reader_wrote) or copies in
 * (reader_feed), then takes replies out (reader_get).
 */
struct reader {
	unsigned char *buf;
	size_t off, len, cap;
	size_t max_frame;	/* a longer frame is an error */
	uint32_t shards;	/* the last reply's Response.shards */
	char err[256];		/* why the last call failed */
};

/* A reader with a limit of READER_MAX_REPLY; NULL when out of memory. */
struct reader *reader_new(void);
void reader_free(struct reader *rd);
/*
 * Room for at least want more bytes at the end of rd's buffer (what was
 * taken out is dropped first): returns where to write them, with *room
 * the bytes that fit there, or NULL when out of memory.  reader_wrote
 * then counts the n bytes written.
 */
unsigned char *reader_space(struct reader *rd, size_t want, size_t *room);
void reader_wrote(struct reader *rd, size_t n);
/* Copies buf[0..len) in.  Returns -1 when out of memory. */
int reader_feed(struct reader *rd, const void *buf, size_t len);
/*
 * The next complete reply: returns 0 with *out the reply (the caller frees
 * it with nddd_reply_free) or NULL when no frame is complete yet; -1, with
 * rd->err, for a frame over the limit (left in the buffer), a malformed
 * one (dropped), or when out of memory.
 */
int reader_get(struct reader *rd, struct nddd_reply **out);
/* Frees what a reply's document holds (the reader's), and empties it. */
void reader_doc_release(struct nddd_doc *d);
/*
 * Formats an error message into err[0..size) and returns -1: reader_fail
 * and client_fail.  In reader.c.
 */
int errbuf_set(char *err, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/*
 * Sets *err to a message the caller frees (NULL when out of memory) and
 * returns -1: the errors of calls that make an object.  In reader.c.
 */
int errmsg_new(char **err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * Grows *buf to hold need bytes, doubling from 64 KiB.  Returns -1 when
 * out of memory (*buf is kept).  In reader.c, which needs no other file,
 * shared with the client's output buffer.
 */
int buf_grow(unsigned char **buf, size_t *cap, size_t need);

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
	struct reader *rd;	/* received bytes, and the replies in them */
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

/* Sets c's error (nddd_errstr) and returns -1. */
#define client_fail(c, ...) errbuf_set((c)->err, sizeof((c)->err), \
    __VA_ARGS__)

/* client.c */
/*
 * Gives req the next id (into *id, if not NULL) and c's token, queues its
 * frame and sends what the socket takes now.  Returns -1 with c's error
 * set (not connected, too large, out of memory, a socket error).
 */
int client_queue(nddd_client *c, Nddd__V1__Request *req, uint64_t *id);

/* request.c */
/*
 * The bytes the client's document namespace adds to a DocSubmit (its
 * field), and to the batch's length of it (one more, at most), and the
 * client's answer (2).
 */
size_t request_doc_ns_bytes(const nddd_client *c);
/* The most bytes of documents one frame of c can carry. */
size_t request_doc_room(const nddd_client *c);

/* bulk.c: the pipelined loop, for each kind of item. */
/*
 * A batch in flight: items [base, base + n) of the call's input, of which
 * nsent were sent, those at pos[0..nsent) (positions in the batch), or
 * the first nsent without pos; the others were answered already (URLs the
 * client refused with digests, documents too large for a frame).
 */
struct inflight {
	uint64_t id;
	size_t base, n;
	size_t *pos;
	size_t nsent;
};

/* The place in the call's input of the j-th item f sent. */
size_t inflight_place(const struct inflight *f, size_t j);

/* What a kind's batch function returns. */
enum {
	BATCH_SENT = 0,		/* sent, or every item answered here */
	BATCH_LOST = -1,	/* sending it failed: the connection */
	BATCH_FAILED = -2,	/* out of memory, with c's error */
};

/* A call's loop: its items and batches in flight, and its kind's. */
struct pipeline {
	nddd_client *c;
	size_t n, sent, done;	/* items: all, sent (or answered here),
				   answered */
	struct inflight *fl;	/* window slots, fl[0..nfl) in flight */
	size_t nfl;
	unsigned window;
	size_t *pos;		/* the slots' positions, or NULL */
	void (*progress)(size_t done, void *arg);
	void *arg;
	void *ctx;		/* the kind's */
	/*
	 * Fills batch f with items from sent on (f->base; f->n, f->nsent
	 * and the positions set here), and sends it unless f->nsent is 0.
	 */
	int (*batch)(struct pipeline *p, struct inflight *f);
	/* Moves r's results to f's items' places; -1 if any failed. */
	int (*take)(struct pipeline *p, const struct inflight *f,
	    struct nddd_reply *r);
	/* Item i is lost with the connection (c's error). */
	void (*unavailable)(struct pipeline *p, size_t i);
};

/*
 * Slots for the window of p, each with room for the positions of batch
 * items when with_pos.  Returns -1 with c's error when out of memory.
 */
int pipeline_init(struct pipeline *p, size_t batch, int with_pos);
void pipeline_free(struct pipeline *p);
/*
 * Runs p until every item is answered.  Returns -1, with c's error, when
 * some item failed (its result says why) or the connection did (every
 * item without an answer is then NDDD_UNAVAILABLE).
 */
int pipeline_run(struct pipeline *p);

/* call.c */
/*
 * The reply to request id of a call named what, if it is of kind; else
 * NULL with the refusal in c's error.  sent: what queueing it returned.
 * The caller frees the reply.
 */
struct nddd_reply *call_for(nddd_client *c, int sent, uint64_t id,
    enum nddd_reply_kind kind, const char *what);

/* canon.c */
/*
 * The digests of urls[0..n) (lens[i] bytes each) into digests, as
 * nddd_canon_digest makes them but eight at a time: causes[i] NULL, or
 * (static) why URL i is refused, its digest zeros.  Returns how many are
 * valid.
 */
size_t canon_digest_many(nddd_canon *k, const char *const *urls,
    const size_t *lens, size_t n, unsigned char *digests,
    const char **causes);

#endif
