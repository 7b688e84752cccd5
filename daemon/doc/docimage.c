/*
 * docimage: the documents' restart image.  See docimage.h.
 *
 * The file: a head (below), the fingerprints (8 bytes each), the ids (8
 * each), the namespaces (4 each, padded to 8 bytes), then the sketch
 * index's image (sketchidx.h) to the end of the file.
 */
#include "docimage.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define MAGIC		"nddddoc1"	/* the format's version is its digit */
#define BYTE_ORDER_MARK	0x01020304u
#define WRITE_BUFFER	((size_t)1 << 20)

struct head {
	char magic[8];
	uint32_t order;		/* BYTE_ORDER_MARK as the writer stored it */
	uint32_t pad;
	struct store_ident of;	/* the store it was written from */
	uint64_t n, max_id, unsketched;
	uint64_t sketch_bytes;
};

struct docimage {
	void *map;
	size_t len;
	struct docimage_docs docs;
	const void *sketches;
	size_t sketch_len;
};

/* The documents' part's bytes for n documents. */
static uint64_t
docs_bytes(uint64_t n)
{
	return (20 * n + 7) & ~(uint64_t)7;
}

static char *
image_path(struct store *st, const char *suffix)
{
	char *path;

	if (asprintf(&path, "%s/%s%s", store_dir(st), DOCIMAGE_FILE,
	    suffix) == -1)
		return NULL;
	return path;
}

/* Writes the file at path; -1 with errno set if it failed. */
static int
write_file(const char *path, const struct head *h,
    const struct docimage_docs *docs, struct sketchidx *x)
{
	static const uint8_t zeros[8];
	size_t pad = docs_bytes(docs->n) - 20 * docs->n;
	FILE *f = fopen(path, "wb");
	int rc, saved;

	if (f == NULL)
		return -1;
	setvbuf(f, NULL, _IOFBF, WRITE_BUFFER);
	rc = fwrite(h, sizeof(*h), 1, f) == 1 &&
	    fwrite(docs->fps, sizeof(uint64_t), docs->n, f) == docs->n &&
	    fwrite(docs->ids, sizeof(uint64_t), docs->n, f) == docs->n &&
	    fwrite(docs->nss, sizeof(uint32_t), docs->n, f) == docs->n &&
	    fwrite(zeros, 1, pad, f) == pad &&
	    sketchidx_image_write(x, f) == 0 && fflush(f) == 0 &&
	    fsync(fileno(f)) == 0 ? 0 : -1;
	saved = errno;
	if (fclose(f) != 0 && rc == 0)
		return -1;
	errno = saved;
	return rc;
}

/* Makes a rename in directory dir durable. */
static int
sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY), rc;

	if (fd == -1)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int
docimage_save(struct store *st, const struct docimage_docs *docs,
    struct sketchidx *x, char **cause)
{
	struct head h = { .magic = MAGIC, .order = BYTE_ORDER_MARK,
	    .n = docs->n, .max_id = docs->max_id,
	    .unsketched = docs->unsketched,
	    .sketch_bytes = sketchidx_image_bytes(x) };
	char *tmp = image_path(st, ".tmp"), *path = image_path(st, "");
	int rc;

	*cause = NULL;
	if (tmp == NULL || path == NULL) {
		free(tmp);
		free(path);
		return -1;
	}
	if ((rc = store_ident_now(st, &h.of)) != STORE_OK) {
		if (asprintf(cause, "%s: the store: %s", path,
		    store_strstatus(rc)) == -1)
			*cause = NULL;
		rc = -1;
	} else {
		if ((rc = write_file(tmp, &h, docs, x)) == -1 ||
		    (rc = rename(tmp, path)) == -1 ||
		    (rc = sync_dir(store_dir(st))) == -1) {
			if (asprintf(cause, "%s: %s", path, strerror(errno)) ==
			    -1)
				*cause = NULL;
			(void)unlink(tmp);
			(void)unlink(path);
		}
	}
	free(tmp);
	free(path);
	return rc;
}

/* Whether h, the head of a file of size bytes, matches the store as
 * opened; if not, why not in why. */
