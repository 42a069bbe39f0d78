#!/usr/bin/env python3
"""Robot-steps per second into numpy: NavEnv and NavVectorEnv (64/256/1000 robots),
360-beam observations, a decision every 20 ticks (10 Hz at --control_hz 200),
against the simulator's own rate for the same ticks (step_n, no observations).

    PA_BIN_DIR=build/bin python3 bench/rl_bench.py [--seconds 3] [--sizes 64,256,1000]

Each line: env and read path (tcp: the binary step_batch reply; shm: the
reply's header over TCP, observations from shared memory), env
robot-steps/s, sim-only robot-steps/s, their ratio.
Needs a quiet machine for figures worth keeping (docs/rl.md has some).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
from playarea.env import NavEnv, NavVectorEnv  # noqa: E402


def rate(fn, seconds):
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds or n < 3:
        fn()
        n += 1
    return n / (time.perf_counter() - t0)


def sim_only(env, robots, seconds):
    c = env.world.conn
    return robots * rate(lambda: c.request("step_n", {"steps": env.decision_ticks}, type="sim_control"),
                         seconds)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--sizes", default="64,256,1000")
    a = p.parse_args()
    print("cpu: %s, load: %s" % (cpu_model(), open("/proc/loadavg").read().split()[:3]))
    print("%-26s %14s %14s %7s" % ("env", "steps/s", "sim-only/s", "ratio"))
    for shm in (False, True):
        env = NavEnv(beams=360, max_episode_steps=10 ** 9, shm=shm)
        try:
            env.reset(seed=0)
            act = np.zeros(2, np.float32)
            r = rate(lambda: env.step(act), a.seconds)
            s = sim_only(env, 1, a.seconds)
            print("%-26s %14.0f %14.0f %7.2f" % ("NavEnv " + ("shm" if shm else "tcp"), r, s, r / s),
                  flush=True)
        finally:
            env.close()
    for n in [int(x) for x in a.sizes.split(",") if x]:
        for shm in (False, True):
            env = NavVectorEnv(num_envs=n, beams=360, max_episode_steps=10 ** 9, shm=shm)
            try:
                env.reset(seed=0)
                acts = np.zeros((n, 2), np.float32)
                r = n * rate(lambda: env.step(acts), a.seconds)
                s = sim_only(env, n, a.seconds)
                print("%-26s %14.0f %14.0f %7.2f" % ("NavVectorEnv(%d) %s" % (n, "shm" if shm else "tcp"),
                                                     r, s, r / s), flush=True)
            finally:
                env.close()


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return "%s x%d" % (line.split(":", 1)[1].strip(), os.cpu_count())
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    main()
