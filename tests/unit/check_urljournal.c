/*
 * Tests for urljournal on a real file in a temporary directory: frames
 * appended are replayed whole and in order; a replay stops at the first
 * frame that is torn, corrupted, stale or out of sequence, clears the rest
 * of the file and numbers on from the last frame replayed, so that no
 * stale frame, whatever lies beyond the point where it stopped, is ever
 * taken for a new one; rounds restart at offset 0; a frame that does not
 * fit is refused with ENOSPC, and a failed frame is overwritten by the
 * next.
 *
 * The file is changed behind the journal's back with pwrite, as a crash
 * would leave it; its frames are read back with a decoder written here
 * from the layout urljournal.c documents.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "crc32c.h"
#include "le.h"
#include "testutil.h"
#include "urljournal.h"

#define SIZE		(256 * 1024)
#define JMAGIC		0x32464a55u	/* "UJF2" */
#define JMAGIC_V2	0x31464a55u	/* "UJF1", format 2 */
#define ENTRY_LEN_V2	36

struct log {
	struct urlmem_entry *e;
	size_t n, cap;
	size_t fail_at;		/* fn fails on this entry; 0: never */
	uint8_t text[4096];	/* the frames' texts, one after another */
	size_t text_len;
};

static int
collect_text(const uint8_t *text, size_t len, void *arg)
{
	struct log *l = arg;

	if (len > sizeof(l->text) - l->text_len)
		return -1;
	memcpy(l->text + l->text_len, text, len);
	l->text_len += len;
	return 0;
}

static int
collect(const struct urlmem_entry *e, void *arg)
{
	struct log *l = arg;

	if (l->fail_at != 0 && l->n + 1 == l->fail_at)
		return -1;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->e = realloc(l->e, l->cap * sizeof(*l->e));
		if (l->e == NULL)
			return -1;
	}
	l->e[l->n++] = *e;
	return 0;
}

/* What was appended: entries, and each frame's place and entries. */
struct written {
	struct urlmem_entry *e;
	size_t n, cap;
	size_t nframes;
	size_t frame_off[256], frame_len[256], frame_first[256];
	size_t frame_n[256];
	uint64_t frame_seq[256];
	size_t end;			/* where the next frame goes */
};

static char *
journal_path(const char *dir)
{
	char *path;

	ck_assert_int_ne(asprintf(&path, "%s/urls.journal", dir), -1);
	return path;
}

static struct urljournal *
open_journal(const char *dir, size_t size)
{
	char *cause = NULL;
	struct urljournal *j = urljournal_open(dir, size, &cause);

	ck_assert_msg(j != NULL, "urljournal_open: %s", cause ? cause : "?");
	return j;
}

static void
random_entries(uint64_t *seed, struct urlmem_entry *e, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t a = tu_rand(seed), b = tu_rand(seed);

		memcpy(e[i].fp, &a, 8);
		memcpy(e[i].fp + 8, &b, 8);
		e[i].st.count = tu_rand_below(seed, 4) ? (uint32_t)tu_rand(seed) :
		    0;
		e[i].st.first_seen_ms = tu_rand(seed);
		e[i].st.last_seen_ms = tu_rand(seed);
		/* Not journaled: the replay cannot give them back. */
		e[i].orig_seg = 1 + (uint32_t)tu_rand_below(seed, 1000);
		e[i].orig_slot = (uint32_t)tu_rand_below(seed, 4096);
	}
}

/* Appends one frame of n random entries; records it. */
static void
append(struct urljournal *j, struct written *w, uint64_t *seed, size_t n)
{
	struct urlmem_entry e[512];
	size_t room = urljournal_room(j), len = urljournal_frame_len(n);
	uint64_t seq = urljournal_last_seq(j);

	ck_assert_uint_le(n, 512);
	ck_assert_uint_lt(w->nframes, 256);
	random_entries(seed, e, n);
	if (urljournal_append(j, e, n, NULL, 0) != 0)
		ck_abort_msg("append of %zu entries: %s", n, strerror(errno));
	ck_assert_uint_eq(urljournal_room(j), room - len);
	ck_assert_uint_eq(urljournal_last_seq(j), seq + 1);
	if (w->n + n > w->cap) {
		w->cap = 2 * (w->n + n);
		w->e = realloc(w->e, w->cap * sizeof(*w->e));
		ck_assert_ptr_nonnull(w->e);
	}
	memcpy(w->e + w->n, e, n * sizeof(*e));
	w->frame_off[w->nframes] = w->end;
	w->frame_len[w->nframes] = len;
	w->frame_first[w->nframes] = w->n;
	w->frame_n[w->nframes] = n;
	w->frame_seq[w->nframes] = seq + 1;
	w->nframes++;
	w->n += n;
	w->end += len;
}

static void
written_reset(struct written *w)
{
	free(w->e);
	memset(w, 0, sizeof(*w));
}

/* A test's end: what it wrote, and its directory. */
static void
finish(char *dir, struct written *w)
{
	written_reset(w);
	tu_rmtree(dir);
	free(dir);
}

