"""The Python client against the real stack (launcher, pa-sim, pa-render, pa-netgw)."""

import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from playarea import ConnectionLost, Error, Robot, Sim

from relay import Relay
from stack import StackTestCase

# The public quick start, verbatim (issue 8 / clients/python/README.md).
QUICK_START = """\
from playarea import Robot
with Robot() as robot:              # connects to localhost:9000
    robot.set_speed(v=0.2, w=0.5)   # linear m/s, angular rad/s
    robot.subscribe_odom()
    print(robot.odom)               # latest Odometry(x, y, theta, v, w, seq, t)
"""

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def odom_seq(tick, status):
    return int(math.floor(tick * status["feedback_hz"] / status["control_hz"] + 1e-9))


def paused_sim(case):
    """A Sim client of case's stack, paused, closed when the test ends."""
    sim = Sim(case.host, case.port, timeout=20)
    case.addCleanup(sim.close)
    sim.pause()
    return sim


class DirStackTestCase(StackTestCase):
    """A stack given a fresh directory (cls.dir, removed afterwards) through
    the flag dir_flag."""

    dir_flag = None

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pa-stack-dir-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        cls.stack_args = (cls.dir_flag, cls.dir)
        super().setUpClass()


class ClientTest(StackTestCase):
    def setUp(self):
        self.sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(self.sim.close)
        self.addCleanup(self.sim.resume)  # every test leaves the simulation running

    def robot(self, **kw):
        r = Robot(self.host, self.port, timeout=20, **kw)
        self.addCleanup(r.close)
        return r

    def test_quick_start_verbatim(self):
        with open(os.path.join(SRC, "clients", "python", "README.md")) as f:
            readme = f.read()
        self.assertIn(QUICK_START, readme)
        env = dict(os.environ, PLAYAREA_PORT=str(self.port))
        env.pop("PLAYAREA_HOST", None)
        p = subprocess.run([sys.executable, "-c", QUICK_START], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout.strip(), r"^Odometry\(x=\S+, y=\S+, theta=\S+, v=\S+, w=\S+, "
                                           r"seq=\d+, t=[0-9.e+-]+\)$")

    def test_odom_matches_get_state(self):
        r = self.robot()
        r.subscribe_odom()
        self.sim.pause()
        status = self.sim.get_status()
        self.sim.step(v=0.3, w=0.4, steps=40)
        for _ in range(4):  # find a tick on which a frame is due
            st = self.sim.step(v=0.3, w=0.4, steps=1)
            if odom_seq(st["tick"], status) != odom_seq(st["tick"] - 1, status):
                break
        else:
            self.fail("no odom frame due in 4 ticks: %r" % status)
        seq = odom_seq(st["tick"], status)
        o = self.wait_until(lambda: r.odom if r.odom.seq == seq else None, what="odom seq %d" % seq)
        self.assertAlmostEqual(o.t, st["sim_time"], places=9)
        for got, want in zip((o.x, o.y, o.theta), st["odom"]):
            self.assertAlmostEqual(got, want, delta=1e-5)
        self.assertAlmostEqual(o.v, st["twist"][0], delta=1e-5)
        self.assertAlmostEqual(o.w, st["twist"][2], delta=1e-5)
        self.assertEqual(r.dropped["odom"], 0)

    def test_scan_matches_get_state(self):
        r = self.robot()
        r.subscribe_scan()
        self.sim.pause()
        status = self.sim.get_status()
        self.sim.step_n(int(status["control_hz"] / status["scan_hz"]) * 2)
        js = self.sim.get_state()["sensors"]["scan"]
        s = self.wait_until(lambda: r.scan if r.scan.seq == js["seq"] else None,
                            what="scan seq %d" % js["seq"])
        self.assertAlmostEqual(s.t, js["sim_time"], places=9)
        for k in ("angle_min", "angle_increment", "range_min", "range_max"):
            self.assertAlmostEqual(getattr(s, k), js[k], delta=1e-6, msg=k)
        self.assertEqual(len(s.ranges), len(js["ranges"]))
        for i, (a, b) in enumerate(zip(s.ranges, js["ranges"])):
            self.assertAlmostEqual(a, b, delta=2e-6, msg="beam %d" % i)
        self.assertAlmostEqual(s.angle_min + len(s) * s.angle_increment - s.angle_min, 2 * math.pi,
                               delta=1e-3)
        hits = s.points()
        self.assertGreater(len(hits), 10, "the default world has walls in range")
        for (x, y), rr in zip(hits, [q for q in s.ranges if q < s.range_max]):
            self.assertAlmostEqual(math.hypot(x, y), rr, delta=1e-4)

    def test_camera_image(self):
        r = self.robot()
        r.subscribe_camera(timeout=30)
        self.sim.pause()
        x, y, th = self.sim.get_state()["pose"]
        images = []
        for dth in (0.0, 0.0, math.pi / 2):
            self.sim.teleport(x, y, th + dth)
            r.wait_camera(timeout=30)  # a frame rendered before the teleport may still come
            images.append(r.wait_camera(timeout=30))
        img = images[0]
        self.assertEqual((img.width, img.height), (640, 480))
        self.assertEqual(len(img.rgb), 640 * 480 * 3)
        colours = {img.rgb[i:i + 3] for i in range(0, len(img.rgb), 3 * 97)}
        self.assertGreater(len(colours), 5, "the image is nearly uniform")
        self.assertEqual(images[0].rgb, images[1].rgb, "same pose, paused: same picture")
        self.assertNotEqual(images[0].rgb, images[2].rgb, "turned 90 degrees: another picture")
        self.assertLess(images[0].seq, images[1].seq)
        png = img.to_png()
        self.assertEqual(struct.unpack(">II", png[16:24]), (640, 480))

    def _through_relay(self, channel, duration, **relay_kw):
        """Stream channel via a lossy relay for duration s; return (delivered seqs, stats, relay log)."""
        r = self.robot()
        got = []
        r.on(channel, lambda f: got.append(f))
        relay = Relay(**relay_kw)
        self.addCleanup(relay.close)
        r.subscribe(channel, wait=False, advertise_port=relay.port)
        relay.set_target(r.subscriptions[channel])
        time.sleep(duration)
        relay.close()  # stop the flow first, so counters and log agree
        time.sleep(0.3)
        stats = r.stats(channel)
        r.unsubscribe(channel)
        forwarded, dropped = relay.snapshot()
        return got, stats, forwarded, dropped

    def test_odom_through_lossy_relay(self):
        got, stats, fwd, dropped = self._through_relay("odom", 3.0, drop=0.1, dup=0.1, seed=3)
        seqs = [f.seq for f in got]
        self.assertGreater(len(seqs), 100)
        self.assertEqual(seqs, sorted(set(seqs)), "delivered in order, each once")
        sent = {struct.unpack_from("<I", d, 4)[0] for d in fwd}
        lost = {struct.unpack_from("<I", d, 4)[0] for d in dropped}
        lo, hi = seqs[0], seqs[-1]
        want = sorted(s for s in sent if lo <= s <= hi)
        self.assertEqual(seqs, want)
        self.assertGreater(len(lost), 5)
        self.assertEqual(stats["dropped"], (hi - lo + 1) - len(seqs))
        self.assertEqual(stats["dropped"], len({s for s in lost if lo <= s <= hi} - sent))
        self.assertGreater(stats["late"], 0, "duplicates are seen and ignored")

    def test_camera_through_lossy_reordering_relay(self):
        self.sim.pause()  # a still scene: every complete image must be the same picture
        r = self.robot()
        r.subscribe_camera(timeout=30)
        ref = r.wait_camera(timeout=30)
        r.close()
        # 659 chunks per image: 0.1% loss leaves about half the images complete.
        got, stats, fwd, dropped = self._through_relay("camera", 5.0, drop=0.001, dup=0.01,
                                                       window=16, seed=7)
        self.assertGreater(len(got), 3, stats)
        seqs = [img.seq for img in got]
        self.assertEqual(seqs, sorted(set(seqs)))
        for img in got:
            self.assertEqual((img.width, img.height), (ref.width, ref.height))
            self.assertTrue(img.rgb == ref.rgb, "image %d differs from the reference" % img.seq)
        chunks = {}
        for d in fwd:
            seq, _, _, _, _, idx, count = struct.unpack_from("<IHHIIHH", d, 4)
            chunks.setdefault(seq, [set(), count])[0].add(idx)
        complete = {s for s, (have, count) in chunks.items() if len(have) == count}
        lo, hi = seqs[0], seqs[-1]
        self.assertEqual(set(seqs), {s for s in complete if lo <= s <= hi})
        self.assertGreater(len(dropped), 0)
        self.assertEqual(stats["dropped"], (hi - lo + 1) - len(seqs))
        self.assertGreater(stats["dropped"], 0, "some images must have lost a chunk")
        self.assertLessEqual(stats["pending"], 4)

    def test_clean_shutdown(self):
        threads0, fds0 = threading.active_count(), open_fds()
        for _ in range(2):
            with Robot(self.host, self.port, timeout=30) as r:
                r.set_speed(0.1, 0.0)
                r.subscribe_odom()
                r.subscribe_scan()
                r.subscribe_camera(timeout=30)
                it = r.odom_stream(timeout=10)
                next(it)
                it.close()
                r.stop()
            self.assertFalse(r.connected)
        self.wait_until(lambda: threading.active_count() <= threads0 and not (open_fds() - fds0),
                        what="threads and fds released (%s, %s)" % (threading.enumerate(),
                                                                    open_fds() - fds0))
        # The server forgot those subscriptions: its client count is back to ours.
        self.wait_until(lambda: self.sim.get_status()["clients"] == 1, what="server dropped clients")

    def test_drive_commands_reach_the_robot(self):
        r = self.robot()
        r.subscribe_odom()
        head0 = self.sim.get_state()["head"]
        r.set_speed(0.0, 0.4)
        r.set_head_rate(0.5)
        self.wait_until(lambda: abs(r.wait_odom().w - 0.4) < 0.02, what="w reaches 0.4")
        self.wait_until(lambda: abs(self.sim.get_state()["head"] - head0) > 0.05, what="head pans")
        r.stop()
        self.wait_until(lambda: abs(r.wait_odom().w) < 1e-3, what="w back to 0")
        self.assertEqual(r.errors, [])

    def test_text_errors(self):
        r = self.robot()
        with self.assertRaises(Error) as cm:
            r.select_robot(99)
        self.assertEqual(cm.exception.code, "unknown_robot")
        self.assertIn("99", cm.exception.message)
        with self.assertRaises(Error) as cm:
            Robot(self.host, self.port, robot="nobody-here", timeout=20)
        self.assertEqual(cm.exception.code, "unknown_robot")
        r.select_robot(0)
        x, y, th = r.pose()
        self.assertTrue(all(math.isfinite(v) for v in (x, y, th)))

    def test_json_errors_carry_code(self):
        cases = [
            (lambda: self.sim.get_state(robot=99), "unknown_robot"),
            (lambda: self.sim.request("no_such_action"), "unknown_action"),
            (lambda: self.sim.request("get_state", type="telepathy"), "unknown_type"),
            (lambda: self.sim.step(steps=0), "invalid_message"),
            (lambda: self.sim.request("set_pose", {"robot": 0, "pose": [1, 2]}), "invalid_action_shape"),
        ]
        for fn, code in cases:
            with self.assertRaises(Error, msg=code) as cm:
                fn()
            self.assertEqual(cm.exception.code, code, cm.exception)
            self.assertTrue(cm.exception.message)
            self.assertFalse(cm.exception.response["success"])
        many = {"type": "batch", "protocol_version": 2,
                "requests": [{"type": "command", "action": "get_status"}] * 65}
        resp = self.sim.send_raw(many)
        self.assertEqual(resp["error"]["code"], "batch_limit")
        with self.assertRaises(ValueError):
            self.sim.batch(["get_status"] * 65)
        self.assertIn("tick", self.sim.get_state())  # the connection is still fine

    def test_properties(self):
        """set_property changes what the simulator does, rejects bad values
        without changing anything, and reset restores the world's values."""
        self.addCleanup(self.sim.reset)
        self.sim.pause()
        props = self.sim.get_property()["properties"]
        self.assertEqual(props["drive"], "diff")
        self.assertEqual(props["laser_beams"], 360)
        max_v0 = props["max_v"]
        self.assertGreater(max_v0, 0.25)  # else the cap below changes nothing
        # A lower speed limit caps what the robot achieves.
        got = self.sim.set_property("max_v", 0.25)
        self.assertAlmostEqual(got["value"], 0.25, places=6)
        self.sim.teleport(0, 0, 0)
        st = self.sim.step(v=1.0, w=0.0, steps=200)
        self.assertAlmostEqual(st["twist"][0], 0.25, places=5)
        # Fewer beams: the next scan has that many ranges.
        self.sim.set_property("laser_beams", 90)
        status = self.sim.get_status()
        st = self.sim.step(steps=int(status["control_hz"] / status["scan_hz"]) + 1)
        self.assertEqual(len(st["sensors"]["scan"]["ranges"]), 90)
        # Bad input: a clear error and no change.
        bad = [
            (dict(property="max_v", value=-1), "invalid_action_shape"),
            (dict(property="max_v", value="fast"), "invalid_action_shape"),
            (dict(property="laser_beams", value=10 ** 9), "invalid_action_shape"),
            (dict(property="laser_range_min", value=500), "invalid_action_shape"),
            (dict(property="colour", value=[1, 2]), "invalid_action_shape"),
            (dict(property="colour", value=[0, 0, 300]), "invalid_action_shape"),
            (dict(property="drive", value="omni"), "invalid_message"),
            (dict(property="no_such_thing", value=1), "invalid_message"),
            (dict(property="size", value=[1, 1]), "invalid_message"),
            (dict(property="radius", value=4.9), "blocked_pose"),
            (dict(property="height", value=1, name="nobody"), "unknown_object"),
        ]
        before = self.sim.get_property()["properties"]
        for kw, code in bad:
            with self.assertRaises(Error, msg=kw) as cm:
                self.sim.set_property(**kw)
            self.assertEqual(cm.exception.code, code, (kw, cm.exception))
            self.assertTrue(cm.exception.message)
        self.assertEqual(self.sim.get_property()["properties"], before)
        # Obstacles: size and colour; one that would swallow the robot is refused.
        self.sim.request("spawn_obstacle", {"name": "crate", "shape": "box",
                                            "pose": [1.0, 0.0, 0.0], "size": [0.2, 0.2]})
        self.sim.set_property("size", [0.3, 0.4], name="crate")
        self.sim.set_property("color", [10, 20, 30], name="crate")
        crate = self.sim.get_property(name="crate")["properties"]
        self.assertEqual(crate["size"], [0.3, 0.4])
        self.assertEqual(crate["colour"], [10, 20, 30, 255])
        with self.assertRaises(Error) as cm:
            self.sim.set_property("size", [3.0, 3.0], name="crate")
        self.assertEqual(cm.exception.code, "blocked_pose")
        self.assertEqual(self.sim.get_property("size", name="crate")["value"], [0.3, 0.4])
        # Reset: back to the world's values.
        self.sim.reset()
        props = self.sim.get_property()["properties"]
        self.assertEqual(props["max_v"], max_v0)
        self.assertEqual(props["laser_beams"], 360)

    def test_set_wheels(self):
        """Wheel speeds drive a differential robot: v is their mean, w their
        difference over wheel_base (1.6 x radius unless the world says)."""
        self.addCleanup(self.sim.reset)
        self.sim.pause()
        props = self.sim.get_property()["properties"]
        self.assertAlmostEqual(props["wheel_base"], 1.6 * props["radius"], places=5)
        self.sim.set_property("wheel_base", 0.25)
        self.sim.teleport(0, 0, 0)
        self.sim.set_wheels(0.2, 0.3)
        st = self.sim.step(steps=100, v=0.25, w=0.4)  # the same command, as v and w
        v_w = st["twist"]
        self.sim.teleport(0, 0, 0)
        self.sim.set_wheels(0.2, 0.3)
        self.sim.step_n(100)
        st = self.sim.get_state()
        self.assertAlmostEqual(st["twist"][0], 0.25, places=5)
        self.assertAlmostEqual(st["twist"][2], 0.4, places=5)
        self.assertEqual(st["twist"], v_w)
        for data, code in (({"left": 0.1}, "invalid_action_shape"),
                           ({"left": 0.1, "right": "x"}, "invalid_action_shape")):
            with self.assertRaises(Error, msg=data) as cm:
                self.sim.request("set_wheels", dict(data, robot=0))
            self.assertEqual(cm.exception.code, code, (data, cm.exception))
        # A non-finite speed never leaves the client (JSON has no NaN).
        with self.assertRaises(ValueError):
            self.sim.request("set_wheels", {"left": float("nan"), "right": 0, "robot": 0})
        with self.assertRaises(ValueError):
            self.sim.set_wheels(float("inf"), 0)
        omni = self.sim.spawn_robot(name="omni1", pose=[-1.0, 0.0, 0.0], drive="omni")
        with self.assertRaises(Error) as cm:
            self.sim.set_wheels(0.1, 0.1, robot=omni["robot"])
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")

    def test_sim_lockstep_and_batch(self):
        self.sim.pause()
        st0 = self.sim.get_state()
        self.assertTrue(st0["paused"])
        st1 = self.sim.step(v=0.2, w=0.0, steps=20)
        self.assertEqual(st1["tick"], st0["tick"] + 20)
        self.assertIsNotNone(st1["sensors"]["scan"])
        self.sim.step_n(10)
        self.assertEqual(self.sim.get_state()["tick"], st0["tick"] + 30)
        x, y, th = st1["pose"]
        self.sim.teleport(x, y, th + 0.5)
        pose = self.sim.get_state()["pose"]
        self.assertAlmostEqual(pose[0], x, delta=1e-5)
        self.assertAlmostEqual(math.remainder(pose[2] - (th + 0.5), 2 * math.pi), 0, delta=1e-5)
        out = self.sim.batch(["get_status", ("get_state", {"robot": 0}), ("get_state", {"robot": 99}),
                              {"action": "step_n", "data": {"steps": 5}}])
        self.assertEqual(len(out), 4)
        self.assertTrue(out[0]["success"])
        self.assertEqual(out[1]["data"]["tick"], st0["tick"] + 30)
        self.assertEqual(out[2]["error"]["code"], "unknown_robot")
        with self.assertRaises(Error):
            Sim.raise_for(out[2])
        self.assertTrue(out[3]["success"])
        ids = [o["request_id"] for o in out]
        self.assertEqual(ids, sorted(ids))
        self.sim.resume()
        t0 = self.sim.get_state()["tick"]
        self.wait_until(lambda: self.sim.get_state()["tick"] > t0 + 5, what="ticks after resume")
        robots = self.sim.list_robots()["robots"]  # a dict is truthy even with no robots
        self.assertIn("robot0", [r["name"] for r in robots])

    def test_text_lockstep(self):
        r = self.robot()
        r.pause()
        t0 = self.sim.get_state()["tick"]
        r.step(7)
        self.assertEqual(self.sim.get_state()["tick"], t0 + 7)
        r.resume()


