"""NavEnv's one-robot road: Conn.step1 (templated request, header read by
position) and Shm1Reader give what step_batch and ShmReader give, bit for bit,
and fail by name."""

import os
import unittest
from contextlib import closing

import numpy as np

from playarea.env import NavEnv, NavVectorEnv
from playarea.env._shm1 import Shm1Reader
from playarea.env._stack import StackError
from playarea.errors import Error

_n = [0]


def instance():
    _n[0] += 1
    return "t%d-rlone-%d" % (os.getpid(), _n[0])


def acts(k):
    return np.array([0.5 * np.sin(0.3 * k), 0.9 * np.cos(0.7 * k)], np.float32)


def children_named(parent, comm):
    """The pids of parent's children whose command name is comm."""
    found = []
    for p in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open("/proc/%d/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%d/comm" % p) as f:
                name = f.read().strip()
        except OSError:
            continue  # gone between the listing and the read
        if name == comm and ppid == parent:
            found.append(p)
    return found


class Step1(unittest.TestCase):
    def test_same_as_the_batched_observation(self):
        """Two stacks, one seed: NavEnv.step's observation equals the vector path's
        (step_batch + _NavCore._observe) step after step, flat and dict."""
        for flat in (False, True):
            a = NavEnv(instance=instance(), beams=36, flat=flat, max_episode_steps=10 ** 6)
            b = NavEnv(instance=instance(), beams=36, flat=flat, max_episode_steps=10 ** 6)
            with closing(a), closing(b):
                oa, ia = a.reset(seed=7)
                b.reset(seed=7)
                w = b.world
                seen = 0
                for k in range(30):
                    oa, ra, ta, _, ia = a.step(acts(k))
                    cmd = b._commands(acts(k)[None])
                    st, rg, d = w.step(np.array([b.robot]), cmd, b.decision_ticks)
                    scan, g, vel, dist, coll = b._observe(st, rg, b._goal)
                    want = np.concatenate([scan[0], g[0], vel[0]]) if flat else \
                        {"scan": scan[0], "goal": g[0], "velocity": vel[0]}
                    if flat:
                        self.assertTrue(np.array_equal(oa, want), k)
                        self.assertEqual(oa.dtype, np.float32)
                    else:
                        for key in want:
                            self.assertTrue(np.array_equal(oa[key], want[key]), (k, key))
                            self.assertEqual(oa[key].dtype, np.float32)
                    self.assertEqual(ia["distance"], float(dist[0]))
                    self.assertEqual(ia["collision"], bool(coll[0]))
                    self.assertEqual(ia["tick"], d["tick"])
                    self.assertEqual(ia["pose"], tuple(st[0, :3].tolist()))
                    seen += int(np.any(scan[0] < w.range_max))
                    if ta:
                        break
                self.assertGreater(seen, 0)  # the scans saw walls: not all range_max

    def test_errors_by_name_and_the_connection_goes_on(self):
        with closing(NavEnv(instance=instance(), beams=360)) as env:
            env.reset(seed=1)
            w = env.world
            with self.assertRaises(Error) as e:
                w.conn.step1(9999, 0.0, 0.0, 20)
            self.assertIn("9999", str(e.exception))
            with self.assertRaisesRegex(ValueError, "finite"):
                w.conn.step1(env.robot, float("nan"), 0.0, 20)
            with self.assertRaisesRegex(ValueError, "finite"):
                env.step(np.array([np.inf, 0.0]))
            with self.assertRaisesRegex(ValueError, r"\[v, w\]"):
                env.step([1.0, 2.0, 3.0])
            # int and list actions go the general way to the same kind of numbers
            o, *_ = env.step([0, 0])
            self.assertEqual(o["scan"].shape, (360,))
            t0 = env.step(acts(0))[4]["tick"]
            buf, so, beams, ro, tick = w.conn.step1(env.robot, 0.1, 0.0, 20)
            self.assertEqual((beams, tick), (360, t0 + 20))
        with closing(NavEnv(instance=instance(), action_type="discrete")) as env:
            env.reset(seed=1)
            with self.assertRaisesRegex(ValueError, "one discrete action"):
                env.step(np.array([1, 2]))
            with self.assertRaisesRegex(ValueError, "out of range"):
                env.step(7)
            o, *_ = env.step(np.int64(3))  # turn left
            self.assertEqual(o["velocity"].shape, (2,))

    def test_one_recv_per_step(self):
        """pa-netgw sends a step's header line and block in one sendmsg: on
        loopback NavEnv reads each reply with one recv_into."""
        with closing(NavEnv(instance=instance(), beams=360)) as env:
            env.reset(seed=1)
            conn = env.world.conn
            calls = [0]

            class Counting:
                def __init__(self, sock):
                    self.sock = sock

                def recv_into(self, *a):
                    calls[0] += 1
                    return self.sock.recv_into(*a)

                def __getattr__(self, name):
                    return getattr(self.sock, name)
            real, conn.sock = conn.sock, Counting(conn.sock)
            try:
                for k in range(100):
                    env.step(acts(k))
            finally:
                conn.sock = real
            self.assertEqual(calls[0], 100)

    def test_replies_in_pieces(self):
        """A fake gateway sends step replies cut anywhere (inside the header line,
        inside the block), an error, and a header of another shape: step1 reads
        each whole, raises the error by its code, and stays in step."""
        import json
        import socket
        import struct
        import threading
        import time
        from playarea.env._stack import Conn
        rng = np.random.default_rng(5)
        replies, want = [], []
        for k in range(6):
            st = rng.standard_normal(16)
            rg = rng.random(360, dtype=np.float32)
            blk = b"PAB1" + struct.pack("<3I", 1, 360, 16) + st.astype("<f8").tobytes() + \
                rg.astype("<f4").tobytes()
            head = {"type": "state", "request_id": k, "data": {
                "tick": 100 + k, "count": 1, "binary": {"bytes": len(blk), "beams": 360,
                                                         "fields": 16}}}
            if k == 3:  # another key order: the general road
                head = {"data": head["data"], "type": "state"}
            replies.append(json.dumps(head, separators=(",", ":")).encode() + b"\n" + blk)
            want.append((st, rg, 100 + k))
        err = b'{"type":"error","error":{"code":"unknown_robot","message":"no robot 7"}}\n'
        with socket.socket() as ls:
            ls.bind(("127.0.0.1", 0))
            ls.listen()

            def serve():
                c, _ = ls.accept()
                with c, c.makefile("rb") as f:
                    for i, out in enumerate(replies + [err]):
                        f.readline()
                        cut = [10, 30, len(out) - 5, len(out) - 1000, 200, len(out)][i % 6] \
                            if i < len(replies) else len(out)
                        c.sendall(out[:cut])
                        time.sleep(0.02)
                        c.sendall(out[cut:])
                    while c.recv(1 << 16):
                        pass
            th = threading.Thread(target=serve)
            th.start()
            conn = Conn("127.0.0.1", ls.getsockname()[1], timeout=10)
            try:
                for st, rg, tick in want:
                    buf, so, beams, ro, t = conn.step1(0, 0.25, -0.5, 20)
                    self.assertEqual((beams, t), (360, tick))
                    self.assertTrue(np.array_equal(np.frombuffer(buf, "<f8", 16, so), st))
                    self.assertTrue(np.array_equal(np.frombuffer(buf, "<f4", 360, ro), rg))
                with self.assertRaises(Error) as e:
                    conn.step1(0, 0.0, 0.0, 20)
                self.assertEqual(e.exception.code, "unknown_robot")
            finally:
                conn.close()
                th.join(10)

    def test_render_and_fresh_arrays(self):
        with closing(NavEnv(instance=instance(), beams=360, render_mode="rgb_array")) as env:
            env.reset(seed=3)
            o1 = env.step(acts(1))[0]
            keep = {k: v.copy() for k, v in o1.items()}
            img = env.render()
            self.assertEqual(img.ndim, 3)
            self.assertTrue((img == (30, 60, 220)).all(axis=2).any())  # the robot is drawn
            env.step(acts(2))
            for k in keep:
                self.assertTrue(np.array_equal(o1[k], keep[k]), k)


