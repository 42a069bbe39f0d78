"""The shared-memory read path: layout from pa-shmctl, equal to TCP bit for bit."""

import json
import os
import subprocess
import unittest

import numpy as np

from playarea.env import NavEnv, NavParallelEnv, NavVectorEnv
from playarea.env import checker
from playarea.env._stack import F, find_bin_dir
from playarea.env.shm import ShmReader


def inst(tag):
    return "t%d-rlshm-%s" % (os.getpid(), tag)


def _parent_comm(pid):
    """(comm, parent pid) of a process, or None."""
    try:
        st = open("/proc/%s/stat" % pid).read()
        return open("/proc/%s/comm" % pid).read().strip(), int(st[st.rindex(")") + 2:].split()[1])
    except (OSError, ValueError):
        return None


def _vec_run(env, seed, action_seed, steps):
    """A vector env's seeded run: the reset's observations, then each step's
    (observations, rewards, terminated, truncated) for sampled actions."""
    out = [env.reset(seed=seed)[0]]
    env.action_space.seed(action_seed)
    for _ in range(steps):
        out.append(env.step(env.action_space.sample())[:4])
    return out


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

    def _block_and_rings(self, w, robots, actions, ticks):
        """One step_batch with observe "shm": pa-sim's block, and what the rings hold."""
        _, _, d = w.conn.step_batch(robots, actions, ticks, observe="shm")
        blk = w.reader.block(d["obs_seq"], len(robots))
        self.assertIsNotNone(blk, d)
        st_s, rg_s, tick = w.reader.observe(robots, w.range_max)
        self.assertEqual(tick, d["tick"])
        return blk, (st_s, rg_s)

    def test_block_equals_rings(self):
        """pa-sim's observation block holds what the rings (and so the TCP reply,
        above) hold, bit for bit: after steps shorter and longer than a scan period,
        for every robot or a run of them."""
        n = 300
        env = NavVectorEnv(num_envs=n, instance=inst("blk"), shm=True, beams=360)
        try:
            env.reset(seed=6)
            w = env.world
            seqs = []
            for ticks, robots in ((1, env.robots), (7, env.robots[5:40]),
                                  (w.ticks_per_scan, env.robots), (33, env.robots[-1:]),
                                  (2 * w.ticks_per_scan + 3, env.robots)):
                acts = np.full((len(robots), 2), 0.2)
                (st_b, rg_b), (st_s, rg_s) = self._block_and_rings(w, robots, acts, ticks)
                self.assertFalse(np.isnan(rg_b[:, 0]).any(), ticks)
                self.assertTrue(np.array_equal(st_b, st_s, equal_nan=True), ticks)
                self.assertTrue(np.array_equal(rg_b, rg_s, equal_nan=True), ticks)
                seqs.append(w.reader._obs_field("seq"))
            self.assertEqual(seqs, sorted(set(seqs)))  # a new block each step
            self.assertEqual(w.reader.block_misses, 0)
            # not one run of ids: refused by name, nothing stepped
            with self.assertRaisesRegex(Exception, "one run of ids"):
                w.conn.step_batch([1, 0], None, 1, observe="shm")
        finally:
            env.close()

    @staticmethod
    def _sectors(rg, beams):
        """data.beams's rule in numpy: sector j the fmin of beams j*n//b .. (j+1)*n//b - 1
        (NaN only where all are, or the sector is empty)."""
        n = rg.shape[1]
        out = np.full((len(rg), beams), np.nan, np.float32)
        for j in range(beams):
            lo, hi = j * n // beams, (j + 1) * n // beams
            if hi > lo:
                out[:, j] = np.fmin.reduce(rg[:, lo:hi], axis=1)
        return out

    def test_beams_sectors_everywhere(self):
        """step_batch's data.beams: each scan as that many sectors, the least range of
        each, the same numbers bit for bit whichever process makes them (pa-sim's block
        through the lane and observe "shm", pa-netgw's binary and JSON replies) as numpy
        makes them from the rings' full scans; a divisor or not, one sector a beam.
        Bad values are refused by name and step nothing."""
        from playarea.errors import Error
        n = 6
        env = NavVectorEnv(num_envs=n, instance=inst("sec"), shm=True, beams=360)
        try:
            env.reset(seed=3)
            w = env.world
            inc = None
            for k, beams in enumerate((36, 7, 360, 1, 100)):
                acts = np.tile([[0.3, 0.4 * (k % 3 - 1)]], (n, 1))
                st, rg, tick, seq = w.lane.step_batch(int(env.robots[0]), acts, 3 + k, False, beams)
                st_s, rg_s, tick_s = w.reader.observe(env.robots, w.range_max)
                self.assertEqual(tick_s, tick)
                self.assertFalse(np.isnan(rg_s).any())
                ref = self._sectors(rg_s, beams)
                self.assertEqual(rg.shape, (n, beams))
                self.assertTrue(np.array_equal(rg.view(np.uint32), ref.view(np.uint32)), beams)
                inc = inc or st_s[0, F["angle_increment"]]
                self.assertTrue(np.allclose(st[:, F["angle_increment"]], inc * 360 / beams))
                self.assertTrue(np.array_equal(st[:, :F["head"] + 1], st_s[:, :F["head"] + 1]))
                # pa-netgw's binary block, and pa-sim's through observe "shm"
                st_t, rg_t, d = w.conn.step_batch(env.robots, None, 1, beams=beams)
                st_s, rg_s, _ = w.reader.observe(env.robots, w.range_max)
                self.assertEqual(d["binary"]["beams"], beams)
                self.assertTrue(np.array_equal(rg_t, self._sectors(rg_s, beams)), beams)
                _, _, d = w.conn.step_batch(env.robots, None, 2, observe="shm", beams=beams)
                st_b, rg_b = w.reader.block(d["obs_seq"], n)
                st_s, rg_s, _ = w.reader.observe(env.robots, w.range_max)
                self.assertTrue(np.array_equal(rg_b, self._sectors(rg_s, beams)), beams)
                # JSON: the scans' ranges and their angle step
                d = w.conn.request("step_batch", {"robots_range": [0, n], "steps": 1, "beams": beams})
                st_s, rg_s, _ = w.reader.observe(env.robots, w.range_max)
                ref = self._sectors(rg_s, beams)
                for i, r in enumerate(d["robots"]):
                    self.assertEqual(len(r["scan"]["ranges"]), beams)
                    self.assertTrue(np.allclose(r["scan"]["ranges"], ref[i], atol=2e-3))
                    self.assertAlmostEqual(r["scan"]["angle_increment"], inc * 360 / beams, 5)
            self.assertEqual(w.reader.block_misses, 0)
            before = w.reader.observe(env.robots, w.range_max)[2]
            for bad in (0, -1, 4097, 1.5, "36", True):
                with self.assertRaisesRegex(Error, r"data.beams must be an integer in \[1, 4096\]"):
                    w.conn.request("step_batch", {"robots_range": [0, n], "steps": 1, "beams": bad,
                                                  "actions": [[0.5, 0.5]] * n})
            with self.assertRaisesRegex(Error, "invalid_message: lane: beams 5000"):
                w.lane.step_batch(int(env.robots[0]), np.full((n, 2), 0.5), 1, False, 5000)
            self.assertEqual(w.reader.observe(env.robots, w.range_max)[2], before)  # nothing stepped
            # the lane goes on as cast afterwards
            st, rg, _, _ = w.lane.step_batch(int(env.robots[0]), np.zeros((n, 2)), 1, False, 0)
            self.assertEqual(rg.shape, (n, 360))
        finally:
            env.close()

    def test_env_sectors_same_as_own_grouping(self):
        """NavEnv and NavVectorEnv with 36 of 360 beams ask the simulator for the
        sectors (render_mode None), which render_mode "rgb_array" envs do not (they
        group every beam themselves): the same seeded episodes bit for bit, over the
        lane and over TCP."""
        def run_single(env):
            out = [env.reset(seed=7)[0]]
            env.action_space.seed(4)
            for _ in range(30):
                o, r, te, tr, info = env.step(env.action_space.sample())
                out.append((o, r, te, tr, info["distance"]))
                if te or tr:
                    out.append(env.reset()[0])
            return out

        def run_vec(env):
            return _vec_run(env, 7, 4, 30)

        for shm in (True, False):
            for make, run in ((lambda rm, tag: NavEnv(instance=inst(tag), shm=shm, render_mode=rm,
                                                     max_episode_steps=8), run_single),
                              (lambda rm, tag: NavVectorEnv(num_envs=5, instance=inst(tag), shm=shm,
                                                            render_mode=rm, max_episode_steps=6),
                               run_vec)):
                runs = []
                for rm in (None, "rgb_array"):
                    env = make(rm, "g%d%d%d" % (shm, len(runs), id(run) % 1000))
                    widths = set()  # of the ranges the simulator's steps returned
                    for name in ("step", "step1"):
                        def spy(*a, _real=getattr(env.world, name), **k):
                            out = _real(*a, **k)
                            widths.add(out[1].shape[-1])
                            return out
                        setattr(env.world, name, spy)
                    try:
                        runs.append(run(env))
                        env.step(env.action_space.sample())
                        # a step's ranges come as sectors, except while rendering
                        # (resets ask for every beam)
                        self.assertIn(36 if rm is None else 360, widths)
                        if rm is not None:
                            self.assertEqual(widths, {360})
                        if shm:  # what the lane was asked for
                            self.assertEqual(env.world.lane._beams, 36 if rm is None else 0)
                    finally:
                        env.close()
                self.assertEqual(len(runs[0]), len(runs[1]))
                for a, b in zip(*runs):
                    self.assertTrue(self._same(a, b), (shm, run.__name__))

    def test_block_replaced_by_another_client(self):
        """Another client's step replaces the block: the reader says so (None) and
        the env reads the rings instead; the numbers stay the TCP reply's."""
        from playarea.env._stack import Conn
        env = NavVectorEnv(num_envs=4, instance=inst("rep"), shm=True, beams=360)
        other = None
        try:
            env.reset(seed=1)
            w = env.world
            other = Conn(w.host, w.port)
            _, _, d = w.conn.step_batch(env.robots, None, 3, observe="shm")
            other.step_batch([0, 1], None, 1, observe="shm")
            self.assertIsNone(w.reader.block(d["obs_seq"], 4))
            self.assertEqual(w.reader.block_misses, 1)
            before = w.reader.blocks
            real = w.reader.block
            w.reader.block = lambda seq, n, view=False: None  # as if replaced every time
            try:
                env.step(env.action_space.sample())
            finally:
                w.reader.block = real
            st_t, rg_t, _ = w.conn.step_batch(env.robots, None, 1)
            (st_b, rg_b), _ = self._block_and_rings(w, env.robots, None, 1)
            self.assertEqual(w.reader.blocks, before + 1)
            self.assertEqual(st_b.shape, st_t.shape)
            self.assertEqual(rg_b.shape, rg_t.shape)
        finally:
            if other is not None:
                other.close()
            env.close()

    def test_block_after_sim_restart(self):
        """A crashed pa-sim is restarted: the new one keeps the segment a client holds
        and its seq going, and finds every robot's newest scan in the ring again."""
        import signal
        import time
        env = NavVectorEnv(num_envs=6, instance=inst("rst"), shm=True, beams=360)
        try:
            env.reset(seed=2)
            w = env.world
            self._block_and_rings(w, env.robots, None, w.ticks_per_scan)
            seq0 = w.reader._obs_field("seq")
            sim = [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent_comm(p)
                   == ("pa-sim", env.world.stack.proc.pid)]
            self.assertEqual(len(sim), 1)
            os.kill(sim[0], signal.SIGKILL)
            deadline = time.monotonic() + 30
            while True:  # the launcher restarts it; requests are refused busy meanwhile
                try:
                    (st_b, rg_b), (st_s, rg_s) = self._block_and_rings(w, env.robots, None, 1)
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            self.assertGreater(w.reader._obs_field("seq"), seq0)
            self.assertFalse(np.isnan(rg_b[:, 0]).any())  # every scan found again
            self.assertTrue(np.array_equal(st_b, st_s, equal_nan=True))
            self.assertTrue(np.array_equal(rg_b, rg_s, equal_nan=True))
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
                if shm:  # every step's observations came in pa-sim's block
                    self.assertGreaterEqual(env.world.reader.blocks, 8)
                    self.assertEqual(env.world.reader.block_misses, 0)
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
            return _vec_run(env, 5, 2, 9)

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
