/*
 * extract: the main content of an HTML page as text, so that two copies of
 * an article fingerprint alike however differently their sites frame it:
 * navigation, teasers, related links, share bars, comments, cookie notices
 * and footers are the site's template, not the page's content, and would
 * otherwise make every page of a site look like every other.
 *
 * The page is read once into a light element tree (extract_tree.c): the
 * tags that matter for layout and for scoring, the hints that class, id,
 * role and itemprop attributes give, and the text, decoded and split into
 * runs.  HTML's implied end tags are followed where they change the tree's
 * shape (p, li, dt/dd, table parts, headings, links); the rest of the
 * parsing algorithm is not.  The content is then chosen (extract.c) the way
 * readability does it, with the semantic markers trafilatura trusts
 * weighing in, and cleaned of the template's blocks it still holds.
 *
 * Text format, the same for both functions:
 *  - Blocks (paragraphs, headings, list items, table cells, and every other
 *    block-level element) each begin a new line; <br> ends a line.  Lines
 *    are separated by one "\n": no empty line, no "\n" at either end.
 *  - Inside a line, each run of ASCII whitespace (and of &nbsp;) is one
 *    SPACE; no line begins or ends with a SPACE.  Inline tags join what
 *    they separate ("a<b>b</b>" is "ab"), as a browser shows it.
 *  - Character references are decoded to UTF-8 as html_charref does.
 *    Every other byte passes through: no character set is converted.
 *  - Tags, comments and declarations, and the elements a reader never sees
 *    as text (head's title, script, style, template, noscript, iframe,
 *    textarea, select, svg, math, canvas, audio, video, and elements with
 *    the hidden or aria-hidden attribute, an inline display:none, or a
 *    class such as "sr-only" or "hidden") are dropped with what they
 *    hold, and make no line break either.  (extract_main makes one
 *    exception: a hidden element of prose, more than half of what the
 *    page shows, is the article, hidden until a script reveals it.)
 *  - A link's text is set off by spaces, so that it stays a word of its
 *    own in scripts written without spaces.
 *
 * Limits: linear time in the input; memory a few times the input at most
 * (the tree grows no further than one element per 16 input bytes, and
 * never past EXTRACT_MAX_NODES: elements beyond that count as part of
 * their parent; nesting deeper than 8192 elements is not followed); no
 * recursion on the nesting depth.  Input past EXTRACT_MAX_INPUT bytes is
 * ignored.
 *
 * A scratch is one thread's: it may be reused for any number of pages, and
 * different threads need different scratches.
 */
#ifndef NDDD_EXTRACT_H
#define NDDD_EXTRACT_H

#include <stddef.h>
#include <stdint.h>

/* The most input read: the tree's offsets are 32-bit. */
#define EXTRACT_MAX_INPUT	((size_t)1 << 30)
/* The most elements in a tree (about 100 MB of scratch at most). */
#define EXTRACT_MAX_NODES	((uint32_t)1 << 21)

struct extract_scratch;

enum extract_status {
	EXTRACT_MAIN = 0,	/* an article was found: its main content */
	EXTRACT_WHOLE = 1,	/* none: the page's whole visible text */
};

/* Returns a new scratch, or NULL when out of memory. */
struct extract_scratch *extract_scratch_new(void);
/* Frees a scratch and every output it holds; NULL is ignored. */
void extract_scratch_free(struct extract_scratch *sc);

/* The bytes of memory sc holds now (it keeps them for the next page). */
size_t extract_scratch_bytes(const struct extract_scratch *sc);

/*
 * The main content of the HTML page html[0..len) as text (the format
 * above).  *out points into sc, valid until the next call with sc, and
 * *outlen is its length (*out is NUL-terminated, for convenience).
 * Returns EXTRACT_MAIN when the page has an article; EXTRACT_WHOLE, with
 * the page's whole visible text, when it has none (a list of links, an
 * error page, a bare text); -1 when memory is short.
 */
int extract_main(struct extract_scratch *sc, const void *html, size_t len,
    const uint8_t **out, size_t *outlen);

/*
 * The page's whole visible text, in the same format.  Returns
 * EXTRACT_WHOLE with *out and *outlen set as extract_main does, or -1 when
 * memory is short.
 */
int extract_whole(struct extract_scratch *sc, const void *html, size_t len,
    const uint8_t **out, size_t *outlen);

#endif
