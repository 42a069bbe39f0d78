"""Screenshots and videos with `playarea --viewer` (issue 38): the viewer's
pa-render serves the spectator's requests when no headless pa-render does
(they answered busy). Xvfb on a display it picks itself; the PNG's pixels
show a visual added just before."""

import os
import shutil
import subprocess
import tempfile
import time
import unittest

from playarea import Sim

from stack import Stack


def start_xvfb():
    xvfb = shutil.which("Xvfb") or "/usr/bin/Xvfb"
    if not os.access(xvfb, os.X_OK):
        raise unittest.SkipTest("Xvfb not installed")
    r, w = os.pipe()
    p = subprocess.Popen([xvfb, "-displayfd", str(w), "-screen", "0", "800x600x24", "-nolisten",
                          "tcp"], pass_fds=[w], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    os.close(w)
    with os.fdopen(r) as f:
        num = f.readline().strip()
    if not num:
        p.kill()
        p.wait()
        raise unittest.SkipTest("Xvfb did not start")
    return p, ":" + num


class ViewerSpectator(unittest.TestCase):
    def setUp(self):
        self.xvfb, display = start_xvfb()
        self.addCleanup(self.xvfb.wait)
        self.addCleanup(self.xvfb.kill)
        self.dir = tempfile.mkdtemp(prefix="pa-viewer-spec-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.stack = Stack("--viewer", "--viewer_width", "320", "--viewer_height", "240",
                           "--data_dir", self.dir, "--no_beacon", env={"DISPLAY": display})
        self.addCleanup(self.stop_stack)
        self.sim = Sim(self.stack.host, self.stack.port, timeout=20)
        self.addCleanup(self.sim.close)

    def stop_stack(self):
        rc = self.stack.stop()
        self.assertFalse(self.stack.report, "sanitizer report from the stack")
        self.assertEqual(rc, 0, self.stack.log_tail())

    def wait_done(self, key, req):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            s = self.sim.request("get_status")[key]
            if s.get("request", 0) >= req and not s.get("pending", True):
                return s
            time.sleep(0.05)
        self.fail("%s %d not done: %s\n%s" % (key, req, s, self.stack.log_tail()))

    def test_screenshot_and_video_with_the_viewer(self):
        m = self.sim.request("get_map_info")
        cx = m["origin"][0] + m["size"][0] / 2
        cy = m["origin"][1] + m["size"][1] / 2
        self.sim.request("set_camera", {"position": [cx, cy - 0.01, 6], "look_at": [cx, cy, 0],
                                        "width": 320, "height": 240})
        self.sim.request("add_visual", {"name": "g", "type": "box", "position": [cx, cy, 1],
                                        "size": [1.5, 1.5, 0.2], "color": [0, 1, 0]})
        # the viewer claims the spectator within a frame or two
        deadline = time.monotonic() + 20
        while True:
            try:
                r = self.sim.request("request_screenshot", {"name": "shot"})
                break
            except Exception as e:  # busy until the viewer has claimed it
                if "busy" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        s = self.wait_done("screenshot", r["request"])
        self.assertTrue(s["ok"], s)
        png = os.path.join(self.dir, "shot.png")
        self.assertTrue(os.path.getsize(png) > 0)
        from PIL import Image  # Debian's python3-pil
        if True:
            img = Image.open(png).convert("RGB")
            self.assertEqual(img.size, (320, 240))
            # the box is lit and fogged as the scene is: green leads by far
            green = sum(1 for p in img.getdata() if p[1] > p[0] + 80 and p[1] > p[2] + 80)
            print("green pixels of the box visual: %d" % green)
            self.assertGreater(green, 50)
        # RaisimServer's requestScreenshot has no name: one from the time
        r = self.sim.request("request_screenshot", {})
        self.assertTrue(r["name"].startswith("screenshot_") and r["name_from_time"], r)
        self.assertEqual(r["path"], os.path.join(self.dir, r["name"] + ".png"))
        self.assertTrue(self.wait_done("screenshot", r["request"])["ok"])
        self.assertTrue(os.path.exists(r["path"]))
        idle = self.sim.request("stop_recording_video")  # none ever: no path
        self.assertEqual((idle["path"], idle["was_recording"]), (None, False))
        r = self.sim.request("start_recording_video", {"name": "v.mp4"})  # the file's name
        self.assertEqual(r["path"], os.path.join(self.dir, "v.mp4"))
        time.sleep(1.0)
        self.sim.request("stop_recording_video")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rec = self.sim.request("get_status")["recording"]
            if rec.get("state") != "recording":
                break
            time.sleep(0.05)
        print("video:", rec)
        self.assertGreater(rec.get("frames", 0), 5, rec)
        mp4 = [f for f in os.listdir(self.dir) if f.startswith("v") and f.endswith(".mp4")]
        self.assertTrue(mp4, os.listdir(self.dir))
        self.assertGreater(os.path.getsize(os.path.join(self.dir, mp4[0])), 1000)


if __name__ == "__main__":
    unittest.main()
