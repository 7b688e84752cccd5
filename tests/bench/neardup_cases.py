#!/usr/bin/python3
"""Labelled near-duplicate cases for nddd, built from the shared test data.

    PYTHONPATH=clients/python tests/bench/neardup_cases.py \\
        [--data DIR] [--seed N] [--size N] [--html-size N] [--dump DIR]

Everything is derived deterministically from DIR (default: $NDDD_TEST_DATA,
or ../shared/data beside the source tree) and the seed (default 1).  Three
stores come out, each meant for a fresh daemon (or a peer index) of its own:

text    SIZE (default 600) Reuters-21578 bodies stored, and for each one
        one query per kind:
          exact      the same text;
          cut        its first 60-80% of sentences (fraction uniform in
                     [0.6, 0.8], at least one sentence dropped);
          replaced   6% of its words (random positions) replaced by words
                     drawn from the corpus vocabulary;
          framed     the body between about 70 words (60-80) of real site
                     boilerplate, 40-70% of it before, the rest after;
          reordered  two sentences swapped and a third dropped;
          mixed      cut to 80% of its sentences, 4% of its words replaced,
                     and framed;
        plus SIZE held_out queries: other bodies, never stored, which must
        find nothing.
html    HTML_SIZE (default SIZE * 160 / 600, 160) pages stored, each the
        template of an L3S-GN1 page P_i with a Reuters article X_i in it;
        queries per kind:
          other_site  X_i inside the template of a page Q_i of another
                      site: it must find P_i + X_i;
          same_site   another article Y_i inside P_i's template: finding
                      P_i + X_i is a false answer.
clough  the 5 Wikipedia originals of the Clough-Stevenson short-answer
        corpus stored, its 95 answers as queries (kinds clough_cut,
        clough_light, clough_heavy, clough_non), each aimed at its task's
        original.

Rules, exactly:

* Words are re.findall(r"\\w+", text.lower()); a document's shingles are the
  set of its runs of 5 consecutive words (a text of fewer words: one
  shingle of all of them); resemblance is the Jaccard of two such sets.
* Reuters bodies: the <BODY> elements of reut2-*.sgm with their <TITLE>;
  SGML entities decoded (&lt; &amp; &#3; ...), control characters and the
  closing "Reuter" signature removed, whitespace normalised to single
  spaces (the text cases use that text; the HTML cases keep the body's
  indented lines as paragraph breaks).  A body is eligible with a title,
  150+ words and 5+ sentences (so that every kind changes something).
  Eligible bodies are shuffled with the seed and picked greedily: a body is
  skipped when its normalised text equals, or its shingles have Jaccard
  >= 0.2 with, one already picked (Reuters has ~560 bodies in exact
  duplicate groups and more near ones).  The picks, in order, are the
  stored bodies, the held-out bodies, then the HTML articles X_i and Y_i:
  no two bodies of any store or query are near copies of each other.
* Sentences: a split after ".", "?" or "!" (and an optional closing quote)
  followed by whitespace and an upper-case letter or an opening quote,
  except after an abbreviation: a word of single letters with dots
  ("U.S.", "J.") or one of ABBREVIATIONS ("Mr.", "Inc.", "Corp.", "Jan.").
* Word replacement: among the whitespace-separated tokens that hold a word
  character, round(share * count) at random positions (at least one) get
  their first run of word characters replaced by a different word drawn
  uniformly from the corpus vocabulary (the distinct lower-case
  alphabetic words of 3+ letters of the eligible bodies).
* Boilerplate for framing: the text of the L3S-GN1 annotated pages' blocks
  labelled boilerplate (x-nc-sel0), word tokens only, from pages with at
  least 100 such words (the first SIZE / 5, at least 20, of them in an
  order shuffled with the seed); per case a random one of these pages, the
  head taken from a random place in the first half of that page's
  boilerplate and the tail from its second half.
* Page templates (L3S-GN1 annotated pages): each text block's label is that
  of its nearest <span class="x-nc-selN"> (N = 0 boilerplate, 1 headline,
  2 full text, 3 supplemental, 4 related, 5 comments; none: not content).
  The text of blocks labelled 1, 2 and 3 is removed; the new article goes
  where the first full-text block was, as <p> paragraphs (moved out of any
  enclosing inline or <p> element, and out of a table row, so that the
  markup stays valid), its headline where the first headline block was
  (or as an <h1> before the article when the page has none), and in the
  page's <title> in place of the old headline (the whole title when it
  does not hold the old headline: the title names the article); then every
  x-nc span is unwrapped (its content kept), the injected x-nc <style>
  block dropped and the x-nc-* classes removed, so that the markup is the
  original page's.  (The annotator's spans inside <title>, <textarea> and
  <noscript> are text, not markup: those span tags are deleted, their text
  kept.)  Pages without full-text blocks are skipped.
* Sites: the pages carry no URL, and only 32 of the 621 originals a <base
  href>.  Pages are shuffled with the seed and picked greedily, one per
  site: a page is skipped when its <base href> host (in the original page)
  is that of a picked page, or when its template text (all text but that
  of labels 1-3) has shingle Jaccard >= 0.2 with a picked page's template
  (pages of one site share their navigation and footers; this groups the
  621 pages into about 390 sites, the dataset says 408).  The first
  HTML_SIZE picks are the P_i, the next HTML_SIZE the Q_i: every P and Q
  is of a different site.
* Ground truth: every stored document and query carries the text it was
  made from (for pages: the inserted article's headline and body; for
  text: the text itself, frame included), on which false neighbours are
  judged.
"""

