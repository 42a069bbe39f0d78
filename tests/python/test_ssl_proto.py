"""An SSL team against the real stack over the SSL simulation protocol:
protobuf messages built by `protoc --python_out` from netgw/ssl/proto at
test time, UDP to the control and team ports (OS-picked), vision received
on a port the test binds and names in SimulatorConfig.vision_port. The
world runs lockstep (JSON step_n) so every distance is exact."""

import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest

from playarea import Sim

from stack import StackTestCase

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
PROTO_DIR = os.path.join(SRC, "netgw", "ssl", "proto")
PROTOS = ["ssl_gc_common", "ssl_simulation_error", "ssl_simulation_robot_control",
          "ssl_simulation_robot_feedback", "ssl_simulation_config", "ssl_simulation_control",
          "ssl_simulation_synchronous", "ssl_simulation_custom_erforce_robot_spec",
          "ssl_simulation_custom_erforce_realism", "ssl_vision_detection",
          "ssl_vision_geometry", "ssl_vision_wrapper", "playarea_ssl"]
BALL_R, C2D, HZ = 0.021335, 0.08, 200
ACC_SLIDE, ACC_ROLL, ACC_UP = 3.0, 0.35, 4.0
WHEEL_ANGLES = [math.radians(a) for a in (60, 135, 225, 300)]
WHEEL_DIST = 0.08
pb = {}


def compile_protos(out):
    protoc = shutil.which("protoc")
    if not protoc:
        raise unittest.SkipTest("protoc not installed")
    subprocess.run([protoc, "--python_out=" + out, "-I" + PROTO_DIR] +
                   [os.path.join(PROTO_DIR, p + ".proto") for p in PROTOS], check=True)
    sys.path.insert(0, out)
    import importlib
    for p in PROTOS:
        pb[p] = importlib.import_module(p + "_pb2")


class SslBase(StackTestCase):
    # Commands are held (0): one command drives a robot for the whole step.
    stack_args = ("--world", "ssl-b", "--paused", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0", "--ssl_vision_hz", "200",
                  "--ssl_command_timeout_ms", "0")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="pa-ssl-pb-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        compile_protos(cls.tmp)
        super().setUpClass()

    def setUp(self):
        self.sim = Sim(self.host, self.port, timeout=20)
        self.addCleanup(self.sim.close)
        self.sim.reset()
        self.info = self.sim.request("get_ssl_info")
        self.ctl_sock = self.udp()
        self.team_sock = self.udp()
        self.vision = self.udp()
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        cmd.config.vision_port = self.vision.getsockname()[1]
        self.assertEqual(list(self.control(cmd).errors), [])

    def udp(self):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(5)
        self.addCleanup(s.close)
        return s

    # ---- the protocol ------------------------------------------------------

    def control(self, cmd):
        self.ctl_sock.sendto(cmd.SerializeToString(), ("127.0.0.1", self.info["control_port"]))
        r = pb["ssl_simulation_control"].SimulatorResponse()
        r.ParseFromString(self.ctl_sock.recv(65536))
        return r

    def robots(self, commands, team="blue"):
        rc = pb["ssl_simulation_robot_control"].RobotControl()
        for c in commands:
            rc.robot_commands.add().CopyFrom(c)
        port = self.info["blue_port" if team == "blue" else "yellow_port"]
        self.team_sock.sendto(rc.SerializeToString(), ("127.0.0.1", port))
        r = pb["ssl_simulation_robot_feedback"].RobotControlResponse()
        r.ParseFromString(self.team_sock.recv(65536))
        return r

    def command(self, rid, **kw):
        c = pb["ssl_simulation_robot_control"].RobotCommand(id=rid)
        for k in ("kick_speed", "kick_angle", "dribbler_speed"):
            if k in kw:
                setattr(c, k, kw.pop(k))
        if "local" in kw:
            f, l, a = kw.pop("local")
            c.move_command.local_velocity.forward, c.move_command.local_velocity.left = f, l
            c.move_command.local_velocity.angular = a
        if "glob" in kw:
            x, y, a = kw.pop("glob")
            g = c.move_command.global_velocity
            g.x, g.y, g.angular = x, y, a
        if "wheels" in kw:
            w = c.move_command.wheel_velocity
            w.front_right, w.back_right, w.back_left, w.front_left = kw.pop("wheels")
        self.assertEqual(kw, {})
        return c

    def teleport_robot(self, rid, x, y, theta, team="blue", **kw):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        t = cmd.control.teleport_robot.add()
        t.id.id = rid
        t.id.team = (pb["ssl_gc_common"].BLUE if team == "blue" else pb["ssl_gc_common"].YELLOW)
        t.x, t.y, t.orientation = x, y, theta
        for k, v in kw.items():
            setattr(t, k, v)
        r = self.control(cmd)
        self.assertEqual(list(r.errors), [])

    def teleport_ball(self, x, y, **kw):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        b = cmd.control.teleport_ball
        b.x, b.y = x, y
        for k, v in kw.items():
            setattr(b, k, v)
        r = self.control(cmd)
        self.assertEqual(list(r.errors), [])

    def at_bar(self, x, y, theta):
        d = C2D + BALL_R - 0.001
        return x + d * math.cos(theta), y + d * math.sin(theta)

    def step_and_see(self, ticks):
        """Steps the world, then returns a detection frame of that tick: the
        world is paused, and frames keep coming with its positions, each
        captured (Unix time, as SSL-Vision's) after the step returned."""
        self.sim.step_n(ticks)
        t0 = time.time() + 0.02
        deadline = time.monotonic() + 10
        w = pb["ssl_vision_wrapper"].SSL_WrapperPacket()
        while time.monotonic() < deadline:
            w.ParseFromString(self.vision.recv(65536))
            if w.HasField("detection") and w.detection.t_capture >= t0:
                return w.detection
        self.fail("no vision frame after the step")

    @staticmethod
    def bot(frame, rid, team="blue"):
        rs = frame.robots_blue if team == "blue" else frame.robots_yellow
        for r in rs:
            if r.robot_id == rid:
                return r
        return None



