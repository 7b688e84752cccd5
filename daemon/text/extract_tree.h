/*
 * extract_tree: the light element tree that main-content extraction scores
 * (see extract.h), built in one pass over the page with an explicit stack.
 *
 * Elements are nodes in document order, so a node's parent comes before it
 * and its descendants are the nodes up to its end: every pass over the tree
 * is a loop, forwards (parents first) or backwards (children first).  Node
 * 0 is the document itself.  The text is a list of runs (segments) in
 * document order, each with the node it lies in directly and what separated
 * it from the run before (a block boundary, a space); a node's runs, its
 * descendants' included, are the segments from seg0 to seg1.
 *
 * What a reader never sees is left out, with two exceptions.  An element
 * hidden by an attribute (EX_H_HIDDEN) is in the tree with all it holds,
 * each node and segment in it flagged hidden, but its counts are not its
 * parent's, and its text makes no line break nor space around it: the
 * page reads as if it were not there, yet extract.c can still take it when
 * it holds the article (pages hide what a script is to reveal).  And the
 * page's <title> is kept, squeezed (ex_squeeze), to find the headline by.
 */
#ifndef NDDD_EXTRACT_TREE_H
#define NDDD_EXTRACT_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "extract.h"

/* The tags the tree tells apart; any other name gets a hashed id. */
enum ex_tag {
	EX_T_NONE = 0,		/* the document */
	EX_T_A, EX_T_ADDRESS, EX_T_APPLET, EX_T_AREA, EX_T_ARTICLE,
	EX_T_ASIDE, EX_T_AUDIO, EX_T_B, EX_T_BASE, EX_T_BLOCKQUOTE,
	EX_T_BODY, EX_T_BR, EX_T_BUTTON, EX_T_CANVAS, EX_T_CAPTION,
	EX_T_CENTER, EX_T_COL, EX_T_DD, EX_T_DETAILS, EX_T_DIALOG, EX_T_DIR,
	EX_T_DIV, EX_T_DL, EX_T_DT, EX_T_EM, EX_T_EMBED, EX_T_FIELDSET,
	EX_T_FIGCAPTION, EX_T_FIGURE, EX_T_FONT, EX_T_FOOTER, EX_T_FORM,
	EX_T_FRAMESET, EX_T_H1, EX_T_H2, EX_T_H3, EX_T_H4, EX_T_H5, EX_T_H6,
	EX_T_HEAD, EX_T_HEADER, EX_T_HGROUP, EX_T_HR, EX_T_HTML, EX_T_I,
	EX_T_IFRAME, EX_T_IMG, EX_T_INPUT, EX_T_LABEL, EX_T_LEGEND, EX_T_LI,
	EX_T_LINK, EX_T_LISTING, EX_T_MAIN, EX_T_MAP, EX_T_MARQUEE,
	EX_T_MATH, EX_T_MENU, EX_T_META, EX_T_NAV, EX_T_NOEMBED,
	EX_T_NOFRAMES, EX_T_NOSCRIPT, EX_T_OBJECT, EX_T_OL, EX_T_OPTION,
	EX_T_P, EX_T_PARAM, EX_T_PICTURE, EX_T_PLAINTEXT, EX_T_PRE,
	EX_T_SCRIPT, EX_T_SECTION, EX_T_SELECT, EX_T_SOURCE, EX_T_SPAN,
	EX_T_STRONG, EX_T_STYLE, EX_T_SUMMARY, EX_T_SVG, EX_T_TABLE,
	EX_T_TBODY, EX_T_TD, EX_T_TEMPLATE, EX_T_TEXTAREA, EX_T_TFOOT,
	EX_T_TH, EX_T_THEAD, EX_T_TIME, EX_T_TITLE, EX_T_TR, EX_T_TRACK,
	EX_T_UL, EX_T_VIDEO, EX_T_WBR, EX_T_XMP,
	EX_T_KNOWN,		/* the count of the above */
	EX_T_HASHED = 128,	/* ids 128..255: other names, by hash */
};

/* What a tag is (ex_tag_flags). */
#define EX_TF_BLOCK	0x0001	/* starts and ends a line */
#define EX_TF_VOID	0x0002	/* has no content nor end tag */
#define EX_TF_RAW	0x0004	/* raw text to its end tag, dropped */
#define EX_TF_SKIP	0x0008	/* dropped with its content */
#define EX_TF_SCOPE	0x0010	/* end tags do not close past it */
#define EX_TF_CLOSEP	0x0020	/* its start tag closes an open p */
#define EX_TF_HEADING	0x0040	/* h1 to h6 */
#define EX_TF_TABLE	0x0080	/* a part of a table */

extern const uint16_t ex_tag_flags[256];

