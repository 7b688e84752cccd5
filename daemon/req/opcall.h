/*
 * opcall: what an operation's handler works with.  The daemon's parts,
 * shared by every request (struct req_services, owned by the dispatcher);
 * what each request worker owns (struct worker_ctx); one request being
 * carried out (struct op_call); and the limits requests are checked
 * against.
 */
#ifndef NDDD_OPCALL_H
#define NDDD_OPCALL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "arena.h"
#include "auth.h"
#include "nddd.pb-c.h"
#include "urlset.h"

struct accel;
struct config;
struct docreq_env;
struct docset;
struct reply;
struct server;
struct shard_state;
struct simhash_scratch;
struct docfp_scratch;
struct store;
struct store_txn;
struct url_keyer;
struct urlset_reader;
struct workers;
struct writer;

/* The server's limits on requests, as validation needs them. */
struct request_limits {
	uint64_t max_batch;
	size_t max_frame;		/* [server] max_frame */
	/* The longest document reply: neighbours past it are left out
	 * (near_total still counts them). */
	size_t doc_reply_max;
};

struct req_services {
	const struct config *cfg;
	struct store *st;
	struct urlset *us;
	struct docset *ds;
	struct writer *w;
	struct accel *acc;
	struct workers *workers;
	struct docreq_env *docs;	/* the document path's loop side */
	struct server *srv;		/* NULL until the server is up */
	struct shard_state *shard;	/* its place in a shard list */
	enum urlset_durability durability;	/* of batches naming none */
	struct request_limits limits;
	time_t started;
};

/* What one request worker owns; every request it runs uses it. */
struct worker_ctx {
	struct url_keyer *keyer;
	struct urlset_reader *urls;	/* URL checks */
	struct store_txn *reader;	/* a read transaction, renewed per use */
	struct simhash_scratch *scratch;	/* fingerprints computed inline */
	struct docfp_scratch *docfp;	/* pages' main content, sketches */
	struct arena arena;		/* one request's memory */
};

/*
 * One request being carried out by its operation's handler, on a request
 * worker.  The handler answers into reply, or moves the reply into the
 * job that will answer it (reply_move).  A request that must go on in the
 * loop thread sets then_in_loop: it is called there, with then_arg, once
 * the worker is done.
 */
struct op_call {
	struct req_services *svc;
	struct worker_ctx *ctx;
	const Nddd__V1__Request *req;
	enum role role;			/* what the request's token grants */
	struct reply *reply;
	void (*then_in_loop)(void *arg);
	void *then_arg;
	/* Set by a handler run in the loop (dispatch.c, "Checks answered in
	 * the loop") that would have waited: it did nothing and answered
	 * nothing, and the request goes to a worker. */
	bool would_block;
};

#endif
