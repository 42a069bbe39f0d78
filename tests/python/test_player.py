"""The Player 3 front-end (--player_port) against a real stack, with the
test's own Player-protocol client (playerproto.py): every message of
docs/player.md, PUSH and PULL, two clients at once, bad input."""

import math
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import unittest
import zlib

from playerproto import (ACK, CAMERA, CMD, DATA, LASER, MAP, NACK, PLAYER, POSITION2D, PULL,
                         PUSH, RANGER, REQ, SIMULATION, SYNCH, Client, f32, f64, u32, xbytes,
                         xname)
from playarea import Sim
from stack import StackTestCase, bin_dir


def player_port(stack):
    out = subprocess.run([bin_dir() + "/playarea", "status", "--instance", stack.instance],
                         capture_output=True, text=True, timeout=30).stdout
    words = out.split()
    i = words.index("player/player")
    return int(words[i + 2])


def prop_req(name, prop, value=b""):
    return xname(name) + xname(prop) + u32(0) + xbytes(value)


DATA_DIR = tempfile.mkdtemp(prefix="pa-player-")


class PlayerTest(StackTestCase):
    stack_args = ("--no-render", "--scan_hz", "20", "--data_dir", DATA_DIR)

    @classmethod
    def setUpClass(cls):
        cls.addClassCleanup(shutil.rmtree, DATA_DIR, True)
        super().setUpClass()
        cls.pport = player_port(cls.stack)

    def client(self, *subs, mode=PUSH):
        c = Client(self.pport)
        self.addCleanup(c.close)
        if mode != PUSH:
            self.assertEqual(c.datamode(mode).type, ACK)
        for s in subs:
            self.assertEqual(c.subscribe(*s).type, ACK, s)
        return c

    def pose2d(self, c, name):
        m = c.request(SIMULATION, 0, 1, xname(name) + f64(0, 0, 0))
        self.assertEqual(m.type, ACK, name)
        r = m.r()
        self.assertEqual(r.bytes(), name.encode() + b"\0")
        p = (r.f64(), r.f64(), r.f64())
        self.assertTrue(r.done())
        return p

    def simtime(self, c):
        m = c.request(SIMULATION, 0, 3, xname("robot0") + f64(*[0] * 7))
        r = m.r()
        r.bytes()
        return [r.f64() for _ in range(7)][6]

    def data_of(self, c, interf, n=1, timeout=5.0, fresh=False):
        """The next n DATA messages of interf (PUSH); fresh: only those sent
        after a round trip from now (the older ones queued are dropped)."""
        if fresh:
            self.assertEqual(c.request(PLAYER, 0, 1).type, ACK)
            c.pending.clear()
        out, end = [], time.monotonic() + timeout
        while len(out) < n and time.monotonic() < end:
            m = c.pending.pop(0) if c.pending else c.read()
            self.assertNotEqual(m.type, SYNCH, "no SYNCH in PUSH mode")
            if m.type == DATA and m.interf == interf:
                out.append(m)
        self.assertEqual(len(out), n)
        return out

    def test_connection(self):
        c = self.client()
        self.assertEqual(len(c.ident), 32)
        self.assertTrue(c.ident.startswith(b"Player v.3."))
        m = c.request(PLAYER, 0, 1)  # DEVLIST
        r = m.r()
        n = r.u32()
        self.assertEqual(r.u32(), n)
        devs = {(r.u32(), r.u32(), r.u32(), r.u32())[2:] for _ in range(n)}
        self.assertTrue(r.done())
        for d in [(SIMULATION, 0), (MAP, 0), (POSITION2D, 0), (LASER, 0), (RANGER, 0)]:
            self.assertIn(d, devs)
        m = c.request(PLAYER, 0, 2, u32(0, 0, POSITION2D, 0) + xbytes(b""))  # DRIVERINFO
        r = m.r()
        [r.u32() for _ in range(4)]
        self.assertEqual(r.bytes(), b"playarea\0")
        self.assertEqual(c.request(PLAYER, 0, 2, u32(0, 0, POSITION2D, 99) + xbytes(b"")).type,
                         NACK)
        m = c.subscribe(POSITION2D, 0)
        r = m.r()
        self.assertEqual([r.u32() for _ in range(5)], [0, 0, POSITION2D, 0, 1])
        self.assertEqual(r.bytes(), b"playarea\0")
        self.assertEqual(c.subscribe(POSITION2D, 99).type, NACK)
        self.assertEqual(c.subscribe(77, 0).type, NACK)
        m = c.subscribe(POSITION2D, 0, access=2)  # close
        self.assertEqual(m.r().b[16:20], u32(2))
        self.assertEqual(c.request(PLAYER, 0, 10, u32(4, 0, 1, 1, 1)).type, ACK)  # replace rule
        self.assertEqual(c.request(PLAYER, 0, 7, xbytes(b"k")).type, ACK)  # AUTH, no --token
        self.assertEqual(c.request(PLAYER, 0, 8, b"").type, NACK)  # NAMESERVICE
        self.assertEqual(c.datamode(3).type, NACK)

    def test_simulation_pose(self):
        c = self.client((SIMULATION, 0))
        self.assertEqual(c.request(SIMULATION, 0, 2, xname("robot0") + f64(1.5, -0.5, 0.75)).type,
                         ACK)
        x, y, a = self.pose2d(c, "robot0")
        self.assertAlmostEqual(x, 1.5, delta=0.05)
        self.assertAlmostEqual(y, -0.5, delta=0.05)
        self.assertAlmostEqual(a, 0.75, delta=0.05)
        m = c.request(SIMULATION, 0, 3, xname("robot0") + f64(*[0] * 7))
        r = m.r()
        r.bytes()
        p = [r.f64() for _ in range(7)]
        self.assertEqual(p[2:5], [0, 0, 0])
        self.assertGreater(p[6], 0)  # simtime
        self.assertEqual(c.request(SIMULATION, 0, 4, xname("robot0") + f64(1, 0, 0.5, 0, 0, 0.2, 0))
                         .type, NACK)  # z off the plane
        self.assertEqual(c.request(SIMULATION, 0, 4, xname("robot0") + f64(1, 0, 0, 0, 0, 0.2, 0))
                         .type, ACK)
        self.assertAlmostEqual(self.pose2d(c, "robot0")[0], 1.0, delta=0.05)
        self.assertEqual(c.request(SIMULATION, 0, 1, xname("nobody") + f64(0, 0, 0)).type, NACK)
        self.assertEqual(c.request(SIMULATION, 0, 2, xname("robot0") + f64(99, 99, 0)).type, NACK)
        self.assertEqual(c.request(SIMULATION, 0, 2, xname("robot0") + f64(math.nan, 0, 0)).type,
                         NACK)

    def test_simulation_obstacles_and_agents(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        sim.request("spawn_obstacle", {"name": "crate", "shape": "box", "pose": [-1, -1, 0.5],
                                       "size": [0.3, 0.3]})
        sim.request("spawn_agent", {"name": "walker", "behaviour": "constant",
                                    "pose": [1, -1, 0], "speed": 0.0001})
        c = self.client((SIMULATION, 0))
        x, y, a = self.pose2d(c, "crate")
        self.assertEqual((round(x, 6), round(y, 6), round(a, 6)), (-1, -1, 0.5))
        self.assertEqual(c.request(SIMULATION, 0, 2, xname("crate") + f64(-1.2, -1, 0)).type, ACK)
        self.assertAlmostEqual(self.pose2d(c, "crate")[0], -1.2, places=6)
        x, y, _ = self.pose2d(c, "walker")
        self.assertAlmostEqual(x, 1, delta=0.05)
        m = c.request(SIMULATION, 0, 5, prop_req("crate", "size"))
        r = m.r()
        r.bytes(), r.bytes(), r.u32()
        self.assertEqual(struct.unpack("<2d", r.bytes()), (0.3, 0.3))

    def test_simulation_property(self):
        c = self.client((SIMULATION, 0))
        self.assertEqual(c.request(SIMULATION, 0, 6, prop_req("robot0", "color",
                                                             struct.pack("<4f", 1, 0, 0.5, 1)))
                         .type, ACK)
        m = c.request(SIMULATION, 0, 5, prop_req("robot0", "color"))
        r = m.r()
        self.assertEqual(r.bytes(), b"robot0\0")
        self.assertEqual(r.bytes(), b"color\0")
        r.u32()
        rgba = struct.unpack("<4f", r.bytes())
        self.assertAlmostEqual(rgba[0], 1.0, places=3)
        self.assertAlmostEqual(rgba[2], 128 / 255, places=3)
        self.assertEqual(c.request(SIMULATION, 0, 6, prop_req("robot0", "max_v",
                                                             struct.pack("<d", 0.8))).type, ACK)
        m = c.request(SIMULATION, 0, 5, prop_req("robot0", "max_v"))
        r = m.r()
        r.bytes(), r.bytes(), r.u32()
        self.assertAlmostEqual(struct.unpack("<d", r.bytes())[0], 0.8, places=5)
        m = c.request(SIMULATION, 0, 5, prop_req("robot0", "simtime"))
        r = m.r()
        r.bytes(), r.bytes(), r.u32()
        self.assertGreater(struct.unpack("<d", r.bytes())[0], 0)
        for bad in [prop_req("robot0", "nonsense"), prop_req("robot0", "max_v", b"\0" * 4),
                    prop_req("robot0", "max_v", struct.pack("<d", -5)),
                    prop_req("robot0", "drive", struct.pack("<d", 1))]:
            self.assertEqual(c.request(SIMULATION, 0, 6, bad).type, NACK, bad)
        self.assertEqual(c.request(SIMULATION, 0, 5, prop_req("robot0", "nonsense")).type, NACK)

    def test_simulation_commands(self):
        c = self.client((SIMULATION, 0))
        c.send(SIMULATION, 0, CMD, 1)  # PAUSE
        time.sleep(0.3)
        t1 = self.simtime(c)
        time.sleep(0.3)
        self.assertEqual(self.simtime(c), t1)
        c.send(SIMULATION, 0, CMD, 1)  # resume
        time.sleep(0.3)
        self.assertGreater(self.simtime(c), t1)
        self.assertEqual(c.request(SIMULATION, 0, 2, xname("robot0") + f64(1, 1, 1)).type, ACK)
        c.send(SIMULATION, 0, CMD, 2)  # RESET: robots to their start
        time.sleep(0.3)
        x, y, _ = self.pose2d(c, "robot0")
        self.assertLess(math.hypot(x - 1, y - 1), 2)
        self.assertNotAlmostEqual(x, 1.0, places=2)
        c.send(SIMULATION, 0, CMD, 3)  # SAVE: no reply; the world to a file
        self.assertEqual(c.request(PLAYER, 0, 1).type, ACK)  # the next reply is DEVLIST's
        self.assertEqual(c.pending, [])
        self.wait_until(lambda: os.path.exists(os.path.join(DATA_DIR, "snapshot.json")), 5,
                        "SAVE wrote snapshot.json")

    def test_position2d_push(self):
        c = self.client((POSITION2D, 0), (SIMULATION, 0))
        m = c.request(POSITION2D, 0, 1)  # GET_GEOM
        r = m.r()
        g = [r.f64() for _ in range(9)]
        self.assertGreater(g[6], 0)
        self.assertEqual(c.request(POSITION2D, 0, 5, f64(5, 6, 0)).type, ACK)  # SET_ODOM
        d = self.data_of(c, POSITION2D, 2, fresh=True)[-1].r()
        self.assertAlmostEqual(d.f64(), 5, delta=0.05)
        self.assertAlmostEqual(d.f64(), 6, delta=0.05)
        self.assertEqual(c.request(POSITION2D, 0, 5, f64(math.inf, 0, 0)).type, NACK)
        self.assertEqual(c.request(POSITION2D, 0, 6).type, ACK)  # RESET_ODOM
        c.pending.clear()
        c.send(POSITION2D, 0, CMD, 1, f64(0.3, 0, 0.2) + u32(1))
        time.sleep(0.5)
        d = self.data_of(c, POSITION2D, 3, fresh=True)[-1]
        r = d.r()
        pose = [r.f64() for _ in range(3)]
        vel = [r.f64() for _ in range(3)]
        r.u32()
        self.assertTrue(r.done())
        self.assertAlmostEqual(vel[0], 0.3, delta=0.02)
        self.assertAlmostEqual(vel[2], 0.2, delta=0.02)
        self.assertGreater(math.hypot(pose[0], pose[1]), 0.05)
        self.assertEqual(c.request(POSITION2D, 0, 2, u32(0)).type, ACK)  # motors off
        c.send(POSITION2D, 0, CMD, 1, f64(0.3, 0, 0.2) + u32(1))
        time.sleep(0.3)
        c.pending.clear()
        r = self.data_of(c, POSITION2D, 3, fresh=True)[-1].r()
        [r.f64() for _ in range(3)]
        self.assertAlmostEqual(r.f64(), 0, delta=0.01)
        self.assertEqual(c.request(POSITION2D, 0, 2, u32(1)).type, ACK)
        self.assertEqual(c.request(POSITION2D, 0, 3, u32(1)).type, ACK)  # VELOCITY_MODE
        self.assertEqual(c.request(POSITION2D, 0, 4, u32(1)).type, NACK)  # POSITION_MODE
        self.assertEqual(c.request(POSITION2D, 0, 4, u32(0)).type, ACK)
        self.assertEqual(c.request(POSITION2D, 0, 7, f32(1, 0, 0)).type, NACK)  # SPEED_PID
        c.send(POSITION2D, 0, CMD, 3, f64(0.2, 0.1))  # car-like: NACK by name
        while True:
            m = c.read()
            if m.type == NACK:
                break
        self.assertEqual((m.interf, m.subtype), (POSITION2D, 3))
        c.send(POSITION2D, 0, CMD, 1, f64(0, 0, 0) + u32(1))

    def test_laser_ranger_and_udp_frames(self):
        c = self.client((LASER, 0), (RANGER, 0))
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        udp.settimeout(5)
        self.addCleanup(udp.close)
        t = socket.create_connection(("127.0.0.1", self.port))
        self.addCleanup(t.close)
        t.sendall(b"sub scan %d\n" % udp.getsockname()[1])
        frames = {}
        for _ in range(6):
            f = udp.recv(65536)
            _, seq, _, _, _, _, _, n = struct.unpack_from("<4sId4fI", f)
            frames[seq] = struct.unpack_from("<%df" % n, f, 36)
        lasers = self.data_of(c, LASER, 4)
        matched = 0
        for m in lasers:
            r = m.r()
            amin, amax, res, rmax = r.f32(), r.f32(), r.f32(), r.f32()
            n = r.u32()
            self.assertEqual(r.u32(), n)
            ranges = [r.f32() for _ in range(n)]
            self.assertEqual(r.u32(), 0)
            r.u32()
            sid = r.u32()
            self.assertTrue(r.done())
            self.assertEqual(n, 360)
            self.assertAlmostEqual(amax - amin, res * 359, places=4)
            self.assertTrue(all(math.isfinite(x) and 0 <= x <= rmax for x in ranges))
            if sid in frames:
                self.assertEqual(tuple(ranges), frames[sid])
                matched += 1
        self.assertGreater(matched, 0, (sorted(frames), [m.r().b[-4:] for m in lasers]))
        r = self.data_of(c, RANGER, 1)[0].r()
        n = r.u32()
        self.assertEqual(r.u32(), n)
        self.assertEqual(n, 360)
        m = c.request(LASER, 0, 3)  # GET_CONFIG
        r = m.r()
        cfg = [r.f32() for _ in range(5)]
        self.assertAlmostEqual(cfg[3], 12, places=3)
        self.assertEqual(c.request(LASER, 0, 2, f32(cfg[0], cfg[1], cfg[2], 8.0, 0) + u32(0) +
                                   f32(0)).type, ACK)  # SET_CONFIG: max range
        m = c.request(RANGER, 0, 5)
        r = m.r()
        self.assertAlmostEqual([r.f64() for _ in range(7)][4], 8.0, places=3)
        self.assertEqual(c.request(LASER, 0, 2, f32(0, 1, 0.5, 8.0, 0) + u32(0) + f32(0)).type,
                         NACK)
        m = c.request(RANGER, 0, 1)  # GET_GEOM: pose, size, one element
        r = m.r()
        [r.f64() for _ in range(9)]
        self.assertEqual(r.u32(), 1)
        self.assertEqual(c.request(LASER, 0, 1).type, ACK)
        self.assertEqual(c.request(LASER, 0, 4, u32(0)).type, NACK)  # power off
        self.assertEqual(c.request(RANGER, 0, 2, u32(1)).type, ACK)
        self.assertEqual(c.request(RANGER, 0, 3, u32(1)).type, NACK)  # intensities
        self.assertEqual(c.request(RANGER, 0, 4, f64(0, 0, 0, 0, 12, 0, 0)).type, NACK)

    def test_map(self):
        c = self.client((MAP, 0))
        r = c.request(MAP, 0, 1).r()
        scale, w, h = r.f32(), r.u32(), r.u32()
        self.assertGreater(scale, 0)
        m = c.request(MAP, 0, 2, u32(10, 20, 64, 32, 0, 0, 0))
        r = m.r()
        self.assertEqual([r.u32() for _ in range(4)], [10, 20, 64, 32])
        zn = r.u32()
        self.assertEqual(r.u32(), 1)  # data_range
        cells = zlib.decompress(r.b[r.o + 4:r.o + 4 + zn])
        self.assertEqual(len(cells), 64 * 32)
        self.assertTrue(set(cells) <= {0, 1, 255})
        r = c.request(MAP, 0, 2, u32(w - 5, h - 5, 64, 64, 0, 0, 0)).r()  # clipped
        self.assertEqual([r.u32() for _ in range(4)], [w - 5, h - 5, 5, 5])
        self.assertEqual(c.request(MAP, 0, 2, u32(w, 0, 4, 4, 0, 0, 0)).type, NACK)
        self.assertEqual(c.request(MAP, 0, 3).type, NACK)  # no vector map

    def test_pull_and_two_clients(self):
        pull = self.client((POSITION2D, 0), (LASER, 0), mode=PULL)
        push = self.client((POSITION2D, 0))
        time.sleep(0.3)
        pull.s.settimeout(0.3)
        with self.assertRaises(socket.timeout):  # nothing before REQ_DATA
            pull.read()
        pull.s.settimeout(10)
        for _ in range(3):
            msgs = pull.pull_round()
            self.assertEqual(msgs[-1].type, SYNCH)
            kinds = [(m.interf, m.type) for m in msgs[:-1]]
            self.assertIn((POSITION2D, DATA), kinds)
            self.assertEqual(len(kinds), len(set(kinds)), "the newest of each device")
        ds = self.data_of(push, POSITION2D, 100, fresh=True)  # PUSH: every tick, in order
        steps = {round(b.time - a.time, 6) for a, b in zip(ds, ds[1:])}
        self.assertEqual(steps, {0.005}, "one datum per 200 Hz tick, none skipped")

    def test_bad_input(self):
        good = self.client((POSITION2D, 0))
        bad = self.client()
        bad.send(99, 0, REQ, 1)  # unknown interface
        self.assertEqual(bad.read().type, NACK)
        bad.send(SIMULATION, 0, REQ, 1, xname("robot0"))  # XDR short of the pose
        self.assertEqual(bad.read().type, NACK)
        bad.send(POSITION2D, 0, CMD, 1, f64(1, 0, 0) + u32(1))  # not subscribed
        self.assertEqual(bad.read().type, NACK)
        bad.send(PLAYER, 0, REQ, 3, u32(0, 0, 1) + u32(0x7fffffff, 0x7fffffff))  # wild length
        self.assertEqual(bad.read().type, NACK)
        bad.send(PLAYER, 0, DATA, 1)  # a type a client does not send
        self.assertEqual(bad.read().type, NACK)
        bad.send(PLAYER, 0, REQ, 1, size=1 << 30)  # oversize: closed
        self.assertEqual(bad.s.recv(100), b"")
        t = Client(self.pport)
        t.s.sendall(b"\0" * 17)  # a truncated header, then gone
        t.close()
        self.assertEqual(len(self.data_of(good, POSITION2D, 3)), 3)
        self.assertEqual(good.request(PLAYER, 0, 1).type, ACK)
        self.assertIn("pa-netgw", self.stack.children())


if __name__ == "__main__":
    unittest.main()


class PlayerLimitsTest(StackTestCase):
    stack_args = ("--no-render", "--idle_timeout_ms", "400", "--max_clients_per_peer", "3")

    def test_limits(self):
        port = player_port(self.stack)
        held = [Client(port) for _ in range(3)]
        for c in held:
            self.addCleanup(c.close)
        with self.assertRaises((ConnectionError, OSError)):  # the fourth from 127.0.0.1
            Client(port)
        held[0].s.sendall(b"\0" * 17)  # a header left half-sent: closed after the idle time
        held[0].s.settimeout(5)
        t0 = time.monotonic()
        self.assertEqual(held[0].s.recv(100), b"")
        self.assertGreater(time.monotonic() - t0, 0.2)
        time.sleep(0.6)
        self.assertEqual(held[1].request(PLAYER, 0, 1).type, ACK)  # idle but whole: kept
        c = Client(port)  # a slot is free again
        self.addCleanup(c.close)
        self.assertEqual(c.request(PLAYER, 0, 1).type, ACK)


class PlayerCameraTest(StackTestCase):
    stack_args = ("--camera_width", "64", "--camera_height", "48")

    def test_camera_rgb_while_subscribed(self):
        c = Client(player_port(self.stack))
        self.addCleanup(c.close)
        self.assertEqual(c.subscribe(CAMERA, 0).type, ACK)
        deadline, m = time.monotonic() + 30, None
        while time.monotonic() < deadline:
            m = c.read()
            if m.type == DATA and m.interf == CAMERA:
                break
        self.assertEqual((m.type, m.interf, m.index, m.subtype), (DATA, CAMERA, 0, 1))
        r = m.r()
        self.assertEqual([r.u32() for _ in range(6)], [64, 48, 24, 5, 0, 0])
        img = r.bytes()
        self.assertEqual(len(img), 64 * 48 * 3)
        self.assertTrue(r.done())
        self.assertGreater(len(set(img)), 1)  # a picture, not a blank buffer
        self.assertEqual(c.request(CAMERA, 0, 1).type, NACK)  # GET_SOURCE
        self.assertEqual(c.subscribe(CAMERA, 0, access=2).type, ACK)
