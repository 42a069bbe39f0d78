"""An environment checker written from Gymnasium's documented env-checker rules.

check_env(env): reset(seed=, options=) returns (obs, info) with obs in
observation_space and info a dict; the same seed gives the same obs, a
different seed (usually) a different one, and reset without a seed after a
seeded one continues the generator (no reseed); step returns the 5-tuple
with a float reward and bool terminated/truncated; observations stay in
the space; render() in rgb_array mode returns uint8 HxWx3; nothing leaks
across resets (the step count restarts). Raises AssertionError naming the
rule broken. Also as Gymnasium's check_env: the same seed and action give
the same step (observation, reward, flags and info), np_random_seed is the
seed and reading it does not reseed, np_random can be set.
check_vector_env / check_parallel_env do the same for the
batched and the PettingZoo shapes (spaces present and sampling inside
themselves, seeding determinism, another seed another start, bool/float
types, no state leaking across resets); vector infos in Gymnasium's layout
(an array per key and a boolean "_key" mask) and metadata["autoreset_mode"]
Gymnasium's AutoresetMode.NEXT_STEP when Gymnasium is importable;
PettingZoo's state() inside state_space.
"""

import numpy as np

from .spaces_select import AUTORESET_NEXT_STEP


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
    _check_step_determinism(env, seed)
    _check_seeding(env, seed)


def _check_step_determinism(env, seed):
    """Gymnasium's check: reset(seed) then the same actions, twice: every part of
    every step equal, infos included."""
    env.action_space.seed(seed)
    acts = [env.action_space.sample() for _ in range(3)]
    runs = []
    for _ in range(2):
        _, info = env.reset(seed=seed)
        run = [info]
        for a in acts:
            out = env.step(a)
            run.append(out)
            if out[2] or out[3]:
                break
        runs.append(run)
    assert _eq(runs[0][0], runs[1][0]), "reset(seed) infos differ: %r / %r" % (runs[0][0], runs[1][0])
    for k, (a, b) in enumerate(zip(runs[0][1:], runs[1][1:])):
        assert _eq(a[0], b[0]), "step %d: the same seed and action gave other observations" % k
        assert a[1] == b[1] and a[2] == b[2] and a[3] == b[3], "step %d: other reward/flags" % k
        assert _eq(a[4], b[4]), "step %d: the same seed and action gave other infos: %r / %r" \
            % (k, a[4], b[4])


def _check_seeding(env, seed):
    """np_random_seed is the seed; reading it does not reseed; np_random settable."""
    env.reset(seed=seed)
    assert env.np_random_seed == seed, "np_random_seed is %r after reset(seed=%d)" \
        % (env.np_random_seed, seed)
    _, i1 = env.reset()
    env.reset(seed=seed)
    env.np_random_seed  # reading it must not reseed the generator
    _, i2 = env.reset()
    assert _eq(i1, i2), "reading np_random_seed changed the next episode"
    outs = []
    for _ in range(2):
        env.np_random = np.random.default_rng(seed + 17)
        outs.append(env.reset()[0])
    assert _eq(outs[0], outs[1]), "setting np_random did not seed the next reset"


def _spaces_sample_inside(obs_space, act_space, what):
    a = act_space.sample()
    assert act_space.contains(a), "%s: action_space.sample() is not in action_space" % what
    o = obs_space.sample()
    assert obs_space.contains(o), "%s: observation_space.sample() is not in its space" % what


def _check_vector_info(info, n, what):
    assert isinstance(info, dict), "%s: info must be a dict" % what
    for k, v in info.items():
        if k.startswith("_"):
            continue
        assert hasattr(v, "__len__") and len(v) == n, \
            "%s: info[%r] must be an array over the %d sub-envs, got %r" % (what, k, n, v)
        m = info.get("_" + k)
        assert isinstance(m, np.ndarray) and m.dtype == np.bool_ and m.shape == (n,), \
            "%s: info[%r] needs a boolean mask info[%r] of shape (%d,)" % (what, k, "_" + k, n)


def check_vector_env(env, steps=20, seed=7):
    n = env.num_envs
    mode = env.metadata.get("autoreset_mode")
    assert mode is AUTORESET_NEXT_STEP or mode == AUTORESET_NEXT_STEP, \
        "metadata['autoreset_mode'] must be %r, got %r" % (AUTORESET_NEXT_STEP, mode)
    assert type(mode) is type(AUTORESET_NEXT_STEP), \
        "metadata['autoreset_mode'] must be a %s" % type(AUTORESET_NEXT_STEP).__name__
    for name in ("single_observation_space", "single_action_space", "observation_space",
                 "action_space"):
        assert hasattr(env, name), "a vector env needs %s" % name
    _spaces_sample_inside(env.observation_space, env.action_space, "batched spaces")
    _spaces_sample_inside(env.single_observation_space, env.single_action_space, "single spaces")
    o1, info = env.reset(seed=seed)
    assert isinstance(info, dict), "reset must return (obs, info dict)"
    _check_vector_info(info, n, "reset")
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
        _check_vector_info(info, n, "step")
    o5, _ = env.reset(seed=seed)
    assert _eq(o1, o5), "state leaked across resets"


def check_parallel_env(env, steps=20, seed=7):
    for a in env.possible_agents:
        _spaces_sample_inside(env.observation_space(a), env.action_space(a), "spaces of %s" % a)
    obs, infos = env.reset(seed=seed)
    assert set(obs) == set(env.agents) == set(infos) and env.agents == env.possible_agents
    space = getattr(env, "state_space", None)
    assert space is not None, "a parallel env with state() needs state_space"
    assert space.contains(env.state()), "state() is not in state_space"
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
        assert space.contains(env.state()), "state() left state_space after a step"
    o5, _ = env.reset(seed=seed)
    assert _eq(obs, o5), "state leaked across resets: reset(seed) differs after stepping"
    assert env.agents == env.possible_agents, "reset must bring every agent back"
