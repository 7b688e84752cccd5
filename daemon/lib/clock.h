/*
 * clock: the two clocks nddd reads.  Wall time stamps what users see (a
 * URL's first and last seen, a transaction's time); monotonic time measures
 * intervals, which a step of the wall clock must not stretch or cut short.
 */
#ifndef NDDD_CLOCK_H
#define NDDD_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Milliseconds since the Unix epoch. */
static inline uint64_t
clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Nanoseconds on the monotonic clock (from an arbitrary origin). */
static inline uint64_t
clock_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
clock_mono_ms(void)
{
	return clock_mono_ns() / 1000000;
}

#endif
