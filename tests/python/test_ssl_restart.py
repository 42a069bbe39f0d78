"""The ball survives a pa-sim crash: SIGKILL pa-sim under the launcher
(--world ssl-b, paused) and the restarted pa-sim has the ball where it
was, at the same velocity, still sliding, and it rolls on from there."""

import unittest

from playarea import Error, Sim

from stack import StackTestCase

ACC_SLIDE, ACC_ROLL = 3.0, 0.35
HZ = 200


class SslRestart(StackTestCase):
    stack_args = ("--world", "ssl-b", "--paused", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0")

    def test_ball_survives_sigkill(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        v0 = 2.0
        # Sliding (not rolling): the slide/roll switch must survive too.
        sim.teleport_ball(-3.0, 1.0, vx=v0)
        sim.step_n(10)
        before = sim.get_ball()
        self.assertGreater(before["position"][0], -3.0 + 0.05)
        self.assertAlmostEqual(before["velocity"][0], v0 - ACC_SLIDE * 10 / HZ, delta=0.02)

        self.kill_child("pa-sim")

        def ball():
            try:
                return sim.get_ball()
            except Error as e:
                if e.code not in ("busy", "sim_unavailable", "timeout"):
                    raise
                return None

        after = self.wait_until(ball, 30, "get_ball after the restart")
        for a, b in zip(after["position"] + after["velocity"],
                        before["position"] + before["velocity"]):
            self.assertAlmostEqual(a, b, delta=1e-6, msg=(after, before))

        # It goes on sliding, then rolls: the friction model from where it was.
        sim.step_n(40)
        end = sim.get_ball()
        v1 = before["velocity"][0]
        vs = v0 * 5 / 7
        t_slide = (v1 - vs) / ACC_SLIDE
        t = 40 / HZ
        want_v = vs - ACC_ROLL * (t - t_slide)
        want_x = (before["position"][0] + (v1 * v1 - vs * vs) / (2 * ACC_SLIDE) +
                  vs * (t - t_slide) - ACC_ROLL * (t - t_slide) ** 2 / 2)
        self.assertAlmostEqual(end["velocity"][0], want_v, delta=0.02)
        self.assertAlmostEqual(end["position"][0], want_x, delta=0.01)
        self.assertAlmostEqual(end["position"][1], 1.0, delta=1e-6)


if __name__ == "__main__":
    unittest.main()
