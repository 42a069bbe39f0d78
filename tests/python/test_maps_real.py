"""map_server maps as they come, through the real stack: whatever their origin,
robot 0 starts in free space (the free pose nearest (0, 0)); --robot_pose and
--map_unknown; keys map_server does not read are warned about and ignored;
occupied_cells and the terrain grid's default threshold block what pa-sim blocks
(negate, origin yaw, trinary and scale, 2048 x 2048)."""

import math
import os
import shutil
import tempfile
import time
import unittest

import numpy as np

from playarea.env._stack import Conn, LocalStack, StackError

RADIUS = 0.18  # the default robot's


def write_map(d, name, pixels, res=0.05, origin=(-5.0, -5.0, 0.0), negate=0, mode=None,
              occ=0.65, free=0.196, extra=""):
    """pixels: uint8 [rows, cols], row 0 = north (as the image). Returns the yaml path."""
    h, w = pixels.shape
    with open(os.path.join(d, name + ".pgm"), "wb") as f:
        f.write(b"P5\n%d %d\n255\n" % (w, h))
        f.write(np.ascontiguousarray(pixels, np.uint8).tobytes())
    y = os.path.join(d, name + ".yaml")
    with open(y, "w") as f:
        f.write("image: %s.pgm\nresolution: %r\norigin: [%r, %r, %r]\nnegate: %d\n"
                "occupied_thresh: %r\nfree_thresh: %r\n%s%s"
                % (name, res, origin[0], origin[1], origin[2], negate, occ, free,
                   "mode: %s\n" % mode if mode else "", extra))
    return y


def cells_of(pixels, negate=0, mode="trinary", occ=0.65, free=0.196):
    """map_server's reading (grey image): int8 grid, row 0 = south."""
    avg = pixels.astype(np.float64)
    if negate:
        avg = 255.0 - avg
    o = (255.0 - avg) / 255.0
    out = np.full(pixels.shape, -1, np.int16)
    out[o > occ] = 100
    out[o < free] = 0
    if mode == "scale":
        mid = (o <= occ) & (o >= free)
        out[mid] = (1 + 98 * (o[mid] - free) / (occ - free)).astype(np.int16)
    return out[::-1]


def cell_at(x, y, res, origin):
    """Grid cell (col, row) of world (x, y) under the origin's yaw."""
    dx, dy = x - origin[0], y - origin[1]
    c, s = math.cos(origin[2]), math.sin(origin[2])
    return int(math.floor((c * dx + s * dy) / res)), int(math.floor((-s * dx + c * dy) / res))


class Started:
    def __init__(self, yaml_path, *args):
        self.stack = LocalStack(["--map_yaml", yaml_path] + list(args))
        try:
            self.conn = Conn(self.stack.host, self.stack.port)
        except BaseException:
            self.stack.stop()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.conn.close()
        self.stack.stop()

    def pose(self):
        return self.conn.request("get_pose", {"robot": 0})["pose"]

    def log(self):
        with open(self.stack.log.name) as f:
            return f.read()


