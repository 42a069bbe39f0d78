"""The client's lifecycle against the real stack: robots stopped on close() and at
interpreter exit (unless stop_on_close=False), the playarea.client alias module,
and reconnection that survives 50 pa-netgw kills (issue 39)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import playarea
import playarea.client
from playarea import ConnectionLost, Robot, Sim
from stack import StackTestCase

CLIENT = os.path.join(os.environ.get("PA_SOURCE_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", ".."), "clients", "python")


class StopOnCloseTest(StackTestCase):
    def setUp(self):
        self.sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(self.sim.close)
        self.sim.stop()

    def moving_after(self, close):
        """Command 0.2 m/s, close the client as `close` does, report whether it still drives."""
        close()
        time.sleep(0.3)  # the acceleration limit brakes it in well under this
        p0 = self.sim.get_pose()["pose"]
        time.sleep(0.3)
        p1 = self.sim.get_pose()["pose"]
        return abs(p1[0] - p0[0]) + abs(p1[1] - p0[1]) + abs(p1[2] - p0[2]) > 1e-3

    def test_close_stops(self):
        def run():
            r = Robot(self.host, self.port, timeout=20)
            r.set_speed(0.2, 0.3)
            time.sleep(0.2)
            r.close()
        self.assertFalse(self.moving_after(run), "Robot.close() left the robot driving")

    def test_with_block_stops(self):
        def run():
            with playarea.client.Robot(self.host, self.port, timeout=20) as r:
                r.set_speed(0.2, 0.3)
                time.sleep(0.2)
        self.assertFalse(self.moving_after(run))

    def test_opt_out_keeps_driving(self):
        def run():
            r = Robot(self.host, self.port, timeout=20, stop_on_close=False)
            r.set_speed(0.2, 0.3)
            time.sleep(0.2)
            r.close()
        self.assertTrue(self.moving_after(run), "stop_on_close=False must leave it driving")
        self.sim.stop()

    def test_exit_without_close_stops(self):
        code = textwrap.dedent("""
            import sys, time
            from playarea.client import Robot
            r = Robot(sys.argv[1], int(sys.argv[2]))
            r.set_speed(0.2, 0.3)
            time.sleep(0.2)
            print("exiting without close()")
        """)

        def run():
            env = dict(os.environ, PYTHONPATH=CLIENT)
            p = subprocess.run([sys.executable, "-c", code, self.host, str(self.port)],
                               capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("exiting", p.stdout)
        self.assertFalse(self.moving_after(run), "interpreter exit left the robot driving")

    def test_sim_close_stops(self):
        def run():
            with Sim(self.host, self.port, timeout=20) as s:
                s.set_velocity(v=0.2, w=0.3)
                time.sleep(0.2)
        self.assertFalse(self.moving_after(run), "Sim.close() left the robot driving")

    def test_sim_opt_out(self):
        def run():
            with Sim(self.host, self.port, timeout=20, stop_on_close=False) as s:
                s.set_velocity(v=0.2, w=0.3)
        self.assertTrue(self.moving_after(run))
        self.sim.stop()

    def test_env_without_numpy_says_which_python(self):
        code = "import sys; sys.modules['numpy'] = None; import playarea.env"
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, PYTHONPATH=CLIENT))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("playarea.env needs numpy", p.stderr)
        self.assertIn("/usr/bin/python3", p.stderr)

    def test_alias_module(self):
        self.assertIs(playarea.client.Robot, playarea.Robot)
        self.assertIs(playarea.client.Sim, playarea.Sim)
        self.assertIs(playarea.client.Error, playarea.Error)


class ReconnectKillsTest(StackTestCase):
    # Every SIGKILL is a crash to the launcher: no giving up, and a 1 ms window
    # keeps each restart's backoff at its 10 ms minimum.
    # The front-ends this test does not use are off: a kept port that another
    # process's bind(0) takes during a restart's gap stops the stack by design
    # (docs/netgw.md), and fifty kills gave five ports that gap.
    stack_args = ("--crash_limit", "0", "--crash_window_ms", "1", "--no-render",
                  "--http_port", "0", "--foxglove_port", "0", "--player_port", "0")
    KILLS = int(os.environ.get("PA_RECONNECT_KILLS", "50"))

    def test_survives_many_netgw_kills(self):
        # A short reply timeout: while pa-netgw is stopped the caller's own
        # ping gives up first and drops the connection itself.
        r = Robot(self.host, self.port, timeout=0.3, reconnect=True)
        self.addCleanup(r.close)
        r.subscribe_odom(timeout=20)
        r.set_speed(0.0, 0.2)
        # A caller that keeps using the robot, so its own calls see some of the
        # losses first (the path that left a stale fd in the selector).
        stop = threading.Event()
        calls = {"ok": 0, "lost": 0}

        def busy():
            while not stop.is_set():
                try:
                    r.ping()
                    calls["ok"] += 1
                except (ConnectionLost, TimeoutError, OSError):
                    calls["lost"] += 1
                    time.sleep(0.005)
        # Holds the I/O thread in an odom callback until the caller has timed
        # out: the loss is then the caller's news, not the I/O thread's.
        hold, held = threading.Event(), threading.Event()

        @r.on_odom
        def gate(frame):
            if hold.is_set():
                hold.clear()
                held.set()
                lost, end = calls["lost"], time.monotonic() + 5
                while calls["lost"] == lost and time.monotonic() < end:
                    time.sleep(0.01)
        t = threading.Thread(target=busy, daemon=True)
        t.start()
        self.addCleanup(t.join, 10)
        self.addCleanup(stop.set)
        t0 = time.monotonic()
        for i in range(self.KILLS):
            before = r.reconnects
            if i % 2:
                # Stopped first: the caller's pings time out and drop the
                # connection (and the reconnections the kernel's backlog accepts).
                pid = self.stack.children()["pa-netgw"]
                lost = calls["lost"]
                held.clear()
                hold.set()
                self.assertTrue(held.wait(10), "no odom frame reached the callback")
                os.kill(pid, signal.SIGSTOP)
                self.wait_until(lambda: calls["lost"] >= lost + 2, 30, "a timed-out call")
            self.kill_child("pa-netgw", 30)
            self.wait_until(lambda: r.reconnects > before and r.connected, 30,
                            "reconnection %d" % (i + 1))
            self.assertTrue(r._thread.is_alive(), "the I/O thread died after kill %d" % (i + 1))
            seq = r.wait_odom(timeout=10).seq  # the replayed subscription delivers
            self.assertGreaterEqual(seq, 0)
        stop.set()
        t.join(10)
        elapsed = time.monotonic() - t0
        self.assertGreaterEqual(r.reconnects, self.KILLS)

        def pose():  # the short timeout may drop a slow (sanitizer) reply: ask again
            try:
                return len(r.pose()) == 3
            except (ConnectionLost, TimeoutError):
                return False
        self.wait_until(pose, 30, "a pose after the last reconnection")
        self.assertGreater(calls["lost"], 0, "no call saw a loss: the test missed its path")
        print("%d kills in %.1f s, %d reconnects, calls ok %d lost %d"
              % (self.KILLS, elapsed, r.reconnects, calls["ok"], calls["lost"]))
