/*
 * extract: chooses a page's main content in the tree of extract_tree.c and
 * writes it as text.  See extract.h for the format.
 *
 *  1. Template out of the running.  Elements whose class, id or role
 *     names the template (navigation, share bars, comments, related
 *     links...), and nav, aside and footer elements, give their text to no
 *     candidate.  A name is a guess: one that holds more than half the
 *     page's prose is kept, unless it names comments; so is one on prose
 *     (paragraphs of sentences, few links: "subMenu" around the article),
 *     unless it names comments or a notice (cookies, sign-up).  Hidden
 *     elements are out too, unless one is prose and more than half of what
 *     the page shows: the article, which a script was to reveal.
 *  2. Candidates, as readability scores them.  Every paragraph-like
 *     element (p, pre, td, any block with no block inside it, and the text
 *     a div holds between its blocks) of 25 bytes or more scores 2 + its
 *     commas + one per 100 bytes (3 at most), given wholly to its parent
 *     and half to its grandparent; a candidate starts from a weight for
 *     its tag and for its class and id; its score is then cut by the share
 *     of its text inside links.  Beyond readability: a paragraph of short
 *     lines is a list (addresses, names and dates) and scores nothing; the
 *     first paragraph of a sentence or more after the page's headline (the
 *     heading its <title> holds) opens the article, and its parent scores
 *     as much more as a name gives, if its text scores that much; and a
 *     candidate too short to be an article is not the article.
 *  3. Semantics.  An element that names itself the article's body
 *     (itemprop=articleBody, a class such as "article-body") is taken
 *     instead when it holds the best candidate, or most of its text.
 *  4. Siblings that score near the best (long enough to be articles), and
 *     paragraphs next to it, join.
 *  5. Cleaning inside: the template's elements, forms, figures and
 *     captions, bylines and datelines, and blocks that readability's
 *     conditional cleaning finds unlikely (link lists, negative names) are
 *     left out, unless they hold most of the text.  The readers' comments
 *     end the content: an empty element whose id or anchor name is theirs
 *     (where "#comments" leads), after an article's worth of text.
 *  6. Lines: a line of the content that is two thirds links is left out,
 *     and so is a list: a run of short lines most of which hold a link.
 *  7. Too little left (under EX_MIN_MAIN bytes): the page has no article,
 *     and its whole text is given instead.
 *
 * Every step is a loop over the nodes or the segments: no recursion.
 */
#include "extract.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "extract_tree.h"

/* Shortest main content kept, in bytes: less is a list or error page. */
#define EX_MIN_MAIN	200
/* A paragraph shorter than this scores nothing (readability's 25). */
#define EX_MIN_PARA	25
/* Lines shorter than this on average make a list, not prose. */
#define EX_MIN_LINE	32
/* The shortest paragraph that can open an article (a sentence or more). */
#define EX_MIN_LEAD	80
/* What opening the article after its headline is worth: a name's 25. */
#define EX_LEAD_BONUS	25
/* A line shorter than this is an item, and this many items a list. */
#define EX_LIST_LINE	100
#define EX_LIST_MIN	4

/* What step 5 does to a node (struct extract_scratch's mark). */
#define EX_K_KEEP	0
#define EX_K_DROP	1
#define EX_K_CUT	2	/* to drop, by its parent's look at it */

/*
 * A teaser: a block with a link, of at most this many bytes (a headline
 * with its date, its source or a line of summary); and this many teasers
 * in a row, a quarter of their text in links, are a list of them.
 */
#define EX_TEASER_MAX	300
#define EX_TEASER_MIN	3
/* A picture's block with at most this much text is the picture's caption. */
#define EX_CAPTION_MAX	300
/* A form's block with at most this much text is a widget (log-in, poll). */
#define EX_WIDGET_MAX	500

struct extract_scratch {
	struct ex_tree t;
	uint8_t *mark;		/* per node: EX_K_* */
	uint32_t capmark;
	uint8_t *out;
	size_t capout;
};

struct extract_scratch *
extract_scratch_new(void)
{
	return calloc(1, sizeof(struct extract_scratch));
}

void
extract_scratch_free(struct extract_scratch *sc)
{
	if (sc == NULL)
		return;
	ex_tree_free(&sc->t);
	free(sc->mark);
	free(sc->out);
	free(sc);
}

size_t
extract_scratch_bytes(const struct extract_scratch *sc)
{
	const struct ex_tree *t = &sc->t;

	return sizeof(*sc) + (size_t)t->capnodes * sizeof(*t->nodes) +
	    (size_t)t->capsegs * sizeof(*t->segs) + t->captext +
	    (size_t)t->capstack * sizeof(*t->stack) + sc->capmark +
	    sc->capout;
}

/* Room for the output: the text and a separator per segment. */
static int
ex_out_room(struct extract_scratch *sc)
{
	size_t need = sc->t.ntext + sc->t.nsegs + 1, nc;
	uint8_t *na;

	if (need <= sc->capout)
		return 0;
	nc = sc->capout + sc->capout / 2;
	if (nc < need)
		nc = need;
	if ((na = realloc(sc->out, nc)) == NULL)
		return -1;
	sc->out = na;
	sc->capout = nc;
	return 0;
}

/*
 * The longest line read for the phrases of a notice or a call to action:
 * longer is a paragraph of the story that happens to use them.
 */
