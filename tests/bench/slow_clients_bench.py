#!/usr/bin/python3
"""The memory a daemon holds for clients that send and never read.

    PYTHONPATH=clients/python tests/bench/slow_clients_bench.py \\
        --bin BIN_DIR [--bin OTHER_BIN_DIR ...] [--clients 20]

For each nddd binary given (BIN_DIR/nddd), in the same run: a daemon on
loopback with a fresh data directory and its default [server] settings
(workers = 2); --clients connections each send url_check requests of
10,000 invalid URLs ("x": 30 KB asked, about 310 KB answered), as fast as
the daemon reads them, and never read a reply, until their sends have
stalled for a second.  Printed: the daemon's anonymous memory (smaps_rollup)
grown meanwhile, in MiB, and per client; then whether a fresh client is
still served.  Figures of different binaries compare only within a run.
"""

import argparse
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from nddd import nddd_pb2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def anon_bytes(pid):
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Anonymous:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no Anonymous line in smaps_rollup")


def check_frame(n):
    req = nddd_pb2.Request(id=1)
    req.url_check.urls.extend([b"x"] * n)
    payload = req.SerializeToString()
    return struct.pack(">I", len(payload)) + payload


def flood(port, frame):
    """Sends frame over and over until sends stall for a second."""
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    off, stalled_since = 0, None
    while True:
        try:
            off += s.send(frame[off:])
            if off == len(frame):
                off = 0
            stalled_since = None
        except BlockingIOError:
            now = time.monotonic()
            stalled_since = stalled_since or now
            if now - stalled_since > 1.0:
                return s
            time.sleep(0.02)


def served(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    req = nddd_pb2.Request(id=7)
    req.url_check.urls.append(b"http://bench.example/")
    payload = req.SerializeToString()
    s.sendall(struct.pack(">I", len(payload)) + payload)
    head = s.recv(4, socket.MSG_WAITALL)
    body = s.recv(struct.unpack(">I", head)[0], socket.MSG_WAITALL)
    s.close()
    resp = nddd_pb2.Response.FromString(body)
    return resp.id == 7 and resp.WhichOneof("result") == "urls"


def run(bin_dir, clients):
    tmp = tempfile.mkdtemp(prefix="nddd-slowbench.")
    port = free_port()
    conf = os.path.join(tmp, "nddd.conf")
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:%d\nworkers = 2\n"
                "[store]\ndata_dir = %s/data\n" % (port, tmp))
    args = [os.path.join(bin_dir, "nddd"), "-c", conf]
    if os.geteuid() == 0:
        args.append("--allow-root")
    proc = subprocess.Popen(args, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    sys.exit("slow_clients_bench: nddd did not start")
                time.sleep(0.1)
        served(port)
        before = anon_bytes(proc.pid)
        frame = check_frame(10000)
        socks = [flood(port, frame) for _ in range(clients)]
        grown = anon_bytes(proc.pid) - before
        ok = served(port)
        open_now = len(socks)
        for s in socks:
            s.close()
        print("binary=%s clients=%d grown_mib=%.1f per_client_mib=%.1f "
              "fresh_client_served=%s" % (bin_dir, open_now, grown / 2**20,
                                          grown / 2**20 / clients, ok))
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", action="append", required=True)
    ap.add_argument("--clients", type=int, default=20)
    opts = ap.parse_args()
    for b in opts.bin:
        run(b, opts.clients)


if __name__ == "__main__":
    main()