class SslProtocol(SslBase):
    # ---- tests -------------------------------------------------------------

    def test_vision_geometry_and_detection(self):
        w = pb["ssl_vision_wrapper"].SSL_WrapperPacket()
        self.sim.step_n(1)
        deadline = time.monotonic() + 10
        geo = None
        while geo is None and time.monotonic() < deadline:
            self.sim.step_n(1)
            w.ParseFromString(self.vision.recv(65536))
            if w.HasField("geometry"):
                geo = w.geometry
        self.assertIsNotNone(geo, "no geometry packet")
        self.assertEqual((geo.field.field_length, geo.field.field_width), (9000, 6000))
        self.assertEqual(geo.field.goal_width, 1000)
        self.assertIn("CenterCircle", [a.name for a in geo.field.field_arcs])
        m = geo.models.straight_two_phase  # the ball's physics, as pa-sim runs it
        self.assertEqual((m.acc_slide, m.acc_roll), (-ACC_SLIDE, -ACC_ROLL))
        self.assertAlmostEqual(m.k_switch, 5 / 7, places=9)
        self.assertEqual(len(geo.calib), 0)
        f = self.step_and_see(1)
        self.assertEqual(len(f.robots_blue), 6)
        self.assertEqual(len(f.robots_yellow), 6)
        self.assertEqual(len(f.balls), 1)
        self.assertEqual((f.balls[0].x, f.balls[0].y), (0, 0))
        b0 = self.bot(f, 0)
        self.assertAlmostEqual(b0.x, -500, delta=1)  # millimetres
        self.assertAlmostEqual(b0.y, -900, delta=1)

    def drive_distance(self, v, t):
        ta = v / ACC_UP
        return v * t - 0.5 * v * ta

    def test_drive_local_velocity(self):
        self.teleport_robot(0, -3, -2, 0)
        r = self.robots([self.command(0, local=(1.0, 0, 0))])
        self.assertEqual(list(r.errors), [])
        self.assertEqual([f.id for f in r.feedback], [0])
        f = self.step_and_see(200)
        b = self.bot(f, 0)
        self.assertAlmostEqual(b.x / 1000 + 3, self.drive_distance(1.0, 1.0), delta=0.01)
        self.assertAlmostEqual(b.y / 1000, -2, delta=0.005)

    def test_drive_global_velocity(self):
        self.teleport_robot(1, -3, 2, math.pi / 2)
        self.robots([self.command(1, glob=(0, -0.5, 0))])
        f = self.step_and_see(200)
        b = self.bot(f, 1)
        self.assertAlmostEqual(b.x / 1000, -3, delta=0.005)
        self.assertAlmostEqual(2 - b.y / 1000, self.drive_distance(0.5, 1.0), delta=0.01)
        self.assertAlmostEqual(b.orientation, math.pi / 2, delta=1e-3)

    def test_drive_wheels(self):
        self.teleport_robot(2, -3, 0.5, 0)
        wheels = [math.sin(a) * 1.0 for a in WHEEL_ANGLES]  # forward 1 m/s
        self.robots([self.command(2, wheels=wheels)])
        f = self.step_and_see(200)
        b = self.bot(f, 2)
        self.assertAlmostEqual(b.x / 1000 + 3, self.drive_distance(1.0, 1.0), delta=0.01)
        self.assertAlmostEqual(b.y / 1000, 0.5, delta=0.005)
        # A pure turn on the wheels turns in place.
        self.robots([self.command(2, wheels=[WHEEL_DIST * 2.0] * 4)])
        th0 = b.orientation
        f = self.step_and_see(100)
        b2 = self.bot(f, 2)
        self.assertGreater(math.remainder(b2.orientation - th0, 2 * math.pi), 0.5)

    def test_kick_rolling_distance(self):
        self.teleport_robot(3, -3, 1.0, 0)
        self.robots([self.command(3, kick_speed=2.0)])
        self.teleport_ball(*self.at_bar(-3, 1.0, 0))
        f = self.step_and_see(1)
        x0 = f.balls[0].x / 1000
        f = self.step_and_see(2000)
        vs = 2.0 * 5 / 7
        want = (4 - vs * vs) / (2 * ACC_SLIDE) + vs * vs / (2 * ACC_ROLL)
        self.assertAlmostEqual(f.balls[0].x / 1000 - x0, want, delta=0.03)

    def test_chip_over_robot(self):
        self.teleport_robot(4, -3, -1.5, 0)
        self.teleport_robot(1, -2.2, -1.5, math.pi, team="yellow")
        self.robots([self.command(4, kick_speed=4.0, kick_angle=45)])
        self.teleport_ball(*self.at_bar(-3, -1.5, 0))
        zmax = 0
        for _ in range(30):
            f = self.step_and_see(5)
            zmax = max(zmax, f.balls[0].z)
        self.assertGreater(zmax, 300)  # [mm] well above the 150 mm robot
        self.assertGreater(f.balls[0].x / 1000, -2.2 + 0.3)

    def test_dribble_and_turn(self):
        self.teleport_robot(5, -3, 2.2, 0)
        self.teleport_ball(*self.at_bar(-3, 2.2, 0))
        self.robots([self.command(5, dribbler_speed=5000, local=(0, 0, 2.0))])
        f = self.step_and_see(300)
        b = self.bot(f, 5)
        self.assertGreater(abs(math.remainder(b.orientation, 2 * math.pi)), 1.0)
        bx = b.x / 1000 + (C2D + BALL_R) * math.cos(b.orientation)
        by = b.y / 1000 + (C2D + BALL_R) * math.sin(b.orientation)
        self.assertAlmostEqual(f.balls[0].x / 1000, bx, delta=0.002)
        self.assertAlmostEqual(f.balls[0].y / 1000, by, delta=0.002)
        r = self.robots([self.command(5, dribbler_speed=5000, local=(0, 0, 2.0))])
        self.assertTrue(r.feedback[0].dribbler_ball_contact)

    def test_teleport_with_velocity(self):
        self.teleport_robot(0, -3, -2, 0, v_x=1.0, v_y=0.5)
        f = self.step_and_see(100)
        b = self.bot(f, 0)
        self.assertAlmostEqual(b.x / 1000, -2.5, delta=0.01)
        self.assertAlmostEqual(b.y / 1000, -1.75, delta=0.01)

    def test_present_removes_and_adds(self):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        t = cmd.control.teleport_robot.add()
        t.id.id, t.id.team, t.present = 5, pb["ssl_gc_common"].YELLOW, False
        self.assertEqual(list(self.control(cmd).errors), [])
        f = self.step_and_see(1)
        self.assertIsNone(self.bot(f, 5, "yellow"))
        self.assertEqual(len(f.robots_yellow), 5)
        r = self.robots([self.command(5, local=(1, 0, 0))], team="yellow")
        self.assertEqual([e.code for e in r.errors], ["unknown_robot"])
        self.teleport_robot(5, 2, 2, 0, team="yellow", present=True)
        f = self.step_and_see(1)
        b = self.bot(f, 5, "yellow")
        self.assertIsNotNone(b)
        self.assertAlmostEqual(b.x, 2000, delta=1)

    def test_robot_specs(self):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        s = cmd.config.robot_specs.add()
        s.id.id, s.id.team = 0, pb["ssl_gc_common"].BLUE
        s.radius, s.max_linear_kick_speed = 0.085, 3.0
        s.limits.vel_absolute_max = 0.5
        self.assertEqual(list(self.control(cmd).errors), [])
        self.teleport_robot(0, -3, -2, 0)
        self.robots([self.command(0, local=(2.0, 0, 0), kick_speed=6.0)])
        f = self.step_and_see(200)
        b = self.bot(f, 0)
        self.assertAlmostEqual(b.x / 1000 + 3, self.drive_distance(0.5, 1.0), delta=0.01)
        radius = {r["name"]: r["radius"] for r in self.sim.list_robots()["robots"]}
        self.assertAlmostEqual(radius["b0"], 0.085, delta=1e-6)
        self.robots([self.command(0, local=(0, 0, 0), kick_speed=6.0)])
        f = self.step_and_see(200)
        x = self.bot(f, 0).x / 1000
        self.teleport_ball(*self.at_bar(x, -2, 0))
        self.step_and_see(1)
        self.assertAlmostEqual(self.sim.get_ball()["velocity"][0], 3.0, delta=0.05)

    def test_refused_robot_specs_change_nothing(self):
        """A spec refused for one field leaves the radius as it was too."""
        radius = lambda: {r["name"]: r["radius"] for r in self.sim.list_robots()["robots"]}["b1"]
        r0 = radius()
        for kw in ({"radius": r0 + 0.01, "mass": float("nan")}, {"radius": float("inf")},
                   {"height": -1.0}):
            cmd = pb["ssl_simulation_control"].SimulatorCommand()
            s = cmd.config.robot_specs.add()
            s.id.id, s.id.team = 1, pb["ssl_gc_common"].BLUE
            for k, v in kw.items():
                setattr(s, k, v)
            errs = self.control(cmd).errors
            self.assertEqual([e.code for e in errs], ["invalid:robot_specs"], kw)
            self.assertIn("not applied", errs[0].message)
            self.step_and_see(1)
            self.assertAlmostEqual(radius(), r0, delta=1e-6, msg=str(kw))

    def test_repeated_robot_ids_are_refused(self):
        """A RobotControl of 400 commands for one robot is one command, the
        rest named as errors: pa-sim's queue and the response stay small."""
        r = self.robots([self.command(2, local=(0, 0, 0))] * 400)
        self.assertEqual([fb.id for fb in r.feedback], [2])
        self.assertTrue(r.errors)
        self.assertEqual({e.code for e in r.errors}, {"invalid:robot_commands"})
        self.assertIn("blue robot 2 has more than one command", r.errors[0].message)
        r = self.robots([self.command(2, local=(0, 0, 0)), self.command(3, local=(0, 0, 0))])
        self.assertEqual((sorted(fb.id for fb in r.feedback), list(r.errors)), ([2, 3], []))

    def realism(self, **kw):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        m = pb["playarea_ssl"].RealismConfig(**kw)
        a = cmd.config.realism_config.custom.add()
        a.Pack(m)
        return self.control(cmd)

    def test_realism_noise_and_dropout(self):
        self.addCleanup(self.realism, position_noise=0, orientation_noise=0, dropout=0)
        self.assertEqual(list(self.realism(position_noise=0.01, orientation_noise=0.02,
                                           seed=7).errors), [])
        xs = [self.bot(self.step_and_see(1), 0).x for _ in range(40)]
        mean = sum(xs) / len(xs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))
        self.assertAlmostEqual(mean, -500, delta=6)
        self.assertTrue(5 < sd < 16, "x noise sigma %.1f mm, want ~10" % sd)
        self.assertEqual(list(self.realism(dropout=1.0).errors), [])
        f = self.step_and_see(1)
        self.assertEqual((len(f.robots_blue), len(f.robots_yellow), len(f.balls)), (0, 0, 0))
        r = self.realism(dropout=2.0)
        self.assertEqual([e.code for e in r.errors], ["invalid:config.realism_config"])
        self.assertEqual(list(self.realism(position_noise=0, orientation_noise=0,
                                           dropout=0).errors), [])
        f = self.step_and_see(1)
        self.assertEqual(self.bot(f, 0).x, -500)

    def test_unsupported_fields_are_errors(self):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        cmd.control.teleport_ball.x = 1
        cmd.control.teleport_ball.by_force = True
        cmd.control.teleport_ball.teleport_safely = True
        t = cmd.control.teleport_robot.add()
        t.id.id, t.id.team, t.x, t.by_force = 0, pb["ssl_gc_common"].BLUE, 1, True
        cmd.config.geometry.field.field_length = 1
        cmd.config.geometry.field.field_width = 1
        cmd.config.geometry.field.goal_width = 1
        cmd.config.geometry.field.goal_depth = 1
        cmd.config.geometry.field.boundary_width = 1
        s = cmd.config.robot_specs.add()
        s.id.id, s.id.team = 0, pb["ssl_gc_common"].BLUE
        s.custom.add().type_url = "type.googleapis.com/other.Spec"
        cmd.config.realism_config.custom.add().type_url = "x"
        codes = sorted(e.code for e in self.control(cmd).errors)
        self.assertEqual(codes, sorted([
            "unsupported:teleport_ball.by_force", "unsupported:teleport_ball.teleport_safely",
            "unsupported:teleport_robot.by_force", "unsupported:config.geometry",
            "unsupported:robot_specs.custom", "unsupported:config.realism_config.custom"]))
        f = self.step_and_see(1)
        self.assertEqual((f.balls[0].x, f.balls[0].y), (0, 0))  # nothing moved
        self.assertAlmostEqual(self.bot(f, 0).x, -500, delta=1)
        # Bad ids, bad numbers and garbage are named too.
        r = self.robots([self.command(20, local=(1, 0, 0)),
                         self.command(1, kick_speed=-1.0)])
        self.assertEqual(sorted(e.code for e in r.errors), ["invalid:kick", "unknown_robot"])
        self.ctl_sock.sendto(b"\xff\xff\xff", ("127.0.0.1", self.info["control_port"]))
        r = pb["ssl_simulation_control"].SimulatorResponse()
        r.ParseFromString(self.ctl_sock.recv(65536))
        self.assertEqual([e.code for e in r.errors], ["invalid:message"])

    # ---- the official files' contract (issue 38) ---------------------------

    def test_empty_teleport_ball_does_not_teleport(self):
        """TeleportBall{} (and {by_force: false}) moves nothing: a rolling
        ball rolls on."""
        self.sim.teleport_ball(0.5, 0.5, vx=1.0, roll=True)
        self.sim.step_n(10)
        v0 = self.sim.get_ball()["velocity"][0]
        self.assertGreater(v0, 0.8)
        for by_force in (None, False):
            cmd = pb["ssl_simulation_control"].SimulatorCommand()
            cmd.control.teleport_ball.SetInParent()
            if by_force is not None:
                cmd.control.teleport_ball.by_force = by_force
            self.assertEqual(list(self.control(cmd).errors), [])
            self.sim.step_n(1)
            b = self.sim.get_ball()
            self.assertGreater(b["velocity"][0], v0 - 0.1)
            self.assertGreater(b["position"][0], 0.5)

    def test_ball_teleported_into_a_robot_is_placed_outside(self):
        """Into a robot's body: just outside it, and the response says so;
        at the bar (touching, the centre outside) it stays where asked."""
        self.teleport_robot(1, 1.0, 1.0, 0)
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        cmd.control.teleport_ball.x, cmd.control.teleport_ball.y = 0.98, 1.01
        r = self.control(cmd)
        self.assertEqual([e.code for e in r.errors], ["moved:teleport_ball"])
        self.assertIn("inside robot 'b1'", r.errors[0].message)
        b = self.sim.get_ball()["position"]
        d = math.hypot(b[0] - 1.0, b[1] - 1.0)
        self.assertGreater(d, 0.09 + BALL_R)  # out through the round back
        self.assertLess(d, 0.09 + BALL_R + 0.005)
        j = self.sim.teleport_ball(1.0, 1.0)  # JSON: the reply says it too
        self.assertIn("inside robot 'b1'", j["moved"])
        self.assertGreater(j["position"][0], 1.0 + C2D + BALL_R - 1e-6)  # out through the bar
        self.teleport_ball(*self.at_bar(1.0, 1.0, 0))  # no error (asserted inside)
        self.assertAlmostEqual(self.sim.get_ball()["position"][0], self.at_bar(1.0, 1.0, 0)[0],
                               delta=1e-6)

    def test_kick_angle_alone_is_no_kick_and_no_error(self):
        r = self.robots([self.command(0, kick_angle=0.0), self.command(1, kick_angle=30.0)])
        self.assertEqual(list(r.errors), [])
        self.assertEqual(sorted(f.id for f in r.feedback), [0, 1])
        self.assertEqual(pb["ssl_simulation_robot_control"].RobotCommand(id=0).kick_angle, 0)

    def test_official_type_urls(self):
        """RobotSpecErForce packed as the published file packs it (no
        package) and as ER-Force's own copy (sslsim.) are both taken."""
        for url in ("type.googleapis.com/RobotSpecErForce",
                    "type.googleapis.com/sslsim.RobotSpecErForce"):
            cmd = pb["ssl_simulation_control"].SimulatorCommand()
            s = cmd.config.robot_specs.add()
            s.id.id, s.id.team = 2, pb["ssl_gc_common"].BLUE
            spec = pb["ssl_simulation_custom_erforce_robot_spec"].RobotSpecErForce(
                dribbler_width=0.07)
            a = s.custom.add()
            a.Pack(spec)
            if "sslsim" in url:
                a.type_url = url
            else:
                self.assertEqual(a.type_url, url)
            self.assertEqual(list(self.control(cmd).errors), [], url)
        spec = pb["ssl_simulation_custom_erforce_robot_spec"].RobotSpecErForce(shoot_radius=0.1)
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        s = cmd.config.robot_specs.add()
        s.id.id, s.id.team = 2, pb["ssl_gc_common"].BLUE
        s.custom.add().Pack(spec)
        self.assertEqual([e.code for e in self.control(cmd).errors],
                         ["unsupported:robot_specs.custom.shoot_radius"])

    def realism_erforce(self, **kw):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        m = pb["ssl_simulation_custom_erforce_realism"].RealismConfigErForce(**kw)
        cmd.config.realism_config.custom.add().Pack(m)
        return self.control(cmd)

    def test_realism_erforce(self):
        """Noise, the ball's dropout and the processing time map onto
        playarea's realism; the rest is refused by name, nothing applied."""
        self.addCleanup(self.realism_erforce, stddev_robot_p=0, stddev_ball_p=0,
                        missing_ball_detections=0, vision_processing_time=0)
        r = self.realism_erforce(stddev_robot_p=0.01, camera_overlap=0.5)
        self.assertEqual([e.code for e in r.errors],
                         ["unsupported:realism_config.custom.camera_overlap"])
        f = self.step_and_see(1)
        self.assertEqual(self.bot(f, 0).x, -500)  # nothing applied
        r = self.realism_erforce(stddev_robot_p=0.01, missing_ball_detections=1.0,
                                 vision_processing_time=30 * 1000 * 1000,
                                 simulate_dribbling=True)
        self.assertEqual(list(r.errors), [])
        xs = [self.bot(self.step_and_see(1), 0).x for _ in range(20)]
        self.assertGreater(max(xs) - min(xs), 3)  # noisy now
        f = self.step_and_see(1)
        self.assertEqual(len(f.balls), 0)
        self.assertAlmostEqual(f.t_sent - f.t_capture, 0.03, delta=1e-6)
        for field, value in (("robot_command_loss", 0.1), ("camera_position_error", 0.1),
                             ("enable_invisible_ball", True), ("simulate_dribbling", False)):
            r = self.realism_erforce(**{field: value})
            self.assertEqual([e.code for e in r.errors],
                             ["unsupported:realism_config.custom." + field])
            self.assertIn(field, r.errors[0].message)

    def test_vision_delay(self):
        """RealismConfigErForce.vision_delay: frames show the world as it
        was that long ago (300 ms here)."""
        self.addCleanup(self.realism_erforce, vision_delay=0)
        self.assertEqual(list(self.realism_erforce(vision_delay=300 * 1000 * 1000).errors), [])
        time.sleep(0.4)  # copies of the present fill the delay
        self.teleport_robot(0, -3, -2, 0)
        self.sim.step_n(1)
        t0 = time.time()
        w = pb["ssl_vision_wrapper"].SSL_WrapperPacket()
        seen = []  # (seconds after the teleport, x [mm])
        while time.time() - t0 < 0.7:
            w.ParseFromString(self.vision.recv(65536))
            if w.HasField("detection"):
                seen.append((time.time() - t0, self.bot(w.detection, 0).x))
        early = [x for t, x in seen if 0.05 < t < 0.2]
        late = [x for t, x in seen if t > 0.45]
        self.assertTrue(early and late, seen)
        self.assertEqual(set(early), {-500})  # where it was
        self.assertEqual(set(late), {-3000})  # where it is
        r = self.realism_erforce(vision_delay=2 * 10 ** 9)
        self.assertEqual([e.code for e in r.errors], ["invalid:config.realism_config"])

    def test_vision_times_source_and_paused_frames(self):
        """Frames keep coming while paused: the same positions, new Unix
        times; the wrapper names its source."""
        self.step_and_see(1)
        w = pb["ssl_vision_wrapper"].SSL_WrapperPacket()
        frames = []
        while len(frames) < 5:
            w.ParseFromString(self.vision.recv(65536))
            if w.HasField("detection"):
                self.assertEqual(w.source, pb["ssl_vision_wrapper"].SSL_SOURCE_OTHER)
                frames.append(pb["ssl_vision_detection"].SSL_DetectionFrame.FromString(
                    w.detection.SerializeToString()))
        now = time.time()
        ts = [f.t_capture for f in frames]
        self.assertEqual(ts, sorted(ts))
        self.assertLess(ts[0], ts[-1])
        self.assertLess(abs(ts[-1] - now), 2.0)
        self.assertEqual({(self.bot(f, 0).x, self.bot(f, 0).y) for f in frames}, {(-500, -900)})

    def test_spec_mass_in_the_dynamics(self):
        """A ball rolling into a robot pushes it by the two masses: a 50 g
        robot (spec) is knocked away, a 2.3 kg one barely moves."""
        moved = {}
        for rid, y, mass in ((3, 1.0, 0.05), (4, -1.5, None)):
            if mass is not None:
                cmd = pb["ssl_simulation_control"].SimulatorCommand()
                s = cmd.config.robot_specs.add()
                s.id.id, s.id.team, s.mass = rid, pb["ssl_gc_common"].BLUE, mass
                self.assertEqual(list(self.control(cmd).errors), [])
            self.teleport_robot(rid, -2.0, y, math.pi / 2)  # its side to the ball
            x0 = self.bot(self.step_and_see(1), rid).x
            self.teleport_ball(-3.0, y, vx=3.0, roll=True)
            moved[rid] = (self.bot(self.step_and_see(200), rid).x - x0) / 1000
        print("pushed by the ball: 50 g robot %.3f m, 2.3 kg robot %.4f m" % (moved[3], moved[4]))
        self.assertGreater(moved[3], 0.05)
        self.assertLess(abs(moved[4]), 0.01)

    def test_spec_height_in_vision(self):
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        s = cmd.config.robot_specs.add()
        s.id.id, s.id.team = 3, pb["ssl_gc_common"].YELLOW
        s.height = 0.14
        self.assertEqual(list(self.control(cmd).errors), [])
        f = self.step_and_see(1)
        self.assertAlmostEqual(self.bot(f, 3, "yellow").height, 140, delta=0.01)
        self.assertAlmostEqual(self.bot(f, 3).height, 150, delta=0.01)
        spec = pb["ssl_simulation_config"].RobotSpecs()  # the published defaults
        self.assertAlmostEqual(spec.radius, 0.09, places=6)
        self.assertAlmostEqual(spec.height, 0.15, places=6)

    def sync(self, req, team="blue"):
        s = self.udp()
        port = self.info["sync_blue_port" if team == "blue" else "sync_yellow_port"]
        s.sendto(req.SerializeToString(), ("127.0.0.1", port))
        return pb["ssl_simulation_synchronous"].SimulationSyncResponse.FromString(s.recv(65536))

    def test_synchronous_step(self):
        """SimulationSyncRequest on a team's synchronous port: its commands,
        then sim_step seconds of ticks; the answer is the vision of the
        step's end and the commands' feedback."""
        self.teleport_robot(0, -3, -2, 0)
        tick0 = self.sim.step_n(1)["tick"]
        req = pb["ssl_simulation_synchronous"].SimulationSyncRequest(sim_step=1.0)
        req.robot_control.robot_commands.add().CopyFrom(self.command(0, local=(1.0, 0, 0)))
        r = self.sync(req)
        self.assertEqual(list(r.robot_control_response.errors), [])
        self.assertEqual([f.id for f in r.robot_control_response.feedback], [0])
        self.assertEqual(len(r.detection), 1)
        b = self.bot(r.detection[0], 0)
        self.assertAlmostEqual(b.x / 1000 + 3, self.drive_distance(1.0, 1.0), delta=0.01)
        self.assertEqual(self.sim.get_status()["tick"], tick0 + 200)
        # sim_step 0: nothing moves; a simulator_command rides along; the
        # yellow port commands yellow robots.
        req = pb["ssl_simulation_synchronous"].SimulationSyncRequest(sim_step=0)
        req.simulator_command.control.teleport_ball.x = 1.0
        req.simulator_command.control.teleport_ball.y = 0.5
        req.robot_control.robot_commands.add().CopyFrom(self.command(2, local=(0, 0, 0)))
        r = self.sync(req, team="yellow")
        self.assertEqual(list(r.robot_control_response.errors), [])
        f = r.detection[0]
        self.assertEqual((f.balls[0].x, f.balls[0].y), (1000, 500))
        self.assertAlmostEqual(self.bot(f, 0).x, b.x, delta=0.5)
        bad = pb["ssl_simulation_synchronous"].SimulationSyncRequest(sim_step=-1)
        bad.robot_control.robot_commands.add().CopyFrom(self.command(20, local=(0, 0, 0)))
        r = self.sync(bad)
        self.assertEqual(sorted(e.code for e in r.robot_control_response.errors),
                         ["invalid:sim_step", "unknown_robot"])

    def test_refusals_of_the_simulator_are_errors(self):
        """What only pa-sim can refuse (a robot onto a wall, onto another
        robot, wheel angles that leave the twist undetermined) comes back
        as a SimulatorError of the same response; the rest is applied."""
        f0 = self.step_and_see(1)
        b2 = self.bot(f0, 2)
        cmd = pb["ssl_simulation_control"].SimulatorCommand()
        blue = pb["ssl_gc_common"].BLUE
        for rid, x, y in ((0, 0.0, 3.32), (1, b2.x / 1000, b2.y / 1000), (3, 1.0, 1.0)):
            t = cmd.control.teleport_robot.add()
            t.id.id, t.id.team, t.x, t.y, t.orientation = rid, blue, x, y, 0
        s = cmd.config.robot_specs.add()
        s.id.id, s.id.team = 4, blue
        w = s.wheel_angles
        w.front_right = w.back_right = w.back_left = w.front_left = 1.0
        errs = sorted((e.code, e.message) for e in self.control(cmd).errors)
        self.assertEqual([c for c, _ in errs], ["blocked_pose", "blocked_pose",
                                                "invalid_message"], errs)
        self.assertIn("teleport_robot blue 0", errs[0][1] + errs[1][1])
        self.assertIn("teleport_robot blue 1", errs[0][1] + errs[1][1])
        self.assertIn("robot_specs blue 4", errs[2][1])
        f = self.step_and_see(1)
        for rid in (0, 1):  # refused: where they were
            self.assertAlmostEqual(self.bot(f, rid).x, self.bot(f0, rid).x, delta=1)
            self.assertAlmostEqual(self.bot(f, rid).y, self.bot(f0, rid).y, delta=1)
        self.assertAlmostEqual(self.bot(f, 3).x, 1000, delta=1)  # applied
        self.assertAlmostEqual(self.bot(f, 3).y, 1000, delta=1)
        # Driving by wheels still works for robot 4: its specs were not changed.
        r = self.robots([self.command(4, wheels=(1, 1, 1, 1))])
        self.assertEqual(list(r.errors), [])
        self.assertEqual([fb.id for fb in r.feedback], [4])


