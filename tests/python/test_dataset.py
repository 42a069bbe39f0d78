"""export_dataset as OceanSim sends it, against the real stack (pa-sim, pa-render, pa-netgw):
the files a reply names are exactly the files written, the archive holds them, the PNGs decode
at the camera's size; refused paths change nothing; ticks keep their period during an export."""

import json
import os
import shutil
import socket
import struct
import tarfile
import tempfile
import threading
import time
import unittest
import zlib

from stack import Stack, StackTestCase

HZ = 200.0


class Conn:
    """One JSON-lines connection."""

    def __init__(self, host, port, timeout=90.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.f = self.s.makefile("rb")
        self.n = 0

    def request(self, action, data=None, type_="command"):
        self.n += 1
        msg = {"type": type_, "protocol_version": 2, "request_id": self.n, "action": action}
        if data is not None:
            msg["data"] = data
        self.s.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            line = self.f.readline()
            if not line:
                raise AssertionError("connection closed waiting for %s" % action)
            rep = json.loads(line)
            if rep.get("request_id") == self.n:
                return rep

    def close(self):
        self.f.close()
        self.s.close()


def png_decode(data):
    """(width, height, rows) of an 8-bit RGB PNG, every chunk's CRC and filter checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        crc, = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "bad CRC in %r" % kind
        if kind == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 2), "not 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * 3
    assert len(raw) == h * (stride + 1), "IDAT holds %d bytes, not %dx%d" % (len(raw), w, h)
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b = prev[i]
            c = prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
            else:
                assert f == 0, "filter %d" % f
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def tree(root):
    """Every file and directory under root, relative."""
    out = set()
    for d, dirs, files in os.walk(root):
        for x in dirs + files:
            out.add(os.path.relpath(os.path.join(d, x), root))
    return out


class DatasetTest(StackTestCase):
    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="pa-dataset-")
        cls.addClassCleanup(shutil.rmtree, cls.data_dir, True)  # after the stack stops
        cls.stack_args = ("--data_dir", cls.data_dir, "--robots", "2", "--camera_width", "160",
                          "--camera_height", "120", "--control_hz", str(int(HZ)))
        super().setUpClass()

    def setUp(self):
        self.c = Conn(self.host, self.port)
        self.addCleanup(self.c.close)

    def test_all_options_write_exactly_the_named_files(self):
        samples = []
        stop = threading.Event()

        def watch():  # the tick rate while the export runs, from another connection
            w = Conn(self.host, self.port)
            try:
                while not stop.is_set():
                    d = w.request("get_status", type_="sim_control")["data"]
                    samples.append((time.monotonic(), d["tick"]))
                    time.sleep(0.05)
            finally:
                w.close()

        th = threading.Thread(target=watch)
        th.start()
        try:
            rep = self.c.request("export_dataset", {"export_dir": "runs/r1", "render_image": True,
                                                    "pack_dataset": True, "seconds": 2.0})
        finally:
            stop.set()
            th.join()
        self.assertEqual(rep["status"], "ok", rep)
        d = rep["data"]
        self.assertEqual(d["status"], "exported")
        self.assertEqual(d["export_dir"], "runs/r1")
        self.assertEqual(d["archive"], "runs/r1.tar.gz")
        self.assertEqual(d["ticks"], int(2.0 * HZ))
        self.assertEqual(d["last_tick"] - d["first_tick"] + 1, d["ticks"])
        self.assertGreaterEqual(d["images"], 2, d)  # both robots' cameras, 15 Hz for 2 s
        # exactly the files it names
        root = os.path.join(self.data_dir, "runs", "r1")
        named = set(d["paths"])
        self.assertIn("runs/r1.tar.gz", named)
        self.assertTrue(os.path.isfile(os.path.join(self.data_dir, "runs", "r1.tar.gz")))
        files = {p for p in tree(root) if os.path.isfile(os.path.join(root, p))}
        self.assertEqual({"runs/r1/" + p for p in files}, named - {"runs/r1.tar.gz"})
        self.assertEqual(sorted(os.listdir(os.path.join(self.data_dir, "runs"))),
                         ["r1", "r1.tar.gz"])
        self.assertEqual(len([p for p in files if p.startswith("images/")]), d["images"])
        # the rows: every robot every tick, the manifest says complete
        with open(os.path.join(root, "poses.csv")) as f:
            self.assertEqual(len(f.readlines()), 1 + 2 * d["ticks"])
        with open(os.path.join(root, "dataset.json")) as f:
            man = json.load(f)
        self.assertEqual(man["status"], "complete")
        self.assertEqual({"runs/r1/" + p for p in man["files"]}, named - {"runs/r1.tar.gz"})
        # the archive holds the same files, byte for byte, and the PNGs decode at 160x120
        with tarfile.open(os.path.join(self.data_dir, "runs", "r1.tar.gz"), "r:gz") as t:
            members = {m.name: m for m in t.getmembers()}
            self.assertEqual({n for n, m in members.items() if m.isfile()},
                             {"r1/" + p for p in files})
            self.assertIn("r1/images", {n.rstrip("/") for n, m in members.items() if m.isdir()})
            frames = {}
            for line in t.extractfile("r1/frames.csv").read().decode().splitlines()[1:]:
                v = line.split(",")
                frames[v[0]] = (int(v[1]), int(v[3]), int(v[9]), int(v[10]))
            self.assertEqual(set(frames), {p for p in files if p.startswith("images/")})
            robots = set()
            for name, (robot, tick, w, h) in frames.items():
                data = t.extractfile("r1/" + name).read()
                with open(os.path.join(root, name), "rb") as f:
                    self.assertEqual(f.read(), data)
                self.assertEqual((w, h), (160, 120))
                pw, ph, rows = png_decode(data)
                self.assertEqual((pw, ph), (160, 120))
                self.assertGreater(len(set(rows)), 1, "%s is one flat colour" % name)
                self.assertTrue(d["first_tick"] <= tick <= d["last_tick"])
                robots.add(robot)
            self.assertEqual(robots, {0, 1})
        # ticks kept their period while it recorded, wrote PNGs and packed
        window = [s for s in samples if s[1] >= d["first_tick"]]
        self.assertGreaterEqual(len(window), 10, samples)
        (t0, k0), (t1, k1) = window[0], window[-1]
        rate = (k1 - k0) / (t1 - t0)
        self.assertGreater(rate, 0.8 * HZ, "%.1f ticks/s during the export" % rate)

    def test_agents_are_recorded(self):
        rep = self.c.request("spawn_agent", {"name": "walker", "behaviour": "waypoints",
                                             "pose": [1.0, -1.0, 0.0], "speed": 0.5,
                                             "waypoints": [[1.6, -1.0], [1.0, -1.0]]})
        self.assertEqual(rep["status"], "ok", rep)
        self.addCleanup(self.c.request, "remove_agent", {"name": "walker"})
        rep = self.c.request("export_dataset", {"export_dir": "agentruns/a1", "seconds": 0.5})
        self.assertEqual(rep["status"], "ok", rep)
        d = rep["data"]
        self.assertIn("agentruns/a1/agents.csv", d["paths"])
        with open(os.path.join(self.data_dir, "agentruns", "a1", "agents.csv")) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "tick,sim_time,slot,name,behaviour,x,y,theta,vx,vy")
        rows = [ln.split(",") for ln in lines[1:]]
        self.assertEqual(len(rows), d["ticks"])  # one agent, every tick
        self.assertEqual({r[3] for r in rows}, {'"walker"'})
        self.assertEqual({r[4] for r in rows}, {"waypoints"})
        ticks = [int(r[0]) for r in rows]
        self.assertEqual(ticks, list(range(d["first_tick"], d["last_tick"] + 1)))
        xs = [float(r[5]) for r in rows]
        self.assertGreater(max(xs) - min(xs), 0.1, "the agent did not move: %s" % xs[:5])
        # its velocity is what its x does from one tick to the next (0.5 m/s along x)
        for a, b in zip(rows, rows[1:]):
            if float(b[8]) != 0.0:
                self.assertAlmostEqual((float(b[5]) - float(a[5])) * HZ, float(b[8]), delta=1e-6)
        self.assertAlmostEqual(max(abs(float(r[8])) for r in rows), 0.5, places=9)
        with open(os.path.join(self.data_dir, "agentruns", "a1", "dataset.json")) as f:
            self.assertEqual(json.load(f)["agent_rows"], d["ticks"])

    def test_refused_paths_change_nothing(self):
        os.makedirs(os.path.join(self.data_dir, "full"), exist_ok=True)
        with open(os.path.join(self.data_dir, "full", "keep.txt"), "w") as f:
            f.write("x")
        with open(os.path.join(self.data_dir, "taken.tar.gz"), "w") as f:
            f.write("x")
        outside = tempfile.mkdtemp(prefix="pa-dataset-out-")
        self.addCleanup(shutil.rmtree, outside, True)
        before, before_out = tree(self.data_dir), tree(outside)
        cases = [({"export_dir": "../escape"}, "forbidden"),
                 ({"export_dir": "a/../../escape"}, "forbidden"),
                 ({"export_dir": os.path.join(outside, "abs")}, outside),
                 ({"export_dir": "full"}, "full"),
                 ({"export_dir": "taken", "pack_dataset": True}, "taken.tar.gz"),
                 ({"export_dir": ".."}, ".."),
                 ({"export_dir": "x", "format": "zip"}, "data.format"),
                 ({"export_dir": "x", "render_image": "yes"}, "render_image"),
                 ({"export_dir": "x", "name": "y"}, "not both"),
                 ({"export_dir": "x", "robot": 0}, "render_image")]
        for data, why in cases:
            rep = self.c.request("export_dataset", data)
            self.assertEqual(rep["status"], "error", (data, rep))
            self.assertIn(rep["error"]["code"], ("invalid_message", "invalid_action_shape"),
                          (data, rep))
            self.assertIn(why, rep["error"]["message"], (data, rep))
        self.assertEqual(tree(self.data_dir), before)
        self.assertEqual(tree(outside), before_out)
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(self.data_dir), "escape")))


class NoRenderTest(unittest.TestCase):
    """Without pa-render, render_image is an error by name; --dataset_dir is created."""

    def test_no_render_and_missing_dataset_dir(self):
        tmp = tempfile.mkdtemp(prefix="pa-dataset-nr-")
        self.addCleanup(shutil.rmtree, tmp, True)
        ds = os.path.join(tmp, "missing", "deeper")
        stack = Stack("--no_render", "--data_dir", tmp, "--dataset_dir", ds)
        self.addCleanup(stack.stop)
        c = Conn(stack.host, stack.port)
        self.addCleanup(c.close)
        rep = c.request("export_dataset", {"export_dir": "r", "render_image": True})
        self.assertEqual(rep["status"], "error", rep)
        self.assertEqual(rep["error"]["code"], "invalid_message")
        self.assertIn("pa-render is not running", rep["error"]["message"])
        self.assertEqual(os.listdir(tmp), [])  # refused: nothing created
        # the first form under a --dataset_dir that did not exist: created
        rep = c.request("export_dataset", {"name": "n1", "ticks": 5, "wait": True,
                                           "pack_dataset": True})
        self.assertEqual(rep["status"], "ok", rep)
        self.assertEqual(rep["data"]["under"], "dataset_dir")
        self.assertEqual(rep["data"]["archive"], "n1.tar.gz")
        for p in rep["data"]["paths"]:
            self.assertTrue(os.path.isfile(os.path.join(ds, p)), p)
        self.assertEqual(sorted(os.listdir(os.path.join(ds, "n1"))),
                         sorted(os.path.basename(p) for p in rep["data"]["paths"][:-1]))
        # an archive of that name exists: refused, nothing created or overwritten
        with open(os.path.join(ds, "n2.tar.gz"), "w") as f:
            f.write("mine")
        rep = c.request("export_dataset", {"name": "n2", "ticks": 5, "pack_dataset": True})
        self.assertEqual(rep["error"]["code"], "invalid_message", rep)
        self.assertIn("n2.tar.gz exists", rep["error"]["message"])
        self.assertEqual(sorted(os.listdir(ds)), ["n1", "n1.tar.gz", "n2.tar.gz"])
        with open(os.path.join(ds, "n2.tar.gz")) as f:
            self.assertEqual(f.read(), "mine")
        # no export_dir at all (OceanSim's is optional): dataset_<first tick> under --data_dir
        rep = c.request("export_dataset", {"ticks": 3})
        self.assertEqual(rep["status"], "ok", rep)
        d = rep["data"]
        self.assertEqual(d["export_dir"], "dataset_%d" % d["first_tick"])
        self.assertEqual({d["export_dir"] + "/" + p
                          for p in os.listdir(os.path.join(tmp, d["export_dir"]))},
                         set(d["paths"]))
        c.close()
        self.assertEqual(stack.stop(), 0)
        self.assertEqual(stack.report, "")


if __name__ == "__main__":
    unittest.main()
