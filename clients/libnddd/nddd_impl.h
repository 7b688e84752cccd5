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

/* call.c */
/*
 * The reply to request id of a call named what, if it is of kind; else
 * NULL with the refusal in c's error.  sent: what queueing it returned.
 * The caller frees the reply.
 */
struct nddd_reply *call_for(nddd_client *c, int sent, uint64_t id,
    enum nddd_reply_kind kind, const char *what);

#endif