class RestartTest(StackTestCase):
    """A crashed pa-netgw is restarted by the launcher on the same port."""

    def kill_netgw(self):
        return self.kill_child("pa-netgw", None)

    def test_server_restarted_mid_session(self):
        plain = Robot(self.host, self.port, timeout=20)
        self.addCleanup(plain.close)
        again = Robot(self.host, self.port, timeout=20, reconnect=True)
        self.addCleanup(again.close)
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        plain.subscribe_odom()
        again.subscribe_odom()
        again.set_speed(0.1, 0.2)
        seq0 = again.wait_odom().seq
        old = self.kill_netgw()
        with self.assertRaises(ConnectionLost):
            plain.wait_odom(timeout=20)
            plain.wait_odom(timeout=20)
        self.assertFalse(plain.connected)
        with self.assertRaises(ConnectionLost):
            plain.pose()
        with self.assertRaises(ConnectionLost):
            sim.get_state()
        self.wait_until(lambda: self.stack.children().get("pa-netgw") not in (None, old), 30,
                        "pa-netgw restarted")
        self.wait_until(lambda: again.reconnects >= 1 and again.connected, 30, "reconnected")
        o = again.wait_odom(timeout=20)
        self.assertGreater(o.seq, seq0, "seq continues across a netgw restart")
        self.assertEqual(len(again.pose()), 3)
        with Sim(self.host, self.port, timeout=20) as fresh:
            self.assertIn("tick", fresh.get_state())