/* Replays after after_seq into l; returns the frames. */
static uint64_t
replay(struct urljournal *j, uint64_t after_seq, struct log *l)
{
	uint64_t frames = 99, entries = 99;
	char *cause = NULL;

	l->n = l->text_len = 0;
	if (urljournal_replay(j, after_seq, collect, collect_text, l, &frames,
	    &entries, &cause) != 0)
		ck_abort_msg("replay: %s", cause ? cause : "?");
	ck_assert_uint_eq(entries, l->n);
	return frames;
}

/* The log must hold the first nframes frames of w, whole and in order. */
static void
expect_frames(const struct log *l, const struct written *w, size_t nframes,
    const char *when)
{
	size_t n = nframes > 0 ? w->frame_first[nframes - 1] +
	    w->frame_n[nframes - 1] : 0;

	if (l->n != n)
		ck_abort_msg("%s: %zu entries replayed, want %zu (frames 1 to "
		    "%zu)", when, l->n, n, nframes);
	for (size_t i = 0; i < n; i++) {
		const struct urlmem_entry *a = &l->e[i], *b = &w->e[i];

		if (memcmp(a->fp, b->fp, CBF_FP_LEN) != 0 ||
		    a->st.count != b->st.count ||
		    a->st.first_seen_ms != b->st.first_seen_ms ||
		    a->st.last_seen_ms != b->st.last_seen_ms)
			ck_abort_msg("%s: entry %zu differs", when, i);
	}
}

static void
poke(const char *dir, size_t off, const void *data, size_t len)
{
	char *path = journal_path(dir);
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, data, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(path);
}

static void
peek(const char *dir, size_t off, void *data, size_t len)
{
	char *path = journal_path(dir);
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, data, len, (off_t)off), (ssize_t)len);
	close(fd);
	free(path);
}

/*
 * A replay after after_seq must give the first nframes frames of w (a
 * round written from offset 0).  Then the rest of the file is zeros, and
 * the next frame goes after them, numbered after them.
 */
static void
replay_expect(const char *dir, struct urljournal *j, uint64_t after_seq,
    const struct written *w, size_t nframes, const char *when)
{
	struct log l = { .e = NULL };
	uint64_t frames = replay(j, after_seq, &l);
	size_t end = nframes > 0 ? w->frame_off[nframes - 1] +
	    w->frame_len[nframes - 1] : 0;
	uint8_t *buf;

	if (frames != nframes)
		ck_abort_msg("%s: %llu frames replayed, want %zu", when,
		    (unsigned long long)frames, nframes);
	expect_frames(&l, w, nframes, when);
	if (urljournal_room(j) != SIZE - end)
		ck_abort_msg("%s: %zu bytes of room after the replay, want %zu",
		    when, urljournal_room(j), SIZE - end);
	if (urljournal_last_seq(j) != after_seq + frames)
		ck_abort_msg("%s: numbering goes on from %llu, want %llu", when,
		    (unsigned long long)urljournal_last_seq(j),
		    (unsigned long long)(after_seq + frames));
	buf = malloc(SIZE - end + 1);
	ck_assert_ptr_nonnull(buf);
	peek(dir, end, buf, SIZE - end);
	for (size_t i = 0; i < SIZE - end; i++)
		if (buf[i] != 0)
			ck_abort_msg("%s: byte %zu, after the last frame "
			    "replayed, is %u: not cleared", when, end + i,
			    buf[i]);
	free(buf);
	free(l.e);
}

static void
flip(const char *dir, size_t off)
{
	uint8_t b;

	peek(dir, off, &b, 1);
	b ^= 0x10;
	poke(dir, off, &b, 1);
}

/*
 * A fresh journal as the store opens it: replayed (nothing) after the
 * store's checkpoint, here 1000, so that its numbering goes on from there.
 * Returns the sequence number the store would record as its checkpoint.
 */
static struct urljournal *
fresh(const char *dir, uint64_t *checkpoint)
{
	struct urljournal *j = open_journal(dir, SIZE);
	struct log l = { .e = NULL };

	ck_assert_uint_eq(urljournal_room(j), SIZE);
	ck_assert_uint_eq(replay(j, 1000, &l), 0);
	ck_assert_uint_eq(urljournal_last_seq(j), 1000);
	ck_assert_uint_eq(urljournal_room(j), SIZE);
	*checkpoint = urljournal_last_seq(j);
	urljournal_restart(j);
	free(l.e);
	return j;
}

START_TEST(test_append_replay)
{
	/* Frames appended and closed are replayed, whole and in order,
	 * after the checkpoint they follow, as often as asked. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 91, cp;
	struct urljournal *j = fresh(dir, &cp);
	struct journal_stats st;
	struct stat sb;
	char *path = journal_path(dir);

	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, SIZE);
	ck_assert_uint_eq(urljournal_frame_len(0), URLJOURNAL_FRAME_HEADER);
	ck_assert_uint_eq(urljournal_frame_len(3), URLJOURNAL_FRAME_HEADER +
	    3 * URLJOURNAL_ENTRY_LEN);
	/* Frames of 0 to 150 entries, 1 and 0 among them. */
	append(j, &w, &seed, 1);
	append(j, &w, &seed, 0);
	for (int f = 0; f < 40; f++)
		append(j, &w, &seed, tu_rand_below(&seed, 151));
	ck_assert_int_eq(urljournal_sync(j), 0);
	urljournal_stats(j, &st);
	ck_assert_uint_eq(st.bytes, w.end);
	ck_assert_uint_eq(st.bytes_written, w.end);
	ck_assert_uint_eq(st.frames_written, 42);
	ck_assert_uint_eq(st.syncs, 1);
	ck_assert_uint_eq(urljournal_last_seq(j), cp + 42);
	urljournal_close(j);

	/* Reopened: everything, in order. */
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w, w.nframes, "reopened");
	urljournal_close(j);
	/* Replaying twice gives the same. */
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w, w.nframes, "again");
	replay_expect(dir, j, cp, &w, w.nframes, "twice on one journal");
	urljournal_close(j);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, SIZE);
	free(path);
	finish(dir, &w);
}
END_TEST

