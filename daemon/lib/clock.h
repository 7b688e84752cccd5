/*
 * clock: the two clocks nddd reads.  Wall time stamps what users see (a
 * URL's first and last seen, a transaction's time); monotonic time measures
 * intervals, which a step of the wall clock must not stretch or cut short.
 */
#ifndef NDDD_CLOCK_H
#define NDDD_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * Where wall time comes from instead of the system's clock: NULL but in
 * tests, which make times to live pass at will (clock_wall_from_file).
 */
extern uint64_t (*clock_wall_source)(void);

/*
 * Test-only: wall time becomes the number of milliseconds written in the
 * file at path, read at every call (nddd does this when NDDD_TEST_CLOCK
 * names a file).  Returns -1 if the file cannot be read now.
 */
int clock_wall_from_file(const char *path);

/* Milliseconds since the Unix epoch. */
static inline uint64_t
clock_wall_ms(void)
{
	struct timespec ts;

	if (clock_wall_source != NULL)
		return clock_wall_source();
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