class SnapshotTest(StackTestCase):
    """Snapshots put the world back exactly, refuse bad names, and outlive a
    crashed pa-sim (they live in the instance's shared memory)."""

    def run_episode(self, sim):
        return [sim.step(v=0.4, w=0.6, steps=40)["pose"] for _ in range(5)]

    def test_save_load_and_crash(self):
        sim = paused_sim(self)
        sim.set_property("max_w", 0.5)
        sim.request("spawn_obstacle", {"name": "post", "shape": "circle",
                                       "pose": [1.2, 0.4, 0.0], "radius": 0.1})
        saved = sim.save_snapshot("ep0")
        self.assertEqual((saved["name"], saved["robots"], saved["obstacles"]), ("ep0", 1, 1))
        st0 = sim.get_state()
        first = self.run_episode(sim)
        # Change everything a snapshot covers.
        sim.set_property("max_w", 2.0)
        sim.request("remove_obstacle", {"name": "post"})
        sim.spawn_robot(name="extra", pose=[-1.0, 0.0, 0.0])
        tick = sim.get_state()["tick"]
        loaded = sim.load_snapshot("ep0")
        self.assertEqual(loaded["saved_tick"], st0["tick"])
        st1 = sim.get_state()
        self.assertEqual(st1["pose"], st0["pose"])
        self.assertEqual(st1["velocity"], st0["velocity"])
        self.assertGreaterEqual(st1["tick"], tick, "ticks keep running")
        self.assertEqual(sim.get_property("max_w")["value"], 0.5)
        self.assertEqual([r["name"] for r in sim.list_robots()["robots"]], ["robot0"])
        self.assertEqual([o["name"] for o in sim.request("list_obstacles")["obstacles"]], ["post"])
        # The same commands from the snapshot give the same trajectory.
        self.assertEqual(self.run_episode(sim), first)
        # Bad names and unknown snapshots: clear errors, nothing changes.
        before = sim.get_state()["pose"]
        for name, code in (("nope", "unknown_object"), ("bad name", "invalid_message"),
                           ("x" * 32, "invalid_message"), ("", "invalid_message")):
            with self.assertRaises(Error, msg=name) as cm:
                sim.load_snapshot(name)
            self.assertEqual(cm.exception.code, code, (name, cm.exception))
        with self.assertRaises(Error) as cm:
            sim.request("save_snapshot", {})
        self.assertEqual(cm.exception.code, "invalid_message")
        self.assertEqual(sim.get_state()["pose"], before)
        # SIGKILL pa-sim: the launcher restarts it and the snapshot is still there.
        self.kill_child("pa-sim")

        def loads():
            try:
                return sim.load_snapshot("ep0")
            except Error as e:
                if e.code != "busy":
                    raise
                return None

        self.wait_until(loads, 30, "snapshot loads after the restart")
        self.assertEqual(sim.get_state()["pose"], st0["pose"])
        self.assertEqual(self.run_episode(sim), first)
        sim.resume()


