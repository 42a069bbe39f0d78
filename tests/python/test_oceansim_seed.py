"""Every example of OceanSim's JSON protocol v2, as its users send it, to a stack started as
docs/oceansim.md says; each answer checked as the protocol describes it.

The examples: the two complete requests of the protocol text (its wire format and its batch)
and a request per action it names, with the payload it gives (the scenario's verbatim, the
placeholders [fx, fy, fz] filled with its own batch's 100 N). Where the protocol text is on
this machine (PA_SEED_DIR, or ../shared/seeds beside the checkout) the test reads it and fails
when an action or complete request there is missing here, so the list follows the text."""

import json
import math
import os
import re
import shutil
import socket
import struct
import tempfile
import time
import unittest

from stack import StackTestCase

SOURCE = os.environ.get("PA_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SEED_NAME = "oceansim-json-protocol-v2.txt"

# The protocol text's two complete requests (its "Wire format" and "Batch requests").
WIRE = {"type": "command", "protocol_version": 2, "request_id": "run-001", "action": "get_state"}
BATCH = {"type": "batch", "protocol_version": 2, "request_id": "batch-001",
         "requests": [{"type": "command", "action": "get_state"},
                      {"type": "command", "action": "set_force", "data": {"force": [0, 100, 0]}}]}
FORCE = [0, 100, 0]  # the batch's own force, for the [fx, fy, fz] placeholders


def seed_path():
    cands = [os.environ.get("PA_SEED_DIR", "")]
    for up in ("..", os.path.join("..", "..")):
        cands.append(os.path.join(SOURCE, up, "shared", "seeds"))
    for d in cands:
        p = os.path.join(d, SEED_NAME) if d else ""
        if p and os.path.isfile(p):
            return p
    return None


def seed_examples(text):
    """(actions by type, complete JSON requests, data examples) of the protocol text."""
    actions = {}
    table = text.split("Action summary", 1)[1].split("Command details", 1)[0]
    for line in table.splitlines():
        cols = line.split("\t")
        if len(cols) == 3 and cols[1] in ("command", "sim_control"):
            for name in cols[0].split(","):
                actions[name.strip()] = cols[1]
    blocks = [json.loads(m) for m in re.findall(r"^\{\n.*?^\}$", text, re.M | re.S)]
    datas = []
    for m in re.finditer(r"data – (\{.*\})\s*$", text, re.M):
        try:
            datas.append(json.loads(m.group(1)))
        except ValueError:
            pass  # a placeholder ({"force": [fx, fy, fz]}): filled in below
    return actions, blocks, datas


def docs_start_args(data_dir):
    """The flags docs/oceansim.md starts the stack with (its `playarea ...` line)."""
    with open(os.path.join(SOURCE, "docs", "oceansim.md")) as f:
        for line in f:
            if line.startswith("playarea --"):  # the code block's command
                args = line.split()[1:]
                break
        else:
            raise AssertionError("docs/oceansim.md has no `playarea ...` line")
    if "--data_dir" in args:
        args[args.index("--data_dir") + 1] = data_dir
    return args


class Conn:
    """One JSON-lines connection; send() writes a request object or a raw line."""

    def __init__(self, host, port):
        self.s = socket.create_connection((host, port), timeout=90)
        self.f = self.s.makefile("rb")

    def send(self, req):
        line = req if isinstance(req, bytes) else json.dumps(req).encode()
        self.s.sendall(line + b"\n")
        rep = self.f.readline()
        if not rep:
            raise AssertionError("connection closed after %r" % line[:200])
        return json.loads(rep)

    def close(self):
        self.f.close()
        self.s.close()


class OceanSimSeedTest(StackTestCase):
    @classmethod
    def setUpClass(cls):
        cls.data_dir = tempfile.mkdtemp(prefix="pa-oceansim-")
        cls.addClassCleanup(shutil.rmtree, cls.data_dir, True)
        cls.stack_args = tuple(docs_start_args(cls.data_dir))
        super().setUpClass()

    def setUp(self):
        self.c = Conn(self.host, self.port)
        self.addCleanup(self.c.close)
        # each test on the open 12 x 12 m room, the robot at its start facing x
        self.cmd("set_scenario", {"scenario": "Empty", "seed": 0})
        self.cmd("reset", t="sim_control")  # no held force or thrusters
        self.cmd("set_pose", {"robot": 0, "pose": [0, 0, 0]})
        self.cmd("resume", t="sim_control")

    def cmd(self, action, data=None, t="command", ok=True):
        req = {"type": t, "protocol_version": 2, "action": action}
        if data is not None:
            req["data"] = data
        rep = self.c.send(req)
        if ok:
            self.assertEqual((rep["status"], rep["success"]), ("ok", True), (req, rep))
        return rep

    def err(self, req, code):
        rep = self.c.send(req)
        self.assertEqual(rep["type"], "error", rep)
        self.assertEqual((rep["status"], rep["success"]), ("error", False), rep)
        self.assertEqual(rep["error"]["code"], code, rep)
        return rep["error"]["message"]

    def check_state(self, rep, action):
        """A `state` envelope whose data holds OceanSim's state fields and sensors."""
        self.assertEqual(rep["type"], "state", rep)
        self.assertEqual(rep["protocol_version"], 2)
        self.assertEqual(rep["action"], action)
        self.assertIsInstance(rep["sim_time"], float)
        d = rep["data"]
        for k in ("position", "velocity", "depth", "speed", "heading_deg", "sim_time", "sensors"):
            self.assertIn(k, d, "%s: state without %s" % (action, k))
        self.assertEqual(len(d["velocity"]), 3)
        self.assertEqual(d["velocity"][2], 0.0)
        self.assertAlmostEqual(d["speed"], math.hypot(*d["velocity"]), places=9)
        self.assertEqual(d["depth"], 0.0)
        self.assertAlmostEqual(d["heading_deg"], math.degrees(d["pose"][2]), places=9)
        self.assertIn("scan", d["sensors"])
        return d

    # ---- the protocol text itself ------------------------------------------------------

    def test_examples_follow_the_protocol_text(self):
        p = seed_path()
        if not p:
            self.skipTest("the OceanSim v2 protocol text is not on this machine (PA_SEED_DIR)")
        with open(p, encoding="utf-8") as f:
            actions, blocks, datas = seed_examples(f.read())
        self.assertEqual(blocks, [WIRE, BATCH], "the text's complete requests changed")
        self.assertIn({"scenario": "NarrowMap", "seed": 0}, datas)
        self.assertEqual(set(actions), set(ACTIONS), "actions the text names vs this test's")
        for name, t in actions.items():
            self.assertEqual(ACTIONS[name][0], t, name)

    def test_every_named_action_answers(self):
        """Each action of the summary, sent with its type and the text's payload, answers ok
        with the envelope the text gives it."""
        for name, (t, data, kind) in ACTIONS.items():
            with self.subTest(action=name):
                rep = self.cmd(name, data() if callable(data) else data, t=t)
                self.assertEqual(rep["type"], kind, rep)
                self.assertEqual(rep["action"], name)
                if name == "get_sensors":  # "a state response whose data contains sensors"
                    self.assertIn("scan", rep["data"]["sensors"])
                elif kind == "state":
                    self.check_state(rep, name)
        self.cmd("clear_agents")

    # ---- each command as described -----------------------------------------------------

    def test_wire_format_get_state(self):
        rep = self.c.send(WIRE)
        self.assertEqual(rep["request_id"], "run-001")
        self.assertEqual((rep["status"], rep["success"]), ("ok", True))
        d = self.check_state(rep, "get_state")
        self.assertEqual(d["position"], d["pose"][:2])

    def test_get_sensors_data_contains_sensors(self):
        self.cmd("step_n", {"steps": 40}, t="sim_control")  # past the first scan
        rep = self.cmd("get_sensors")
        self.assertEqual(rep["type"], "state")
        s = rep["data"]["sensors"]["scan"]
        self.assertEqual(len(s["ranges"]), 360)
        self.assertEqual(rep["data"]["scan"], s)

    def test_forces_move_the_body_and_velocity_tells_the_truth(self):
        """set_force [0, 100, 0] (world y) and step {force}: the body moves along world y;
        velocity is that motion although the robot faces x (it slides sideways)."""
        self.cmd("pause", t="sim_control")
        st0 = self.cmd("get_state")["data"]
        self.assertEqual(st0["pose"][2], 0.0)  # faces world x
        rep = self.cmd("set_force", {"force": FORCE})
        self.assertEqual(rep["type"], "response")
        rep = self.cmd("step", {"force": FORCE})
        self.check_state(rep, "step")
        self.cmd("step_n", {"steps": 19}, t="sim_control")
        st1 = self.cmd("get_state")["data"]
        dy = st1["pose"][1] - st0["pose"][1]
        self.assertGreater(dy, 0.01, st1)
        self.assertAlmostEqual(st1["pose"][0], st0["pose"][0], places=9)
        vx, vy, vz = st1["velocity"]
        self.assertGreater(vy, 0.5)  # 100 N on 10 kg for 0.1 s, less damping
        self.assertAlmostEqual(vx, 0.0, places=9)
        self.assertAlmostEqual(st1["twist"][1], vy, places=9)  # to its left, in the body
        self.assertAlmostEqual(st1["twist"][0], 0.0, places=9)
        self.assertAlmostEqual(st1["speed"], vy, places=9)
        # the world velocity is what the pose does over a tick
        p0 = st1["pose"]
        st2 = self.cmd("step", {"force": FORCE})["data"]
        dt = st2["sim_time"] - st1["sim_time"]
        self.assertAlmostEqual((st2["pose"][1] - p0[1]) / dt,
                               (st1["velocity"][1] + st2["velocity"][1]) / 2, delta=0.01)
        # step_batch's robots say the same
        sb = self.cmd("step_batch", {"robots": [0], "steps": 1})["data"]["robots"][0]
        self.assertGreater(sb["velocity"][1], st2["velocity"][1])
        self.assertAlmostEqual(sb["velocity"][0], 0.0, places=9)
        self.assertAlmostEqual(sb["twist"][1], sb["velocity"][1], places=9)

    def test_body_frame_force_and_thrusters(self):
        self.cmd("pause", t="sim_control")
        self.cmd("set_force_body", {"force": FORCE})  # y ahead: forward along world x
        st = self.cmd("step", {"steps": 20})["data"]
        self.assertGreater(st["velocity"][0], 0.5, st)
        self.assertAlmostEqual(st["velocity"][1], 0.0, places=6)
        self.cmd("reset", t="sim_control")
        self.cmd("pause", t="sim_control")
        rep = self.cmd("step", {"thrusters": {"port": 1.0, "starboard": 0.2}})
        self.check_state(rep, "step")
        st = self.cmd("step", {"steps": 40})["data"]
        self.assertGreater(st["twist"][0], 0.1, st)  # both push ahead
        self.assertLess(st["twist"][2], 0.0, st)  # port harder: turns right
        # refused by name, nothing changes
        msg = self.err({"type": "command", "action": "set_thrusters", "data": {"thrusters": {}}},
                       "invalid_message")
        self.assertIn("empty", msg)
        msg = self.err({"type": "command", "action": "set_thrusters",
                        "data": {"thrusters": {"bow": 1.0}}}, "invalid_message")
        self.assertIn("bow", msg)
        self.assertIn("port", msg)

    def test_planar_impossible_components(self):
        """Zeros pass; a component the plane cannot do is refused by name; nothing changes."""
        self.cmd("set_body_wrench", {"wrench": [0, 100, 0, 0, 0, 1]})
        msg = self.err({"type": "command", "action": "set_force", "data": {"force": [0, 100, 5]}},
                       "unsupported_control_scheme")
        self.assertIn("fz", msg)
        self.err({"type": "command", "action": "set_force", "data": {"force": [0, "a", 0]}},
                 "invalid_action_shape")
        self.err({"type": "command", "action": "set_force", "data": {"force": [0, 1000, 0]}},
                 "invalid_action_shape")  # above max_force 200 N

    def test_set_scenario_verbatim(self):
        rep = self.cmd("set_scenario", {"scenario": "NarrowMap", "seed": 0})
        d = rep["data"]
        for k in ("width", "height", "resolution", "origin"):
            self.assertIn(k, d)
        self.assertEqual(d["scenario"], "NarrowMap")
        info = self.cmd("get_map_info")["data"]
        self.assertEqual([info["width"], info["height"]], [d["width"], d["height"]])
        # the scenario's robot still takes the force examples
        st = self.cmd("step", {"force": FORCE})["data"]
        self.assertGreater(st["velocity"][1], 0)

    def test_terrain_grid_with_the_five_parameters(self):
        self.cmd("spawn_agent", {"name": "drifter", "behaviour": "constant", "pose": [3, 0, 0],
                                 "speed": 0.0})
        self.addCleanup(self.cmd, "clear_agents")
        grids = []
        for auv_y in (0, -7.5, 2.0):
            d = self.cmd("get_terrain_grid", {"cell_size": 0.25, "auv_y": auv_y,
                                              "include_static_obstacles": True,
                                              "include_dynamic_agents": True,
                                              "inflation_radius": 0.3})["data"]
            self.assertEqual(d["auv_y"], auv_y)
            self.assertEqual(len(d["grid"]), d["height"])
            self.assertEqual({len(r) for r in d["grid"]}, {d["width"]})
            self.assertEqual({v for r in d["grid"] for v in r}, {0, 1})
            self.assertIn(3, {v for r in d["class_grid"] for v in r})  # the agent
            grids.append(d["grid"])
        self.assertEqual(grids[0], grids[1])
        self.assertEqual(grids[0], grids[2])
        msg = self.err({"type": "command", "action": "get_terrain_grid",
                        "data": {"cell_size": 0.25, "auv_y": "deep"}}, "invalid_action_shape")
        self.assertIn("auv_y", msg)

    def test_batch_verbatim(self):
        rep = self.c.send(BATCH)
        self.assertEqual(rep["request_id"], "batch-001")
        self.assertEqual(rep["count"], 2)
        self.assertEqual(len(rep["responses"]), 2)
        self.check_state(rep["responses"][0], "get_state")
        self.assertEqual(rep["responses"][1]["type"], "response")
        self.assertEqual(rep["responses"][1]["status"], "ok", rep["responses"][1])
        self.assertEqual(rep["data"]["count"], 2)  # and where our older clients read them
        self.assertEqual(rep["data"]["responses"], rep["responses"])
        big = dict(BATCH, requests=[{"type": "command", "action": "get_state"}] * 65)
        self.err(big, "batch_limit")

    def test_export_dataset_point_clouds(self):
        rep = self.cmd("export_dataset", {"export_dir": "clouds1", "render_image": False,
                                          "pack_dataset": True, "seconds": 0.5})
        d = rep["data"]
        self.assertEqual(d["status"], "exported")
        self.assertIn("clouds1/points.csv", d["paths"])
        self.assertIn("clouds1/points.ply", d["paths"])
        root = os.path.join(self.data_dir, "clouds1")
        with open(os.path.join(root, "points.csv")) as f:
            rows = [r.split(",") for r in f.read().splitlines()]
        self.assertEqual(rows[0], "tick,sim_time,robot,seq,beam,x,y,z".split(","))
        pts = [(float(r[5]), float(r[6])) for r in rows[1:]]
        self.assertGreater(len(pts), 100)
        # every return lies on what the scan saw: inside the map, on a wall, at its range
        info = self.cmd("get_map_info")["data"]
        ox, oy = info["origin"][:2]
        w, h = info["size"]
        for x, y in pts:
            self.assertTrue(ox - 0.01 <= x <= ox + w + 0.01 and oy - 0.01 <= y <= oy + h + 0.01)
        with open(os.path.join(root, "scans.csv")) as f:
            scan = f.read().splitlines()[1].split(",")
        sx, sy, sth = map(float, scan[4:7])
        amin, ainc, rmin, rmax = map(float, scan[7:11])
        ranges = [float(v) for v in scan[12:]]
        first = [r for r in rows[1:] if r[3] == scan[3] and r[2] == scan[2]]
        for r in first:
            beam = int(r[4])
            a = sth + amin + beam * ainc
            self.assertAlmostEqual(float(r[5]), sx + ranges[beam] * math.cos(a), delta=1e-5)
            self.assertAlmostEqual(float(r[6]), sy + ranges[beam] * math.sin(a), delta=1e-5)
        self.assertEqual(len(first), sum(1 for v in ranges if rmin <= v < rmax))
        # the PLY holds the same points
        with open(os.path.join(root, "points.ply"), "rb") as f:
            blob = f.read()
        head, body = blob.split(b"end_header\n", 1)
        self.assertTrue(head.startswith(b"ply\nformat binary_little_endian 1.0\n"))
        n = int(re.search(rb"element vertex (\d+)", head).group(1))
        self.assertEqual(n, len(pts))
        self.assertEqual(len(body), 20 * n)
        for i in (0, n // 2, n - 1):
            x, y, z, robot, seq = struct.unpack_from("<fffII", body, 20 * i)
            self.assertAlmostEqual(x, pts[i][0], delta=1e-4)
            self.assertAlmostEqual(y, pts[i][1], delta=1e-4)
            self.assertEqual((z, robot, seq), (0.0, int(rows[1 + i][2]), int(rows[1 + i][3])))
        with open(os.path.join(root, "dataset.json")) as f:
            self.assertEqual(json.load(f)["points"], n)

    def test_error_codes(self):
        self.err({"type": "telemetry", "action": "get_state"}, "unknown_type")
        self.err({"type": "command", "action": "get_sonar"}, "unknown_action")
        self.err({"type": "sim_control", "action": "get_state"}, "unknown_action")
        self.err(b'{"type": "command", "action": ', "invalid_message")
        self.err({"type": "command", "action": "move_agent", "data": {"agent": "nobody", "speed": 0.2}},
                 "unknown_agent")
        self.err({"type": "command", "action": "spawn_agent",
                  "data": {"behaviour": "constant", "pose": [0, 0, 0]}}, "blocked_pose")

    def test_agents_follow_their_behaviour_and_report_velocity(self):
        self.cmd("pause", t="sim_control")
        self.cmd("spawn_agent", {"name": "w", "behaviour": "waypoints", "pose": [2, 2, 0],
                                 "speed": 0.5, "waypoints": [[2, 2], [4, 2]]})
        self.addCleanup(self.cmd, "clear_agents")
        st = self.cmd("step", {"steps": 100})["data"]
        (a,) = [a for a in st["agents"] if a["name"] == "w"]
        self.assertAlmostEqual(a["pose"][0], 2.25, delta=0.01)  # 0.5 s at 0.5 m/s
        self.assertAlmostEqual(a["velocity"][0], 0.5, places=6)
        self.assertEqual(a["velocity"][1:], [0.0, 0.0])
        (g,) = [a for a in self.cmd("get_agents")["data"]["agents"] if a["name"] == "w"]
        self.assertEqual(g["velocity"], a["velocity"])


class OceanSimRestartTest(StackTestCase):
    """Agents walk on after a pa-sim restart in a world without robots."""

    stack_args = ("--dynamics", "dynamic", "--no-render")

    def test_agents_after_restart_without_robots(self):
        c = Conn(self.host, self.port)
        self.addCleanup(c.close)

        def ok(action, data=None, t="command"):
            req = {"type": t, "action": action}
            if data is not None:
                req["data"] = data
            rep = c.send(req)
            self.assertEqual(rep["status"], "ok", rep)
            return rep["data"]

        ok("set_scenario", {"scenario": "Empty", "seed": 0})
        ok("spawn_agent", {"name": "w", "behaviour": "waypoints", "pose": [-3, 2, 0],
                           "speed": 0.5, "waypoints": [[3, 2], [-3, 2]]})
        ok("remove_robot", {"robot": 0})

        def x():
            return ok("get_agents")["agents"][0]["pose"][0]

        x0 = x()
        self.wait_until(lambda: x() > x0 + 0.1, 10, "the agent walks")
        self.kill_child("pa-sim")
        self.wait_until(lambda: self._answers(c), 30, "pa-sim answers again")
        x1 = x()
        self.wait_until(lambda: x() > x1 + 0.1, 10, "the agent walks after the restart")
        self.assertEqual(ok("list_robots")["robots"], [], "no robot came back")

    @staticmethod
    def _answers(c):
        rep = c.send({"type": "command", "action": "get_agents"})
        return rep["status"] == "ok" and rep["data"]["count"] == 1


# Every action of the protocol text's summary: its type, the payload the text gives it (the
# placeholders filled), the envelope type of its answer.
ACTIONS = {
    "get_state": ("command", None, "state"),
    "get_sensors": ("command", None, "state"),
    "pause": ("sim_control", None, "response"),
    "step": ("command", {"force": FORCE}, "state"),
    "set_force": ("command", {"force": FORCE}, "response"),
    "set_force_world": ("command", {"force": FORCE}, "response"),
    "set_force_body": ("command", {"force": FORCE}, "response"),
    "set_body_wrench": ("command", {"wrench": [0, 100, 0, 0, 0, 1]}, "response"),
    "set_thrust": ("command", {"thrusters": {"port": 0.5}}, "response"),
    "set_thrusters": ("command", {"thrusters": {"port": 0.5, "starboard": 0.5}}, "response"),
    "set_body_velocity": ("command", {"velocity": [0, 0.5, 0, 0, 0, 0.2]}, "response"),
    "reset": ("sim_control", None, "response"),
    "set_time_scale": ("sim_control", {"scale": 1.0}, "response"),
    "spawn_obstacle": ("command", {"name": "rock", "shape": "circle", "pose": [1.5, 1.5, 0],
                                   "radius": 0.1}, "response"),
    "remove_obstacle": ("command", {"name": "rock"}, "response"),
    "spawn_agent": ("command", {"name": "fish", "behaviour": "random", "pose": [-1.5, 1.5, 0],
                                "radius": 0.1}, "response"),
    "move_agent": ("command", {"agent": "fish", "speed": 0.2}, "response"),
    "remove_agent": ("command", {"agent": "fish"}, "response"),
    "clear_agents": ("command", None, "response"),
    "get_agents": ("command", None, "response"),
    "set_nav_path": ("command", {"path": [[0, 0], [1, 0]]}, "response"),
    "set_waypoint": ("command", {"waypoint": [1, 0]}, "response"),
    "set_pred_trajectory": ("command", {"trajectory": [[0, 0], [0.5, 0.1]]}, "response"),
    "set_waypoints": ("command", {"waypoints": [[1, 0], [1, 1]]}, "response"),
    "clear_nav": ("command", None, "response"),
    "resume": ("sim_control", None, "response"),
    "export_dataset": ("command", lambda: {"export_dir": "all%d" % time.monotonic_ns(),
                                           "render_image": False, "pack_dataset": True,
                                           "seconds": 0.2}, "response"),
    "save_snapshot_json": ("command", lambda: {"path": "snap%d.json" % time.monotonic_ns()},
                           "response"),
    "get_terrain_grid": ("command", {"cell_size": 0.5, "auv_y": 0.0,
                                     "include_static_obstacles": True,
                                     "include_dynamic_agents": True, "inflation_radius": 0.2},
                         "response"),
    "get_map_info": ("command", None, "response"),
    "set_scenario": ("command", {"scenario": "NarrowMap", "seed": 0}, "response"),
    "generate_map": ("command", {"seed": 3}, "response"),
}


if __name__ == "__main__":
    unittest.main()
