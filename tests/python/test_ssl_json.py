"""RoboCup SSL through JSON v2 on the real stack (--world ssl-b, lockstep):
the ball's friction, kicks, chips, the dribbler, teleport with velocity."""

import math
import unittest

from playarea import Error, Sim

from stack import StackTestCase

BALL_R = 0.021335
C2D = 0.08          # centre to dribbler bar [m] (docs/ssl.md)
ACC_SLIDE, ACC_ROLL = 3.0, 0.35
HZ = 200


class SslJson(StackTestCase):
    stack_args = ("--world", "ssl-b", "--paused", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0")

    def setUp(self):
        self.sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(self.sim.close)
        self.sim.reset()
        names = {r["name"]: r["robot"] for r in self.sim.list_robots()["robots"]}
        self.b0, self.b1, self.y0 = names["b0"], names["b1"], names["y0"]

    def at_bar(self, x, y, theta):
        """A ball position touching the bar of a robot at (x, y, theta)."""
        d = C2D + BALL_R - 0.001
        return x + d * math.cos(theta), y + d * math.sin(theta)

    def test_world(self):
        b = self.sim.get_ball()
        self.assertEqual(b["division"], "B")
        self.assertEqual(b["position"], [0.0, 0.0, 0.0])
        names = [r["name"] for r in self.sim.list_robots()["robots"]]
        self.assertEqual(sorted(names), sorted(["b%d" % i for i in range(6)] +
                                               ["y%d" % i for i in range(6)]))
        st = self.sim.get_state(self.b0)
        self.assertEqual(st["drive"], "omni")
        self.assertIn("ball", st)

    def test_rolling_distance(self):
        v0 = 1.5
        self.sim.teleport_ball(-3, 2.2, vx=v0, roll=True)
        self.sim.step_n(int(v0 / ACC_ROLL * HZ) + 20)
        b = self.sim.get_ball()
        self.assertAlmostEqual(b["position"][0] + 3, v0 * v0 / (2 * ACC_ROLL), delta=0.01)
        self.assertEqual(b["velocity"], [0.0, 0.0, 0.0])

    def test_kick_distance(self):
        s = self.sim
        s.teleport(-2.5, 2.2, 0, robot=self.b0)
        s.kick(2.0, robot=self.b0)
        s.teleport_ball(*self.at_bar(-2.5, 2.2, 0))
        s.step_n(1)
        b = s.get_ball()
        self.assertAlmostEqual(b["velocity"][0], 2.0, delta=0.05)
        x0 = b["position"][0]
        s.step_n(2000)
        b = s.get_ball()
        vs = 2.0 * 5 / 7
        want = (2.0 ** 2 - vs ** 2) / (2 * ACC_SLIDE) + vs ** 2 / (2 * ACC_ROLL)
        self.assertAlmostEqual(b["position"][0] - x0, want, delta=0.03)
        # Fired once: the kicker is disarmed.
        r = s.kick(0, robot=self.b0)
        self.assertEqual(r["kicks"], 1)

    def test_kick_capped(self):
        s = self.sim
        s.teleport(-2.5, 2.2, 0, robot=self.b0)
        s.kick(30.0, robot=self.b0)
        s.teleport_ball(*self.at_bar(-2.5, 2.2, 0))
        s.step_n(1)
        self.assertAlmostEqual(s.get_ball()["velocity"][0], 6.5, delta=0.05)

    def test_chip_over_robot(self):
        s = self.sim
        s.teleport(-2.5, 2.2, 0, robot=self.b0)
        s.teleport(-1.7, 2.2, math.pi, robot=self.y0)
        s.kick(4.0, angle=45, robot=self.b0)
        s.teleport_ball(*self.at_bar(-2.5, 2.2, 0))
        zmax = 0
        for _ in range(40):
            s.step_n(5)
            b = s.get_ball()
            zmax = max(zmax, b["position"][2])
            self.assertFalse(s.get_state(self.y0)["ball_contact"])
        self.assertGreater(zmax, 0.3)
        self.assertGreater(s.get_ball()["position"][0], -1.7 + 0.3)

    def test_dribble_and_turn(self):
        s = self.sim
        s.teleport(-2.5, 2.0, 0, robot=self.b0)
        s.set_dribbler(5000, robot=self.b0)
        s.teleport_ball(*self.at_bar(-2.5, 2.0, 0))
        s.step_n(2)
        self.assertEqual(s.get_ball()["holder"], self.b0)
        s.request("set_velocity", {"robot": self.b0, "vx": 0.0, "vy": 0.0, "w": 2.0})
        s.step_n(300)
        st = s.get_state(self.b0)
        th = st["pose"][2]
        self.assertGreater(abs(math.remainder(th, 2 * math.pi)), 1.0)
        b = s.get_ball()
        self.assertEqual(b["holder"], self.b0)
        self.assertTrue(st["ball_contact"])
        bx = st["pose"][0] + (C2D + BALL_R) * math.cos(th)
        by = st["pose"][1] + (C2D + BALL_R) * math.sin(th)
        self.assertAlmostEqual(b["position"][0], bx, delta=1e-3)
        self.assertAlmostEqual(b["position"][1], by, delta=1e-3)
        s.set_dribbler(0, robot=self.b0)
        s.step_n(1)
        self.assertIsNone(s.get_ball()["holder"])

    def test_teleport_with_velocity(self):
        s = self.sim
        s.teleport_moving(-3, -2, 0, v_x=1.0, v_y=0.5, robot=self.b1)
        s.step_n(100)  # 0.5 s, already at speed: no acceleration limit
        st = s.get_state(self.b1)
        self.assertAlmostEqual(st["pose"][0], -2.5, delta=0.01)
        self.assertAlmostEqual(st["pose"][1], -1.75, delta=0.01)

    def test_norm_limit(self):
        """A diagonal command accelerates at 4 m/s^2 in norm, not per axis."""
        s = self.sim
        s.teleport(-3, -2, 0, robot=self.b1)
        s.request("set_velocity", {"robot": self.b1, "vx": 1.0, "vy": 1.0, "w": 0.0})
        s.step_n(40)  # 0.2 s at 4 m/s^2: |v| = 0.8
        v = s.get_state(self.b1)["velocity"]
        self.assertAlmostEqual(math.hypot(v[0], v[1]), 0.8, delta=0.03)
        s.step_n(60)
        v = s.get_state(self.b1)["velocity"]
        self.assertAlmostEqual(math.hypot(v[0], v[1]), math.sqrt(2), delta=0.01)
        self.assertAlmostEqual(v[0], v[1], delta=1e-6)

    def test_bad_input(self):
        s = self.sim
        with self.assertRaises(Error) as e:
            s.kick(-1, robot=self.b0)
        self.assertEqual(e.exception.code, "invalid_message")
        with self.assertRaises(Error) as e:
            s.teleport_ball(50, 0)
        self.assertEqual(e.exception.code, "blocked_pose")
        with self.assertRaises(Error) as e:
            s.request("teleport_ball", {"position": [0, 0], "spin": 3})
        self.assertEqual(e.exception.code, "invalid_message")
        self.assertEqual(s.get_ball()["position"], [0.0, 0.0, 0.0])
        s.teleport_ball(0, 0, present=False)
        self.assertFalse(s.get_ball()["present"])


class NoSslField(StackTestCase):
    stack_args = ("--paused", "--no-render")

    def test_refused_by_name(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        for call in (sim.get_ball, lambda: sim.kick(1.0), lambda: sim.teleport_ball(0, 0)):
            with self.assertRaises(Error) as e:
                call()
            self.assertEqual(e.exception.code, "unsupported_control_scheme")


if __name__ == "__main__":
    unittest.main()
