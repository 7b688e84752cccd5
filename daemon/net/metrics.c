/*
 * metrics: request counters and latency histograms.  See metrics.h.
 */
#include "metrics.h"

#include <event2/buffer.h>

#include "clock.h"

static const double bucket_bounds[METRIC_NBUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1.0, 2.5,
};

const char *
metrics_op_name(enum metric_op op)
{
	static const char *const names[METRIC_NOPS] = {
		[METRIC_URL_SUBMIT] = "url_submit",
		[METRIC_URL_CHECK] = "url_check",
		[METRIC_URL_DELETE] = "url_delete",
		[METRIC_STATS] = "stats",
		[METRIC_VERIFY] = "verify",
		[METRIC_DOC_SUBMIT] = "doc_submit",
		[METRIC_DOC_QUERY] = "doc_query",
		[METRIC_DOC_GET] = "doc_get",
		[METRIC_DOC_DELETE] = "doc_delete",
		[METRIC_INVALID] = "invalid",
	};

	return (unsigned)op < METRIC_NOPS ? names[op] : "unknown";
}

uint64_t
metrics_now_ns(void)
{
	return clock_mono_ns();
}

void
metrics_observe(struct metrics *m, enum metric_op op, uint64_t t0_ns,
    bool failed)
{
	double secs = (double)(metrics_now_ns() - t0_ns) / 1e9;
	int b = 0;

	if ((unsigned)op >= METRIC_NOPS)
		op = METRIC_INVALID;
	while (b < METRIC_NBUCKETS && secs > bucket_bounds[b])
		b++;
	m->requests[op]++;
	m->failures[op] += failed;
	m->buckets[op][b]++;
	m->seconds[op] += secs;
}

void
metrics_render_value(struct evbuffer *out, const char *name, const char *type,
    const char *help, double value)
{
	evbuffer_add_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name,
	    help, name, type, name, value);
}

void
metrics_render(const struct metrics *m, struct evbuffer *out)
{
	evbuffer_add_printf(out, "# HELP nddd_requests_total Requests "
	    "answered, by operation.\n# TYPE nddd_requests_total counter\n");
	for (int op = 0; op < METRIC_NOPS; op++)
		evbuffer_add_printf(out, "nddd_requests_total{op=\"%s\"} %llu\n",
		    metrics_op_name(op), (unsigned long long)m->requests[op]);
	evbuffer_add_printf(out, "# HELP nddd_request_failures_total Requests "
	    "refused as a whole, by operation.\n"
	    "# TYPE nddd_request_failures_total counter\n");
	for (int op = 0; op < METRIC_NOPS; op++)
		evbuffer_add_printf(out,
		    "nddd_request_failures_total{op=\"%s\"} %llu\n",
		    metrics_op_name(op), (unsigned long long)m->failures[op]);
	evbuffer_add_printf(out, "# HELP nddd_request_duration_seconds From a "
	    "request's frame to its reply, by operation.\n"
	    "# TYPE nddd_request_duration_seconds histogram\n");
	for (int op = 0; op < METRIC_NOPS; op++) {
		uint64_t cum = 0;

		for (int b = 0; b <= METRIC_NBUCKETS; b++) {
			cum += m->buckets[op][b];
			if (b < METRIC_NBUCKETS)
				evbuffer_add_printf(out,
				    "nddd_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"%g\"} %llu\n",
				    metrics_op_name(op), bucket_bounds[b],
				    (unsigned long long)cum);
			else
				evbuffer_add_printf(out,
				    "nddd_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"+Inf\"} %llu\n",
				    metrics_op_name(op),
				    (unsigned long long)cum);
		}
		evbuffer_add_printf(out, "nddd_request_duration_seconds_sum"
		    "{op=\"%s\"} %.9f\n", metrics_op_name(op), m->seconds[op]);
		evbuffer_add_printf(out, "nddd_request_duration_seconds_count"
		    "{op=\"%s\"} %llu\n", metrics_op_name(op),
		    (unsigned long long)m->requests[op]);
	}
	metrics_render_value(out, "nddd_connections_accepted_total", "counter",
	    "Connections accepted.", (double)m->connections_accepted);
	metrics_render_value(out, "nddd_connections_refused_total", "counter",
	    "Connections refused over max_connections.",
	    (double)m->connections_refused);
	metrics_render_value(out, "nddd_connections_failed_total", "counter",
	    "Connections closed for a bad or oversized frame or a timeout.",
	    (double)m->connections_failed);
}