class MapTest(DirStackTestCase):
    """generate_map and set_map from the client: the new map is what the
    gateway reports, robots stand on free cells, reset goes back to the world
    as it stood after the change, and a bad map changes nothing."""

    # set_map / set_scenario read files only under the stack's --data_dir.
    dir_flag = "--data_dir"

    def test_generate_and_set(self):
        sim = paused_sim(self)
        default = sim.get_map_info()
        got = sim.generate_map(width=10, height=6, resolution=0.05, seed=3,
                               rooms=(2, 1), clutter=1)
        self.assertEqual((got["width"], got["height"]), (200, 120))
        info = sim.get_map_info()
        self.assertEqual((info["width"], info["height"]), (200, 120))
        self.assertGreater(info["gen"], default["gen"])
        start = sim.get_state()["pose"]
        self.assertLess(abs(start[0]), 5)
        self.assertLess(abs(start[1]), 3)
        moved = sim.step(v=0.3, w=0.2, steps=100)["pose"]
        self.assertNotEqual(moved[:2], start[:2])
        sim.reset()
        self.assertEqual(sim.get_state()["pose"], start)
        # A file map (PGM + YAML as map_server writes them).
        with tempfile.TemporaryDirectory(dir=self.dir) as d:
            w, h = 50, 40
            rows = []
            for y in range(h):
                rows.append(bytes(0 if x in (0, w - 1) or y in (0, h - 1) else 254
                                  for x in range(w)))
            with open(os.path.join(d, "box.pgm"), "wb") as f:
                f.write(b"P5\n%d %d\n255\n" % (w, h) + b"".join(rows))
            with open(os.path.join(d, "box.yaml"), "w") as f:
                f.write("image: box.pgm\nresolution: 0.1\norigin: [-2.5, -2.0, 0.0]\n"
                        "negate: 0\noccupied_thresh: 0.65\nfree_thresh: 0.196\n")
            got = sim.set_map(os.path.join(d, "box.yaml"))
        self.assertEqual((got["width"], got["height"], got["resolution"]), (50, 40, 0.1))
        # Refused, and the map stays.
        for bad in ({"map": "office"}, {"map_yaml": "relative.yaml"}, {},
                    {"map_yaml": "/nonexistent/playarea.yaml"}):
            with self.assertRaises(Error) as e:
                sim.request("set_map", bad)
            self.assertEqual(e.exception.code, "invalid_message")
        with self.assertRaises(Error):
            sim.generate_map(width=1)
        self.assertEqual(sim.get_map_info()["width"], 50)
        back = sim.set_map()
        self.assertEqual((back["width"], back["height"]), (default["width"], default["height"]))
        # A whole world: two robots and an obstacle on the generated map.
        sim.spawn_robot(name="extra", pose=[1.0, 0.0, 0.0])
        with tempfile.TemporaryDirectory(dir=self.dir) as d:
            path = os.path.join(d, "two.world.yaml")
            with open(path, "w") as f:
                f.write("map: default\nrobots:\n  - {name: a, pose: [0, 0, 0]}\n"
                        "  - {name: b, pose: [1, 0, 0]}\nobstacles:\n"
                        "  - {name: c, shape: circle, pose: [0, 1, 0], radius: 0.2}\n")
            got = sim.set_scenario(path)
        self.assertEqual((got["robots"], got["obstacles"]), (2, 1))
        self.assertEqual([r["name"] for r in sim.request("list_robots")["robots"]], ["a", "b"])
        got = sim.set_scenario()
        self.assertEqual((got["robots"], got["obstacles"]), (1, 0))
        # Drawings for the viewer.
        self.assertEqual(sim.set_nav_path([(0, 0), (1, 1), (2, 0)])["points"], 3)
        self.assertEqual(sim.set_waypoints([(2, 0)])["points"], 1)
        with self.assertRaises(ValueError):  # refused before it is sent
            sim.set_nav_path([(0, float("nan"))])
        with self.assertRaises(Error) as e:  # and by the server
            sim.request("set_nav_path", {"path": [[0, 1e300]]})
        self.assertEqual(e.exception.code, "invalid_action_shape")
        sim.clear_nav()