#define EX_NOTICE_LINE	500
/* A call to action this short needs no link to be one. */
#define EX_CTA_LINE	200

/*
 * Phrases of the template's own lines, in lower case, their words
 * separated by one SPACE, each matched from the start of a word (as
 * ex_norm writes the line): notices of copyright (where boilerpipe ends
 * the article) and calls to action (sign-up, log-in and subscribe
 * prompts).  One ending with a digit matches as a prefix ("copyright
 * 2008").
 */
struct ex_phrase {
	const char *s;
	size_t len;
};
#define PH(w) { w, sizeof(w) - 1 }
static const struct ex_phrase ex_legal_phrases[] = {
	PH("all rights reserved"), PH("expressly prohibited"),
	PH("strictly prohibited"), PH("prior written consent"),
	PH("prior written permission"), PH("express written consent"),
	PH("express written permission"), PH("may not be reproduced"),
	PH("may not be republished"), PH("may not be redistributed"),
	PH("may not be published broadcast"), PH("registered trademark"),
	PH("copyright \xc2\xa9"), PH("\xc2\xa9 copyright"),
	PH("copyright c 1"), PH("copyright c 2"), PH("copyright 1"),
	PH("copyright 2"), PH("\xc2\xa9 1"), PH("\xc2\xa9 2"),
};
static const struct ex_phrase ex_cta_phrases[] = {
	PH("click here"), PH("sign up now"), PH("sign up today"),
	PH("sign up here"), PH("sign up for free"), PH("sign up for our"),
	PH("register now"), PH("register today"), PH("register here"),
	PH("register for free"), PH("subscribe now"), PH("subscribe today"),
	PH("subscribe here"), PH("subscribe free"), PH("subscribe for free"),
	PH("create an account"), PH("already a member"),
	PH("become a member"), PH("log in to"), PH("login to"),
	PH("sign in to"), PH("start your free trial"), PH("follow us on"),
	PH("like us on"), PH("mark your calendar"),
};
#undef PH
#define EX_NLEGAL (sizeof(ex_legal_phrases) / sizeof(ex_legal_phrases[0]))
#define EX_NCTA (sizeof(ex_cta_phrases) / sizeof(ex_cta_phrases[0]))
/* The longest phrase, and then some. */
#define EX_PHRASE_MAX	40

/*
 * Each byte as the phrases are written: ASCII letters lower-cased, digits
 * and bytes from 0x80 kept, every other byte a separator (SPACE).  And the
 * first three bytes of each phrase (ex_trigram): most words begin none.
 */
static uint8_t ex_norm[256];
static uint8_t ex_phrase_trigrams[4096 / 8];
static pthread_once_t ex_phrase_once = PTHREAD_ONCE_INIT;

static unsigned
ex_trigram(uint8_t a, uint8_t b, uint8_t c)
{
	return (((unsigned)a * 31u + b) * 31u + c) % 4096;
}

static void
ex_phrase_add(const struct ex_phrase *p)
{
	unsigned h = ex_trigram((uint8_t)p->s[0], (uint8_t)p->s[1],
	    (uint8_t)p->s[2]);

	ex_phrase_trigrams[h / 8] |= (uint8_t)(1u << h % 8);
}

static void
ex_phrase_init(void)
{
	size_t k;

	for (k = 0; k < 256; k++)
		ex_norm[k] = (uint8_t)((k - 'A' < 26) ? k | 0x20 :
		    (k - 'a' < 26 || k - '0' < 10 || k >= 0x80) ? k : ' ');
	for (k = 0; k < EX_NLEGAL; k++)
		ex_phrase_add(&ex_legal_phrases[k]);
	for (k = 0; k < EX_NCTA; k++)
		ex_phrase_add(&ex_cta_phrases[k]);
}

/*
 * Whether b[0..n) (normalised, a word at its start, a SPACE at its end)
 * begins with one of the count phrases of list: one that ends at a word's
 * end, or with a digit.
 */
static int
ex_starts_phrase(const uint8_t *b, size_t n, const struct ex_phrase *list,
    size_t count)
{
	size_t k, pl;

	for (k = 0; k < count; k++) {
		pl = list[k].len;
		if (pl < n && b[0] == (uint8_t)list[k].s[0] &&
		    memcmp(b, list[k].s, pl) == 0 &&
		    ((uint8_t)(list[k].s[pl - 1] - '0') < 10 || b[pl] == ' '))
			return 1;
	}
	return 0;
}

/*
 * Whether the word at s[i] (before n) begins a phrase: looked at by its
 * first three bytes, then, if one may, normalised.  cta: whether calls to
 * action count.
 */
static int
ex_word_is_phrase(const uint8_t *s, size_t i, size_t n, int cta)
{
	uint8_t win[EX_PHRASE_MAX + 2], c1, c2;
	size_t j, k;
	unsigned h;

	if (n - i < 3)
		return 0;
	c1 = ex_norm[s[i + 1]];
	c2 = c1 == ' ' ? ' ' : ex_norm[s[i + 2]];
	h = ex_trigram(ex_norm[s[i]], c1, c2);
	if (!(ex_phrase_trigrams[h / 8] >> h % 8 & 1))
		return 0;
	for (j = i, k = 0; j < n && k < EX_PHRASE_MAX; j++)
		if (ex_norm[s[j]] != ' ' || win[k - 1] != ' ')
			win[k++] = ex_norm[s[j]];
	win[k++] = ' ';
	return ex_starts_phrase(win, k, ex_legal_phrases, EX_NLEGAL) ||
	    (cta && ex_starts_phrase(win, k, ex_cta_phrases, EX_NCTA));
}

