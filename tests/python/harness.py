"""A real nddd for the Python tests, on a free loopback port with its own
temporary directory and configuration.

The daemon is $NDDD_BIN (default daemon/nddd of the source tree), started
with NOTIFY_SOCKET pointing at a socket of the harness: "started" means it
said READY=1 (its filter rebuilt, its listener open).  Its standard error
goes to nddd.log in the directory, shown when a start fails.  The daemon
gets SIGKILL if the test process dies.

A daemon made with clock_ms reads its wall clock (the times URLs are
recorded at, and their times to live) from a file of the harness instead
of the system's clock (NDDD_TEST_CLOCK, for tests only), and the test moves
it at will: set_clock(ms), advance(seconds).
"""

import ctypes
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NDDD_BIN = os.environ.get("NDDD_BIN") or os.path.join(ROOT, "daemon", "nddd")
NDDCTL_BIN = (os.environ.get("NDDCTL_BIN")
              or os.path.join(ROOT, "clients", "nddctl"))
PYTHON = os.environ.get("PYTHON") or "/usr/bin/python3"
PYTHONPATH = os.path.join(ROOT, "clients", "python")
if PYTHONPATH not in sys.path:
    sys.path.insert(0, PYTHONPATH)

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _ephemeral_low():
    """The first port of the kernel's range for outgoing connections."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def free_port():
    """A loopback port nobody uses (at the time of asking), below the
    kernel's range for outgoing connections when there is room: a port of
    that range may become the local end of some client's connection before
    the daemon binds it, and its start then fails with "Address already in
    use"."""
    low = _ephemeral_low()
    rng = random.SystemRandom()
    for _ in range(64 if low > 11024 else 0):
        port = rng.randrange(10000, low)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certs(directory):
    """Certificates for TLS tests, made with the openssl command in
    directory: a CA (ca.pem), a server certificate for 127.0.0.1 and
    localhost (server.pem, server.key), client certificates of that CA for
    the subjects CN=crawler and CN=intruder (crawler.pem, .key, ...), and
    another CA (other.pem) with a client of its own (stranger.pem, .key).
    Returns a function from a file name to its path."""
    def openssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=directory, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def key_and_csr(name, subject):
        openssl("req", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-subj", subject,
                "-keyout", name + ".key", "-out", name + ".csr")

    def sign(name, ca, ext=None):
        openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem",
                "-CAkey", ca + ".key", "-CAcreateserial", "-days", "2",
                "-out", name + ".pem", *(["-extfile", ext] if ext else []))

    for ca in ("ca", "other"):
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                "-subj", "/CN=test-%s" % ca, "-keyout", ca + ".key",
                "-out", ca + ".pem")
    with open(os.path.join(directory, "server.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    key_and_csr("server", "/CN=localhost")
    sign("server", "ca", "server.ext")
    for name in ("crawler", "intruder"):
        key_and_csr(name, "/O=nddd tests/CN=%s" % name)
        sign(name, "ca")
    key_and_csr("stranger", "/CN=crawler")
    sign("stranger", "other")
    return lambda name: os.path.join(directory, name)


class Daemon:
    """One nddd: Daemon(extra_conf).start(), .stop(), .cleanup()."""

    def __init__(self, extra_conf="", port=None, clock_ms=None):
        self.dir = tempfile.mkdtemp(prefix="nddd-py-")
        self.data_dir = os.path.join(self.dir, "data")
        self.conf_path = os.path.join(self.dir, "nddd.conf")
        self.log_path = os.path.join(self.dir, "nddd.log")
        self.port = port or free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.proc = None
        self.clock_path = None
        self.clock_ms = None
        if clock_ms is not None:
            self.clock_path = os.path.join(self.dir, "clock")
            self.set_clock(clock_ms)
        with open(self.conf_path, "w") as f:
            f.write("[server]\nlisten = %s\nworkers = 2\n\n[store]\n"
                    "data_dir = %s\n\n[urls]\ncapacity = 100000\n\n[log]\n"
                    "level = debug\n" % (self.address, self.data_dir))
            if extra_conf:
                f.write("\n%s\n" % extra_conf)

    def start(self, timeout=60):
        notify_path = os.path.join(self.dir, "notify")
        if os.path.exists(notify_path):
            os.unlink(notify_path)
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            notify.bind(notify_path)
            env = dict(os.environ, NOTIFY_SOCKET=notify_path)
            env.pop("NDDD_TEST_CLOCK", None)
            if self.clock_path is not None:
                env["NDDD_TEST_CLOCK"] = self.clock_path
            with open(self.log_path, "ab") as log:
                # nddd refuses root unless told; tests may run as root.
                root = ["--allow-root"] if os.geteuid() == 0 else []
                self.proc = subprocess.Popen(
                    [NDDD_BIN, "-c", self.conf_path] + root,
                    stdin=subprocess.DEVNULL,
                    stdout=log, stderr=log, env=env,
                    preexec_fn=_die_with_parent)
            deadline = time.monotonic() + timeout
            while True:
                if self.proc.poll() is not None:
                    status = self.proc.returncode
                    self.proc = None
                    raise RuntimeError("nddd exited during start-up (%s):\n%s"
                                       % (status, self.log()))
                if time.monotonic() > deadline:
                    raise RuntimeError("nddd not ready in %d s:\n%s"
                                       % (timeout, self.log()))
                if select.select([notify], [], [], 0.1)[0]:
                    if b"READY=1" in notify.recv(4096):
                        return self
        finally:
            notify.close()

    def set_clock(self, ms):
        """Sets the wall clock of a daemon made with clock_ms to ms
        (milliseconds since the epoch), at once: the file is replaced
        whole (renamed over), as the daemon reads it at every use."""
        if self.clock_path is None:
            raise RuntimeError("this daemon reads the system's clock "
                               "(make it with clock_ms)")
        ms = int(ms)
        if ms <= 0:
            raise ValueError("the clock must be after the epoch")
        tmp = self.clock_path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d" % ms)
        os.replace(tmp, self.clock_path)
        self.clock_ms = ms

    def advance(self, seconds):
        """Moves the wall clock of a daemon made with clock_ms on by
        seconds (a float: milliseconds count)."""
        self.set_clock(self.clock_ms + round(seconds * 1000))

    def stop(self):
        """SIGTERM and wait; returns the exit status."""
        if self.proc is None:
            return None
        self.proc.send_signal(signal.SIGTERM)
        status = self.proc.wait(30)
        self.proc = None
        return status

    def kill(self):
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def pause(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return "(no log)"

    def cleanup(self):
        if self.proc is not None:
            self.resume()
            self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def nddctl(self, *args):
        """Runs nddctl against this daemon; returns (status, stdout)."""
        p = subprocess.run([NDDCTL_BIN, "-H", self.address] + list(args),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60)
        return p.returncode, p.stdout
