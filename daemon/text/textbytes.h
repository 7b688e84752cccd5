/*
 * textbytes: the byte classes the text modules share, so that they agree
 * on what a letter, a separator and a space are.
 *
 *  - Simhash's (DESIGN section 4, step 1; simhash.h): ASCII whitespace
 *    (TAB LF VT FF CR SPACE) and ASCII punctuation are separators; ASCII
 *    letters fold to lower case; every other byte belongs to a term as it
 *    is.  textbytes_norm is both at once, a table the simhash kernels
 *    vectorise; stop words (stopwords.c) are checked and folded by it.
 *  - HTML's (the WHATWG tokenizer; html.h): ASCII letters and digits, and
 *    the whitespace that separates a tag's parts (TAB LF FF CR SPACE: no
 *    VT).
 *
 * All of it is constant: any thread.
 */
#ifndef NDDD_TEXTBYTES_H
#define NDDD_TEXTBYTES_H

#include <stdbool.h>
#include <stdint.h>

/* Each byte normalised: SPACE for a separator, A-Z to a-z, else itself. */
extern const uint8_t textbytes_norm[256];

/* Whether c separates terms (simhash's whitespace and punctuation). */
static inline bool
textbytes_is_separator(uint8_t c)
{
	return textbytes_norm[c] == ' ';
}

/* ASCII upper case to lower case; every other byte unchanged. */
static inline uint8_t
textbytes_fold(uint8_t c)
{
	return (uint8_t)(c - 'A') < 26 ? (uint8_t)(c + ('a' - 'A')) : c;
}

/* An ASCII letter. */
static inline bool
textbytes_alpha(uint8_t c)
{
	return (uint8_t)((c | 0x20) - 'a') < 26;
}

/* An ASCII letter or digit. */
static inline bool
textbytes_alnum(uint8_t c)
{
	return textbytes_alpha(c) || (uint8_t)(c - '0') < 10;
}

/* HTML's ASCII whitespace: TAB LF FF CR SPACE (bits 9, 10, 12, 13, 32). */
static inline bool
textbytes_html_space(uint8_t c)
{
	return c <= ' ' && ((0x100003600ull >> c) & 1) != 0;
}

#endif