class Maps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pa-maps-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def assert_free_start(self, s, cells, res, origin):
        x, y, _ = s.pose()
        cx, cy = cell_at(x, y, res, origin)
        self.assertTrue(0 <= cx < cells.shape[1] and 0 <= cy < cells.shape[0], (x, y))
        r = int(math.ceil(RADIUS / res)) + 1
        win = cells[max(0, cy - r):cy + r + 1, max(0, cx - r):cx + r + 1]
        self.assertTrue(np.all((win >= 0) & (win < 100)), "robot0 at (%g, %g) touches a wall" % (x, y))
        return x, y

    def test_blocked_origin_extra_key_trinary(self):
        """A 2 m pillar over (0, 0) (what refused 9 of 17 public maps) and Nav2's extra
        map_type key: it starts, robot 0 just beside the pillar, and pa-sim names the key."""
        px = np.full((200, 200), 254, np.uint8)
        px[:, :3] = px[:, -3:] = px[:3, :] = px[-3:, :] = 0
        px[80:120, 80:120] = 0        # cells 80..119: world -1 .. +1 m
        px[20:40, 150:180] = 205      # unknown
        y = write_map(self.dir, "pillar", px, extra="map_type: occupancy\nfree_mode: x\n")
        cells = cells_of(px)
        with Started(y) as s:
            x0, y0 = self.assert_free_start(s, cells, 0.05, (-5, -5, 0))
            d = max(abs(x0), abs(y0))
            self.assertTrue(1.0 + RADIUS < d < 1.0 + RADIUS + 0.15, (x0, y0))
            self.assertIn("ignoring keys map_server does not read: map_type, free_mode", s.log())
            self.assertIn("free pose nearest it", s.log())
            info = s.conn.request("get_map_info")
            self.assertEqual(info["occupied_cells"], int(np.sum(cells >= 100)))
            self.assertEqual(info["unknown_cells"], int(np.sum(cells < 0)))
        # the same map, the same start
        with Started(y) as s:
            self.assertEqual(s.pose()[:2], [x0, y0])

    def test_set_map_extra_key_warned(self):
        """set_map at run time names the map.yaml keys map_server does not read, as the
        start-up path does, and loads the map."""
        px = np.full((120, 120), 254, np.uint8)
        px[:, :3] = px[:, -3:] = px[:3, :] = px[-3:, :] = 0
        write_map(self.dir, "plain", px)
        write_map(self.dir, "keyed", px, origin=(-3.0, -3.0, 0.0),
                  extra="map_type: occupancy\nfoo: [1, 2]\n")
        with Started(os.path.join(self.dir, "plain.yaml"), "--data_dir", self.dir) as s:
            self.assertNotIn("ignoring keys", s.log())
            d = s.conn.request("set_map", {"map_yaml": "keyed.yaml"})
            self.assertEqual(d["width"], 120)
            self.assertEqual(d["origin"][:2], [-3.0, -3.0])
            want = "set_map keyed.yaml: ignoring keys map_server does not read: map_type, foo"
            end = time.monotonic() + 10
            while want not in s.log() and time.monotonic() < end:
                time.sleep(0.05)
            self.assertIn(want, s.log())
            # a world file naming that map, its robot without a pose: the same warning,
            # the robot on (0, 0) (free here)
            with open(os.path.join(self.dir, "keyed_world.yaml"), "w") as f:
                f.write("map: keyed.yaml\nrobots:\n  - {name: r}\n")
            d = s.conn.request("set_scenario", {"world": "keyed_world.yaml"})
            self.assertEqual(d["robots"], 1)
            want = ("set_scenario keyed_world.yaml: ignoring keys map_server does not read: "
                    "map_type, foo")
            end = time.monotonic() + 10
            while want not in s.log() and time.monotonic() < end:
                time.sleep(0.05)
            self.assertIn(want, s.log())
            self.assertEqual(s.pose()[:2], [0.0, 0.0])

    def test_negate_and_origin_yaw(self):
        """negate 1 (dark is free) and a 30 deg origin yaw, (0, 0) on a wall: the start is
        in a free cell of the turned grid."""
        px = np.full((160, 240), 0, np.uint8)           # negated: black = free
        px[:, :2] = px[:, -2:] = px[:2, :] = px[-2:, :] = 255
        origin = (-4.0, -3.0, math.radians(30))
        # the cell under (0, 0), and a 1.2 m block of wall around it
        cx, cy = cell_at(0, 0, 0.05, origin)
        row = 159 - cy
        px[row - 12:row + 12, cx - 12:cx + 12] = 255
        y = write_map(self.dir, "negyaw", px, origin=origin, negate=1)
        cells = cells_of(px, negate=1)
        self.assertEqual(cells[cy, cx], 100)
        with Started(y) as s:
            x0, y0 = self.assert_free_start(s, cells, 0.05, origin)
            self.assertLess(math.hypot(x0, y0), 0.6 * math.sqrt(2) + RADIUS + 0.2)
            info = s.conn.request("get_map_info")
            self.assertEqual(info["occupied_cells"], int(np.sum(cells >= 100)))

    def test_scale_mode_thresholds_agree(self):
        """Scale mode: grey cells (1..99) are passable in pa-sim, so occupied_cells counts
        only the 100s, the terrain grid's default threshold is 100, and robot 0 starts on
        the grey band at (0, 0) itself."""
        px = np.full((100, 100), 254, np.uint8)
        px[:, :2] = px[:, -2:] = px[:2, :] = px[-2:, :] = 0
        px[30:70, 30:70] = 120        # occ 0.53: scale value ~ 75
        y = write_map(self.dir, "scale", px, origin=(-2.5, -2.5, 0), mode="scale")
        cells = cells_of(px, mode="scale")
        self.assertTrue(np.any((cells >= 65) & (cells < 100)))
        with Started(y) as s:
            self.assertEqual(s.pose()[:2], [0.0, 0.0])
            info = s.conn.request("get_map_info")
            self.assertEqual(info["occupied_cells"], int(np.sum(cells >= 100)))
            g = s.conn.request("get_terrain_grid", {})
            self.assertEqual(g["threshold"], 100)
            self.assertEqual(g["blocked_cells"], int(np.sum(cells >= 100)))

    def test_unknown_flag_and_robot_pose(self):
        """Unknown cells over (0, 0) block by default (robot 0 moves off them) and are free
        with --map_unknown free; --robot_pose places robot 0; bad values and a pose on a
        wall are refused by name."""
        px = np.full((100, 100), 254, np.uint8)
        px[:, :2] = px[:, -2:] = px[:2, :] = px[-2:, :] = 0
        px[40:60, 40:60] = 205
        px[5:15, 5:15] = 0
        y = write_map(self.dir, "unknown", px, origin=(-2.5, -2.5, 0))
        with Started(y) as s:
            self.assertGreater(max(abs(v) for v in s.pose()[:2]), 0.5)
        with Started(y, "--map_unknown", "free") as s:
            self.assertEqual(s.pose()[:2], [0.0, 0.0])
        with Started(y, "--robot_pose", "1.25,-0.5,1.5") as s:
            self.assertEqual(s.pose(), [1.25, -0.5, 1.5])
        for args, want in ((["--robot_pose", "-2.0,2.0,0"], "overlaps a wall"),
                           (["--robot_pose", "1,2"], "--robot_pose: expected x,y,yaw"),
                           (["--map_unknown", "maybe"], "--map_unknown: expected blocked or free")):
            with self.assertRaises(StackError) as cm:
                Started(y, *args)
            self.assertIn(want, str(cm.exception))

    def test_2048_square(self):
        """2048 x 2048 cells with (0, 0) inside a 20 m block: it starts beside the block."""
        px = np.full((2048, 2048), 254, np.uint8)
        px[:, :2] = px[:, -2:] = px[:2, :] = px[-2:, :] = 0
        px[824:1224, 824:1224] = 0    # world -10 .. +10 m
        y = write_map(self.dir, "big", px, origin=(-51.2, -51.2, 0))
        with Started(y) as s:
            x0, y0 = s.pose()[:2]
            self.assertTrue(10 + RADIUS < max(abs(x0), abs(y0)) < 10 + RADIUS + 0.15, (x0, y0))