/*
 * Whether a line of the content, s[0..n) with link bytes of links, is the
 * template's: a notice of copyright, or a call to action (in a link, or
 * on a short line of its own).  Words are found 16 bytes at a time.
 */
static int
ex_is_notice_line(const uint8_t *s, size_t n, size_t link)
{
	int cta = link > 0 || n <= EX_CTA_LINE;
	unsigned prev = 0, w;
	size_t i = 0;

	if (n > EX_NOTICE_LINE)
		return 0;
	pthread_once(&ex_phrase_once, ex_phrase_init);
#ifdef __SSE2__
	for (; n - i >= 16; i += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(s + i)), x;
		unsigned starts;

		/* Letters, digits and bytes from 0x80: words' bytes. */
		x = _mm_sub_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)),
		    _mm_set1_epi8('a'));
		w = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x,
		    _mm_set1_epi8(25)), x));
		x = _mm_sub_epi8(v, _mm_set1_epi8('0'));
		w |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(x,
		    _mm_set1_epi8(9)), x)) | (unsigned)_mm_movemask_epi8(v);
		for (starts = w & ~(w << 1 | prev); starts != 0;
		    starts &= starts - 1)
			if (ex_word_is_phrase(s, i + (size_t)__builtin_ctz(starts),
			    n, cta))
				return 1;
		prev = w >> 15;
	}
#endif
	for (; i < n; i++) {
		w = ex_norm[s[i]] != ' ';
		if (w && !prev && ex_word_is_phrase(s, i, n, cta))
			return 1;
		prev = w;
	}
	return 0;
}

/*
 * A line being written: where it starts, its bytes, its link bytes; and
 * the run of short lines kept just before it: where it starts, its lines,
 * those with a link, their bytes and link bytes.
 */
struct ex_line {
	size_t start;
	size_t len;
	size_t link;
	size_t run;
	size_t nrun;
	size_t nlinked;
	size_t runlen;
	size_t runlink;
};

/*
 * Ends the line being written (the last one when last is set).  In the
 * main content, a line that is mostly links (a related story, "Read more",
 * a tag list) is taken back out, with the line break before it: two
 * thirds of it in links (boilerpipe's link density).  So is a list: a run
 * of short lines, EX_LIST_MIN or more of them with a link and most of them
 * with one, a sixth of it links (stories with their dates, names with
 * their years); a line of prose ends the run.
 */
static void
ex_line_end(struct ex_line *l, uint8_t *out, size_t *o, int is_main,
    int last)
{
	int is_short = l->len < EX_LIST_LINE;

	if (!is_main)
		goto done;
	if (l->link * 3 > l->len * 2 || ex_is_notice_line(out + l->start,
	    *o - l->start, l->link)) {
		*o = l->start > 0 ? l->start - 1 : 0;
		is_short = 1;
	} else if (is_short && l->len > 0) {
		if (l->nrun == 0)
			l->run = l->start;
		l->nrun++;
		l->nlinked += l->link > 0;
		l->runlen += l->len;
		l->runlink += l->link;
	}
	if ((is_short && !last) || l->nrun == 0)
		goto done;
	if (l->nlinked >= EX_LIST_MIN && l->nlinked * 2 > l->nrun &&
	    l->runlink * 6 >= l->runlen) {
		if (is_short)
			*o = l->run > 0 ? l->run - 1 : 0;
		else {
			/* The long line after the run takes its place. */
			memmove(out + l->run, out + l->start, *o - l->start);
			*o -= l->start - l->run;
		}
	}
	l->nrun = l->nlinked = l->runlen = l->runlink = 0;
done:
	l->start = *o + 1;
	l->len = l->link = 0;
}

/*
 * Appends segments [s0, s1) to the output at *o, those of nodes marked
 * EX_K_DROP (mark NULL: none, and no line is taken out) left out; *pend
 * carries the separators of what was left out, so that a line boundary
 * inside it still ends the line.
 */
static void
ex_emit(struct extract_scratch *sc, uint32_t s0, uint32_t s1,
    const uint8_t *mark, size_t *o, uint32_t *pend, struct ex_line *l)
{
	const struct ex_tree *t = &sc->t;
	uint8_t *out = sc->out;
	uint32_t i;

	for (i = s0; i < s1; i++) {
		const struct ex_seg *s = &t->segs[i];
		uint32_t f = *pend | s->flags;

		/* Hidden text leaves no trace unless it is the content. */
		if ((s->flags & EX_S_HIDDEN) && (mark == NULL ||
		    mark[s->node] == EX_K_DROP))
			continue;
		if (mark != NULL && mark[s->node] == EX_K_DROP) {
			*pend = f & (EX_S_BREAK | EX_S_SPACE);
			continue;
		}
		if (*o > 0) {
			if (f & EX_S_BREAK) {
				ex_line_end(l, out, o, mark != NULL, 0);
				if (*o > 0)
					out[(*o)++] = '\n';
				l->start = *o;
			} else if (f & EX_S_SPACE)
				out[(*o)++] = ' ';
		}
		memcpy(out + *o, t->text + s->off, s->len);
		*o += s->len;
		l->len += s->len;
		if (s->flags & EX_S_LINK)
			l->link += s->len;
		*pend = 0;
	}
}

