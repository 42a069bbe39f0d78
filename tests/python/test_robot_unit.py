"""Robot's own logic against a scripted server: reply matching, async errors, loss
counters, camera reassembly, callbacks, streams, reconnect and clean shutdown."""

import os
import random
import socket
import threading
import time
import unittest

import playarea
from playarea import ConnectionLost, Error, Robot

from fakeserver import FakeServer, camera_chunks, odom_frame, scan_frame


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def wait_until(pred, timeout=5.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError("%s not met within %.0f s" % (what, timeout))
        time.sleep(0.01)


class RobotUnitTest(unittest.TestCase):
    def setUp(self):
        self.threads0 = threading.active_count()
        self.fds0 = open_fds()
        self.server = FakeServer()
        self.addCleanup(self.server.close)

    def robot(self, **kw):
        r = Robot("127.0.0.1", self.server.port, timeout=5, **kw)
        self.addCleanup(r.close)
        return r

    def test_commands_and_replies(self):
        r = self.robot()
        r.set_speed(0.2, 0.5)
        r.set_head_rate(0.3)
        r.stop()
        self.assertEqual(r.pose(), (1.5, -2.0, 0.25))
        self.assertGreater(r.ping(), 0)
        self.server.wait_for(lambda: "stop" in self.server.lines)
        cmds = [l for l in self.server.lines if l.startswith(("cmd", "stop"))]
        self.assertEqual(cmds, ["cmd 0.2 0.5", "cmd 0.2 0.5 0.3", "stop"])
        with self.assertRaises(ValueError):
            r.set_speed(float("nan"), 0)
        with self.assertRaises(ValueError):
            r.subscribe("lidar")

    def test_reply_errors_raise_with_code(self):
        r = self.robot()
        with self.assertRaises(Error) as cm:
            r.select_robot("nobody")
        self.assertEqual(cm.exception.code, "unknown_robot")
        self.assertIn("nobody", cm.exception.message)
        r.select_robot("bob")  # still usable after an error
        self.assertEqual(r.pose()[0], 1.5)

    def test_async_error_of_a_no_reply_command(self):
        r = self.robot()
        seen = []
        r.on_error(seen.append)
        r.set_speed(1000, 0)  # the server rejects it, asynchronously
        # The next reply-bearing call sorts that err out from its own reply ...
        with self.assertRaises(Error) as cm:
            for _ in range(50):
                r.pose()
                time.sleep(0.05)
        self.assertEqual(cm.exception.code, "invalid_action_shape")
        self.assertEqual([e.code for e in seen], ["invalid_action_shape"])
        # ... and it is raised once only.
        self.assertEqual(r.pose(), (1.5, -2.0, 0.25))

    def test_odom_loss_and_order(self):
        r = self.robot()
        r.subscribe_odom(wait=False)
        self.server.wait_sub("odom")
        self.assertEqual(self.server.subs["odom"][0], "127.0.0.1")
        for s in (1, 2, 3, 6, 5):
            self.server.send("odom", odom_frame(s, t=s * 0.01, x=s))
        wait_until(lambda: r.odom is not None and r.odom.seq == 6 and r.stats("odom")["late"] >= 1,
                   what="frames arrived")
        o = r.odom
        self.assertIsInstance(o, playarea.Odometry)
        self.assertEqual(r.odom.x, 6.0)
        self.assertEqual(r.dropped["odom"], 2)  # 4 and 5 skipped (5 came too late)
        self.assertEqual(r.received["odom"], 4)
        # wait_odom waits for a frame newer than the one at call time.
        t = threading.Timer(0.2, self.server.send, ("odom", odom_frame(7, x=7)))
        t.start()
        self.assertEqual(r.wait_odom(timeout=5).seq, 7)
        t.join()
        with self.assertRaises(TimeoutError):
            r.wait_odom(timeout=0.2)
        with self.assertRaises(RuntimeError):
            r.wait_scan(timeout=0.1)  # not subscribed

    def test_invalid_datagrams_are_counted_not_fatal(self):
        r = self.robot()
        r.subscribe_scan(wait=False)
        self.server.wait_sub("scan")
        self.server.send("scan", b"garbage")
        self.server.send("scan", odom_frame(1))
        self.server.send("scan", scan_frame(4, [1.0, 2.0, 3.0]))
        # The I/O thread may take the frame before wait_scan() starts (which
        # then waits for a newer one), so poll for it instead.
        wait_until(lambda: r.scan is not None, what="scan frame arrived")
        s = r.scan
        self.assertEqual((s.seq, s.ranges), (4, (1.0, 2.0, 3.0)))
        self.assertEqual(r.stats("scan")["invalid"], 2)

    def test_camera_with_loss_reorder_duplicates(self):
        r = self.robot()
        r.subscribe_camera(wait=False)
        self.server.wait_sub("camera")
        w, h = 64, 48
        rnd = random.Random(5)
        images = {s: bytes(rnd.getrandbits(8) for _ in range(w * h * 3)) for s in range(1, 9)}
        got = []
        done = threading.Event()

        def on_cam(img):
            got.append(img)
            if img.seq == 8:
                done.set()

        r.on_camera(on_cam)
        for s in range(1, 9):
            chunks = camera_chunks(s, w, h, images[s], 1000)
            rnd.shuffle(chunks)
            if s in (3, 6):
                chunks.pop(0)  # a lost chunk: that image can never complete
            chunks += chunks[:2]  # duplicates
            for c in chunks:
                self.server.send("camera", c)
            time.sleep(0.01)
        self.assertTrue(done.wait(5), "last image never completed")
        self.assertEqual([i.seq for i in got], [1, 2, 4, 5, 7, 8])
        for img in got:
            self.assertEqual(img.rgb, images[img.seq])
        self.assertEqual(r.dropped["camera"], 2)
        st = r.stats("camera")
        self.assertEqual(st["incomplete"], 2)
        self.assertGreaterEqual(st["duplicates"] + st["late_chunks"], 12)
        self.assertEqual(r.camera.seq, 8)

    def test_stream_iterator_and_unsubscribe(self):
        r = self.robot()
        r.subscribe_odom(wait=False)
        self.server.wait_sub("odom")

        def feed():
            for s in range(10, 15):
                self.server.send("odom", odom_frame(s))
                time.sleep(0.02)

        it = r.odom_stream(timeout=5)
        t = threading.Thread(target=feed)
        t.start()
        seqs = [next(it).seq for _ in range(5)]
        t.join()
        self.assertEqual(seqs, [10, 11, 12, 13, 14])
        it.close()
        port = r.subscriptions["odom"]
        r.unsubscribe("odom")
        self.server.wait_for(lambda: "unsub odom" in self.server.lines)
        self.assertNotIn("odom", r.subscriptions)
        self.assertIsNone(r.odom)
        # The port is closed: binding it again works.
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", port))
        s.close()

    def test_auth_token(self):
        self.server.token = "s3cret"
        r = self.robot(token="s3cret")
        self.assertEqual(r.pose()[0], 1.5)
        self.assertEqual(self.server.lines[0], "auth s3cret")
        with self.assertRaises(Error) as cm:
            Robot("127.0.0.1", self.server.port, token="wrong", timeout=5)
        self.assertEqual(cm.exception.code, "not_authorized")

    def test_server_gone(self):
        r = self.robot()
        r.subscribe_odom(wait=False)
        self.server.wait_sub("odom")
        waiter_err = []

        def waiter():
            try:
                r.wait_odom(timeout=10)
            except Exception as e:  # noqa: BLE001 - the test inspects it
                waiter_err.append(e)

        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.1)
        self.server.drop_connections()
        t.join(10)
        self.assertFalse(t.is_alive())
        self.assertIsInstance(waiter_err[0], ConnectionLost)
        self.assertIsInstance(waiter_err[0], ConnectionError)
        self.assertFalse(r.connected)
        with self.assertRaises(ConnectionLost):
            r.set_speed(0.1, 0)
        with self.assertRaises(ConnectionLost):
            r.pose()

    def test_reconnect_replays_state(self):
        r = self.robot(reconnect=True, robot="bob")
        r.set_speed(0.25, 0.0)
        r.subscribe_odom(wait=False)
        port = self.server.wait_sub("odom")[1]
        # Forget the subscription before the drop: the client may reconnect
        # and subscribe again before this thread runs another line.
        with self.server.cond:
            self.server.subs.clear()
        self.server.drop_connections()
        self.assertEqual(self.server.wait_sub("odom")[1], port)
        self.server.wait_for(lambda: self.server.lines.count("cmd 0.25 0 0") >= 1)
        self.assertEqual(self.server.lines.count("robot bob"), 2)
        self.server.send("odom", odom_frame(1))  # a restarted stack starts seq again
        wait_until(lambda: r.odom is not None, what="odom after reconnect")
        self.assertEqual(r.odom.seq, 1)
        wait_until(lambda: r.connected, what="connected again")
        self.assertEqual(r.reconnects, 1)
        self.assertEqual(r.pose()[0], 1.5)

    def test_no_server(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        with self.assertRaises(ConnectionRefusedError):
            Robot("127.0.0.1", port, timeout=2)
        with self.assertRaises(ConnectionRefusedError):
            playarea.Sim("127.0.0.1", port, timeout=2)

    def test_env_defaults(self):
        old = {k: os.environ.get(k) for k in ("PLAYAREA_HOST", "PLAYAREA_PORT")}
        try:
            os.environ["PLAYAREA_HOST"] = "127.0.0.1"
            os.environ["PLAYAREA_PORT"] = str(self.server.port)
            with Robot() as r:
                self.assertEqual((r.host, r.port), ("127.0.0.1", self.server.port))
            os.environ["PLAYAREA_PORT"] = "nine"
            with self.assertRaisesRegex(ValueError, "PLAYAREA_PORT"):
                Robot()
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_close_leaves_nothing(self):
        for i in range(3):
            with self.robot() as r:
                r.subscribe("odom", wait=False)
                r.subscribe("scan", wait=False)
                r.subscribe("camera", wait=False)
                self.server.wait_sub("camera")
                self.server.send("odom", odom_frame(1))
                wait_until(lambda: r.odom is not None, what="first odom")
            self.server.wait_for(lambda: self.server.lines.count("unsub camera") == i + 1)
            self.assertFalse(r.connected)
            r.close()  # idempotent
            with self.assertRaises(ValueError):
                r.set_speed(0, 0)
        self.server.wait_for(lambda: self.server.lines.count("unsub camera") == 3)
        self.server.close()
        deadline = time.monotonic() + 5
        while threading.active_count() > self.threads0 or open_fds() - self.fds0:
            if time.monotonic() > deadline:
                self.fail("leaked: threads %s, fds %s" % (threading.enumerate(),
                                                          open_fds() - self.fds0))
            time.sleep(0.02)


if __name__ == "__main__":
    unittest.main()