START_TEST(test_layout)
{
	/* The frame as urljournal.c documents it, decoded here: magic,
	 * entries, sequence, CRC-32C of entries, sequence and payload,
	 * reserved; then fp, count, first and last seen per entry. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 92, cp;
	struct urljournal *j = fresh(dir, &cp);
	uint8_t buf[URLJOURNAL_FRAME_HEADER + 5 * URLJOURNAL_ENTRY_LEN];

	append(j, &w, &seed, 5);
	append(j, &w, &seed, 2);
	urljournal_close(j);
	for (size_t f = 0; f < 2; f++) {
		size_t n = w.frame_n[f];
		const uint8_t *p = buf + URLJOURNAL_FRAME_HEADER;

		peek(dir, w.frame_off[f], buf, w.frame_len[f]);
		ck_assert_uint_eq(le_get32(buf), JMAGIC);
		ck_assert_uint_eq(le_get32(buf + 4), n);
		ck_assert_uint_eq(le_get64(buf + 8), cp + 1 + f);
		ck_assert_uint_eq(le_get32(buf + 16), crc32c(crc32c(0, buf + 4, 12),
		    p, n * URLJOURNAL_ENTRY_LEN));
		for (size_t i = 0; i < n; i++, p += URLJOURNAL_ENTRY_LEN) {
			const struct urlmem_entry *e =
			    &w.e[w.frame_first[f] + i];

			ck_assert_mem_eq(p, e->fp, CBF_FP_LEN);
			ck_assert_uint_eq(le_get32(p + 16), e->st.count);
			ck_assert_uint_eq(le_get64(p + 20), e->st.first_seen_ms);
			ck_assert_uint_eq(le_get64(p + 28), e->st.last_seen_ms);
			ck_assert_uint_eq(le_get64(p + 36), e->st.expires_ms);
			ck_assert_uint_eq(le_get32(p + 44), e->st.ns);
		}
	}
	finish(dir, &w);
}
END_TEST

/* Frames 1..5 of a fresh journal; closed.  Returns the checkpoint. */
static uint64_t
five_frames(const char *dir, struct written *w, uint64_t *seed)
{
	uint64_t cp;
	struct urljournal *j = fresh(dir, &cp);

	for (int f = 0; f < 5; f++)
		append(j, w, seed, 2 + tu_rand_below(seed, 6));
	urljournal_close(j);
	return cp;
}

START_TEST(test_after_seq)
{
	/*
	 * A round's first frame, at offset 0, carries after_seq + 1:
	 * frames numbered up to after_seq are the store's already, and end
	 * the replay; the file is then cleared (all of it is in the store),
	 * and the numbering goes on from after_seq.  A first frame beyond
	 * after_seq + 1 means the store lost commits: replayed all the same.
	 */
	static const int64_t after[] = { 1, 2, 5, 6, 1000 };
	uint64_t seed = 93;

	for (size_t i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		char *dir = tu_tmpdir();
		struct written w = { 0 };
		uint64_t cp = five_frames(dir, &w, &seed);
		struct urljournal *j;
		char when[64];

		snprintf(when, sizeof(when), "after frame %lld",
		    (long long)after[i]);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp + (uint64_t)after[i], &w, 0, when);
		urljournal_close(j);
		/* Nothing is left to replay from the checkpoint either. */
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp, &w, 0, "then from the checkpoint");
		urljournal_close(j);
		finish(dir, &w);
	}
	{
		/* And from the checkpoint, everything. */
		char *dir = tu_tmpdir();
		struct written w = { 0 };
		uint64_t cp = five_frames(dir, &w, &seed);
		struct urljournal *j = open_journal(dir, SIZE);

		replay_expect(dir, j, cp, &w, 5, "from the checkpoint");
		urljournal_close(j);
		finish(dir, &w);
	}
	{
		/* A store older than the journal's first frame (it lost
		 * commits): the journal's whole frames are all there is, and
		 * are replayed, numbering going on from the last. */
		char *dir = tu_tmpdir();
		struct written w = { 0 };
		uint64_t cp = five_frames(dir, &w, &seed);
		struct urljournal *j = open_journal(dir, SIZE);
		struct log l = { .e = NULL };

		ck_assert_uint_eq(replay(j, cp - 1, &l), 5);
		expect_frames(&l, &w, 5, "a store that lost a commit");
		ck_assert_uint_eq(urljournal_last_seq(j), cp + 5);
		free(l.e);
		urljournal_close(j);
		finish(dir, &w);
	}
}
END_TEST