static bool
head_usable(const struct head *h, uint64_t size, struct store *st,
    char *why, size_t wlen)
{
	struct store_ident now;

	store_ident_at_open(st, &now);
	if (memcmp(h->magic, MAGIC, sizeof(h->magic)) != 0 ||
	    h->order != BYTE_ORDER_MARK) {
		snprintf(why, wlen, "not an image of this version");
		return false;
	}
	if (h->of.dev != now.dev || h->of.ino != now.ino) {
		snprintf(why, wlen, "written for another data file");
		return false;
	}
	if (h->of.txn_id != now.txn_id) {
		snprintf(why, wlen, "written at the store's commit %" PRIu64
		    ", the store is at commit %" PRIu64, h->of.txn_id,
		    now.txn_id);
		return false;
	}
	if (h->n > size / 20 || h->sketch_bytes > size ||
	    sizeof(*h) + docs_bytes(h->n) + h->sketch_bytes != size) {
		snprintf(why, wlen, "damaged: %" PRIu64 " bytes, not what its "
		    "head says", size);
		return false;
	}
	return true;
}

struct docimage *
docimage_open(struct store *st)
{
	char *path = image_path(st, ""), *tmp = image_path(st, ".tmp");
	struct docimage *im = NULL;
	struct stat sb;
	struct head h;
	char why[128];
	int fd;

	/* What a stop killed while writing left: no image. */
	if (tmp != NULL)
		(void)unlink(tmp);
	free(tmp);
	if (path == NULL)
		return NULL;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			log_warn("%s: %s", __func__, path);
		free(path);
		return NULL;
	}
	/* One start each, used or not (docimage.h). */
	if (unlink(path) == -1)
		log_warn("%s: removing %s", __func__, path);
	if (fstat(fd, &sb) == -1 || pread(fd, &h, sizeof(h), 0) !=
	    (ssize_t)sizeof(h)) {
		snprintf(why, sizeof(why), "unreadable");
		goto unusable;
	}
	if (!head_usable(&h, (uint64_t)sb.st_size, st, why, sizeof(why)))
		goto unusable;
	if ((im = calloc(1, sizeof(*im))) == NULL) {
		snprintf(why, sizeof(why), "out of memory");
		goto unusable;
	}
	/* Read in whole, in file order, before the tables are filled. */
	im->len = (size_t)sb.st_size;
	if ((im->map = mmap(NULL, im->len, PROT_READ, MAP_PRIVATE |
	    MAP_POPULATE, fd, 0)) == MAP_FAILED) {
		snprintf(why, sizeof(why), "cannot map it: %s",
		    strerror(errno));
		free(im);
		im = NULL;
		goto unusable;
	}
	close(fd);
	im->docs.n = h.n;
	im->docs.max_id = h.max_id;
	im->docs.unsketched = h.unsketched;
	im->docs.fps = (const uint64_t *)((char *)im->map + sizeof(h));
	im->docs.ids = im->docs.fps + h.n;
	im->docs.nss = (const uint32_t *)(im->docs.ids + h.n);
	im->sketches = (char *)im->map + sizeof(h) + docs_bytes(h.n);
	im->sketch_len = h.sketch_bytes;
	free(path);
	return im;
unusable:
	log_info("%s: %s is %s: the documents are read from the store",
	    __func__, path, why);
	close(fd);
	free(path);
	return NULL;
}

const struct docimage_docs *
docimage_docs(const struct docimage *im)
{
	return &im->docs;
}

void
docimage_sketches(const struct docimage *im, const void **p, size_t *len)
{
	*p = im->sketches;
	*len = im->sketch_len;
}

uint64_t
docimage_bytes(const struct docimage *im)
{
	return im->len;
}

static void *
unmap_run(void *arg)
{
	struct docimage *im = arg;

	munmap(im->map, im->len);
	free(im);
	return NULL;
}

void
docimage_close(struct docimage *im)
{
	pthread_attr_t attr;
	pthread_t t;
	bool detached;

	if (im == NULL)
		return;
	/* The file is gone: the unmapping gives its page cache back, 0.4 s
	 * for 10 million documents, which the start need not wait for. */
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	detached = pthread_create(&t, &attr, unmap_run, im) == 0;
	pthread_attr_destroy(&attr);
	if (!detached)
		unmap_run(im);
}
