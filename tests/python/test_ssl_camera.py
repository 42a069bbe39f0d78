"""The ball in the rendered head camera, end to end: pa-sim's tick carries
the ball, pa-render draws it, the camera stream delivers the image
(--world ssl-b with pa-render, paused)."""

import math
import time
import unittest

from playarea import Robot, Sim

from stack import StackTestCase


def orange(img):
    """Orange pixels: count and mean column."""
    n = su = 0
    rgb = img.rgb
    for i in range(0, len(rgb), 3):
        r, g, b = rgb[i], rgb[i + 1], rgb[i + 2]
        if r > 150 and 40 < g < 140 and b < 50:
            n += 1
            su += (i // 3) % img.width
    return n, (su / n if n else None)


class SslCamera(StackTestCase):
    stack_args = ("--world", "ssl-b", "--paused", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0")

    def test_ball_in_head_camera(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        b0 = {r["name"]: r["robot"] for r in sim.list_robots()["robots"]}["b0"]
        rob = Robot(self.host, self.port, robot=b0, timeout=20)
        self.addCleanup(rob.close)
        rob.subscribe_camera(timeout=30)
        # b0 looks down the -x half (nobody there); the ball 1 m ahead.
        sim.teleport(-1.5, 2.0, math.pi, robot=b0)
        sim.teleport_ball(-2.5, 2.0)

        def frame(ok):
            """The first frame that shows the change (ok(img) true): frames
            rendered before it may still be in flight, more than one on a
            busy machine; the last one seen when none does in 20 s."""
            deadline = time.monotonic() + 20
            while True:
                img = rob.wait_camera(timeout=30)
                if ok(img) or time.monotonic() > deadline:
                    return img

        img = frame(lambda im: orange(im)[0] > 150)
        n, cu = orange(img)
        # 42.67 mm at 1 m in a 640 px, 60 deg camera: ~26 px across
        self.assertGreater(n, 150, "no orange ball in the camera image")
        self.assertAlmostEqual(cu, img.width / 2, delta=3)
        # 0.3 m to the robot's left (-y when it faces -x): the pinhole's column.
        sim.teleport_ball(-2.5, 1.7)
        want = img.width / 2 * (1 - 0.3 / math.tan(math.radians(30)))
        n2, cu2 = orange(frame(lambda im: orange(im)[0] > 150 and
                               abs(orange(im)[1] - want) <= 4))
        self.assertGreater(n2, 150)
        self.assertAlmostEqual(cu2, want, delta=4)
        # Off the field: no orange at all.
        sim.teleport_ball(0, 0, present=False)
        self.assertEqual(orange(frame(lambda im: orange(im)[0] == 0))[0], 0)


if __name__ == "__main__":
    unittest.main()