class SslCommandTimeout(SslBase):
    """The default --ssl_command_timeout_ms (100, sim time): a robot its team
    stops commanding stops; commanded every 50 ms it drives on."""
    stack_args = ("--world", "ssl-b", "--paused", "--no-render", "--ssl_control_port", "0",
                  "--ssl_blue_port", "0", "--ssl_yellow_port", "0", "--ssl_vision_hz", "200")

    def test_timeout_stops_the_robot(self):
        self.teleport_robot(0, -3, -2, 0)
        self.teleport_robot(1, -3, 2, 0)
        self.robots([self.command(0, local=(1.0, 0, 0)), self.command(1, local=(1.0, 0, 0))])
        for _ in range(20):  # 1 s: robot 1 commanded every 10 ticks, robot 0 once
            self.sim.step_n(10)
            self.robots([self.command(1, local=(1.0, 0, 0))])
        f = self.step_and_see(1)
        d0, d1 = self.bot(f, 0).x / 1000 + 3, self.bot(f, 1).x / 1000 + 3
        print("after 1 s: robot 0 (one command) %.3f m, robot 1 (every 50 ms) %.3f m" % (d0, d1))
        self.assertLess(d0, 0.05)
        self.assertAlmostEqual(d1, 1.0 - 0.5 * 1.0 / ACC_UP, delta=0.03)
        f = self.step_and_see(100)
        self.assertAlmostEqual(self.bot(f, 0).x / 1000 + 3, d0, delta=1e-3)  # stopped

    def test_timeout_disarms_the_kicker_after_a_teleport(self):
        """A teleport sets the robot's motion another way, but the kicker a
        team armed still lapses: a ball put at the bar later stays."""
        self.robots([self.command(2, kick_speed=3.0)])
        self.teleport_robot(2, -3.0, 0.5, 0)
        self.sim.step_n(40)  # 200 ms > 100 ms
        self.teleport_ball(*self.at_bar(-3.0, 0.5, 0))
        self.sim.step_n(5)
        self.assertLess(abs(self.sim.get_ball()["velocity"][0]), 0.01)
        self.robots([self.command(2, kick_speed=3.0)])  # armed again: it kicks
        self.sim.step_n(5)
        self.assertGreater(self.sim.get_ball()["velocity"][0], 2.8)


if __name__ == "__main__":
    unittest.main()
