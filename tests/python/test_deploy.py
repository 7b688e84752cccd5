"""The Kubernetes deployment of deploy/kubernetes, checked without a
cluster: every object is parsed and checked against the others and against
the nddd.conf its ConfigMap carries (ports, paths, memory), and a real nddd
is started on that nddd.conf, with its paths (data, tokens, stop words)
and ports moved to a temporary directory and free ports, to answer
/health and a submit made with a token.

No Kubernetes schema validator is packaged in Debian 12, so the objects'
fields are checked here, for what nddd needs of them; every field's name
and type is checked against the models of Debian's Kubernetes client
(python3-kubernetes, the API of Kubernetes 1.22), and yamllint checks the
files' syntax and layout (.yamllint), each when installed.
"""

import configparser
import glob
import os
import re
import secrets
import shutil
import subprocess
import tempfile
import unittest
import urllib.request
from unittest import mock

import harness  # sets sys.path for nddd

import nddd

try:
    import yaml
except ImportError:  # tools/install-deps test installs python3-yaml
    yaml = None
try:
    from kubernetes import client as k8s_models
except ImportError:  # and python3-kubernetes
    k8s_models = None

DEPLOY = os.path.join(harness.ROOT, "deploy", "kubernetes")
DEPLOY_DOC = os.path.join(harness.ROOT, "docs", "deploy.md")
DEFAULTS_CONF = os.path.join(harness.ROOT, "conf", "nddd.conf")
STOPWORDS = os.path.join(harness.ROOT, "conf", "stopwords.txt")
# Where make install puts the stop words, in the image too.
IMAGE_STOPWORDS = "/etc/nddd/stopwords.txt"

API_VERSIONS = {
    "ConfigMap": "v1",
    "Service": "v1",
    "StatefulSet": "apps/v1",
    "PodDisruptionBudget": "policy/v1",
}

# The memory the configuration commits nddd to (docs/operations.md, "Under
# systemd"): bytes per URL of [urls] capacity (filter and index), per
# [urls] journal_entries, and per request worker the memory it keeps plus
# what it may hold decoding a frame (twice max_frame).
BYTES_PER_URL = 14.5
BYTES_PER_JOURNAL_ENTRY = 85
WORKER_KEEPS = 4 << 20

# The least time the startup probe must allow: a large store on a cold
# volume rebuilds its filter and tables for minutes.
MIN_STARTUP_S = 600


def quantity(text):
    """A Kubernetes quantity ("3Gi", "500m", "2") as a number."""
    m = re.fullmatch(r"([0-9.]+)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P|m)?", str(text))
    if m is None:
        raise ValueError("not a quantity: %r" % (text,))
    scale = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
             "P": 1e15, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30,
             "Ti": 1 << 40, "Pi": 1 << 50}[m.group(2)]
    return float(m.group(1)) * scale


def conf_size(text):
    """An nddd size ("512M", "60G"): powers of 1024."""
    m = re.fullmatch(r"([0-9]+)([KMGT])?", text.strip())
    if m is None:
        raise ValueError("not a size: %r" % (text,))
    return int(m.group(1)) << {None: 0, "K": 10, "M": 20, "G": 30,
                               "T": 40}[m.group(2)]


def conf_seconds(text):
    """An nddd duration ("30s", "500ms", "2m"; a bare number is seconds)."""
    m = re.fullmatch(r"([0-9]+)(ms|s|m|h)?", text.strip())
    if m is None:
        raise ValueError("not a duration: %r" % (text,))
    return int(m.group(1)) * {"ms": 1e-3, None: 1, "s": 1, "m": 60,
                              "h": 3600}[m.group(2)]


def parse_conf(text):
    conf = configparser.ConfigParser(interpolation=None,
                                     comment_prefixes=(";", "#"),
                                     inline_comment_prefixes=None)
    conf.read_string(text)
    return conf


