"""examples/00-simple run headless against the real stack and write their PNGs."""

import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

from stack import StackTestCase

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
EXAMPLES = os.path.join(SRC, "examples", "00-simple")


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError("%s is not a PNG" % path)
    return struct.unpack(">II", head[16:24])


class ExamplesTest(StackTestCase):
    def run_example(self, *argv, timeout=120):
        env = dict(os.environ, PLAYAREA_HOST=self.host, PLAYAREA_PORT=str(self.port),
                   MPLBACKEND="Agg")
        env.pop("PYTHONPATH", None)  # the examples must find the client by themselves
        p = subprocess.run([sys.executable, "-B"] + list(argv), cwd=EXAMPLES, env=env,
                           capture_output=True, text=True, timeout=timeout)
        self.assertEqual(p.returncode, 0, "%s failed:\n%s\n%s" % (argv, p.stdout, p.stderr))
        return p.stdout

    def test_help(self):
        for prog in ("main.py", "scan.py", "camera.py"):
            out = self.run_example(prog, "--help")
            self.assertIn("--port", out)
            self.assertIn("--host", out)
            if prog != "main.py":
                self.assertIn("--save", out)

    def test_main_drives_in_a_circle(self):
        out = self.run_example("main.py", "--duration", "3", "--rate", "4")
        rows = [l.split() for l in out.splitlines() if l.strip() and l.split()[0][0].isdigit()]
        self.assertGreaterEqual(len(rows), 6, out)
        thetas = [float(r[3]) for r in rows]
        self.assertNotAlmostEqual(thetas[0], thetas[-1], places=2, msg="the robot turned")
        self.assertRegex(out, r"received \d+ odometry frames, \d+ dropped")

    def test_scan_png(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "scan.png")
            out = self.run_example("scan.py", "--save", path)
            self.assertIn("saved", out)
            w, h = png_size(path)
            self.assertGreaterEqual((w, h), (400, 400))
            self.assertGreater(os.path.getsize(path), 20000, "a plot with points, not a blank")
            self.assert_varied(path)

    def test_camera_png(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "camera.png")
            out = self.run_example("camera.py", "--save", path, "--frames", "5",
                                   "--head-rate", "0.3")
            self.assertRegex(out, r"saved .* \(5 images, [0-9.]+ fps, \d+ dropped\)")
            self.assertGreater(os.path.getsize(path), 20000)
            self.assert_varied(path)

    def test_live_windows_under_xvfb(self):
        if importlib.util.find_spec("tkinter") is None:  # the TkAgg backend needs it
            self.skipTest("tkinter not installed")
        xvfb = shutil.which("xvfb-run")
        if not xvfb:
            self.skipTest("xvfb-run not installed")
        env = dict(os.environ, PLAYAREA_HOST=self.host, PLAYAREA_PORT=str(self.port),
                   MPLBACKEND="TkAgg")
        env.pop("PYTHONPATH", None)
        for prog, what in (("scan.py", "scans"), ("camera.py", "images")):
            p = subprocess.run([xvfb, "-a", sys.executable, "-B", prog, "--duration", "4"],
                               cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, "%s failed:\n%s\n%s" % (prog, p.stdout, p.stderr))
            m = re.search(r"shown (\d+) %s" % what, p.stdout)
            self.assertTrue(m, p.stdout + p.stderr)
            self.assertGreaterEqual(int(m.group(1)), 2, p.stdout)

    def test_no_server_message(self):
        env = dict(os.environ, PLAYAREA_HOST="127.0.0.1", PLAYAREA_PORT="1")
        p = subprocess.run([sys.executable, "-B", "main.py"], cwd=EXAMPLES, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("is the simulator running", p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def assert_varied(self, path):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.image as mpimg
        except ImportError:
            return
        img = mpimg.imread(path)
        colours = {tuple(round(float(c), 2) for c in img[y, x, :3])
                   for y in range(0, img.shape[0], 7) for x in range(0, img.shape[1], 7)}
        self.assertGreater(len(colours), 20, "%s is nearly uniform" % path)


if __name__ == "__main__":
    unittest.main()
