/*
 * testutil: helpers shared by the test programs.  See testutil.h.
 */
#include "testutil.h"

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *
tu_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	ck_assert_int_ne(asprintf(&path, "%s/nddd-test.XXXXXX", base), -1);
	ck_assert_msg(mkdtemp(path) != NULL, "mkdtemp %s failed", path);
	return path;
}

static int
tu_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void
tu_rmtree(const char *path)
{
	if (path != NULL)
		nftw(path, tu_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *
tu_join(const char *env, const char *fallback, const char *rel)
{
	const char *base = getenv(env);
	char *path;

	if (base == NULL || *base == '\0')
		base = fallback;
	ck_assert_int_ne(asprintf(&path, "%s/%s", base, rel), -1);
	return path;
}

char *
tu_data_path(const char *rel)
{
	char *path = tu_join("NDDD_TEST_DATA", "../shared/data", rel);

	ck_assert_msg(access(path, R_OK) == 0,
	    "test data %s is missing (set NDDD_TEST_DATA)", path);
	return path;
}

char *
tu_source_path(const char *rel)
{
	return tu_join("NDDD_SOURCE_DIR", ".", rel);
}

char *
tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		goto out;
	if ((buf = malloc((size_t)size + 1)) == NULL)
		goto out;
	if (fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[size] = '\0';
	if (len != NULL)
		*len = (size_t)size;
out:
	fclose(f);
	return buf;
}

void
tu_copy_file(const char *src, const char *dst, unsigned mode)
{
	char *data;
	size_t len;
	int fd;

	ck_assert_msg((data = tu_read_file(src, &len)) != NULL, "%s", src);
	fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	ck_assert_msg(fd != -1, "%s", dst);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
	/* After the file is written: the mode may forbid writing it. */
	ck_assert_int_eq(chmod(dst, (mode_t)mode), 0);
	free(data);
}

uint64_t
tu_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t
tu_rand_below(uint64_t *state, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)tu_rand(state) * n) >> 64);
}

void
tu_foreach_list_line(const char *rel,
    void (*fn)(void *arg, const char *s, size_t len), void *arg)
{
	char *path = tu_data_path(rel), *data, *p, *end, *url;
	size_t len;

	data = tu_read_file(path, &len);
	ck_assert_msg(data != NULL, "%s: cannot read", path);
	for (p = data, end = data + len; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		char *tab = memchr(p, '\t', n), *u = tab ? tab + 1 : p;
		size_t un = n - (size_t)(u - p);

		fn(arg, p, n);
		if (memmem(u, un, "://", 3) == NULL) {
			ck_assert_int_ne(asprintf(&url, "http://%.*s", (int)un,
			    u), -1);
			fn(arg, url, strlen(url));
			free(url);
		} else if (tab != NULL)
			fn(arg, u, un);
		p += n + 1;
	}
	free(data);
	free(path);
}

double
tu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
