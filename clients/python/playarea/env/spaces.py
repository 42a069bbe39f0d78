"""Box, Discrete, MultiDiscrete and Dict with Gymnasium's semantics (numpy only).

When gymnasium can be imported, playarea.env uses its spaces instead (see
playarea.env.SPACES); these follow the same rules: ``contains`` checks
shape, dtype kind and bounds; ``sample`` draws from the space's own
generator, seeded by ``seed(n)``; Dict keeps its keys sorted.
"""

import numpy as np


class Space:
    def __init__(self, shape=None, dtype=None, seed=None):
        self._shape = None if shape is None else tuple(shape)
        self.dtype = None if dtype is None else np.dtype(dtype)
        self._np_random = None
        if seed is not None:
            self.seed(seed)

    @property
    def shape(self):
        return self._shape

    @property
    def np_random(self):
        if self._np_random is None:
            self.seed()
        return self._np_random

    def seed(self, seed=None):
        """Seeds the space's generator; returns [seed] (as Gymnasium)."""
        if seed is not None and (not isinstance(seed, (int, np.integer)) or seed < 0):
            raise ValueError("seed must be a non-negative int or None, got %r" % (seed,))
        self._np_random = np.random.default_rng(seed)
        return [seed]

    def __contains__(self, x):
        return self.contains(x)


class Box(Space):
    """A box in R^n: low <= x <= high elementwise (bounds may be +-inf)."""

    def __init__(self, low, high, shape=None, dtype=np.float32, seed=None):
        dtype = np.dtype(dtype)
        if shape is None:
            shape = np.broadcast(np.asarray(low), np.asarray(high)).shape
        shape = tuple(int(s) for s in shape)
        self.low = np.full(shape, low, dtype=dtype) if np.isscalar(low) else \
            np.broadcast_to(np.asarray(low, dtype=dtype), shape).copy()
        self.high = np.full(shape, high, dtype=dtype) if np.isscalar(high) else \
            np.broadcast_to(np.asarray(high, dtype=dtype), shape).copy()
        if np.any(self.low > self.high):
            raise ValueError("Box: low must be <= high")
        super().__init__(shape, dtype, seed)

    def is_bounded(self, manner="both"):
        below = bool(np.all(np.isfinite(self.low)))
        above = bool(np.all(np.isfinite(self.high)))
        return {"both": below and above, "below": below, "above": above}[manner]

    def sample(self):
        """Uniform where bounded on both sides, exponential on one, normal on none."""
        r = self.np_random
        low = self.low.astype(np.float64)
        high = self.high.astype(np.float64)
        out = np.empty(self.shape, dtype=np.float64)
        lb, hb = np.isfinite(low), np.isfinite(high)
        both, none, lo_only, hi_only = lb & hb, ~lb & ~hb, lb & ~hb, ~lb & hb
        out[both] = r.uniform(low[both], high[both]) if self.dtype.kind == "f" else \
            r.integers(low[both].astype(np.int64), high[both].astype(np.int64) + 1)
        out[none] = r.normal(size=int(none.sum()))
        out[lo_only] = low[lo_only] + r.exponential(size=int(lo_only.sum()))
        out[hi_only] = high[hi_only] - r.exponential(size=int(hi_only.sum()))
        if self.dtype.kind in "iu":
            out = np.floor(out)
        return np.clip(out, low, high).astype(self.dtype)

    def contains(self, x):
        if not isinstance(x, np.ndarray):
            try:
                x = np.asarray(x, dtype=self.dtype)
            except (ValueError, TypeError):
                return False
        return bool(np.can_cast(x.dtype, self.dtype) and x.shape == self.shape
                    and np.all(x >= self.low) and np.all(x <= self.high))

    def __repr__(self):
        return "Box(%s, %s, %s, %s)" % (self.low.min(), self.high.max(), self.shape, self.dtype)

    def __eq__(self, other):
        return (isinstance(other, Box) and self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high))


class Discrete(Space):
    """{start, ..., start + n - 1}."""

    def __init__(self, n, seed=None, start=0):
        if int(n) <= 0:
            raise ValueError("Discrete: n must be positive, got %r" % (n,))
        self.n = np.int64(n)
        self.start = np.int64(start)
        super().__init__((), np.int64, seed)

    def sample(self):
        return np.int64(self.start + self.np_random.integers(self.n))

    def contains(self, x):
        if isinstance(x, int) and not isinstance(x, bool):
            v = np.int64(x)
        elif isinstance(x, (np.generic, np.ndarray)) and x.dtype.kind in "iu" and x.shape == ():
            v = np.int64(x)
        else:
            return False
        return bool(self.start <= v < self.start + self.n)

    def __repr__(self):
        return "Discrete(%d)" % self.n

    def __eq__(self, other):
        return isinstance(other, Discrete) and self.n == other.n and self.start == other.start


class MultiDiscrete(Space):
    """A vector of Discrete values (the batched form of Discrete)."""

    def __init__(self, nvec, seed=None):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        super().__init__(self.nvec.shape, np.int64, seed)

    def sample(self):
        return self.np_random.integers(self.nvec).astype(np.int64)

    def contains(self, x):
        x = np.asarray(x)
        return bool(x.shape == self.shape and x.dtype.kind in "iu"
                    and np.all(x >= 0) and np.all(x < self.nvec))

    def __repr__(self):
        return "MultiDiscrete(%s)" % self.nvec


class Dict(Space):
    """A dict of spaces; keys sorted unless given as a list of pairs."""

    def __init__(self, spaces=None, seed=None, **kw):
        items = list(spaces.items()) if isinstance(spaces, dict) else list(spaces or ())
        items += list(kw.items())
        if isinstance(spaces, dict) or kw:
            items.sort(key=lambda kv: kv[0])
        self.spaces = dict(items)
        super().__init__(None, None, None)
        if seed is not None:
            self.seed(seed)

    def seed(self, seed=None):
        """Seeds every subspace from one generator (as Gymnasium's int seed)."""
        super().seed(seed)
        subs = self._np_random.integers(np.iinfo(np.int32).max, size=len(self.spaces))
        for s, sub in zip(self.spaces.values(), subs):
            s.seed(int(sub))
        return [seed]

    def sample(self):
        self.np_random  # seeds the subspaces on first use
        return {k: s.sample() for k, s in self.spaces.items()}

    def contains(self, x):
        return (isinstance(x, dict) and set(x) == set(self.spaces)
                and all(s.contains(x[k]) for k, s in self.spaces.items()))

    def __getitem__(self, k):
        return self.spaces[k]

    def keys(self):
        return self.spaces.keys()

    def items(self):
        return self.spaces.items()

    def __repr__(self):
        return "Dict(%s)" % ", ".join("%r: %r" % kv for kv in self.spaces.items())