class NavEnvMaps(unittest.TestCase):
    """NavEnv on any map pa-sim loads: starts and goals in free cells of the turned
    grid, and maps over get_terrain_grid's 2M cells (asked strided)."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pa-mapsenv-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check_episodes(self, y, cells, res, origin, n=12, stride=1):
        from playarea.env import NavEnv
        env = NavEnv(map_yaml=y, max_episode_steps=5, min_goal_dist=0.5, max_goal_dist=4.0)
        try:
            self.assertEqual(env.world.stride, stride)
            r = int(math.ceil((RADIUS + 0.05) / res))
            yy, xx = np.mgrid[-r:r + 1, -r:r + 1]
            disc = (xx * res) ** 2 + (yy * res) ** 2 <= (RADIUS + 0.05) ** 2
            for ep in range(n):
                _, info = env.reset(seed=ep)
                for x, y_ in (info["start"][:2], info["goal"]):
                    cx, cy = cell_at(x, y_, res, origin)
                    win = cells[cy - r:cy + r + 1, cx - r:cx + r + 1]
                    self.assertEqual(win.shape, (2 * r + 1, 2 * r + 1), (x, y_))
                    self.assertTrue(np.all(win[disc] == 0), "episode %d: (%g, %g) not clear" % (ep, x, y_))
                _, _, term, _, info = env.step(np.zeros(env.action_space.shape, np.float32))
                self.assertFalse(info["collision"])
        finally:
            env.close()

    def test_origin_yaw(self):
        """A 30 deg origin yaw: the free area is a band only the turned grid has (without the
        yaw 0 of its free points were free and every reset failed)."""
        px = np.full((120, 200), 205, np.uint8)  # unknown around
        px[30:90, 20:180] = 254                  # a 8 x 3 m free band
        px[55:65, 60:140] = 0                    # a wall inside it
        origin = (2.0, -3.0, math.radians(30))
        y = write_map(self.dir, "yaw", px, origin=origin)
        self.check_episodes(y, cells_of(px), 0.05, origin)

    def test_over_2m_cells(self):
        """2100 x 2100 cells (4.4M, over the terrain grid's 2M): asked with stride 2."""
        n = 2100
        px = np.full((n, n), 254, np.uint8)
        px[:, :3] = px[:, -3:] = px[:3, :] = px[-3:, :] = 0
        for k in range(100, n, 200):
            px[k:k + 3, 50:n - 50] = 0
        px[1000:1100, 1000:1100] = 205
        origin = (-52.5, -52.5, 0.0)
        y = write_map(self.dir, "big2100", px, origin=origin)
        self.check_episodes(y, cells_of(px), 0.05, origin, stride=2)


if __name__ == "__main__":
    unittest.main()
