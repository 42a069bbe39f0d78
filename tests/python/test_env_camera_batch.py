"""Batched head cameras for pixel RL: NavVectorEnv(observation="camera")'s spaces,
shapes and dtypes, frames of the step's own tick, each tile its own robot's view
(equal to that robot's single camera in the camera ring), and camera_batch's
errors by name, none of which changes anything."""

import os
import socket
import time
import unittest
from contextlib import closing

import numpy as np

from playarea.env import NavVectorEnv
from playarea.env.shm import ShmReader
from playarea.errors import Error

_n = [0]
H, W = 48, 64


def instance():
    _n[0] += 1
    return "t%d-rlcam-%d" % (os.getpid(), _n[0])


class CameraEnv(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # the single cameras at the batch's size, for the comparison below
        cls.env = NavVectorEnv(num_envs=4, instance=instance(), observation="camera",
                               camera_size=(H, W),
                               stack_args=("--camera_width", W, "--camera_height", H))

    @classmethod
    def tearDownClass(cls):
        cls.env.close()

    def test_spaces_shapes_dtypes(self):
        env = self.env
        cam = env.observation_space["camera"]
        self.assertEqual(cam.shape, (4, H, W, 3))
        self.assertEqual(cam.dtype, np.uint8)
        self.assertEqual(env.single_observation_space["camera"].shape, (H, W, 3))
        self.assertEqual(sorted(env.observation_space.spaces),
                         ["camera", "goal", "scan", "velocity"])
        obs, info = env.reset(seed=3)
        self.assertTrue(env.observation_space.contains(obs))
        self.assertEqual(obs["camera"].shape, (4, H, W, 3))
        self.assertEqual(obs["camera"].dtype, np.uint8)
        self.assertTrue(obs["camera"].flags["C_CONTIGUOUS"])
        kept = obs["camera"].copy()
        first = obs["camera"]
        for _ in range(3):
            obs, rew, term, trunc, info = env.step(env.action_space.sample())
            self.assertTrue(env.observation_space.contains(obs))
            self.assertEqual(rew.shape, (4,))
        # a kept observation is not overwritten by later steps (a new array each)
        self.assertTrue(np.array_equal(first, kept))
        # the robots stand in different places: their tiles differ
        c = obs["camera"].astype(np.int16)
        for i in range(4):
            for j in range(i + 1, 4):
                self.assertGreater(np.abs(c[i] - c[j]).mean(), 1.0, (i, j))

    def test_same_seed_same_images(self):
        env = self.env
        a, _ = env.reset(seed=11)
        b, _ = env.reset(seed=11)
        self.assertTrue(np.array_equal(a["camera"], b["camera"]))
        c, _ = env.reset(seed=12)
        self.assertFalse(np.array_equal(a["camera"], c["camera"]))

    def test_tile_is_its_robots_single_camera(self):
        """Each tile equals its robot's own head camera (the camera ring, rendered
        by the same pa-render one camera at a time) from the same tick."""
        env = self.env
        env.reset(seed=5)
        obs, _, _, _, info = env.step(env.action_space.sample())
        tick = int(info["tick"][0])
        w = env.world
        frames = w.cameras(int(env.robots[0]), 4, H, W, tick)
        self.assertTrue(np.array_equal(frames, obs["camera"]))
        reader = ShmReader(w.stack.instance)
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("127.0.0.1", 0))
        try:
            for i, rid in enumerate(env.robots):
                w.conn.request("subscribe", {"channel": "camera", "robot": int(rid),
                                             "udp_port": sock.getsockname()[1]})
                deadline = time.monotonic() + 20
                img = None
                while img is None and time.monotonic() < deadline:
                    img = reader.frame(int(rid), tick)
                    time.sleep(0.01)
                w.conn.request("unsubscribe", {"channel": "camera", "robot": int(rid)})
                self.assertIsNotNone(img, "no single-camera frame of robot %d" % rid)
                self.assertEqual(img.shape, (H, W, 3))
                d = np.abs(img.astype(np.int16) - obs["camera"][i].astype(np.int16))
                self.assertLessEqual(int((d > 2).sum()), d.size // 200, "robot %d" % rid)
                # and not another robot's view
                j = (i + 1) % 4
                self.assertGreater(np.abs(img.astype(np.int16) -
                                          obs["camera"][j].astype(np.int16)).mean(), 1.0)
        finally:
            sock.close()
            reader.close()

    def test_wall_and_open_space(self):
        """A robot facing a wall 0.45 m away sees one colour filling its tile's
        centre; one facing its most open direction sees something else."""
        env = self.env
        w = env.world
        env.reset(seed=1)
        # robot 0's laser: its nearest wall and its most open direction
        st, rg, d = w.step(env.robots, np.zeros((4, 2)), 1)
        x, y, th = (float(v) for v in st[0, :3])
        r = np.where(np.isnan(rg[0]), np.inf, rg[0])
        ang = -np.pi + np.arange(len(r)) * (2 * np.pi / len(r))
        near, far = int(np.argmin(r)), int(np.argmax(r))
        a_near, a_far = th + ang[near], th + ang[far]
        go = float(r[near]) - 0.45  # to 0.45 m from the wall, straight at it
        c = w.conn
        c.request("set_pose", {"robot": int(env.robots[0]),
                               "pose": [x + go * np.cos(a_near), y + go * np.sin(a_near),
                                        float(a_near)]})
        c.request("set_pose", {"robot": int(env.robots[1]),
                               "pose": [x, y, float(a_far)]})
        st, _, d = w.step(env.robots, np.zeros((4, 2)), 1)
        self.assertLess(float(np.nanmin(rg[0])), 3.0)
        frames = w.cameras(int(env.robots[0]), 4, H, W, int(d["tick"]))
        wall = frames[0, H // 3:2 * H // 3, W // 3:2 * W // 3].astype(np.int16)
        spread = wall.reshape(-1, 3).max(axis=0) - wall.reshape(-1, 3).min(axis=0)
        self.assertLessEqual(int(spread.max()), 6)  # one surface, per channel
        self.assertGreater(np.abs(frames[0].astype(np.int16) - frames[1]).mean(), 5.0)

    def test_camera_batch_errors(self):
        """Bad sizes, robots beyond the world, too many robots or bytes: each an
        error by name; a good request still works after them."""
        w = self.env.world
        c = w.conn
        first = int(self.env.robots[0])
        bad = [
            ({"width": 0}, "invalid_message", "data.width"),
            ({"height": 100000}, "invalid_message", "data.height"),
            ({"width": "84"}, "invalid_action_shape", "data.width"),
            ({"robots_range": [first, 0]}, "invalid_action_shape", "count >= 1"),
            ({"robots_range": [0.5, 2]}, "invalid_action_shape", "whole numbers"),
            ({"robots_range": [first, 99]}, "unknown_robot", "there are"),
            ({"robots_range": [first, 5000]}, "batch_limit", "cameras of one"),
            ({"robots_range": [first, 2000]}, "batch_limit", "over the 33554432-byte atlas"),
            ({"robots_range": [first, 4], "width": 1024, "height": 1024, "x": 1},
             "invalid_message", "data.x"),
        ]
        for data, code, text in bad:
            with self.assertRaises(Error, msg=str(data)) as cm:
                c.request("camera_batch", data)
            self.assertEqual(cm.exception.code, code, data)
            self.assertIn(text, cm.exception.message, data)
        r = c.request("camera_batch", {"width": 8, "height": 6, "robots_range": [first, 2]})
        fr, _ = w.atlas.read(r["seq"])
        self.assertEqual(fr.shape, (2, 6, 8, 3))
        self.assertEqual((r["count"], r["width"], r["height"]), (2, 8, 6))

    def test_reader_sleeps_until_answered(self):
        """The reader sleeps on the segment's wake word, which pa-render bumps once
        per answer and wakes: a sleeper with a 10 s limit returns when a request is
        answered, not at the limit."""
        from playarea.env import atlas as atlas_mod
        w = self.env.world
        a = w.atlas
        if os.uname().machine not in ("x86_64", "aarch64"):
            self.skipTest("the futex wait is for x86-64 and AArch64")
        self.assertIsNotNone(a._futex)
        first = int(self.env.robots[0])
        ask = {"width": 8, "height": 6, "robots_range": [first, 2]}
        w0 = a._u("wake")
        for _ in range(3):
            a.read(w.conn.request("camera_batch", ask)["seq"])
        # pa-render bumps the word just after it marks the answer done, so a
        # reader may see the frames a moment before the third bump.
        want = (w0 + 3) & 0xFFFFFFFF
        deadline = time.monotonic() + 5
        while a._u("wake") != want and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertEqual(a._u("wake"), want)
        slice_was = atlas_mod._FUTEX_SLICE_S
        atlas_mod._FUTEX_SLICE_S = 10.0
        try:
            import threading
            got = {}

            def sleeper():
                t = time.monotonic()
                a._sleep(got["wake"], 10.0)
                got["slept"] = time.monotonic() - t
            got["wake"] = a._u("wake")
            th = threading.Thread(target=sleeper)
            th.start()
            time.sleep(0.2)  # asleep on the word by now
            self.assertNotIn("slept", got)
            r = w.conn.request("camera_batch", ask)
            th.join(20)
            self.assertLess(got["slept"], 5.0)
            fr, _ = a.read(r["seq"])
            self.assertEqual(fr.shape, (2, 6, 8, 3))
        finally:
            atlas_mod._FUTEX_SLICE_S = slice_was

    def test_ask_then_answer(self):
        """cameras_ask/cameras_take (the step's two halves) give cameras()'s frames;
        requests in between get their own replies and the ask's is kept for
        answer(); a future tick is drawn once a step has written it; errors come
        out of the answer by name; a second ask drops the first's reply."""
        w = self.env.world
        c = w.conn
        first = int(self.env.robots[0])
        obs, _ = self.env.reset(seed=5)
        ask = {"width": W, "height": H, "robots_range": [first, 4]}
        r = c.request("camera_batch", ask)
        whole, t = w.atlas.read(r["seq"])
        self.assertTrue(np.array_equal(whole, obs["camera"]))
        w.cameras_ask(first, 4, H, W)
        self.assertIn("width", c.request("get_map_info"))  # its own reply
        self.assertTrue(np.array_equal(w.cameras_take(t), whole))
        # a tick still to come: answered at once, drawn after the step
        w.cameras_ask(first, 4, H, W, tick=t + 3)
        st, _, d = w.step(self.env.robots, np.zeros((4, 2)), 3)
        self.assertEqual(d["tick"], t + 3)
        later = w.cameras_take(t + 3)
        r = c.request("camera_batch", ask)
        again, t2 = w.atlas.read(r["seq"])
        self.assertEqual(t2, t + 3)
        self.assertTrue(np.array_equal(later, again))
        # the same with the step over pa-netgw: the ask's reply comes first
        w.cameras_ask(first, 4, H, W, tick=t + 6)
        _, _, d = c.step_batch(self.env.robots, np.zeros((4, 2)), 3)
        self.assertEqual(d["tick"], t + 6)
        self.assertEqual(w.cameras_take(t + 6).shape, (4, H, W, 3))
        with self.assertRaises(Error) as cm:  # more than one step ahead
            c.request("camera_batch", dict(ask, tick=t2 + 3 + 2000000))
        self.assertEqual(cm.exception.code, "invalid_message")
        self.assertIn("data.tick", cm.exception.message)
        c.ask("camera_batch", {"width": 0})
        with self.assertRaises(Error) as cm:
            c.answer()
        self.assertEqual(cm.exception.code, "invalid_message")
        with self.assertRaisesRegex(Exception, "without an ask"):
            c.answer()
        c.ask("camera_batch", {"width": 0})  # never taken: the next ask drops it
        c.ask("camera_batch", dict(ask, width=8, height=6))
        self.assertEqual(c.answer()["width"], 8)
        self.assertIn("width", c.request("get_map_info"))

    def test_bad_env_arguments(self):
        """Refused before any process starts."""
        with self.assertRaisesRegex(ValueError, "observation must be"):
            NavVectorEnv(num_envs=2, observation="pixels")
        with self.assertRaisesRegex(ValueError, "1..1024"):
            NavVectorEnv(num_envs=2, observation="camera", camera_size=(0, 84))
        with self.assertRaisesRegex(ValueError, "1..1024"):
            NavVectorEnv(num_envs=2, observation="camera", camera_size=(84, 5000))
        with self.assertRaisesRegex(ValueError, "height, width"):
            NavVectorEnv(num_envs=2, observation="camera", camera_size=84)
        with self.assertRaisesRegex(ValueError, "over the 33554432-byte atlas"):
            NavVectorEnv(num_envs=2000, observation="camera", camera_size=(84, 84))
        with self.assertRaisesRegex(ValueError, "flat"):
            NavVectorEnv(num_envs=2, observation="camera", flat=True)


class Parallel(unittest.TestCase):
    def test_parallel_env_cameras(self):
        """NavParallelEnv passes observation="camera" through: each agent's own tile."""
        from playarea.env import NavParallelEnv
        env = NavParallelEnv(num_agents=2, instance=instance(), observation="camera",
                             camera_size=(24, 32))
        with closing(env):
            obs, _ = env.reset(seed=2)
            sp = env.observation_space("robot_0")["camera"]
            self.assertEqual((sp.shape, sp.dtype), ((24, 32, 3), np.uint8))
            out = env.step({a: env.action_space(a).sample() for a in env.agents})[0]
            for a in ("robot_0", "robot_1"):
                self.assertEqual(out[a]["camera"].shape, (24, 32, 3))
                self.assertTrue(sp.contains(out[a]["camera"]))
            self.assertFalse(np.array_equal(out["robot_0"]["camera"], out["robot_1"]["camera"]))


class Spawned(unittest.TestCase):
    def test_robot_spawned_just_before(self):
        """A robot spawned right before the request is drawn (pa-render rebuilds
        its scene first), not refused as unknown."""
        env = NavVectorEnv(num_envs=2, instance=instance(), observation="camera",
                           camera_size=(16, 16))
        with closing(env):
            env.reset(seed=1)
            w = env.world
            x, y = (float(v) for v in w.free_xy[len(w.free_xy) // 2])
            for k in range(3):
                rid = w.conn.request("spawn_robot", {"name": "late%d" % k,
                                                     "pose": [x, y, 0.5 * k]})["robot"]
                r = w.conn.request("camera_batch", {"width": 16, "height": 16,
                                                    "robots_range": [rid, 1]})
                fr, _ = w.atlas.read(r["seq"])
                self.assertEqual(fr.shape, (1, 16, 16, 3))
                self.assertGreater(int(fr.max()), 0)  # drawn, not a zero tile


class NoRender(unittest.TestCase):
    def test_without_pa_render(self):
        """A stack without pa-render answers camera_batch with busy, by name."""
        env = NavVectorEnv(num_envs=2, instance=instance())
        with closing(env):
            with self.assertRaises(Error) as cm:
                env.world.conn.request("camera_batch", {"width": 8, "height": 8})
            self.assertEqual(cm.exception.code, "busy")
            self.assertIn("no pa-render", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
