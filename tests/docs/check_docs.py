#!/usr/bin/python3
"""check_docs: the reference pages against the code's own tables.

Fails, naming each difference, when
  - a key of the configuration table (daemon/conf/config.c, keys[]) is
    missing from docs/configuration.md, a key documented there does not
    exist, or a documented default is not the code's;
  - an option of nddd's command line (daemon/main.c) is missing from
    docs/configuration.md;
  - an operation of the daemon's table (daemon/req/operation.c,
    operations[]) is missing from docs/protocol.md's table of operations,
    is there with another role, or the table names one that does not
    exist; a status code of proto/nddd.proto's Code enum is missing from
    its table of codes, or the table names one that does not exist;
  - a command of nddctl's table (clients/nddctl.c, commands[]) has no
    section in docs/nddctl.md, or a section names one that does not exist;
    a long option nddctl parses (clients/nddctl*.c) is not mentioned there;
  - a link of README.md or docs/*.md points to a file that does not exist,
    or to a heading that its page does not have.

    check_docs.py [SOURCE_DIR]    check the tree (default: the one holding
                                  this file)
    check_docs.py --self-test     check that each rule catches what it
                                  should, on altered copies of the pages

Python 3 standard library only.  Exit status 0 when all agree, 1 otherwise.
"""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))


def read(root, rel):
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read()


def strip_c_comments(src):
    return re.sub(r"/\*.*?\*/", " ", src, flags=re.S)


def c_array(src, start, close="\n};"):
    """The text between `start` (a regular expression ending in '{') and
    the first `close` after it."""
    m = re.search(start, src)
    if m is None:
        raise ValueError("no %r in the source" % start)
    end = src.find(close, m.end())
    return src[m.end():end]


# --- the code's tables --------------------------------------------------

def config_keys(config_c):
    """[(section, name, default)] of config.c's keys[], in order."""
    body = c_array(strip_c_comments(config_c),
                   r"static const struct key keys\[\] = \{")
    keys = re.findall(r'\{\s*"(\w+)",\s*"(\w+)",\s*KEY_\w+,\s*F\(\w+\),'
                      r'[^"{}]*"([^"]*)"\s*\}', body)
    if len(keys) != body.count("F("):
        raise ValueError("config.c: read %d of the %d keys" %
                         (len(keys), body.count("F(")))
    return keys


def daemon_options(main_c):
    """The long options of nddd's command line."""
    body = c_array(main_c, r"static const struct option longopts\[\] = \{")
    return re.findall(r'\{\s*"([\w-]+)",\s*\w+_argument', body)


def operations(operation_c):
    """[(name, role)] of operation.c's operations[] but "invalid"."""
    body = c_array(strip_c_comments(operation_c),
                   r"static const struct operation operations\[\] = \{")
    ops = re.findall(r'\{\s*"(\w+)",\s*NDDD__V1__REQUEST__OP_\w+,\s*'
                     r'REPLY_\w+,\s*ROLE_(\w+)', body)
    if len(ops) != body.count("NDDD__V1__REQUEST__OP_"):
        raise ValueError("operation.c: read %d of the %d operations" %
                         (len(ops), body.count("NDDD__V1__REQUEST__OP_")))
    return [(name, role.lower()) for name, role in ops if name != "invalid"]


def status_codes(proto):
    body = c_array(proto, r"\benum Code \{", "\n}")
    return re.findall(r"^\s*([A-Z_]+)\s*=\s*\d+;", body, flags=re.M)


def nddctl_commands(nddctl_c):
    body = c_array(nddctl_c, r"\} commands\[\] = \{")
    return re.findall(r'^\t\{ "([a-z-]+)",', body, flags=re.M)


def nddctl_options(sources):
    """Every long option nddctl's commands parse, from getopt tables and
    from arguments compared by hand."""
    opts = set()
    for src in sources:
        opts.update(re.findall(r'\{\s*"([\w-]+)",\s*\w+_argument', src))
        opts.update(re.findall(r'strcmp\(\w+(?:\[\w+\])?, "--([\w-]+)"\)',
                               src))
    return opts