import argparse
import collections
import glob
import html
import json
import os
import random
import re
import sys
from dataclasses import dataclass, field

import lxml.etree
import lxml.html

#: The source tree (three levels up from this file).
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

TEXT_KINDS = ("exact", "cut", "replaced", "framed", "reordered", "mixed")
HTML_KINDS = ("other_site", "same_site")
CLOUGH_KINDS = ("clough_cut", "clough_light", "clough_heavy", "clough_non")

#: Resemblance at or above which two texts count as near copies.
NEAR_JACCARD = 0.2
SHINGLE = 5
MIN_WORDS = 150
MIN_SENTENCES = 5
#: Sizes of the issue: 600 stored bodies, 160 cases per HTML kind.
DEFAULT_SIZE = 600
HTML_PER_SIZE = 160 / 600
MIN_FRAME_SOURCE = 100
#: Pages the frames are drawn from: size / 5, at least this many.
MIN_FRAME_PAGES = 20

ABBREVIATIONS = frozenset("""
    Mr. Mrs. Ms. Dr. Prof. Sen. Rep. Gov. Gen. Col. Lt. Sgt. Capt. Adm.
    St. Jr. Sr. Inc. Corp. Co. Cos. Ltd. Bros. Dept. Mt. Ave. No. Nos.
    vs. etc. approx. Jan. Feb. Mar. Apr. Jun. Jul. Aug. Sep. Sept. Oct.
    Nov. Dec.""".split())


def data_root(given=None):
    """The shared data folder: given, $NDDD_TEST_DATA, or ../shared/data
    beside the source tree."""
    return given or os.environ.get("NDDD_TEST_DATA") or os.path.join(
        ROOT, "..", "shared", "data")


# --- Text measures -------------------------------------------------------

def words(text):
    return re.findall(r"\w+", text.lower())


def shingles(text):
    """The set of 5-word shingles of text (one of all its words when it has
    fewer; none when it has none)."""
    w = words(text)
    if len(w) < SHINGLE:
        return {" ".join(w)} if w else set()
    return {" ".join(w[i:i + SHINGLE]) for i in range(len(w) - SHINGLE + 1)}


def jaccard(a, b):
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def normalise(text):
    return " ".join(text.split())


def as_str(raw):
    """raw as str: UTF-8, else Windows-1252, else Latin-1 (which always
    decodes)."""
    for enc in ("utf-8", "cp1252"):
        try:
            return raw.decode(enc)
        except UnicodeDecodeError:
            pass
    return raw.decode("latin-1")


_SENTENCE_END = re.compile(r"""[.?!]["']?\s+(?=["'A-Z])""")


