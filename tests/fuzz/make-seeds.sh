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
