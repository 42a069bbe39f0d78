"""Rollouts on a Dask cluster: one playarea stack per worker (docs/rl.md).

    from distributed import Client
    from playarea.env.dask import rollouts, close_stacks
    client = Client("tcp://scheduler:8786")            # or a LocalCluster
    results = rollouts(client, my_rollout, seeds=range(100), env_kwargs={"max_episode_steps": 200})
    close_stacks(client)                                # stops every worker's stack

my_rollout(env, seed) runs on a worker with that worker's NavEnv (started on
first use, on free ports, kept for later tasks) and returns anything
picklable. Each worker needs the playarea binaries (PA_BIN_DIR or build/bin)
and numpy; no gymnasium.
"""

import threading

_envs = {}  # (worker address, kwargs key) -> NavEnv
_lock = threading.Lock()


def _key(kw):
    return tuple(sorted((k, repr(v)) for k, v in (kw or {}).items()))


def worker_env(env_kwargs=None):
    """This worker's NavEnv for these arguments (started on first use)."""
    from distributed import get_worker
    from .nav import NavEnv
    k = (get_worker().address, _key(env_kwargs))
    with _lock:
        env = _envs.get(k)
        if env is None:
            kw = dict(env_kwargs or {})
            if kw.get("instance"):  # a prefix: every worker's stack needs its own name
                kw["instance"] = "%s-w%d" % (kw["instance"], len(_envs))
            env = _envs[k] = NavEnv(**kw)
        return env


def _run(fn, seed, env_kwargs):
    env = worker_env(env_kwargs)
    with _lock_for(env):
        return fn(env, seed)


_env_locks = {}


def _lock_for(env):
    with _lock:
        return _env_locks.setdefault(id(env), threading.Lock())


def rollouts(client, fn, seeds, env_kwargs=None):
    """fn(env, seed) for every seed, spread over the workers; results in seed order."""
    futs = [client.submit(_run, fn, s, env_kwargs, pure=False) for s in seeds]
    return client.gather(futs)


def _close_local(dask_worker=None):
    with _lock:
        mine = [k for k in _envs if dask_worker is None or k[0] == dask_worker.address]
        envs = [_envs.pop(k) for k in mine]
    for e in envs:
        _env_locks.pop(id(e), None)
        e.close()
    return len(envs)


def close_stacks(client):
    """Stops the stacks of every worker; returns {worker: stacks stopped}."""
    return client.run(_close_local)