# --- the pages ----------------------------------------------------------

def table_rows(md, first_cell):
    """The cells of every table row whose first cell matches first_cell
    (a regular expression with one group, matched whole)."""
    rows = []
    for line in md.split("\n"):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(first_cell, cells[0])
        if m:
            rows.append((m.group(1), cells[1:]))
    return rows


def outside_code(md):
    """md without its fenced code blocks."""
    return re.sub(r"^```.*?^```", "", md, flags=re.S | re.M)


def check_configuration(config_c, main_c, page):
    errors = []
    code = {"[%s] %s" % (s, n): d for s, n, d in config_keys(config_c)}
    seen = {}
    for key, cells in table_rows(page, r"`(\[\w+\] \w+)`"):
        if key in seen:
            errors.append("docs/configuration.md: %s is documented twice"
                          % key)
        default = cells[0] if cells else ""
        seen[key] = "" if default == "(empty)" else default.strip("`")
    for key, default in code.items():
        if key not in seen:
            errors.append("docs/configuration.md: %s (daemon/conf/config.c) "
                          "is not documented" % key)
        elif seen[key] != default:
            errors.append("docs/configuration.md: %s defaults to %r, not "
                          "%r as daemon/conf/config.c says" %
                          (key, seen[key] or "(empty)", default or "(empty)"))
    for key in seen:
        if key not in code:
            errors.append("docs/configuration.md: %s is not a key of "
                          "daemon/conf/config.c" % key)
    for opt in daemon_options(main_c):
        if not re.search(r"`[^`]*--%s\b" % re.escape(opt), page):
            errors.append("docs/configuration.md: nddd's option --%s "
                          "(daemon/main.c) is not documented" % opt)
    return errors


def check_protocol(operation_c, proto, page):
    errors = []
    code = dict(operations(operation_c))
    rows = dict((name, cells) for name, cells in
                table_rows(page, r"`([a-z_]+)`"))
    for name, role in code.items():
        if name not in rows:
            errors.append("docs/protocol.md: operation %s "
                          "(daemon/req/operation.c) is not in the table"
                          % name)
        elif not rows[name] or rows[name][0].split()[0] != role:
            errors.append("docs/protocol.md: operation %s needs role %s "
                          "(daemon/req/operation.c), the table says %r" %
                          (name, role, rows[name][0] if rows[name] else ""))
    for name in rows:
        if name not in code:
            errors.append("docs/protocol.md: %s is not an operation of "
                          "daemon/req/operation.c" % name)
    codes = status_codes(proto)
    documented = [c for c, _ in table_rows(page, r"`([A-Z_]+)`")]
    for c in codes:
        if c not in documented:
            errors.append("docs/protocol.md: status code %s "
                          "(proto/nddd.proto) is not in the table" % c)
    for c in documented:
        if c not in codes:
            errors.append("docs/protocol.md: %s is not a status code of "
                          "proto/nddd.proto" % c)
    return errors


def check_nddctl(nddctl_c, sources, page):
    errors = []
    commands = nddctl_commands(nddctl_c)
    sections = re.findall(r"^### `([a-z-]+)`$", page, flags=re.M)
    for c in commands:
        if c not in sections:
            errors.append("docs/nddctl.md: command %s (clients/nddctl.c) "
                          "has no section" % c)
    for s in sections:
        if s not in commands:
            errors.append("docs/nddctl.md: %s is not a command of "
                          "clients/nddctl.c" % s)
    for opt in sorted(nddctl_options(sources)):
        if not re.search(r"--%s\b" % re.escape(opt), page):
            errors.append("docs/nddctl.md: option --%s (clients/nddctl*.c) "
                          "is not mentioned" % opt)
    return errors


