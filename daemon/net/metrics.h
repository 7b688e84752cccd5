/*
 * metrics: counters and latency histograms of the requests answered, kept
 * in the event loop thread (where every reply leaves), and their rendering
 * in the Prometheus text format.
 */
#ifndef NDDD_METRICS_H
#define NDDD_METRICS_H

#include <stdbool.h>
#include <stdint.h>

struct evbuffer;

/* What a request asked for, as the metrics label it. */
enum metric_op {
	METRIC_URL_SUBMIT,
	METRIC_URL_CHECK,
	METRIC_URL_DELETE,
	METRIC_STATS,
	METRIC_VERIFY,
	METRIC_DOC_SUBMIT,
	METRIC_DOC_QUERY,
	METRIC_DOC_GET,
	METRIC_DOC_DELETE,
	METRIC_INVALID,		/* undecodable or refused before its op */
	METRIC_NOPS
};

/* Upper bounds of the latency buckets, in seconds, then +Inf. */
#define METRIC_NBUCKETS 14

struct metrics {
	uint64_t requests[METRIC_NOPS];
	uint64_t failures[METRIC_NOPS];	/* answered with a refusal */
	uint64_t buckets[METRIC_NOPS][METRIC_NBUCKETS + 1];
	double seconds[METRIC_NOPS];
	uint64_t connections_accepted;
	uint64_t connections_refused;	/* over max_connections */
	uint64_t connections_failed;	/* closed for a bad frame, timeout */
};

/* The label of op ("url_submit", ...). */
const char *metrics_op_name(enum metric_op op);

/* Monotonic nanoseconds, for request start times. */
uint64_t metrics_now_ns(void);

/* Loop thread: one request answered, started at t0_ns. */
void metrics_observe(struct metrics *m, enum metric_op op, uint64_t t0_ns,
    bool failed);

/* Appends the request metrics to out, in the Prometheus text format. */
void metrics_render(const struct metrics *m, struct evbuffer *out);

/* Appends one gauge or counter with its HELP and TYPE lines. */
void metrics_render_value(struct evbuffer *out, const char *name,
    const char *type, const char *help, double value);

#endif