/* Hints from class, id, role and itemprop (struct ex_node's hints). */
#define EX_H_POS	0x0001	/* content-like name (article, post, ...) */
#define EX_H_NEG	0x0002	/* template-like name (sidebar, meta, ...) */
#define EX_H_JUNK	0x0004	/* surely template (share, comments, nav) */
#define EX_H_BODY	0x0008	/* names an article's body outright */
#define EX_H_HIDDEN	0x0010	/* hidden from readers */
#define EX_H_BYLINE	0x0020	/* author, date, byline */
#define EX_H_CAPTION	0x0040	/* a caption or a credit */
#define EX_H_LIST	0x0080	/* teasers, cards, feeds */
#define EX_H_HARD	0x0100	/* template however long (comments) */
#define EX_H_EMBED	0x0200	/* embedded content (a post, a video) */
#define EX_H_NOTICE	0x0400	/* a notice (cookies, sign-up), however prosy */
#define EX_H_PLACE	0x0800	/* its id or anchor name is EX_H_HARD's */

/* Node flags. */
#define EX_N_BLOCKKID	0x01	/* has a block-level child */
#define EX_N_LINK	0x02	/* inside a link */
#define EX_N_CAND	0x04	/* scored as a candidate (extract.c) */
#define EX_N_HIDDEN	0x08	/* hidden, or inside a hidden element */
#define EX_N_FORM	0x10	/* is or holds a form or an input */

struct ex_node {
	uint32_t parent;
	uint32_t end;		/* the index past its last descendant */
	uint32_t seg0, seg1;	/* its segments, descendants' included */
	uint32_t text;		/* bytes of text (subtree, after the build) */
	uint32_t link;		/* of which inside links */
	uint32_t commas;
	uint32_t ptext;		/* bytes of text not inside a block child */
	float score;
	uint16_t hints;
	uint16_t np;		/* paragraphs in the subtree */
	uint16_t nli;		/* list items in the subtree */
	uint16_t nimg;		/* images in the subtree */
	uint16_t nline;		/* lines begun in the subtree */
	uint16_t pcommas;	/* ptext's commas and lines (the 16-bit */
	uint16_t pline;		/* counts stop at 65535) */
	uint8_t tag;
	uint8_t flags;
};

/* Segment flags: what came between it and the segment before. */
#define EX_S_BREAK	0x1	/* a line boundary */
#define EX_S_SPACE	0x2	/* whitespace */
#define EX_S_LINK	0x4	/* the text is inside a link */
#define EX_S_HIDDEN	0x8	/* the text is inside a hidden element */

struct ex_seg {
	uint32_t node;
	uint32_t off;		/* in the text buffer */
	uint32_t len;		/* no leading or trailing whitespace */
	uint32_t flags;
};

/* One element open during the build. */
struct ex_open {
	uint32_t node;
	uint32_t prev_same;	/* the open element below with this tag */
	uint32_t prev_scope;	/* the scope element below */
	uint8_t tag;
	uint8_t skip;		/* text here is dropped */
	uint8_t link;		/* text here is a link's */
	uint8_t hidden;		/* inside a hidden element */
	uint8_t pend;		/* a hidden element's: t->pend before it */
};

/* Squeezed bytes of the title kept: a headline is shorter. */
#define EX_TITLE_MAX	256

/* Class and id values whose hints are remembered during a build. */
#define EX_HCACHE_BITS	8
#define EX_HCACHE	(1u << EX_HCACHE_BITS)

/*
 * One remembered class or id value: where it is in the page, its bytes
 * if it has 16 or fewer, its hints.
 */
struct ex_hcache {
	const uint8_t *v;	/* NULL: none */
	uint64_t k[2];
	uint16_t len;
	uint16_t hints;
	uint8_t is_class;
};

struct ex_tree {
	struct ex_node *nodes;
	uint32_t nnodes, capnodes, maxnodes;
	struct ex_seg *segs;
	uint32_t nsegs, capsegs;
	uint8_t *text;
	size_t ntext, captext;
	const uint8_t *in_end;	/* the end of the page being read */
	struct ex_open *stack;
	uint32_t depth, capstack;
	uint32_t head[256];	/* topmost open element of each tag */
	uint32_t scope;		/* topmost open scope element */
	uint32_t pend;		/* EX_S_* due before the next text */
	int err;		/* memory ran short */
	uint8_t title[EX_TITLE_MAX];	/* the first <title>, squeezed */
	uint32_t ntitle;
	int has_title;
	struct ex_hcache hcache[EX_HCACHE];
};

#define EX_NONE	UINT32_MAX

/*
 * Squeezes text p[0..len) (character references decoded) for comparing
 * headlines: ASCII letters and digits lower-cased and every byte from 0x80
 * kept, the rest dropped.  Writes at most cap bytes to out; returns the
 * length the whole squeezed text has, which may be more than cap.
 */
size_t ex_squeeze(const uint8_t *p, size_t len, uint8_t *out, size_t cap);

/* Frees what the tree holds (not the tree). */
void ex_tree_free(struct ex_tree *t);
/* Builds the tree of html[0..len).  Returns 0, or -1 when out of memory. */
int ex_tree_build(struct ex_tree *t, const uint8_t *html, size_t len);

#endif