static int
ex_whole_text(struct extract_scratch *sc, const uint8_t **out,
    size_t *outlen)
{
	struct ex_line l = { 0, 0, 0, 0, 0, 0, 0, 0 };
	size_t o = 0;
	uint32_t pend = 0;

	if (ex_out_room(sc) == -1)
		return -1;
	ex_emit(sc, 0, sc->t.nsegs, NULL, &o, &pend, &l);
	sc->out[o] = '\0';
	*out = sc->out;
	*outlen = o;
	return EXTRACT_WHOLE;
}

int
extract_whole(struct extract_scratch *sc, const void *html, size_t len,
    const uint8_t **out, size_t *outlen)
{
	if (ex_tree_build(&sc->t, html, len) == -1)
		return -1;
	return ex_whole_text(sc, out, outlen);
}

/* The weight of a node's class, id and role (readability's 25s). */
static float
ex_weight(const struct ex_node *nd)
{
	float w = 0;

	if (nd->hints & EX_H_POS)
		w += 25;
	if (nd->hints & EX_H_NEG)
		w -= 25;
	if (nd->hints & EX_H_BODY)
		w += 50;
	return w;
}

/* A candidate's starting score: its tag's and its weight. */
static float
ex_base(const struct ex_node *nd)
{
	float s;

	switch (nd->tag) {
	case EX_T_DIV:
	case EX_T_ARTICLE:
	case EX_T_MAIN:
		s = 5;
		break;
	case EX_T_PRE:
	case EX_T_TD:
	case EX_T_BLOCKQUOTE:
		s = 3;
		break;
	case EX_T_ADDRESS:
	case EX_T_OL:
	case EX_T_UL:
	case EX_T_DL:
	case EX_T_DD:
	case EX_T_DT:
	case EX_T_LI:
	case EX_T_FORM:
		s = -3;
		break;
	case EX_T_H1:
	case EX_T_H2:
	case EX_T_H3:
	case EX_T_H4:
	case EX_T_H5:
	case EX_T_H6:
	case EX_T_TH:
		s = -5;
		break;
	default:
		s = 0;
		break;
	}
	return s + ex_weight(nd);
}

/*
 * Whether a node reads as prose: paragraphs of a sentence or more, with
 * few links.  Menus, link lists and notices do not.
 */
static int
ex_is_prose(const struct ex_node *nd)
{
	return nd->np >= 3 && nd->text >= (uint32_t)nd->np * 100 &&
	    nd->link * 10 <= nd->text;
}

/*
 * Whether a node is template by what it is: tag, role, class, id.  A
 * template name (not a tag) on prose is taken for a mistake: "subMenu" or
 * "promo" wrapping paragraphs of sentences and no links.  Comments are
 * prose too, and their name is never a mistake.
 */
static int
ex_is_junk(const struct ex_node *nd)
{
	if (nd->hints & EX_H_BODY)
		return 0;
	switch (nd->tag) {
	case EX_T_NAV:
	case EX_T_ASIDE:
	case EX_T_FOOTER:
	case EX_T_BUTTON:
		return 1;
	case EX_T_HTML:
	case EX_T_BODY:
	case EX_T_MAIN:
	case EX_T_ARTICLE:
		/* Their classes list the page's categories and features. */
		return 0;
	}
	if (!(nd->hints & EX_H_JUNK))
		return 0;
	return (nd->hints & (EX_H_HARD | EX_H_NOTICE)) || !ex_is_prose(nd);
}

/* Whether node i is where a hidden part of the page begins. */
static int
ex_is_hidden_root(const struct ex_tree *t, uint32_t i)
{
	return (t->nodes[i].flags & EX_N_HIDDEN) &&
	    !(t->nodes[t->nodes[i].parent].flags & EX_N_HIDDEN);
}

/*
 * Whether the hidden element at node i is shown: prose that is more than
 * half what the page shows is the article, hidden until a script reveals
 * it (or behind a "read more" switch), unless its name says otherwise.
 */
static int
ex_hidden_shown(const struct ex_tree *t, uint32_t i)
{
	const struct ex_node *nd = &t->nodes[i];

	return ex_is_prose(nd) && !ex_is_junk(nd) &&
	    nd->text - nd->link >= EX_MIN_MAIN &&
	    nd->text - nd->link > (t->nodes[0].text - t->nodes[0].link) / 2;
}

/*
 * Whether a node marks where the readers' comments begin: an element that
 * holds nothing and whose id or anchor name is theirs, as the anchor that
 * "#comments" links to, or the place a script fills with them.  (A class
 * on an empty element is more often a counter's, in the byline.)
 */
static int
ex_is_comments_mark(const struct ex_node *nd)
{
	return (nd->hints & EX_H_PLACE) && !(nd->hints & EX_H_BODY) &&
	    nd->text == 0 && nd->nimg == 0;
}

