#!/bin/sh
# Regenerates the committed seed corpus of fuzz_frame from seeds/requests.txt
# (protoc --encode) and of fuzz_urlcanon from the URL vectors of the shared
# test data.  Run from the source tree root; needs protoc and python3.
set -eu
out=tests/fuzz/corpus/frame
mkdir -p "$out"
n=0
grep -v '^#' tests/fuzz/seeds/requests.txt | while IFS= read -r line; do
	n=$((n + 1))
	msg=$(mktemp)
	printf '%s\n' "$line" | protoc --encode=nddd.v1.Request -Iproto \
		proto/nddd.proto > "$msg"
	python3 - "$msg" "$out/seed$n" <<'PY'
import struct, sys
body = open(sys.argv[1], 'rb').read()
frame = struct.pack('>I', len(body)) + body
open(sys.argv[2], 'wb').write(bytes([7]) + frame + frame)
PY
	rm -f "$msg"
done
out=tests/fuzz/corpus/urlcanon
mkdir -p "$out"
python3 - "$out" "${NDDD_TEST_DATA:-../shared/data}" <<'PY'
import json, os, sys
out, data = sys.argv[1], sys.argv[2]
urls = set()
for rel, field in (("url_normalization/uriparser/normalize_syntax_vectors.json", "input"),
                   ("url_normalization/url_normalize/url_normalize_vectors.json", "value")):
    for v in json.load(open(os.path.join(data, rel))):
        if isinstance(v, dict) and v.get(field):
            urls.add(v[field])
for i, u in enumerate(sorted(urls)):
    with open(os.path.join(out, "seed%03d" % i), "wb") as f:
        f.write(bytes([i % 8]) + u.encode())
PY
# fuzz_dispatch: request sequences in its input format (see the comment at
# the top of fuzz_dispatch.c and its gen_* functions).
out=tests/fuzz/corpus/dispatch
mkdir -p "$out"
python3 - "$out" <<'PY'
import os, sys
out = sys.argv[1]
# Operations: the index into fz_op_of.
OP = dict(url_submit=0, url_check=2, url_delete=4, stats=5, verify=6,
          doc_submit=7, doc_batch=8, would_join=9, query_body=10,
          query_fp=11, doc_get=12, doc_delete=13, more=14, raw=15)
# The operations behind 'more': the byte after it (fz_more_of).
MORE = dict(no_op=0, ns_set=1, ns_drop=2, clock=3)
# ns: admin in namespace "a" only.
TOK = dict(none=0, read=1, write=2, unknown=3, admin=4, ns=7)
# Namespaces: the index into fx_ns_pick ("", "a", "b", "Crawl.2024_x-1",
# 64 bytes; 7 a bad one); times to live: the index into fx_ttls (0, 1, 2,
# 3, 60, 3600 s, 100 years; 7 too long).
NS = {'': 0, 'a': 1, 'b': 2, 'crawl': 3, 'long': 4, 'bad': 7}
TTL = {0: 0, 1: 1, 2: 2, 3: 3, 60: 4, 3600: 5, 'max': 6, 'absurd': 7}

def req(op, tok='admin', end=True):
    """The byte that starts a request; end: the group ends after it."""
    return bytes([OP[op] | TOK[tok] << 4 | (0x80 if end else 0)])

def more(kind, tok='admin', end=True):
    return req('more', tok, end) + bytes([MORE[kind]])

def ns_byte(ns='', ttl=0, times=False, bad=0):
    """A namespace, a time to live, with_times; bad: which bad name or
    too long a time to live."""
    return bytes([NS[ns] | TTL[ttl] << 3 | (0x40 if times else 0) |
                  (0x80 if bad else 0)])

def ns_set(ns, ttl=0, tok='admin', end=True, bad=0):
    return more('ns_set', tok, end) + ns_byte(ns, ttl, bad=bad)

def ns_drop(ns, tok='admin', end=True, bad=0):
    return more('ns_drop', tok, end) + ns_byte(ns, bad=bad)

