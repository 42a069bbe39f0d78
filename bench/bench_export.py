#!/usr/bin/python3
"""bench_export.py - pa-sim's tick period while export_dataset runs, against the
same stack idle, in one run: ticks per second, pa-sim's overrun counter and its
loop period p99 (from /metrics) over SECONDS without an export, then over an
export of the same length with every option (render_image, pack_dataset).

usage: bench/bench_export.py [--robots N] [--seconds S] [--hz HZ] [--bin DIR]
With more than 8 robots only robot 0's camera is recorded (every robot's
poses and scans are). The build's bin directory defaults to build/bin; the
machine should be quiet."""

import argparse
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from stack import Stack  # noqa: E402


def metric(url, name):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    m = re.search(r'^%s\{process="sim"\} (\S+)$' % re.escape(name), text, re.M)
    return float(m.group(1)) if m else float("nan")


def request(conn, action, data=None, type_="command"):
    s, f = conn
    s.sendall(json.dumps({"type": type_, "action": action, "data": data or {}}).encode() + b"\n")
    return json.loads(f.readline())


def window(stack, url, seconds, during=None):
    """(ticks/s, overruns, p99 ms at the end) over seconds, running during() meanwhile."""
    c = socket.create_connection((stack.host, stack.port), timeout=seconds + 120)
    conn = (c, c.makefile("rb"))
    o0 = metric(url, "playarea_process_overruns_total")
    k0 = request(conn, "get_status", type_="sim_control")["data"]["tick"]
    t0 = time.monotonic()
    result = {}
    th = None
    if during:
        th = threading.Thread(target=lambda: result.update(during()))
        th.start()
    time.sleep(seconds)
    k1 = request(conn, "get_status", type_="sim_control")["data"]["tick"]
    t1 = time.monotonic()
    o1 = metric(url, "playarea_process_overruns_total")
    p99 = metric(url, "playarea_process_loop_period_p99_seconds") * 1e3
    if th:
        th.join()
    conn[1].close()
    c.close()
    return (k1 - k0) / (t1 - t0), o1 - o0, p99, result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--robots", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--hz", type=float, default=200.0)
    ap.add_argument("--bin", default=os.path.join(HERE, "..", "build", "bin"))
    ap.add_argument("--first_form", action="store_true",
                    help="{name, seconds} under --dataset_dir only (CSV, no images, "
                         "no archive): what an older pa-sim also runs, for a comparison")
    a = ap.parse_args()
    os.environ["PA_BIN_DIR"] = os.path.abspath(a.bin)
    data = tempfile.mkdtemp(prefix="pa-bench-export-")
    stack = None
    try:
        stack = Stack("--data_dir", data, "--dataset_dir", data, "--robots", str(a.robots),
                      "--control_hz", str(a.hz), "--camera_width", "320", "--camera_height", "240")
        url = None
        deadline = time.monotonic() + 20
        while not url and time.monotonic() < deadline:
            m = re.search(r"web: (http://[0-9.:]+)/", stack.log_tail(400))
            url = m.group(1) if m else None
            time.sleep(0.1)
        if not url:
            sys.exit("no web: line in the stack's log (give the stack an --http_port)")
        time.sleep(1.0)  # settle after start

        def export():
            c = socket.create_connection((stack.host, stack.port), timeout=a.seconds + 120)
            conn = (c, c.makefile("rb"))
            t = time.monotonic()
            req = {"export_dir": "bench", "render_image": True, "pack_dataset": True,
                   "seconds": a.seconds}
            if a.robots > 8:  # at most 8 cameras per export: robot 0's
                req["robot"] = 0
            if a.first_form:
                req = {"name": "bench", "seconds": a.seconds}
            rep = request(conn, "export_dataset", req)
            took = time.monotonic() - t
            conn[1].close()
            c.close()
            return {"reply": rep, "took": took}

        idle = window(stack, url, a.seconds)
        busy = window(stack, url, a.seconds, export)
        d = busy[3]["reply"].get("data", busy[3]["reply"])
        size = os.path.getsize(os.path.join(data, "bench.tar.gz")) if \
            os.path.exists(os.path.join(data, "bench.tar.gz")) else 0
        print("robots %d, control_hz %.0f, %.1f s windows (machine load: %s)"
              % (a.robots, a.hz, a.seconds, open("/proc/loadavg").read().split()[0]))
        print("idle:   %7.1f ticks/s  %4d overruns  p99 %.3f ms" % idle[:3])
        print("export: %7.1f ticks/s  %4d overruns  p99 %.3f ms" % busy[:3])
        print("ratio export/idle: ticks/s %.3f" % (busy[0] / idle[0]))
        print("export: %s, %s rows, %s scans, %s images (%s lost), archive %.1f MB, "
              "reply after %.1f s" % (d.get("status"), d.get("rows"), d.get("scans"),
                                      d.get("images"), d.get("images_lost"), size / 1e6,
                                      busy[3]["took"]))
    finally:
        if stack:
            stack.stop()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