/*
 * Whether a node is a picture's block: a picture with a line or two of
 * caption or credit, and no paragraph of the story (a gallery's frames,
 * a photograph beside the text).
 */
static int
ex_is_caption_block(const struct ex_node *nd)
{
	switch (nd->tag) {
	case EX_T_DIV:
	case EX_T_TD:
	case EX_T_TABLE:
	case EX_T_CENTER:
		return nd->nimg > 0 && nd->text > 0 && nd->text <= EX_CAPTION_MAX &&
		    nd->nline <= 3;
	}
	return 0;
}

/* Whether a node reads as a paragraph of its own. */
static int
ex_is_para(const struct ex_node *nd)
{
	switch (nd->tag) {
	case EX_T_P:
	case EX_T_PRE:
	case EX_T_TD:
		return 1;
	case EX_T_DIV:
	case EX_T_SECTION:
	case EX_T_ARTICLE:
	case EX_T_BLOCKQUOTE:
	case EX_T_CENTER:
	case EX_T_MAIN:
		return !(nd->flags & EX_N_BLOCKKID);
	}
	return 0;
}

/*
 * Whether a block's own text, outside its block children, is paragraphs
 * of its own: text and <br>s with an ad's table or a picture between them
 * (readability wraps such runs in <p>s).
 */
static int
ex_has_runs(const struct ex_node *nd)
{
	switch (nd->tag) {
	case EX_T_DIV:
	case EX_T_SECTION:
	case EX_T_ARTICLE:
	case EX_T_BLOCKQUOTE:
	case EX_T_CENTER:
	case EX_T_MAIN:
		return (nd->flags & EX_N_BLOCKKID) != 0;
	}
	return 0;
}

/* Whether inline elements in a node are part of running text. */
static int
ex_in_prose(const struct ex_node *nd)
{
	return nd->tag == EX_T_P || nd->tag == EX_T_LI || nd->tag == EX_T_TD ||
	    nd->tag == EX_T_DD || nd->tag == EX_T_BLOCKQUOTE ||
	    (ex_tag_flags[nd->tag] & EX_TF_HEADING) != 0;
}

static float
ex_link_density(const struct ex_node *nd)
{
	return nd->text > 0 ? (float)nd->link / (float)nd->text : 0;
}

/*
 * Marks what step 1 leaves out of scoring: mark[i] is EX_K_DROP for junk
 * nodes and everything inside them.  Parents come first, so one pass.
 */
static void
ex_mark_junk(struct extract_scratch *sc)
{
	struct ex_tree *t = &sc->t;
	uint32_t i;

	uint32_t half = (t->nodes[0].text - t->nodes[0].link) / 2;

	sc->mark[0] = EX_K_KEEP;
	for (i = 1; i < t->nnodes; i++) {
		const struct ex_node *nd = &t->nodes[i];

		/*
		 * A name is a guess ("page-ad-margins" may wrap the whole
		 * article), and half the page's prose outweighs it; only
		 * comments can be as long as the article.
		 */
		if (sc->mark[nd->parent] == EX_K_DROP)
			sc->mark[i] = EX_K_DROP;
		else if (ex_is_hidden_root(t, i))
			sc->mark[i] = ex_hidden_shown(t, i) ? EX_K_KEEP :
			    EX_K_DROP;
		else
			sc->mark[i] = ex_is_junk(nd) && ((nd->hints &
			    EX_H_HARD) || nd->text - nd->link <= half) ?
			    EX_K_DROP : EX_K_KEEP;
	}
}

/*
 * The page's headline: the longest heading that the title holds whole, and
 * that is most of the title ("Site name | Headline" holds the site's name
 * too).  Returns its node, 0 if none.
 */
static uint32_t
ex_headline(struct extract_scratch *sc)
{
	const struct ex_tree *t = &sc->t;
	uint8_t buf[EX_TITLE_MAX];
	size_t n, best_n = 0;
	uint32_t i, s, best = 0;

	if (t->ntitle == 0)
		return 0;
	for (i = 1; i < t->nnodes; i++) {
		const struct ex_node *nd = &t->nodes[i];

		if (!(ex_tag_flags[nd->tag] & EX_TF_HEADING) ||
		    sc->mark[i] == EX_K_DROP || nd->text > 4 * EX_TITLE_MAX)
			continue;
		for (n = 0, s = nd->seg0; s < nd->seg1 && n <= t->ntitle; s++)
			if (sc->mark[t->segs[s].node] != EX_K_DROP)
				n += ex_squeeze(t->text + t->segs[s].off,
				    t->segs[s].len, buf + (n < sizeof(buf) ?
				    n : sizeof(buf)), n < sizeof(buf) ?
				    sizeof(buf) - n : 0);
		if (n < 10 || n > t->ntitle || n * 2 < t->ntitle ||
		    n <= best_n || memmem(t->title, t->ntitle, buf, n) == NULL)
			continue;
		best = i;
		best_n = n;
	}
	return best;
}

/*
 * Step 2: scores candidates; returns the best, 0 if none.  Beyond
 * readability: a paragraph of short lines (a list of names, addresses,
 * dates) scores nothing, and the first paragraph after the page's headline
 * (ex_headline) opens the article, and scores as much more as a name would
 * give.
 */
