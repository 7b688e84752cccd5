/*
 * html: the text of an HTML document, for simhash (DESIGN section 4, step 1).
 *
 * This is not a full HTML parser: it follows the WHATWG tokenizer where the
 * text a reader sees depends on it, and nothing else.
 *
 *  - "<" followed by an ASCII letter starts a tag, "</" followed by an ASCII
 *    letter an end tag.  A tag ends at the first ">" outside a quoted
 *    attribute value (attribute names, values and quoting as in WHATWG).
 *  - "<!--" starts a comment, which ends at the first "-->" (so "<!-->" and
 *    "<!--->" are empty comments) or "--!>".  Any other "<!", "<?", or "</"
 *    not followed by a letter starts a declaration, ending at the first ">".
 *  - "<" followed by anything else is text.
 *  - The contents of script and style elements (raw text) run to the first
 *    "</script" or "</style" (any case) followed by whitespace, "/" or ">",
 *    and are dropped with the element.
 *  - Each tag, comment, declaration, and script or style element is replaced
 *    by one SPACE, so it separates terms ("a<br>b" is two terms).
 *  - Markup left open at the end of the input runs to the end and is
 *    dropped.
 *  - Character references are decoded: named (the WHATWG list, including
 *    its legacy names without ";"; the longest name that matches wins),
 *    decimal "&#65;" and hexadecimal "&#x41;" (";" optional).  A numeric
 *    value of 0, above U+10FFFF or a surrogate becomes U+FFFD; 0x80 to 0x9F
 *    are read as Windows-1252, as browsers do.  The character is written as
 *    UTF-8, and those bytes are then treated exactly like the same bytes
 *    written literally: "&eacute;" and a UTF-8 "e acute" give the same term,
 *    "&amp;" is a separator, "&nbsp;" (U+00A0, bytes C2 A0) joins terms.
 *    An "&" that starts no reference is text.
 *  - Every other byte is copied unchanged; no character set is converted.
 */
#ifndef NDDD_HTML_H
#define NDDD_HTML_H

#include <stddef.h>
#include <stdint.h>

/* Output room html_strip_next needs at least. */
#define HTML_STRIP_MIN_OUT 16

/* A document being turned into text; the document must stay in memory. */
struct html_strip {
	const uint8_t *p;	/* next input byte */
	const uint8_t *end;
};

/* Starts on doc (len bytes). */
void html_strip_init(struct html_strip *st, const void *doc, size_t len);

/*
 * Writes the next text of the document into out (cap bytes, at least
 * HTML_STRIP_MIN_OUT).  Returns the number of bytes written: 0 only when the
 * whole document has been read.
 */
size_t html_strip_next(struct html_strip *st, uint8_t *out, size_t cap);

/*
 * Decodes the character reference at p (p[0] == '&', end bounds the input)
 * into out (room for 8 bytes).  Returns the number of input bytes it spans,
 * with *outlen set, or 0 when no reference starts at p.
 */
size_t html_charref(const uint8_t *p, const uint8_t *end, uint8_t *out,
    size_t *outlen);

/* One named character reference. */
struct html_entity {
	const char *name;	/* with its ";" when it has one */
	const char *value;	/* UTF-8 */
	uint8_t namelen;
	uint8_t valuelen;
};

/* The named references, sorted by name (html_entities.c, generated). */
extern const struct html_entity html_entities[];
extern const size_t html_entities_count;

#endif
