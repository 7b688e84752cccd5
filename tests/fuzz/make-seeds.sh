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
MORE = dict(no_op=0, ns_set=1, ns_drop=2, clock=3, forget=4)
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

def url(path=0, form=0, own=True, www=False):
    """A dictionary URL: fx_paths[path] in spelling form (0-3), of the
    execution's host or the shared one, or of their www subdomain."""
    return bytes([(0 if own else 1) | path << 2 | form << 5 |
                  (0x80 if www else 0)])

def raw_url(s, own_host=True, host=0, scheme=0):
    """Input bytes, or a path of them on one of the execution's hosts
    (0 its own, 1 www., 2 one ending like it, 3 one beginning like it,
    4 one whose first label begins like its, 5 a.b.) over http, https,
    http on port 8080, or HTTPS on 443 (scheme 0-3)."""
    if not own_host:
        return bytes([3, len(s)]) + s
    return bytes([2 | (host & 3) << 2 | scheme << 4 | (host & 4) << 4,
                  len(s)]) + s

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

# url_forget's hosts (gen_forget_host): the execution's own, in upper
# case, example.com, in upper case, www. its own, "example" (every
# execution's parent), www.example.com, "com", its own with .evil.org, bad
# and its own; then none: a port, a path; var 0-3 of 12: a space before,
# inside, user info, a scheme; of 13: 253 bytes (a host), 254, bytes above
# ASCII, empty; of 14: [::1], 127.0.0.1 (hosts), [::1]:80, [::1; 15: bytes.
FHOST = dict(own=0, OWN=1, shared=2, SHARED=3, www=4, parent=5,
             shared_www=6, com=7, evil=8, bad=9, port=10, path=11,
             spaces=12, long=13, ip=14, bytes=15)

def forget_ns(kind, ns, bad):
    return bytes([NS[ns] | kind << 3 | (0x80 if bad else 0)])

def forget_host(host, sub=False, var=0, raw=b'', ns='', tok='admin',
                end=True, bad=0):
    """url_forget of a host (FHOST), with subdomains or not."""
    return (more('forget', tok, end) + forget_ns(1 if sub else 0, ns, bad) +
            bytes([FHOST[host] | var << 4]) +
            (bytes([len(raw)]) + raw if host == 'bytes' else b''))

def forget_prefix(host=0, path=0, spelling=0, cut=None, ns='',
                  tok='admin', end=True, bad=0):
    """url_forget of a prefix: fx_paths[path], cut to cut bytes if given,
    on host 0 (own), 1 (www.), 2 (example.com) or 3 (bad), in spelling
    0-3 (url's) or 4-7 (https, :8080, HTTPS :443, :80)."""
    c = host | (spelling & 3) << 2 | path << 4 | (0x80 if cut is not None
                                                  else 0)
    return (more('forget', tok, end) +
            forget_ns(4 if spelling >= 4 else 3, ns, bad) + bytes([c]) +
            (bytes([cut]) if cut is not None else b''))

def forget_odd(choice, extra=b'', host=0, ns='', tok='admin', end=True,
               bad=0):
    """url_forget of prefix choice 0-7 of gen_forget_prefix's kind 5:
    bytes, a path of bytes on host, ftp://, no URL, long (extra: a byte of
    its length), mailto:, no host, no path."""
    return (more('forget', tok, end) + forget_ns(5, ns, bad) +
            bytes([choice | host << 3]) + extra)