class Shm1(unittest.TestCase):
    def test_equals_shm_reader(self):
        """Shm1Reader = ShmReader.observe for each robot of 80 (so a robot's newest
        scan is sometimes more than 64 records back), tick by tick, and for a
        robot that has not scanned yet."""
        env = NavVectorEnv(num_envs=80, instance=instance(), shm=True, beams=360)
        try:
            env.reset(seed=2)
            w = env.world
            ones = {r: Shm1Reader(w.reader, r, w.range_max) for r in (0, 5, 79)}
            general = [0]
            for r in ones.values():
                orig = r._general

                def counted(orig=orig):
                    general[0] += 1
                    return orig()
                r._general = counted
            for k in range(25):
                w.conn.step_batch(env.robots, np.full((80, 2), 0.3), 1)
                for r, one in ones.items():
                    st, rg, _ = w.reader.observe(np.array([r]), w.range_max)
                    vals, rg1 = one.observe()
                    self.assertTrue(np.array_equal(st[0], np.array(vals), equal_nan=True), (k, r))
                    self.assertTrue(np.array_equal(rg[0], rg1, equal_nan=True), (k, r))
            self.assertGreater(general[0], 0)
            x, y = w.free_xy[len(w.free_xy) // 2]
            rid = w.conn.request("spawn_robot", {"name": "late",
                                                 "pose": [float(x), float(y), 0.0]})["robot"]
            w.conn.step_batch([rid], None, 1)
            one = Shm1Reader(w.reader, rid, w.range_max)
            st, rg, _ = w.reader.observe(np.array([rid]), w.range_max)
            vals, rg1 = one.observe()
            self.assertTrue(np.array_equal(st[0], np.array(vals), equal_nan=True))
            self.assertEqual(rg.shape[1], len(rg1))
            with self.assertRaisesRegex(StackError, "not at their ids"):
                Shm1Reader(w.reader, 5000, w.range_max).observe()
        finally:
            env.close()


class UnixSocket(unittest.TestCase):
    """NavEnv(shm=True) on its own stack steps over pa-netgw's --unix_socket:
    the same observations as TCP bit for bit, errors by name, nothing left."""

    def test_same_as_tcp_bit_for_bit(self):
        import socket
        a = NavEnv(instance=instance(), beams=360, max_episode_steps=40)
        b = NavEnv(instance=instance(), beams=360, max_episode_steps=40, shm=True)
        with closing(a), closing(b):
            self.assertEqual(a.world.conn.sock.family, socket.AF_INET)
            self.assertEqual(b.world.conn.sock.family, socket.AF_UNIX)
            self.assertIsNotNone(b.world.lane)  # its steps: the step lane
            path = b.world.stack.unix_path
            self.assertTrue(os.path.exists(path))
            self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
            for ep in range(3):
                oa, ia = a.reset(seed=11 + ep)
                ob, ib = b.reset(seed=11 + ep)
                self.assertEqual(ia["start"], ib["start"])
                for k in range(40):
                    oa, ra, ta, ua, ia = a.step(acts(k + ep))
                    ob, rb, tb, ub, ib = b.step(acts(k + ep))
                    for key in oa:
                        self.assertEqual(oa[key].tobytes(), ob[key].tobytes(), (ep, k, key))
                    self.assertEqual((ra, ta, ua), (rb, tb, ub))
                    self.assertEqual(ia, ib)
                    if ta or ua:
                        break
            # errors by name over the unix socket and the lane, and both go on
            with self.assertRaises(Error) as e:
                b.world.conn.step1(9999, 0.0, 0.0, 20)
            self.assertIn("9999", str(e.exception))
            with self.assertRaises(Error) as e:
                b.world.step1(9999, 0.0, 0.0, 20)
            self.assertEqual(e.exception.code, "unknown_robot")
            self.assertIn("9999", str(e.exception))
            with self.assertRaises(Error) as e:
                b.world.step1(b.robot, 0.0, 0.0, 0)
            self.assertEqual(e.exception.code, "invalid_action_shape")
            b.step(acts(0))
            d = b.world.stack.unix_dir
        self.assertFalse(os.path.exists(d))  # close removed the socket's directory

    def test_vector_lane_same_as_tcp_bit_for_bit(self):
        """NavVectorEnv(shm=True) steps through the step lane's batch (no
        pa-netgw): observations, rewards, flags and infos are the TCP env's bit
        for bit over episodes with autoresets; the lane's errors by name, each
        changing nothing, and the env goes on."""
        from playarea.env._lane import Lane, LaneBusy
        n = 6
        # 36 beams: the ranges read in place from the shared block (a view), once
        # as if another client had replaced it (the rings instead)
        a = NavVectorEnv(num_envs=n, instance=instance(), beams=36, max_episode_steps=15)
        b = NavVectorEnv(num_envs=n, instance=instance(), beams=36, max_episode_steps=15,
                         shm=True)
        with closing(a), closing(b):
            a.reset(seed=4)
            b.reset(seed=4)
            for k in range(12):
                act = np.stack([acts(k + i) for i in range(n)])
                if k == 5:
                    b.world.reader.same = lambda seq: False
                ra, rb = a.step(act), b.step(act)
                b.world.reader.__dict__.pop("same", None)
                for key in ra[0]:
                    self.assertEqual(ra[0][key].tobytes(), rb[0][key].tobytes(), (k, key))
                for x, y in zip(ra[1:4], rb[1:4]):
                    self.assertEqual(x.tobytes(), y.tobytes(), k)
            self.assertEqual(b.render_mode, None)
            self.assertEqual(a._render_rgb(a._last[0], a._goals, a._last[1]).tobytes(),
                             b._render_rgb(b._last[0], b._goals, b._last[1]).tobytes())
        a = NavVectorEnv(num_envs=n, instance=instance(), beams=360, max_episode_steps=15)
        b = NavVectorEnv(num_envs=n, instance=instance(), beams=360, max_episode_steps=15,
                         shm=True)
        with closing(a), closing(b):
            self.assertIsNotNone(b.world.lane)
            lane = b.world.lane
            with self.assertRaises(LaneBusy):  # a second client: over the socket
                Lane(b.world.reader.layout, b.world.stack.instance, b.world.reader)
            oa, ia = a.reset(seed=5)
            ob, ib = b.reset(seed=5)
            for key in oa:
                self.assertEqual(oa[key].tobytes(), ob[key].tobytes(), key)
            resets = 0
            for k in range(40):
                act = np.stack([acts(k + i) for i in range(n)])
                ra = a.step(act)
                rb = b.step(act)
                for key in ra[0]:
                    self.assertEqual(ra[0][key].tobytes(), rb[0][key].tobytes(), (k, key))
                for x, y in zip(ra[1:4], rb[1:4]):
                    self.assertEqual(x.tobytes(), y.tobytes(), k)
                self.assertEqual(sorted(ra[4]), sorted(rb[4]))
                for key in ra[4]:
                    self.assertEqual(np.asarray(ra[4][key]).tobytes(),
                                     np.asarray(rb[4][key]).tobytes(), (k, key))
                resets += int(np.sum(ra[2] | ra[3]))
            self.assertGreater(resets, 0)  # autoresets were crossed
            self.assertGreater(b.world.reader.blocks, 0)
            tick = b.world.conn.request("get_status", type="sim_control")["tick"]
            r0 = int(b.robots[0])
            bad = [((r0, np.zeros((n + 50, 2)), 20), "unknown_robot", "is not a robot"),
                   ((r0 + 100, np.zeros((1, 2)), 20), "unknown_robot", str(r0 + 100)),
                   ((9999, np.zeros((1, 2)), 20), "invalid_action_shape", "first 9999"),
                   ((r0, np.full((n, 2), np.nan), 20), "invalid_action_shape", "actions\\[0\\]"),
                   ((r0, np.full((n, 2), 2e6), 20), "invalid_action_shape", "within 1e6"),
                   ((r0, np.zeros((n, 2)), 0), "invalid_action_shape", "steps")]
            for args, code, msg in bad:
                with self.assertRaises(Error) as e:
                    lane.step_batch(*args)
                self.assertEqual(e.exception.code, code, args)
                self.assertRegex(str(e.exception), msg)
            with self.assertRaises(ValueError):
                b.step(np.full((n, 2), np.nan, np.float32))
            self.assertEqual(b.world.conn.request("get_status", type="sim_control")["tick"], tick)
            b.step(np.zeros((n, 2), np.float32))
        os.environ["PA_STEP_LANE"] = "0"  # off: the socket road
        try:
            c = NavVectorEnv(num_envs=2, instance=instance(), beams=36, shm=True)
        finally:
            del os.environ["PA_STEP_LANE"]
        with closing(c):
            self.assertIsNone(c.world.lane)
            c.reset(seed=1)
            o, *_ = c.step(np.zeros((2, 2), np.float32))
            self.assertEqual(o["scan"].shape, (2, 36))
            self.assertGreater(c.world.reader.blocks, 0)  # observe "shm" over the socket

    def test_gateway_restart_replaces_its_socket(self):
        """pa-netgw killed: the step fails by name (no hang), the restarted one
        replaces the stale socket file and the env steps on over a new one."""
        import signal
        import time
        from playarea.env._stack import Conn
        os.environ["PA_STEP_LANE"] = "0"  # the socket road (the lane's steps skip pa-netgw)
        try:
            env = NavEnv(instance=instance(), beams=36, shm=True)
        finally:
            del os.environ["PA_STEP_LANE"]
        with closing(env):
            self.assertIsNone(env.world.lane)
            env.reset(seed=3)
            st = env.world.stack
            gw = children_named(st.proc.pid, "pa-netgw")
            self.assertEqual(len(gw), 1)
            os.kill(gw[0], signal.SIGKILL)
            with self.assertRaises(StackError):
                for _ in range(1000):
                    env.step(acts(0))
            deadline = time.monotonic() + 30
            # A dying process closes its fds one by one: a connect before the
            # launcher has a new pa-netgw could reach the old listener's
            # backlog and be reset (BrokenPipe, 1 run in 10 under load).
            while children_named(st.proc.pid, "pa-netgw") in ([], gw):
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.01)
            while True:
                try:
                    c = Conn(None, None, timeout=5, unix_path=st.unix_path)
                    break
                except StackError:
                    self.assertLess(time.monotonic(), deadline)
                    time.sleep(0.05)
            old = env.world.conn
            env.world.conn = c
            old.close()
            env.reset(seed=3)
            o, *_ = env.step(acts(1))
            self.assertEqual(o["scan"].shape, (36,))

    def test_lane_held_by_one_client(self):
        """The step lane is one client's: a second one on the instance is
        refused (LaneBusy: it steps over the socket), the first's close frees it."""
        from playarea.env._lane import Lane, LaneBusy
        env = NavEnv(instance=instance(), beams=36, shm=True)
        with closing(env):
            w = env.world
            with self.assertRaises(LaneBusy):
                Lane(w.reader.layout, w.stack.instance, w.reader)
            w.lane.close()
            w.lane = Lane(w.reader.layout, w.stack.instance, w.reader)
            w.lane.range_max = w.range_max
            env.reset(seed=2)
            env.step(acts(0))

    def test_lane_after_a_sim_restart(self):
        """pa-sim killed: a lane step fails by name or goes on (never hangs),
        and the env steps on with the restarted one."""
        import signal
        import time
        env = NavEnv(instance=instance(), beams=36, shm=True)
        with closing(env):
            env.reset(seed=3)
            st = env.world.stack
            sim = children_named(st.proc.pid, "pa-sim")
            sim = sim[0] if len(sim) == 1 else None
            self.assertIsNotNone(sim)
            os.kill(sim, signal.SIGKILL)
            deadline = time.monotonic() + 60
            ok = 0
            while ok < 20:
                self.assertLess(time.monotonic(), deadline)
                try:
                    env.reset(seed=3)
                    for _ in range(10):
                        o, *_ = env.step(acts(1))
                    ok += 10
                except (Error, StackError):
                    time.sleep(0.05)
            self.assertEqual(o["scan"].shape, (36,))

    def test_taken_path_is_an_error_by_name(self):
        import subprocess
        import tempfile
        from playarea.env._stack import find_bin_dir
        with tempfile.TemporaryDirectory() as td:
            path = os.path.join(td, "not-a-socket")
            with open(path, "w") as f:
                f.write("x")
            r = subprocess.run([os.path.join(find_bin_dir(), "playarea"), "--tcp_port", "0",
                                "--no-render", "--paused", "--instance", instance(),
                                "--unix_socket", path],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("cannot listen on unix socket", r.stderr)
            with open(path) as f:
                self.assertEqual(f.read(), "x")  # left as it was

    def test_live_path_refused_and_removed_on_exit(self):
        """A second stack on a live socket's path is refused by name; the
        first pa-netgw removes its socket file when the stack stops."""
        import subprocess
        from playarea.env._stack import LocalStack
        st = LocalStack(instance=instance(), unix=True)
        try:
            path = st.unix_path
            r = subprocess.run([os.path.join(st.bin_dir, "playarea"), "--tcp_port", "0",
                                "--no-render", "--paused", "--instance", instance(),
                                "--unix_socket", path],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("a live process listens there", r.stderr)
            self.assertTrue(os.path.exists(path))  # still the first stack's
            st.proc.terminate()
            st.proc.wait(20)
            self.assertFalse(os.path.exists(path))  # pa-netgw unlinked it
        finally:
            d = st.unix_dir
            st.stop()
        self.assertFalse(os.path.exists(d))


if __name__ == "__main__":
    unittest.main()
