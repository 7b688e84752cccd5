/*
 * memroom: the memory this process may still take.  See memroom.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memroom.h"

/* The first number in the file at path (a limit of "max": UINT64_MAX);
 * 0 if it cannot be read. */
static uint64_t
read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	char buf[64];
	uint64_t v = 0;

	if (f == NULL)
		return 0;
	if (fgets(buf, sizeof(buf), f) != NULL)
		v = strncmp(buf, "max", 3) == 0 ? UINT64_MAX :
		    strtoull(buf, NULL, 10);
	fclose(f);
	return v;
}

static uint64_t
mem_available(const char *proc)
{
	char path[4096], line[128];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/meminfo", proc);
	if ((f = fopen(path, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return (uint64_t)kb * 1024;
}

/*
 * The least room left under the limits of dir (a cgroup's directory) and
 * of every directory above it down to root, given the names of the limit
 * and usage files; room unchanged where none is set.
 */
static uint64_t
cgroup_room(const char *root, char *dir, const char *limit_name,
    const char *usage_name, uint64_t room)
{
	char path[4096 + 64];
	size_t rlen = strlen(root);

	for (;;) {
		uint64_t limit, usage;

		snprintf(path, sizeof(path), "%s/%s", dir, limit_name);
		limit = read_number(path);
		snprintf(path, sizeof(path), "%s/%s", dir, usage_name);
		usage = read_number(path);
		/* (v1 writes no limit as a number near 2^63.) */
		if (limit != 0 && limit < (UINT64_C(1) << 62)) {
			uint64_t left = limit > usage ? limit - usage : 0;

			if (left < room)
				room = left;
		}
		if (strlen(dir) <= rlen)
			return room;
		*strrchr(dir, '/') = '\0';
	}
}

uint64_t
memroom_at(const char *proc, const char *sys)
{
	uint64_t room = mem_available(proc);
	char path[4096], line[4096], dir[4096];
	FILE *f;

	if (room == 0)
		return 0;
	snprintf(path, sizeof(path), "%s/self/cgroup", proc);
	if ((f = fopen(path, "r")) == NULL)
		return room;
	/* "ID:CONTROLLERS:PATH": v2's is "0::PATH", v1's memory controller
	 * is one with "memory" among its controllers. */
	while (fgets(line, sizeof(line), f) != NULL) {
		char *ctl = strchr(line, ':'), *cg;

		if (ctl == NULL || (cg = strchr(++ctl, ':')) == NULL)
			continue;
		*cg++ = '\0';
		cg[strcspn(cg, "\n")] = '\0';
		if (strcmp(cg, "/") == 0)
			cg = "";
		if (*ctl == '\0') {
			snprintf(dir, sizeof(dir), "%s%s", sys, cg);
			room = cgroup_room(sys, dir, "memory.max",
			    "memory.current", room);
		} else if (strstr(ctl, "memory") != NULL) {
			char root[4096];

			snprintf(root, sizeof(root), "%s/memory", sys);
			snprintf(dir, sizeof(dir), "%s%s", root, cg);
			room = cgroup_room(root, dir, "memory.limit_in_bytes",
			    "memory.usage_in_bytes", room);
		}
	}
	fclose(f);
	return room;
}

uint64_t
memroom(void)
{
	return memroom_at("/proc", "/sys/fs/cgroup");
}