def forget_bad(both=False, prefix_sub=False, sub=False, ns='',
               tok='admin', end=True):
    """url_forget naming both a host and a prefix, or neither, or a
    prefix with subdomains."""
    if both:
        return (more('forget', tok, end) + forget_ns(6, ns, 0) +
                bytes([1 if sub else 0]))
    return (more('forget', tok, end) + forget_ns(7, ns, 0) +
            bytes([1 if prefix_sub else (2 if sub else 0)]))

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
    # Forgetting the execution's host: its URLs in every spelling, scheme
    # and port go, its subdomain's and look-alikes' stay; with subdomains
    # the subdomain's go too; other namespaces are not touched; a URL
    # submitted as a digest is not found.
    'forget-host':
        req('url_submit') + batch([url(1), url(2, 1), url(3, 2),
                                   raw_url(b'x', scheme=1),
                                   raw_url(b'y', scheme=2),
                                   url(1, www=True),
                                   raw_url(b'z', host=2),
                                   raw_url(b'z', host=3),
                                   raw_url(b'z', host=4),
                                   raw_url(b'z', host=5)]) +
        req('url_submit') + batch([url(1), url(4)], ns='a') +
        req('url_submit') + batch([url(5)], mode=10) +
        forget_host('own') +
        req('url_check') + batch([url(1), url(2), url(3), url(5),
                                  raw_url(b'x', scheme=3),
                                  raw_url(b'y', scheme=2),
                                  url(1, www=True), raw_url(b'z', host=2),
                                  raw_url(b'z', host=3),
                                  raw_url(b'z', host=4),
                                  raw_url(b'z', host=5)], times=True) +
        forget_host('own', sub=True) +
        req('url_check') + batch([url(1, www=True), raw_url(b'z', host=2),
                                  raw_url(b'z', host=3),
                                  raw_url(b'z', host=4),
                                  raw_url(b'z', host=5)]) +
        forget_host('OWN', ns='a') +
        req('url_check') + batch([url(1), url(4)], ns='a') +
        forget_host('evil', sub=True) + forget_host('bad') +
        req('url_check') + batch([raw_url(b'z', host=2),
                                  raw_url(b'z', host=3), url(5)]) +
        req('url_submit') + batch([url(1), url(2, www=True)],
                                  times=True) +
        forget_host('www', ns='crawl') + forget_host('own', ns='b') +
        req('stats'),
    # Forgetting a prefix: a URL cut anywhere, in every spelling; another
    # scheme or port is another prefix; prefixes that are no URL or too
    # long for the index.
    'forget-prefix':
        req('url_submit') + batch([url(0), url(1), url(2), url(3), url(4),
                                   url(5), url(6), url(7),
                                   raw_url(b'a', scheme=1),
                                   raw_url(b'a', scheme=2),
                                   url(1, www=True)], ns='b') +
        forget_prefix(path=3, cut=2, ns='b') +
        req('url_check') + batch([url(1), url(3), url(2)], ns='b') +
        forget_prefix(path=1, spelling=4, ns='b') +
        req('url_check') + batch([raw_url(b'a', scheme=1),
                                  raw_url(b'a', scheme=2)], ns='b') +
        forget_prefix(path=5, cut=4, spelling=1, ns='b') +
        forget_prefix(path=4, spelling=2, ns='b') +
        forget_prefix(path=6, spelling=3, cut=3, ns='b') +
        req('url_check') + batch([url(4), url(5), url(6), url(7)],
                                 ns='b') +
        forget_odd(7, ns='b') +
        req('url_check') + batch([url(0), url(7), url(1, www=True)],
                                 ns='b') +
        forget_odd(4, bytes([12]), ns='b') +
        forget_odd(4, bytes([13]), ns='b') +
        forget_odd(1, bytes([1]) + b'%', ns='b') +
        forget_odd(0, bytes([9]) + b'http://a/', ns='b') +
        forget_odd(2),
    # The shared host: what earlier executions left of it, gone once
    # forgotten (a URL met after it starts unseen); its www subdomain, and
    # every host under "com"; a forget pipelined with submits and checks
    # of its URLs.
    'forget-shared':
        req('url_check') + batch([url(1, own=False), url(2, own=False)],
                                 ns='a') +
        forget_host('shared', ns='a') +
        req('url_check') + batch([url(1, own=False), url(3, own=False),
                                  url(1, own=False, www=True)], ns='a',
                                 times=True) +
        req('url_submit') + batch([url(1, own=False),
                                   url(1, own=False, www=True)], ns='a') +
        forget_host('com', sub=True, ns='a') +
        req('url_check') + batch([url(1, own=False),
                                  url(1, own=False, www=True),
                                  url(4, own=False)], ns='a') +
        req('url_submit') + batch([url(1), url(2)], ns='a') +
        req('url_submit', end=False) + batch([url(3)], ns='a') +
        forget_host('own', ns='a', end=False) +
        req('url_check', end=False) + batch([url(1)], ns='a') +
        req('url_submit') + batch([url(4)], ns='a') +
        req('url_check') + batch([url(1), url(2), url(3), url(4)],
                                 ns='a') +
        forget_host('parent', sub=True, ns='a') +
        forget_host('SHARED', sub=True, ns='a') +
        forget_prefix(host=2, path=0, ns='a'),
    # Hosts url_forget takes and refuses: a port, a path, spaces, user
    # info, a scheme, the longest and one byte more, bytes above ASCII,
    # none, IP addresses, input bytes.
    'forget-hosts':
        forget_host('port') + forget_host('path') +
        forget_host('spaces') + forget_host('spaces', var=1) +
        forget_host('spaces', var=2) + forget_host('spaces', var=3) +
        forget_host('long') + forget_host('long', var=1) +
        forget_host('long', var=2) + forget_host('long', var=3) +
        forget_host('ip') + forget_host('ip', var=1) +
        forget_host('ip', var=2) + forget_host('ip', var=3) +
        forget_host('bytes', raw=b'A.b') +
        forget_host('bytes', raw=b'a:1'),
    # What else url_forget refuses: both or neither of host and prefix,
    # subdomains with a prefix, prefixes that are no URL, a bad namespace;
    # roles.
    'forget-refused':
        forget_bad(both=True) + forget_bad() + forget_bad(sub=True) +
        forget_bad(prefix_sub=True) +
        forget_host('own', ns='bad', bad=1) +
        forget_host('own', tok='write') + forget_host('own', tok='read') +
        forget_host('own', tok='none') + forget_host('own', ns='a',
                                                     tok='ns') +
        forget_host('own', tok='ns') +
        forget_host('own', ns='bad', tok='ns') +
        forget_odd(3) + forget_odd(5) + forget_odd(6),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
PY
