/*
 * memroom: how much more memory this process may take: the system's
 * MemAvailable, or less where a memory cgroup (v1 or v2) of the process,
 * or one above it, leaves less room under its limit.  A daemon run in a
 * cgroup smaller than its store (docs/capacity.md) must size what it
 * reads into the page cache by the cgroup, not by the machine.
 */
#ifndef NDDD_MEMROOM_H
#define NDDD_MEMROOM_H

#include <stdint.h>

/* Bytes, or 0 when not even MemAvailable can be read. */
uint64_t memroom(void);

/*
 * The same, with the files read under other roots: proc for /proc
 * (meminfo, self/cgroup) and sys for /sys/fs/cgroup.  For the tests.
 */
uint64_t memroom_at(const char *proc, const char *sys);

#endif
