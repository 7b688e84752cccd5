/*
 * Tests for memroom: the room left is MemAvailable without cgroups, and the
 * least room under the limits of a v2 cgroup and those above it, or of a
 * v1 memory cgroup, on trees of /proc and /sys/fs/cgroup files written
 * here; "max" and v1's "no limit" leave it alone; a cgroup over its limit
 * leaves none.  And the real one is no more than the machine's.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "memroom.h"
#include "testutil.h"

/* Writes text to root/rel, making its directories. */
static void
put(const char *root, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL;
	    p++) {
		*p = '\0';
		ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

#define AVAIL	(UINT64_C(1000000) * 1024)	/* MemAvailable: 1000000 kB */

START_TEST(test_cgroup_limits)
{
	char *proc = tu_tmpdir(), *sys = tu_tmpdir();

	put(proc, "meminfo", "MemTotal: 4000000 kB\nMemFree: 10 kB\n"
	    "MemAvailable: 1000000 kB\nBuffers: 1 kB\n");
	/* No cgroup file: the machine's. */
	ck_assert_uint_eq(memroom_at(proc, sys), AVAIL);
	/* v2, nested: the cgroup's room, then its parent's when less. */
	put(proc, "self/cgroup", "0::/a/b\n");
	put(sys, "a/b/memory.max", "300000000\n");
	put(sys, "a/b/memory.current", "100000000\n");
	put(sys, "a/memory.max", "max\n");
	put(sys, "a/memory.current", "900000000\n");
	ck_assert_uint_eq(memroom_at(proc, sys), 200000000);
	put(sys, "a/memory.max", "950000000\n");
	ck_assert_uint_eq(memroom_at(proc, sys), 50000000);
	/* Over its limit (page cache counts): no room. */
	put(sys, "a/b/memory.current", "400000000\n");
	ck_assert_uint_eq(memroom_at(proc, sys), 0);
	/* The root cgroup: no limit. */
	put(proc, "self/cgroup", "0::/\n");
	ck_assert_uint_eq(memroom_at(proc, sys), AVAIL);
	/* v1's memory controller, among others; its root's "no limit". */
	put(proc, "self/cgroup", "5:cpu,cpuacct:/x\n4:memory:/x\n0::/\n");
	put(sys, "memory/x/memory.limit_in_bytes", "500000000\n");
	put(sys, "memory/x/memory.usage_in_bytes", "200000000\n");
	put(sys, "memory/memory.limit_in_bytes", "9223372036854771712\n");
	put(sys, "memory/memory.usage_in_bytes", "3000000000\n");
	ck_assert_uint_eq(memroom_at(proc, sys), 300000000);
	/* A limit above what the machine has leaves the machine's. */
	put(sys, "memory/x/memory.limit_in_bytes", "90000000000\n");
	ck_assert_uint_eq(memroom_at(proc, sys), AVAIL);
	/* No meminfo: unknown. */
	put(proc, "meminfo", "MemTotal: 4000000 kB\n");
	ck_assert_uint_eq(memroom_at(proc, sys), 0);
	tu_rmtree(proc);
	tu_rmtree(sys);
	free(proc);
	free(sys);
}
END_TEST

START_TEST(test_this_process)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb = 0;
	char line[128];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f) != NULL &&
	    sscanf(line, "MemAvailable: %llu kB", &kb) != 1)
		;
	fclose(f);
	ck_assert_uint_gt(kb, 0);
	/* (The machine's figure moves between the two reads: a margin.) */
	ck_assert_uint_gt(memroom(), 0);
	ck_assert_uint_le(memroom(), (uint64_t)kb * 1024 + (64u << 20));
}
END_TEST

Suite *memroom_suite(void);

Suite *
memroom_suite(void)
{
	Suite *s = suite_create("memroom");
	TCase *tc = tcase_create("memroom");

	tcase_add_test(tc, test_cgroup_limits);
	tcase_add_test(tc, test_this_process);
	suite_add_tcase(s, tc);
	return s;
}
