#!/usr/bin/python3
"""Main-content extraction: nddd's (daemon/text/extract.c) against
readability-lxml and against the page's whole text, for quality and speed,
in one run.

    tests/bench/extract_bench.py [--bin build/release/bin]
        [--data ../shared/data] [--seconds 0.5] [--repeats 5]
        [--readability-runs 3] [--no-speed] [--pages FILE] [--show ID]

Quality, on two sets:
  zyte  the article extraction benchmark's pages (article_extraction/:
        gzipped pages and ground-truth.json's articleBody);
  l3s   the L3S-GN1 pages (text_corpora/l3s_gn1_html/original/), against
        the text the assessors labelled headline or full text (spans of
        class x-nc-sel1 and x-nc-sel2 in annotated/, read with lxml).
The measure is the benchmark's: the tokens of a text are its runs of \\w
characters, a text is the multiset of its 4-token shingles (one shingle of
all its tokens when it has fewer than 4), and per page TP, FP and FN (the
shingles in both, counted with multiplicity; the extra predicted ones; the
missed ones) are normalised to sum to 1.  Summed over the pages: precision
= TP / (TP + FP), recall = TP / (TP + FN), F1 their harmonic mean.  A page
where both texts are empty counts as perfect (TP 1).  The benchmark's own
evaluate.py averages per-page precision and recall instead; that figure
("mean-pp") is printed beside.

Peers:
  readability  readability-lxml's Document(html).summary(html_partial=True),
               its text taken as the benchmark's runner takes it (html_text:
               a line per block), here with lxml;
  whole        nddd's extract_whole (the page's whole visible text).

Speed, one thread: extract_bench (C) for nddd's extraction alone, with the
fingerprint of its text (simhash_compute, the default stop words), and the
raw page's fingerprint; readability-lxml's Document(html).summary() on the
same pages in this process, best of --readability-runs passes.  Pages are
given to readability as str (decoded from UTF-8, which every page here is;
some declare another charset that lxml would otherwise trust wrongly).
"""
import argparse
import collections
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import lxml.html
from readability import Document

TOKEN = re.compile(r'\w+', re.UNICODE | re.MULTILINE | re.IGNORECASE |
                   re.DOTALL)

# Block-level elements: a line each, as html_text makes them.
BLOCKS = {
    'address', 'article', 'aside', 'blockquote', 'body', 'br', 'caption',
    'center', 'dd', 'details', 'dialog', 'dir', 'div', 'dl', 'dt',
    'fieldset', 'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3',
    'h4', 'h5', 'h6', 'header', 'hgroup', 'hr', 'html', 'legend', 'li',
    'main', 'menu', 'nav', 'ol', 'p', 'pre', 'section', 'summary', 'table',
    'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul',
}
INVISIBLE = {'script', 'style', 'noscript', 'template', 'head', 'title'}


def shingles(text, n=4):
    tokens = TOKEN.findall(text or '')
    out = [tuple(tokens[i:i + n])
           for i in range(0, max(1, len(tokens) - n + 1))]
    return collections.Counter(s for s in out if s)


def tp_fp_fn(true, pred):
    t, p = shingles(true), shingles(pred)
    tp = sum((t & p).values())
    fp = sum((p - t).values())
    fn = sum((t - p).values())
    s = tp + fp + fn
    if s == 0:
        return (1.0, 0.0, 0.0)
    return (tp / s, fp / s, fn / s)


def metrics(rows):
    tp = sum(r[0] for r in rows)
    fp = sum(r[1] for r in rows)
    fn = sum(r[2] for r in rows)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    # evaluate.py's: the mean of per-page precision and recall.
    pp = [1.0 if r[1] == r[2] == 0 else (r[0] / (r[0] + r[1]) if r[0] + r[1]
                                           else 0.0) for r in rows]
    pr = [1.0 if r[1] == r[2] == 0 else (r[0] / (r[0] + r[2]) if r[0] + r[2]
                                           else 0.0) for r in rows]
    mp, mr = sum(pp) / len(pp), sum(pr) / len(pr)
    mf = 2 * mp * mr / (mp + mr) if mp + mr else 0.0
    return f1, prec, rec, mf


