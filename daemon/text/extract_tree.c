/*
 * extract_tree: one pass over an HTML page into the light tree of
 * extract_tree.h.
 *
 * Tokenizing follows html.c (and so the WHATWG tokenizer where the text
 * depends on it): tags, comments, declarations and raw-text elements end
 * where a browser ends them, and markup left open at the end of the input
 * runs to the end.  Tree building follows the parsing algorithm only where
 * the shape matters for scoring: the implied end tags of p, li, dt/dd,
 * table rows and cells, headings and links; end tags close the topmost open
 * element of their name unless a scope boundary (a table cell, an object)
 * lies above it, and are ignored when none is open.  Every such lookup is
 * O(1): each open element links to the one below it with the same tag, so
 * hostile nesting costs no more than the elements it opens.
 */
#include "extract_tree.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "html.h"
#include "textbytes.h"

/* The deepest nesting kept: deeper start tags are ignored. */
#define EX_MAX_DEPTH	8192
/* Bytes of a class or id value read for hints; utility classes go past. */
#define EX_HINT_MAX	256

static const struct {
	const char *name;
	uint8_t id;
} ex_tag_names[] = {
	{ "a", EX_T_A }, { "address", EX_T_ADDRESS },
	{ "applet", EX_T_APPLET }, { "area", EX_T_AREA },
	{ "article", EX_T_ARTICLE }, { "aside", EX_T_ASIDE },
	{ "audio", EX_T_AUDIO }, { "b", EX_T_B }, { "base", EX_T_BASE },
	{ "blockquote", EX_T_BLOCKQUOTE }, { "body", EX_T_BODY },
	{ "br", EX_T_BR }, { "button", EX_T_BUTTON },
	{ "canvas", EX_T_CANVAS }, { "caption", EX_T_CAPTION },
	{ "center", EX_T_CENTER }, { "col", EX_T_COL }, { "dd", EX_T_DD },
	{ "details", EX_T_DETAILS }, { "dialog", EX_T_DIALOG },
	{ "dir", EX_T_DIR }, { "div", EX_T_DIV }, { "dl", EX_T_DL },
	{ "dt", EX_T_DT }, { "em", EX_T_EM }, { "embed", EX_T_EMBED },
	{ "fieldset", EX_T_FIELDSET }, { "figcaption", EX_T_FIGCAPTION },
	{ "figure", EX_T_FIGURE }, { "font", EX_T_FONT },
	{ "footer", EX_T_FOOTER }, { "form", EX_T_FORM },
	{ "frameset", EX_T_FRAMESET }, { "h1", EX_T_H1 }, { "h2", EX_T_H2 },
	{ "h3", EX_T_H3 }, { "h4", EX_T_H4 }, { "h5", EX_T_H5 },
	{ "h6", EX_T_H6 }, { "head", EX_T_HEAD }, { "header", EX_T_HEADER },
	{ "hgroup", EX_T_HGROUP }, { "hr", EX_T_HR }, { "html", EX_T_HTML },
	{ "i", EX_T_I }, { "iframe", EX_T_IFRAME }, { "img", EX_T_IMG },
	{ "input", EX_T_INPUT }, { "label", EX_T_LABEL },
	{ "legend", EX_T_LEGEND }, { "li", EX_T_LI }, { "link", EX_T_LINK },
	{ "listing", EX_T_LISTING }, { "main", EX_T_MAIN },
	{ "map", EX_T_MAP }, { "marquee", EX_T_MARQUEE },
	{ "math", EX_T_MATH }, { "menu", EX_T_MENU }, { "meta", EX_T_META },
	{ "nav", EX_T_NAV }, { "noembed", EX_T_NOEMBED },
	{ "noframes", EX_T_NOFRAMES }, { "noscript", EX_T_NOSCRIPT },
	{ "object", EX_T_OBJECT }, { "ol", EX_T_OL },
	{ "option", EX_T_OPTION }, { "p", EX_T_P }, { "param", EX_T_PARAM },
	{ "picture", EX_T_PICTURE }, { "plaintext", EX_T_PLAINTEXT },
	{ "pre", EX_T_PRE }, { "script", EX_T_SCRIPT },
	{ "section", EX_T_SECTION }, { "select", EX_T_SELECT },
	{ "source", EX_T_SOURCE }, { "span", EX_T_SPAN },
	{ "strong", EX_T_STRONG }, { "style", EX_T_STYLE },
	{ "summary", EX_T_SUMMARY }, { "svg", EX_T_SVG },
	{ "table", EX_T_TABLE }, { "tbody", EX_T_TBODY }, { "td", EX_T_TD },
	{ "template", EX_T_TEMPLATE }, { "textarea", EX_T_TEXTAREA },
	{ "tfoot", EX_T_TFOOT }, { "th", EX_T_TH }, { "thead", EX_T_THEAD },
	{ "time", EX_T_TIME }, { "title", EX_T_TITLE }, { "tr", EX_T_TR },
	{ "track", EX_T_TRACK }, { "ul", EX_T_UL }, { "video", EX_T_VIDEO },
	{ "wbr", EX_T_WBR }, { "xmp", EX_T_XMP },
};

#define B EX_TF_BLOCK
#define V EX_TF_VOID
#define R EX_TF_RAW
#define S EX_TF_SKIP
#define SC EX_TF_SCOPE
#define CP EX_TF_CLOSEP
#define HD EX_TF_HEADING
#define TB EX_TF_TABLE
const uint16_t ex_tag_flags[256] = {
	[EX_T_ADDRESS] = B | CP, [EX_T_APPLET] = S | SC, [EX_T_AREA] = V,
	[EX_T_ARTICLE] = B | CP, [EX_T_ASIDE] = B | CP, [EX_T_AUDIO] = S,
	[EX_T_BASE] = V, [EX_T_BLOCKQUOTE] = B | CP, [EX_T_BODY] = B,
	[EX_T_BR] = B | V, [EX_T_CANVAS] = S, [EX_T_CAPTION] = B | SC | TB,
	[EX_T_CENTER] = B | CP, [EX_T_COL] = V | TB, [EX_T_DD] = B | CP,
	[EX_T_DETAILS] = B | CP, [EX_T_DIALOG] = S | B | CP,
	[EX_T_DIR] = B | CP, [EX_T_DIV] = B | CP, [EX_T_DL] = B | CP,
	[EX_T_DT] = B | CP, [EX_T_EMBED] = V, [EX_T_FIELDSET] = B | CP,
	[EX_T_FIGCAPTION] = B | CP, [EX_T_FIGURE] = B | CP,
	[EX_T_FOOTER] = B | CP, [EX_T_FORM] = B | CP,
	[EX_T_FRAMESET] = B, [EX_T_H1] = B | CP | HD, [EX_T_H2] = B | CP | HD,
	[EX_T_H3] = B | CP | HD, [EX_T_H4] = B | CP | HD,
	[EX_T_H5] = B | CP | HD, [EX_T_H6] = B | CP | HD, [EX_T_HEAD] = B,
	[EX_T_HEADER] = B | CP, [EX_T_HGROUP] = B | CP, [EX_T_HR] = B | V | CP,
	[EX_T_HTML] = B | SC, [EX_T_IFRAME] = R, [EX_T_IMG] = V,
	[EX_T_INPUT] = V, [EX_T_LEGEND] = B, [EX_T_LI] = B | CP,
	[EX_T_LINK] = V, [EX_T_LISTING] = B | CP, [EX_T_MAIN] = B | CP,
	[EX_T_MARQUEE] = SC, [EX_T_MATH] = S, [EX_T_MENU] = B | CP,
	[EX_T_META] = V, [EX_T_NAV] = B | CP, [EX_T_NOEMBED] = R,
	[EX_T_NOFRAMES] = R, [EX_T_NOSCRIPT] = R, [EX_T_OBJECT] = S | SC,
	[EX_T_OL] = B | CP, [EX_T_OPTION] = B, [EX_T_P] = B | CP,
	[EX_T_PARAM] = V, [EX_T_PLAINTEXT] = R, [EX_T_PRE] = B | CP,
	[EX_T_SCRIPT] = R, [EX_T_SECTION] = B | CP, [EX_T_SELECT] = S,
	[EX_T_SOURCE] = V, [EX_T_STYLE] = R, [EX_T_SUMMARY] = B | CP,
	[EX_T_SVG] = S, [EX_T_TABLE] = B | SC | CP | TB, [EX_T_TBODY] = B | TB,
	[EX_T_TD] = B | SC | TB, [EX_T_TEMPLATE] = S | SC,
	[EX_T_TEXTAREA] = R, [EX_T_TFOOT] = B | TB, [EX_T_TH] = B | SC | TB,
	[EX_T_THEAD] = B | TB, [EX_T_TITLE] = R, [EX_T_TR] = B | TB,
	[EX_T_TRACK] = V, [EX_T_UL] = B | CP, [EX_T_VIDEO] = S, [EX_T_WBR] = V,
	[EX_T_XMP] = R | B | CP,
};
#undef B
#undef V
#undef R
#undef S
#undef SC
#undef CP
#undef HD
#undef TB