START_TEST(test_torn_last_frame)
{
	/* Each way a crash can leave the last frame: the replay ends at the
	 * frame before, and the next frame goes in its place. */
	enum { ZERO_TAIL, ZERO_HEAD, GARBAGE_TAIL, HALF_OLD, NWAYS };
	uint64_t seed = 94;

	for (int way = 0; way < NWAYS; way++) {
		char *dir = tu_tmpdir();
		struct written w = { 0 };
		uint64_t cp = five_frames(dir, &w, &seed);
		size_t off = w.frame_off[4], len = w.frame_len[4];
		uint8_t junk[URLJOURNAL_FRAME_HEADER +
		    8 * URLJOURNAL_ENTRY_LEN];
		struct urljournal *j;
		char when[64];

		switch (way) {
		case ZERO_TAIL:
			memset(junk, 0, sizeof(junk));
			poke(dir, off + len / 2, junk, len - len / 2);
			break;
		case ZERO_HEAD:
			memset(junk, 0, sizeof(junk));
			poke(dir, off, junk, URLJOURNAL_FRAME_HEADER);
			break;
		case GARBAGE_TAIL:
			for (size_t i = 0; i < sizeof(junk); i++)
				junk[i] = (uint8_t)tu_rand(&seed);
			poke(dir, off + len - 7, junk, 7);
			break;
		case HALF_OLD:
			/* The last entry from another frame. */
			peek(dir, w.frame_off[1] + URLJOURNAL_FRAME_HEADER,
			    junk, URLJOURNAL_ENTRY_LEN);
			poke(dir, off + len - URLJOURNAL_ENTRY_LEN, junk,
			    URLJOURNAL_ENTRY_LEN);
			break;
		}
		snprintf(when, sizeof(when), "torn last frame, way %d", way);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp, &w, 4, when);
		ck_assert_uint_eq(urljournal_room(j), SIZE - off);
		urljournal_close(j);
		finish(dir, &w);
	}
}
END_TEST

START_TEST(test_every_byte_of_a_frame)
{
	/* Any single byte changed in the last frame, but its reserved
	 * word, ends the replay before it. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 95, cp = five_frames(dir, &w, &seed);
	size_t off = w.frame_off[4], len = w.frame_len[4];

	for (size_t b = 0; b < len; b++) {
		struct urljournal *j;
		char when[64];

		if (b >= 20 && b < 24)
			continue;	/* reserved, outside the CRC */
		flip(dir, off + b);
		snprintf(when, sizeof(when), "byte %zu of the last frame", b);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp, &w, 4, when);
		urljournal_close(j);
		flip(dir, off + b);
	}
	finish(dir, &w);
}
END_TEST

START_TEST(test_corrupt_middle_frame)
{
	/* A changed byte in frame 3 (payload, CRC, count, sequence or
	 * magic) ends the replay after frame 2, although frames 4 and 5
	 * are whole. */
	static const int where[] = { -1, -2, 0, 4, 8, 16 };
	uint64_t seed = 96;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		char *dir = tu_tmpdir();
		struct written w = { 0 };
		uint64_t cp = five_frames(dir, &w, &seed);
		size_t at = where[i] == -1 ? w.frame_off[2] +
		    URLJOURNAL_FRAME_HEADER + 17 : where[i] == -2 ?
		    w.frame_off[2] + w.frame_len[2] - 1 :
		    w.frame_off[2] + (size_t)where[i];
		struct urljournal *j;

		flip(dir, at);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp, &w, 2, "frame 3 corrupted");
		urljournal_close(j);
		finish(dir, &w);
	}
}
END_TEST

START_TEST(test_restart)
{
	/* A new round from offset 0, numbering on: replayed from its
	 * checkpoint, and the old round's frames after it (a whole one
	 * right at its end, with the same sizes) are not. */
	char *dir = tu_tmpdir();
	struct written w = { 0 }, w2 = { 0 };
	uint64_t seed = 97, cp, cp2;
	struct urljournal *j = fresh(dir, &cp);
	struct journal_stats st;

	for (int f = 0; f < 5; f++)
		append(j, &w, &seed, 10);
	cp2 = urljournal_last_seq(j);	/* the flush records it */
	urljournal_restart(j);
	ck_assert_uint_eq(urljournal_room(j), SIZE);
	urljournal_stats(j, &st);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert_uint_eq(st.frames_written, 5);
	for (int f = 0; f < 3; f++)
		append(j, &w2, &seed, 10);
	ck_assert_uint_eq(urljournal_last_seq(j), cp2 + 3);
	urljournal_close(j);

	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp2, &w2, 3, "the new round");
	urljournal_close(j);

	/* Shorter frames in a third round. */
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp2, &w2, 3, "again");
	cp = urljournal_last_seq(j);
	urljournal_restart(j);
	written_reset(&w2);
	append(j, &w2, &seed, 1);
	append(j, &w2, &seed, 4);
	urljournal_close(j);
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w2, 2, "the third round");
	urljournal_close(j);
	written_reset(&w2);
	finish(dir, &w);
}
END_TEST

/*
 * After a replay that stopped at frame bad (of 1..nold), the store records
 * the journal's numbering and a new round starts at offset 0, numbered
 * bad, bad + 1, ...  Its frames (sizes new_n) end exactly where old frame
 * stale_at began, whole and valid when the replay ran, and numbered as the
 * next frame expected.  Only the new round may be replayed: the replay
 * must have cleared what lay beyond the frame it stopped at.
 */
