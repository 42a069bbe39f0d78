"""The real gymnasium / pettingzoo classes when importable, else the local ones."""

import numpy as np


class _LocalBase:
    """What the local stand-ins share: unwrapped, a context manager, close()."""

    @property
    def unwrapped(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        pass


try:  # pragma: no cover - not installed on the project's machines
    import gymnasium as _gym
    from gymnasium.spaces import Box, Dict, Discrete, MultiDiscrete  # noqa: F401 (re-exported)
    EnvBase = _gym.Env
    VectorEnvBase = _gym.vector.VectorEnv
    HAVE_GYMNASIUM = True
    try:  # Gymnasium >= 1.1: the wrappers check for the enum
        from gymnasium.vector import AutoresetMode as _AutoresetMode
        AUTORESET_NEXT_STEP = _AutoresetMode.NEXT_STEP
    except ImportError:  # 1.0: the string
        AUTORESET_NEXT_STEP = "NextStep"
except ImportError:
    from .spaces import Box, Dict, Discrete, MultiDiscrete  # noqa: F401 (re-exported)
    HAVE_GYMNASIUM = False
    AUTORESET_NEXT_STEP = "NextStep"

    class EnvBase(_LocalBase):
        """Gymnasium's Env shape: reset/step/render/close, spaces, np_random (the
        generator reset(seed=...) seeds, settable; seeded from entropy on first use
        without one, np_random_seed -1 then, as Gymnasium's)."""
        metadata = {"render_modes": []}
        render_mode = None
        spec = None
        _np_random = None
        _np_random_seed = None

        def reset(self, *, seed=None, options=None):
            if seed is not None:
                self._np_random = np.random.default_rng(seed)
                self._np_random_seed = int(seed)

        @property
        def np_random(self):
            if self._np_random is None:
                self._np_random = np.random.default_rng()
                self._np_random_seed = -1
            return self._np_random

        @np_random.setter
        def np_random(self, value):
            if not isinstance(value, np.random.Generator):
                raise TypeError("np_random must be a numpy Generator, got %r" % (type(value),))
            self._np_random = value
            self._np_random_seed = -1

        @property
        def np_random_seed(self):
            if self._np_random_seed is None:
                self.np_random
            return self._np_random_seed

    class VectorEnvBase(EnvBase):
        """Gymnasium 1.x VectorEnv shape: num_envs, single_*_space, batched spaces,
        closed."""
        closed = False

try:  # pragma: no cover
    from pettingzoo import ParallelEnv as ParallelEnvBase
    HAVE_PETTINGZOO = True
except ImportError:
    HAVE_PETTINGZOO = False

    class ParallelEnvBase(_LocalBase):
        """PettingZoo's ParallelEnv shape: agents, possible_agents, dict step/reset,
        state_space and state()."""
        metadata = {}
        state_space = None

        @property
        def num_agents(self):
            return len(self.agents)

        @property
        def max_num_agents(self):
            return len(self.possible_agents)
