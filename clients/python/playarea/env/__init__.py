"""Reinforcement-learning environments over playarea (docs/rl.md).

    from playarea.env import NavEnv
    env = NavEnv()                       # starts its own stack; env.close() stops it
    obs, info = env.reset(seed=1)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

NavVectorEnv(num_envs=N) steps N robots of one stack with one round trip;
NavParallelEnv(num_agents=N) is PettingZoo's parallel API over a shared world.
numpy is the only dependency; the real gymnasium / pettingzoo base classes and
spaces are used when they can be imported.
"""

import sys

try:
    import numpy  # noqa: F401
except ImportError:
    raise ImportError(
        "playarea.env needs numpy, which %s cannot import: run it with Debian's /usr/bin/python3 "
        "(python3-numpy), or install numpy into this interpreter's environment"
        % sys.executable) from None

from .nav import NavEnv, NavParallelEnv, NavVectorEnv, downsample  # noqa: E402
from .spaces_select import HAVE_GYMNASIUM, HAVE_PETTINGZOO, Box, Dict, Discrete, MultiDiscrete
from ._stack import LocalStack, StackError, find_bin_dir

__all__ = ["NavEnv", "NavVectorEnv", "NavParallelEnv", "Box", "Dict", "Discrete", "MultiDiscrete",
           "LocalStack", "StackError", "find_bin_dir", "downsample", "HAVE_GYMNASIUM",
           "HAVE_PETTINGZOO"]