static void
stale_beyond(uint64_t seed, const size_t *old_n, size_t nold, size_t bad,
    const size_t *new_n, size_t nnew, size_t stale_at)
{
	char *dir = tu_tmpdir();
	struct written w = { 0 }, w2 = { 0 };
	uint64_t cp, cp2;
	struct urljournal *j = fresh(dir, &cp);
	char when[96];

	for (size_t f = 0; f < nold; f++)
		append(j, &w, &seed, old_n[f]);
	urljournal_close(j);
	flip(dir, w.frame_off[bad - 1] + URLJOURNAL_FRAME_HEADER + 3);

	j = open_journal(dir, SIZE);
	snprintf(when, sizeof(when), "frame %zu corrupted", bad);
	replay_expect(dir, j, cp, &w, bad - 1, when);
	cp2 = urljournal_last_seq(j);
	urljournal_restart(j);
	for (size_t f = 0; f < nnew; f++)
		append(j, &w2, &seed, new_n[f]);
	urljournal_close(j);
	/* The case is the one intended: an old frame right after, with
	 * the number the replay would expect next. */
	ck_assert_uint_eq(w2.end, w.frame_off[stale_at - 1]);
	ck_assert_uint_eq(w.frame_seq[stale_at - 1], cp2 + nnew + 1);

	j = open_journal(dir, SIZE);
	snprintf(when, sizeof(when), "new round after frame %zu corrupted",
	    bad);
	replay_expect(dir, j, cp2, &w2, nnew, when);
	urljournal_close(j);
	written_reset(&w2);
	finish(dir, &w);
}

START_TEST(test_stale_frame_beyond_replay)
{
	/* As urlset does it: frames 1..5, frame 3 corrupted, a replay gives
	 * 1 and 2; a new round; a replay from the new checkpoint gives only
	 * the new round. */
	{
		char *dir = tu_tmpdir();
		struct written w = { 0 }, w2 = { 0 };
		uint64_t seed = 98, cp = five_frames(dir, &w, &seed), cp2;
		struct urljournal *j;

		flip(dir, w.frame_off[2] + URLJOURNAL_FRAME_HEADER);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp, &w, 2, "frames 1 and 2");
		cp2 = urljournal_last_seq(j);
		urljournal_restart(j);
		append(j, &w2, &seed, 3);
		append(j, &w2, &seed, 1);
		urljournal_close(j);
		j = open_journal(dir, SIZE);
		replay_expect(dir, j, cp2, &w2, 2, "the new round");
		urljournal_close(j);
		written_reset(&w2);
		finish(dir, &w);
	}
	/*
	 * Then the alignments where a stale frame is the next one expected:
	 * frame sizes are 24 + 48 n bytes, so the new round ends on an old
	 * frame's start when the new frames are as many as the old ones
	 * they cover, modulo 2.
	 */
	{
		/* Frame 1 corrupted: nothing replayed; 2 new frames cover
		 * old 1 and 2; old 3 follows. */
		static const size_t old_n[] = { 4, 7, 5, 6, 2 };
		static const size_t new_n[] = { 4, 7 };

		stale_beyond(99, old_n, 5, 1, new_n, 2, 3);
	}
	{
		/* Frame 5 corrupted: 1..4 replayed; 2 new frames cover old
		 * 1..6 (4 headers less, 96 bytes: 2 entries more than
		 * their 23); old 7 follows. */
		static const size_t old_n[] = { 3, 1, 4, 1, 5, 9, 2 };
		static const size_t new_n[] = { 10, 15 };

		stale_beyond(100, old_n, 7, 5, new_n, 2, 7);
	}
}
END_TEST

START_TEST(test_append_after_replay)
{
	/* With no flush in between, frames appended after a replay follow
	 * the frames replayed, and a second crash replays them all. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 105, cp = five_frames(dir, &w, &seed);
	struct urljournal *j;

	flip(dir, w.frame_off[3] + URLJOURNAL_FRAME_HEADER + 20);
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w, 3, "frame 4 corrupted");
	/* The record of what was written now ends at frame 3. */
	w.nframes = 3;
	w.n = w.frame_first[3];
	w.end = w.frame_off[3];
	append(j, &w, &seed, 1);
	append(j, &w, &seed, 9);
	ck_assert_uint_eq(w.frame_seq[3], cp + 4);
	urljournal_close(j);
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w, 5, "after a second crash");
	urljournal_close(j);
	finish(dir, &w);
}
END_TEST

