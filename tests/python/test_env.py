"""playarea.env against the real stack: Gymnasium/PettingZoo rules, determinism,
autoreset, the binary step_batch, and cleanup."""

import os
import unittest
from contextlib import closing

import numpy as np

from playarea.env import Box, Dict, Discrete, LocalStack, NavEnv, NavParallelEnv, NavVectorEnv
from playarea.env import HAVE_GYMNASIUM, HAVE_PETTINGZOO, StackError, downsample
from playarea.env import checker

_n = [0]


def instance():
    _n[0] += 1
    return "t%d-rl-%d" % (os.getpid(), _n[0])


def shm_objects(inst):
    return [n for n in os.listdir("/dev/shm") if n.startswith("playarea.%s." % inst)]


class Spaces(unittest.TestCase):
    def test_box(self):
        b = Box(-1.0, 2.0, (3,), np.float32, seed=4)
        s = b.sample()
        self.assertTrue(b.contains(s))
        self.assertEqual(s.dtype, np.float32)
        self.assertFalse(b.contains(np.array([3, 0, 0], np.float32)))
        self.assertFalse(b.contains(np.zeros(2, np.float32)))
        self.assertFalse(b.contains(np.zeros(3, np.float64)))  # cannot cast safely
        b2 = Box(-1.0, 2.0, (3,), np.float32, seed=4)
        self.assertTrue(np.array_equal(s, b2.sample()))
        h = Box(0.0, np.inf, (1000,), np.float32, seed=1)
        self.assertTrue(h.contains(h.sample()))

    def test_discrete_and_dict(self):
        d = Discrete(5, seed=1)
        self.assertTrue(all(d.contains(d.sample()) for _ in range(50)))
        self.assertFalse(d.contains(5))
        self.assertFalse(d.contains(1.0))
        sp = Dict({"b": Box(0, 1, (2,)), "a": Discrete(3)}, seed=3)
        self.assertEqual(list(sp.keys()), ["a", "b"])
        x, y = sp.sample(), Dict({"b": Box(0, 1, (2,)), "a": Discrete(3)}, seed=3).sample()
        self.assertTrue(sp.contains(x))
        self.assertEqual(x["a"], y["a"])
        self.assertFalse(sp.contains({"a": 0}))

    def test_downsample(self):
        r = np.arange(360, dtype=np.float32)
        r[5] = np.nan
        d = downsample(r, 36, 300.0)
        self.assertEqual(d.shape, (36,))
        self.assertEqual(d[0], 0.0)
        self.assertEqual(d[1], 10.0)
        self.assertEqual(d[-1], 300.0)  # clipped to range_max
        with self.assertRaisesRegex(ValueError, "divide"):
            downsample(r, 7, 12.0)

    def test_group_min_is_fmin_reduce(self):
        """The strided fmin passes give np.fmin.reduce over each group, bit for
        bit: NaN groups, partly NaN groups, inf, batches and single scans."""
        from playarea.env.nav import _group_min
        rng = np.random.default_rng(5)
        for shape in ((200, 360), (360,), (2, 3, 360)):
            r = (rng.random(shape) * 12).astype(np.float32)
            flat = r.reshape(-1)
            flat[::13] = np.nan
            flat[20:60] = np.nan  # whole groups of no return
            flat[70] = np.inf
            for beams in (1, 2, 36, 60, 90, 180, 360):
                want = np.fmin.reduce(r.reshape(r.shape[:-1] + (beams, 360 // beams)), axis=-1)
                got = _group_min(r, beams)
                self.assertEqual(got.shape, want.shape)
                self.assertEqual(got.dtype, np.float32)
                self.assertTrue(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
                                (shape, beams))

    def test_vector_scan_clip_is_fmin(self):
        """NavVectorEnv's fast clip and collision test give what np.fmin and
        np.fmin.reduce give, bit for bit: NaN, inf, above range_max, near beams,
        all-NaN rows; a view of a reply buffer is copied, never returned."""
        from playarea.env.nav import _clip_scan
        rng = np.random.default_rng(3)
        for case in range(60):
            r = (rng.random((50, 36)) * 13).astype(np.float32) if case % 2 else \
                np.full((50, 36), 12.0, np.float32)
            if case % 3 == 0:
                r[rng.integers(50, size=9), rng.integers(36, size=9)] = np.nan
            if case % 5 == 0:
                r[rng.integers(50, size=2)] = np.nan
            if case % 7 == 0:
                r[rng.integers(50, size=3), rng.integers(36, size=3)] = np.inf
            if case % 4 == 0:
                r[rng.integers(50, size=4), rng.integers(36, size=4)] = 0.1
            near = float(rng.choice([0.18, 0.5, 12.0, 20.0]))
            if case % 6 == 0:  # a beam exactly at float32(near): a hit
                r[rng.integers(50), rng.integers(36)] = np.float32(near)
                r[r < np.float32(near)] = 12.0
            view = np.frombuffer(r.tobytes(), np.float32).reshape(r.shape)
            scan, hit = _clip_scan(view, np.float32(12.0), near, True)
            self.assertEqual(scan.tobytes(), np.fmin(r, np.float32(12.0)).tobytes(), case)
            self.assertTrue(np.array_equal(hit, np.fmin.reduce(r, axis=1) <= near), case)
            self.assertFalse(np.shares_memory(scan, view))


class Envs(unittest.TestCase):
    def test_navenv_rules_determinism_and_cleanup(self):
        inst = instance()
        with closing(NavEnv(instance=inst, render_mode="rgb_array", max_episode_steps=15)) as env:
            self.assertTrue(shm_objects(inst))
            checker.check_env(env, steps=25)
            # same-seed episodes are identical, step by step, bit for bit
            runs = []
            for _ in range(2):
                obs, _ = env.reset(seed=11)
                env.action_space.seed(5)
                traj = [obs]
                for _ in range(12):
                    o, r, te, tr, _ = env.step(env.action_space.sample())
                    traj.append((o, r, te, tr))
                    if te or tr:
                        break
                runs.append(traj)
            self.assertTrue(checker._eq(runs[0][0], runs[1][0]))
            for a, b in zip(runs[0][1:], runs[1][1:]):
                self.assertTrue(checker._eq(a[0], b[0]))
                self.assertEqual(a[1:], b[1:])
            # progress reward: driving to a goal straight ahead gains ~ the distance
            _, info = env.reset(seed=1)
            (sx, sy, _), (gx, gy) = info["start"], info["goal"]
            start = (sx, sy, float(np.arctan2(gy - sy, gx - sx)))
            obs, info = env.reset(seed=1, options={"start": start, "goal": (gx, gy)})
            self.assertAlmostEqual(float(obs["goal"][1]), 0.0, places=5)  # dead ahead
            d0 = info["distance"]
            obs, r, te, tr, info = env.step(np.array([0.5, 0.0], np.float32))
            self.assertLess(info["distance"], d0)
            self.assertAlmostEqual(r, (d0 - info["distance"]) - 0.01, places=5)
            img = env.render()
            self.assertEqual(img.dtype, np.uint8)
            self.assertEqual(img.ndim, 3)
            pids = list(env.world.stack.proc.pid for _ in (0,))
        self.assertEqual(shm_objects(inst), [])
        for pid in pids:
            self.assertFalse(os.path.exists("/proc/%d" % pid) and
                             open("/proc/%d/stat" % pid).read().split()[2] != "Z")

    def test_taken_instance_is_left_alone(self):
        # A second LocalStack on a live instance fails; its cleanup spares the first's shm.
        inst = instance()
        first = LocalStack(instance=inst)
        self.addCleanup(first.stop)
        before = sorted(shm_objects(inst))
        self.assertTrue(before)
        with self.assertRaises(StackError):
            LocalStack(instance=inst, timeout=30)
        self.assertEqual(sorted(shm_objects(inst)), before)
        self.assertIsNone(first.proc.poll())
        first.stop()
        self.assertEqual(shm_objects(inst), [])

    def test_discrete_and_bad_args(self):
        with self.assertRaisesRegex(TypeError, "unknown arguments"):
            NavEnv(instance=instance(), bogus=1)
        with closing(NavEnv(instance=instance(), action_type="discrete", flat=True, beams=90)) as env:
            self.assertIsInstance(env.action_space, Discrete)
            self.assertEqual(env.observation_space.shape, (94,))
            checker.check_env(env, steps=10)
            with self.assertRaises(ValueError):
                env.step(99)

    def test_vector_env_autoreset_next_step(self):
        with closing(NavVectorEnv(num_envs=6, instance=instance(), max_episode_steps=4)) as env:
            checker.check_vector_env(env, steps=6)
            runs = []
            for _ in range(2):  # same seed, same actions: the same steps, autoresets included
                traj = [env.reset(seed=21)[0]]
                env.action_space.seed(3)
                for _ in range(7):
                    traj.append(env.step(env.action_space.sample())[:4])
                runs.append(traj)
            for a, b in zip(runs[0][1:], runs[1][1:]):
                self.assertTrue(checker._eq(a[0], b[0]))
                for x, y in zip(a[1:], b[1:]):
                    self.assertTrue(np.array_equal(x, y))
            env.reset(seed=2)
            for k in range(4):
                obs, r, te, tr, info = env.step(np.zeros((6, 2), np.float32))
            self.assertTrue(np.all(tr))  # all truncated at step 4
            obs, r, te, tr, info = env.step(np.ones((6, 2), np.float32))  # the reset step
            self.assertTrue(np.all(r == 0) and not te.any() and not tr.any())
            self.assertTrue(np.all(np.abs(obs["velocity"][:, 0]) < 1e-6))  # the action was ignored
            obs, r, te, tr, info = env.step(np.ones((6, 2), np.float32))
            self.assertTrue(np.all(obs["velocity"][:, 0] > 0))

    def test_parallel_env(self):
        with closing(NavParallelEnv(num_agents=3, instance=instance(), max_episode_steps=5)) as env:
            checker.check_parallel_env(env, steps=8)
            env.reset(seed=1)
            n = 0
            while env.agents:
                env.step({a: env.action_space(a).sample() for a in env.agents})
                n += 1
            self.assertLessEqual(n, 5)
            self.assertEqual(env.state().shape, (3 * 3 + 3 * 2,))


class Conformance(unittest.TestCase):
    """What Gymnasium's and PettingZoo's checkers ask, without the packages: render_mode
    validated, closed, infos that repeat with the seed at any tick phase, autoreset-step
    infos with the new start and goal."""

    def test_render_mode_checked_before_any_stack(self):
        for cls in (NavEnv, NavVectorEnv, NavParallelEnv):
            with self.assertRaisesRegex(ValueError, "render_mode must be None or 'rgb_array'"):
                cls(render_mode="bogus", instance=instance())

    def test_env_arguments_checked_before_any_stack(self):
        """A bad decision period or episode length is named at construction: before, -3
        reached pa-netgw as `data.steps` at the first step and 2.5 became 2 silently."""
        inst = instance()
        bad = [("decision_ticks", -3, "decision_ticks must be in \\[1, 1000000\\]"),
               ("decision_ticks", 2.5, "decision_ticks must be a whole number"),
               ("decision_ticks", 10 ** 7, "decision_ticks must be in"),
               ("decision_ticks", "x", "decision_ticks must be a whole number"),
               ("max_episode_steps", 0, "max_episode_steps must be in"),
               ("beams", True, "beams must be a whole number"),
               ("goal_radius", 0, "goal_radius must be a finite number > 0"),
               ("min_goal_dist", float("nan"), "min_goal_dist must be a finite number"),
               ("max_goal_dist", 0.5, "max_goal_dist must be a finite number >= 1"),
               ("collision_margin", -0.1, "collision_margin must be a finite number >= 0")]
        for cls in (NavEnv, NavVectorEnv, NavParallelEnv):
            for name, value, msg in bad:
                with self.subTest(cls=cls.__name__, name=name, value=value):
                    with self.assertRaisesRegex(ValueError, msg):
                        cls(instance=inst, **{name: value})
        self.assertEqual(shm_objects(inst), [])  # no stack was started for any of them
        with closing(NavEnv(instance=inst, decision_ticks=7.0, max_goal_dist=0)) as env:
            self.assertEqual(env.decision_ticks, 7)  # a whole float is taken
            self.assertIsInstance(env.decision_ticks, int)
            self.assertEqual(env.max_goal_dist, 1e9)  # 0: no bound, as before

    def test_step_ticks_bound_is_the_simulators(self):
        """The envs refuse decision_ticks above nav.STEP_TICKS_MAX: the same bound
        pa-sim and pa-netgw hold (PA_CMD_STEPS_MAX in shm/pa_layout.h)."""
        import re
        from playarea.env import nav
        src = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
        with open(os.path.join(src, "shm", "pa_layout.h")) as f:
            m = re.search(r"#define PA_CMD_STEPS_MAX (\d+)u", f.read())
        self.assertIsNotNone(m)
        self.assertEqual(nav.STEP_TICKS_MAX, int(m.group(1)))

    def test_same_seed_same_episode_at_any_tick_phase(self):
        """decision_ticks=7 (not a multiple of the 20-tick scan period): each reset loads
        the snapshot at another tick phase; the scan schedule and infos repeat anyway."""
        with closing(NavEnv(instance=instance(), decision_ticks=7, max_episode_steps=50)) as env:
            runs = []
            for k in range(3):
                _, info = env.reset(seed=4)
                env.action_space.seed(1)
                run = [info]
                for _ in range(9 + k):  # end each run at another tick phase
                    run.append(env.step(env.action_space.sample()))
                runs.append(run[:10])
            for r in runs[1:]:
                self.assertEqual(runs[0][0], r[0])
                for a, b in zip(runs[0][1:], r[1:]):
                    self.assertTrue(checker._eq(a[0], b[0]))
                    self.assertEqual(a[1:4], b[1:4])
                    self.assertTrue(checker._eq(a[4], b[4]))
            self.assertEqual(runs[0][0]["tick"], 20)  # held a scan period at the start
            self.assertEqual(runs[0][3][4]["tick"], 41)

    def test_vector_infos_and_closed(self):
        env = NavVectorEnv(num_envs=3, instance=instance(), max_episode_steps=2)
        try:
            _, info = env.reset(seed=2)
            for k in ("start", "goal", "distance", "tick"):
                self.assertEqual(len(info[k]), 3)
                self.assertTrue(np.all(info["_" + k]))
            env.step(np.zeros((3, 2), np.float32))
            _, _, _, tr, info = env.step(np.zeros((3, 2), np.float32))
            self.assertTrue(np.all(tr))
            self.assertNotIn("start", info)
            _, _, _, _, info = env.step(np.zeros((3, 2), np.float32))  # the autoreset step
            self.assertTrue(np.all(info["_start"]) and np.all(info["_goal"]))
            self.assertEqual(info["start"].shape, (3, 3))
            self.assertEqual(info["tick"].dtype, np.int64)
            self.assertFalse(env.closed)
        finally:
            env.close()
        self.assertTrue(env.closed)


@unittest.skipUnless(HAVE_GYMNASIUM, "gymnasium not importable (PYTHONPATH=<Gymnasium checkout>)")
class RealGymnasium(unittest.TestCase):
    """Gymnasium's own check_env and vector wrappers, when Gymnasium is importable."""

    def test_check_env(self):
        from gymnasium.utils.env_checker import check_env
        with closing(NavEnv(instance=instance(), render_mode="rgb_array")) as env:
            check_env(env)

    def test_vector_wrappers(self):
        from gymnasium.vector import AutoresetMode
        from gymnasium.wrappers import vector as vw
        for wrap in (vw.RecordEpisodeStatistics, vw.DictInfoToList, vw.FlattenObservation,
                     lambda e: vw.NormalizeObservation(vw.FlattenObservation(e))):
            base = NavVectorEnv(num_envs=3, instance=instance(), max_episode_steps=3)
            try:
                self.assertIs(base.metadata["autoreset_mode"], AutoresetMode.NEXT_STEP)
                env = wrap(base)
                env.reset(seed=1)
                for _ in range(8):
                    env.step(env.action_space.sample())
            finally:
                base.close()


@unittest.skipUnless(HAVE_PETTINGZOO, "pettingzoo not importable (PYTHONPATH=<PettingZoo checkout>)")
class RealPettingZoo(unittest.TestCase):
    def test_api_seed_and_state(self):
        from pettingzoo.test import parallel_api_test, parallel_seed_test
        from pettingzoo.test.state_test import state_test
        from pettingzoo.utils.conversions import parallel_to_aec
        envs = []

        def make():
            envs.append(NavParallelEnv(num_agents=3, instance=instance(), max_episode_steps=20))
            return envs[-1]
        try:
            parallel_api_test(make(), num_cycles=60)
            parallel_seed_test(make, num_cycles=20)
            state_test(parallel_to_aec(make()), make(), num_cycles=20)
        finally:
            for e in envs:
                e.close()


if __name__ == "__main__":
    unittest.main()


class Ghosts(unittest.TestCase):
    """NavVectorEnv's robots ignore each other (--ghost_robots); NavParallelEnv's do not."""

    def test_vector_robots_ignore_each_other(self):
        with closing(NavVectorEnv(num_envs=2, instance=instance())) as env:
            env.reset(seed=1)
            self.assertGreater(self.forward_range_parallel(env), 1.0)

    def test_parallel_agents_see_each_other(self):
        with closing(NavParallelEnv(num_agents=2, instance=instance())) as env:
            env.reset(seed=1)
            env.robots = env._vec.robots
            r = self.forward_range_parallel(env)
            self.assertLess(r, 0.6)

    def forward_range_parallel(self, env):
        """Robot 0's range straight ahead with robot 1 0.6 m ahead of it, at a spot
        where that beam reaches more than 1 m without robot 1."""
        w = env.world
        for x, y in w.free_xy[::97]:
            resp = w.conn.batch([
                ("set_pose", {"robot": int(env.robots[0]), "pose": [float(x), float(y), 0.0]}),
                ("set_pose", {"robot": int(env.robots[1]), "pose": [float(x) + 0.6, float(y), 0.0]})])
            if any(r.get("type") == "error" for r in resp):
                continue
            # clear ahead without robot 1? then robot 1 is what the beam hits
            w.conn.batch([("set_pose", {"robot": int(env.robots[1]), "pose": [float(x) + 0.6, float(y) + 3.0, 0.0]})])
            st, rg, _ = w.conn.step_batch(env.robots[:2], None, 20)
            if rg[0][rg.shape[1] // 2] <= 1.0:
                continue
            resp = w.conn.batch([("set_pose", {"robot": int(env.robots[1]), "pose": [float(x) + 0.6, float(y), 0.0]})])
            if resp[0].get("type") == "error":
                continue
            st, rg, _ = w.conn.step_batch(env.robots[:2], None, 20)
            return float(rg[0][rg.shape[1] // 2])
        self.fail("no free spot with 1 m clear ahead")


class Camera(unittest.TestCase):
    def test_head_camera_in_lockstep(self):
        inst = instance()
        with closing(NavEnv(instance=inst, camera=(24, 32), max_episode_steps=10)) as env:
            sp = env.observation_space["camera"]
            self.assertEqual((sp.shape, sp.dtype), ((24, 32, 3), np.uint8))
            self.assertTrue(sp.contains(sp.sample()))
            o1, _ = env.reset(seed=5)
            self.assertTrue(env.observation_space.contains(o1))
            o2, _ = env.reset(seed=5)
            self.assertTrue(np.array_equal(o1["camera"], o2["camera"]))  # same pose, same image
            o3, _ = env.reset(seed=6)
            self.assertFalse(np.array_equal(o1["camera"], o3["camera"]))
            obs, *_ = env.step(np.array([0.0, 3.0], np.float32))  # turning: the view changes
            self.assertFalse(np.array_equal(obs["camera"], o3["camera"]))
            self.assertIn("pa-render", env.world.stack.argv[0] + " ".join(
                open("/proc/%d/cmdline" % p).read().replace("\0", " ")
                for p in children(env.world.stack.proc.pid)))
        self.assertEqual(shm_objects(inst), [])
        with self.assertRaisesRegex(ValueError, "flat"):
            NavEnv(instance=instance(), camera=(24, 32), flat=True)


def children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                st = open("/proc/%s/stat" % p).read()
            except OSError:
                continue
            if int(st[st.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(p))
    return out


class RandomMaps(unittest.TestCase):
    def test_map_per_episode(self):
        with closing(NavEnv(instance=instance(), max_goal_dist=4.0,
                            randomize_map={"width": 8, "height": 8, "rooms": [2, 2]})) as env:
            o1, _ = env.reset(seed=1)
            g1 = env.world.wall_grid.copy()
            o2, _ = env.reset(seed=2)
            g2 = env.world.wall_grid.copy()
            self.assertNotEqual(g1.tobytes(), g2.tobytes())  # another building
            o3, _ = env.reset(seed=1)
            self.assertEqual(g1.tobytes(), env.world.wall_grid.tobytes())
            self.assertTrue(checker._eq(o1, o3))
            checker.check_env(env, steps=5)
