"""Frame decoding, camera reassembly and loss counting, fed with real datagrams over UDP."""

import importlib.util
import math
import os
import random
import socket
import struct
import unittest

from playarea import (CameraAssembler, FrameError, Image, Odometry, Scan, SeqTracker,
                      decode_camera_chunk, decode_odom, decode_scan)
from playarea.frames import encode_png, seq_delta

from fakeserver import camera_chunks, odom_frame, scan_frame


class UdpPair:
    """A sender and a receiver socket on 127.0.0.1: datagrams cross the real kernel path."""

    def __init__(self):
        self.rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.rx.bind(("127.0.0.1", 0))
        self.rx.settimeout(5)
        self.tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def roundtrip(self, datagrams):
        out = []
        for d in datagrams:
            self.tx.sendto(d, self.rx.getsockname())
            out.append(self.rx.recv(65536))
        return out

    def close(self):
        self.rx.close()
        self.tx.close()


def image_bytes(w, h, seed):
    rnd = random.Random(seed)
    return bytes(rnd.getrandbits(8) for _ in range(w * h * 3))


class FramesTest(unittest.TestCase):
    def setUp(self):
        self.udp = UdpPair()

    def tearDown(self):
        self.udp.close()

    def test_odom_layout(self):
        (d,) = self.udp.roundtrip([odom_frame(7, 1.25, 1.0, -2.0, 0.5, 0.2, -0.1)])
        self.assertEqual(len(d), 36)
        self.assertEqual(d[:4], b"ODM1")
        self.assertEqual(struct.unpack_from("<I", d, 4)[0], 7)
        o = decode_odom(d)
        self.assertIsInstance(o, Odometry)
        self.assertEqual((o.seq, o.t, o.x, o.y), (7, 1.25, 1.0, -2.0))
        self.assertAlmostEqual(o.theta, 0.5, places=6)
        self.assertAlmostEqual(o.v, 0.2, places=6)
        self.assertAlmostEqual(o.w, -0.1, places=6)

    def test_odom_rejects_bad(self):
        good = odom_frame(1)
        for bad in (good[:35], good + b"\0", b"ODM2" + good[4:], b""):
            with self.assertRaises(FrameError):
                decode_odom(bad)

    def test_scan_layout_and_points(self):
        ranges = [1.0, 12.0, 2.0, float("inf")]
        (d,) = self.udp.roundtrip([scan_frame(3, ranges, t=0.5, amin=0.0, ainc=math.pi / 2)])
        self.assertEqual(len(d), 36 + 16)
        s = decode_scan(d)
        self.assertIsInstance(s, Scan)
        self.assertEqual((s.seq, s.t, len(s)), (3, 0.5, 4))
        self.assertEqual(s.ranges[:3], (1.0, 12.0, 2.0))
        pts = s.points()  # range_max (12) and inf are no returns
        self.assertEqual(len(pts), 2)
        self.assertAlmostEqual(pts[0][0], 1.0, places=6)
        self.assertAlmostEqual(pts[0][1], 0.0, places=6)
        self.assertAlmostEqual(pts[1][0], -2.0, places=5)
        self.assertAlmostEqual(pts[1][1], 0.0, places=5)
        self.assertAlmostEqual(s.angles()[3], 3 * math.pi / 2, places=5)

    def test_scan_rejects_bad(self):
        good = scan_frame(1, [1.0, 2.0])
        for bad in (good[:-1], good + b"\0\0\0\0", b"SCN0" + good[4:], good[:20]):
            with self.assertRaises(FrameError):
                decode_scan(bad)

    def test_camera_in_order(self):
        w, h = 40, 30
        rgb = image_bytes(w, h, 1)
        dgs = self.udp.roundtrip(camera_chunks(5, w, h, rgb, chunk=1000))
        self.assertEqual(len(dgs), 4)
        a = CameraAssembler()
        results = [a.feed(d) for d in dgs]
        self.assertEqual(results[:3], [None, None, None])
        img = results[3]
        self.assertIsInstance(img, Image)
        self.assertEqual((img.width, img.height, img.seq), (w, h, 5))
        self.assertEqual(img.rgb, rgb)
        self.assertEqual(img.pixel(1, 0), tuple(rgb[3:6]))
        self.assertEqual(a.dropped, 0)

    def test_camera_reordered_duplicated(self):
        w, h = 50, 20
        rgb = image_bytes(w, h, 2)
        chunks = camera_chunks(9, w, h, rgb, chunk=512)
        order = chunks[::-1] + chunks[:3]  # reversed, then duplicates of the first three
        a = CameraAssembler()
        done = [img for img in map(a.feed, self.udp.roundtrip(order)) if img is not None]
        self.assertEqual(len(done), 1)
        self.assertEqual(done[0].rgb, rgb)
        self.assertEqual(a.late_chunks, 3)  # the image was already delivered
        # Duplicates while the image is still incomplete are counted as such.
        b = CameraAssembler()
        for d in [chunks[0], chunks[0], chunks[1]]:
            self.assertIsNone(b.feed(d))
        self.assertEqual(b.duplicates, 1)

    def test_camera_loss_drops_incomplete_and_counts(self):
        w, h = 32, 32
        imgs = {s: image_bytes(w, h, s) for s in range(1, 6)}
        a = CameraAssembler()
        got = []
        for s in range(1, 6):
            chunks = camera_chunks(s, w, h, imgs[s], chunk=700)
            if s in (2, 4):
                chunks = chunks[:-1]  # last chunk lost: image never completes
            for d in self.udp.roundtrip(chunks):
                img = a.feed(d)
                if img is not None:
                    got.append(img)
        self.assertEqual([i.seq for i in got], [1, 3, 5])
        for i in got:
            self.assertEqual(i.rgb, imgs[i.seq])
        self.assertEqual(a.dropped, 2)
        self.assertEqual(a.incomplete, 2)
        self.assertEqual(len(a.pending), 0)

    def test_camera_interleaved_images(self):
        w, h = 30, 10
        a_rgb, b_rgb = image_bytes(w, h, 10), image_bytes(w, h, 11)
        ca, cb = camera_chunks(10, w, h, a_rgb, 256), camera_chunks(11, w, h, b_rgb, 256)
        mixed = [c for pair in zip(ca, cb) for c in pair]
        asm = CameraAssembler()
        got = [img for img in map(asm.feed, self.udp.roundtrip(mixed)) if img is not None]
        self.assertEqual([(i.seq, i.rgb) for i in got], [(10, a_rgb), (11, b_rgb)])

    def test_camera_pending_is_bounded(self):
        w, h = 20, 20
        asm = CameraAssembler(max_pending=3)
        for s in range(100):  # only the first chunk of each image ever arrives
            asm.feed(camera_chunks(s, w, h, image_bytes(w, h, 0), 300)[0])
            self.assertLessEqual(len(asm.pending), 3)
        self.assertEqual(asm.incomplete, 97)

    def test_camera_rejects_bad(self):
        ok = camera_chunks(1, 4, 4, bytes(48), 48)[0]
        head = list(struct.unpack_from("<4sIHHIIHH", ok))

        def mk(**kw):
            f = dict(zip(["magic", "seq", "w", "h", "size", "off", "idx", "cnt"], head))
            f.update(kw)
            return struct.pack("<4sIHHIIHH", *f.values()) + ok[24:]

        for bad in (ok[:10], mk(magic=b"CAM2"), mk(size=47), mk(off=1), mk(idx=1),
                    mk(cnt=0), mk(w=60000, h=60000, size=(60000 * 60000 * 3) & 0xFFFFFFFF)):
            with self.assertRaises(FrameError):
                decode_camera_chunk(bad)
        with self.assertRaises(FrameError):
            decode_camera_chunk(ok[:24])  # no payload

    def test_camera_inconsistent_chunks_never_complete_wrongly(self):
        w, h = 10, 10
        chunks = camera_chunks(1, w, h, bytes(300), 100)
        # Same seq, but the second chunk claims to be at offset 0 again: a hole remains.
        forged = bytearray(chunks[1])
        struct.pack_into("<I", forged, 16, 0)
        asm = CameraAssembler()
        for d in (chunks[0], bytes(forged), chunks[2]):
            self.assertIsNone(asm.feed(d))
        self.assertEqual(asm.invalid, 1)

    def test_seq_tracker(self):
        t = SeqTracker()
        accepted = [s for s in (1, 2, 5, 4, 5, 6, 10) if t.accept(s)]
        self.assertEqual(accepted, [1, 2, 5, 6, 10])
        self.assertEqual((t.received, t.dropped, t.late), (5, 2 + 3, 2))
        w = SeqTracker()  # uint32 wrap-around is a step of one, not a jump back
        self.assertTrue(w.accept(0xFFFFFFFF))
        self.assertTrue(w.accept(0))
        self.assertEqual(w.dropped, 0)
        self.assertEqual(seq_delta(0, 0xFFFFFFFF), 1)
        self.assertEqual(seq_delta(0xFFFFFFFF, 0), -1)

    def test_png_and_ppm(self):
        img = Image(3, 2, bytes(range(18)), 1)
        png = img.to_png()
        self.assertTrue(png.startswith(b"\x89PNG\r\n\x1a\n"))
        self.assertEqual(struct.unpack(">II", png[16:24]), (3, 2))
        self.assertEqual(img.to_ppm(), b"P6\n3 2\n255\n" + bytes(range(18)))
        with self.assertRaises(ValueError):
            encode_png(3, 2, b"\0")
        if importlib.util.find_spec("numpy") is None:
            return
        self.assertEqual(img.as_numpy().shape, (2, 3, 3))
        self.assertEqual(int(img.as_numpy()[1, 2, 2]), 17)

    def test_png_decodes_with_matplotlib(self):
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.image as mpimg
        except ImportError:
            self.skipTest("matplotlib not installed")
        rgb = image_bytes(7, 5, 3)
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "pa-test-%d.png" % os.getpid())
        try:
            Image(7, 5, rgb).save(path)
            arr = mpimg.imread(path)
            self.assertEqual(arr.shape, (5, 7, 3))
            self.assertEqual(round(float(arr[4, 6, 1]) * 255), rgb[(4 * 7 + 6) * 3 + 1])
        finally:
            if os.path.exists(path):
                os.unlink(path)


if __name__ == "__main__":
    unittest.main()
