/*
 * journal: an append-only file of frames, written in place.  See journal.h.
 */
#include "journal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "le.h"
#include "log.h"

#define JOURNAL_ZERO_CHUNK	(1u << 20)

struct journal {
	const struct journal_format *fmt;
	int fd;
	size_t size;
	size_t offset;			/* where the next frame goes */
	uint64_t seq;			/* of the last frame written */
	uint8_t *buf;			/* the frame being built */
	size_t buf_len;
	uint64_t bytes_written, frames_written, syncs;
};

static int
write_all(int fd, const void *data, size_t len, off_t off)
{
	const uint8_t *p = data;

	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* 0, 1 when the file ends first, or -1 with errno. */
static int
read_all(int fd, void *data, size_t len, off_t off)
{
	uint8_t *p = data;

	while (len > 0) {
		ssize_t n = pread(fd, p, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			return 1;
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

static int
set_cause(char **cause, const char *what, const char *path)
{
	if (asprintf(cause, "%s %s: %s", what, path, strerror(errno)) == -1)
		*cause = NULL;
	return -1;
}

/* Writes zeroes over [from, to) of fd. */
static int
write_zeroes(int fd, size_t from, size_t to)
{
	uint8_t *zero = calloc(1, JOURNAL_ZERO_CHUNK);

	if (zero == NULL)
		return -1;
	for (size_t at = from; at < to; at += JOURNAL_ZERO_CHUNK) {
		size_t n = to - at < JOURNAL_ZERO_CHUNK ? to - at :
		    JOURNAL_ZERO_CHUNK;

		if (write_all(fd, zero, n, (off_t)at) == -1) {
			free(zero);
			return -1;
		}
	}
	free(zero);
	return 0;
}

/* Zeroes the file from its end up to size, and makes that durable. */
static int
extend(int fd, const char *dir, const char *path, size_t size, char **cause)
{
	struct stat sb;
	int dfd;

	if (fstat(fd, &sb) == -1)
		return set_cause(cause, "cannot stat", path);
	if ((size_t)sb.st_size >= size)
		return 0;
	if (write_zeroes(fd, (size_t)sb.st_size, size) == -1)
		return set_cause(cause, "cannot write", path);
	if (fsync(fd) == -1)
		return set_cause(cause, "cannot sync", path);
	/* The new file's name must survive a power loss too. */
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return set_cause(cause, "cannot open", dir);
	if (fsync(dfd) == -1) {
		close(dfd);
		return set_cause(cause, "cannot sync", dir);
	}
	close(dfd);
	return 0;
}

struct journal *
journal_open(const char *dir, const struct journal_format *fmt, size_t size,
    char **cause)
{
	struct journal *j;
	struct stat sb;
	char *path = NULL;

	*cause = NULL;
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->fmt = fmt;
	j->fd = -1;
	j->size = size;
	if (asprintf(&path, "%s/%s", dir, fmt->file) == -1) {
		path = NULL;
		goto err;
	}
	if ((j->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640)) == -1) {
		set_cause(cause, "cannot open", path);
		goto err;
	}
	if (extend(j->fd, dir, path, size, cause) == -1)
		goto err;
	/* A file made larger once keeps its length: what it holds is
	 * replayed whole. */
	if (fstat(j->fd, &sb) == -1) {
		set_cause(cause, "cannot stat", path);
		goto err;
	}
	if ((size_t)sb.st_size > j->size)
		j->size = (size_t)sb.st_size;
	free(path);
	return j;
err:
	free(path);
	journal_close(j);
	return NULL;
}

void
journal_close(struct journal *j)
{
	if (j == NULL)
		return;
	if (j->fd != -1)
		close(j->fd);
	free(j->buf);
	free(j);
}

static uint32_t
frame_crc(const uint8_t *hdr, const uint8_t *payload, size_t len)
{
	uint32_t crc = crc32c(0, hdr + 4, 12);	/* count and sequence */

	return crc32c(crc, payload, len);
}

/* Where a pass over the frames stands. */
struct reading {
	size_t off;		/* of the next frame */
	size_t end;		/* no frame is read from here on */
	uint64_t want;		/* the next frame's sequence number */
	uint64_t frames;
	bool tolerate_gap;	/* a first frame beyond want is taken */
};

/* Sets *cause to "WHAT: frame SEQ FAILURE" and returns -1. */
static int
frames_err(struct journal *j, char **cause, uint64_t seq, const char *failure)
{
	if (asprintf(cause, "%s: frame %llu %s", j->fmt->what,
	    (unsigned long long)seq, failure) == -1)
		*cause = NULL;
	return -1;
}

/* Reads whole frames from rd->off while they follow each other, calling
 * fn for each. */
static int
read_frames(struct journal *j, struct reading *rd, journal_frame_fn fn,
    void *arg, char **cause)
{
	uint8_t hdr[JOURNAL_FRAME_HEADER], *payload = NULL;
	size_t cap = 0;
	int rc;

	for (;;) {
		struct journal_frame f;
		int64_t len;

		if (rd->off + sizeof(hdr) > rd->end)
			break;
		if ((rc = read_all(j->fd, hdr, sizeof(hdr), (off_t)rd->off)) !=
		    0) {
			if (rc == 1)
				break;
			goto read_err;
		}
		f.magic = le_get32(hdr);
		f.count = le_get32(hdr + 4);
		f.seq = le_get64(hdr + 8);
		f.aux = le_get32(hdr + 20);
		len = j->fmt->payload_len(f.magic, f.count, f.aux);
		/* The first frame may come after the one the store expects
		 * only if the store lost commits ([store] sync = none and a
		 * power failure): its frames are all there is. */
		if (len < 0 || (uint64_t)len > rd->end - rd->off -
		    sizeof(hdr) || (f.seq != rd->want && (rd->off != 0 ||
		    f.seq < rd->want || !rd->tolerate_gap)))
			break;
		if ((size_t)len > cap) {
			free(payload);
			if ((payload = malloc((size_t)len)) == NULL) {
				*cause = NULL;
				return -1;
			}
			cap = (size_t)len;
		}
		if ((rc = read_all(j->fd, payload, (size_t)len, (off_t)(rd->off +
		    sizeof(hdr)))) != 0) {
			if (rc == 1)
				break;
			goto read_err;
		}
		if (frame_crc(hdr, payload, (size_t)len) != le_get32(hdr + 16))
			break;
		if (f.seq != rd->want) {
			log_warnx("%s: the store holds %s up to frame %llu, but "
			    "the journal begins at frame %llu: the store lost "
			    "commits, and the changes of the frames between "
			    "are lost", __func__, j->fmt->what,
			    (unsigned long long)(rd->want - 1),
			    (unsigned long long)f.seq);
			rd->want = f.seq;
		}
		f.payload = payload;
		f.len = (size_t)len;
		if (fn(&f, arg) == -1) {
			free(payload);
			return frames_err(j, cause, f.seq,
			    "cannot be applied");
		}
		rd->frames++;
		rd->off += sizeof(hdr) + (size_t)len;
		rd->want++;
	}
	free(payload);
	return 0;
read_err:
	free(payload);
	if (asprintf(cause, "cannot read %s: %s", j->fmt->what,
	    strerror(errno)) == -1)
		*cause = NULL;
	return -1;
}

int
journal_replay(struct journal *j, uint64_t after_seq, journal_frame_fn fn,
    void *arg, uint64_t *frames, char **cause)
{
	struct reading rd = { .end = j->size, .want = after_seq + 1,
	    .tolerate_gap = true };

	*cause = NULL;
	*frames = 0;
	if (read_frames(j, &rd, fn, arg, cause) == -1)
		return -1;
	*frames = rd.frames;
	/* Whole frames may lie beyond the one that ended the replay (written
	 * after it, never acknowledged as durable, or stale ones of an
	 * earlier round): zero the rest of the file, so that the next frames
	 * continue the numbering and none of those is ever taken for one. */
	if (write_zeroes(j->fd, rd.off, j->size) == -1 ||
	    fdatasync(j->fd) == -1) {
		if (asprintf(cause, "cannot clear the tail of %s: %s",
		    j->fmt->what, strerror(errno)) == -1)
			*cause = NULL;
		return -1;
	}
	j->offset = rd.off;
	j->seq = rd.want - 1;
	return 0;
}

int
journal_reread(struct journal *j, uint64_t after_seq, journal_frame_fn fn,
    void *arg, char **cause)
{
	struct reading rd = { .end = j->offset, .want = after_seq + 1 };

	*cause = NULL;
	if (read_frames(j, &rd, fn, arg, cause) == -1)
		return -1;
	if (rd.want != j->seq + 1)
		return frames_err(j, cause, rd.want, "cannot be read back");
	return 0;
}

size_t
journal_room(const struct journal *j)
{
	return j->size - j->offset;
}

uint8_t *
journal_payload(struct journal *j, size_t len)
{
	size_t need = journal_frame_len(len);

	if (need > j->buf_len) {
		free(j->buf);
		if ((j->buf = malloc(need)) == NULL) {
			j->buf_len = 0;
			return NULL;
		}
		j->buf_len = need;
	}
	return j->buf + JOURNAL_FRAME_HEADER;
}

void
journal_payload_release(struct journal *j)
{
	free(j->buf);
	j->buf = NULL;
	j->buf_len = 0;
}

int
journal_append(struct journal *j, uint32_t magic, uint32_t count,
    uint32_t aux, size_t len)
{
	size_t flen = journal_frame_len(len);

	if (flen > journal_room(j)) {
		errno = ENOSPC;
		return -1;
	}
	if (j->buf == NULL || flen > j->buf_len) {
		errno = EINVAL;		/* journal_payload was not asked */
		return -1;
	}
	le_put32(j->buf, magic);
	le_put32(j->buf + 4, count);
	le_put64(j->buf + 8, j->seq + 1);
	le_put32(j->buf + 16, frame_crc(j->buf, j->buf +
	    JOURNAL_FRAME_HEADER, len));
	le_put32(j->buf + 20, aux);
	if (write_all(j->fd, j->buf, flen, (off_t)j->offset) == -1)
		return -1;
	j->offset += flen;
	j->seq++;
	j->bytes_written += flen;
	j->frames_written++;
	return 0;
}

int
journal_sync(struct journal *j)
{
	j->syncs++;
	return fdatasync(j->fd);
}

uint64_t
journal_last_seq(const struct journal *j)
{
	return j->seq;
}

void
journal_restart(struct journal *j)
{
	j->offset = 0;
}

void
journal_stats(const struct journal *j, struct journal_stats *out)
{
	out->bytes = j->offset;
	out->bytes_written = j->bytes_written;
	out->frames_written = j->frames_written;
	out->syncs = j->syncs;
}
