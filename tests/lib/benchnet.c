/*
 * benchnet: frames, connections and the windowed reply loop of the
 * protocol benchmarks (see benchnet.h).
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/util.h>

#include "benchnet.h"

double
bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint8_t *
bench_frame(const Nddd__V1__Request *req, size_t *len)
{
	size_t n = nddd__v1__request__get_packed_size(req);
	uint8_t *f = malloc(n + 4);

	if (f == NULL) {
		perror("bench_frame");
		exit(1);
	}
	f[0] = (uint8_t)(n >> 24);
	f[1] = (uint8_t)(n >> 16);
	f[2] = (uint8_t)(n >> 8);
	f[3] = (uint8_t)n;
	nddd__v1__request__pack(req, f + 4);
	*len = n + 4;
	return f;
}

static int
connect_to(const char *address)
{
	struct sockaddr_storage ss;
	int len = sizeof(ss), fd, one = 1;

	if (evutil_parse_sockaddr_port(address, (struct sockaddr *)&ss,
	    &len) == -1 || (fd = socket(ss.ss_family, SOCK_STREAM, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&ss, (socklen_t)len) == -1) {
		close(fd);
		return -1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * Decodes the whole frames in in[0 .. *have-1], hands them to reply() and
 * keeps the partial tail; grows the buffer when one frame outgrows it.
 * Returns the number of replies, or -1 with err set.
 */
static ssize_t
drain_replies(const struct bench_stream *s, uint8_t **in, size_t *cap,
    size_t *have, char *err, size_t errlen)
{
	size_t used = 0;
	ssize_t replies = 0;

	for (;;) {
		const uint8_t *p = *in + used;
		Nddd__V1__Response *r;
		uint32_t len;
		int rc;

		if (*have - used < 4)
			break;
		len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		    (uint32_t)p[2] << 8 | p[3];
		if (*have - used < 4 + (size_t)len) {
			if (4 + (size_t)len > *cap) {
				uint8_t *bigger = realloc(*in, 4 + (size_t)len);

				if (bigger == NULL) {
					snprintf(err, errlen, "out of memory");
					return -1;
				}
				*in = bigger;
				*cap = 4 + (size_t)len;
			}
			break;
		}
		if ((r = nddd__v1__response__unpack(NULL, len, p + 4)) ==
		    NULL) {
			snprintf(err, errlen, "malformed reply");
			return -1;
		}
		if (s->latency != NULL && r->id >= 1 && r->id <= s->n)
			s->latency[r->id - 1] = bench_now() -
			    s->latency[r->id - 1];
		rc = s->reply(s->arg, r);
		if (rc == -1)
			snprintf(err, errlen, "request refused: %s",
			    r->status && r->status->message ?
			    r->status->message : "unexpected reply");
		nddd__v1__response__free_unpacked(r, NULL);
		if (rc == -1)
			return -1;
		used += 4 + len;
		replies++;
	}
	memmove(*in, *in + used, *have - used);
	*have -= used;
	return replies;
}

int
bench_stream_run(const struct bench_stream *s, char *err, size_t errlen)
{
	size_t sent = 0, answered = 0, have = 0, cap = 1 << 20;
	uint8_t *in = malloc(cap);
	int fd = connect_to(s->address), rc = -1;

	if (fd == -1) {
		snprintf(err, errlen, "cannot connect to %s", s->address);
		free(in);
		return -1;
	}
	while (answered < s->n) {
		ssize_t n;

		while (sent < s->n && sent - answered < s->window) {
			if (s->latency != NULL)
				s->latency[sent] = bench_now();
			if (write_all(fd, s->frames[sent], s->lens[sent])) {
				snprintf(err, errlen, "connection lost");
				goto out;
			}
			sent++;
		}
		if ((n = read(fd, in + have, cap - have)) <= 0) {
			snprintf(err, errlen, "connection lost");
			goto out;
		}
		have += (size_t)n;
		if ((n = drain_replies(s, &in, &cap, &have, err, errlen)) < 0)
			goto out;
		answered += (size_t)n;
	}
	rc = 0;
out:
	close(fd);
	free(in);
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
bench_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	i = (size_t)(p / 100 * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}
