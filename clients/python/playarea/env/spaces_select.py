"""The real gymnasium / pettingzoo classes when importable, else the local ones."""


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
except ImportError:
    from .spaces import Box, Dict, Discrete, MultiDiscrete  # noqa: F401 (re-exported)
    HAVE_GYMNASIUM = False

    class EnvBase(_LocalBase):
        """Gymnasium's Env shape: reset/step/render/close, spaces, np_random."""
        metadata = {"render_modes": []}
        render_mode = None
        spec = None

    class VectorEnvBase(EnvBase):
        """Gymnasium 1.x VectorEnv shape: num_envs, single_*_space, batched spaces."""

try:  # pragma: no cover
    from pettingzoo import ParallelEnv as ParallelEnvBase
    HAVE_PETTINGZOO = True
except ImportError:
    HAVE_PETTINGZOO = False

    class ParallelEnvBase(_LocalBase):
        """PettingZoo's ParallelEnv shape: agents, possible_agents, dict step/reset."""
        metadata = {}

        @property
        def num_agents(self):
            return len(self.agents)

        @property
        def max_num_agents(self):
            return len(self.possible_agents)