def lxml_text(root):
    """The text of an lxml tree, a line per block, whitespace collapsed."""
    parts = []

    def walk(el):
        # An explicit stack: pages nest deeper than Python recurses.
        stack = [(el, False)]
        while stack:
            node, done = stack.pop()
            tag = node.tag if isinstance(node.tag, str) else None
            if done:
                if tag in BLOCKS:
                    parts.append('\n')
                if node.tail:
                    parts.append(node.tail)
                continue
            if tag is None:
                if node.tail:
                    parts.append(node.tail)
                continue
            if tag in INVISIBLE:
                if node.tail:
                    parts.append(node.tail)
                continue
            if tag in BLOCKS:
                parts.append('\n')
            if node.text:
                parts.append(node.text)
            stack.append((node, True))
            for child in reversed(list(node)):
                stack.append((child, False))
    walk(root)
    lines = (re.sub(r'\s+', ' ', l).strip() for l in ''.join(parts).split('\n'))
    return '\n'.join(l for l in lines if l)


def readability_text(html):
    summary = Document(html).summary(html_partial=True)
    return lxml_text(lxml.html.fromstring(summary))


def l3s_gold(path):
    """Text of the spans labelled headline (1) or full text (2)."""
    root = lxml.html.fromstring(open(path, 'rb').read().decode(
        'utf-8', 'replace'))
    label = {}
    parts = []
    for el in root.iter():
        parent = el.getparent()
        own = label.get(parent, 0) if parent is not None else 0
        if isinstance(el.tag, str):
            m = re.search(r'x-nc-sel(\d)', el.get('class') or '') \
                if el.tag == 'span' else None
            if m:
                own = int(m.group(1))
        label[el] = own
        if isinstance(el.tag, str) and el.tag not in ('script', 'style') \
                and el.text and own in (1, 2):
            parts.append(el.text)
        if el.tail and parent is not None and label.get(parent, 0) in (1, 2):
            parts.append(el.tail)
    return ' '.join(parts)


def load_sets(data, tmp):
    """Writes the pages of both sets as NAME.html under tmp; returns
    {set: (dir, {name: gold text})}."""
    sets = {}
    zdir = os.path.join(tmp, 'zyte')
    os.makedirs(zdir)
    base = os.path.join(data, 'article_extraction')
    truth = json.load(open(os.path.join(base, 'ground-truth.json')))
    gold = {}
    for name in sorted(truth):
        with gzip.open(os.path.join(base, 'html', name + '.html.gz')) as f:
            raw = f.read()
        with open(os.path.join(zdir, name + '.html'), 'wb') as f:
            f.write(raw)
        gold[name] = truth[name]['articleBody']
    sets['zyte'] = (zdir, gold)
    base = os.path.join(data, 'text_corpora', 'l3s_gn1_html')
    ldir = os.path.join(base, 'original')
    gold = {}
    for fn in sorted(os.listdir(ldir)):
        if fn.endswith('.html'):
            gold[fn[:-5]] = l3s_gold(os.path.join(base, 'annotated', fn))
    sets['l3s'] = (ldir, gold)
    return sets


