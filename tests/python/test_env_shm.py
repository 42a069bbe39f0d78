"""The shared-memory read path: layout from pa-shmctl, equal to TCP bit for bit."""

import json
import os
import subprocess
import unittest

import numpy as np

from playarea.env import NavEnv, NavParallelEnv, NavVectorEnv
from playarea.env import checker
from playarea.env._stack import find_bin_dir
from playarea.env.shm import ShmReader


def inst(tag):
    return "t%d-rlshm-%s" % (os.getpid(), tag)


class Layout(unittest.TestCase):
    def test_layout_json(self):
        out = subprocess.run([os.path.join(find_bin_dir(), "pa-shmctl"), "layout", "--json"],
                             capture_output=True, text=True, check=True).stdout
        lay = json.loads(out)
        rs = lay["records"]["pa_robot_state"]
        self.assertEqual(rs["fields"]["x"]["type"], "f8")
        self.assertEqual(lay["records"]["pa_scan"]["fields"]["count"]["type"], "u4")
        self.assertEqual(lay["ring"]["fields"]["head"]["type"], "u8")
        offs = sorted(f["offset"] for f in rs["fields"].values())
        self.assertEqual(len(set(offs)), len(offs))
        self.assertLess(offs[-1], rs["size"])
        p = subprocess.run([os.path.join(find_bin_dir(), "pa-shmctl"), "layout"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("layout --json", p.stderr)


class ShmEqualsTcp(unittest.TestCase):
    def test_same_numbers(self):
        env = NavVectorEnv(num_envs=5, instance=inst("a"), shm=True, beams=360)
        try:
            env.reset(seed=4)
            w = env.world
            self.assertIsInstance(w.reader, ShmReader)
            for k in range(6):
                env.step(env.action_space.sample())
                # the same tick over TCP (one more tick, binary) and from shm
                st_t, rg_t, _ = w.conn.step_batch(env.robots, None, 1 + k % 3)
                st_s, rg_s, tick = w.reader.observe(env.robots, w.range_max)
                self.assertTrue(np.array_equal(st_t, st_s, equal_nan=True), (st_t - st_s))
                self.assertEqual(rg_t.shape, rg_s.shape)
                self.assertTrue(np.array_equal(rg_t, rg_s, equal_nan=True))
        finally:
            env.close()

    def test_index_across_ring_laps(self):
        """The reader indexes only the scans written since its last read: gaps of a
        few scans, of most of the ring (it wraps) and of more than the ring (it
        re-indexes every slot) all give what the TCP reply holds."""
        env = NavVectorEnv(num_envs=5, instance=inst("c"), shm=True, beams=360)
        try:
            env.reset(seed=2)
            w = env.world
            slots = w.reader.scan.slot_count
            per_tick = 5 / w.ticks_per_scan  # scans written per tick
            for gap in (3, int(0.75 * slots), int(1.1 * slots), 1, int(0.6 * slots)):
                w.conn.step_batch(env.robots, np.full((5, 2), 0.2), max(1, int(gap / per_tick)))
                st_t, rg_t, _ = w.conn.step_batch(env.robots, None, 1)
                st_s, rg_s, _ = w.reader.observe(env.robots, w.range_max)
                self.assertTrue(np.array_equal(st_t, st_s, equal_nan=True), gap)
                self.assertTrue(np.array_equal(rg_t, rg_s, equal_nan=True), gap)
            self.assertGreater(w.reader.scan.head(), 2 * slots)
        finally:
            env.close()

    def test_every_robot_in_a_ring_of_max_robots_and_a_quarter(self):
        """As many robots as --max_robots: the scan ring holds a quarter more slots
        than robots, and after steps of any length each robot's newest scan is
        found in it, the same as the TCP reply's."""
        n = 300  # above 256: the env asks for --max_robots n
        env = NavVectorEnv(num_envs=n, instance=inst("full"), shm=True, beams=360)
        try:
            env.reset(seed=3)
            w = env.world
            self.assertEqual(w.reader.scan.slot_count, n + n // 4)
            for ticks in (1, 7, w.ticks_per_scan, 33, 2 * w.ticks_per_scan + 3):
                w.conn.step_batch(env.robots, np.full((n, 2), 0.2), ticks)
                st_t, rg_t, _ = w.conn.step_batch(env.robots, None, 1)
                st_s, rg_s, _ = w.reader.observe(env.robots, w.range_max)
                self.assertFalse(np.isnan(rg_s[:, 0]).any(), ticks)  # every robot's scan
                self.assertTrue(np.array_equal(st_t, st_s, equal_nan=True), ticks)
                self.assertTrue(np.array_equal(rg_t, rg_s, equal_nan=True), ticks)
        finally:
            env.close()

    def test_shm_and_tcp_envs_agree(self):
        runs = []
        for shm in (False, True):
            env = NavVectorEnv(num_envs=4, instance=inst("b%d" % shm), shm=shm,
                               max_episode_steps=5)
            try:
                obs, _ = env.reset(seed=9)
                env.action_space.seed(1)
                traj = [obs]
                for _ in range(8):
                    traj.append(env.step(env.action_space.sample())[:4])
                runs.append(traj)
            finally:
                env.close()
        for a, b in zip(*runs):
            oa, ob = (a, b) if isinstance(a, dict) else (a[0], b[0])
            for key in oa:
                self.assertTrue(np.array_equal(oa[key], ob[key]), key)
            if not isinstance(a, dict):
                for x, y in zip(a[1:], b[1:]):
                    self.assertTrue(np.array_equal(x, y))

    def test_every_env_same_on_shm_and_tcp(self):
        """NavEnv, NavVectorEnv and NavParallelEnv: the same seeded episodes, step by
        step, whether observations come over TCP or from shared memory."""
        def navenv(shm, tag):
            return NavEnv(instance=inst(tag), shm=shm, max_episode_steps=6, beams=360)

        def run_single(env):
            out = [env.reset(seed=5)]
            env.action_space.seed(2)
            for _ in range(9):
                o, r, te, tr, info = env.step(env.action_space.sample())
                out.append((o, r, te, tr, info["distance"], info["pose"]))
                if te or tr:
                    out.append(env.reset())
            return out

        def run_vec(env):
            out = [env.reset(seed=5)[0]]
            env.action_space.seed(2)
            for _ in range(9):
                out.append(env.step(env.action_space.sample())[:4])
            return out

        def run_par(env):
            out = [env.reset(seed=5)[0]]
            for k in range(9):
                if not env.agents:
                    break
                out.append(env.step({a: np.array([0.6, 0.4 * (k % 3 - 1)], np.float32)
                                     for a in env.agents})[:4])
            return out

        for make, run in ((navenv, run_single),
                          (lambda shm, tag: NavVectorEnv(num_envs=3, instance=inst(tag), shm=shm,
                                                         max_episode_steps=4), run_vec),
                          (lambda shm, tag: NavParallelEnv(num_agents=3, instance=inst(tag),
                                                           shm=shm, max_episode_steps=6), run_par)):
            runs = []
            for shm in (False, True):
                env = make(shm, "e%d%d" % (len(runs), id(run) % 1000))
                try:
                    runs.append(run(env))
                finally:
                    env.close()
            self.assertEqual(len(runs[0]), len(runs[1]))
            for a, b in zip(*runs):
                self.assertTrue(self._same(a, b), run.__name__)

    def _same(self, a, b):
        if isinstance(a, (tuple, list)):
            return len(a) == len(b) and all(self._same(x, y) for x, y in zip(a, b))
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(self._same(a[k], b[k]) for k in a)
        return checker._eq(a, b)

    def test_bad_instance(self):
        with self.assertRaisesRegex(Exception, "cannot open"):
            ShmReader("t%d-nothing-here" % os.getpid())


if __name__ == "__main__":
    unittest.main()
