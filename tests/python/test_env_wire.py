"""The env's wire: step_batch's actions_b64 against JSON actions, its errors, the
connection's reused buffers (views, long lines), observations that later steps
do not overwrite."""

import base64
import copy
import os
import unittest
from contextlib import closing

import numpy as np

from playarea.env import NavEnv, NavVectorEnv
from playarea.env import checker
from playarea.errors import Error

_n = [0]


def instance():
    _n[0] += 1
    return "t%d-rlwire-%d" % (os.getpid(), _n[0])


def poses(conn, robots):
    st, _, _ = conn.step_batch(robots, None, 1)
    return st[:, :6].copy()


class ActionsB64(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.env = NavVectorEnv(num_envs=3, instance=instance())
        cls.env.reset(seed=3)
        cls.conn = cls.env.world.conn
        cls.robots = [int(r) for r in cls.env.robots]
        cls.conn.request("save_snapshot", {"name": "wire"})

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def step_json(self, acts, **extra):
        data = {"robots": self.robots, "steps": 7}
        data.update(extra)
        if acts is not None:
            data["actions"] = acts
        return self.conn.request("step_batch", data)

    def test_same_motion_as_json(self):
        acts = np.array([[0.3, 0.7], [0.123456789012345678, -1.5], [1.0 / 3.0, 2.0 / 7.0]])
        self.conn.request("load_snapshot", {"name": "wire"})
        self.step_json(acts.tolist())
        by_json = poses(self.conn, self.robots)
        self.conn.request("load_snapshot", {"name": "wire"})
        self.conn.step_batch(self.robots, acts, 7)
        by_b64 = poses(self.conn, self.robots)
        self.assertTrue(np.array_equal(by_json, by_b64))  # bit for bit: float64 both ways
        self.assertGreater(np.abs(by_b64[:, 3]).max(), 0.05)  # they did move

    def test_float32_form(self):
        acts = np.array([[0.5, 0.25], [0.125, -1.5], [0.75, 2.0]])  # exact in float32
        self.conn.request("load_snapshot", {"name": "wire"})
        self.step_json(acts.tolist())
        by_json = poses(self.conn, self.robots)
        self.conn.request("load_snapshot", {"name": "wire"})
        self.step_json(None, actions_b64=base64.b64encode(acts.astype("<f4").tobytes()).decode())
        self.assertTrue(np.array_equal(by_json, poses(self.conn, self.robots)))
        self.conn.request("load_snapshot", {"name": "wire"})
        self.conn.step_batch(self.robots, acts, 7)  # the connection picks float32 here
        self.assertTrue(np.array_equal(by_json, poses(self.conn, self.robots)))
        with self.assertRaisesRegex(Error, "or 24 or 36 float32"):
            self.step_json(None, actions_b64=base64.b64encode(b"\0" * 28).decode())

    def test_bad_actions_b64_change_nothing(self):
        self.conn.request("load_snapshot", {"name": "wire"})
        tick = self.conn.request("get_status", type="sim_control")["tick"]
        good = base64.b64encode(np.zeros((3, 2), "<f8").tobytes()).decode()
        cases = [
            ({"actions_b64": "AAAA*AAA"}, "invalid_action_shape", "not base64"),
            ({"actions_b64": base64.b64encode(b"\0" * 40).decode()}, "invalid_action_shape",
             "40 bytes: 3 robots need 48"),
            ({"actions_b64": 12}, "invalid_action_shape", "base64 string"),
            ({"actions_b64": good, "actions": [[0, 0]] * 3}, "invalid_message", "not both"),
            ({"actions_b64": base64.b64encode(np.array([[0.1, 0], [np.nan, 0], [0, 0]], "<f8")
                                              .tobytes()).decode()},
             "invalid_action_shape", "actions_b64[1]"),
            ({"actions_b64": base64.b64encode(np.array([[0, 0, 0], [0, 0.5, 0], [0, 0, 0]], "<f8")
                                              .tobytes()).decode()},
             "unsupported_control_scheme", "sideways"),
        ]
        for extra, code, text in cases:
            with self.assertRaises(Error) as cm:
                self.step_json(None, **extra)
            self.assertEqual(cm.exception.code, code, extra)
            self.assertIn(text, str(cm.exception))
        self.assertEqual(self.conn.request("get_status", type="sim_control")["tick"], tick)
        with self.assertRaisesRegex(ValueError, "finite"):
            self.conn.step_batch(self.robots, np.full((3, 2), np.inf), 1)
        with self.assertRaisesRegex(ValueError, r"\[n, 2\]"):
            self.conn.step_batch(self.robots, np.zeros((2, 2)), 1)

    def test_unpadded_and_three_wide(self):
        raw = np.array([[0.2, 0.0, 0.1]] * 3, "<f8").tobytes()
        data = {"robots": self.robots, "steps": 1,
                "actions_b64": base64.b64encode(raw).decode().rstrip("=")}
        self.assertEqual(self.conn.request("step_batch", data)["count"], 3)

    def test_views_and_long_lines(self):
        st1, rg1, _ = self.conn.step_batch(self.robots, np.full((3, 2), 0.5), 5)
        keep = st1.copy()
        self.conn.step_batch(self.robots, np.full((3, 2), 0.5), 5)
        self.assertFalse(np.array_equal(st1, keep))  # a view: the next reply overwrote it
        # a reply line larger than the connection's 64 KiB line buffer
        g = self.conn.request("get_terrain_grid", {"inflation": 0})
        self.assertGreater(sum(len(r) for r in g["rows"]), 1 << 16)
        self.assertEqual(len(g["rows"]), g["height"])
        self.assertEqual(self.conn.request("ping")["pong"], True)  # the stream is still in step


class Silence(unittest.TestCase):
    def test_a_silent_peer_times_out_by_name(self):
        import socket
        import time
        from playarea.env._stack import Conn, StackError
        with socket.socket() as ls:
            ls.bind(("127.0.0.1", 0))
            ls.listen()
            c = Conn("127.0.0.1", ls.getsockname()[1], timeout=0.3)
            try:
                t = time.monotonic()
                with self.assertRaisesRegex(StackError, "no reply within 0.3 s"):
                    c.request("ping")
                self.assertLess(time.monotonic() - t, 5.0)
            finally:
                c.close()


class LineBuffer(unittest.TestCase):
    def test_lines_and_blocks_across_buffer_edges(self):
        """Lines of every size (some longer than the 64 KiB buffer, some split
        across its end) and step_batch blocks after their headers arrive whole."""
        import json
        import socket
        import struct
        import threading
        from playarea.env._stack import Conn
        rng = np.random.default_rng(4)
        sizes = [int(x) for x in rng.integers(10, 150000, 60)] + [65535, 65536, 65537, 1]
        msgs = []
        for i, n in enumerate(sizes):
            msgs.append({"type": "response", "data": {"i": i, "pad": "x" * n}})
        blocks = []
        for i in range(5):  # step_batch replies: header line + PAB1 block
            n, beams = int(rng.integers(1, 300)), 360
            st = rng.standard_normal((n, 16))
            rg = rng.random((n, beams), dtype=np.float32)
            blk = b"PAB1" + struct.pack("<3I", n, beams, 16) + st.astype("<f8").tobytes() + \
                rg.astype("<f4").tobytes()
            blocks.append((st, rg, blk))
        with socket.socket() as ls:
            ls.bind(("127.0.0.1", 0))
            ls.listen()

            def serve():
                c, _ = ls.accept()
                with c:
                    out = b"".join(json.dumps(m).encode() + b"\n" for m in msgs)
                    for st, rg, blk in blocks:
                        out += json.dumps({"type": "response", "data": {
                            "binary": {"bytes": len(blk)}}}).encode() + b"\n" + blk
                    for k in range(0, len(out), 7919):  # odd-sized pieces
                        c.sendall(out[k:k + 7919])
                    while c.recv(1 << 16):  # the client's requests, until it closes
                        pass
            th = threading.Thread(target=serve)
            th.start()
            conn = Conn("127.0.0.1", ls.getsockname()[1], timeout=10)
            try:
                for i, n in enumerate(sizes):
                    d = conn._recv()["data"]
                    self.assertEqual((d["i"], len(d["pad"])), (i, n))
                for st, rg, blk in blocks:
                    a, b, _ = conn.step_batch([0] * len(st), None, 1)
                    self.assertTrue(np.array_equal(a, st) and np.array_equal(b, rg))
            finally:
                conn.close()
                th.join(10)


class FreshObservations(unittest.TestCase):
    """What a step returns is the caller's: later steps and resets leave it alone."""

    def run_env(self, env, act):
        obs, _ = env.reset(seed=1)
        held = [copy.deepcopy(obs)]
        outs = [obs]
        for _ in range(4):
            out = env.step(act)
            outs.append(out[0])
            held.append(copy.deepcopy(out[0]))
        env.reset(seed=2)
        for a, b in zip(outs, held):
            self.assertTrue(checker._eq(a, b))

    def test_navenv(self):
        for shm in (False, True):
            with closing(NavEnv(instance=instance(), shm=shm)) as env:
                self.run_env(env, np.array([0.5, 1.0], np.float32))
            with closing(NavEnv(instance=instance(), shm=shm, flat=True)) as env:
                self.run_env(env, np.array([0.5, 1.0], np.float32))

    def test_vector_env(self):
        for shm in (False, True):
            with closing(NavVectorEnv(num_envs=4, beams=360, instance=instance(), shm=shm)) as env:
                self.run_env(env, np.full((4, 2), 0.5, np.float32))


if __name__ == "__main__":
    unittest.main()