def clock(seconds=0, ms=0, hours=0):
    """The clock moves on (and the group ends): up to 223 s, 16 ms or 16
    hours."""
    step = seconds if seconds else (0xdf + ms if ms else 0xef + hours)
    return more('clock') + bytes([step])

def url(path=0, form=0, own=True):
    """A dictionary URL: fx_paths[path] in spelling form (0-3)."""
    return bytes([(0 if own else 1) | path << 2 | form << 5])

def raw_url(s, own_host=True):
    return bytes([2 if own_host else 3, len(s)]) + s

def batch(urls, mode=0, dur=0, ns='', ttl=0, times=False, bad=0):
    """urls: encoded URLs; mode 0 urls, 10 digests, 13 digests of another
    canonicalization, 14 digests of odd length, 15 both; dur: durability;
    the rest: ns_byte."""
    return (bytes([len(urls), mode | dur << 4]) +
            ns_byte(ns, ttl, times, bad) + b''.join(urls))

def body(text=0, html=False, kind=0):
    """kind 0: fx_texts[text]; 3: a body without terms."""
    return bytes([kind | text << 2 | (0x20 if html else 0)])

def dns(ns='', bad=0):
    """A document operation's namespace (gen_doc_ns)."""
    return bytes([NS[ns] | (0x80 if bad else 0)])

def doc(u, b, query_only=False, ns='', bad=0):
    """A document of a doc_batch: URL, body, then query_only and its
    namespace in one byte."""
    return u + b + bytes([(1 if query_only else 0) | NS[ns] << 1 |
                          (0x80 if bad else 0)])

def doc_batch(docs, tok='admin', end=True):
    return req('doc_batch', tok, end) + bytes([len(docs)]) + b''.join(docs)