/*
 * Words in class and id values and what they hint.  Matched on the value
 * lower-cased: EX_M_ANY anywhere, EX_M_START at the start of a word (after
 * a byte that is not a letter or digit), EX_M_WORD as a whole word.  Kept
 * short and general: names that sites of any language and any CMS use for
 * the same things.  Sorted (ex_init indexes them by their first two
 * letters); a word never spans the two halves of a camelCase name.
 */
#define EX_M_ANY	0
#define EX_M_START	1
#define EX_M_WORD	2

static const struct ex_pat {
	const char *word;
	uint8_t len;
	uint8_t mode;
	uint16_t hints;
} ex_pats[] = {
#define P(w, m, h) { w, sizeof(w) - 1, m, h }
	P("ad", EX_M_WORD, EX_H_JUNK | EX_H_NEG),
	P("ads", EX_M_WORD, EX_H_JUNK | EX_H_NEG),
	P("advert", EX_M_START, EX_H_JUNK | EX_H_NEG),
	P("article", EX_M_ANY, EX_H_POS),
	P("author", EX_M_START, EX_H_BYLINE | EX_H_NEG),
	P("banner", EX_M_ANY, EX_H_NEG),
	P("blog", EX_M_START, EX_H_POS),
	P("body", EX_M_START, EX_H_POS),
	P("breadcrumb", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("byline", EX_M_ANY, EX_H_BYLINE | EX_H_NEG),
	P("caption", EX_M_ANY, EX_H_CAPTION),
	P("comment", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_HARD),
	P("community", EX_M_START, EX_H_NEG),
	P("consent", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("contact", EX_M_START, EX_H_NEG),
	P("content", EX_M_ANY, EX_H_POS),
	P("cookie", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("copyright", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("credit", EX_M_START, EX_H_CAPTION),
	P("date", EX_M_WORD, EX_H_BYLINE),
	P("dateline", EX_M_WORD, EX_H_BYLINE),
	P("disclaimer", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("disqus", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_HARD),
	P("embed", EX_M_START, EX_H_EMBED),
	P("entry", EX_M_START, EX_H_POS),
	P("feed", EX_M_WORD, EX_H_NEG | EX_H_LIST),
	P("follow", EX_M_START, EX_H_JUNK | EX_H_NEG),
	P("foot", EX_M_ANY, EX_H_NEG),
	P("footer", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("gdpr", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("header", EX_M_ANY, EX_H_NEG),
	P("hentry", EX_M_WORD, EX_H_POS),
	P("login", EX_M_START, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("main", EX_M_START, EX_H_POS),
	P("masthead", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("menu", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("meta", EX_M_START, EX_H_NEG | EX_H_BYLINE),
	P("modal", EX_M_START, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("most", EX_M_WORD, EX_H_JUNK | EX_H_NEG),
	P("nav", EX_M_START, EX_H_JUNK | EX_H_NEG),
	P("newsletter", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("outbrain", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("pager", EX_M_WORD, EX_H_JUNK | EX_H_NEG),
	P("pagination", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("popular", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("popup", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("post", EX_M_START, EX_H_POS),
	P("promo", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("prose", EX_M_WORD, EX_H_POS),
	P("rail", EX_M_WORD, EX_H_NEG),
	P("recommend", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("related", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("respond", EX_M_START, EX_H_JUNK | EX_H_NEG | EX_H_HARD),
	P("rss", EX_M_WORD, EX_H_NEG),
	P("search", EX_M_START, EX_H_JUNK | EX_H_NEG),
	P("share", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("sharing", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("shoutbox", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("sidebar", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("signup", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("skip", EX_M_START, EX_H_JUNK | EX_H_NEG),
	P("social", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("sponsor", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("story", EX_M_START, EX_H_POS),
	P("subscri", EX_M_ANY, EX_H_JUNK | EX_H_NEG | EX_H_NOTICE),
	P("taboola", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("tags", EX_M_WORD, EX_H_JUNK | EX_H_NEG),
	P("teaser", EX_M_ANY, EX_H_NEG | EX_H_LIST),
	P("text", EX_M_START, EX_H_POS),
	P("timestamp", EX_M_ANY, EX_H_BYLINE),
	P("tool", EX_M_START, EX_H_NEG),
	P("trending", EX_M_ANY, EX_H_JUNK | EX_H_NEG),
	P("widget", EX_M_ANY, EX_H_NEG),
#undef P
};
#define EX_NPATS (sizeof(ex_pats) / sizeof(ex_pats[0]))

/* A word of a table below, and its length. */
static const struct ex_word {
	const char *s;
	size_t len;
} ex_body_names[] = {
#define W(w) { w, sizeof(w) - 1 }
	/*
	 * Names that mark an article's body outright, matched inside one
	 * class or id with its '-' and '_' left out ("c-article__body" holds
	 * "articlebody").
	 */
	W("articlebody"), W("articlecontent"), W("articletext"),
	W("storybody"), W("storycontent"), W("storytext"),
	W("entrycontent"), W("entrybody"), W("postcontent"), W("postbody"),
	W("posttext"), W("contentbody"), W("bodytext"), W("newsbody"),
	W("newstext"), W("newscontent"),
};
#define EX_NBODY (sizeof(ex_body_names) / sizeof(ex_body_names[0]))

/* Prefixes of class names that tell a state (see ex_class_hints). */
static const struct ex_word ex_state_prefixes[] = {
	W("has"), W("with"), W("without"), W("no"), W("show"), W("enable"),
	W("disable"),
};

/* Whole class names that hide an element from sighted readers. */
static const struct ex_word ex_hidden_classes[] = {
	W("hidden"), W("hide"), W("sr-only"), W("visually-hidden"),
	W("visuallyhidden"), W("screen-reader-text"), W("screenreader"),
	W("element-invisible"), W("offscreen"), W("u-hidden"),
	W("is-hidden"),
#undef W
};

/* Roles of the page's template (ARIA landmarks and widgets). */
static const char *const ex_junk_roles[] = {
	"navigation", "banner", "contentinfo", "complementary", "search",
	"menu", "menubar", "toolbar", "tooltip",
};
/* Roles of notices laid over the page. */
static const char *const ex_notice_roles[] = {
	"dialog", "alertdialog", "alert",
};

/*
 * Tag names: open addressing on the lower-cased name packed into two
 * words (ex_key16; no name is longer than EX_TAGKEY_MAX), compared whole.
 */
#define EX_TAGBITS	9
#define EX_TAGHASH	(1u << EX_TAGBITS)
#define EX_TAGKEY_MAX	15
static struct {
	uint64_t k[2];
	uint8_t len;
	uint8_t id;
} ex_taghash[EX_TAGHASH];
/* Each known tag's name, for finding its end tag. */
static const char *ex_tag_name[EX_T_KNOWN];
/* ex_pats' range for each first two letters. */
static uint8_t ex_pat2_lo[26 * 26], ex_pat2_hi[26 * 26];
/*
 * Bits of the first three letters of the longer ex_pats, and of the
 * two-letter ones: most places in a name begin none.
 */
static uint8_t ex_pat3[26 * 26 * 26 / 8 + 1], ex_pat2only[26 * 26 / 8 + 1];
/* The body names (bits of ex_body_names) with each first letter. */
static uint16_t ex_body_first[26];
/* The lengths of ex_hidden_classes, as bits. */
static uint32_t ex_hidden_lens;
/* What a byte is, for class names (ex_class_hints). */
#define EX_CT_LOWER	0x1
#define EX_CT_UPPER	0x2
#define EX_CT_DIGIT	0x4
#define EX_CT_ALNUM	(EX_CT_LOWER | EX_CT_UPPER | EX_CT_DIGIT)
#define EX_CT_SPACE	0x8
static uint8_t ex_ctype[256];
static pthread_once_t ex_once = PTHREAD_ONCE_INIT;

/*
 * Scanning, as in html.c: 16 bytes at a time with SSE2 where the block lies
 * wholly inside the input, the rest one byte at a time.
 */
#ifdef __SSE2__
#define EX_VEC 16

static inline __m128i
ex_load(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

static inline unsigned
ex_eq(__m128i v, char c)
{
	return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(c)));
}

/* The HTML whitespace among the 16 bytes of v. */
static inline unsigned
ex_ws_mask(__m128i v)
{
	return ex_eq(v, ' ') | ex_eq(v, '\t') | ex_eq(v, '\n') |
	    ex_eq(v, '\r') | ex_eq(v, '\f');
}
#endif

static uint8_t
ex_lower(uint8_t c)
{
	return (uint8_t)(c - 'A') < 26 ? c | 0x20 : c;
}

/*
 * Reads p[0..len) (len <= 16) into k[0], k[1], zero-padded, lower-cased
 * if lower is set; avail bytes from p may be read.
 */
static inline void
ex_key16(const uint8_t *p, size_t len, size_t avail, int lower,
    uint64_t k[2])
{
	size_t i;

#ifdef __SSE2__
	if (avail >= EX_VEC) {
		static const uint8_t ones[2 * EX_VEC] = {
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		};
		__m128i v = ex_load(p), up;

		if (lower) {
			up = _mm_and_si128(_mm_cmpgt_epi8(v,
			    _mm_set1_epi8('A' - 1)), _mm_cmplt_epi8(v,
			    _mm_set1_epi8('Z' + 1)));
			v = _mm_or_si128(v, _mm_and_si128(up,
			    _mm_set1_epi8(0x20)));
		}
		v = _mm_and_si128(v, ex_load(ones + EX_VEC - len));
		k[0] = (uint64_t)_mm_cvtsi128_si64(v);
		k[1] = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(v, v));
		return;
	}
#endif
	k[0] = k[1] = 0;
	for (i = 0; i < len; i++)
		k[i >> 3] |= (uint64_t)(lower ? ex_lower(p[i]) : p[i]) <<
		    ((i & 7) * 8);
}

/* A slot of a table of 2^bits for the key k[0], k[1]. */
static inline uint32_t
ex_key_slot(const uint64_t k[2], unsigned bits)
{
	return (uint32_t)(((k[0] ^ k[1] << 5 ^ k[1] >> 3) *
	    0x9e3779b97f4a7c15ull) >> (64 - bits));
}

static void
ex_init(void)
{
	uint64_t k[2];
	size_t i, len;
	uint32_t h;

	for (i = 0; i < sizeof(ex_tag_names) / sizeof(ex_tag_names[0]); i++) {
		len = strlen(ex_tag_names[i].name);
		ex_key16((const uint8_t *)ex_tag_names[i].name, len, len, 1, k);
		for (h = ex_key_slot(k, EX_TAGBITS); ex_taghash[h].len != 0;
		    h = (h + 1) % EX_TAGHASH)
			;
		ex_taghash[h].k[0] = k[0];
		ex_taghash[h].k[1] = k[1];
		ex_taghash[h].len = (uint8_t)len;
		ex_taghash[h].id = ex_tag_names[i].id;
		ex_tag_name[ex_tag_names[i].id] = ex_tag_names[i].name;
	}
	for (i = 0; i < sizeof(ex_hidden_classes) /
	    sizeof(ex_hidden_classes[0]); i++)
		ex_hidden_lens |= 1u << ex_hidden_classes[i].len;
	for (i = 0; i < EX_NBODY; i++)
		ex_body_first[ex_body_names[i].s[0] - 'a'] |= (uint16_t)(1u << i);
	for (i = 0; i < 26; i++) {
		ex_ctype['a' + i] = EX_CT_LOWER;
		ex_ctype['A' + i] = EX_CT_UPPER;
	}
	for (i = 0; i < 10; i++)
		ex_ctype['0' + i] = EX_CT_DIGIT;
	for (i = 0; i < 256; i++)
		if (textbytes_html_space((uint8_t)i))
			ex_ctype[i] = EX_CT_SPACE;
	for (i = EX_NPATS; i-- > 0;) {
		int c = (ex_pats[i].word[0] - 'a') * 26 +
		    (ex_pats[i].word[1] - 'a');

		if (ex_pats[i].len == 2)
			ex_pat2only[c / 8] |= (uint8_t)(1u << c % 8);
		else {
			int c3 = c * 26 + ex_pats[i].word[2] - 'a';

			ex_pat3[c3 / 8] |= (uint8_t)(1u << c3 % 8);
		}

		ex_pat2_lo[c] = (uint8_t)i;
		if (ex_pat2_hi[c] == 0)
			ex_pat2_hi[c] = (uint8_t)(i + 1);
	}
}

size_t
ex_squeeze(const uint8_t *p, size_t len, uint8_t *out, size_t cap)
{
	const uint8_t *end = p + len;
	uint8_t dec[8], c;
	size_t n = 0, dl, k, r;

	while (p < end) {
		if (*p == '&' && (r = html_charref(p, end, dec, &dl)) != 0)
			p += r;
		else {
			dec[0] = *p++;
			dl = 1;
		}
		for (k = 0; k < dl; k++) {
			c = ex_lower(dec[k]);
			if (!textbytes_alnum(c) && c < 0x80)
				continue;
			if (n < cap)
				out[n] = c;
			n++;
		}
	}
	return n;
}

/* The tag id of name[0..len); avail bytes from name may be read. */
static uint8_t
ex_tag_lookup(const uint8_t *name, size_t len, size_t avail)
{
	uint64_t k[2];
	uint32_t h;
	size_t i;

	if (len <= EX_TAGKEY_MAX) {
		ex_key16(name, len, avail, 1, k);
		for (h = ex_key_slot(k, EX_TAGBITS); ex_taghash[h].len != 0;
		    h = (h + 1) % EX_TAGHASH)
			if (ex_taghash[h].k[0] == k[0] &&
			    ex_taghash[h].k[1] == k[1] &&
			    ex_taghash[h].len == len)
				return ex_taghash[h].id;
	}
	/* Other names by their FNV-1a hash, lower-cased. */
	h = 2166136261u;
	for (i = 0; i < len; i++)
		h = (h ^ ex_lower(name[i])) * 16777619u;
	return (uint8_t)(EX_T_HASHED + (h >> 25));
}

/* The first c in [p, end), or end. */
static const uint8_t *
ex_byte(const uint8_t *p, const uint8_t *end, char c)
{
#ifdef __SSE2__
	for (; end - p >= EX_VEC; p += EX_VEC) {
		unsigned m = ex_eq(ex_load(p), c);

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && *p != (uint8_t)c)
		p++;
	return p;
}

/* The first "</" in [p, end), or end. */
static const uint8_t *
ex_end_tag(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	for (; end - p > EX_VEC; p += EX_VEC) {
		unsigned m = ex_eq(ex_load(p), '<') & ex_eq(ex_load(p + 1), '/');

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	for (; end - p >= 2; p++)
		if (p[0] == '<' && p[1] == '/')
			return p;
	return end;
}

/* The first '>', '"' or '\'' in [p, end), or end. */
static const uint8_t *
ex_tag_stop(const uint8_t *p, const uint8_t *end)
{
#ifdef __SSE2__
	for (; end - p >= EX_VEC; p += EX_VEC) {
		__m128i v = ex_load(p);
		unsigned m = ex_eq(v, '>') | ex_eq(v, '"') | ex_eq(v, '\'');

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && *p != '>' && *p != '"' && *p != '\'')
		p++;
	return p;
}

/*
 * Skips the rest of a tag whose attributes do not matter (an end tag's),
 * from p inside it: after its ">", or end (the tag is then dropped, even
 * when its ">" is the last byte: it closes nothing that matters).  A quote opens a value only
 * right after "=" and whitespace, as in html.c's state machine; that
 * distinction is kept with a simpler walk over the bytes before each quote.
 */
static const uint8_t *
ex_skip_tag(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q, *r;

	for (;;) {
		if ((q = ex_tag_stop(p, end)) == end)
			return end;
		if (*q == '>')
			return q + 1;
		for (r = q; r > p && textbytes_html_space(r[-1]); r--)
			;
		if (r > p && r[-1] == '=') {
			if ((q = ex_byte(q + 1, end, (char)*q)) == end)
				return end;
		}
		p = q + 1;
	}
}

/* The end of the comment at p ("<!--"), as html.c reads it. */
static const uint8_t *
ex_comment_end(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *q;

	for (q = p + 2; (q = ex_byte(q, end, '-')) != end; q++) {
		if (end - q < 3 || q[1] != '-')
			continue;
		if (q[2] == '>')
			return q + 3;
		if (end - q >= 4 && q[2] == '!' && q[3] == '>' && q >= p + 4)
			return q + 4;
	}
	return end;
}

/*
 * After the end tag of a raw-text element (name, len bytes, lower case)
 * from p, or end: its name followed by whitespace, "/" or ">".
 */
static const uint8_t *
ex_skip_raw(const uint8_t *p, const uint8_t *end, const uint8_t *name,
    size_t len)
{
	size_t i;

	for (; (p = ex_end_tag(p, end)) != end; p++) {
		if ((size_t)(end - p) < len + 3)
			return end;
		for (i = 0; i < len; i++)
			if (ex_lower(p[2 + i]) != name[i])
				break;
		if (i == len && (p[2 + len] == '>' || p[2 + len] == '/' ||
		    textbytes_html_space(p[2 + len])))
			return ex_skip_tag(p + 2 + len, end);
	}
	return end;
}

/* Grows an array to hold n elements of size sz; 0, or -1 (t->err set). */
static int
ex_grow(struct ex_tree *t, void **a, uint32_t *cap, size_t n, size_t sz)
{
	size_t nc = *cap ? *cap : 256;
	void *na;

	if (n <= *cap)
		return 0;
	while (nc < n)
		nc *= 2;
	if (nc > UINT32_MAX || (na = realloc(*a, nc * sz)) == NULL) {
		t->err = 1;
		return -1;
	}
	*a = na;
	*cap = (uint32_t)nc;
	return 0;
}

/* Room for n more bytes of text; grown by half, to stay near the input. */
static int
ex_text_room(struct ex_tree *t, size_t n)
{
	size_t nc = t->captext + t->captext / 2;
	uint8_t *na;

	if (t->ntext + n <= t->captext)
		return 0;
	if (nc < t->ntext + n)
		nc = t->ntext + n;
	if (nc < 4096)
		nc = 4096;
	if ((na = realloc(t->text, nc)) == NULL) {
		t->err = 1;
		return -1;
	}
	t->text = na;
	t->captext = nc;
	return 0;
}

/* Whether the name n[0..len) (lower case) holds one of ex_body_names. */
static int
ex_has_body_name(const uint8_t *n, size_t len)
{
	size_t i;
	unsigned m, k;

	for (i = 0; i + 8 <= len; i++) {
		if ((unsigned)(n[i] - 'a') >= 26)
			continue;
		for (m = ex_body_first[n[i] - 'a']; m != 0; m &= m - 1) {
			k = (unsigned)__builtin_ctz(m);
			if (ex_body_names[k].len <= len - i &&
			    memcmp(n + i, ex_body_names[k].s,
			    ex_body_names[k].len) == 0)
				return 1;
		}
	}
	return 0;
}

/* Whether the class name n[0..len) (lower case) tells a state. */
static int
ex_is_state(const uint8_t *n, size_t len)
{
	size_t k, pl;

	for (k = 0; k < sizeof(ex_state_prefixes) /
	    sizeof(ex_state_prefixes[0]); k++) {
		pl = ex_state_prefixes[k].len;
		if (len > pl && n[0] == ex_state_prefixes[k].s[0] &&
		    (n[pl] == '-' || n[pl] == '_') &&
		    memcmp(n, ex_state_prefixes[k].s, pl) == 0)
			return 1;
	}
	return 0;
}

/* EX_H_HIDDEN if the class name n[0..len) (lower case) hides. */
static uint16_t
ex_hidden_class(const uint8_t *n, size_t len)
{
	size_t k;

	for (k = 0; k < sizeof(ex_hidden_classes) /
	    sizeof(ex_hidden_classes[0]); k++)
		if (ex_hidden_classes[k].len == len &&
		    memcmp(n, ex_hidden_classes[k].s, len) == 0)
			return EX_H_HIDDEN;
	return 0;
}

/*
 * The hints of ex_pats in the name buf[i0..i1), ws flagging where its
 * words start.
 */
static uint16_t
ex_name_hints(const uint8_t *buf, const uint8_t *ws, const uint8_t *v,
    size_t i0, size_t i1)
{
	uint16_t h = 0;
	size_t i, k, m;

	for (i = i0; i + 1 < i1; i++) {
		unsigned c0 = (unsigned)buf[i] - 'a', c1, c2, x, x3;

		c1 = (unsigned)buf[i + 1] - 'a';
		if (c0 >= 26 || c1 >= 26)
			continue;
		x = c0 * 26 + c1;
		c2 = (unsigned)buf[i + 2] - 'a';
		x3 = x * 26 + c2;
		if (!(c2 < 26 && (ex_pat3[x3 / 8] >> x3 % 8 & 1)) &&
		    !(ex_pat2only[x / 8] >> x % 8 & 1))
			continue;
		for (k = ex_pat2_lo[x]; k < ex_pat2_hi[x]; k++) {
			const struct ex_pat *pt = &ex_pats[k];

			if ((pt->mode != EX_M_ANY && !ws[i]) ||
			    i1 - i < pt->len)
				continue;
			/* A word never spans the halves of a camelCase name. */
			for (m = 2; m < pt->len; m++)
				if (buf[i + m] != (uint8_t)pt->word[m] ||
				    (ws[i + m] && (ex_ctype[v[i + m]] &
				    EX_CT_UPPER)))
					break;
			if (m < pt->len)
				continue;
			if (pt->mode == EX_M_WORD && !ws[i + m] &&
			    (ex_ctype[buf[i + m]] & EX_CT_ALNUM))
				continue;
			h |= pt->hints;
		}
	}
	return h;
}

/*
 * Hints of a class or id value: the words of ex_pats, the body names, the
 * hiding classes.
 */
static uint16_t
ex_class_hints(const uint8_t *v, size_t len, int is_class)
{
	uint8_t buf[EX_HINT_MAX + 1], ws[EX_HINT_MAX + 1];
	uint16_t n0[EX_HINT_MAX / 2 + 1], n1[EX_HINT_MAX / 2 + 1];
	uint8_t sq[EX_HINT_MAX];
	uint16_t h = 0;
	size_t i, j, k, n, nn = 0;
	unsigned prev = 0, ct;

	if (len > EX_HINT_MAX)
		len = EX_HINT_MAX;
	/*
	 * Where words start: after a byte that is no letter or digit, and
	 * at an upper-case letter after a lower-case one ("pageRow" is two
	 * words, and holds no "pager").  And where each whitespace-separated
	 * name starts and ends.
	 */
	for (i = 0; i < len; i++) {
		ct = ex_ctype[v[i]];
		buf[i] = (uint8_t)(v[i] | (ct & EX_CT_UPPER ? 0x20 : 0));
		ws[i] = !(prev & EX_CT_ALNUM) ||
		    ((ct & EX_CT_UPPER) && (prev & EX_CT_LOWER));
		if (!(ct & EX_CT_SPACE) && (i == 0 || (prev & EX_CT_SPACE)))
			n0[nn] = (uint16_t)i;
		else if ((ct & EX_CT_SPACE) && i > 0 && !(prev & EX_CT_SPACE)) {
			n1[nn] = (uint16_t)(i - n0[nn]);
			nn++;
		}
		prev = ct;
	}
	if (len > 0 && !(prev & EX_CT_SPACE)) {
		n1[nn] = (uint16_t)(len - n0[nn]);
		nn++;
	}
	buf[len] = 0;
	ws[len] = 1;
	for (k = j = 0; k < nn; k++) {
		i = n0[k];
		n = n1[k];
		/*
		 * Names of a state ("has-sidebar", "no-comments",
		 * "with-nav") tell what the element's page has, not what the
		 * element is.
		 */
		if (is_class && ex_is_state(buf + i, n))
			continue;
		h |= ex_name_hints(buf, ws, v, i, i + n);
		n0[j] = (uint16_t)i;
		n1[j++] = (uint16_t)n;
		if (is_class && n < 32 && (ex_hidden_lens >> n & 1))
			h |= ex_hidden_class(buf + i, n);
	}
	nn = j;
	/* Every body name holds a content word. */
	for (k = 0; (h & EX_H_POS) && k < nn; k++) {
		if (n1[k] < 8)
			continue;
		for (i = n0[k], n = 0; i < (size_t)n0[k] + n1[k]; i++)
			if (buf[i] != '-' && buf[i] != '_')
				sq[n++] = buf[i];
		if (ex_has_body_name(sq, n))
			h |= EX_H_BODY;
	}
	/*
	 * A body name is specific: the template words inside it are not.
	 * Embeds ("social-embed") are the article's quotes and pictures.
	 */
	if (h & (EX_H_BODY | EX_H_EMBED))
		h &= (uint16_t)~(EX_H_JUNK | EX_H_NEG);
	return h;
}

/* Whether v[0..len) holds word (lower case), in any case. */
static int
ex_contains(const uint8_t *v, size_t len, const char *word)
{
	size_t wl = strlen(word), i, k;

	for (i = 0; i + wl <= len; i++) {
		for (k = 0; k < wl; k++)
			if (ex_lower(v[i + k]) != (uint8_t)word[k])
				break;
		if (k == wl)
			return 1;
	}
	return 0;
}

/*
 * Whether the style v[0..len) sets, at the colon at c, the property prop
 * (pl bytes, lower case) to a value that begins with val (vl bytes).
 */
static int
ex_style_is(const uint8_t *v, size_t len, size_t c, const char *prop,
    size_t pl, const char *val, size_t vl)
{
	size_t i = c, j;

	while (i > 0 && textbytes_html_space(v[i - 1]))
		i--;
	if (i < pl || !ex_contains(v + i - pl, pl, prop))
		return 0;
	for (j = c + 1; j < len && textbytes_html_space(v[j]); j++)
		;
	return len - j >= vl && ex_contains(v + j, vl, val);
}

/*
 * Whether an inline style hides the element: display:none and the like,
 * found from each colon.
 */
static int
ex_style_hidden(const uint8_t *v, size_t len)
{
	const uint8_t *c, *end = v + len;

	for (c = v; (c = ex_byte(c, end, ':')) < end; c++)
		if (ex_style_is(v, len, (size_t)(c - v), "display", 7, "none",
		    4) || ex_style_is(v, len, (size_t)(c - v), "visibility",
		    10, "hidden", 6))
			return 1;
	return 0;
}

/* Whether name[0..nl) is lit (lower case) in any case. */
#define EX_IS(name, nl, lit) ((nl) == sizeof(lit) - 1 && \
	ex_ieq(name, lit, sizeof(lit) - 1))

/* Whether s[0..n) is lit (lower case, n bytes) in any case. */
static inline int
ex_ieq(const uint8_t *s, const char *lit, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ex_lower(s[i]) != (uint8_t)lit[i])
			return 0;
	return 1;
}

/*
 * ex_class_hints through the tree's cache: pages repeat the same few
 * class and id values on every teaser, link and cell, and the cache keeps
 * the last value seen in each slot (a pointer into the page, and the
 * bytes themselves when they are 16 or fewer, compared whole).
 */
static uint16_t
ex_class_hints_cached(struct ex_tree *t, const uint8_t *v, size_t len,
    int is_class)
{
	struct ex_hcache *e;
	uint64_t k[2] = { 0, 0 }, x;
	size_t i;

	/* Hints read no further (ex_class_hints). */
	if (len > EX_HINT_MAX)
		len = EX_HINT_MAX;
	if (len <= 16)
		ex_key16(v, len, (size_t)(t->in_end - v), 0, k);
	else {
		for (i = 0; i + 8 <= len; i += 8) {
			memcpy(&x, v + i, 8);
			k[0] = ((k[0] << 29 | k[0] >> 35) ^ x) *
			    0xff51afd7ed558ccdull;
		}
		x = 0;
		memcpy(&x, v + i, len - i);
		k[1] = x;
	}
	k[1] ^= len * 2 + (size_t)is_class;
	e = &t->hcache[ex_key_slot(k, EX_HCACHE_BITS)];
	k[1] ^= len * 2 + (size_t)is_class;
	if (e->v != NULL && e->len == len && e->is_class == is_class &&
	    (len <= 16 ? e->k[0] == k[0] && e->k[1] == k[1] :
	    memcmp(e->v, v, len) == 0))
		return e->hints;
	e->v = v;
	e->k[0] = k[0];
	e->k[1] = k[1];
	e->len = (uint16_t)len;
	e->is_class = (uint8_t)is_class;
	e->hints = ex_class_hints(v, len, is_class);
	return e->hints;
}

static uint16_t
ex_attr_hints(struct ex_tree *t, uint8_t tag, const uint8_t *name,
    size_t nl, const uint8_t *v, size_t vl)
{
	uint16_t h;
	size_t i;

	switch (name[0] | 0x20) {
	case 'i':
		if (nl == 2 && (name[1] | 0x20) == 'd') {
			h = ex_class_hints_cached(t, v, vl, 0);
			return h & EX_H_HARD ? h | EX_H_PLACE : h;
		}
		if (EX_IS(name, nl, "itemprop")) {
			if (ex_contains(v, vl, "articlebody") ||
			    ex_contains(v, vl, "reviewbody"))
				return EX_H_BODY;
			if (ex_contains(v, vl, "author") ||
			    ex_contains(v, vl, "date"))
				return EX_H_BYLINE;
			if (ex_contains(v, vl, "comment"))
				return EX_H_JUNK | EX_H_NEG | EX_H_HARD;
		}
		break;
	case 'n':
		/* An anchor's name is its id ("#comments" links to it). */
		if (tag == EX_T_A && EX_IS(name, nl, "name")) {
			h = ex_class_hints_cached(t, v, vl, 0);
			return h & EX_H_HARD ? h | EX_H_PLACE : h;
		}
		break;
	case 'r':
		if (!EX_IS(name, nl, "role"))
			break;
		for (i = 0; i < sizeof(ex_junk_roles) /
		    sizeof(ex_junk_roles[0]); i++)
			if (strlen(ex_junk_roles[i]) == vl &&
			    ex_contains(v, vl, ex_junk_roles[i]))
				return EX_H_JUNK | EX_H_NEG;
		for (i = 0; i < sizeof(ex_notice_roles) /
		    sizeof(ex_notice_roles[0]); i++)
			if (strlen(ex_notice_roles[i]) == vl &&
			    ex_contains(v, vl, ex_notice_roles[i]))
				return EX_H_JUNK | EX_H_NEG | EX_H_NOTICE;
		if (vl == 4 && ex_contains(v, vl, "main"))
			return EX_H_POS;
		if (vl == 7 && ex_contains(v, vl, "article"))
			return EX_H_POS;
		break;
	case 'c':
		if (EX_IS(name, nl, "class"))
			return ex_class_hints_cached(t, v, vl, 1);
		break;
	case 's':
		if (EX_IS(name, nl, "style") && ex_style_hidden(v, vl))
			return EX_H_HIDDEN;
		break;
	case 'h':
		if (EX_IS(name, nl, "hidden"))
			return EX_H_HIDDEN;
		break;
	case 'a':
		if (EX_IS(name, nl, "aria-hidden") && vl == 4 &&
		    ex_contains(v, vl, "true"))
			return EX_H_HIDDEN;
		break;
	}
	return 0;
}

/* Bytes that end a tag's name (EX_C_TAG) or an attribute's (EX_C_ATTR). */
#define EX_C_TAG	0x1
#define EX_C_ATTR	0x2
static const uint8_t ex_stops[256] = {
	['\t'] = EX_C_TAG | EX_C_ATTR, ['\n'] = EX_C_TAG | EX_C_ATTR,
	['\f'] = EX_C_TAG | EX_C_ATTR, ['\r'] = EX_C_TAG | EX_C_ATTR,
	[' '] = EX_C_TAG | EX_C_ATTR, ['/'] = EX_C_TAG | EX_C_ATTR,
	['>'] = EX_C_TAG | EX_C_ATTR, ['='] = EX_C_ATTR,
};

/*
 * The first byte in [p, end) that ex_stops flags with bit (EX_C_TAG or
 * EX_C_ATTR), or end.
 */
static inline const uint8_t *
ex_until(const uint8_t *p, const uint8_t *end, uint8_t bit)
{
#ifdef __SSE2__
	for (; end - p >= EX_VEC; p += EX_VEC) {
		__m128i v = ex_load(p);
		unsigned m = ex_ws_mask(v) | ex_eq(v, '/') | ex_eq(v, '>') |
		    (bit == EX_C_ATTR ? ex_eq(v, '=') : 0);

		if (m != 0)
			return p + __builtin_ctz(m);
	}
#endif
	while (p < end && !(ex_stops[*p] & bit))
		p++;
	return p;
}

/*
 * Reads a start tag's attributes from p (after the name) to its ">".
 * Returns the position after it, or NULL when the input ends first; *hints
 * gets what the attributes hint.  Attribute names and values as the WHATWG
 * tokenizer reads them.
 */
static const uint8_t *
ex_attrs(struct ex_tree *t, const uint8_t *p, const uint8_t *end,
    uint8_t tag, uint16_t *hints)
{
	const uint8_t *n0, *v0, *v1, *q;
	uint16_t h = 0, f = ex_tag_flags[tag];
	/*
	 * The hints of an element that is dropped, or that has no node nor
	 * line break (an image, a script), are never read.
	 */
	int want = !t->stack[t->depth - 1].skip &&
	    !(f & (EX_TF_SKIP | EX_TF_RAW)) &&
	    (f & (EX_TF_VOID | EX_TF_BLOCK)) != EX_TF_VOID;

	for (;;) {
		while (p < end && (textbytes_html_space(*p) || *p == '/'))
			p++;
		if (p >= end)
			return NULL;
		if (*p == '>')
			break;
		n0 = p;
		p = ex_until(p + 1, end, EX_C_ATTR);
		v0 = v1 = q = p;
		while (q < end && textbytes_html_space(*q))
			q++;
		if (q < end && *q == '=') {
			for (q++; q < end && textbytes_html_space(*q); q++)
				;
			if (q >= end)
				return NULL;
			if (*q == '"' || *q == '\'') {
				v0 = q + 1;
				if ((v1 = ex_byte(v0, end, (char)*q)) == end)
					return NULL;
				q = v1 + 1;
			} else {
				v0 = q;
				while (q < end && !textbytes_html_space(*q) && *q != '>')
					q++;
				v1 = q;
			}
		}
		if (want && p - n0 >= 2 && p - n0 <= 11)
			h |= ex_attr_hints(t, tag, n0, (size_t)(p - n0), v0,
			    (size_t)(v1 - v0));
		p = q;
	}
	*hints = h;
	return p + 1;
}

static inline int
ex_above(uint32_t x, uint32_t y)
{
	return x != EX_NONE && (y == EX_NONE || x > y);
}

static uint32_t
ex_top2(uint32_t x, uint32_t y)
{
	if (x == EX_NONE)
		return y;
	if (y == EX_NONE)
		return x;
	return x > y ? x : y;
}

/* Closes the open element at stack index i and every one above it. */
static void
ex_pop_to(struct ex_tree *t, uint32_t i)
{
	while (t->depth > i) {
		struct ex_open *e = &t->stack[--t->depth];
		uint16_t f = ex_tag_flags[e->tag];

		t->head[e->tag] = e->prev_same;
		if (f & EX_TF_SCOPE)
			t->scope = e->prev_scope;
		if (e->node != t->stack[t->depth - 1].node) {
			t->nodes[e->node].end = t->nnodes;
			t->nodes[e->node].seg1 = t->nsegs;
		}
		if (e->skip)
			continue;
		/* What follows reads as if the hidden element were not there. */
		if (e->hidden && !t->stack[t->depth - 1].hidden) {
			t->pend = e->pend;
			continue;
		}
		if (f & EX_TF_BLOCK)
			t->pend |= EX_S_BREAK;
		else if (e->tag == EX_T_A)
			t->pend |= EX_S_SPACE;
	}
}

/* Opens an element. */
static void
ex_push(struct ex_tree *t, uint8_t tag, uint16_t hints)
{
	struct ex_open *top = &t->stack[t->depth - 1], *e;
	uint16_t f = ex_tag_flags[tag];
	struct ex_node *nd;
	uint32_t node = top->node;
	int skip = top->skip || (f & EX_TF_SKIP);
	int hidden = top->hidden || (hints & EX_H_HIDDEN);

	if (t->depth >= EX_MAX_DEPTH)
		return;
	if (ex_grow(t, (void **)&t->stack, &t->capstack, t->depth + 1,
	    sizeof(*t->stack)) == -1)
		return;
	top = &t->stack[t->depth - 1];
	if (!skip && t->nnodes < t->maxnodes) {
		if (ex_grow(t, (void **)&t->nodes, &t->capnodes, t->nnodes + 1,
		    sizeof(*t->nodes)) == -1)
			return;
		node = t->nnodes++;
		nd = &t->nodes[node];
		memset(nd, 0, sizeof(*nd));
		nd->parent = top->node;
		nd->seg0 = t->nsegs;
		nd->tag = tag;
		nd->hints = hints;
		if (tag == EX_T_FORM)
			nd->flags |= EX_N_FORM;
		nd->np = tag == EX_T_P;
		nd->nli = tag == EX_T_LI;
		if (top->link || tag == EX_T_A)
			nd->flags |= EX_N_LINK;
		if (hidden)
			nd->flags |= EX_N_HIDDEN;
		if ((f & EX_TF_BLOCK) && hidden == top->hidden)
			t->nodes[top->node].flags |= EX_N_BLOCKKID;
	}
	e = &t->stack[t->depth];
	e->node = node;
	e->tag = tag;
	e->skip = (uint8_t)skip;
	e->link = top->link || tag == EX_T_A;
	e->hidden = (uint8_t)hidden;
	e->pend = (uint8_t)t->pend;
	/* A hidden block's text is a line of its own, should it be shown. */
	if (hidden && !top->hidden && !skip && (f & EX_TF_BLOCK))
		t->pend |= EX_S_BREAK;
	e->prev_same = t->head[tag];
	t->head[tag] = t->depth;
	if (f & EX_TF_SCOPE) {
		e->prev_scope = t->scope;
		t->scope = t->depth;
	}
	t->depth++;
}

/* The implied end tags a start tag brings. */
static void
ex_implied(struct ex_tree *t, uint8_t tag, uint16_t f)
{
	uint32_t *h = t->head, x;

	if (h[EX_T_HEAD] != EX_NONE && tag != EX_T_TITLE &&
	    tag != EX_T_META && tag != EX_T_LINK && tag != EX_T_STYLE &&
	    tag != EX_T_SCRIPT && tag != EX_T_BASE && tag != EX_T_NOSCRIPT &&
	    tag != EX_T_TEMPLATE)
		ex_pop_to(t, h[EX_T_HEAD]);
	if ((f & EX_TF_CLOSEP) && ex_above(h[EX_T_P], t->scope))
		ex_pop_to(t, h[EX_T_P]);
	switch (tag) {
	case EX_T_LI:
		x = ex_top2(ex_top2(h[EX_T_UL], h[EX_T_OL]), t->scope);
		if (ex_above(h[EX_T_LI], x))
			ex_pop_to(t, h[EX_T_LI]);
		break;
	case EX_T_DD:
	case EX_T_DT:
		x = ex_top2(h[EX_T_DD], h[EX_T_DT]);
		if (ex_above(x, ex_top2(h[EX_T_DL], t->scope)))
			ex_pop_to(t, x);
		break;
	case EX_T_TR:
		if (ex_above(h[EX_T_TR], h[EX_T_TABLE]))
			ex_pop_to(t, h[EX_T_TR]);
		break;
	case EX_T_TD:
	case EX_T_TH:
		x = ex_top2(h[EX_T_TD], h[EX_T_TH]);
		if (ex_above(x, ex_top2(h[EX_T_TR], h[EX_T_TABLE])))
			ex_pop_to(t, x);
		break;
	case EX_T_TBODY:
	case EX_T_THEAD:
	case EX_T_TFOOT:
		x = ex_top2(ex_top2(h[EX_T_TBODY], h[EX_T_THEAD]),
		    h[EX_T_TFOOT]);
		if (ex_above(x, h[EX_T_TABLE]))
			ex_pop_to(t, x);
		break;
	case EX_T_A:
		if (ex_above(h[EX_T_A], t->scope))
			ex_pop_to(t, h[EX_T_A]);
		break;
	case EX_T_OPTION:
		if (ex_above(h[EX_T_OPTION], t->scope))
			ex_pop_to(t, h[EX_T_OPTION]);
		break;
	default:
		if ((f & EX_TF_HEADING) && t->depth > 1 &&
		    (ex_tag_flags[t->stack[t->depth - 1].tag] & EX_TF_HEADING))
			ex_pop_to(t, t->depth - 1);
		break;
	}
}

static void
ex_start_tag(struct ex_tree *t, uint8_t tag, uint16_t hints)
{
	uint16_t f = ex_tag_flags[tag];

	switch (tag) {
	case EX_T_HTML:
		if (t->head[EX_T_HTML] != EX_NONE)
			return;
		break;
	case EX_T_HEAD:
		if (t->head[EX_T_HEAD] != EX_NONE ||
		    t->head[EX_T_BODY] != EX_NONE)
			return;
		break;
	case EX_T_BODY:
		if (t->head[EX_T_HEAD] != EX_NONE)
			ex_pop_to(t, t->head[EX_T_HEAD]);
		if (t->head[EX_T_BODY] != EX_NONE)
			return;
		break;
	case EX_T_IMG:
		if (!t->stack[t->depth - 1].skip)
			t->nodes[t->stack[t->depth - 1].node].nimg++;
		break;
	case EX_T_INPUT:
		if (!t->stack[t->depth - 1].skip)
			t->nodes[t->stack[t->depth - 1].node].flags |=
			    EX_N_FORM;
		break;
	}
	ex_implied(t, tag, f);
	/*
	 * What is not shown makes no line break nor space.  A link's text
	 * is a term of its own even where the script writes no spaces, as in
	 * Chinese or Japanese.
	 */
	if (!t->stack[t->depth - 1].skip && !(f & EX_TF_SKIP) &&
	    !(hints & EX_H_HIDDEN)) {
		if (f & EX_TF_BLOCK)
			t->pend |= EX_S_BREAK;
		else if (tag == EX_T_A)
			t->pend |= EX_S_SPACE;
	}
	if (!(f & EX_TF_VOID))
		ex_push(t, tag, hints);
}

static void
ex_end(struct ex_tree *t, uint8_t tag)
{
	uint16_t f = ex_tag_flags[tag];
	uint32_t x = t->head[tag];

	switch (tag) {
	case EX_T_BR:
		t->pend |= EX_S_BREAK;
		return;
	case EX_T_BODY:
	case EX_T_HTML:
		return;
	case EX_T_P:
		if (x == EX_NONE) {
			t->pend |= EX_S_BREAK;
			return;
		}
		break;
	}
	if (x == EX_NONE)
		return;
	if (f & EX_TF_TABLE) {
		if (tag != EX_T_TABLE && !ex_above(x, t->head[EX_T_TABLE]))
			return;
	} else if (t->scope != EX_NONE && x < t->scope)
		return;
	ex_pop_to(t, x);
}

/* a + b, at most 65535. */
static uint16_t
ex_add16(uint32_t a, uint32_t b)
{
	return (uint16_t)(a + b < 0xffff ? a + b : 0xffff);
}

/*
 * The first byte of [p, q) that is not whitespace, or q; bytes up to end
 * (past q) may be read.
 */
static const uint8_t *
ex_skip_space(const uint8_t *p, const uint8_t *q, const uint8_t *end)
{
#ifdef __SSE2__
	while (q - p > 0 && end - p >= EX_VEC) {
		unsigned m = ~ex_ws_mask(ex_load(p)) & 0xffff;

		if (m != 0)
			return p + __builtin_ctz(m) < q ? p + __builtin_ctz(m) : q;
		p += EX_VEC;
	}
#endif
	while (p < q && textbytes_html_space(*p))
		p++;
	return p < q ? p : q;
}

/*
 * The state of ex_squash: where the output goes, where it began, whether
 * whitespace is due before the next character, and the commas written.
 */
struct ex_squash {
	uint8_t *o;
	uint8_t *start;
	int sp;
	uint32_t commas;
};

/*
 * Squashes the character at p (before q), or the reference it begins,
 * into x; returns the position after it.
 */
static const uint8_t *
ex_squash_char(struct ex_squash *x, const uint8_t *p, const uint8_t *q)
{
	uint8_t c = *p, dec[8];
	size_t n, dl;

	if (textbytes_html_space(c)) {
		x->sp = 1;
		return p + 1;
	}
	if (c == '&' && (n = html_charref(p, q, dec, &dl)) != 0) {
		/* &nbsp;, &NewLine; and the like are whitespace. */
		if ((dl == 1 && textbytes_html_space(dec[0])) || (dl == 2 &&
		    dec[0] == 0xc2 && dec[1] == 0xa0)) {
			x->sp = 1;
			return p + n;
		}
		if (x->sp && x->o > x->start && x->o[-1] != ' ')
			*x->o++ = ' ';
		x->sp = 0;
		memcpy(x->o, dec, dl);
		x->o += dl;
		x->commas += dl == 1 && dec[0] == ',';
		return p + n;
	}
	if (x->sp && x->o > x->start && x->o[-1] != ' ')
		*x->o++ = ' ';
	x->sp = 0;
	*x->o++ = c;
	x->commas += c == ',';
	return p + 1;
}

/*
 * Squashes the text p[0..q) into x: references decoded, each run of
 * whitespace one SPACE, due (x->sp) until a character follows.  Bytes up
 * to end (past q) may be read.
 */
static void
ex_squash(struct ex_squash *x, const uint8_t *p, const uint8_t *q,
    const uint8_t *end)
{
#ifdef __SSE2__
	/*
	 * Prose, 16 bytes at a time: up to a reference, a control byte or
	 * two spaces in a row, and short of a space at its end, the text is
	 * its own output.
	 */
	while (q - p > 0 && end - p >= EX_VEC) {
		__m128i v = ex_load(p);
		unsigned nv = q - p < EX_VEC ? (unsigned)(q - p) : EX_VEC;
		unsigned valid = (1u << nv) - 1, sm, bad, k;

		sm = ex_eq(v, ' ') & valid;
		k = (unsigned)__builtin_ctz((~ex_ws_mask(v) & valid) |
		    (1u << nv));
		if (k > 0) {
			x->sp = 1;
			p += k;
			continue;
		}
		bad = (ex_eq(v, '&') | (sm & sm >> 1) |
		    (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v,
		    _mm_set1_epi8(0x1f)), v))) & valid;
		k = (unsigned)__builtin_ctz(bad | (1u << nv));
		if (k > 0 && (sm >> (k - 1) & 1))
			k--;
		if (k == 0) {
			p = ex_squash_char(x, p, q);
			continue;
		}
		if (x->sp && x->o > x->start && x->o[-1] != ' ')
			*x->o++ = ' ';
		x->sp = 0;
		_mm_storeu_si128((__m128i *)x->o, v);
		x->o += k;
		p += k;
		for (bad = ex_eq(v, ',') & ((1u << k) - 1); bad != 0;
		    bad &= bad - 1)
			x->commas++;
	}
#endif
	while (p < q)
		p = ex_squash_char(x, p, q);
}

/* Whether text in the open element is dropped (ex_text). */
static inline int
ex_text_dropped(const struct ex_tree *t)
{
	const struct ex_open *top = &t->stack[t->depth - 1];

	/* Past the node budget, a hidden element has no node of its own. */
	return top->skip || (top->hidden &&
	    !(t->nodes[top->node].flags & EX_N_HIDDEN));
}

/* Appends whitespace (and nothing else) to the tree, as ex_text does. */
static inline void
ex_space_run(struct ex_tree *t)
{
	if (!ex_text_dropped(t))
		t->pend |= EX_S_SPACE;
}

/* Appends the text p[0..q) (no markup in it) to the tree. */
static void
ex_text(struct ex_tree *t, const uint8_t *p, const uint8_t *q)
{
	struct ex_open *top = &t->stack[t->depth - 1];
	struct ex_squash x;
	struct ex_seg *last;
	struct ex_node *nd;
	const uint8_t *r;
	uint32_t commas, node, merge;
	uint8_t *o, *start;
	size_t n;

	if (ex_text_dropped(t))
		return;
	/* Leading whitespace separates this text from what came before
	 * ("<b>a</b> b" is two words), as trailing whitespace does. */
	if ((r = ex_skip_space(p, q, t->in_end)) > p)
		t->pend |= EX_S_SPACE;
	if ((p = r) == q)
		return;
	if (t->head[EX_T_HEAD] != EX_NONE) {
		ex_pop_to(t, t->head[EX_T_HEAD]);
		top = &t->stack[t->depth - 1];
	}
	/*
	 * A reference gives at most 6 bytes for 5 ("&nGt;"), and a merged
	 * run one SPACE more; 16 bytes are stored at a time.
	 */
	if (ex_text_room(t, (size_t)(q - p) + (size_t)(q - p) / 4 + 32) == -1)
		return;
	node = top->node;
	last = t->nsegs > 0 ? &t->segs[t->nsegs - 1] : NULL;
	merge = last != NULL && last->node == node &&
	    !(t->pend & EX_S_BREAK) && last->off + last->len == t->ntext &&
	    (last->flags & EX_S_LINK) == (top->link ? EX_S_LINK : 0u) &&
	    last->len < (1u << 30);
	x.start = x.o = t->text + t->ntext;
	x.sp = 0;
	x.commas = 0;
	if (merge && (t->pend & EX_S_SPACE))
		*x.o++ = ' ';
	ex_squash(&x, p, q, t->in_end);
	start = x.start;
	o = x.o;
	commas = x.commas;
	/* Only &nbsp; and the like: whitespace. */
	if (o == start || (o == start + 1 && *start == ' ')) {
		t->pend |= EX_S_SPACE;
		return;
	}
	n = (size_t)(o - start);
	if (merge) {
		last->len += (uint32_t)n;
	} else {
		if (ex_grow(t, (void **)&t->segs, &t->capsegs, t->nsegs + 1,
		    sizeof(*t->segs)) == -1)
			return;
		last = &t->segs[t->nsegs++];
		last->node = node;
		last->off = (uint32_t)t->ntext;
		last->len = (uint32_t)n;
		last->flags = (t->pend & (EX_S_BREAK | EX_S_SPACE)) |
		    (top->link ? EX_S_LINK : 0u) |
		    (top->hidden ? EX_S_HIDDEN : 0u);
		if (last->flags & EX_S_BREAK) {
			t->nodes[node].nline = ex_add16(t->nodes[node].nline, 1);
			t->nodes[node].pline = ex_add16(t->nodes[node].pline, 1);
		}
	}
	t->ntext += n;
	t->pend = x.sp ? EX_S_SPACE : 0;
	nd = &t->nodes[node];
	nd->text += (uint32_t)n;
	nd->ptext += (uint32_t)n;
	if (top->link)
		nd->link += (uint32_t)n;
	nd->commas += commas;
	nd->pcommas = ex_add16(nd->pcommas, commas);
}

/*
 * The markup at p (p[0] == '<'): handles it and returns the position after
 * it, or NULL when this "<" is text.
 */
static const uint8_t *
ex_markup(struct ex_tree *t, const uint8_t *p, const uint8_t *end)
{
	const uint8_t *name, *q;
	uint16_t hints = 0;
	uint8_t tag;

	if (end - p < 2)
		return NULL;
	if (textbytes_alpha(p[1])) {
		name = q = p + 1;
		q = ex_until(q, end, EX_C_TAG);
		tag = ex_tag_lookup(name, (size_t)(q - name),
		    (size_t)(end - name));
		if ((q = ex_attrs(t, q, end, tag, &hints)) == NULL)
			return end;
		if (ex_tag_flags[tag] & EX_TF_RAW) {
			const uint8_t *r;

			if (tag == EX_T_PLAINTEXT)
				return end;
			r = ex_skip_raw(q, end, (const uint8_t *)
			    ex_tag_name[tag], strlen(ex_tag_name[tag]));
			if (tag == EX_T_TITLE && r != end && !t->has_title &&
			    !t->stack[t->depth - 1].skip) {
				t->has_title = 1;
				t->ntitle = (uint32_t)ex_squeeze(q,
				    (size_t)(ex_end_tag(q, r) - q), t->title,
				    sizeof(t->title));
				if (t->ntitle > sizeof(t->title))
					t->ntitle = 0;
			}
			/*
			 * A title (or the like) left open would hide the whole
			 * page, as browsers read it; pages cut and pasted by
			 * tools lose such end tags, and their readers saw the
			 * page: only a script or a style runs to the end.
			 */
			if (r == end && tag != EX_T_SCRIPT && tag != EX_T_STYLE)
				return q;
			return r;
		}
		ex_start_tag(t, tag, hints);
		return q;
	}
	if (p[1] == '/') {
		if (end - p >= 3 && textbytes_alpha(p[2])) {
			name = q = p + 2;
			q = ex_until(q, end, EX_C_TAG);
			tag = ex_tag_lookup(name, (size_t)(q - name),
			    (size_t)(end - name));
			if ((q = ex_skip_tag(q, end)) == end)
				return end;
			if (tag == EX_T_BR)
				ex_start_tag(t, tag, 0);
			else
				ex_end(t, tag);
			return q;
		}
	} else if (p[1] == '!') {
		if (end - p >= 4 && p[2] == '-' && p[3] == '-')
			return ex_comment_end(p, end);
	} else if (p[1] != '?')
		return NULL;
	q = ex_byte(p + 1, end, '>');
	return q == end ? end : q + 1;
}

void
ex_tree_free(struct ex_tree *t)
{
	free(t->nodes);
	free(t->segs);
	free(t->text);
	free(t->stack);
	memset(t, 0, sizeof(*t));
}

int
ex_tree_build(struct ex_tree *t, const uint8_t *html, size_t len)
{
	const uint8_t *p = html, *end, *q;
	struct ex_node *nd;
	uint32_t i;
	size_t k;

	pthread_once(&ex_once, ex_init);
	if (len > EXTRACT_MAX_INPUT)
		len = EXTRACT_MAX_INPUT;
	end = html + len;
	t->in_end = end;
	t->err = 0;
	t->nnodes = t->nsegs = t->depth = 0;
	t->ntext = 0;
	t->pend = 0;
	t->has_title = 0;
	t->ntitle = 0;
	t->maxnodes = len / 16 + 256 < EXTRACT_MAX_NODES ?
	    (uint32_t)(len / 16 + 256) : EXTRACT_MAX_NODES;
	for (k = 0; k < 256; k++)
		t->head[k] = EX_NONE;
	t->scope = EX_NONE;
	memset(t->hcache, 0, sizeof(t->hcache));
	if (ex_grow(t, (void **)&t->nodes, &t->capnodes, 1,
	    sizeof(*t->nodes)) == -1 || ex_grow(t, (void **)&t->stack,
	    &t->capstack, 1, sizeof(*t->stack)) == -1 ||
	    ex_text_room(t, 16) == -1)
		return -1;
	memset(&t->nodes[0], 0, sizeof(t->nodes[0]));
	t->nodes[0].parent = EX_NONE;
	t->nnodes = 1;
	memset(&t->stack[0], 0, sizeof(t->stack[0]));
	t->stack[0].prev_same = t->stack[0].prev_scope = EX_NONE;
	t->depth = 1;

	while (p < end && !t->err) {
		q = ex_byte(p, end, '<');
		/* Most runs between tags are whitespace: a SPACE due. */
		if (q > p && ex_skip_space(p, q, end) == q)
			ex_space_run(t);
		else if (q > p)
			ex_text(t, p, q);
		if (q == end)
			break;
		if ((p = ex_markup(t, q, end)) == NULL) {
			ex_text(t, q, q + 1);
			p = q + 1;
		}
	}
	if (t->err)
		return -1;
	ex_pop_to(t, 1);
	nd = &t->nodes[0];
	nd->end = t->nnodes;
	nd->seg0 = 0;
	nd->seg1 = t->nsegs;
	/* Subtree sums, children before parents. */
	for (i = t->nnodes - 1; i > 0; i--) {
		struct ex_node *c = &t->nodes[i];

		nd = &t->nodes[c->parent];
		/* A hidden element counts for nothing in what holds it. */
		if ((c->flags & EX_N_HIDDEN) && !(nd->flags & EX_N_HIDDEN))
			continue;
		/* An inline child's runs are its parent's own. */
		if (!(ex_tag_flags[c->tag] & EX_TF_BLOCK)) {
			nd->ptext += c->ptext;
			nd->pcommas = ex_add16(nd->pcommas, c->pcommas);
			nd->pline = ex_add16(nd->pline, c->pline);
		}
		nd->text += c->text;
		nd->link += c->link;
		nd->commas += c->commas;
		nd->np = (uint16_t)(nd->np + c->np < 0xffff ?
		    nd->np + c->np : 0xffff);
		nd->nli = (uint16_t)(nd->nli + c->nli < 0xffff ?
		    nd->nli + c->nli : 0xffff);
		nd->nimg = (uint16_t)(nd->nimg + c->nimg < 0xffff ?
		    nd->nimg + c->nimg : 0xffff);
		nd->nline = ex_add16(nd->nline, c->nline);
		nd->flags |= c->flags & EX_N_FORM;
	}
	return 0;
}
