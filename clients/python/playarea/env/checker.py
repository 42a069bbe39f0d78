"""An environment checker written from Gymnasium's documented env-checker rules.

check_env(env): reset(seed=, options=) returns (obs, info) with obs in
observation_space and info a dict; the same seed gives the same obs, a
different seed (usually) a different one, and reset without a seed after a
seeded one continues the generator (no reseed); step returns the 5-tuple
with a float reward and bool terminated/truncated; observations stay in
the space; render() in rgb_array mode returns uint8 HxWx3; nothing leaks
across resets (the step count restarts). Raises AssertionError naming the
rule broken. check_vector_env / check_parallel_env do the same for the
batched and the PettingZoo shapes (spaces present and sampling inside
themselves, seeding determinism, another seed another start, bool/float
types, no state leaking across resets).
"""

import numpy as np


def _eq(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_eq(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def _in(space, obs, what):
    assert space.contains(obs), "%s is not in its space %r: %r" % (what, space, obs)


def check_env(env, steps=20, seed=7):
    assert hasattr(env, "observation_space") and hasattr(env, "action_space"), "spaces missing"
    o1, i1 = env.reset(seed=seed)
    assert isinstance(i1, dict), "reset must return (obs, info dict)"
    _in(env.observation_space, o1, "reset obs")
    o2, _ = env.reset(seed=seed)
    assert _eq(o1, o2), "reset(seed) is not deterministic"
    o3, _ = env.reset(seed=seed + 1)
    assert not _eq(o1, o3), "different seeds gave the same first observation"
    o4, _ = env.reset()  # continues the seeded generator: not a reseed
    assert not _eq(o4, o1), "reset() without a seed reseeded the generator"
    env.reset(seed=seed, options={})
    env.action_space.seed(seed)
    for _ in range(steps):
        out = env.step(env.action_space.sample())
        assert isinstance(out, tuple) and len(out) == 5, "step must return a 5-tuple"
        obs, r, term, trunc, info = out
        _in(env.observation_space, obs, "step obs")
        assert np.isscalar(r) and isinstance(float(r), float), "reward must be a number"
        assert isinstance(term, (bool, np.bool_)) and isinstance(trunc, (bool, np.bool_)), \
            "terminated/truncated must be bools"
        assert isinstance(info, dict), "info must be a dict"
        if term or trunc:
            env.reset()
    if getattr(env, "render_mode", None) == "rgb_array":
        img = env.render()
        assert isinstance(img, np.ndarray) and img.dtype == np.uint8 and img.ndim == 3 \
            and img.shape[2] == 3, "render() must return uint8 HxWx3"
    # the same seed after steps: the same episode start (no state leaks)
    o5, _ = env.reset(seed=seed)
    assert _eq(o1, o5), "state leaked across resets: reset(seed) differs after stepping"


def _spaces_sample_inside(obs_space, act_space, what):
    a = act_space.sample()
    assert act_space.contains(a), "%s: action_space.sample() is not in action_space" % what
    o = obs_space.sample()
    assert obs_space.contains(o), "%s: observation_space.sample() is not in its space" % what


def check_vector_env(env, steps=20, seed=7):
    n = env.num_envs
    for name in ("single_observation_space", "single_action_space", "observation_space",
                 "action_space"):
        assert hasattr(env, name), "a vector env needs %s" % name
    _spaces_sample_inside(env.observation_space, env.action_space, "batched spaces")
    _spaces_sample_inside(env.single_observation_space, env.single_action_space, "single spaces")
    o1, info = env.reset(seed=seed)
    assert isinstance(info, dict), "reset must return (obs, info dict)"
    _in(env.observation_space, o1, "reset obs")
    o2, _ = env.reset(seed=seed)
    assert _eq(o1, o2), "reset(seed) is not deterministic"
    o3, _ = env.reset(seed=seed + 1000)
    assert not _eq(o1, o3), "different seeds gave the same first observation"
    o4, _ = env.reset()  # continues the seeded generators: not a reseed
    assert not _eq(o4, o3), "reset() without a seed reseeded the generators"
    env.reset(seed=seed)
    env.action_space.seed(seed)
    for _ in range(steps):
        obs, r, term, trunc, info = env.step(env.action_space.sample())
        _in(env.observation_space, obs, "step obs")
        assert r.shape == (n,) and term.shape == (n,) and trunc.shape == (n,), "batched shapes"
        assert term.dtype == np.bool_ and trunc.dtype == np.bool_, "bool arrays"
        assert np.issubdtype(r.dtype, np.floating), "rewards must be floats"
        assert isinstance(info, dict), "info must be a dict"
    o5, _ = env.reset(seed=seed)
    assert _eq(o1, o5), "state leaked across resets"


def check_parallel_env(env, steps=20, seed=7):
    for a in env.possible_agents:
        _spaces_sample_inside(env.observation_space(a), env.action_space(a), "spaces of %s" % a)
    obs, infos = env.reset(seed=seed)
    assert set(obs) == set(env.agents) == set(infos) and env.agents == env.possible_agents
    for a in env.agents:
        _in(env.observation_space(a), obs[a], "reset obs of %s" % a)
    o2, _ = env.reset(seed=seed)
    assert _eq(obs, o2), "reset(seed) is not deterministic"
    o3, _ = env.reset(seed=seed + 1000)
    assert not _eq(obs, o3), "different seeds gave the same first observations"
    env.reset(seed=seed)
    for s in range(steps):
        if not env.agents:
            break
        acts = {a: env.action_space(a).sample() for a in env.agents}
        live = list(env.agents)
        out = env.step(acts)
        assert len(out) == 5, "step must return 5 dicts"
        for d in out:
            assert set(d) == set(live), "step dicts must be keyed by the live agents"
        for a in live:
            _in(env.observation_space(a), out[0][a], "obs of %s" % a)
            assert isinstance(out[1][a], float), "rewards must be floats"
            assert isinstance(out[2][a], bool) and isinstance(out[3][a], bool), \
                "terminations/truncations must be bools"
            if out[2][a] or out[3][a]:
                assert a not in env.agents, "a done agent must leave env.agents"
    o5, _ = env.reset(seed=seed)
    assert _eq(obs, o5), "state leaked across resets: reset(seed) differs after stepping"
    assert env.agents == env.possible_agents, "reset must bring every agent back"
