"""The package builds as a wheel from clients/python (pyproject.toml,
setuptools, offline), generating its protocol module from proto/nddd.proto
itself, and the wheel imports on its own."""

import os
import shutil
import subprocess
import tempfile
import unittest
import zipfile

import harness


def _have_pip():
    return subprocess.run([harness.PYTHON, "-m", "pip", "--version"],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


class TestPackage(unittest.TestCase):
    def setUp(self):
        if not _have_pip():
            self.skipTest("pip is not installed for %s (python3-pip)"
                          % harness.PYTHON)
        self.tmp = tempfile.mkdtemp(prefix="nddd-pkg-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def test_wheel(self):
        # A copy of the source layout without the generated module, so that
        # the build has to run protoc and leaves the tree alone.
        src = os.path.join(self.tmp, "clients", "python")
        shutil.copytree(os.path.join(harness.ROOT, "clients", "python"), src,
                        ignore=shutil.ignore_patterns(
                            "nddd_pb2.py", "__pycache__", "build",
                            "*.egg-info"))
        shutil.copytree(os.path.join(harness.ROOT, "proto"),
                        os.path.join(self.tmp, "proto"))
        dist = os.path.join(self.tmp, "dist")
        p = subprocess.run(
            [harness.PYTHON, "-m", "pip", "wheel", "--no-build-isolation",
             "--no-deps", "--no-index", "-w", dist, src],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout)
        wheels = os.listdir(dist)
        self.assertEqual(len(wheels), 1, wheels)
        self.assertTrue(wheels[0].startswith("nddd-"), wheels)
        site = os.path.join(self.tmp, "site")
        with zipfile.ZipFile(os.path.join(dist, wheels[0])) as z:
            names = z.namelist()
            z.extractall(site)
        for module in ("__init__", "client", "errors", "results", "scrapy",
                       "nddd_pb2", "_proto"):
            self.assertIn("nddd/%s.py" % module, names)
        code = ("import sys; sys.path.insert(0, %r); import nddd, "
                "nddd.scrapy; assert nddd.__file__.startswith(%r), "
                "nddd.__file__; print(nddd.Code.RESOURCE_EXHAUSTED.name)"
                % (site, site))
        p = subprocess.run([harness.PYTHON, "-I", "-c", code],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertEqual(p.stdout.strip(), "RESOURCE_EXHAUSTED")


if __name__ == "__main__":
    unittest.main()
