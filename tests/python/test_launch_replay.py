"""`playarea replay FILE --instance NAME` (issue 39: --instance was refused, and
the sim stayed paused after the verdict)."""

import os
import shutil
import subprocess
import tempfile

from playarea import Sim
from stack import StackTestCase, bin_dir


class ReplayInstanceTest(StackTestCase):
    data_dir = tempfile.mkdtemp(prefix="pa-replay-")
    stack_args = ("--no-render", "--data_dir", data_dir)

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        shutil.rmtree(cls.data_dir, ignore_errors=True)

    def replay(self, *args):
        return subprocess.run([os.path.join(bin_dir(), "playarea"), "replay"] + list(args),
                              capture_output=True, text=True, timeout=120)

    def record(self, sim, name):
        sim.pause()
        sim.request("record_mcap", {"path": name})
        sim.reset()
        sim.step(v=0.3, w=0.2, steps=10)
        sim.request("stop_record_mcap")

    def test_replay_by_instance_resumes(self):
        with Sim(self.host, self.port, timeout=20) as sim:
            self.record(sim, "ep1.mcap")
            sim.resume()
            r = self.replay("ep1.mcap", "--instance", self.stack.instance)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("match", r.stdout)
            self.assertIn("resumed", r.stdout)
            self.assertFalse(sim.get_status()["paused"], "replay left the sim paused")
            # --keep_paused leaves it paused; a paused sim stays paused.
            r = self.replay("ep1.mcap", "--instance", self.stack.instance, "--keep_paused")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertTrue(sim.get_status()["paused"])
            r = self.replay("ep1.mcap", "--tcp_port", str(self.port))
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertNotIn("resumed", r.stdout)
            self.assertTrue(sim.get_status()["paused"])
            sim.resume()

    def test_replay_bad_selection(self):
        r = self.replay("ep1.mcap", "--instance", "no-such-instance-x")
        self.assertEqual(r.returncode, 78, r.stderr)
        self.assertIn("no instance 'no-such-instance-x'", r.stderr)
        r = self.replay("ep1.mcap", "--instance", self.stack.instance, "--tcp_port", "1")
        self.assertEqual(r.returncode, 78)
        self.assertIn("give one", r.stderr)
