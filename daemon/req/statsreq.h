/*
 * statsreq: the daemon's view of itself, gathered in one place for both
 * its readers: the stats operation of the protocol and the gauges of
 * /metrics.
 *
 * Threads: statsreq_gather runs on any thread (a request worker, or the
 * loop for /metrics); what it reads is atomic or locked by its owner.
 * statsreq_pending is the loop's.
 */
#ifndef NDDD_STATSREQ_H
#define NDDD_STATSREQ_H

#include <stddef.h>
#include <stdint.h>

#include "accel.h"
#include "defer.h"
#include "docset.h"
#include "opcall.h"
#include "urlset.h"
#include "writer.h"

struct evbuffer;
struct store_txn;

/* The namespaces stats lists, at most (the default one first, then by
 * name), and the bytes each takes at most: a name of 64 bytes, three
 * counts and their tags and length. */
#define STATSREQ_NAMESPACES_MAX		1024
#define STATSREQ_NAMESPACE_BYTES	112

struct daemon_stats {
	uint64_t uptime_seconds;
	struct urlset_stats urls;
	struct docset_stats docs;
	struct accel_stats accel;
	struct writer_stats writer;
	struct defer_stats doc_store;
	uint64_t filter_counters, filter_nonzero, filter_saturated;
	uint64_t filter_bytes;
	uint64_t store_bytes;
	int store_full;			/* 0, or why writes are refused now */
	uint64_t store_refused_full;	/* writes refused for want of room */
	uint32_t connections;
};

/* Gathers everything into *out. */
void statsreq_gather(const struct req_services *svc, struct daemon_stats *out);

/* Loop thread: requests accepted and not yet answered. */
size_t statsreq_pending(const struct req_services *svc);

/* The stats operation's handler (operation.h). */
void statsreq_run(struct op_call *call);

/*
 * Loop thread: appends the gauges of s (and the pending requests) to out,
 * in the Prometheus text format.
 */
void statsreq_render_gauges(const struct req_services *svc,
    const struct daemon_stats *s, struct evbuffer *out);

#endif
