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

void
metrics_name_op(struct metrics *m, unsigned op, const char *name)
{
	if (op >= METRIC_MAX_OPS)
		return;
	m->op_names[op] = name;
	if (m->nops <= op)
		m->nops = op + 1;
}

uint64_t
metrics_now_ns(void)
{
	return clock_mono_ns();
}

void
metrics_observe(struct metrics *m, unsigned op, uint64_t t0_ns, bool failed)
{
	double secs = (double)(metrics_now_ns() - t0_ns) / 1e9;
	int b = 0;

	if (op >= m->nops)
		return;		/* not an operation it was told of */
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
	for (unsigned op = 0; op < m->nops; op++)
		evbuffer_add_printf(out, "nddd_requests_total{op=\"%s\"} %llu\n",
		    m->op_names[op], (unsigned long long)m->requests[op]);
	evbuffer_add_printf(out, "# HELP nddd_request_failures_total Requests "
	    "refused as a whole, by operation.\n"
	    "# TYPE nddd_request_failures_total counter\n");
	for (unsigned op = 0; op < m->nops; op++)
		evbuffer_add_printf(out,
		    "nddd_request_failures_total{op=\"%s\"} %llu\n",
		    m->op_names[op], (unsigned long long)m->failures[op]);
	evbuffer_add_printf(out, "# HELP nddd_request_duration_seconds From a "
	    "request's frame to its reply, by operation.\n"
	    "# TYPE nddd_request_duration_seconds histogram\n");
	for (unsigned op = 0; op < m->nops; op++) {
		uint64_t cum = 0;

		for (int b = 0; b <= METRIC_NBUCKETS; b++) {
			cum += m->buckets[op][b];
			if (b < METRIC_NBUCKETS)
				evbuffer_add_printf(out,
				    "nddd_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"%g\"} %llu\n",
				    m->op_names[op], bucket_bounds[b],
				    (unsigned long long)cum);
			else
				evbuffer_add_printf(out,
				    "nddd_request_duration_seconds_bucket"
				    "{op=\"%s\",le=\"+Inf\"} %llu\n",
				    m->op_names[op],
				    (unsigned long long)cum);
		}
		evbuffer_add_printf(out, "nddd_request_duration_seconds_sum"
		    "{op=\"%s\"} %.9f\n", m->op_names[op], m->seconds[op]);
		evbuffer_add_printf(out, "nddd_request_duration_seconds_count"
		    "{op=\"%s\"} %llu\n", m->op_names[op],
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
