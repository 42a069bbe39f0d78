#!/usr/bin/env python3
"""Python client benchmark: prints figures, asserts nothing.

  - odom frames/s received (and lost) at 100 Hz and at 1 kHz feedback
  - camera images/s received (and dropped) at the default 640x480, 15 Hz
  - lockstep JSON step() round trips per second (and latency percentiles)

Starts its own stacks (`playarea --tcp_port 0`) from --bin-dir (default
$PA_BIN_DIR, else build/bin). Run with the system interpreter:

  /usr/bin/python3 bench/python_bench.py [--duration 5]
"""

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import stack  # noqa: E402  (the tests' launcher wrapper: ready line, SIGTERM, cleanup)
from playarea import Robot, Sim  # noqa: E402


def odom_rate(args, hz):
    flags = ["--no-render", "--tcp_feedback_hz", str(hz)]
    if hz > 200:
        flags += ["--control_hz", str(hz)]
    s = stack.Stack(*flags)
    try:
        with Robot(s.host, s.port, timeout=10) as r:
            r.set_speed(0.2, 0.3)
            r.subscribe_odom()
            time.sleep(0.5)  # past start-up
            st0 = r.stats("odom")
            t0 = time.monotonic()
            time.sleep(args.duration)
            st1 = r.stats("odom")
            dt = time.monotonic() - t0
        got = st1["received"] - st0["received"]
        lost = st1["dropped"] - st0["dropped"]
        late = st1["late"] - st0["late"]
        print("odom @ %4d Hz feedback: %8.1f frames/s received, %d lost, %d late of %d (%.3f%% loss) over %.1f s"
              % (hz, got / dt, lost, late, got + lost, 100.0 * lost / max(got + lost, 1), dt))
    finally:
        s.stop()


def camera_rate(args):
    s = stack.Stack()
    try:
        with Robot(s.host, s.port, timeout=30) as r:
            r.set_speed(0.0, 0.5, head=0.3)
            r.subscribe_camera()
            time.sleep(0.5)
            st0 = r.stats("camera")
            t0 = time.monotonic()
            time.sleep(args.duration)
            st1 = r.stats("camera")
            dt = time.monotonic() - t0
            img = r.camera
        got = st1["received"] - st0["received"]
        print("camera %dx%d @ 15 Hz: %6.1f images/s received, %d dropped (%d incomplete) over %.1f s"
              % (img.width, img.height, got / dt, st1["dropped"] - st0["dropped"],
                 st1["incomplete"] - st0["incomplete"], dt))
    finally:
        s.stop()


def lockstep(args):
    s = stack.Stack("--no-render")
    try:
        with Sim(s.host, s.port, timeout=10) as sim:
            sim.pause()
            sim.step(steps=1)
            # A paused simulator runs a step as soon as it arrives, whatever the speed: both must match.
            for scale in (1, 0):
                sim.set_time_scale(scale)
                for label, fn in (("step(v, w, steps=1)", lambda: sim.step(0.2, 0.1, steps=1)),
                                  ("step_n(1)", lambda: sim.step_n(1)),
                                  ("get_state()", lambda: sim.get_state())):
                    lat = []
                    end = time.monotonic() + args.duration
                    while time.monotonic() < end:
                        t = time.perf_counter()
                        fn()
                        lat.append(time.perf_counter() - t)
                    lat.sort()
                    print("lockstep speed %d %-20s %8.1f calls/s  latency p50 %.3f ms  p99 %.3f ms  (%d calls)"
                          % (scale, label, len(lat) / sum(lat), 1e3 * statistics.median(lat),
                             1e3 * lat[int(0.99 * (len(lat) - 1))], len(lat)))
                n = 0
                t0 = time.perf_counter()
                end = time.monotonic() + args.duration
                while time.monotonic() < end:
                    sim.batch([("step", {"v": 0.2, "w": 0.1, "steps": 1})] * 64)
                    n += 64
                print("lockstep speed %d step in batches of 64: %8.1f steps/s"
                      % (scale, n / (time.perf_counter() - t0)))
    finally:
        s.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--duration", type=float, default=5.0, help="seconds per measurement (default 5)")
    p.add_argument("--bin-dir", help="where playarea is (default $PA_BIN_DIR, else build/bin)")
    args = p.parse_args()
    if args.bin_dir:
        os.environ["PA_BIN_DIR"] = args.bin_dir
    elif not os.environ.get("PA_BIN_DIR"):
        os.environ["PA_BIN_DIR"] = os.path.join(ROOT, "build", "bin")
    print("python %s, playarea from %s" % (sys.version.split()[0], stack.bin_dir()))
    odom_rate(args, 100)
    odom_rate(args, 1000)
    camera_rate(args)
    lockstep(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
