#!/usr/bin/env python3
"""Cross-entropy method on NavEnv's task, numpy only: a population of linear
policies, one robot each, evaluated together in one NavVectorEnv.

    python3 examples/rl/cem_nav.py                 # 40 generations, ~5 s on 2 cores
    python3 examples/rl/cem_nav.py --plot curve.png

Each generation samples `pop` parameter vectors from a Gaussian, runs one
episode per vector (same seeds for all: common random numbers), keeps the
best `elite` and refits the Gaussian to them. Printed per generation: the
mean return of the population and of the elite, and the success rate.
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
from playarea.env import NavVectorEnv  # noqa: E402


def features(obs, range_max):
    """[scan / range_max, dist / 5, cos(bearing), sin(bearing), v, w, 1]."""
    scan, g, vel = obs[:, :-4], obs[:, -4:-2], obs[:, -2:]
    return np.concatenate([scan / range_max, g[:, :1] / 5.0, np.cos(g[:, 1:]), np.sin(g[:, 1:]),
                           vel, np.ones((len(obs), 1))], axis=1)


def act(theta, x, max_v, max_w):
    """Per robot: v = max_v * sigmoid(a.x), w = max_w * tanh(b.x)."""
    d = x.shape[1]
    a, b = theta[:, :d], theta[:, d:]
    v = max_v / (1.0 + np.exp(-np.sum(a * x, axis=1)))
    w = max_w * np.tanh(np.sum(b * x, axis=1))
    return np.stack([v, w], axis=1).astype(np.float32)


def episode(env, theta, seed, horizon, rmax, max_v, max_w):
    """One episode per robot, robot i with policy theta[i]: (returns, successes)."""
    n = env.num_envs
    obs, _ = env.reset(seed=seed)
    ret = np.zeros(n)
    done = np.zeros(n, dtype=bool)
    success = np.zeros(n, dtype=bool)
    for _ in range(horizon):
        obs, r, te, tr, info = env.step(act(theta, features(obs, rmax), max_v, max_w))
        ret += np.where(done, 0.0, r)
        success |= info["is_success"] & ~done
        done |= te | tr
        if done.all():
            break
    return ret, success


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=40)
    p.add_argument("--pop", type=int, default=32)
    p.add_argument("--elite", type=int, default=6)
    p.add_argument("--horizon", type=int, default=60, help="decisions per episode (10 Hz)")
    p.add_argument("--seconds", type=float, default=0, help="stop after this long (0 = never)")
    p.add_argument("--plot", help="write the learning curve (PNG) here")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    env = NavVectorEnv(num_envs=a.pop, flat=True, beams=12, max_episode_steps=a.horizon,
                       min_goal_dist=1.0, max_goal_dist=3.0)
    t0 = time.monotonic()
    curve = []
    try:
        rmax, max_v, max_w = env.world.range_max, env.world.max_v * 0.5, env.world.max_w * 0.5
        dim = 2 * (12 + 6)
        mu, sigma = np.zeros(dim), np.full(dim, 1.0)
        def evaluate(m):  # the mean policy on held-out episodes, one per robot
            ret, ok = episode(env, np.tile(m, (a.pop, 1)), 999999, a.horizon, rmax, max_v, max_w)
            return ret.mean(), ok.mean()
        before = evaluate(mu)
        for gen in range(a.generations):
            theta = mu + sigma * rng.standard_normal((a.pop, dim))
            ret, success = episode(env, theta, 1000 * gen + a.seed, a.horizon, rmax, max_v, max_w)
            order = np.argsort(ret)[::-1][:a.elite]
            mu = theta[order].mean(axis=0)
            sigma = theta[order].std(axis=0) + 0.05
            curve.append((gen, ret.mean(), ret[order].mean(), success.mean()))
            print("gen %2d  mean %7.3f  elite %7.3f  success %.2f  (%.0f s)"
                  % (gen, ret.mean(), ret[order].mean(), success.mean(), time.monotonic() - t0),
                  flush=True)
            if a.seconds and time.monotonic() - t0 > a.seconds:
                break
        after = evaluate(mu)
        print("mean policy on %d held-out episodes: return %.3f -> %.3f, success %.2f -> %.2f"
              % (a.pop, before[0], after[0], before[1], after[1]), flush=True)
    finally:
        env.close()
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        c = np.array(curve)
        fig, ax = plt.subplots(figsize=(5, 3), dpi=100)
        ax.plot(c[:, 0], c[:, 1], label="population mean return")
        ax.plot(c[:, 0], c[:, 2], label="elite mean return")
        ax2 = ax.twinx()
        ax2.plot(c[:, 0], c[:, 3], "g:", label="success rate")
        ax2.set_ylim(0, 1)
        ax.set_xlabel("generation (%d robots x %d decisions)" % (a.pop, a.horizon))
        ax.set_ylabel("return")
        ax2.set_ylabel("success rate")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, loc="lower right", fontsize=7)
        ax.set_title("CEM on NavEnv's task: held-out success %.2f -> %.2f" % (before[1], after[1]),
                     fontsize=9)
        fig.tight_layout()
        fig.savefig(a.plot)
    return {"curve": curve, "before": before, "after": after}


if __name__ == "__main__":
    main()