def slug(heading):
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(md):
    found, count = set(), {}
    for h in re.findall(r"^#{1,6} +(.*?)#*\s*$", outside_code(md),
                        flags=re.M):
        s = slug(h)
        n = count.get(s, 0)
        count[s] = n + 1
        found.add(s if n == 0 else "%s-%d" % (s, n))
    return found


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def check_links(pages, root):
    """pages: {path relative to root: text}.  A link may point at one of
    them or at any file or folder of the tree at root."""
    errors = []
    for path, md in sorted(pages.items()):
        text = re.sub(r"`[^`\n]*`", "", outside_code(md))
        for target in LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue        # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            if file:
                dest = os.path.normpath(os.path.join(os.path.dirname(path),
                                                     file))
            else:
                dest = path
            if dest.startswith(".."):
                errors.append("%s: link %s leaves the source tree" %
                              (path, target))
                continue
            if dest not in pages and not os.path.exists(os.path.join(root,
                                                                   dest)):
                errors.append("%s: link %s: no file %s" %
                              (path, target, dest))
                continue
            if anchor and dest.endswith(".md"):
                md_dest = pages.get(dest)
                if md_dest is None:
                    md_dest = read(root, dest)
                if anchor not in anchors(md_dest):
                    errors.append("%s: link %s: %s has no heading #%s" %
                                  (path, target, dest, anchor))
    return errors


def load(root):
    """The sources and pages of the tree at root."""
    t = {
        "config_c": read(root, "daemon/conf/config.c"),
        "main_c": read(root, "daemon/main.c"),
        "operation_c": read(root, "daemon/req/operation.c"),
        "proto": read(root, "proto/nddd.proto"),
        "nddctl_c": read(root, "clients/nddctl.c"),
        "nddctl_srcs": [read(root, os.path.join("clients", f))
                        for f in sorted(os.listdir(os.path.join(root,
                                                                "clients")))
                        if re.fullmatch(r"nddctl.*\.c", f)],
        "pages": {"README.md": read(root, "README.md")},
    }
    for f in sorted(os.listdir(os.path.join(root, "docs"))):
        if f.endswith(".md"):
            t["pages"]["docs/" + f] = read(root, "docs/" + f)
    return t


def check(root, t):
    pages = t["pages"]
    return (check_configuration(t["config_c"], t["main_c"],
                                pages["docs/configuration.md"]) +
            check_protocol(t["operation_c"], t["proto"],
                           pages["docs/protocol.md"]) +
            check_nddctl(t["nddctl_c"], t["nddctl_srcs"],
                         pages["docs/nddctl.md"]) +
            check_links(pages, root))


# --- self-test: each rule on an altered copy of the tree's own pages ----

