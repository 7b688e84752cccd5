/*
 * clock: the test-only wall clock.  See clock.h.
 */
#include "clock.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

uint64_t (*clock_wall_source)(void);

static const char *clock_file;
static uint64_t clock_last;		/* the last time read (atomic) */

/* The file's number, or the last one read if it cannot be read now (tests
 * replace the file by renaming a new one over it: it never is empty). */
static uint64_t
from_file(void)
{
	char buf[32];
	ssize_t n = -1;
	int fd;

	if ((fd = open(clock_file, O_RDONLY | O_CLOEXEC)) != -1) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return __atomic_load_n(&clock_last, __ATOMIC_RELAXED);
	buf[n] = '\0';
	__atomic_store_n(&clock_last, strtoull(buf, NULL, 10),
	    __ATOMIC_RELAXED);
	return strtoull(buf, NULL, 10);
}

int
clock_wall_from_file(const char *path)
{
	clock_file = path;
	clock_last = 0;
	if (from_file() == 0)
		return -1;
	clock_wall_source = from_file;
	return 0;
}
