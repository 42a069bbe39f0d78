#!/usr/bin/python3
"""atlas_bench.py - batched head cameras into numpy, end to end: frames/s of
NavVectorEnv(num_envs=N, observation="camera") stepping (step_batch + one
camera_batch per step, every robot's w x h image copied out of shared memory
into a new numpy array), and of camera_batch alone on the same stack (no
simulation step: what rendering and delivery cost). Windows of both kinds
alternate so that load from other jobs hits them alike; CPU seconds of
pa-render, pa-netgw, pa-sim and Python per frame come from /proc.

  PA_BIN_DIR=build/bin /usr/bin/python3 bench/atlas_bench.py [--envs 64]
      [--size 84x84] [--seconds 3] [--rounds 3] [--contexts N]

--contexts N: pa-render's --atlas_contexts (GL contexts drawing a batch at
once; unset: its default, one a CPU up to 4).
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "clients", "python"))
import numpy as np  # noqa: E402

from playarea.env import NavVectorEnv  # noqa: E402

TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / TCK


def children(pid):
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                s = f.read()
            with open("/proc/%s/comm" % d) as f:
                comm = f.read().strip()
        except OSError:
            continue
        if int(s.rsplit(")", 1)[1].split()[1]) == pid:
            out[comm] = int(d)
    return out


def cpu_now(procs):
    c = {k: proc_cpu(p) for k, p in procs.items()}
    t = os.times()
    c["python"] = t.user + t.system
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--envs", type=int, default=64)
    ap.add_argument("--size", default="84x84", help="WIDTHxHEIGHT")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--contexts", type=int, default=None,
                    help="pa-render --atlas_contexts (default: its own)")
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    extra = ("--atlas_contexts", a.contexts) if a.contexts else ()
    env = NavVectorEnv(num_envs=a.envs, observation="camera", camera_size=(h, w),
                       stack_args=extra)
    try:
        procs = children(env.world.stack.proc.pid)
        procs = {k: v for k, v in procs.items() if k in ("pa-render", "pa-netgw", "pa-sim")}
        print("atlas_bench: %d robots x %dx%d, %s, pa-render --atlas_contexts %s; "
              "load %s" % (a.envs, w, h, os.uname().machine,
                           a.contexts if a.contexts else "default",
                           " ".join("%.2f" % x for x in os.getloadavg())))
        env.reset(seed=1)
        world = env.world
        first = int(env.robots[0])
        res = {"env.step": [], "camera_batch": []}
        cpu = {"env.step": {}, "camera_batch": {}}
        draw = []  # pa-render's own time a batch (the segment's render_ns)
        for _ in range(a.rounds):
            for kind in ("env.step", "camera_batch"):
                c0, frames = cpu_now(procs), 0
                t0 = time.monotonic()
                while time.monotonic() - t0 < a.seconds:
                    if kind == "env.step":
                        obs = env.step(env.action_space.sample())[0]
                        assert obs["camera"].shape == (a.envs, h, w, 3)
                    else:
                        r = world.conn.request("camera_batch", {
                            "width": w, "height": h, "robots_range": [first, a.envs]})
                        world.atlas.read(r["seq"])
                        draw.append(world.atlas._u("render_ns"))
                    frames += a.envs
                dt = time.monotonic() - t0
                c1 = cpu_now(procs)
                res[kind].append(frames / dt)
                for k in c1:
                    cpu[kind].setdefault(k, []).append((c1[k] - c0[k]) / frames * 1e6)
        print("load after: %s" % " ".join("%.2f" % x for x in os.getloadavg()))
        for kind, v in res.items():
            print("%-13s frames/s %s  (median %.0f)" % (
                kind, " ".join("%.0f" % x for x in v), float(np.median(v))))
        if draw:
            d = float(np.median(draw))
            print("camera_batch: pa-render draws a batch in %.0f us (median): %.0f "
                  "frames/s while it draws" % (d / 1e3, a.envs * 1e9 / d))
        print("CPU us per frame (median of the rounds)")
        for kind in res:
            print("  %-13s %s" % (kind, "  ".join(
                "%s %.1f" % (k, float(np.median(v))) for k, v in sorted(cpu[kind].items()))))
    finally:
        env.close()


if __name__ == "__main__":
    main()
