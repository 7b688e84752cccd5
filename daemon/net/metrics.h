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

/*
 * The operations the metrics count, by index: the request layer names
 * them (metrics_name_op) from its operation table.
 */
#define METRIC_MAX_OPS 20

/* Upper bounds of the latency buckets, in seconds, then +Inf. */
#define METRIC_NBUCKETS 14

struct metrics {
	const char *op_names[METRIC_MAX_OPS];	/* static */
	unsigned nops;
	uint64_t requests[METRIC_MAX_OPS];
	uint64_t failures[METRIC_MAX_OPS];	/* answered with a refusal */
	uint64_t buckets[METRIC_MAX_OPS][METRIC_NBUCKETS + 1];
	double seconds[METRIC_MAX_OPS];
	uint64_t connections_accepted;
	uint64_t connections_refused;	/* over max_connections */
	uint64_t connections_failed;	/* closed for a bad frame, timeout */
};

/*
 * Names operation op (below METRIC_MAX_OPS; name is static): its requests
 * are counted under this label.
 */
void metrics_name_op(struct metrics *m, unsigned op, const char *name);

/* Monotonic nanoseconds, for request start times. */
uint64_t metrics_now_ns(void);

/* Loop thread: one request of operation op answered, started at t0_ns. */
void metrics_observe(struct metrics *m, unsigned op, uint64_t t0_ns,
    bool failed);

/* Appends the request metrics to out, in the Prometheus text format. */
void metrics_render(const struct metrics *m, struct evbuffer *out);

/* Appends one gauge or counter with its HELP and TYPE lines. */
void metrics_render_value(struct evbuffer *out, const char *name,
    const char *type, const char *help, double value);

#endif