START_TEST(test_no_room)
{
	/* A frame that does not fit is refused with ENOSPC and changes
	 * nothing; a smaller one then goes where it would have. */
	char *dir = tu_tmpdir();
	const size_t size = 1012;
	struct written w = { 0 };
	uint64_t seed = 101, cp;
	struct urljournal *j = open_journal(dir, size);
	struct urlmem_entry e[64];
	struct journal_stats s0, s1;
	struct log l = { .e = NULL };
	uint64_t seq;

	ck_assert_uint_eq(replay(j, 0, &l), 0);
	cp = urljournal_last_seq(j);
	urljournal_restart(j);
	random_entries(&seed, e, 64);
	append(j, &w, &seed, 10);		/* 504 bytes */
	append(j, &w, &seed, 5);		/* 264 */
	ck_assert_uint_eq(urljournal_room(j), size - 768);
	urljournal_stats(j, &s0);
	seq = urljournal_last_seq(j);
	/* 244 bytes left: 11 entries need 552. */
	errno = 0;
	ck_assert_int_eq(urljournal_append(j, e, 11, NULL, 0), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_int_eq(urljournal_append(j, e, 64, NULL, 0), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_uint_eq(urljournal_room(j), size - 768);
	ck_assert_uint_eq(urljournal_last_seq(j), seq);
	urljournal_stats(j, &s1);
	ck_assert_uint_eq(s1.bytes, s0.bytes);
	ck_assert_uint_eq(s1.bytes_written, s0.bytes_written);
	ck_assert_uint_eq(s1.frames_written, s0.frames_written);
	/* 4 entries (216 bytes) fit; then 28 bytes, one empty frame. */
	append(j, &w, &seed, 4);
	ck_assert_uint_eq(urljournal_room(j), 28);
	append(j, &w, &seed, 0);
	ck_assert_uint_eq(urljournal_room(j), 4);
	ck_assert_int_eq(urljournal_append(j, e, 0, NULL, 0), -1);
	ck_assert_int_eq(errno, ENOSPC);
	urljournal_close(j);
	j = open_journal(dir, size);
	ck_assert_uint_eq(replay(j, cp, &l), 4);
	expect_frames(&l, &w, 4, "a full journal");
	ck_assert_uint_eq(urljournal_room(j), 4);
	urljournal_close(j);
	free(l.e);
	finish(dir, &w);
}
END_TEST

/*
 * The descriptor a journal of dir holds: the one open on its file (the
 * test opens none of its own on it).
 */
static int
journal_fd(const char *dir)
{
	char *path = journal_path(dir);
	struct stat a, b;
	int fd;

	ck_assert_int_eq(stat(path, &b), 0);
	free(path);
	for (fd = 0; fd < 4096; fd++)
		if (fstat(fd, &a) == 0 && a.st_ino == b.st_ino &&
		    a.st_dev == b.st_dev)
			return fd;
	ck_abort_msg("no descriptor open on the journal");
	return -1;
}

/* Points fd at /dev/full, where every write fails; returns the file's. */
static int
break_fd(int fd)
{
	int saved = dup(fd), full = open("/dev/full", O_RDWR);

	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(full, 0);
	ck_assert_int_eq(dup2(full, fd), fd);
	close(full);
	return saved;
}

static void
mend_fd(int fd, int saved)
{
	ck_assert_int_eq(dup2(saved, fd), fd);
	close(saved);
}

START_TEST(test_failed_write_overwritten)
{
	/*
	 * A write that fails (here: the journal's descriptor pointed at
	 * /dev/full for one append, then back) takes neither room nor a
	 * sequence number; the next frame goes in its place, and a
	 * replay sees no gap.  Torn bytes of the failed frame, as a
	 * partial write would leave them, are overwritten too.
	 */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 102, cp;
	struct urljournal *j = fresh(dir, &cp);
	struct urlmem_entry e[20];
	struct journal_stats s0, s1;
	int fd = journal_fd(dir), saved;
	size_t room;
	uint64_t seq;
	uint8_t junk[200];

	append(j, &w, &seed, 3);
	room = urljournal_room(j);
	seq = urljournal_last_seq(j);
	urljournal_stats(j, &s0);
	random_entries(&seed, e, 20);
	saved = break_fd(fd);
	errno = 0;
	ck_assert_int_eq(urljournal_append(j, e, 20, NULL, 0), -1);
	ck_assert_int_eq(errno, ENOSPC);
	mend_fd(fd, saved);
	ck_assert_uint_eq(urljournal_room(j), room);
	ck_assert_uint_eq(urljournal_last_seq(j), seq);
	urljournal_stats(j, &s1);
	ck_assert_uint_eq(s1.bytes, s0.bytes);
	ck_assert_uint_eq(s1.frames_written, s0.frames_written);
	/* What a partial write of it would have left. */
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)tu_rand(&seed);
	poke(dir, w.end, junk, sizeof(junk));

	append(j, &w, &seed, 2);
	append(j, &w, &seed, 6);
	urljournal_close(j);
	j = open_journal(dir, SIZE);
	replay_expect(dir, j, cp, &w, 3, "after a failed write");
	urljournal_close(j);
	finish(dir, &w);
}
END_TEST

START_TEST(test_replay_cannot_clear)
{
	/* A replay that cannot clear the rest of the file fails, with a
	 * cause, rather than let stale frames stand. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 106, cp = five_frames(dir, &w, &seed);
	struct urljournal *j = open_journal(dir, SIZE);
	struct log l = { .e = NULL };
	uint64_t frames, entries;
	char *cause = NULL;
	int fd = journal_fd(dir), saved;

	/* /dev/full reads as zeros: no frame, then no room to clear. */
	saved = break_fd(fd);
	ck_assert_int_eq(urljournal_replay(j, cp, collect, collect_text, &l,
	    &frames, &entries, &cause), -1);
	mend_fd(fd, saved);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	/* The file is as it was: a replay now gives everything. */
	replay_expect(dir, j, cp, &w, 5, "after a failed clear");
	urljournal_close(j);
	free(l.e);
	finish(dir, &w);
}
END_TEST

START_TEST(test_reopen_and_extend)
{
	/* Reopening keeps the contents; a file smaller than asked for is
	 * extended with zeros, and what it held stays. */
	char *dir = tu_tmpdir();
	char *path = journal_path(dir), *cause = NULL;
	struct written w = { 0 };
	uint64_t seed = 103, cp;
	struct urljournal *j;
	struct stat sb;
	uint8_t *buf;
	size_t small = 4096;

	j = open_journal(dir, small);
	{
		struct log l = { .e = NULL };

		ck_assert_uint_eq(replay(j, 0, &l), 0);
		free(l.e);
	}
	cp = urljournal_last_seq(j);
	urljournal_restart(j);
	append(j, &w, &seed, 20);
	append(j, &w, &seed, 30);
	urljournal_close(j);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, small);

	j = open_journal(dir, SIZE);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, SIZE);
	replay_expect(dir, j, cp, &w, 2, "extended");
	urljournal_close(j);
	buf = malloc(SIZE);
	ck_assert_ptr_nonnull(buf);
	peek(dir, 0, buf, SIZE);
	for (size_t i = w.end; i < SIZE; i++)
		if (buf[i] != 0)
			ck_abort_msg("byte %zu of the file is %u", i, buf[i]);

	/* A file of junk, shorter: kept and extended; nothing replayed,
	 * and the junk cleared. */
	memset(buf, 0xab, 1000);
	ck_assert_int_eq(truncate(path, 0), 0);
	poke(dir, 0, buf, 1000);
	j = open_journal(dir, SIZE);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, SIZE);
	peek(dir, 0, buf, SIZE);
	for (size_t i = 0; i < SIZE; i++)
		if (buf[i] != (i < 1000 ? 0xab : 0))
			ck_abort_msg("byte %zu of the file is %u", i, buf[i]);
	written_reset(&w);
	replay_expect(dir, j, cp, &w, 0, "junk");
	urljournal_close(j);
	free(buf);

	/* No such directory: refused, with a cause. */
	ck_assert_ptr_null(urljournal_open("/nonexistent/nddd-test", SIZE,
	    &cause));
	ck_assert_ptr_nonnull(cause);
	free(cause);
	free(path);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_reopen_smaller)
{
	/*
	 * Reopened with a smaller size (journal_entries lowered in the
	 * configuration before a restart after a crash), the file keeps its
	 * length, and every whole frame in it, acknowledged, is replayed.
	 */
	char *dir = tu_tmpdir();
	char *path = journal_path(dir);
	struct written w = { 0 };
	uint64_t seed = 107, cp;
	struct urljournal *j = fresh(dir, &cp);
	struct stat sb;

	for (int f = 0; f < 10; f++)
		append(j, &w, &seed, 30);		/* 1104 bytes each */
	urljournal_close(j);
	j = open_journal(dir, 4096);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_size, SIZE);
	{
		struct log l = { .e = NULL };
		uint64_t frames = replay(j, cp, &l);

		if (frames != 10)
			ck_abort_msg("reopened smaller: %llu of the 10 frames "
			    "written replayed", (unsigned long long)frames);
		expect_frames(&l, &w, 10, "reopened smaller");
		free(l.e);
	}
	urljournal_close(j);
	free(path);
	finish(dir, &w);
}
END_TEST

