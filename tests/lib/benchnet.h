/*
 * benchnet: what the protocol benchmarks share.  They encode every request
 * frame before the clock starts, then stream them over one connection per
 * client thread with a window of requests in flight, decoding each reply
 * as it comes; so the figures are the server's, not the client's encoder's.
 */
#ifndef NDDD_BENCHNET_H
#define NDDD_BENCHNET_H

#include <stddef.h>
#include <stdint.h>

#include "nddd.pb-c.h"

/* Seconds on the monotonic clock. */
double bench_now(void);

/* The request as one length-prefixed frame, malloc'ed; its size in *len. */
uint8_t *bench_frame(const Nddd__V1__Request *req, size_t *len);

/*
 * One client's stream: frames[0 .. n-1] sent with at most window unanswered,
 * each reply handed to reply(arg, r), which returns -1 to stop the stream.
 */
struct bench_stream {
	const char *address;	/* HOST:PORT */
	uint8_t *const *frames;
	const size_t *lens;
	size_t n;
	unsigned window;
	int (*reply)(void *arg, const Nddd__V1__Response *r);
	void *arg;
	/*
	 * If not NULL: seconds from sending frame i to its reply, for frames
	 * whose request ids are 1 .. n in order (the benchmarks' own).
	 */
	double *latency;
};

/* The p-th percentile (0 to 100) of v[0 .. n-1], which it sorts. */
double bench_percentile(double *v, size_t n, double p);

/*
 * Runs the stream to its end: 0, or -1 with a sentence in err (connection
 * refused or lost, malformed reply, reply() refused).
 */
int bench_stream_run(const struct bench_stream *s, char *err, size_t errlen);

#endif
