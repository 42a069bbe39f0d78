#!/usr/bin/env python3
"""The Player front-end's figures on a default stack (--control_hz 200):
GET_POSE2D round trips on simulation:0 (p50/p99), and position2d:0 data
delivered per wall second in PUSH mode and PULL rounds (REQ_DATA, data,
SYNCH) per second, with the test's own Player client (tests/python).

    PA_BIN_DIR=build/bin python3 bench/player_bench.py [--seconds 5] [--n 2000]

Needs a quiet machine for figures worth keeping (docs/player.md)."""

import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from playerproto import (ACK, DATA, PLAYER, POSITION2D, PULL, SIMULATION,  # noqa: E402
                         SYNCH, Client, f64, xname)
from stack import Stack, bin_dir  # noqa: E402


def player_port(stack):
    out = subprocess.run([bin_dir() + "/playarea", "status", "--instance", stack.instance],
                         capture_output=True, text=True, timeout=30).stdout.split()
    return int(out[out.index("player/player") + 2])


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--n", type=int, default=2000)
    a = p.parse_args()
    stack = Stack("--no-render", "--control_hz", "200")
    try:
        port = player_port(stack)
        c = Client(port)
        c.subscribe(SIMULATION, 0)
        body = xname("robot0") + f64(0, 0, 0)
        rtt = []
        for _ in range(a.n):
            t0 = time.perf_counter()
            m = c.request(SIMULATION, 0, 1, body)
            rtt.append(time.perf_counter() - t0)
            assert m.type == ACK
        print("GET_POSE2D round trip: n %d p50 %.1f us p99 %.1f us" %
              (a.n, pct(rtt, 50) * 1e6, pct(rtt, 99) * 1e6))
        c.close()

        push = Client(port)
        push.subscribe(POSITION2D, 0)
        push.request(PLAYER, 0, 1)
        push.pending.clear()
        n, ticks, end = 0, set(), time.monotonic() + a.seconds
        t_first = t_last = None
        while time.monotonic() < end:
            m = push.read()
            if m.type == DATA and m.interf == POSITION2D:
                n += 1
                ticks.add(m.time)
                t_first = m.time if t_first is None else t_first
                t_last = m.time
        print("position2d PUSH: %.1f data/s wall (%d in %.1f s), %d distinct sim times, "
              "%.1f data per sim second" % (n / a.seconds, n, a.seconds, len(ticks),
                                            (n - 1) / max(1e-9, t_last - t_first)))
        push.close()

        pull = Client(port)
        pull.datamode(PULL)
        pull.subscribe(POSITION2D, 0)
        rounds, end = 0, time.monotonic() + a.seconds
        while time.monotonic() < end:
            msgs = pull.pull_round()
            assert msgs[-1].type == SYNCH
            rounds += 1
        print("position2d PULL: %.1f rounds/s (REQ_DATA -> data -> SYNCH)" %
              (rounds / a.seconds))
        pull.close()
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