START_TEST(test_replay_fn_fails)
{
	/* The callback's failure ends the replay with -1 and a cause. */
	char *dir = tu_tmpdir();
	struct written w = { 0 };
	uint64_t seed = 104, cp = five_frames(dir, &w, &seed);
	struct urljournal *j = open_journal(dir, SIZE);
	struct log l = { .e = NULL };
	uint64_t frames, entries;
	char *cause = NULL;

	l.fail_at = w.frame_first[2] + 2;
	ck_assert_int_eq(urljournal_replay(j, cp, collect, collect_text, &l,
	    &frames, &entries, &cause), -1);
	ck_assert_ptr_nonnull(cause);
	free(cause);
	ck_assert_uint_eq(l.n, w.frame_first[2] + 1);
	/* And it can be tried again. */
	l.fail_at = 0;
	replay_expect(dir, j, cp, &w, 5, "after a failed replay");
	urljournal_close(j);
	free(l.e);
	finish(dir, &w);
}
END_TEST

START_TEST(test_format2_frames)
{
	/* A journal left by an nddd of store format 2 (frames "UJF1",
	 * 36-byte entries without expiry or namespace), followed by a frame
	 * of today's: all replay, the old entries in the default namespace
	 * with no time to live. */
	char *dir = tu_tmpdir();
	struct urljournal *j;
	struct log l = { .e = NULL };
	uint8_t f[URLJOURNAL_FRAME_HEADER + 2 * URLJOURNAL_ENTRY_LEN];
	size_t off = 0, elen;
	uint64_t seq = 500;

	j = open_journal(dir, SIZE);
	urljournal_close(j);
	for (int k = 0; k < 2; k++) {
		elen = k == 0 ? ENTRY_LEN_V2 : URLJOURNAL_ENTRY_LEN;
		memset(f, 0, sizeof(f));
		le_put32(f, k == 0 ? JMAGIC_V2 : JMAGIC);
		le_put32(f + 4, 2);
		le_put64(f + 8, seq + 1 + k);
		for (int i = 0; i < 2; i++) {
			uint8_t *p = f + URLJOURNAL_FRAME_HEADER + i * elen;

			memset(p, 0x10 * k + i + 1, CBF_FP_LEN);
			le_put32(p + 16, 7);
			le_put64(p + 20, 1000 + i);
			le_put64(p + 28, 2000 + i);
			if (k == 1) {
				le_put64(p + 36, 3000 + i);
				le_put32(p + 44, 9);
			}
		}
		le_put32(f + 16, crc32c(crc32c(0, f + 4, 12),
		    f + URLJOURNAL_FRAME_HEADER, 2 * elen));
		poke(dir, off, f, URLJOURNAL_FRAME_HEADER + 2 * elen);
		off += URLJOURNAL_FRAME_HEADER + 2 * elen;
	}
	j = open_journal(dir, SIZE);
	ck_assert_uint_eq(replay(j, seq, &l), 2);
	ck_assert_uint_eq(l.n, 4);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++) {
			const struct urlmem_entry *e = &l.e[2 * k + i];

			ck_assert_uint_eq(e->fp[0], 0x10 * k + i + 1);
			ck_assert_uint_eq(e->st.count, 7);
			ck_assert_uint_eq(e->st.first_seen_ms, 1000 + i);
			ck_assert_uint_eq(e->st.last_seen_ms, 2000 + i);
			ck_assert_uint_eq(e->st.expires_ms, k ? 3000 + i : 0);
			ck_assert_uint_eq(e->st.ns, k ? 9 : 0);
		}
	urljournal_close(j);
	free(l.e);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

