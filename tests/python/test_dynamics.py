"""The Python client's force and agent calls against the real stack."""

import unittest

from playarea import Error, Sim

from stack import StackTestCase


class DynamicsTest(StackTestCase):
    def sim(self):
        sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(sim.close)
        sim.pause()
        sim.reset()
        return sim

    def test_force_step(self):
        sim = self.sim()
        with self.assertRaises(Error) as e:  # kinematic by default
            sim.step(force=[0, 10, 0], steps=5)
        self.assertEqual(e.exception.code, "unsupported_control_scheme")
        sim.set_property("dynamics", "dynamic")
        y0 = sim.get_state()["pose"][1]
        st = sim.step(force=[0, 10, 0], steps=20)  # no velocities sent with it
        self.assertGreater(st["pose"][1], y0)
        with self.assertRaises(Error) as e:
            sim.set_force([0, 10, 5])
        self.assertEqual(e.exception.code, "unsupported_control_scheme")
        self.assertIn("fz", str(e.exception))
        sim.set_body_velocity([0, 0.3, 0, 0, 0, 0])
        sim.step_n(200)  # step() would send its own v = 0
        st = sim.get_state()
        self.assertAlmostEqual(st["twist"][0], 0.3, places=6)
        sim.apply_torque(1.0, seconds=0.1)
        sim.reset()

    def test_agents(self):
        sim = self.sim()
        a = sim.spawn_agent("pedestrian", (1.0, -1.0, 0.0), name="ped", goal=[1.5, -1.0])
        self.assertIn("agent", a)
        sim.step_n(40)
        agents = sim.get_agents()
        self.assertEqual(agents["count"], 1)
        self.assertEqual(agents["agents"][0]["behaviour"], "pedestrian")
        self.assertGreater(agents["agents"][0]["pose"][0], 1.0)
        sim.move_agent("ped", speed=0.2)
        with self.assertRaises(Error) as e:
            sim.remove_agent("nobody")
        self.assertEqual(e.exception.code, "unknown_agent")
        self.assertEqual(sim.clear_agents()["removed"], 1)


if __name__ == "__main__":
    unittest.main()