class SelfTest(unittest.TestCase):
    root = DEFAULT_ROOT

    def setUp(self):
        self.t = load(self.root)

    def alter(self, page, old, new, count=1):
        text = self.t["pages"][page]
        self.assertIn(old, text, "%s no longer holds %r: update the "
                      "self-test" % (page, old))
        self.t["pages"][page] = text.replace(old, new, count)

    def errors(self):
        return check(self.root, self.t)

    def assertCaught(self, *words):
        errors = self.errors()
        self.assertTrue(any(all(w in e for w in words) for e in errors),
                        "no error naming %s in %s" % (words, errors))

    def test_tree_passes(self):
        self.assertEqual(self.errors(), [])

    def test_key_missing(self):
        page = self.t["pages"]["docs/configuration.md"]
        row = next(l for l in page.split("\n")
                   if l.startswith("| `[near] resemblance`"))
        self.alter("docs/configuration.md", row + "\n", "")
        self.assertCaught("[near] resemblance", "not documented")

    def test_key_unknown(self):
        self.alter("docs/configuration.md", "| `[log] level` |",
                   "| `[log] colour` | `no` | none |\n| `[log] level` |")
        self.assertCaught("[log] colour", "not a key")

    def test_default_differs(self):
        self.alter("docs/configuration.md", "| `[server] max_batch` | "
                   "`10000` |", "| `[server] max_batch` | `1000` |")
        self.assertCaught("[server] max_batch", "'1000'", "'10000'")

    def test_code_key_added(self):
        self.t["config_c"] = self.t["config_c"].replace(
            '{ "log", "level",',
            '{ "log", "file", KEY_OPT_STRING, F(log_file), 0, 0, "" },\n'
            '\t{ "log", "level",')
        self.assertCaught("[log] file", "not documented")

    def test_daemon_option_missing(self):
        self.alter("docs/configuration.md", "`--allow-root`", "`allow`",
                   count=-1)
        self.assertCaught("--allow-root")

    def test_operation_missing(self):
        self.alter("docs/protocol.md", "| `url_forget` |", "| url_forget |")
        self.assertCaught("url_forget", "not in the table")

    def test_operation_role(self):
        self.alter("docs/protocol.md", "| `url_delete` | admin |",
                   "| `url_delete` | write |")
        self.assertCaught("url_delete", "role admin")

    def test_operation_unknown(self):
        self.alter("docs/protocol.md", "| `url_check` |",
                   "| `url_peek` | read | `UrlBatch` | none |\n"
                   "| `url_check` |")
        self.assertCaught("url_peek", "not an operation")

    def test_status_code_missing(self):
        self.alter("docs/protocol.md", "| `MOVED` |", "| MOVED |")
        self.assertCaught("MOVED", "not in the table")

    def test_command_missing(self):
        self.alter("docs/nddctl.md", "### `forget-prefix`",
                   "### forget-prefix")
        self.assertCaught("forget-prefix", "no section")

    def test_command_unknown(self):
        self.alter("docs/nddctl.md", "### `stats`",
                   "### `status`\n\nNone.\n\n### `stats`")
        self.assertCaught("status", "not a command")

    def test_option_missing(self):
        self.alter("docs/nddctl.md", "--no-progress", "--no-bar", count=-1)
        self.assertCaught("--no-progress", "not mentioned")

    def test_link_to_no_file(self):
        self.alter("README.md", "(docs/configuration.md)",
                   "(docs/config.md)")
        self.assertCaught("README.md", "docs/config.md", "no file")

    def test_link_to_no_heading(self):
        self.alter("docs/nddctl.md", "(sharding.md#adding-a-shard)",
                   "(sharding.md#removing-a-shard)")
        self.assertCaught("docs/sharding.md", "#removing-a-shard")

    def test_links_in_code_ignored(self):
        self.alter("docs/nddctl.md", "## Options",
                   "`[x](nowhere.md)`\n\n```\n[y](nowhere.md)\n```\n\n"
                   "## Options")
        self.assertEqual(self.errors(), [])

    def test_slug(self):
        self.assertEqual(slug("Namespaces and recrawl after a time"),
                         "namespaces-and-recrawl-after-a-time")
        self.assertEqual(slug("The `opencl` plugin"), "the-opencl-plugin")
        self.assertEqual(slug("`nddctl simhash`"), "nddctl-simhash")
        self.assertEqual(slug("Term hash: `sdbm-fmix64` or `sdbm`"),
                         "term-hash-sdbm-fmix64-or-sdbm")


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        if len(argv) > 2:
            SelfTest.root = os.path.abspath(argv[2])
        prog = unittest.main(argv=[argv[0]], module=__name__, exit=False,
                             verbosity=1)
        return 0 if prog.result.wasSuccessful() else 1
    root = os.path.abspath(argv[1]) if len(argv) > 1 else DEFAULT_ROOT
    errors = check(root, load(root))
    for e in errors:
        print(e)
    t = load(root)
    print("check_docs: %s (%d keys, %d operations, %d nddctl commands, "
          "%d pages)" % ("FAILED" if errors else "passed",
                         len(config_keys(t["config_c"])),
                         len(operations(t["operation_c"])),
                         len(nddctl_commands(t["nddctl_c"])),
                         len(t["pages"])))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