seeds = {
    # Submit a URL in two spellings, check, delete, check again.
    'url-lifecycle':
        req('url_submit') + batch([url(1, 0), url(1, 1), url(2, 2)]) +
        req('url_check') + batch([url(1, 3), url(2, 0), url(3, 0)]) +
        req('url_delete') + batch([url(1, 0), url(1, 2)], dur=1) +
        req('url_check') + batch([url(1, 0), url(2, 0)]),
    # URLs shared by every execution, some not URLs at all.
    'url-shared-and-bad':
        req('url_check') + batch([url(0, 0, own=False),
                                  raw_url(b'not a url', own_host=False),
                                  raw_url(b'a?b#c')]) +
        req('url_submit', end=False) + batch([url(4, 0, own=False)]) +
        req('url_check', 'read') + batch([url(5, 1, own=False)]),
    # Digests: of this server's canonicalization, of another, odd bytes.
    'url-digests':
        req('url_submit') + batch([url(3, 0), url(4, 0)]) +
        req('url_check') + batch([url(3, 0), url(4, 1)], mode=10) +
        req('url_check') + batch([url(3, 0)], mode=13) +
        req('url_check') + batch([url(3, 0)], mode=14) +
        req('url_check') + batch([url(3, 0)], mode=15) +
        req('url_submit') + batch([url(5, 0)], dur=14) +
        req('url_check') + bytes([17, 0]),
    # Documents: two near copies, get, query, would-join, delete, get.
    'doc-lifecycle':
        req('doc_submit') + url(1) + body(0) + dns() +
        req('doc_submit') + url(2) + body(1, html=True) + dns() +
        req('doc_get', 'read') + url(1, 1) + dns() +
        req('query_fp', 'read') + dns() + bytes([5, 0]) +
        req('query_body', 'read') + dns() + bytes([0]) + body(1) +
        req('would_join', 'read') + url(3) + body(0) + dns() +
        req('doc_delete') + url(1, 2) + dns() +
        req('doc_get') + url(1) + dns() +
        req('doc_submit') + url(4) + body(0, kind=3) + dns(),
    # Pipelined: a re-submit racing queries of the same URL.
    'doc-pipelined':
        req('doc_submit') + url(1) + body(0) + dns() +
        req('doc_submit', end=False) + url(1) + body(4, html=True) +
        dns() +
        req('would_join', 'read', end=False) + url(1) + body(1) + dns() +
        req('doc_get', 'read', end=False) + url(1) + dns() +
        req('query_fp', 'read') + dns() + bytes([0, 1]),
    # One story in three namespaces: new in each, its neighbours its
    # namespace's; a batch across namespaces; bad names.
    'doc-namespaces':
        req('doc_submit') + url(1) + body(0) + dns() +
        req('doc_submit') + url(1) + body(0) + dns('a') +
        req('doc_submit') + url(2) + body(1) + dns('a') +
        req('doc_get', 'read') + url(1) + dns('b') +
        req('query_fp', 'read') + dns('a') + bytes([0, 0]) +
        req('query_body', 'read') + dns('b') + bytes([0]) + body(1) +
        req('would_join', 'read') + url(3) + body(1) + dns('crawl') +
        doc_batch([doc(url(3), body(0), ns='b'),
                   doc(url(3), body(1), ns='long'),
                   doc(url(4), body(0), query_only=True, ns='a'),
                   doc(url(5), body(0), ns='bad', bad=1)]) +
        req('doc_delete') + url(1) + dns('a') +
        req('doc_get') + url(1) + dns('a') +
        req('doc_get') + url(1) + dns() +
        req('doc_submit') + url(1) + body(0) + dns('bad') +
        req('doc_get') + url(1) + dns('bad', bad=1) +
        req('stats'),
    # A namespace's documents dropped: gone at once, its name empty, the
    # others' kept; a drop pipelined with a submit there.
    'doc-ns-drop':
        req('doc_submit') + url(1) + body(0) + dns('b') +
        req('doc_submit') + url(2) + body(1) + dns('b') +
        req('doc_submit') + url(1) + body(0) + dns('a') +
        ns_drop('b') +
        req('doc_get') + url(1) + dns('b') +
        req('query_fp', 'read') + dns('b') + bytes([0, 0]) +
        req('doc_get') + url(1) + dns('a') +
        req('doc_submit') + url(1) + body(1) + dns('b') +
        req('stats') +
        ns_drop('b', end=False) +
        req('doc_submit', end=False) + url(2) + body(0) + dns('b') +
        req('doc_get') + url(2) + dns('b') +
        ns_drop('crawl') + req('stats'),
    # Roles: what each token may not do, and a request naming nothing.
    'roles':
        req('url_submit', 'read') + batch([url(0)]) +
        req('url_delete', 'write') + batch([url(0)]) +
        req('verify', 'write') +
        req('doc_delete', 'none') + url(0) +
        req('stats', 'unknown') +
        req('stats', 'read') + req('stats') +
        more('no_op', 'read') + more('no_op'),
    # Frames that are no requests: bytes, a request changed, cut, too long.
    'raw-bytes': req('url_check') + batch([url(0)]) + req('raw') +
        bytes([0, 5]) + b'\x08\x01\x12\x03\xff',
    'raw-changed': req('raw') + bytes([0x41, OP['url_submit']]) +
        batch([url(0), url(1)]) + bytes([3, 0x7f, 9, 0x01]),
    'raw-cut': req('raw') + bytes([2, OP['doc_submit']]) + url(0) +
        body(0) + bytes([20]),
    'raw-too-long': req('raw') + bytes([3]),
    # Namespaces are independent sets; bad names and times to live.
    'ns-independent':
        req('url_submit') + batch([url(1)]) +
        req('url_submit') + batch([url(1)], ns='a', times=True) +
        req('url_submit') + batch([url(1), url(2)], ns='a', times=True) +
        req('url_check', 'read') + batch([url(1), url(2)], times=True) +
        req('url_check', 'read') + batch([url(1)], ns='long', times=True) +
        req('url_submit') + batch([url(1)], mode=10, ns='crawl') +
        req('url_delete') + batch([url(1)], ns='a', times=True) +
        req('url_check') + batch([url(1)], ns='a') +
        req('url_check') + batch([url(1)], ns='bad') +
        req('url_submit') + batch([url(1)], ns='bad', bad=1) +
        req('url_submit') + batch([url(1)], ns='b', ttl='absurd') +
        req('url_check') + batch([url(1)], ttl='absurd', bad=1),
    # A time to live passes: a duplicate does not postpone it, a check
    # then says unseen with the old times, a submit records it anew.
    'ns-ttl-expiry':
        req('url_submit') + batch([url(1), url(2)], ns='a', ttl=3,
                                  times=True) +
        clock(seconds=2) +
        req('url_submit') + batch([url(1)], ns='a', ttl=60, times=True) +
        clock(ms=16) +
        req('url_check') + batch([url(1), url(2)], ns='a', times=True) +
        clock(seconds=1) +
        req('url_check') + batch([url(1), url(2)], ns='a', times=True) +
        req('url_submit') + batch([url(2)], ns='a', times=True) +
        req('url_submit') + batch([url(3)], ttl='max', times=True) +
        clock(hours=1) +
        req('url_check') + batch([url(1), url(2), url(3)], ns='a',
                                 times=True) +
        req('stats'),
    # A namespace's default time to live, then a drop: empty at once, and
    # made anew by a submit.
    'ns-default-ttl-and-drop':
        ns_set('b', 60) +
        req('url_submit') + batch([url(1), url(2)], ns='b', times=True) +
        req('url_submit') + batch([url(3)], ns='b', ttl=3600, times=True) +
        req('stats') +
        clock(seconds=60) +
        req('url_check') + batch([url(1), url(3)], ns='b', times=True) +
        ns_drop('b') +
        req('url_check') + batch([url(3)], ns='b', times=True) +
        ns_drop('b') +
        req('url_submit') + batch([url(3)], ns='b', times=True) +
        ns_drop('') + ns_drop('bad') + ns_set('a', 'absurd') +
        ns_set('', 1) +
        req('url_submit') + batch([url(4)], times=True) +
        ns_set('') + req('stats'),
    # A drop pipelined with submits and checks of its namespace.
    'ns-drop-pipelined':
        req('url_submit') + batch([url(1), url(2)], ns='crawl') +
        req('url_check', end=False) + batch([url(1)], ns='crawl') +
        ns_drop('crawl', end=False) +
        req('url_submit', end=False) + batch([url(2)], ns='crawl') +
        req('url_check') + batch([url(1), url(2)], ns='crawl',
                                 times=True) +
        req('url_check') + batch([url(1), url(2)], ns='crawl') +
        ns_drop('crawl'),
    # A token whose role reaches one namespace only.
    'ns-token':
        req('url_submit', 'ns') + batch([url(1)], ns='a') +
        req('url_submit', 'ns') + batch([url(1)]) +
        req('url_check', 'ns') + batch([url(1)], ns='bad') +
        ns_set('a', 2, 'ns') + ns_set('b', 2, 'ns') +
        ns_drop('a', 'ns') + ns_drop('', 'ns') +
        req('stats', 'ns') + req('verify', 'ns') +
        req('doc_get', 'ns') + url(1) + dns() +
        req('doc_submit', 'ns') + url(1) + body(0) + dns('a') +
        req('doc_get', 'ns') + url(1) + dns('a') +
        req('doc_delete', 'ns') + url(1) + dns('b') +
        doc_batch([doc(url(2), body(0), ns='a'),
                   doc(url(3), body(1), ns='b')], 'ns') +
        doc_batch([doc(url(2), body(0), ns='a'),
                   doc(url(3), body(1), query_only=True, ns='a')], 'ns') +
        doc_batch([], 'ns') +
        more('no_op', 'ns'),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
PY
