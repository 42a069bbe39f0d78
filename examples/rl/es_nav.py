#!/usr/bin/env python3
"""Evolution strategies with a small MLP on NavEnv's task, numpy only, against a
hand-written go-to-goal controller with obstacle avoidance, both judged on the
same held-out episodes.

    python3 examples/rl/es_nav.py                      # 240 generations
    python3 examples/rl/es_nav.py --plot curve.png

The policy: 18 laser sectors, goal distance and bearing (cos, sin), velocity ->
16 tanh units -> v = max_v * sigmoid, w = max_w * tanh. Each generation draws
pop/2 Gaussian perturbations of the parameters and runs each with both signs
(antithetic pairs on the same episodes), one robot each in one NavVectorEnv;
the returns' centred ranks weight the perturbations into a gradient estimate
that Adam follows (OpenAI-ES); the noise shrinks from sigma to 0.4 sigma
over the run. Every `--eval_every` generations the mean
policy runs on validation episodes (which keep the best policy so far) and on
the held-out episodes (`--eval` robots each, seeds never used in training; the
held-out ones only judge); the hand controller runs on the held-out ones once.
"""

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "clients", "python"))
from playarea.env import NavVectorEnv  # noqa: E402

BEAMS = 18
HIDDEN = 16
HELD_OUT_SEED = 10 ** 6  # training seeds stay below it
VALID_SEED = 2 * 10 ** 6  # picks the policy kept; the held-out episodes only judge it
MAP = {"width": 24, "height": 24, "seed": 5, "rooms": [4, 4]}  # 16 rooms with doors


def make_env(n, horizon):
    return NavVectorEnv(num_envs=n, flat=True, beams=BEAMS, max_episode_steps=horizon,
                        min_goal_dist=1.0, max_goal_dist=4.0, generate_map=MAP)


def hand_controller(obs, max_v, max_w):
    """Turn to the goal, pushed sideways by returns within 1 m, and slow down for
    anything ahead: v = max_v * max(cos(bearing), 0) * clip((front - 0.25) / 0.6)."""
    scan, dist, bearing = obs[:, :BEAMS], obs[:, BEAMS], obs[:, BEAMS + 1]
    ang = -math.pi + 2 * math.pi * (np.arange(BEAMS) + 0.5) / BEAMS  # sector centres
    near = np.clip(1.0 - scan, 0.0, None)
    push = -(near * np.sin(ang)).sum(axis=1)
    front = scan[:, np.abs(ang) < 0.6].min(axis=1)
    w = np.clip(2.0 * bearing + 1.5 * push, -max_w, max_w)
    v = max_v * np.clip(np.cos(bearing), 0, 1) * np.clip((front - 0.25) / 0.6, 0, 1)
    return np.stack([v, w], axis=1).astype(np.float32)


def features(obs, range_max):
    """Laser sectors clipped to 2 m (what is near matters), goal distance / 5,
    cos and sin of the bearing, velocity, 1."""
    scan, g, vel = obs[:, :BEAMS], obs[:, BEAMS:BEAMS + 2], obs[:, BEAMS + 2:]
    return np.concatenate([np.minimum(scan, 2.0) / 2.0, g[:, :1] / 5.0, np.cos(g[:, 1:]), np.sin(g[:, 1:]),
                           vel, np.ones((len(obs), 1))], axis=1)


DIM = BEAMS + 6
N_PARAMS = DIM * HIDDEN + HIDDEN * 2 + 2


def mlp_policy(theta, obs, range_max, max_v, max_w):
    """theta [n, N_PARAMS]: robot i acts with theta[i]."""
    n = len(obs)
    x = features(obs, range_max)
    w1 = theta[:, :DIM * HIDDEN].reshape(n, DIM, HIDDEN)
    w2 = theta[:, DIM * HIDDEN:DIM * HIDDEN + 2 * HIDDEN].reshape(n, HIDDEN, 2)
    out = np.einsum("nh,nho->no", np.tanh(np.einsum("nd,ndh->nh", x, w1)), w2) + theta[:, -2:]
    return np.stack([max_v / (1.0 + np.exp(-out[:, 0])), max_w * np.tanh(out[:, 1])],
                    axis=1).astype(np.float32)