def sentences(text):
    """text (whitespace-normalised) cut into sentences by the rule of the
    module docstring."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        last = text[start:m.start() + 1].rsplit(None, 1)[-1]
        if text[m.start()] == "." and (
                last in ABBREVIATIONS or re.fullmatch(r"(?:[A-Za-z]\.)+",
                                                      last)):
            continue
        out.append(text[start:m.end()].strip())
        start = m.end()
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


class NearSet:
    """Shingle sets picked so far, with an index to find those that a new
    set resembles."""

    def __init__(self):
        self.sets = []
        self.index = collections.defaultdict(list)

    def resembles(self, s, threshold=NEAR_JACCARD):
        """Whether s has Jaccard >= threshold with a set already added."""
        common = collections.Counter()
        for sh in s:
            for j in self.index.get(sh, ()):
                common[j] += 1
        return any(c / (len(s) + len(self.sets[j]) - c) >= threshold
                   for j, c in common.items())

    def add(self, s):
        for sh in s:
            self.index[sh].append(len(self.sets))
        self.sets.append(s)


# --- Reuters -------------------------------------------------------------

@dataclass
class Body:
    newid: str
    title: str
    raw: str            # the cleaned body with its own line breaks
    text: str           # the same, whitespace-normalised
    nwords: int
    sentences: list     # empty for bodies too short to be eligible

    def paragraphs(self):
        return _paragraphs(self.raw, self.sentences)


def _clean(raw):
    """An SGML body or title as plain text: entities decoded, control
    characters (&#3; ends every body) dropped, the "Reuter" signature
    removed."""
    text = html.unescape(raw)
    text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", " ", text)
    return re.sub(r"\s+reuter\s*$", "", text, flags=re.I)


def _paragraphs(raw_text, sents):
    """Paragraphs of a body: Reuters indents the first line of each one;
    a body without indented lines is cut every 3 sentences."""
    paras, cur = [], []
    for line in raw_text.split("\n"):
        if re.match(r"\s", line) and cur:
            paras.append(normalise(" ".join(cur)))
            cur = []
        cur.append(line)
    paras.append(normalise(" ".join(cur)))
    paras = [p for p in paras if p]
    if len(paras) < 2:
        paras = [" ".join(sents[i:i + 3]) for i in range(0, len(sents), 3)]
    return paras


def reuters_bodies(root):
    """Every Reuters-21578 document with a BODY, as Body, in file order."""
    folder = os.path.join(root, "text_corpora", "reuters21578")
    out = []
    for path in sorted(glob.glob(os.path.join(folder, "reut2-*.sgm"))):
        with open(path, "rb") as f:
            data = as_str(f.read())
        for doc in re.finditer(r'<REUTERS[^>]*NEWID="(\d+)"[^>]*>(.*?)'
                               r'</REUTERS>', data, re.S):
            body = re.search(r"<BODY>(.*?)</BODY>", doc.group(2), re.S)
            if body is None:
                continue
            title = re.search(r"<TITLE>(.*?)</TITLE>", doc.group(2), re.S)
            raw = _clean(body.group(1))
            text = normalise(raw)
            nwords = len(words(text))
            out.append(Body(doc.group(1),
                            normalise(_clean(title.group(1))) if title
                            else "", raw, text, nwords,
                            sentences(text) if nwords >= MIN_WORDS else []))
    if not out:
        sys.exit("neardup_cases: no Reuters bodies in %s" % folder)
    return out


def pick_bodies(bodies, count, rng):
    """count eligible bodies, shuffled by rng, none a near copy of another
    (module docstring)."""
    eligible = [b for b in bodies if b.title and b.nwords >= MIN_WORDS
                and len(b.sentences) >= MIN_SENTENCES]
    rng.shuffle(eligible)
    picked, seen, near = [], set(), NearSet()
    for b in eligible:
        if len(picked) == count:
            break
        s = shingles(b.text)
        if b.text in seen or near.resembles(s):
            continue
        seen.add(b.text)
        near.add(s)
        picked.append(b)
    if len(picked) < count:
        sys.exit("neardup_cases: only %d distinct eligible bodies, %d "
                 "wanted" % (len(picked), count))
    return picked, len(eligible)


def vocabulary(bodies):
    """The replacement words: distinct lower-case alphabetic words of 3+
    letters of the bodies, sorted (so that the draw is deterministic)."""
    vocab = set()
    for b in bodies:
        vocab.update(w for w in re.findall(r"[a-z]{3,}", b.text.lower()))
    return sorted(vocab)


# --- Edits of a text -----------------------------------------------------

def cut(sents, fraction):
    """The first round(fraction * n) sentences, at least one, and at least
    one fewer than all."""
    keep = min(max(1, round(fraction * len(sents))), len(sents) - 1)
    return sents[:keep]


def replace_words(text, share, vocab, rng):
    """text with round(share * n) of its n word tokens replaced."""
    tokens = text.split(" ")
    slots = [i for i, t in enumerate(tokens) if re.search(r"\w", t)]
    for i in rng.sample(slots, max(1, round(share * len(slots)))):
        old = re.search(r"\w+", tokens[i]).group(0)
        new = old
        while new.lower() == old.lower():
            new = rng.choice(vocab)
        tokens[i] = tokens[i].replace(old, new, 1)
    return " ".join(tokens)


def reorder(sents, rng):
    """Two sentences swapped and a third dropped."""
    i, j, k = rng.sample(range(len(sents)), 3)
    out = list(sents)
    out[i], out[j] = out[j], out[i]
    del out[k]
    return out


def frame(text, sources, rng):
    """text between about 70 words of one page's boilerplate: 40-70% of it
    from the first half of that page's boilerplate, before, the rest from
    the second half, after."""
    src = rng.choice(sources)
    total = rng.randint(60, 80)
    head = round(total * rng.uniform(0.4, 0.7))
    tail = total - head
    half = len(src) // 2
    h0 = rng.randint(0, max(0, half - head))
    t0 = rng.randint(half, max(half, len(src) - tail))
    return "%s\n%s\n%s" % (" ".join(src[h0:h0 + head]), text,
                           " ".join(src[t0:t0 + tail]))


# --- L3S-GN1 pages -------------------------------------------------------

INLINE = frozenset("""a abbr acronym b big bdo cite code dfn em font i kbd
    label nobr q s samp small span strike strong sub sup tt u var p h1 h2
    h3 h4 h5 h6 pre""".split())
TABLE_PARTS = frozenset("table thead tbody tfoot tr".split())


def _label(el):
    """N of an element <span class="x-nc-selN">, else None."""
    if el.tag != "span":
        return None
    cls = el.get("class")
    if cls and len(cls) == 9 and cls.startswith("x-nc-sel") and \
            cls[8].isdigit():
        return int(cls[8])
    return None


#: The annotator also wrapped text inside elements whose content is not
#: markup (<title>, <textarea>, <noscript>): there the span tags are text.
_LITERAL_SPAN = re.compile(r'<span class="x-nc-[^"]*">|</span>', re.I)


def strip_literal_spans(text):
    return _LITERAL_SPAN.sub("", text) if "x-nc-" in text else text


def walk_blocks(root):
    """Each text block of the page in document order, as (text, label,
    owner, element, slot): its label (None: in no x-nc span), the x-nc span
    it belongs to, and where it lives (element.text or element.tail).
    Script, style and comment text is left out."""
    # An explicit stack, not recursion: real pages nest deeply.  An entry
    # is (element, owner of its parent, whether its tail is due now).
    todo = [(root, None, False)]
    while todo:
        el, outer, tail = todo.pop()
        if tail:
            if el.tail:
                yield el.tail, _owner_label(outer), outer, el, "tail"
            continue
        own = el if _label(el) is not None else outer
        if (isinstance(el.tag, str) and el.text
                and el.tag not in ("script", "style")):
            yield el.text, _owner_label(own), own, el, "text"
        todo.append((el, outer, True))
        todo.extend((child, own, False) for child in reversed(el))


def _owner_label(owner):
    return None if owner is None else _label(owner)


@dataclass
class Page:
    name: str                 # the file name, without .html
    source: str               # the annotated page
    host: str                 # <base href> host of the original, or ""
    template_shingles: set
    boilerplate: list         # word tokens of the x-nc-sel0 blocks
    has_full_text: bool


def load_page(path, original_dir):
    with open(path, "rb") as f:
        source = as_str(f.read())
    root = lxml.html.document_fromstring(source)
    template, boiler, full = [], [], False
    for text, label, _, _, _ in walk_blocks(root):
        if label in (1, 2, 3):
            full |= label == 2 and bool(text.strip())
            continue
        text = strip_literal_spans(text)
        template.append(text)
        if label == 0:
            boiler.extend(t for t in text.split() if re.search(r"\w", t))
    name = os.path.basename(path)[:-len(".html")]
    host = ""
    orig = os.path.join(original_dir, name + ".html")
    if os.path.exists(orig):
        with open(orig, "rb") as f:
            m = re.search(rb"""<base\s[^>]*href\s*=\s*["']?https?://"""
                          rb"""([^/"'\s>:]+)""", f.read(), re.I)
        host = m.group(1).decode("latin-1").lower() if m else ""
    return Page(name, source, host, shingles(" ".join(template)), boiler,
                full)


class Pages:
    """The L3S-GN1 annotated pages, each read when first needed."""

    def __init__(self, root):
        base = os.path.join(root, "text_corpora", "l3s_gn1_html")
        self.annotated = os.path.join(base, "annotated")
        self.original = os.path.join(base, "original")
        self.names = sorted(os.path.basename(p)[:-5] for p in glob.glob(
            os.path.join(self.annotated, "*.html")))
        if not self.names:
            sys.exit("neardup_cases: no pages in %s" % self.annotated)
        self.cache = {}

    def get(self, name):
        if name not in self.cache:
            self.cache[name] = load_page(
                os.path.join(self.annotated, name + ".html"), self.original)
        return self.cache[name]


def pick_pages(pages, count, rng):
    """count pages of different sites (module docstring), and what was
    skipped and why."""
    order = list(pages.names)
    rng.shuffle(order)
    picked, hosts, near = [], set(), NearSet()
    skipped = collections.Counter()
    for name in order:
        if len(picked) == count:
            break
        p = pages.get(name)
        if not p.has_full_text:
            skipped["no full-text block"] += 1
        elif p.host and p.host in hosts:
            skipped["site of a picked page (<base href>)"] += 1
        elif near.resembles(p.template_shingles):
            skipped["site of a picked page (template Jaccard >= %.1f)"
                    % NEAR_JACCARD] += 1
        else:
            picked.append(p)
            if p.host:
                hosts.add(p.host)
            near.add(p.template_shingles)
    if len(picked) < count:
        sys.exit("neardup_cases: only %d pages of distinct sites, %d wanted"
                 % (len(picked), count))
    return picked, skipped


def frame_sources(pages, count, rng):
    """The boilerplate words of count pages (all there are, if fewer) with
    enough of them, in an order shuffled by rng: pages are read only as
    far as needed."""
    order = list(pages.names)
    rng.shuffle(order)
    out = []
    for name in order:
        if len(out) == count:
            break
        words_ = pages.get(name).boilerplate
        if len(words_) >= MIN_FRAME_SOURCE:
            out.append(words_)
    return out


def _anchor(el):
    """Where block content may go in place of el: above any enclosing
    inline or paragraph element; a table row's content goes at the start
    of its cell, or before the table."""
    while el.getparent() is not None and el.getparent().tag in INLINE:
        el = el.getparent()
    if el.getparent() is not None and el.getparent().tag in TABLE_PARTS:
        if el.tag in ("td", "th"):
            return el, "inside"
        while el.getparent() is not None and el.tag != "table":
            el = el.getparent()
    return el, "before"


def _retitle(root, old_headline, headline):
    """The page's <title> names the new article: its old headline replaced
    by the new one (the site's name around it kept), or, when the title
    does not hold the old headline, the new headline alone."""
    el = root.find(".//title")
    if el is None:
        return
    text = normalise(strip_literal_spans(el.text or ""))
    at = text.lower().find(old_headline.lower()) if old_headline else -1
    el.text = (text[:at] + headline + text[at + len(old_headline):]
               if at >= 0 else headline)


def make_page(page, title, paragraphs):
    """page's template with the article (title, paragraphs) in place of its
    own (module docstring), as HTML."""
    root = lxml.html.document_fromstring(page.source)
    first, old_headline = {}, ""
    for text, label, owner, el, slot in list(walk_blocks(root)):
        if "x-nc-" in text:
            setattr(el, slot, strip_literal_spans(text))
        if label not in (1, 2, 3) or not text.strip():
            continue
        if label == 1 and 1 not in first:
            old_headline = normalise(text)
        first.setdefault(label, owner)
        # A space, not nothing, so that the words around stay apart.
        setattr(el, slot, " ")
    _retitle(root, old_headline, title)
    heading = first.get(1)
    if heading is not None:
        heading.text = title
    elements = []
    if heading is None:
        h1 = lxml.html.Element("h1")
        h1.text = title
        elements.append(h1)
    for text in paragraphs:
        p = lxml.html.Element("p")
        p.text = text
        p.tail = "\n"
        elements.append(p)
    anchor, where = _anchor(first[2])
    if where == "inside":
        for i, e in enumerate(elements):
            anchor.insert(i, e)
    else:
        for e in elements:
            anchor.addprevious(e)
    for style in list(root.iter("style")):
        if "x-nc-sel" in (style.text or ""):
            style.drop_tree()
    for span in list(root.iter("span")):
        if _label(span) is not None:
            span.drop_tag()
    for el in root.iter():
        cls = el.get("class") if isinstance(el.tag, str) else None
        if cls and "x-nc-" in cls:
            rest = [c for c in cls.split() if not c.startswith("x-nc-")]
            if rest:
                el.set("class", " ".join(rest))
            else:
                del el.attrib["class"]
    return lxml.html.tostring(root, encoding="unicode", method="html")


# --- The cases -----------------------------------------------------------

@dataclass
class Doc:
    """A stored document: its URL, its body (text or html) and the text it
    was made from."""
    url: str
    truth: str
    text: str = None
    html: str = None

    def jsonl(self):
        return json.dumps({"url": self.url, "html": self.html}
                          if self.html is not None else
                          {"url": self.url, "text": self.text})


@dataclass
class Query(Doc):
    """A query, of a kind, and the stored URL it is aimed at (None: it must
    find nothing)."""
    kind: str = ""
    target: str = None


@dataclass
class Store:
    name: str
    docs: list = field(default_factory=list)
    queries: list = field(default_factory=list)
    notes: list = field(default_factory=list)


def _rng(seed, *what):
    """A random generator for one purpose, so that each case's draws do not
    depend on the size or on the other cases (str seeds hash with
    SHA-512, the same in every run)."""
    return random.Random(":".join(map(str, (seed,) + what)))


def text_store(picked, held_out, vocab, frames, seed):
    store = Store("text")
    for b in picked:
        url = "http://reuters.example/story/%s" % b.newid
        store.docs.append(Doc(url, b.text, text=b.text))
    for b in picked:
        url = "http://reuters.example/story/%s" % b.newid
        rng = {k: _rng(seed, k, b.newid) for k in TEXT_KINDS}
        edits = {
            "exact": b.text,
            "cut": " ".join(cut(b.sentences, rng["cut"].uniform(0.6, 0.8))),
            "replaced": replace_words(b.text, 0.06, vocab, rng["replaced"]),
            "framed": frame(b.text, frames, rng["framed"]),
            "reordered": " ".join(reorder(b.sentences, rng["reordered"])),
            "mixed": frame(replace_words(" ".join(cut(b.sentences, 0.8)),
                                         0.04, vocab, rng["mixed"]),
                           frames, rng["mixed"]),
        }
        for kind in TEXT_KINDS:
            store.queries.append(Query(
                "http://query.example/%s/%s" % (kind, b.newid),
                edits[kind], text=edits[kind], kind=kind, target=url))
    for b in held_out:
        store.queries.append(Query(
            "http://query.example/held_out/%s" % b.newid, b.text,
            text=b.text, kind="held_out"))
    return store


def html_store(ps, qs, xs, ys):
    store = Store("html")
    for p, q, x, y in zip(ps, qs, xs, ys):
        url = "http://pages.example/%s/%s" % (p.name, x.newid)
        truth_x = "%s\n%s" % (x.title, x.text)
        truth_y = "%s\n%s" % (y.title, y.text)
        store.docs.append(Doc(url, truth_x,
                              html=make_page(p, x.title, x.paragraphs())))
        store.queries.append(Query(
            "http://query.example/other_site/%s/%s" % (q.name, x.newid),
            truth_x, html=make_page(q, x.title, x.paragraphs()),
            kind="other_site", target=url))
        store.queries.append(Query(
            "http://query.example/same_site/%s/%s" % (p.name, y.newid),
            truth_y, html=make_page(p, y.title, y.paragraphs()),
            kind="same_site", target=url))
    return store


def clough_store(root):
    folder = os.path.join(root, "near_duplicate_labeled",
                          "clough_stevenson_short_answers")

    def read(name):
        with open(os.path.join(folder, name), "rb") as f:
            return normalise(as_str(f.read()))

    store = Store("clough")
    with open(os.path.join(folder, "file_information.csv")) as f:
        rows = [line.strip().split(",") for line in f][1:]
    for task in sorted({t for _, t, _ in rows}):
        text = read("orig_task%s.txt" % task)
        store.docs.append(Doc("http://clough.example/orig_task%s" % task,
                              text, text=text))
    for name, task, category in rows:
        if category == "orig":
            continue
        text = read(name)
        store.queries.append(Query(
            "http://query.example/clough/%s" % name, text, text=text,
            kind="clough_" + category,
            target="http://clough.example/orig_task%s" % task))
    # Some answers copied parts of the Wikipedia article that the stored
    # original does not hold: no text measure can find those.
    orig = {d.url: shingles(d.truth) for d in store.docs}
    apart = collections.defaultdict(list)
    for q in store.queries:
        if q.kind in ("clough_cut", "clough_light") and \
                not shingles(q.truth) & orig[q.target]:
            apart[q.kind].append(q.url.rsplit("/", 1)[1])
    store.notes.append(
        "Clough cut and light answers sharing no 5-word shingle with their "
        "original: %s" % ("; ".join("%s %d (%s)" % (k, len(v), ", ".join(v))
                                    for k, v in sorted(apart.items()))
                          or "none"))
    return store


def html_size_for(size):
    return max(1, round(size * HTML_PER_SIZE))


def build(root=None, seed=1, size=DEFAULT_SIZE, html_size=None):
    """The three stores (text, html, clough) for seed and size: size stored
    bodies and as many held-out ones, html_size (default size * 160 / 600)
    pages and cases of each HTML kind."""
    root = data_root(root)
    html_size = html_size_for(size) if html_size is None else html_size
    bodies = reuters_bodies(root)
    picked, eligible = pick_bodies(bodies, 2 * size + 2 * html_size,
                                   _rng(seed, "reuters"))
    stored, held = picked[:size], picked[size:2 * size]
    xs = picked[2 * size:2 * size + html_size]
    ys = picked[2 * size + html_size:]
    pages = Pages(root)
    sites, skipped = pick_pages(pages, 2 * html_size, _rng(seed, "pages"))
    frames = frame_sources(pages, max(MIN_FRAME_PAGES, size // 5),
                           _rng(seed, "frames"))

    text = text_store(stored, held, vocabulary(bodies), frames, seed)
    text.notes.append(
        "%d Reuters bodies with a BODY, %d eligible (title, %d+ words, %d+ "
        "sentences); %d picked with no two near copies (%d stored, %d held "
        "out, %d for the HTML cases)" % (
            len(bodies), eligible, MIN_WORDS, MIN_SENTENCES, len(picked),
            size, size, 2 * html_size))
    text.notes.append("framing boilerplate from %d L3S-GN1 pages with %d+ "
                      "words labelled x-nc-sel0" % (len(frames),
                                                     MIN_FRAME_SOURCE))
    hs = html_store(sites[:html_size], sites[html_size:], xs, ys)
    hs.notes.append("%d L3S-GN1 pages of distinct sites (%d as stored "
                    "templates P, %d as other-site templates Q); skipped on "
                    "the way: %s" % (len(sites), html_size, html_size,
                                     ", ".join("%d %s" % (n, why) for why, n
                                               in sorted(skipped.items()))
                                     or "none"))
    hs.notes.append("articles X and Y: Reuters bodies not used by the text "
                    "cases (nor near copies of them)")
    return {"text": text, "html": hs, "clough": clough_store(root)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None,
                    help="the shared data folder (default: $NDDD_TEST_DATA "
                    "or ../shared/data beside the source tree)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--size", type=int, default=DEFAULT_SIZE)
    ap.add_argument("--html-size", type=int, default=None)
    ap.add_argument("--dump", metavar="DIR",
                    help="write each store's documents and queries as JSON "
                    "lines into DIR")
    args = ap.parse_args()
    stores = build(args.data, args.seed, args.size, args.html_size)
    for s in stores.values():
        kinds = collections.Counter(q.kind for q in s.queries)
        print("%s: %d stored, queries %s" % (s.name, len(s.docs), ", ".join(
            "%s %d" % kv for kv in kinds.items())))
        for n in s.notes:
            print("  " + n)
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            for what, items in (("docs", s.docs), ("queries", s.queries)):
                with open(os.path.join(args.dump, "%s_%s.jsonl"
                                       % (s.name, what)), "w") as f:
                    for d in items:
                        rec = json.loads(d.jsonl())
                        rec.update(truth=d.truth, kind=getattr(d, "kind",
                                                               None),
                                   target=getattr(d, "target", None))
                        f.write(json.dumps(rec) + "\n")


if __name__ == "__main__":
    main()
