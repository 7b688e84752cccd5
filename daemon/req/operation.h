/*
 * operation: the protocol's operations, one row each: everything the
 * daemon knows about an operation starts from its row (its name, which
 * labels it in the metrics; the least role that may ask for it; the checks
 * of its message beyond what decoding does; its handler).
 *
 * A request naming no operation this server knows gets the row
 * "invalid", which refuses it.
 */
#ifndef NDDD_OPERATION_H
#define NDDD_OPERATION_H

#include <stdint.h>

#include "auth.h"
#include "nddd.pb-c.h"
#include "opcall.h"

/*
 * How long an operation's reply may grow.  The server reserves that much
 * for a request while it is in flight, so a connection's memory is bounded
 * before its replies exist (server.h).
 */
enum reply_size {
	REPLY_SMALL,		/* a status, or a fixed set of figures */
	REPLY_STATS,		/* stats: figures, and the namespaces (at
				   most STATSREQ_NAMESPACES_MAX) */
	REPLY_PER_ITEM,		/* a result for each item of a batch */
	REPLY_DOCUMENT,		/* a document and its neighbours, at most
				   request_limits.doc_reply_max */
	REPLY_PER_DOCUMENT,	/* a result for each document of a batch
				   (docreq_batch_reply_bound) */
	REPLY_PAGE,		/* a page of keys, up to the frame limit */
};

/* The most a REPLY_SMALL reply or an error takes (verify's detail is
 * 256 bytes, stats' strings under 200). */
#define REPLY_SMALL_MAX 4096
/* The most one item of a batch adds: its count and times (4 numbers of up
 * to 11 bytes) and, if it failed, its error (index, code and a message
 * under 64 bytes). */
#define REPLY_ITEM_MAX 128

struct operation {
	const char *name;
	Nddd__V1__Request__OpCase op_case;
	enum reply_size reply_size;
	enum role role;			/* the least role that may ask */
	/* The role of a request that asks for less (NULL: role). */
	enum role (*role_of)(const Nddd__V1__Request *req);
	/*
	 * The namespaces the request acts in ("": the default one), for
	 * tokens limited to namespaces: the i-th, NULL past the last (a
	 * doc_batch acts in each of its documents'); the function is NULL
	 * for an operation that acts on the whole daemon.
	 */
	const char *(*namespace_of)(const Nddd__V1__Request *req, size_t i);
	/*
	 * OK, or the code refusing the whole request with a static
	 * *message (NULL: nothing to check).
	 */
	Nddd__V1__Code (*validate)(const Nddd__V1__Request *req,
	    const struct request_limits *lim, const char **message);
	/* Worker thread: carries the request out (NULL: refused above). */
	void (*run)(struct op_call *call);
};

/* The row of req's operation ("invalid" for none the server knows). */
const struct operation *operation_of(const Nddd__V1__Request *req);
/* The row's index, from 0 to operation_count() - 1. */
unsigned operation_index(const struct operation *op);
/* The row "invalid": frames refused before their operation is known. */
const struct operation *operation_invalid(void);
unsigned operation_count(void);
/* The row of index i (NULL past the last). */
const struct operation *operation_at(unsigned i);

/* The least role that may carry out req. */
enum role operation_role(const struct operation *op,
    const Nddd__V1__Request *req);
/*
 * The most bytes the reply to a request of op_case with items batch items
 * may take (request_peek tells both); for a frame that cannot be peeked
 * at, op_case NOT_SET: the most any reply may take.
 */
size_t operation_reply_bound(Nddd__V1__Request__OpCase op_case, size_t items,
    const struct request_limits *lim);
/* OK, or the code refusing req as a whole and a static *message. */
Nddd__V1__Code operation_validate(const struct operation *op,
    const Nddd__V1__Request *req, const struct request_limits *lim,
    const char **message);

#endif