static uint32_t
ex_score(struct extract_scratch *sc, uint32_t head)
{
	struct ex_tree *t = &sc->t;
	struct ex_node *nodes = t->nodes;
	uint32_t i, best = 0, lead_from, lead = 0;
	float bs = 0;

	lead_from = head != 0 ? nodes[head].end : EX_NONE;
	for (i = 0; i < t->nnodes; i++)
		nodes[i].score = 0;
	for (i = 1; i < t->nnodes; i++) {
		struct ex_node *nd = &nodes[i], *pa, *ga;
		uint32_t text, commas, lines, holder;
		float s;

		if (sc->mark[i] == EX_K_DROP)
			continue;
		if (ex_is_para(nd)) {
			text = nd->text;
			commas = nd->commas;
			lines = nd->nline;
			holder = nd->parent;
		} else if (ex_has_runs(nd)) {
			text = nd->ptext;
			commas = nd->pcommas;
			lines = nd->pline;
			holder = i;
		} else
			continue;
		if (text < EX_MIN_PARA || (lines >= 3 && text < lines *
		    EX_MIN_LINE))
			continue;
		s = 2 + (float)commas + (text >= 300 ? 3 :
		    (float)text / 100);
		if (i >= lead_from && holder != i &&
		    !(nd->flags & EX_N_BLOCKKID) &&
		    nd->text - nd->link >= EX_MIN_LEAD &&
		    ex_link_density(nd) < 0.25f) {
			lead = holder;
			lead_from = EX_NONE;
		}
		if (holder == 0)
			continue;
		pa = &nodes[holder];
		if (!(pa->flags & EX_N_CAND)) {
			pa->flags |= EX_N_CAND;
			pa->score = ex_base(pa);
		}
		pa->score += s;
		if (pa->parent == 0 || pa->parent == EX_NONE)
			continue;
		ga = &nodes[pa->parent];
		if (!(ga->flags & EX_N_CAND)) {
			ga->flags |= EX_N_CAND;
			ga->score = ex_base(ga);
		}
		ga->score += s / 2;
	}
	for (i = 1; i < t->nnodes; i++) {
		struct ex_node *nd = &nodes[i];
		float w;

		if (!(nd->flags & EX_N_CAND))
			continue;
		/*
		 * A place after the headline is a hint about the text, worth
		 * no more than the text itself scores.
		 */
		if (i == lead) {
			w = nd->score - ex_base(nd);
			nd->score += w < EX_LEAD_BONUS ? w : EX_LEAD_BONUS;
		}
		nd->score *= 1 - ex_link_density(nd);
		/* Too short to be an article, it is not the article. */
		if (nd->text - nd->link < EX_MIN_MAIN)
			continue;
		if (sc->mark[i] != EX_K_DROP && nd->score > bs) {
			bs = nd->score;
			best = i;
		}
	}
	return best;
}

/* Step 3: an element naming itself the body, in place of best. */
static uint32_t
ex_semantic(struct extract_scratch *sc, uint32_t best)
{
	struct ex_tree *t = &sc->t;
	struct ex_node *nodes = t->nodes;
	uint32_t i, pick = 0;

	for (i = 1; i < t->nnodes; i++) {
		struct ex_node *nd = &nodes[i];

		if (!(nd->hints & EX_H_BODY) || sc->mark[i] == EX_K_DROP ||
		    nd->text - nd->link < EX_MIN_MAIN)
			continue;
		if (pick == 0 || nd->text > nodes[pick].text)
			pick = i;
	}
	if (pick == 0)
		return best;
	if (best == 0)
		return pick;
	/* best inside pick: pick is the wider body. */
	if (best > pick && best < nodes[pick].end)
		return pick;
	/* pick inside best: the named body if it holds most of it. */
	if (pick > best && pick < nodes[best].end &&
	    nodes[pick].text * 2 >= nodes[best].text - nodes[best].link)
		return pick;
	return best;
}

/*
 * Headings that title the template's sections (squeezed as ex_squeeze
 * does, matched at the start): what follows them, to the next heading of
 * their rank, is other stories, not this one.
 */
static const char *const ex_teaser_headings[] = {
	"related", "othernews", "otherstories", "otherarticles",
	"inothernews", "morenews", "morestories", "morearticles",
	"moreheadlines", "moreon", "morefrom", "seealso", "alsoread",
	"readmore", "readalso", "topstories", "topnews", "latestnews",
	"lateststories", "latestheadlines", "mostpopular", "mostread",
	"mostviewed", "mostemailed", "mostcommented", "mostshared",
	"youmayalso", "youmightalso", "recommended", "alsointhenews",
	"editorspicks", "aroundtheweb", "fromtheweb", "trending",
};

/* Whether node i is a heading that titles a section of teasers. */
static int
ex_is_teaser_heading(const struct extract_scratch *sc, uint32_t i)
{
	const struct ex_tree *t = &sc->t;
	const struct ex_node *nd = &t->nodes[i];
	uint8_t buf[48];
	size_t n = 0, k, wl;
	uint32_t s;

	if (!(ex_tag_flags[nd->tag] & EX_TF_HEADING) || nd->text > 80)
		return 0;
	for (s = nd->seg0; s < nd->seg1 && n < sizeof(buf); s++)
		n += ex_squeeze(t->text + t->segs[s].off, t->segs[s].len,
		    buf + n, sizeof(buf) - n);
	if (n > sizeof(buf))
		n = sizeof(buf);
	for (k = 0; k < sizeof(ex_teaser_headings) /
	    sizeof(ex_teaser_headings[0]); k++) {
		wl = strlen(ex_teaser_headings[k]);
		if (n >= wl && memcmp(buf, ex_teaser_headings[k], wl) == 0)
			return 1;
	}
	return 0;
}

