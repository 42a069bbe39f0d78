#!/usr/bin/env python3
"""Where one NavEnv's step goes: a NavEnv over TCP and one with shm=True (the
Unix-domain socket of pa-netgw's --unix_socket), each on its own stack of this
tree, stepped in turn in 0.5 s windows whose order alternates, so that load
from other jobs hits both alike; the CPU of Python, pa-netgw and pa-sim per
step is read from /proc (spin-waits included).

    /usr/bin/python3 bench/navenv_where.py [--rounds 16] [--stack-arg=--threads=1 ...]

Uses ROOT/build/bin unless PA_BIN_DIR is set. Prints steps/s, wall and CPU
per step of each path, and shm/TCP."""

import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "clients", "python"))
os.environ.setdefault("PA_BIN_DIR", os.path.join(ROOT, "build", "bin"))

import numpy as np  # noqa: E402

from playarea.env import NavEnv  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def children(pid):
    """{comm: pid} of the launcher's children."""
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                st = f.read().rsplit(")", 1)[1].split()
            with open("/proc/%s/comm" % p) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(st[1]) == pid:
            out[comm] = int(p)
    return out


def cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    return (int(st[11]) + int(st[12])) / HZ


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=16)
    p.add_argument("--window", type=float, default=0.5)
    p.add_argument("--stack-arg", action="append", default=[],
                   help="a playarea flag for both stacks, e.g. --stack-arg=--threads=1")
    a = p.parse_args()
    sargs = [x for s in a.stack_arg for x in s.split("=", 1)]
    envs = {}
    try:
        for k in ("tcp", "shm"):
            envs[k] = NavEnv(beams=360, max_episode_steps=10 ** 9, shm=k == "shm",
                             stack_args=sargs)
        act = np.zeros(2, np.float32)
        for e in envs.values():
            e.reset(seed=0)
            for _ in range(300):
                e.step(act)
        procs = {k: children(e.world.stack.proc.pid) for k, e in envs.items()}
        tot = {k: [0, 0.0, 0.0, 0.0, 0.0] for k in envs}
        load0 = open("/proc/loadavg").read().split()[:3]
        for r in range(a.rounds):
            for k in (("tcp", "shm") if r % 2 else ("shm", "tcp")):
                e, ps = envs[k], procs[k]
                g0, s0 = cpu(ps["pa-netgw"]), cpu(ps["pa-sim"])
                c0, t0 = time.process_time(), time.perf_counter()
                n = 0
                while time.perf_counter() - t0 < a.window:
                    e.step(act)
                    n += 1
                t = tot[k]
                t[0] += n
                t[1] += time.perf_counter() - t0
                t[2] += time.process_time() - c0
                t[3] += cpu(ps["pa-netgw"]) - g0
                t[4] += cpu(ps["pa-sim"]) - s0
        print("load before: %s, after: %s" % (" ".join(load0),
                                               " ".join(open("/proc/loadavg").read().split()[:3])))
        for k, t in tot.items():
            n = t[0]
            print("%s: %6.0f steps/s, wall %5.1f us/step; CPU per step: Python %.1f us, "
                  "pa-netgw %.1f us, pa-sim %.1f us"
                  % (k, n / t[1], t[1] / n * 1e6, t[2] / n * 1e6, t[3] / n * 1e6, t[4] / n * 1e6))
        rate = {k: t[0] / t[1] for k, t in tot.items()}
        print("shm/tcp %.2f" % (rate["shm"] / rate["tcp"]))
    finally:
        for e in envs.values():
            e.close()


if __name__ == "__main__":
    main()