class DatasetTest(DirStackTestCase):
    """export_dataset through the launcher's --dataset_dir: every tick's pose
    row and every scan of the recorded span, as CSV beside the map."""

    dir_flag = "--dataset_dir"

    def test_export(self):
        sim = paused_sim(self)
        got = sim.export_dataset("ep1", seconds=0.5)
        self.assertEqual(got["last_tick"] - got["first_tick"] + 1, 100)  # 200 Hz
        self.assertEqual(got["status"], "recording")
        sim.step(v=0.3, w=0.2, steps=130)
        out = os.path.join(self.dir, "ep1")
        # pa-sim's export thread writes the rest; dataset.json comes last
        self.wait_until(lambda: os.path.exists(os.path.join(out, "dataset.json")),
                        what="dataset.json")
        with open(os.path.join(out, "poses.csv")) as f:
            rows = f.read().splitlines()
        self.assertEqual(rows[0].split(",")[:3], ["tick", "sim_time", "robot"])
        ticks = [int(r.split(",")[0]) for r in rows[1:]]
        self.assertEqual(ticks, list(range(got["first_tick"], got["last_tick"] + 1)))
        with open(os.path.join(out, "scans.csv")) as f:
            scans = f.read().splitlines()[1:]
        self.assertEqual(len(scans), 5)  # 10 Hz for 0.5 s
        self.assertEqual(len(scans[0].split(",")), 12 + 360)
        self.assertTrue(os.path.exists(os.path.join(out, "map.yaml")))
        with self.assertRaises(Error) as e:  # not overwritten
            sim.export_dataset("ep1", seconds=0.1)
        self.assertEqual(e.exception.code, "invalid_message")


class TokenTest(StackTestCase):
    stack_args = ("--token", "s3cret")

    def test_token(self):
        with Robot(self.host, self.port, token="s3cret", timeout=20) as r:
            self.assertEqual(len(r.pose()), 3)
            r.subscribe_odom()
        with Robot(self.host, self.port, timeout=20) as r:
            with self.assertRaises(Error) as cm:
                r.pose()
            self.assertEqual(cm.exception.code, "not_authorized")
        with self.assertRaises(Error) as cm:
            Robot(self.host, self.port, token="wrong", timeout=20)
        self.assertEqual(cm.exception.code, "not_authorized")
        with Sim(self.host, self.port, token="s3cret", timeout=20) as s:
            self.assertIn("tick", s.get_state())
        with Sim(self.host, self.port, timeout=20) as s:
            with self.assertRaises(Error) as cm:
                s.get_state()
            self.assertEqual(cm.exception.code, "not_authorized")


if __name__ == "__main__":
    unittest.main()