/* Whether a node can be a teaser: a short block with a link. */
static int
ex_is_teaser(const struct ex_node *nd)
{
	return (ex_tag_flags[nd->tag] & EX_TF_BLOCK) &&
	    !(ex_tag_flags[nd->tag] & EX_TF_HEADING) &&
	    nd->text <= EX_TEASER_MAX && nd->link > 0;
}

/*
 * The section of parent i that heading j begins: the siblings after it up
 * to the next heading of its rank or higher (returned), *bytes their text.
 */
static uint32_t
ex_section_end(const struct ex_node *nodes, uint32_t i, uint32_t j,
    uint32_t *bytes)
{
	uint32_t k;

	*bytes = nodes[j].text;
	for (k = nodes[j].end; k < nodes[i].end; k = nodes[k].end) {
		if ((ex_tag_flags[nodes[k].tag] & EX_TF_HEADING) &&
		    nodes[k].tag <= nodes[j].tag)
			break;
		*bytes += nodes[k].text;
	}
	return k;
}

/* Marks EX_K_CUT node i's children from j to k (not included). */
static void
ex_cut_siblings(struct extract_scratch *sc, uint32_t j, uint32_t k)
{
	for (; j < k; j = sc->t.nodes[j].end)
		sc->mark[j] = EX_K_CUT;
}

/* A run of teasers among siblings (ex_cut_teasers). */
struct ex_run {
	uint32_t first;		/* its first node */
	uint32_t heading;	/* the heading just before it, or 0 */
	uint32_t n;		/* its nodes */
	uint32_t text, link;	/* their bytes */
	uint8_t tag;
};

/*
 * Ends run r before sibling j: cuts it, with its heading, if it is a list
 * of teasers: EX_TEASER_MIN or more, a quarter of their text in links, at
 * most max bytes.
 */
static void
ex_run_end(struct extract_scratch *sc, struct ex_run *r, uint32_t j,
    uint32_t max)
{
	if (r->n >= EX_TEASER_MIN && r->link * 4 >= r->text &&
	    r->text <= max)
		ex_cut_siblings(sc, r->heading != 0 ? r->heading : r->first, j);
	r->n = r->text = r->link = r->heading = 0;
}

/*
 * Marks EX_K_CUT what node i holds of other stories, as boilerpipe reads
 * a page's lists by the link density of runs of sibling blocks: a run of
 * teasers (ex_is_teaser, all of one tag) with a quarter of its text in links
 * (a headline with its date, its source, a line of summary), and the
 * heading just before it; and the section that a teaser heading titles
 * ("Related stories", "Other news").  Empty and hidden children neither
 * count nor end a run.  Max is half the content's text: a section of more
 * is the content itself, and so are the runs in a node of more (a digest
 * of the day's stories, each with its link).
 */
static void
ex_cut_teasers(struct extract_scratch *sc, uint32_t i, uint32_t max)
{
	const struct ex_node *nodes = sc->t.nodes, *nd;
	struct ex_run r = { 0, 0, 0, 0, 0, 0 };
	uint32_t j, next, k, bytes, rmax;

	rmax = nodes[i].text <= max ? max : 0;

	for (j = i + 1; j < nodes[i].end; j = next) {
		nd = &nodes[j];
		next = nd->end;
		if (nd->text == 0 || (nd->flags & EX_N_HIDDEN))
			continue;
		if (ex_is_teaser(nd) && (r.n == 0 || nd->tag == r.tag)) {
			if (r.n++ == 0) {
				r.first = j;
				r.tag = nd->tag;
			}
			r.text += nd->text;
			r.link += nd->link;
			continue;
		}
		ex_run_end(sc, &r, j, rmax);
		if (ex_is_teaser(nd)) {
			/* Another tag begins another run. */
			r.n = 1;
			r.first = j;
			r.tag = nd->tag;
			r.text = nd->text;
			r.link = nd->link;
			continue;
		}
		if (!(ex_tag_flags[nd->tag] & EX_TF_HEADING))
			continue;
		r.heading = j;
		if (ex_is_teaser_heading(sc, j) &&
		    (k = ex_section_end(nodes, i, j, &bytes)) > j &&
		    bytes <= max) {
			ex_cut_siblings(sc, j, k);
			r.heading = 0;
			next = k;
		}
	}
	ex_run_end(sc, &r, j, rmax);
}

/*
 * Step 5: marks what the content leaves out, inside node c, kept bytes of
 * content before it.  The readers' comments end the content: returns the
 * segment where a mark of them (ex_is_comments_mark) stands after an
 * article's worth of kept text, or c's end.
 */