def decode(b):
    return b.decode('utf-8', 'replace')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--bin', default='build/release/bin')
    ap.add_argument('--data', default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), '..', '..', '..', 'shared', 'data'))
    ap.add_argument('--seconds', type=float, default=0.5)
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--readability-runs', type=int, default=3)
    ap.add_argument('--no-speed', action='store_true',
                    help='quality only')
    ap.add_argument('--no-readability', action='store_true',
                    help='leave readability out')
    ap.add_argument('--pages', help='write per-page F1 (TSV) here')
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix='extract_bench.')
    sets = load_sets(args.data, tmp)
    out = os.path.join(tmp, 'out')
    cmd = [os.path.join(args.bin, 'extract_bench'), '-o', out,
           '-s', str(args.seconds if not args.no_speed else 0),
           '-r', str(args.repeats), sets['zyte'][0], sets['l3s'][0]]
    print('#', ' '.join(cmd), flush=True)
    res = subprocess.run(cmd, check=True, stdout=subprocess.PIPE,
                         universal_newlines=True).stdout
    speed = {}
    for line in res.splitlines():
        if line.startswith('RESULT '):
            kv = dict(f.split('=', 1) for f in line.split()[1:])
            label = {sets['zyte'][0]: 'zyte',
                     sets['l3s'][0]: 'l3s'}.get(kv['set'], kv['set'])
            speed[(label, kv['mode'])] = kv
        elif line.startswith('#'):
            print(line)
    status = dict(l.split('\t') for l in
                  open(os.path.join(out, 'status.tsv')).read().split('\n')
                  if l)

    per_page = []
    rtimes = {}
    for sname in ('zyte', 'l3s'):
        d, gold = sets[sname]
        rows = collections.defaultdict(list)
        nmain = 0
        htmls = {}
        for name in gold:
            html = decode(open(os.path.join(d, name + '.html'), 'rb').read())
            htmls[name] = html
            main_t = decode(open(os.path.join(out, name + '.main'),
                                 'rb').read())
            whole_t = decode(open(os.path.join(out, name + '.whole'),
                                  'rb').read())
            nmain += status[name] == 'main'
            r = tp_fp_fn(gold[name], main_t)
            rows['nddd'].append(r)
            rows['whole'].append(tp_fp_fn(gold[name], whole_t))
            rr = None
            if not args.no_readability:
                try:
                    rt = readability_text(html)
                except Exception:  # readability gives up on some pages
                    rt = ''
                rr = tp_fp_fn(gold[name], rt)
                rows['readability'].append(rr)
            per_page.append((sname, name, r, rr))
        print('\n## quality: %s (%d pages; nddd found an article in %d)'
              % (sname, len(gold), nmain))
        print('| extractor | F1 | precision | recall | F1 mean-pp |')
        print('|---|---|---|---|---|')
        for ext in ('nddd', 'readability', 'whole'):
            if ext in rows:
                f1, p, r, mf = metrics(rows[ext])
                print('| %s | %.3f | %.3f | %.3f | %.3f |'
                      % (ext, f1, p, r, mf))
        if not args.no_speed and not args.no_readability:
            best = None
            for _ in range(args.readability_runs):
                t0 = time.perf_counter()
                for name in gold:
                    try:
                        Document(htmls[name]).summary()
                    except Exception:
                        pass
                el = time.perf_counter() - t0
                best = el if best is None or el < best else best
            nbytes = sum(os.path.getsize(os.path.join(d, n + '.html'))
                         for n in gold)
            rtimes[sname] = (len(gold) / best, nbytes / best / 1e6)
    if args.pages:
        with open(args.pages, 'w') as f:
            for sname, name, r, rr in per_page:
                f1 = 2 * r[0] / (2 * r[0] + r[1] + r[2]) if r[0] else 0
                rf = (2 * rr[0] / (2 * rr[0] + rr[1] + rr[2])
                      if rr and rr[0] else 0)
                f.write('%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\n'
                        % (sname, name, f1, r[0], r[1], r[2]) if rr is None
                        else '%s\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n'
                        % (sname, name, f1, r[0], r[1], r[2], rf))
    if not args.no_speed:
        print('\n## speed, one thread (pages/s, MB/s of input; best of runs)')
        print('| set | nddd extract | nddd extract + fingerprint | '
              'nddd whole text | simhash of raw HTML | readability-lxml | '
              'extract+fp / readability |')
        print('|---|---|---|---|---|---|---|')
        for sname in ('zyte', 'l3s'):
            def cell(mode):
                kv = speed[(sname, mode)]
                return '%s, %s' % (kv['best_pps'], kv['best_mbps'])
            rl = rtimes.get(sname)
            ratio = ('%.0fx' % (float(speed[(sname, 'main+fp')]['best_pps'])
                                / rl[0]) if rl else '-')
            print('| %s | %s | %s | %s | %s | %s | %s |'
                  % (sname, cell('main'), cell('main+fp'), cell('whole'),
                     cell('html-fp'),
                     '%.1f, %.2f' % rl if rl else '-', ratio))
    subprocess.run(['rm', '-rf', tmp])


if __name__ == '__main__':
    sys.exit(main())
