#!/usr/bin/env python3
"""NavVectorEnv(N, shm=True) through the step lane's batch against the same env
over the socket (step_batch with observe "shm" through pa-netgw) and against
the simulator free-running, on one stack, in interleaved windows (the load of
other jobs hits all three alike).

    /usr/bin/python3 bench/vec_lane_ab.py [--robots 1000] [--rounds 8] [--window 0.5]

env/free is rl_bench.py's figure (robot-steps/s of env.step over those of
step_n of many decision periods); CPU is us per robot-step by process
(/proc, spin-waits included).
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients", "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from playarea.env import NavVectorEnv  # noqa: E402
from rl_bench import cpu_of, stack_pids, timed  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--robots", type=int, default=1000)
    p.add_argument("--beams", type=int, default=360)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--window", type=float, default=0.5)
    a = p.parse_args()
    print("load before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    env = NavVectorEnv(num_envs=a.robots, beams=a.beams, max_episode_steps=10 ** 9, shm=True)
    try:
        env.reset(seed=0)
        w = env.world
        lane = w.lane
        if lane is None:
            sys.exit("no step lane (PA_STEP_LANE=0, or these binaries have none)")
        pids = {k: v for k, v in stack_pids(env).items() if k in ("pa-sim", "pa-netgw")}
        acts = np.zeros((a.robots, 2), np.float32)
        k = env.decision_ticks
        c = w.conn

        def via(on):
            def step():
                w.lane = lane if on else None
                try:
                    env.step(acts)
                finally:
                    w.lane = lane
            return step
        lock = lambda: c.request("step_n", {"steps": k}, type="sim_control")  # noqa: E731
        for _ in range(3):
            via(True)()
            via(False)()
        n, dt, _ = timed(lock, 0.2)
        per = max(1, int(0.1 * n / dt))
        free = lambda: c.request("step_n", {"steps": k * per}, type="sim_control")  # noqa: E731
        names = ("lane", "socket", "free")
        fns = {"lane": (via(True), 1), "socket": (via(False), 1), "free": (free, per)}
        tot = {m: [0, 0.0, 0.0] for m in names}
        cpu = {m: dict.fromkeys(pids, 0.0) for m in names}
        for r in range(a.rounds):
            order = names if r % 2 == 0 else names[::-1]
            for m in order:
                s0 = cpu_of(pids)
                got, dt, cp = timed(fns[m][0], a.window, fns[m][1])
                s1 = cpu_of(pids)
                tot[m][0] += got
                tot[m][1] += dt
                tot[m][2] += cp
                for name in pids:
                    cpu[m][name] += s1[name] - s0[name]
        rate = {m: a.robots * v[0] / v[1] for m, v in tot.items()}
        print("%-7s %12s %9s %9s %9s %9s" % ("path", "robot-st/s", "env/free", "python", "pa-netgw",
                                             "pa-sim"))
        for m in names:
            ns = a.robots * tot[m][0]
            print("%-7s %12.0f %9.3f %9.2f %9.2f %9.2f" % (
                m, rate[m], rate[m] / rate["free"], 1e6 * tot[m][2] / ns,
                1e6 * cpu[m].get("pa-netgw", 0) / ns, 1e6 * cpu[m].get("pa-sim", 0) / ns))
    finally:
        env.close()
    print("load after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