static uint32_t
ex_clean(struct extract_scratch *sc, uint32_t c, size_t kept)
{
	struct ex_tree *t = &sc->t;
	struct ex_node *nodes = t->nodes;
	uint32_t total = nodes[c].text, i, s = nodes[c].seg0;

	sc->mark[c] = EX_K_KEEP;
	ex_cut_teasers(sc, c, total / 2);
	for (i = c + 1; i < nodes[c].end; i++) {
		struct ex_node *nd = &nodes[i];
		int drop = 0;

		if (sc->mark[nd->parent] == EX_K_DROP ||
		    sc->mark[i] == EX_K_CUT) {
			sc->mark[i] = EX_K_DROP;
			continue;
		}
		if (ex_is_comments_mark(nd)) {
			/* Every node before it is marked: count its text. */
			for (; s < nd->seg0; s++)
				if (sc->mark[t->segs[s].node] != EX_K_DROP)
					kept += t->segs[s].len;
			if (kept >= EX_MIN_MAIN)
				return nd->seg0;
		}
		if (ex_is_hidden_root(t, i))
			drop = !ex_hidden_shown(t, i);
		else if (nd->text * 2 > total)
			/* Most of the content: only a plain template name drops it. */
			drop = ex_is_junk(nd) && (nd->hints & EX_H_HARD);
		else if (ex_is_junk(nd) || nd->tag == EX_T_FORM ||
		    nd->tag == EX_T_FIGCAPTION || nd->tag == EX_T_FIGURE)
			drop = 1;
		else if (ex_is_caption_block(nd) || ((nd->flags & EX_N_FORM) &&
		    nd->text <= EX_WIDGET_MAX))
			drop = 1;
		else if ((nd->hints & (EX_H_CAPTION | EX_H_BYLINE)) &&
		    !(nd->hints & EX_H_BODY) && ((ex_tag_flags[nd->tag] &
		    EX_TF_BLOCK) || !ex_in_prose(&nodes[nd->parent])))
			drop = 1;
		else if ((ex_tag_flags[nd->tag] & EX_TF_HEADING) &&
		    ((nd->hints & EX_H_NEG) || ex_link_density(nd) > 0.33f))
			drop = 1;
		else if (nd->tag == EX_T_UL || nd->tag == EX_T_OL ||
		    nd->tag == EX_T_DIV || nd->tag == EX_T_TABLE ||
		    nd->tag == EX_T_SECTION || nd->tag == EX_T_DL) {
			float ld = ex_link_density(nd), w = ex_weight(nd);

			if (nd->commas < 10) {
				if (nd->text < 25 && nd->nimg == 0 &&
				    nd->tag != EX_T_DIV)
					drop = 0;
				else if (w < 25 && ld > 0.2f)
					drop = 1;
				else if (w >= 25 && ld > 0.5f)
					drop = 1;
				else if (nd->nli > nd->np * 2 + 8 &&
				    nd->tag != EX_T_UL && nd->tag != EX_T_OL)
					drop = 0;
			}
			if (w < 0 && nd->text < 500)
				drop = 1;
		}
		sc->mark[i] = drop ? EX_K_DROP : EX_K_KEEP;
		if (!drop)
			ex_cut_teasers(sc, i, total / 2);
	}
	return nodes[c].seg1;
}

int
extract_main(struct extract_scratch *sc, const void *html, size_t len,
    const uint8_t **out, size_t *outlen)
{
	struct ex_tree *t = &sc->t;
	struct ex_line l = { 0, 0, 0, 0, 0, 0, 0, 0 };
	struct ex_node *nodes;
	uint32_t best, head, pa, i, pend = 0;
	size_t o = 0;
	float bs;

	if (ex_tree_build(t, html, len) == -1)
		return -1;
	if (t->nnodes > sc->capmark) {
		uint8_t *nm = realloc(sc->mark, t->nnodes);

		if (nm == NULL)
			return -1;
		sc->mark = nm;
		sc->capmark = t->nnodes;
	}
	if (ex_out_room(sc) == -1)
		return -1;
	nodes = t->nodes;
	ex_mark_junk(sc);
	head = ex_headline(sc);
	best = ex_score(sc, head);
	best = ex_semantic(sc, best);
	if (best == 0)
		return ex_whole_text(sc, out, outlen);
	bs = nodes[best].score;
	pa = nodes[best].parent;
	/* Step 4: the best and its siblings, in document order. */
	for (i = pa + 1; i < nodes[pa].end; i = nodes[i].end) {
		struct ex_node *nd = &nodes[i];
		int take = i == best;
		uint32_t stop;

		if (!take && sc->mark[i] != EX_K_DROP) {
			float ld = ex_link_density(nd);

			/* As for the best, a short block's score is its name's. */
			if (nd->score >= (bs * 0.2f > 10 ? bs * 0.2f : 10) &&
			    nd->text - nd->link >= EX_MIN_MAIN)
				take = 1;
			else if (nd->tag == EX_T_P && nd->text > 80 &&
			    ld < 0.25f)
				take = 1;
		}
		if (!take)
			continue;
		stop = ex_clean(sc, i, o);
		ex_emit(sc, nd->seg0, stop, sc->mark, &o, &pend, &l);
		pend |= EX_S_BREAK;
		if (stop < nd->seg1)
			break;
	}
	ex_line_end(&l, sc->out, &o, 1, 1);
	if (o < EX_MIN_MAIN)
		return ex_whole_text(sc, out, outlen);
	sc->out[o] = '\0';
	*out = sc->out;
	*outlen = o;
	return EXTRACT_MAIN;
}
