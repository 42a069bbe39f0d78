#!/usr/bin/env python3
"""One NavEnv's steps per second for two builds side by side, so that load from
other jobs hits both alike: one process per (build, path) holds a NavEnv
(360-beam observations, a decision every 20 ticks) and the driver steps them
in turn, in short windows whose order rotates every round.

    /usr/bin/python3 bench/navenv_ab.py OLD_ROOT NEW_ROOT [--rounds 16] [--window 0.4]

A root is a source tree with its build in ROOT/build/bin (its clients/python
is the env's code). Prints steps/s and the Python CPU per step of each."""

import argparse
import os
import subprocess
import sys
import time


def worker(root, path):
    sys.path.insert(0, os.path.join(root, "clients", "python"))
    import numpy as np
    from playarea.env import NavEnv
    env = NavEnv(beams=360, max_episode_steps=10 ** 9, shm=path == "shm")
    try:
        env.reset(seed=0)
        a = np.zeros(2, np.float32)
        for _ in range(300):
            env.step(a)
        print("ready", flush=True)
        for line in sys.stdin:
            w = float(line)
            n, t0, c0 = 0, time.perf_counter(), time.process_time()
            while time.perf_counter() - t0 < w:
                env.step(a)
                n += 1
            print(n, time.perf_counter() - t0, time.process_time() - c0, flush=True)
    finally:
        env.close()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker(sys.argv[2], sys.argv[3])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--window", type=float, default=0.4, help="seconds per env per round")
    a = p.parse_args()
    ws = {}
    try:
        for name, root in (("old", a.old), ("new", a.new)):
            for path in ("tcp", "shm"):
                env = dict(os.environ, PA_BIN_DIR=os.path.join(os.path.abspath(root), "build", "bin"))
                w = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker",
                                      os.path.abspath(root), path], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                ws[(name, path)] = [w, 0, 0.0, 0.0]
                if w.stdout.readline().strip() != "ready":
                    sys.exit("the %s %s env did not start" % (name, path))
        print("load before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        for r in range(a.rounds):
            items = list(ws.items())
            items = items[r % len(items):] + items[:r % len(items)]
            if r % 2:
                items.reverse()
            for _, v in items:
                v[0].stdin.write("%g\n" % a.window)
                v[0].stdin.flush()
                n, dt, cp = v[0].stdout.readline().split()
                v[1] += int(n)
                v[2] += float(dt)
                v[3] += float(cp)
        print("load after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        for (name, path), v in ws.items():
            print("%-4s NavEnv %s: %7.0f steps/s, Python CPU %5.1f us/step"
                  % (name, path, v[1] / v[2], 1e6 * v[3] / v[1]))
    finally:
        for v in ws.values():
            v[0].stdin.close()
            v[0].wait()


if __name__ == "__main__":
    main()