def episodes(env, policy, seed, horizon):
    """One episode per robot: (returns, successes, robot-steps)."""
    n = env.num_envs
    obs, _ = env.reset(seed=seed)
    ret, done, ok, steps = np.zeros(n), np.zeros(n, bool), np.zeros(n, bool), 0
    for _ in range(horizon):
        obs, r, te, tr, info = env.step(policy(obs))
        steps += n
        ret += np.where(done, 0.0, r)
        ok |= info["is_success"] & ~done
        done |= te | tr
        if done.all():
            break
    return ret, ok, steps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=240)
    p.add_argument("--pop", type=int, default=128, help="robots per generation (even)")
    p.add_argument("--eval", type=int, default=256, help="held-out episodes")
    p.add_argument("--eval_every", type=int, default=20)
    p.add_argument("--horizon", type=int, default=80, help="decisions per episode (10 Hz)")
    p.add_argument("--sigma", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=0.03)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--plot", help="write the learning curve (PNG) here")
    a = p.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    half = a.pop // 2
    t0 = time.monotonic()
    steps = 0
    curve, held = [], []
    env, ev = make_env(2 * half, a.horizon), make_env(a.eval, a.horizon)
    try:
        rmax, max_v, max_w = ev.world.range_max, ev.world.max_v, ev.world.max_w

        def held_out(theta, seed=HELD_OUT_SEED):
            nonlocal steps
            ret, ok, k = episodes(ev, lambda o: mlp_policy(np.broadcast_to(theta, (len(o), N_PARAMS)),
                                                           o, rmax, max_v, max_w),
                                  seed, a.horizon)
            steps += k
            return ok.mean(), ret.mean()

        ret_h, ok_h, k = episodes(ev, lambda o: hand_controller(o, max_v, max_w), HELD_OUT_SEED,
                                  a.horizon)
        steps += k
        hand = (ok_h.mean(), ret_h.mean())
        theta = rng.standard_normal(N_PARAMS) * 0.1
        m, v = np.zeros(N_PARAMS), np.zeros(N_PARAMS)
        held.append((0,) + held_out(theta))
        kept, kept_valid, kept_gen = theta, held_out(theta, VALID_SEED)[0], 0
        for gen in range(a.generations):
            # the noise shrinks to 40% over the run: coarse search first, then fine
            sigma = a.sigma * (1.0 - 0.6 * gen / max(1, a.generations - 1))
            eps = rng.standard_normal((half, N_PARAMS))
            pert = theta + sigma * np.concatenate([eps, -eps])
            seeds = [a.seed * 100000 + gen * half + k for k in range(half)] * 2  # pairs share episodes
            ret, ok, k = episodes(env, lambda o: mlp_policy(pert, o, rmax, max_v, max_w), seeds,
                                  a.horizon)
            steps += k
            rank = np.empty(len(ret))
            rank[np.argsort(ret)] = np.arange(len(ret))
            rank = rank / (len(ret) - 1) - 0.5
            g = (rank[:half] - rank[half:]) @ eps / (half * sigma)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            theta = theta + a.lr * (m / (1 - 0.9 ** (gen + 1))) / (
                np.sqrt(v / (1 - 0.999 ** (gen + 1))) + 1e-8)
            curve.append((gen + 1, ret.mean(), ok.mean()))
            if (gen + 1) % a.eval_every == 0 or gen + 1 == a.generations:
                valid = held_out(theta, VALID_SEED)[0]
                if valid >= kept_valid:  # the policy kept: the best on the validation episodes
                    kept, kept_valid, kept_gen = theta.copy(), valid, gen + 1
                held.append((gen + 1,) + held_out(theta))
                print("gen %3d  population return %6.2f success %.2f  validation %.3f  held-out "
                      "success %.3f  (%.0f s)" % (gen + 1, ret.mean(), ok.mean(), valid, held[-1][1],
                                                  time.monotonic() - t0), flush=True)
        final = held_out(kept)
    finally:
        env.close()
        ev.close()
    wall = time.monotonic() - t0
    print("held-out success on %d episodes: learner %.3f -> %.3f (the policy of generation %d, "
          "best on the validation episodes), hand controller %.3f; returns %.2f vs %.2f"
          % (a.eval, held[0][1], final[0], kept_gen, hand[0], final[1], hand[1]))
    print("wall time %.0f s, %d robot-steps, %.0f robot-steps/s" % (wall, steps, steps / wall))
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        c, h = np.array(curve), np.array(held)
        fig, ax = plt.subplots(figsize=(5.5, 3.2), dpi=100)
        ax.plot(c[:, 0], c[:, 2], color="0.6", lw=1, label="population (perturbed) success")
        ax.plot(h[:, 0], h[:, 1], "o-", color="C0", label="learner, %d held-out episodes" % a.eval)
        ax.axhline(hand[0], color="C3", ls="--", label="hand controller, same episodes")
        ax.set_ylim(0, 1)
        ax.set_xlabel("generation (%d robots x %d decisions)" % (2 * half, a.horizon))
        ax.set_ylabel("success rate")
        ax.legend(loc="lower right", fontsize=7)
        ax.set_title("ES + MLP on NavEnv's task: held-out %.2f (gen %d) vs hand %.2f"
                     % (final[0], kept_gen, hand[0]), fontsize=9)
        fig.tight_layout()
        fig.savefig(a.plot)
    return {"held": held, "hand": hand, "final": final, "kept_gen": kept_gen, "curve": curve,
            "wall": wall, "steps": steps}


if __name__ == "__main__":
    main()
