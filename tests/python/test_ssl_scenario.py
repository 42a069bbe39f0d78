"""SSL worlds set at run time: set_scenario to "ssl-b" by name and to a
world file with an ssl: section; the SSL ports open when the world gains
its field (the stack started without one) and follow its division."""

import os
import shutil
import socket
import tempfile
import unittest

from playarea import Error, Sim

from stack import StackTestCase
from test_ssl_proto import compile_protos, pb


class SslScenario(StackTestCase):
    stack_args = ("--paused", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0")

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="pa-ssl-scn-")
        cls.addClassCleanup(shutil.rmtree, cls.dir, True)
        compile_protos(cls.dir)
        cls.stack_args = cls.stack_args + ("--data_dir", cls.dir)
        super().setUpClass()

    def control(self, port, cmd):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.addCleanup(s.close)
        s.bind(("127.0.0.1", 0))
        s.settimeout(5)
        s.sendto(cmd.SerializeToString(), ("127.0.0.1", port))
        r = pb["ssl_simulation_control"].SimulatorResponse()
        r.ParseFromString(s.recv(65536))
        return r

    def test_ssl_worlds_at_run_time(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        with self.assertRaises(Error) as cm:
            sim.get_ball()
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")

        # By name: the field, its robots and the ports, open now.
        r = sim.set_scenario("ssl-b")
        self.assertEqual(r["robots"], 12)
        self.assertEqual(sim.get_ball()["division"], "B")
        info = sim.request("get_ssl_info")
        self.assertTrue(info["open"], info)
        self.assertEqual(info["division"], "B")
        self.assertGreater(info["control_port"], 0)
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        cmd.control.teleport_ball.x, cmd.control.teleport_ball.y = 1.5, -1.0
        self.assertEqual(list(self.control(info["control_port"], cmd).errors), [])
        self.assertEqual(sim.get_ball()["position"][:2], [1.5, -1.0])
        # pa-sim restarted by the launcher (its flags name no SSL world)
        # comes back on this field, with the ball where it was.
        self.kill_child("pa-sim")

        def ball():  # a tick of the new pa-sim first (step_n waits for it)
            try:
                sim.step_n(1)
                return sim.get_ball()
            except Error as e:
                if e.code not in ("busy", "sim_unavailable", "timeout"):
                    raise
                return None

        b = self.wait_until(ball, 30, "get_ball after the restart")
        self.assertEqual((b["division"], b["position"][:2]), ("B", [1.5, -1.0]))
        # The field's walls are the map: a teleport beyond them is refused.
        st = sim.get_state(0)
        with self.assertRaises(Error) as cm:
            sim.teleport(0, 3.4, 0, robot=0)
        self.assertEqual(cm.exception.code, "blocked_pose")
        self.assertEqual(sim.get_state(0)["pose"], st["pose"])

        # A world file with an ssl: section: division A, 2 robots a team.
        path = os.path.join(self.dir, "field.world.yaml")
        with open(path, "w") as f:
            f.write("ssl: {division: a, robots: 2}\n")
        r = sim.set_scenario(path)
        self.assertEqual(r["robots"], 4)
        b = sim.get_ball()
        self.assertEqual(b["division"], "A")
        self.assertEqual(b["position"], [0.0, 0.0, 0.0])  # a fresh ball
        names = sorted(x["name"] for x in sim.list_robots()["robots"])
        self.assertEqual(names, ["b0", "b1", "y0", "y1"])
        info2 = sim.request("get_ssl_info")
        self.assertEqual(info2["division"], "A")
        self.assertEqual(info2["control_port"], info["control_port"])  # still open
        cmd.control.teleport_ball.x, cmd.control.teleport_ball.y = 5.5, 4.0  # only in A
        self.assertEqual(list(self.control(info["control_port"], cmd).errors), [])
        self.assertEqual(sim.get_ball()["position"][:2], [5.5, 4.0])

        # Back to a world without a field: the SSL actions are refused again.
        sim.set_scenario(None)
        with self.assertRaises(Error) as cm:
            sim.get_ball()
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")
        # A named scenario (a generated map) after a field: no ball, no
        # field, no vision (issue 38: the ball and 9 x 6 m geometry stayed).
        sim.set_scenario("ssl-b")
        self.assertEqual(sim.get_ball()["division"], "B")
        r = sim.request("set_scenario", {"scenario": "Empty"})
        self.assertEqual(r["width"] * r["resolution"], 12.0)
        with self.assertRaises(Error) as cm:
            sim.get_ball()
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")
        with self.assertRaises(Error) as cm:
            sim.request("get_ssl_info")
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")
        # A bad name changes nothing.
        with self.assertRaises(Error):
            sim.set_scenario(os.path.join(self.dir, "missing.world.yaml"))
        with self.assertRaises(Error) as cm:
            sim.get_ball()
        self.assertEqual(cm.exception.code, "unsupported_control_scheme")


if __name__ == "__main__":
    unittest.main()