START_TEST(test_handmade_frames)
{
	/* Frames written here (the documented layout) are replayed: the
	 * replay follows the format, not only what urljournal_append does.
	 * A count larger than the file could hold ends it. */
	char *dir = tu_tmpdir();
	struct urljournal *j;
	struct log l = { .e = NULL };
	uint8_t f[URLJOURNAL_FRAME_HEADER + 2 * URLJOURNAL_ENTRY_LEN];
	uint64_t seq = 77777;

	j = open_journal(dir, SIZE);
	urljournal_close(j);
	for (int k = 0; k < 3; k++) {
		memset(f, 0, sizeof(f));
		le_put32(f, JMAGIC);
		le_put32(f + 4, 2);
		le_put64(f + 8, seq + 1 + k);
		for (int i = 0; i < 2; i++) {
			uint8_t *p = f + URLJOURNAL_FRAME_HEADER +
			    i * URLJOURNAL_ENTRY_LEN;

			memset(p, 0x10 * k + i, CBF_FP_LEN);
			le_put32(p + 16, 100 * k + i);
			le_put64(p + 20, 1000 * k + i);
			le_put64(p + 28, 2000 * k + i);
			le_put64(p + 36, 3000 * k + i);
			le_put32(p + 44, 40 * k + i);
		}
		le_put32(f + 16, crc32c(crc32c(0, f + 4, 12),
		    f + URLJOURNAL_FRAME_HEADER, 2 * URLJOURNAL_ENTRY_LEN));
		if (k == 2)
			le_put32(f + 4, 0x7fffffff);	/* too many */
		poke(dir, (size_t)k * sizeof(f), f, sizeof(f));
	}
	j = open_journal(dir, SIZE);
	ck_assert_uint_eq(replay(j, seq, &l), 2);
	ck_assert_uint_eq(l.n, 4);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++) {
			const struct urlmem_entry *e = &l.e[2 * k + i];

			ck_assert_uint_eq(e->fp[0], 0x10 * k + i);
			ck_assert_uint_eq(e->fp[15], 0x10 * k + i);
			ck_assert_uint_eq(e->st.count, 100 * k + i);
			ck_assert_uint_eq(e->st.first_seen_ms, 1000 * k + i);
			ck_assert_uint_eq(e->st.last_seen_ms, 2000 * k + i);
			ck_assert_uint_eq(e->st.expires_ms, 3000 * k + i);
			ck_assert_uint_eq(e->st.ns, 40 * k + i);
		}
	urljournal_close(j);
	free(l.e);
	tu_rmtree(dir);
	free(dir);
}
END_TEST

Suite *urljournal_suite(void);

Suite *
urljournal_suite(void)
{
	Suite *s = suite_create("urljournal");
	TCase *tc = tcase_create("urljournal");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_append_replay);
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_after_seq);
	tcase_add_test(tc, test_torn_last_frame);
	tcase_add_test(tc, test_every_byte_of_a_frame);
	tcase_add_test(tc, test_corrupt_middle_frame);
	tcase_add_test(tc, test_restart);
	tcase_add_test(tc, test_stale_frame_beyond_replay);
	tcase_add_test(tc, test_append_after_replay);
	tcase_add_test(tc, test_no_room);
	tcase_add_test(tc, test_failed_write_overwritten);
	tcase_add_test(tc, test_replay_cannot_clear);
	tcase_add_test(tc, test_reopen_and_extend);
	tcase_add_test(tc, test_reopen_smaller);
	tcase_add_test(tc, test_replay_fn_fails);
	tcase_add_test(tc, test_handmade_frames);
	tcase_add_test(tc, test_format2_frames);
	suite_add_tcase(s, tc);
	return s;
}