def split_address(address):
    """"HOST:PORT" or "[IPv6]:PORT" into (host, port)."""
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def unknown_fields(obj, model, path):
    """Where obj strays from the Kubernetes client's model (a class name
    such as "V1StatefulSet", or an openapi type such as "list[V1Volume]"):
    fields it does not have, values of another type."""
    if model in ("object", "datetime", "date"):  # int or string, time
        return []
    if model in ("str", "int", "bool", "float"):
        ok = {"str": (str,), "int": (int,), "bool": (bool,),
              "float": (int, float)}[model]
        good = isinstance(obj, ok) and (model == "bool" or
                                        not isinstance(obj, bool))
        return [] if good else ["%s: not %s: %r" % (path, model, obj)]
    m = re.fullmatch(r"list\[(.*)\]", model)
    if m:
        if not isinstance(obj, list):
            return ["%s: not a list" % path]
        return [e for i, x in enumerate(obj)
                for e in unknown_fields(x, m.group(1), "%s[%d]" % (path, i))]
    m = re.fullmatch(r"dict\(str, (.*)\)", model)
    if m:
        if not isinstance(obj, dict):
            return ["%s: not a map" % path]
        return [e for k, x in obj.items()
                for e in unknown_fields(x, m.group(1), "%s.%s" % (path, k))]
    cls = getattr(k8s_models, model)
    if not isinstance(obj, dict):
        return ["%s: not an object (%s)" % (path, model)]
    attrs = {field: attr for attr, field in cls.attribute_map.items()}
    errors = []
    for field, value in obj.items():
        if field not in attrs:
            errors.append("%s.%s: no such field of %s" % (path, field,
                                                          model))
        else:
            errors += unknown_fields(value, cls.openapi_types[attrs[field]],
                                     "%s.%s" % (path, field))
    return errors


def rewrite_conf(text, values):
    """text with the values of the (section, key) pairs of values replaced,
    every other line kept as it is; each key must be set in text once."""
    section, seen, lines = None, set(), []
    for line in text.splitlines(keepends=True):
        m = re.match(r"\s*\[([^\]]+)\]", line)
        if m:
            section = m.group(1).strip()
        m = re.match(r"(\s*)([A-Za-z_]+)(\s*=\s*)", line)
        if m and (section, m.group(2)) in values:
            if (section, m.group(2)) in seen:
                raise ValueError("[%s] %s is set twice" % (section,
                                                          m.group(2)))
            seen.add((section, m.group(2)))
            line = "%s%s%s%s\n" % (m.group(1), m.group(2), m.group(3),
                                   values[(section, m.group(2))])
        lines.append(line)
    missing = set(values) - seen
    if missing:
        raise ValueError("not set in the configuration: %s" % sorted(missing))
    return "".join(lines)


@unittest.skipIf(yaml is None, "python3-yaml is not installed "
                 "(tools/install-deps test)")
class TestManifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.objects = []
        cls.files = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")))
        for path in cls.files:
            with open(path) as f:
                for obj in yaml.safe_load_all(f):
                    if obj is not None:
                        cls.objects.append((os.path.basename(path), obj))
        cls.by_kind = {}
        for _, obj in cls.objects:
            if isinstance(obj, dict):
                cls.by_kind.setdefault(obj.get("kind"), []).append(obj)

    def one(self, kind):
        found = self.by_kind.get(kind, [])
        self.assertEqual(len(found), 1, "want one %s, have %d" %
                         (kind, len(found)))
        return found[0]

    # The objects, and the pieces of them the checks below read.
    @property
    def sts(self):
        return self.one("StatefulSet")

    @property
    def pod(self):
        return self.sts["spec"]["template"]["spec"]

    @property
    def container(self):
        containers = self.pod["containers"]
        self.assertEqual([c["name"] for c in containers], ["nddd"])
        return containers[0]

    @property
    def configmap(self):
        return self.one("ConfigMap")

    @property
    def conf(self):
        return parse_conf(self.configmap["data"]["nddd.conf"])

    def setting(self, section, key):
        """A key of the ConfigMap's nddd.conf, or its default (the value
        conf/nddd.conf documents)."""
        if self.conf.has_option(section, key):
            return self.conf.get(section, key)
        with open(DEFAULTS_CONF) as f:
            return parse_conf(f.read()).get(section, key)

    def container_port(self, port):
        """A probe's or a Service's target port (a name or a number) as
        the container's port number."""
        by_name = {p["name"]: p["containerPort"]
                   for p in self.container["ports"]}
        if isinstance(port, int):
            self.assertIn(port, by_name.values())
            return port
        self.assertIn(port, by_name)
        return by_name[port]

    def mount(self, volume):
        mounts = [m for m in self.container["volumeMounts"]
                  if m["name"] == volume]
        self.assertEqual(len(mounts), 1, "volume %s mounted %d times" %
                         (volume, len(mounts)))
        return mounts[0]

    def volume(self, **source):
        """The pod's volume of that source (configMap=NAME,
        secret=NAME)."""
        (kind, name), = source.items()
        key = "name" if kind == "configMap" else "secretName"
        found = [v for v in self.pod.get("volumes", [])
                 if v.get(kind, {}).get(key) == name]
        self.assertEqual(len(found), 1, "want one volume of %s %s" %
                         (kind, name))
        return found[0]

    def documented_secret(self):
        """The Secret's name and key in docs/deploy.md's kubectl create
        secret command: the Secret is made by hand, never kept here."""
        with open(DEPLOY_DOC) as f:
            doc = f.read()
        m = re.search(r"kubectl\b[^\n]*\bcreate secret generic (\S+)"
                      r"[^\n]*--from-file=([^=\s]+)=", doc)
        self.assertIsNotNone(m, "docs/deploy.md shows no kubectl create "
                             "secret generic NAME --from-file=KEY=FILE")
        return m.group(1), m.group(2)

    def test_objects(self):
        self.assertTrue(self.files, "no manifests in %s" % DEPLOY)
        for path, obj in self.objects:
            self.assertIsInstance(obj, dict, path)
            kind = obj.get("kind")
            self.assertIn(kind, API_VERSIONS, "%s: kind %r" % (path, kind))
            self.assertEqual(obj.get("apiVersion"), API_VERSIONS[kind],
                             "%s: %s" % (path, kind))
            name = obj.get("metadata", {}).get("name")
            self.assertTrue(isinstance(name, str) and re.fullmatch(
                r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name),
                "%s: %s has no valid metadata.name" % (path, kind))
        for kind in API_VERSIONS:
            self.one(kind)

    @unittest.skipIf(k8s_models is None, "python3-kubernetes is not "
                     "installed (tools/install-deps test)")
    def test_fields(self):
        # Misspelt or misplaced fields, which an API server would refuse
        # or (with client-side apply) drop.  The client's models are
        # Kubernetes 1.22's: a field added since is reported too.
        errors = []
        for path, obj in self.objects:
            model = "V1" + obj["kind"]
            errors += unknown_fields(obj, model, "%s: %s" % (path, model))
        self.assertEqual(errors, [])

    def test_service_selects_the_shards(self):
        svc = self.one("Service")
        labels = self.sts["spec"]["template"]["metadata"]["labels"]
        # Headless: one DNS name per pod, no virtual IP balancing keys
        # over the shards.
        self.assertEqual(svc["spec"].get("clusterIP"), "None")
        self.assertIs(svc["spec"].get("publishNotReadyAddresses"), True)
        selector = svc["spec"]["selector"]
        self.assertTrue(selector)
        self.assertLessEqual(selector.items(), labels.items())
        self.assertEqual(self.sts["spec"]["serviceName"],
                         svc["metadata"]["name"])
        match = self.sts["spec"]["selector"]["matchLabels"]
        self.assertTrue(match)
        self.assertLessEqual(match.items(), labels.items())

    def test_disruption_budget(self):
        pdb = self.one("PodDisruptionBudget")
        labels = self.sts["spec"]["template"]["metadata"]["labels"]
        match = pdb["spec"]["selector"]["matchLabels"]
        self.assertTrue(match)
        self.assertLessEqual(match.items(), labels.items())
        self.assertEqual(pdb["spec"].get("maxUnavailable"), 1)

    def test_ports_are_the_conf_ports(self):
        host, port = split_address(self.setting("server", "listen"))
        mhost, mport = split_address(self.setting("metrics", "listen"))
        # Reachable from other pods and from the kubelet.
        for h in (host, mhost):
            self.assertIn(h, ("0.0.0.0", "::"))
        self.assertEqual(sorted(p["containerPort"]
                                for p in self.container["ports"]),
                         sorted([port, mport]))
        svc = self.one("Service")
        self.assertEqual(sorted(self.container_port(p["targetPort"])
                                for p in svc["spec"]["ports"]),
                         sorted([port, mport]))
        for p in svc["spec"]["ports"]:
            self.assertEqual(p["port"], self.container_port(p["targetPort"]))
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            get = self.container[probe]["httpGet"]
            self.assertEqual(get["path"], "/health", probe)
            self.assertEqual(self.container_port(get["port"]), mport, probe)
        annotations = self.sts["spec"]["template"]["metadata"].get(
            "annotations", {})
        if "prometheus.io/port" in annotations:
            self.assertEqual(int(annotations["prometheus.io/port"]), mport)

    def test_paths(self):
        # The configuration: the ConfigMap's nddd.conf, named by -c.
        name = self.configmap["metadata"]["name"]
        config = self.mount(self.volume(configMap=name)["name"])
        command = self.container.get("command", []) + \
            self.container.get("args", [])
        self.assertIn("-c", command)
        conf_path = command[command.index("-c") + 1]
        self.assertEqual(os.path.dirname(conf_path), config["mountPath"])
        self.assertIn(os.path.basename(conf_path), self.configmap["data"])
        self.assertIs(config.get("readOnly"), True)

        # The data: the shard's own volume.
        data_dir = self.setting("store", "data_dir")
        claims = [c["metadata"]["name"]
                  for c in self.sts["spec"]["volumeClaimTemplates"]]
        data = [m for m in self.container["volumeMounts"]
                if m["mountPath"] == data_dir]
        self.assertEqual(len(data), 1, "nothing mounted on data_dir %s" %
                         data_dir)
        self.assertIn(data[0]["name"], claims)
        self.assertFalse(data[0].get("readOnly", False))

        # The tokens: the Secret docs/deploy.md makes, a file of it.
        secret_name, key = self.documented_secret()
        volume = self.volume(secret=secret_name)
        tokens = self.mount(volume["name"])
        self.assertEqual(self.setting("auth", "tokens_file"),
                         os.path.join(tokens["mountPath"], key))
        self.assertIs(tokens.get("readOnly"), True)
        items = volume["secret"].get("items")
        if items is not None:
            self.assertIn(key, [i["path"] for i in items])
        # Tokens are secrets: nothing for others.
        self.assertEqual(volume["secret"].get("defaultMode", 0o644) & 0o007,
                         0)

        # The stop words are the image's, and no volume hides them.
        stopwords = self.setting("simhash", "stopwords")
        self.assertEqual(stopwords, IMAGE_STOPWORDS)
        for m in self.container["volumeMounts"]:
            self.assertFalse(stopwords.startswith(
                m["mountPath"].rstrip("/") + "/"),
                "%s hides %s" % (m["mountPath"], stopwords))

    def test_volume_holds_the_store(self):
        claim, = self.sts["spec"]["volumeClaimTemplates"]
        self.assertEqual(claim["spec"]["accessModes"], ["ReadWriteOnce"])
        storage = quantity(claim["spec"]["resources"]["requests"]["storage"])
        # The store reports itself full before the file system is.
        self.assertLessEqual(conf_size(self.setting("store", "map_size")),
                             storage)

    def test_resources(self):
        res = self.container["resources"]
        for what in ("cpu", "memory"):
            self.assertIn(what, res["requests"])
            self.assertIn(what, res["limits"])
            self.assertLessEqual(quantity(res["requests"][what]),
                                 quantity(res["limits"][what]), what)
        cpus = quantity(res["limits"]["cpu"])
        # 0 would be one thread per CPU of the node, not of the container.
        workers = int(self.setting("server", "workers"))
        threads = int(self.setting("accel", "threads"))
        self.assertTrue(1 <= workers <= cpus, "[server] workers %d for %g "
                        "CPUs" % (workers, cpus))
        self.assertTrue(1 <= threads <= cpus, "[accel] threads %d for %g "
                        "CPUs" % (threads, cpus))
        # What the configuration commits nddd to, documents aside.
        floor = (int(self.setting("urls", "capacity")) * BYTES_PER_URL +
                 int(self.setting("urls", "journal_entries")) *
                 BYTES_PER_JOURNAL_ENTRY +
                 conf_size(self.setting("server", "buffer_memory")) +
                 workers * (WORKER_KEEPS +
                            2 * conf_size(self.setting("server",
                                                       "max_frame"))))
        self.assertGreaterEqual(quantity(res["limits"]["memory"]), floor)
        self.assertGreaterEqual(quantity(res["requests"]["memory"]), floor)

    def test_security(self):
        pod_sc = self.pod["securityContext"]
        self.assertIs(pod_sc.get("runAsNonRoot"), True)
        # nddd refuses root: a numeric user other than 0, and a group
        # that may read the volume and the tokens.
        self.assertIsInstance(pod_sc.get("runAsUser"), int)
        self.assertNotEqual(pod_sc["runAsUser"], 0)
        self.assertIsInstance(pod_sc.get("fsGroup"), int)
        sc = self.container.get("securityContext", {})
        self.assertIs(sc.get("allowPrivilegeEscalation"), False)
        self.assertNotEqual(sc.get("runAsUser"), 0)

    def test_lifecycle(self):
        spec = self.sts["spec"]
        self.assertEqual(spec["replicas"], 3)
        self.assertEqual(spec["podManagementPolicy"], "Parallel")
        # SIGTERM: the clients' last replies, then the flush.
        grace = self.pod["terminationGracePeriodSeconds"]
        shutdown = conf_seconds(self.setting("server", "shutdown_timeout"))
        self.assertGreaterEqual(grace, shutdown + 30)
        startup = self.container["startupProbe"]
        self.assertGreaterEqual(startup.get("periodSeconds", 10) *
                                startup.get("failureThreshold", 3),
                                MIN_STARTUP_S)
        # Shards spread over nodes.
        labels = spec["template"]["metadata"]["labels"]
        terms = self.pod["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"]
        self.assertTrue(any(
            t["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
            and t["podAffinityTerm"]["labelSelector"]["matchLabels"].items()
            <= labels.items() for t in terms))

    def test_conf_is_valid(self):
        # nddd -t reads it as the pod's nddd will: every key known, every
        # value valid, the whole valid together.
        path = os.path.join(tempfile.mkdtemp(prefix="nddd-py-"),
                            "nddd.conf")
        self.addCleanup(shutil.rmtree, os.path.dirname(path), True)
        with open(path, "w") as f:
            f.write(self.configmap["data"]["nddd.conf"])
        p = subprocess.run([harness.NDDD_BIN, "-t", "-c", path],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)

    def test_yamllint(self):
        if shutil.which("yamllint") is None:
            self.skipTest("yamllint is not installed "
                          "(tools/install-deps test)")
        p = subprocess.run(["yamllint", "--strict", "-c",
                            os.path.join(harness.ROOT, ".yamllint")] +
                           self.files, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)


@unittest.skipIf(yaml is None, "python3-yaml is not installed "
                 "(tools/install-deps test)")
class TestShard(unittest.TestCase):
    """A shard as the ConfigMap configures it, with its paths and ports
    moved: the rest of its nddd.conf is as shipped."""

    def setUp(self):
        with open(os.path.join(DEPLOY, "configmap.yaml")) as f:
            cm, = [o for o in yaml.safe_load_all(f) if o]
        text = cm["data"]["nddd.conf"]
        conf = parse_conf(text)
        host = split_address(conf.get("server", "listen"))[0]
        mhost = split_address(conf.get("metrics", "listen"))[0]
        self.metrics_port = harness.free_port()
        self.daemon = harness.Daemon()
        self.addCleanup(self.daemon.cleanup)
        self.token = secrets.token_hex(24)
        tokens = os.path.join(self.daemon.dir, "tokens")
        fd = os.open(tokens, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("# made by test_deploy.py\n%s write\n" % self.token)
        moved = {
            ("server", "listen"): "%s:%d" % (host, self.daemon.port),
            ("metrics", "listen"): "%s:%d" % (mhost, self.metrics_port),
            ("store", "data_dir"): self.daemon.data_dir,
            ("auth", "tokens_file"): tokens,
            ("simhash", "stopwords"): STOPWORDS,
        }
        shard_conf = rewrite_conf(text, moved)
        changed = [(a, b) for a, b in zip(text.splitlines(),
                                          shard_conf.splitlines()) if a != b]
        self.assertEqual(len(changed), len(moved), changed)
        with open(self.daemon.conf_path, "w") as f:
            f.write(shard_conf)
        self.daemon.start()

    def http_get(self, path):
        url = "http://127.0.0.1:%d%s" % (self.metrics_port, path)
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()

    def test_health_and_a_submit(self):
        self.assertEqual(self.http_get("/health"), (200, b"ok\n"))
        status, body = self.http_get("/metrics")
        self.assertEqual(status, 200)
        self.assertIn(b"nddd_", body)

        url = "http://shard.example/%s" % secrets.token_hex(4)
        with nddd.Client(self.daemon.address, token=self.token,
                         timeout=10) as client:
            self.assertTrue(client.submit_url(url).new)
            self.assertTrue(client.check_url(url).seen)
        # The tokens file is in force: without a token, no submit.
        with mock.patch.dict(os.environ):
            os.environ.pop("NDDD_TOKEN", None)
            with nddd.Client(self.daemon.address, timeout=10) as anon:
                with self.assertRaises(nddd.NdddRequestError) as cm:
                    anon.submit_url(url + "/other")
                self.assertEqual(cm.exception.code,
                                 nddd.Code.PERMISSION_DENIED)
        self.assertEqual(self.daemon.stop(), 0, self.daemon.log())


if __name__ == "__main__":
    unittest.main()
