"""Sim: the JSON-lines protocol (version 2) on the control port, one request at a time."""

import itertools
import json
import os
import socket
import threading

from ._util import default_host, default_port, finite
from .errors import ConnectionLost, Error, ProtocolError

PROTOCOL_VERSION = 2
BATCH_LIMIT = 64
SIM_CONTROL = frozenset(("pause", "resume", "step_n", "reset", "set_time_scale", "get_status"))
# Actions that leave a robot moving until told otherwise: close() stops those robots.
DRIVE_ACTIONS = frozenset(("set_velocity", "set_velocity_local", "set_velocity_global", "set_wheels",
                           "set_body_velocity", "step"))


def _vec(name, values, n):
    values = list(values)
    if len(values) != n:
        raise ValueError("%s must have %d numbers, got %d" % (name, n, len(values)))
    return [finite("%s[%d]" % (name, i), v) for i, v in enumerate(values)]


def _points(name, points):
    """[(x, y), ...] as [[x, y], ...] of finite floats (ValueError naming a bad one)."""
    return [[finite("%s[%d].x" % (name, i), x), finite("%s[%d].y" % (name, i), y)]
            for i, (x, y) in enumerate(points)]


class Sim:
    """A JSON-protocol client: ``Sim().step(v=0.2, w=0.1)`` returns the state after the step.

    Every method sends one request and waits for its response; errors come back as
    ``playarea.Error`` with the server's code and message. Thread-safe (calls are
    serialised). Defaults to $PLAYAREA_HOST / $PLAYAREA_PORT, else localhost:9000.
    ``close()`` (and the end of a ``with`` block) sends ``stop`` to every robot
    this client set moving; ``stop_on_close=False`` leaves them as commanded.
    """

    def __init__(self, host=None, port=None, timeout=10.0, token=None, stop_on_close=True):
        self.host = default_host() if host is None else host
        self.port = default_port() if port is None else int(port)
        self.timeout = float(timeout)
        self.last_response = None  # the whole envelope of the last response
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._broken = None
        self.stop_on_close = bool(stop_on_close)
        self._driven = set()  # robots given a motion command since their last stop
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rfile = self._sock.makefile("rb")
        if token is not None:
            try:
                self._auth(str(token))
            except BaseException:
                self.close()
                raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "<playarea.Sim %s:%d>" % (self.host, self.port)

    def close(self):
        """Stop the robots this client set moving (see stop_on_close), close. Idempotent."""
        if self._sock is not None and self._broken is None and self.stop_on_close:
            for robot in sorted(self._driven, key=str):
                try:
                    self.request("stop", {"robot": robot})
                except (Error, OSError, ValueError):
                    pass  # best effort: gone, or the connection broke
        self._driven.clear()
        if self._sock is not None:
            self._rfile.close()
            self._sock.close()
            self._sock = None

    @property
    def sim_time(self):
        """sim_time of the last response [s], or None."""
        return None if self.last_response is None else self.last_response.get("sim_time")

    # ---- transport ---------------------------------------------------------

    def _auth(self, token):
        with self._lock:
            self._sock.sendall(("auth %s\n" % token).encode())
            line = self._readline()
        if line.startswith("err"):
            parts = line.split(None, 2)
            raise Error(parts[1] if len(parts) > 1 else "not_authorized", parts[2] if len(parts) > 2 else "")

    def _readline(self):
        try:
            raw = self._rfile.readline(1 << 24)
        except socket.timeout:
            self._broken = TimeoutError("no response from %s:%d within %.1f s; connection closed"
                                        % (self.host, self.port, self.timeout))
            self.close()
            raise self._broken from None
        except OSError as e:
            raw, why = b"", str(e)
        else:
            why = "the server closed the connection"
        if not raw.endswith(b"\n"):
            self._broken = ConnectionLost("connection to %s:%d lost: %s" % (self.host, self.port, why))
            self.close()
            raise self._broken
        return raw.decode("utf-8", "replace").strip()

    def send_raw(self, obj):
        """Send one JSON request object as is and return the parsed response object."""
        if self._broken is not None:
            raise self._broken
        if self._sock is None:
            raise ValueError("this Sim is closed")
        line = json.dumps(obj, separators=(",", ":"), allow_nan=False) + "\n"
        with self._lock:
            try:
                self._sock.sendall(line.encode())
            except OSError as e:
                self._broken = ConnectionLost("connection to %s:%d lost: %s" % (self.host, self.port, e))
                self.close()
                raise self._broken from e
            text = self._readline()
        try:
            resp = json.loads(text)
        except ValueError:
            raise ProtocolError("the server answered with a line that is not JSON: %r" % text[:200]) from None
        if not isinstance(resp, dict):
            raise ProtocolError("the server answered with JSON that is not an object: %r" % text[:200])
        return resp

    def _envelope(self, action, data, type, request_id):
        if type is None:
            type = "sim_control" if action in SIM_CONTROL else "command"
        req = {"type": type, "protocol_version": PROTOCOL_VERSION,
               "request_id": next(self._ids) if request_id is None else request_id,
               "action": action}
        if data is not None:
            req["data"] = data
        return req

    @staticmethod
    def raise_for(resp):
        """Raise Error(code, message) if resp is an error response."""
        if resp.get("type") == "error" or resp.get("success") is False or resp.get("status") == "error":
            err = resp.get("error") or {}
            if not isinstance(err, dict):
                err = {"message": str(err)}
            raise Error(str(err.get("code", "unknown")), str(err.get("message", "")), resp)

    def request(self, action, data=None, type=None, request_id=None):
        """Send one request and return the response's ``data`` (or raise Error).

        type defaults to ``sim_control`` for pause/resume/step_n/reset/
        set_time_scale/get_status and ``command`` otherwise.
        """
        req = self._envelope(action, data, type, request_id)
        self._note_drive(action, data)
        resp = self.send_raw(req)
        self.last_response = resp
        if "request_id" in resp and resp["request_id"] != req["request_id"]:
            raise ProtocolError("response to request %r carries request_id %r"
                                % (req["request_id"], resp["request_id"]), resp)
        self.raise_for(resp)
        return resp.get("data")

    def _note_drive(self, action, data):
        robot = data.get("robot", 0) if isinstance(data, dict) else 0
        if not isinstance(robot, (int, str)):
            return
        if action == "stop":
            self._driven.discard(robot)
        elif action in DRIVE_ACTIONS:
            self._driven.add(robot)

    def batch(self, requests):
        """Send up to 64 requests in one round trip; return their response objects in order.

        Each request is an (action, data) tuple, an action name, or a dict with
        action/data/type. Failed items do not raise; check them with raise_for().
        """
        items = []
        for r in requests:
            if isinstance(r, str):
                r = {"action": r}
            elif isinstance(r, (tuple, list)):
                r = {"action": r[0], "data": r[1] if len(r) > 1 else None}
            items.append(self._envelope(r["action"], r.get("data"), r.get("type"), r.get("request_id")))
            self._note_drive(r["action"], r.get("data"))
        if len(items) > BATCH_LIMIT:
            raise ValueError("a batch holds at most %d requests, got %d" % (BATCH_LIMIT, len(items)))
        req = {"type": "batch", "protocol_version": PROTOCOL_VERSION,
               "request_id": next(self._ids), "requests": items}
        resp = self.send_raw(req)
        self.last_response = resp
        self.raise_for(resp)
        out = resp.get("responses")
        if out is None and isinstance(resp.get("data"), dict):
            out = resp["data"].get("responses")  # pa-netgw puts them under data
        if not isinstance(out, list) or len(out) != len(items):
            raise ProtocolError("batch of %d answered with %r responses"
                                % (len(items), None if not isinstance(out, list) else len(out)), resp)
        for sent, got in zip(items, out):
            if isinstance(got, dict) and "request_id" in got and got["request_id"] != sent["request_id"]:
                raise ProtocolError("batch response out of order: %r for %r"
                                    % (got["request_id"], sent["request_id"]), resp)
        return out

    # ---- state and stepping ----------------------------------------------------

    def get_state(self, robot=0):
        """Pose (ground truth), odometry, velocity (world frame [vx, vy, vz], OceanSim's),
        twist (body frame [v, vy, w]), head, tick, sim_time and latest scan."""
        return self.request("get_state", {"robot": robot})

    def get_sensors(self, robot=0):
        """The latest sensors: {"sensors": {"scan": ...}, "scan": ...}."""
        return self.request("get_sensors", {"robot": robot})

    def step(self, v=0.0, w=0.0, head=0.0, steps=1, robot=0, **extra):
        """Apply a command, advance steps ticks, return the state (with scan) after them.

        For omnidirectional robots pass vx=, vy= (and w=) instead of v.
        """
        if "force" in extra or "thrusters" in extra:
            # a dynamic robot's force / thrusters instead of velocities
            data = {"robot": robot, "steps": int(steps)}
            data.update(extra)
            return self.request("step", data)
        data = {"robot": robot, "w": finite("w", w), "steps": int(steps)}
        if "vx" in extra or "vy" in extra:
            for k in ("vx", "vy"):
                data[k] = finite(k, extra.pop(k, 0.0))
        else:
            data["v"] = finite("v", v)
            data["head"] = finite("head", head)
        data.update(extra)
        return self.request("step", data)

    def set_velocity(self, v=0.0, w=0.0, head=0.0, robot=0):
        return self.request("set_velocity", {"robot": robot, "v": finite("v", v),
                                             "w": finite("w", w), "head": finite("head", head)})

    def set_wheels(self, left, right, head=0.0, robot=0):
        """Drive a differential robot by its wheel speeds [m/s]:
        v = (left + right) / 2, w = (right - left) / wheel_base."""
        return self.request("set_wheels", {"robot": robot, "left": finite("left", left),
                                           "right": finite("right", right),
                                           "head": finite("head", head)})

    def stop(self, robot=0):
        return self.request("stop", {"robot": robot})

    def teleport(self, x, y, theta, robot=0):
        """Set the robot's ground-truth pose [m, m, rad] (action set_pose)."""
        return self.request("set_pose", {"robot": robot, "pose": _vec("pose", (x, y, theta), 3)})

    set_pose = teleport

    # ---- forces (dynamic robots) and agents ----------------------------------

    def set_force(self, force, robot=0, body=False):
        """Hold a force [fx, fy, fz] in OceanSim's world frame (x right, y
        forward), or its body frame with body=True; fz must be 0."""
        return self.request("set_force_body" if body else "set_force_world",
                            {"robot": robot, "force": list(force)})

    def set_body_wrench(self, wrench, robot=0):
        return self.request("set_body_wrench", {"robot": robot, "wrench": list(wrench)})

    def set_body_velocity(self, velocity, robot=0):
        return self.request("set_body_velocity", {"robot": robot, "velocity": list(velocity)})

    def set_thrusters(self, robot=0, **values):
        """Thruster values in [-1, 1] by name: set_thrusters(port=1, starboard=0.5)."""
        return self.request("set_thrusters", {"robot": robot, "thrusters": values})

    def apply_force(self, force, point=(0.0, 0.0), seconds=0.0, frame="world", robot=0):
        return self.request("apply_force", {"robot": robot, "force": list(force),
                                            "point": list(point), "seconds": seconds,
                                            "frame": frame})

    def apply_torque(self, torque, seconds=0.0, robot=0):
        return self.request("apply_torque", {"robot": robot, "torque": torque,
                                             "seconds": seconds})

    def spawn_agent(self, behaviour, pose, **data):
        """An agent (constant, waypoints, random, pedestrian); data: name,
        shape, radius, size, speed, velocity, waypoints, goal."""
        data.update({"behaviour": behaviour, "pose": list(pose)})
        return self.request("spawn_agent", data)

    def move_agent(self, name, **data):
        data["name"] = name
        return self.request("move_agent", data)

    def remove_agent(self, name):
        return self.request("remove_agent", {"name": name})

    def clear_agents(self):
        return self.request("clear_agents")

    def get_agents(self):
        return self.request("get_agents")

    def get_pose(self, robot=0):
        return self.request("get_pose", {"robot": robot})

    # ---- sim_control ---------------------------------------------------------

    def pause(self):
        return self.request("pause")

    def resume(self):
        return self.request("resume")

    def reset(self):
        return self.request("reset")

    def step_n(self, n=1):
        """Advance a paused simulation by n ticks."""
        return self.request("step_n", {"steps": int(n)})

    def set_time_scale(self, scale):
        """Speed factor: 1 real time, 0 as fast as possible."""
        return self.request("set_time_scale", {"scale": finite("scale", scale)})

    def get_status(self):
        return self.request("get_status")

    # ---- robots and world ------------------------------------------------------

    def list_robots(self):
        return self.request("list_robots")

    def spawn_robot(self, **data):
        return self.request("spawn_robot", data)

    def remove_robot(self, robot):
        return self.request("remove_robot", {"robot": robot})

    def get_map_info(self):
        return self.request("get_map_info")

    def set_map(self, map_yaml=None):
        """Replace the map under the running world: a map_server YAML (sent
        as an absolute path; pa-sim reads it and refuses a file outside its
        --data_dir), or the built-in default map when
        map_yaml is None. Robots that no longer fit move to free places
        (data["robots_moved"]); the world as it then stands is what reset()
        goes back to."""
        if map_yaml is None:
            return self.request("set_map", {"map": "default"})
        return self.request("set_map", {"map_yaml": os.path.abspath(map_yaml)})

    # ---- navigation drawings (the viewer draws them) -------------------------

    def set_nav_path(self, points, robot=0):
        """Draw a planned path for a robot: [(x, y), ...], up to 1024 points
        (an empty list clears it)."""
        return self.request("set_nav_path", {
            "robot": robot, "path": _points("points", points)})

    def set_waypoints(self, points, robot=0):
        """Draw waypoints for a robot: [(x, y), ...], up to 256."""
        return self.request("set_waypoints", {
            "robot": robot, "waypoints": _points("points", points)})

    def clear_nav(self, robot=None):
        """Remove a robot's drawings, or every robot's when robot is None."""
        return self.request("clear_nav", {} if robot is None else {"robot": robot})

    def export_dataset(self, name=None, seconds=10.0, ticks=None, export_dir=None,
                       render_image=False, pack_dataset=False, robot=None, wait=None,
                       overwrite=False):
        """Have pa-sim record the next `seconds` (or `ticks`) of the world:
        map.yaml + map.png, robots.csv, poses.csv (ground truth, odometry,
        velocities of every robot every tick), scans.csv, with render_image
        frames.csv + images/NNNNNN.png (head cameras; `robot` = only its),
        and dataset.json last; with pack_dataset also <dir>.tar.gz.

        OceanSim's form: export_dir (under pa-sim's --data_dir; default
        dataset_<first tick>) waits until everything is written and returns
        {"status": "exported", "paths": [...], "archive", "images", ...}.
        The first form, name (under --dataset_dir), returns at once
        {"status": "recording", "first_tick", "last_tick", ...}; its files are
        complete once dataset.json exists. wait overrides either.
        overwrite=True reuses an export_dir that holds files (an existing
        archive is replaced); without it that is an error by name."""
        data = {}
        if name is not None:
            data["name"] = name
        if export_dir is not None:
            data["export_dir"] = export_dir
        if ticks is not None:
            data["ticks"] = int(ticks)
        else:
            data["seconds"] = finite("seconds", seconds)
        if render_image:
            data["render_image"] = True
        if pack_dataset:
            data["pack_dataset"] = True
        if robot is not None:
            data["robot"] = robot
        if wait is not None:
            data["wait"] = bool(wait)
        if overwrite:
            data["overwrite"] = True
        waits = wait if wait is not None else name is None
        if not waits or self._sock is None:
            return self.request("export_dataset", data)
        # answered when written: the recording's length and 60 s more
        self._sock.settimeout(self.timeout + 60.0 + (seconds if ticks is None else 0.0))
        try:
            return self.request("export_dataset", data)
        finally:
            if self._sock is not None:
                self._sock.settimeout(self.timeout)

    def set_scenario(self, world=None):
        """Replace the whole world (robots, obstacles, map) with a world file
        (made absolute here: pa-sim reads it), the built-in SSL fields
        "ssl-a" / "ssl-b", or the default world when world is None. Tick,
        sim time and stream seqs run on; reset() then goes back to this
        world."""
        if world is None:
            return self.request("set_scenario", {"world": "default"})
        if world in ("ssl-a", "ssl-b"):
            return self.request("set_scenario", {"world": world})
        return self.request("set_scenario", {"world": os.path.abspath(world)})

    def generate_map(self, width=20.0, height=15.0, resolution=0.05, seed=1,
                     rooms=(3, 2), clutter=2):
        """A new map of rooms joined by doors, with `clutter` boxes per
        room, the same for the same arguments (a fresh layout per episode:
        change the seed). Then as set_map()."""
        return self.request("generate_map", {
            "width": finite("width", width), "height": finite("height", height),
            "resolution": finite("resolution", resolution), "seed": int(seed),
            "rooms": _vec("rooms", rooms, 2),
            "clutter": int(clutter)})

    # ---- properties ----------------------------------------------------------

    def get_property(self, property=None, robot=0, name=None):
        """All properties of a robot (or of the robot or obstacle called name),
        or just one: {"property": ..., "value": ...}."""
        data = {"name": name} if name is not None else {"robot": robot}
        if property is not None:
            data["property"] = property
        return self.request("get_property", data)

    def set_property(self, property, value, robot=0, name=None):
        """Change one property (e.g. "max_v", "laser_noise", "colour") of a
        robot, or of the robot or obstacle called name, until the next reset.
        Returns {"property": ..., "value": ...} as applied."""
        data = {"name": name} if name is not None else {"robot": robot}
        data["property"] = property
        data["value"] = value
        return self.request("set_property", data)

    # ---- snapshots -----------------------------------------------------------

    def save_snapshot(self, name):
        """Save the world (robots with their state and properties, obstacles)
        as name ([A-Za-z0-9_-], up to 31; saving again replaces it). Kept in
        the instance's shared memory until the stack stops."""
        return self.request("save_snapshot", {"name": name})

    def load_snapshot(self, name):
        """Put the world back as saved; tick, sim time and stream seqs keep running."""
        return self.request("load_snapshot", {"name": name})


    # ---- RoboCup SSL (worlds ssl-a / ssl-b; docs/ssl.md) -----------------------

    def kick(self, speed, angle=0.0, robot=0):
        """Arm the kicker: it fires at speed [m/s] (absolute, 3-D) when the ball
        touches the dribbler bar; angle [deg] > 0 chips. speed 0 disarms."""
        return self.request("kick", {"robot": robot, "speed": finite("speed", speed),
                                     "angle": finite("angle", angle)})

    def set_dribbler(self, rpm, robot=0):
        """Dribbler speed [rpm]; > 0 holds a ball that touches the bar."""
        return self.request("set_dribbler", {"robot": robot, "rpm": finite("rpm", rpm)})

    def teleport_ball(self, x, y, z=0.0, vx=0.0, vy=0.0, vz=0.0, roll=False, present=True):
        """Put the ball at (x, y, z) [m] with a velocity [m/s]; roll = already
        rolling (else it slides first); present=False takes it off the field."""
        data = {"roll": bool(roll), "present": bool(present),
                "velocity": _vec("velocity", (vx, vy, vz), 3)}
        if present:
            data["position"] = _vec("position", (x, y, z), 3)
        return self.request("teleport_ball", data)

    def get_ball(self):
        """The ball: position [x, y, z], velocity, holder (robot or None), division."""
        return self.request("get_ball")

    def teleport_moving(self, x, y, theta, v_x=0.0, v_y=0.0, v_angular=0.0, robot=0):
        """set_pose with a world-frame velocity [m/s, m/s, rad/s] the robot keeps."""
        return self.request("set_pose", {"robot": robot, "pose": _vec("pose", (x, y, theta), 3),
                                          "v_x": finite("v_x", v_x), "v_y": finite("v_y", v_y),
                                          "v_angular": finite("v_angular", v_angular)})


Client = Sim
