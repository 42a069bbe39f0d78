"""NavEnv, NavVectorEnv and NavParallelEnv: robots reaching goals (docs/rl.md)."""

import math
import os
import struct

import numpy as np

from . import _stack
from ._stack import F, LocalStack, Conn
from .spaces_select import (AUTORESET_NEXT_STEP, Box, Dict, Discrete, MultiDiscrete, EnvBase,
                             VectorEnvBase, ParallelEnvBase)

TWO_PI = 2.0 * math.pi
_X, _Y, _TH, _BUMPED = F["x"], F["y"], F["theta"], F["bumped"]
_VW = [F["v"], F["w"]]
_UNPACK16 = struct.Struct("<%dd" % len(_stack.BIN_FIELDS)).unpack_from
# (v, w) as fractions of the robot's max_v, max_w: forward, forward-left,
# forward-right, turn left, turn right.
DISCRETE_ACTIONS = ((1.0, 0.0), (0.6, 0.5), (0.6, -0.5), (0.0, 1.0), (0.0, -1.0))
REWARD = {"progress": 1.0, "time": 0.01, "collision": 10.0, "goal": 10.0}
_counter = [0]
_GROUP_BYTES = 1 << 19  # _group_min's block of rows [bytes of ranges]


def _wrap(a):
    return (a + math.pi) % TWO_PI - math.pi


def _group_min(r, beams):
    """Min of each group of k = len/beams consecutive beams, NaN (no return, no
    scan yet) ignored: NaN only where a whole group is."""
    n = r.shape[-1]
    if n % beams:
        raise ValueError("beams=%d must divide the laser's %d beams" % (beams, n))
    if n == beams:
        return r
    # k strided passes of np.fmin, not fmin.reduce over a last axis of k: numpy
    # reduces a short inner axis slowly (1000 x 360 -> 36: 1.5 ms against 0.2 ms).
    # fmin is exact and NaN only where both are, so the order changes no bit.
    # Each pass reads every cache line of its rows: rows in blocks of at most
    # _GROUP_BYTES, so that the k passes over a block find it in the core's L2
    # (1,000 x 360 in one block: ~1.5 MB of ranges read ten times from L3).
    k = n // beams
    out = np.empty(r.shape[:-1] + (beams,), r.dtype)
    r2, o2 = r.reshape(-1, n), out.reshape(-1, beams)
    step = max(1, _GROUP_BYTES // (n * r.itemsize))
    for a in range(0, len(r2), step):
        x, o = r2[a:a + step], o2[a:a + step]
        np.copyto(o, x[:, 0::k])
        for j in range(1, k):
            np.fmin(o, x[:, j::k], out=o)
    return out


def _clip_scan(gm, rm, near, copy):
    """(fmin(gm, rm), whether each row has a beam <= near; NaN never is): what
    np.fmin and np.fmin.reduce give, bit for bit, in fewer and faster passes.
    Ranges are rarely above range_max or NaN (a miss reads range_max): one
    max over all of them (NaN if any is) says whether the clip can be a copy
    (or nothing, when gm is already a new array), and one min whether any
    beam is near at all."""
    near = np.float32(near)  # as an array <= Python float compares: in float32
    hi = np.maximum.reduce(gm, axis=None)
    if hi <= rm:  # no NaN, nothing above range_max: fmin changes nothing
        scan = gm.copy() if copy else gm
    else:
        scan = np.fmin(gm, rm)
    if np.minimum.reduce(scan, axis=None) > near:
        return scan, np.zeros(len(gm), bool)
    # per row, on the raw ranges: fmin.reduce(row) <= near iff some beam is
    return scan, np.less_equal(gm, near).any(axis=1)


def downsample(ranges, beams, range_max):
    """Output beam j = min of input beams [j*k, (j+1)*k), k = len/beams (a divisor);
    NaN (no scan yet), +inf and values above range_max become range_max."""
    r = np.asarray(ranges, dtype=np.float32)
    if r.shape[-1] == 0:  # no robot has scanned yet
        return np.full(r.shape[:-1] + (beams,), range_max, np.float32)
    # fmin: one pass that both maps NaN to range_max and clips (a fresh array)
    return np.fmin(_group_min(r, beams), np.float32(range_max))


def _check_render_mode(mode):
    if mode not in (None, "rgb_array"):
        raise ValueError("render_mode must be None or 'rgb_array', got %r" % (mode,))


def _vinfo(info, mask=None):
    """Gymnasium's vector info layout: every key an array over the sub-envs plus a
    boolean "_key" array saying which sub-envs it holds a value for (all, or mask)."""
    out = {}
    for k, v in info.items():
        out[k] = v
        out["_" + k] = np.ones(len(v), bool) if mask is None else mask.copy()
    return out


def _inflate_free(free, r):
    """free minus every cell within r cells (centre to centre) of a cell that is not;
    outside the grid is not free."""
    h, w = free.shape
    k = int(math.ceil(r))
    pad = np.zeros((h + 2 * k, w + 2 * k), bool)
    pad[k:k + h, k:k + w] = free
    out = free.copy()
    for dy in range(-k, k + 1):
        for dx in range(-k, k + 1):
            if dx * dx + dy * dy <= r * r:
                out &= pad[k + dy:k + dy + h, k + dx:k + dx + w]
    return out


class _World:
    """The stack (owned or not), the map's free cells, the robots' limits, and the
    snapshot every full reset starts from."""

    def __init__(self, n_robots, host=None, port=None, bin_dir=None, instance=None,
                 world=None, map_yaml=None, generate_map=None, stack_args=(),
                 clearance=0.1, robot_ids=None, shm=False, camera=None, atlas=False,
                 lane=False):
        self.stack = None
        self.reader = None
        self.lane = None  # shm=True's steps without pa-netgw (_lane.py)
        self.atlas = None  # camera_batch frames (NavVectorEnv observation="camera")
        self.cam_sock = None
        if host is None and port is None:
            args = list(stack_args)
            if camera:
                args += ["--camera_height", str(camera[0]), "--camera_width", str(camera[1]),
                         "--camera_hz", "200"]
            if world:
                args += ["--world", os.path.abspath(world)]
            if map_yaml:
                args += ["--map_yaml", os.path.abspath(map_yaml)]
            if n_robots > 256:
                args += ["--max_robots", str(n_robots)]
            # shm: same host, so the steps go over a Unix-domain socket too
            self.stack = LocalStack(args, bin_dir=bin_dir, instance=instance,
                                    render=bool(camera) or atlas, unix=bool(shm))
            host, port = self.stack.host, self.stack.port
        self.host, self.port = host, port
        try:
            self.conn = Conn(host, port, unix_path=self.stack.unix_path if self.stack else None)
            self.conn.request("pause", type="sim_control")
            if generate_map:
                self.conn.request("generate_map", dict(generate_map))
            first = robot_ids[0] if robot_ids is not None else \
                self.conn.request("list_robots")["robots"][0]["robot"]
            info = self.conn.request("get_property", {"robot": int(first)})["properties"]
            self.max_v, self.max_w = float(info["max_v"]), float(info["max_w"])
            self.radius = float(info["radius"])
            self.clearance = clearance
            self._load_map(self.radius + clearance)
            self.robots = self._ensure_robots(n_robots, robot_ids)
            self.laser_beams = int(info["laser_beams"])
            self.range_max = float(info["laser_range_max"])
            st = self.conn.request("get_status", type="sim_control")
            self.ticks_per_scan = max(1, int(round(st["control_hz"] / st["scan_hz"])))
            self.control_hz = float(st["control_hz"])
            _counter[0] += 1
            self.snapshot = "rl%d-%d" % (os.getpid() % 100000, _counter[0])
            self.conn.request("save_snapshot", {"name": self.snapshot})
            if shm or camera:
                from .shm import ShmReader
                inst = self.stack.instance if self.stack else shm
                if not isinstance(inst, str):
                    raise ValueError("shm=True needs an owned stack; for a running one pass "
                                     "shm='INSTANCE' (same host)")
                self.reader = ShmReader(inst, bin_dir)
                if shm and lane and os.environ.get("PA_STEP_LANE", "1") != "0":
                    from ._lane import Lane, LaneBusy
                    try:
                        self.lane = Lane(self.reader.layout, inst, self.reader, self.conn.timeout)
                        self.lane.range_max = self.range_max
                    except LaneBusy:  # held by another client: over the socket
                        self.lane = None
            if atlas:
                self._open_atlas(shm, bin_dir)
        except BaseException:
            self.close()
            raise

    def _open_atlas(self, shm, bin_dir, timeout=60.0):
        """The atlas segment, once pa-render serves camera_batch (it opens the
        segment after its GL context: wait for it on a stack just started)."""
        import time
        from .atlas import AtlasReader
        inst = self.stack.instance if self.stack else shm
        if not isinstance(inst, str):
            raise ValueError("observation='camera' on a running stack needs shm='INSTANCE' "
                             "(same host)")
        deadline = time.monotonic() + timeout
        while True:
            try:
                r = self.conn.request("camera_batch", {"width": 1, "height": 1,
                                                       "robots_range": [int(self.robots[0]), 1]})
                break
            except Exception as e:  # playarea.errors.Error "busy" until pa-render serves
                if getattr(e, "code", None) != "busy" or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.atlas = AtlasReader(inst, bin_dir)
        self.atlas.read(r["seq"], timeout=timeout)

    def cameras(self, first, count, height, width, tick, timeout=30.0):
        """Robots [first, first + count)'s head cameras drawn from this tick by
        pa-render in one atlas (camera_batch): uint8 [count, height, width, 3], a new
        array (one copy out of shared memory)."""
        self.cameras_ask(first, count, height, width)
        return self.cameras_take(tick, timeout)

    def cameras_ask(self, first, count, height, width, tick=None):
        """The first half of cameras(): the request sent, its reply not waited for,
        so that the caller's work overlaps pa-netgw's and pa-render's wake-ups and
        the drawing; cameras_take() waits. Requests on the connection meanwhile
        get their own replies (Conn.ask). tick: a tick still to come (asked before
        the step that ends there: pa-render starts once pa-sim has written it)."""
        data = {"width": int(width), "height": int(height),
                "robots_range": [int(first), int(count)]}
        if tick is not None:
            data["tick"] = int(tick)
        self.conn.ask("camera_batch", data)

    def cameras_take(self, tick, timeout=30.0):
        """The second half of cameras(): the frames of the last cameras_ask()."""
        r = self.conn.answer()
        frames, t = self.atlas.read(r["seq"], timeout=timeout)
        if t != tick:
            raise _stack.StackError("camera_batch drew tick %d, the step ended at tick %d "
                                    "(another client stepped the stack)" % (t, tick))
        return frames

    # get_terrain_grid answers at most this many (coarse) cells
    TERRAIN_MAX_CELLS = 2 << 20

    def _load_map(self, inflation):
        """The cells a robot may start or aim at, from the terrain grid inflated by the
        robot's radius plus clearance. A map over TERRAIN_MAX_CELLS is asked strided: a
        coarse cell is free only when every cell under it is, and its sample point is
        the centre of its middle cell, so every point is as exact as on the full grid.
        Points are in the world frame, under the map origin's yaw."""
        info = self.conn.request("get_map_info")
        w, h = int(info["width"]), int(info["height"])
        stride = 1
        while -(-w // stride) * -(-h // stride) > self.TERRAIN_MAX_CELLS:
            stride += 1
        fine = float(info["resolution"])
        self.stride = stride
        self.res = fine * stride  # the coarse cell (render)
        if stride == 1:  # exact: pa-netgw's distance transform
            # unknown cells block in pa-sim by default: none within reach of a start
            g = self.conn.request("get_terrain_grid", {"inflation": inflation, "unknown_blocks": True})
            grid = np.array([np.frombuffer(r.encode(), np.uint8) for r in g["rows"]])
            self.free_grid = grid == ord(".")  # row 0 = south
        else:
            # The distance transform of a map this big costs pa-netgw seconds: ask the
            # plain coarse grid and inflate here, by one coarse diagonal more so that
            # a point anywhere in a free coarse cell clears every blocked (or unknown)
            # cell under a marked one by the inflation.
            g = self.conn.request("get_terrain_grid", {"inflation": 0, "stride": stride})
            grid = np.array([np.frombuffer(r.encode(), np.uint8) for r in g["rows"]])
            self.free_grid = _inflate_free(grid == ord("."), inflation / self.res + math.sqrt(2))
        org = g["origin"]
        self.origin = (float(org[0]), float(org[1]))
        self.yaw = float(org[2]) if len(org) > 2 else 0.0
        self._cs = (math.cos(self.yaw), math.sin(self.yaw))
        corners = self.to_world([0.0, w * fine, 0.0, w * fine], [0.0, 0.0, h * fine, h * fine])
        # the world box the map covers (x0, y0, x1, y1): every robot and goal is in it
        self.bounds = (float(corners[:, 0].min()), float(corners[:, 1].min()),
                       float(corners[:, 0].max()), float(corners[:, 1].max()))
        fy, fx = np.nonzero(self.free_grid)
        # the middle fine cell of each coarse one (a short last row or column too)
        cx = fx * stride + np.minimum(stride, w - fx * stride) // 2
        cy = fy * stride + np.minimum(stride, h - fy * stride) // 2
        self.free_xy = self.to_world((cx + 0.5) * fine, (cy + 0.5) * fine)
        if len(self.free_xy) == 0:
            raise _stack.StackError("the map has no free cell for a robot")
        blocked = self.conn.request("get_terrain_grid", {"inflation": 0, "stride": stride})["rows"]
        self.wall_grid = np.array([np.frombuffer(r.encode(), np.uint8) for r in blocked]) != ord(".")

    def to_world(self, u, v):
        """Map-frame metres (from the origin, along the grid) -> world [n, 2]."""
        c, s = self._cs
        u, v = np.asarray(u, np.float64), np.asarray(v, np.float64)
        return np.stack([self.origin[0] + c * u - s * v, self.origin[1] + s * u + c * v], axis=-1)

    def to_map(self, x, y):
        """World -> map-frame metres (u along the grid's columns, v its rows)."""
        c, s = self._cs
        dx, dy = np.asarray(x, np.float64) - self.origin[0], np.asarray(y, np.float64) - self.origin[1]
        return c * dx + s * dy, -s * dx + c * dy

    def _ensure_robots(self, n, robot_ids):
        have = [r["robot"] for r in self.conn.request("list_robots")["robots"]]
        if robot_ids is not None:
            return np.asarray(robot_ids, dtype=np.int64)
        reqs = []
        rng = np.random.default_rng(12345)
        for k in range(len(have), n):
            x, y = self.free_xy[rng.integers(len(self.free_xy))]
            reqs.append(("spawn_robot", {"name": "rl%d" % k, "pose": [float(x), float(y), 0.0]}))
        tries = 0
        while reqs:
            got = self.conn.batch(reqs)
            retry = []
            for req, resp in zip(reqs, got):
                if resp.get("type") == "error":
                    x, y = self.free_xy[rng.integers(len(self.free_xy))]
                    req[1]["pose"] = [float(x), float(y), 0.0]
                    retry.append(req)
                else:
                    have.append(resp["data"]["robot"])
            reqs = retry
            tries += 1
            if tries > 50:
                raise _stack.StackError("cannot place %d robots on this map" % n)
        return np.asarray(sorted(have)[:n], dtype=np.int64)

    def sample_episode(self, rng, min_goal, max_goal, avoid=()):
        """A start pose and a goal on free cells, goal distance within [min, max]."""
        avoid = np.asarray(list(avoid), dtype=np.float64).reshape(-1, 2)
        for _ in range(1000):
            sx, sy = self.free_xy[rng.integers(len(self.free_xy))]
            if len(avoid) and np.any((avoid[:, 0] - sx) ** 2 + (avoid[:, 1] - sy) ** 2
                                     < (4 * self.radius) ** 2):
                continue
            # 64 candidates at once: rejection sampling stays cheap on big maps
            cand = self.free_xy[rng.integers(len(self.free_xy), size=64)]
            d = np.hypot(cand[:, 0] - sx, cand[:, 1] - sy)
            ok = np.nonzero((d >= min_goal) & (d <= max_goal))[0]
            if len(ok):
                gx, gy = cand[ok[0]]
                th = float(rng.uniform(-math.pi, math.pi))
                return (float(sx), float(sy), th), (float(gx), float(gy))
        raise _stack.StackError("no start/goal pair %.1f..%.1f m apart on this map" % (min_goal, max_goal))

    def new_map(self, fields):
        """A generated map under the world (generate_map), its free cells, and the
        snapshot resets start from saved again."""
        self.conn.request("generate_map", dict(fields))
        self._load_map(self.radius + self.clearance)
        self.conn.request("save_snapshot", {"name": self.snapshot})

    def subscribe_camera(self, robot):
        """Makes pa-render draw robot's head camera (frames are read from shm; the
        UDP copies pa-netgw sends to a socket nobody reads are dropped)."""
        import socket
        self.cam_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.cam_sock.bind(("127.0.0.1", 0))
        self.cam_sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.conn.request("subscribe", {"channel": "camera", "robot": int(robot),
                                        "udp_port": self.cam_sock.getsockname()[1]})

    def frame(self, robot, tick, timeout=10.0):
        """robot's camera image rendered from this tick (waits for pa-render)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            img = self.reader.frame(int(robot), int(tick))
            if img is not None:
                return img
            if time.monotonic() > deadline:
                raise _stack.StackError("no camera frame of robot %d for tick %d within %.0f s"
                                        % (robot, tick, timeout))
            time.sleep(0.0005)

    def step(self, robots, actions, steps, view=False, beams=0):
        """One step_batch: (states [n, 16], ranges [n, beams], header) over TCP or, with
        shm, the header over TCP and the observations from shared memory. view: the
        lane's ranges may be a view of the shared block (d["view"] True), valid while
        same(d) holds. beams: the scans as that many sectors (the least range of
        each, made where they were cast) where the block comes from the simulator;
        the rings' scans (another client's step replaced the block) come as cast."""
        if self.reader is None:
            return self.conn.step_batch(robots, actions, steps, beams=beams)
        if self.conn.robots_range(robots):
            if self.lane is not None:  # the step lane: no pa-netgw, no request to encode
                return self._lane_step(robots, actions, steps, view, beams)
            # pa-sim writes the block while the step's scans are in its caches; the
            # rings are read only if another client's step replaced it meanwhile
            _, _, d = self.conn.step_batch(robots, actions, steps, observe="shm", beams=beams)
            blk = self.reader.block(d.get("obs_seq", 0), len(robots))
            if blk is not None:
                return blk[0], blk[1], d
        else:
            _, _, d = self.conn.step_batch(robots, actions, steps, observe=False)
        st, rg, _ = self.reader.observe(robots, self.range_max)
        return st, rg, d

    def same(self, d):
        """Whether the shared block a step's view (d["view"]) was read from is still
        there: no other client's step replaced it."""
        return not d.get("view") or self.reader.same(d["obs_seq"])

    def _lane_step(self, robots, actions, steps, view=False, beams=0):
        """step() of a run of robots through the step lane (_lane.py): the header
        the TCP reply's would be (tick, step_tick, count, obs_seq)."""
        a = np.asarray(actions, dtype=np.float64)
        if a.ndim != 2 or a.shape != (len(robots), 2):
            raise ValueError("actions must be [n, 2] for %d robots, got shape %s"
                             % (len(robots), a.shape))
        if not np.isfinite(a).all():
            raise ValueError("actions must be finite")
        st, rg, tick, seq = self.lane.step_batch(int(robots[0]), a, steps, view, beams)
        d = {"tick": tick, "step_tick": tick, "count": len(robots), "obs_seq": seq}
        if st is None:  # another client's step replaced the block: the rings
            st, rg, _ = self.reader.observe(robots, self.range_max)
        else:
            d["view"] = view
        return st, rg, d

    def step1(self, robot, v, w, steps, beams=0):
        """One robot's step (NavEnv): (its 16 fields as a tuple of floats, its
        ranges float32 [beams], a view valid until the next request, tick).
        With the step lane (NavEnv(shm=True), _lane.py) through shared memory
        without pa-netgw; else over the socket, from the reply's block even
        with shm: for one robot (1.6 KB) that is
        cheaper than reading the rings (Shm1Reader: 4-7 us more of Python per
        step, the ring's lines written by pa-sim on the other core). beams: the
        scan as that many sectors where the simulator makes the block (0: as
        cast; the rings' scan comes as cast)."""
        if self.lane is not None:
            if not (math.isfinite(v) and math.isfinite(w)):
                raise ValueError("actions must be finite")
            return self.lane.step(robot, v, w, steps, beams)
        buf, so, got, ro, tick = self.conn.step1(robot, v, w, steps, beams=beams)
        return _UNPACK16(buf, so), np.frombuffer(buf, "<f4", got, ro), tick

    def close(self):
        atlas, self.atlas = getattr(self, "atlas", None), None
        if atlas is not None:
            atlas.close()
        lane, self.lane = getattr(self, "lane", None), None
        if lane is not None:
            lane.close()
        reader, self.reader = getattr(self, "reader", None), None
        if reader is not None:
            reader.close()
        sock, self.cam_sock = getattr(self, "cam_sock", None), None
        if sock is not None:
            sock.close()
        conn, self.conn = getattr(self, "conn", None), None
        if conn is not None:
            conn.close()
        if self.stack is not None:
            self.stack.stop()
            self.stack = None


class _NavCore:
    """What the three envs share: spaces, observations, rewards."""

    def _setup(self, world, beams, max_episode_steps, decision_ticks, action_type,
               discrete_actions, goal_radius, min_goal_dist, max_goal_dist, reward,
               terminate_on_collision, collision_margin, flat):
        self.world = world
        if world.laser_beams % beams:
            raise ValueError("beams=%d must divide the laser's %d beams" % (beams, world.laser_beams))
        # the numbers as _split checked and converted them
        self.beams = beams
        self.max_episode_steps = max_episode_steps
        self.decision_ticks = decision_ticks or world.ticks_per_scan
        self.goal_radius = goal_radius
        self.min_goal_dist = min_goal_dist
        self.max_goal_dist = max_goal_dist or 1e9
        self.reward_weights = dict(REWARD, **(reward or {}))
        unknown = set(self.reward_weights) - set(REWARD)
        if unknown:
            raise ValueError("unknown reward terms %s (known: %s)" % (sorted(unknown), sorted(REWARD)))
        self.terminate_on_collision = bool(terminate_on_collision)
        self.collision_margin = collision_margin
        self.flat = bool(flat)
        rm = np.float32(world.range_max)
        obs = {"scan": Box(0.0, rm, (self.beams,), np.float32),
               "goal": Box(np.array([0.0, -math.pi], np.float32),
                           np.array([np.inf, math.pi], np.float32), (2,), np.float32),
               "velocity": Box(-np.inf, np.inf, (2,), np.float32)}
        self.single_observation_space = (
            Box(np.concatenate([np.zeros(self.beams, np.float32), [0.0, -math.pi], [-np.inf, -np.inf]]).astype(np.float32),
                np.concatenate([np.full(self.beams, rm, np.float32), [np.inf, math.pi], [np.inf, np.inf]]).astype(np.float32),
                (self.beams + 4,), np.float32)
            if self.flat else Dict(obs))
        self.action_type = action_type
        self._act_hi = np.array([world.max_v, world.max_w])
        self._act_lo = -self._act_hi
        if action_type == "continuous":
            self.single_action_space = Box(np.array([-world.max_v, -world.max_w], np.float32),
                                           np.array([world.max_v, world.max_w], np.float32), (2,), np.float32)
        elif action_type == "discrete":
            table = discrete_actions or [(a * world.max_v, b * world.max_w) for a, b in DISCRETE_ACTIONS]
            self.action_table = np.asarray(table, dtype=np.float64).reshape(-1, 2)
            self.single_action_space = Discrete(len(self.action_table))
        else:
            raise ValueError("action_type must be 'continuous' or 'discrete', got %r" % (action_type,))

    def _sim_sectors(self):
        """The beams to ask the simulator for as sectors (step_batch's beams): the
        observation's, when fewer than the laser's; 0 (every beam) when the env
        renders, whose picture draws each one."""
        return self.beams if self.beams < self.world.laser_beams and self.render_mode is None else 0

    def _commands(self, actions):
        """[n, 2] (v, w) for the sim from a batch of actions (clipped to the limits)."""
        if self.action_type == "discrete":
            idx = np.asarray(actions, dtype=np.int64).reshape(-1)
            if np.any(idx < 0) or np.any(idx >= len(self.action_table)):
                raise ValueError("discrete action out of range [0, %d): %r" % (len(self.action_table), actions))
            return self.action_table[idx]
        a = np.asarray(actions, dtype=np.float64).reshape(-1, 2)
        if not np.isfinite(a).all():
            raise ValueError("actions must be finite, got %r" % (actions,))
        return np.minimum(np.maximum(a, self._act_lo), self._act_hi)

    def _observe(self, st, rg, goals):
        """Batched observation parts and goal distances from a step_batch reply
        (st, rg may be views of the reply buffer: every output is a new array, or
        rg itself when rg is one, as the shm reader's is)."""
        n = len(st)
        rm = np.float32(self.world.range_max)
        near = self.world.radius + self.collision_margin
        if rg.shape[1]:
            gm = _group_min(rg, self.beams)  # a new array unless k = 1
            scan, hit = _clip_scan(gm, rm, near, gm is rg and not rg.flags.owndata)
        else:
            scan = np.full((n, self.beams), rm, np.float32)
            hit = np.zeros(n, bool)
        dx = goals[:, 0] - st[:, _X]
        dy = goals[:, 1] - st[:, _Y]
        dist = np.hypot(dx, dy)
        bearing = np.arctan2(dy, dx) - st[:, _TH]
        bearing = (bearing + np.pi) % TWO_PI - np.pi
        goal = np.empty((n, 2), np.float32)
        goal[:, 0] = dist
        goal[:, 1] = bearing
        vel = st[:, _VW].astype(np.float32)
        collided = (st[:, _BUMPED] > 0) | hit
        return scan, goal, vel, dist, collided

    def _obs_one(self, scan, goal, vel):
        if self.flat:
            return np.concatenate([scan, goal, vel]).astype(np.float32)
        return {"goal": goal, "scan": scan, "velocity": vel}

    def _reward(self, prev, dist, reached, collided):
        w = self.reward_weights
        r = w["progress"] * (prev - dist) - w["time"]
        r = r + np.where(reached, w["goal"], 0.0) - np.where(collided, w["collision"], 0.0)
        return r.astype(np.float64)

    def _render_rgb(self, st, goals, rg=None, scale=None):
        """Top-down RGB: walls black, free white, robots blue, goals red, scan hits green."""
        wall = self.world.wall_grid[::-1]  # row 0 = north on screen
        h, w = wall.shape
        img = np.where(wall[..., None], np.uint8(40), np.uint8(235)).repeat(3, axis=2)
        res = self.world.res

        def px(x, y):
            u, v = self.world.to_map(x, y)
            return int(u / res), int(h - 1 - v / res)

        def disc(x, y, r, colour):
            cx, cy = px(x, y)
            rr = max(1, int(r / res))
            y0, y1, x0, x1 = max(0, cy - rr), min(h, cy + rr + 1), max(0, cx - rr), min(w, cx + rr + 1)
            if y0 >= y1 or x0 >= x1:
                return
            yy, xx = np.mgrid[y0:y1, x0:x1]
            m = (yy - cy) ** 2 + (xx - cx) ** 2 <= rr * rr
            img[y0:y1, x0:x1][m] = colour
        for i in range(len(st)):
            if rg is not None and np.isfinite(st[i, F["angle_min"]]):
                a = st[i, F["angle_min"]] + st[i, F["angle_increment"]] * np.arange(rg.shape[1]) + st[i, F["theta"]]
                ok = np.isfinite(rg[i]) & (rg[i] < st[i, F["range_max"]])
                hx = st[i, F["x"]] + rg[i][ok] * np.cos(a[ok])
                hy = st[i, F["y"]] + rg[i][ok] * np.sin(a[ok])
                hu, hv = self.world.to_map(hx, hy)
                c = (hu / res).astype(int)
                r = (h - 1 - hv / res).astype(int)
                k = (c >= 0) & (c < w) & (r >= 0) & (r < h)
                img[r[k], c[k]] = (0, 160, 0)
            disc(goals[i, 0], goals[i, 1], self.goal_radius, (220, 30, 30))
            disc(st[i, F["x"]], st[i, F["y"]], self.world.radius, (30, 60, 220))
            hx = st[i, F["x"]] + self.world.radius * math.cos(st[i, F["theta"]])
            hy = st[i, F["y"]] + self.world.radius * math.sin(st[i, F["theta"]])
            disc(hx, hy, res, (255, 255, 0))
        return img


_ENV_DEFAULTS = dict(beams=36, max_episode_steps=300, decision_ticks=None, action_type="continuous",
                     discrete_actions=None, goal_radius=0.3, min_goal_dist=1.0, max_goal_dist=5.0,
                     reward=None, terminate_on_collision=True, collision_margin=0.0, flat=False)


STEP_TICKS_MAX = 1000000  # the most ticks one step asks: PA_CMD_STEPS_MAX (shm/pa_layout.h)


def _whole(name, v, lo, hi):
    """v as an int in [lo, hi], or ValueError naming the argument (2.5 is not 2)."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        if not (isinstance(v, (float, np.floating)) and float(v).is_integer()):
            raise ValueError("%s must be a whole number in [%d, %d], got %r" % (name, lo, hi, v))
    if not lo <= v <= hi:
        raise ValueError("%s must be in [%d, %d], got %r" % (name, lo, hi, v))
    return int(v)


def _real(name, v, lo, open_lo=False):
    """v as a finite float >= lo (> lo when open_lo), or ValueError naming it."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (name, v)) from None
    if not math.isfinite(f) or f < lo or (open_lo and f == lo):
        raise ValueError("%s must be a finite number %s %g, got %r" % (name, ">" if open_lo else ">=", lo, v))
    return f


def _split(kw):
    """The env's own arguments out of kw, checked before any stack starts."""
    env = {k: kw.pop(k, v) for k, v in _ENV_DEFAULTS.items()}
    env["beams"] = _whole("beams", env["beams"], 1, 1 << 20)
    env["max_episode_steps"] = _whole("max_episode_steps", env["max_episode_steps"], 1, 1 << 62)
    if env["decision_ticks"]:  # None or 0: the laser's scan period
        env["decision_ticks"] = _whole("decision_ticks", env["decision_ticks"], 1, STEP_TICKS_MAX)
    env["goal_radius"] = _real("goal_radius", env["goal_radius"], 0.0, open_lo=True)
    env["min_goal_dist"] = _real("min_goal_dist", env["min_goal_dist"], 0.0)
    if env["max_goal_dist"]:  # None or 0: no bound
        env["max_goal_dist"] = _real("max_goal_dist", env["max_goal_dist"], env["min_goal_dist"])
    env["collision_margin"] = _real("collision_margin", env["collision_margin"], 0.0)
    return env, kw


class NavEnv(_NavCore, EnvBase):
    """One robot reaching goals; Gymnasium's Env API (docs/rl.md).

    NavEnv() starts its own stack on free ports (close() stops it); NavEnv(host=, port=)
    uses robot `robot` of a running one (it pauses it and reloads its snapshot on reset).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, host=None, port=None, robot=0, render_mode=None, bin_dir=None,
                 instance=None, world=None, map_yaml=None, generate_map=None, stack_args=(),
                 shm=False, camera=None, randomize_map=None, **kw):
        envkw, kw = _split(kw)
        if kw:
            raise TypeError("NavEnv got unknown arguments %s" % sorted(kw))
        self.randomize_map = dict(randomize_map) if randomize_map else None
        _check_render_mode(render_mode)
        if camera is not None:
            camera = tuple(int(v) for v in camera)
            if len(camera) != 2 or not all(1 <= v <= 1080 for v in camera):
                raise ValueError("camera must be (height, width) in pixels, got %r" % (camera,))
            if envkw["flat"]:
                raise ValueError("camera images do not go into a flat observation: flat=False")
            if host is not None or port is not None:
                if not isinstance(shm, str):
                    raise ValueError("camera on a running stack needs shm='INSTANCE' (same host)")
        self.render_mode = render_mode
        self.camera = camera
        w = _World(1, host, port, bin_dir, instance, world, map_yaml, generate_map, stack_args,
                   robot_ids=None if host is None and port is None else [robot], shm=shm,
                   camera=camera, lane=True)
        try:
            self._setup(w, **envkw)
            if camera:
                w.subscribe_camera(w.robots[0])
                spaces = dict(self.single_observation_space.spaces)
                spaces["camera"] = Box(0, 255, camera + (3,), np.uint8)
                self.single_observation_space = Dict(spaces)
        except BaseException:
            w.close()
            raise
        self.observation_space = self.single_observation_space
        self.action_space = self.single_action_space
        self.robot = int(w.robots[0])
        self._rm = np.float32(w.range_max)
        self._collide_at = w.radius + self.collision_margin
        self._goal = None
        self._last = None
        self._tick0 = 0

    def reset(self, *, seed=None, options=None):
        # Gymnasium's (or the local stand-in's) seeding: np_random is
        # default_rng(seed)'s stream, np_random_seed the seed, np_random settable
        super().reset(seed=seed)
        options = options or {}
        c = self.world.conn
        gm = options.get("generate_map")
        if gm is None and self.randomize_map is not None:
            # domain randomisation: a new building per episode, seeded by the episode's seed
            gm = dict(self.randomize_map, seed=int(self.np_random.integers(1, 2 ** 31)))
        if gm is not None:
            self.world.new_map(gm)
        c.request("load_snapshot", {"name": self.world.snapshot})
        for _ in range(100):
            start, goal = self.world.sample_episode(self.np_random, self.min_goal_dist, self.max_goal_dist)
            start = tuple(options.get("start", start))
            goal = tuple(options.get("goal", goal))
            try:
                c.request("set_pose", {"robot": self.robot, "pose": list(start)})
                break
            except Exception as e:  # blocked_pose: an obstacle the grid does not show
                if "start" in options or getattr(e, "code", "") != "blocked_pose":
                    raise
        else:  # else the episode would begin wherever the robot was, not at info["start"]
            raise _stack.StackError("reset: every sampled start pose was blocked (100 tries)")
        self._goal = np.array([goal], dtype=np.float64)
        self._gx, self._gy = float(goal[0]), float(goal[1])
        # held still for a decision period, and at least a scan period: the first
        # observation has a scan from the start pose (never one older than the load)
        hold = max(self.decision_ticks, self.world.ticks_per_scan)
        vals, rg, tick = self.world.step1(self.robot, 0.0, 0.0, hold)
        obs, self._prev, _ = self._observe1(vals, rg)
        self._steps = 0
        self._last = (vals, rg)  # rg: a view of the reply buffer until the next step
        # the sim's tick runs on across snapshot loads: infos count the episode's
        # ticks, so the same seed gives the same infos
        self._tick0 = tick - hold
        info = {"start": start, "goal": goal, "distance": self._prev, "tick": tick - self._tick0}
        return self._with_camera(obs, tick), info

    def _observe1(self, vals, rg):
        """_observe for the one robot from its 16 fields (floats) and ranges
        (float32 [beams]), in Python floats and a few numpy calls: (observation,
        goal distance, collided). Every array it returns is new."""
        x, y, th, v, _, w = vals[:6]
        dx, dy = self._gx - x, self._gy - y
        dist = math.hypot(dx, dy)
        bearing = (math.atan2(dy, dx) - th + math.pi) % TWO_PI - math.pi
        beams = self.beams
        if self.flat:
            obs = np.empty(beams + 4, np.float32)
            scan = obs[:beams]
        else:
            scan = None
        if len(rg):
            gm = _group_min(rg, beams) if len(rg) != beams else rg
            scan = np.fmin(gm, self._rm, out=scan)  # NaN (no return) -> range_max
            raw_min = float(np.fmin.reduce(gm))  # NaN: no return, never collides
        else:
            if scan is None:
                scan = np.empty(beams, np.float32)
            scan.fill(self._rm)
            raw_min = math.inf
        collided = vals[_BUMPED] > 0 or raw_min <= self._collide_at
        if self.flat:
            obs[beams:] = (dist, bearing, v, w)
        else:
            gv = np.array((dist, bearing, v, w), np.float32)
            obs = {"goal": gv[:2], "scan": scan, "velocity": gv[2:]}
        return obs, dist, collided

    def _command1(self, action):
        """The one robot's (v, w) for the sim as floats, clipped to its limits."""
        if self.action_type == "discrete":
            cmd = self._commands(action)
            if len(cmd) != 1:
                raise ValueError("expected one discrete action, got %r" % (action,))
            v, w = cmd[0].tolist()
            return v, w
        if type(action) is np.ndarray and action.shape == (2,):
            v, w = action.tolist()  # float32 -> float: exact, as asarray(float64) is
        else:
            a = np.asarray(action, dtype=np.float64)
            if a.size != 2:
                raise ValueError("expected an action [v, w], got %r" % (action,))
            v, w = a.reshape(2).tolist()
        if not (math.isfinite(v) and math.isfinite(w)):
            raise ValueError("actions must be finite, got %r" % (action,))
        mv, mw = self.world.max_v, self.world.max_w
        return (mv if v > mv else -mv if v < -mv else float(v),
                mw if w > mw else -mw if w < -mw else float(w))

    def _with_camera(self, obs, tick):
        if self.camera:
            obs["camera"] = self.world.frame(self.robot, tick)
        return obs

    def step(self, action):
        if self._goal is None:
            raise RuntimeError("call reset() before step()")
        v, w = self._command1(action)
        vals, rg, tick = self.world.step1(self.robot, v, w, self.decision_ticks,
                                          self._sim_sectors())
        obs, dist, collided = self._observe1(vals, rg)
        reached = dist <= self.goal_radius
        rw = self.reward_weights
        r = rw["progress"] * (self._prev - dist) - rw["time"]
        if reached:
            r += rw["goal"]
        if collided:
            r -= rw["collision"]
        self._prev = dist
        self._steps += 1
        self._last = (vals, rg)  # rg: a view of the reply buffer until the next step
        terminated = reached or (collided and self.terminate_on_collision)
        truncated = self._steps >= self.max_episode_steps and not terminated
        info = {"distance": dist, "is_success": reached, "collision": collided,
                "tick": tick - self._tick0, "pose": vals[:3]}
        return self._with_camera(obs, tick), float(r), terminated, truncated, info

    def render(self):
        if self._last is None:
            return None
        vals, rg = self._last
        return self._render_rgb(np.array([vals]), self._goal, rg.reshape(1, -1))

    def close(self):
        if getattr(self, "world", None) is not None:
            self.world.close()
            self.world = None


ATLAS_MAX_BYTES = 32 << 20  # pa_layout.h PA_ATLAS_MAX_BYTES: frames of one camera_batch


def _check_camera_obs(observation, camera_size, n, envkw):
    """None for observation='vector', else (height, width) after checking them."""
    if observation not in ("vector", "camera"):
        raise ValueError("observation must be 'vector' or 'camera', got %r" % (observation,))
    if observation == "vector":
        return None
    try:
        h, w = (int(v) for v in camera_size)
    except (TypeError, ValueError):
        raise ValueError("camera_size must be (height, width), got %r" % (camera_size,)) from None
    if not (1 <= h <= 1024 and 1 <= w <= 1024):
        raise ValueError("camera_size (%d, %d): height and width must be in 1..1024" % (h, w))
    if n * h * w * 3 > ATLAS_MAX_BYTES:
        raise ValueError("%d cameras of %dx%d are %d bytes, over the %d-byte atlas: fewer "
                         "envs or smaller images" % (n, w, h, n * h * w * 3, ATLAS_MAX_BYTES))
    if envkw.get("flat"):
        raise ValueError("camera images do not go into a flat observation: flat=False")
    return (h, w)


class NavVectorEnv(_NavCore, VectorEnvBase):
    """num_envs robots in one stack, stepped together by one step_batch per step.

    Autoreset follows Gymnasium 1.x's default (next-step) mode: the step after an
    episode ends resets that sub-env (its action is ignored; reward 0, not done).
    The robots share one map; with interact=False (the default, an owned stack
    started with --ghost_robots) they neither collide with nor see each other in
    their scans; interact=True, or a running stack without that flag, lets them.
    observation="camera" adds every robot's head camera of the step's tick,
    uint8 [num_envs, *camera_size, 3] (camera_size = (height, width)), drawn by
    pa-render in one pass (camera_batch) and read from shared memory (docs/rl.md);
    being same-host anyway, such an env on its own stack steps as shm=True does.
    """

    metadata = {"render_modes": ["rgb_array"], "autoreset_mode": AUTORESET_NEXT_STEP}

    def __init__(self, num_envs=4, host=None, port=None, render_mode=None, bin_dir=None,
                 instance=None, world=None, map_yaml=None, generate_map=None, stack_args=(),
                 shm=False, interact=False, observation="vector", camera_size=(84, 84), **kw):
        envkw, kw = _split(kw)
        if kw:
            raise TypeError("NavVectorEnv got unknown arguments %s" % sorted(kw))
        cam = _check_camera_obs(observation, camera_size, int(num_envs), envkw)
        self.observation = observation
        self.camera_size = cam
        self.interact = bool(interact)
        if not interact:
            stack_args = tuple(stack_args) + ("--ghost_robots",)
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError("num_envs must be >= 1")
        if generate_map is None and world is None and map_yaml is None and self.num_envs > 16:
            side = max(12.0, round(math.sqrt(self.num_envs * 3.0)))
            generate_map = {"width": side, "height": side, "seed": 1}
        _check_render_mode(render_mode)
        self.render_mode = render_mode
        if cam is not None and not shm and host is None and port is None:
            shm = True  # the frames come through shared memory: the steps too
        w = _World(self.num_envs, host, port, bin_dir, instance, world, map_yaml, generate_map,
                   stack_args, shm=shm, atlas=cam is not None, lane=True)
        try:
            self._setup(w, **envkw)
            if cam is not None:
                r = w.robots
                if np.any(np.diff(r) != 1):
                    raise ValueError("observation='camera' needs the robots to be one run of ids "
                                     "(camera_batch's robots_range), got %s" % list(r))
                self.single_observation_space = Dict(dict(
                    self.single_observation_space.spaces,
                    camera=Box(0, 255, cam + (3,), np.uint8)))
        except BaseException:
            w.close()
            raise
        n = self.num_envs
        self.robots = w.robots
        if self.flat:
            s = self.single_observation_space
            self.observation_space = Box(np.broadcast_to(s.low, (n,) + s.shape),
                                         np.broadcast_to(s.high, (n,) + s.shape), (n,) + s.shape, np.float32)
        else:
            self.observation_space = Dict({k: Box(np.broadcast_to(s.low, (n,) + s.shape),
                                                  np.broadcast_to(s.high, (n,) + s.shape),
                                                  (n,) + s.shape, s.dtype)
                                           for k, s in self.single_observation_space.items()})
        if self.action_type == "discrete":
            self.action_space = MultiDiscrete([len(self.action_table)] * n)
        else:
            a = self.single_action_space
            self.action_space = Box(np.broadcast_to(a.low, (n, 2)), np.broadcast_to(a.high, (n, 2)),
                                    (n, 2), np.float32)
        self._rngs = [np.random.default_rng() for _ in range(n)]
        self._goals = np.zeros((n, 2))
        self._starts = np.zeros((n, 3))
        self._autoreset = np.zeros(n, dtype=bool)
        self._last = None

    def _place(self, idx, st):
        """Teleports robots idx to seeded starts and picks their goals: one batch
        request per 64 robots, again only for the ones a start was refused to (a
        robot stands there: only without --ghost_robots)."""
        # where the others stand: only robots that see each other avoid them
        pos = {i: (float(st[i, F["x"]]), float(st[i, F["y"]])) for i in range(self.num_envs)} \
            if self.interact else None
        todo = list(idx)
        for _ in range(200):
            plans = {}
            for i in todo:
                avoid = [p for j, p in pos.items() if j != i] if self.interact else ()
                plans[i] = self.world.sample_episode(self._rngs[i], self.min_goal_dist,
                                                     self.max_goal_dist, avoid)
            resp = self.world.conn.batch([("set_pose", {"robot": int(self.robots[i]),
                                                        "pose": list(plans[i][0])}) for i in todo])
            left = []
            for i, r in zip(todo, resp):
                if r.get("type") == "error":
                    left.append(i)
                else:
                    if pos is not None:
                        pos[i] = plans[i][0][:2]
                    self._starts[i] = plans[i][0]
                    self._goals[i] = plans[i][1]
            if not left:
                return
            todo = left
        raise _stack.StackError("cannot place robots %s" % [int(self.robots[i]) for i in todo])

    def reset(self, *, seed=None, options=None):
        n = self.num_envs
        if seed is not None:
            seeds = [seed + i for i in range(n)] if isinstance(seed, int) else list(seed)
            self._rngs = [np.random.default_rng(s) for s in seeds]
            if isinstance(seed, int):  # the vector env's own np_random, as Gymnasium's
                super().reset(seed=seed)
        c = self.world.conn
        c.request("load_snapshot", {"name": self.world.snapshot})
        # Where the robots stand now; a whole decision period, so that every
        # decision starts at the same tick phase (robot i scans at tick + i = 0
        # mod ticks_per_scan; a snapshot load keeps the tick running).
        st, _, _ = self.world.step(self.robots, np.zeros((n, 2)), self.decision_ticks)
        # Park every robot far from its start first: a start is only checked
        # against robots already placed.
        self._place(list(range(n)), st)
        st, rg, d = self.world.step(self.robots, np.zeros((n, 2)), self.decision_ticks)
        self._frames()
        self._cam_tick = int(d["tick"])
        scan, g, vel, dist, _ = self._observe(st, rg, self._goals)
        self._prev = dist.copy()
        self._steps = np.zeros(n, dtype=np.int64)
        self._autoreset[:] = False
        self._last = (st, rg)  # views of the reply buffer until the next step: no copy
        self._last_d = d
        return self._batch_obs(scan, g, vel), _vinfo({
            "start": self._starts.copy(), "goal": self._goals.copy(), "distance": dist.copy(),
            "tick": np.full(n, d["tick"], np.int64)})

    def _frames(self, tick=None):
        """observation='camera': asks for every robot's head camera of the newest
        tick (tick: of one still to come, asked before the step that ends there);
        _batch_obs takes them, of the tick in _cam_tick, after the rest of the
        step's work, which so overlaps the request's wake-ups and the drawing."""
        if self.camera_size is not None:
            h, w = self.camera_size
            self.world.cameras_ask(int(self.robots[0]), self.num_envs, h, w, tick)

    def _batch_obs(self, scan, g, vel):
        if self.flat:
            return np.concatenate([scan, g, vel], axis=1).astype(np.float32)
        obs = {"goal": g, "scan": scan, "velocity": vel}
        if self.camera_size is not None:
            obs["camera"] = self.world.cameras_take(self._cam_tick)
        return obs

    def step(self, actions):
        n = self.num_envs
        cmd = self._commands(actions)
        if len(cmd) != n:
            raise ValueError("expected %d actions, got %d" % (n, len(cmd)))
        rs = np.nonzero(self._autoreset)[0]
        if len(rs):
            self._place(list(rs), self._last[0])
            cmd = cmd.copy()
            cmd[rs] = 0.0
        obs, rew, term, trunc, dist, reached, collided, d = self._advance(cmd)
        if len(rs):
            rew[rs] = 0.0
            term[rs] = trunc[rs] = False
            self._steps[rs] = 0
        self._autoreset = term | trunc
        if len(rs):
            keep = ~self._reset_mask(rs)
            reached, collided = reached & keep, collided & keep
        info = _vinfo({"distance": dist, "is_success": reached, "collision": collided,
                       "tick": np.full(n, d["tick"], np.int64)})
        if len(rs):  # the sub-envs this step reset: their new start and goal
            m = self._reset_mask(rs)
            info.update(_vinfo({"start": self._starts.copy(), "goal": self._goals.copy()}, m))
        return obs, rew, term, trunc, info

    def _advance(self, cmd):
        """Every robot one decision step on: batched observation, rewards,
        terminated, truncated, distances, reached, collided, the step's reply."""
        # Fewer observation beams than the laser's: _group_min's output is a new
        # array, so the lane's ranges need no copy out of the shared block first
        # (~0.3 ms at 1,000 x 360), only the check that it was not replaced meanwhile
        view = self.beams < self.world.laser_beams
        # ... and the simulator makes them (their sectors' least ranges, the same
        # numbers as _group_min's) while it has the scans in its caches: 10x fewer
        # bytes to copy and no pass over 360 beams here
        sectors = self._sim_sectors()
        last = getattr(self, "_last_d", None)
        if last is not None:  # asked before the step: pa-render starts at its last tick
            self._frames(int(last["tick"]) + self.decision_ticks)
        st, rg, d = self.world.step(self.robots, cmd, self.decision_ticks, view, sectors)
        if last is None:
            self._frames()
        self._cam_tick = int(d["tick"])
        scan, g, vel, dist, collided = self._observe(st, rg, self._goals)
        if not self.world.same(d):  # another client's step: the rings, as step() would
            st, rg, _ = self.world.reader.observe(self.robots, self.world.range_max)
            d = dict(d, view=False)
            scan, g, vel, dist, collided = self._observe(st, rg, self._goals)
        reached = dist <= self.goal_radius
        rew = self._reward(self._prev, dist, reached, collided)
        self._steps += 1
        term = reached | (collided & self.terminate_on_collision)
        trunc = (self._steps >= self.max_episode_steps) & ~term
        self._prev = dist.copy()
        self._last = (st, rg)  # views of the reply buffer until the next step: no copy
        self._last_d = d  # (rg a view of the shared block: render checks it is still there)
        return self._batch_obs(scan, g, vel), rew, term, trunc, dist, reached, collided, d

    def _reset_mask(self, rs):
        m = np.zeros(self.num_envs, dtype=bool)
        m[rs] = True
        return m

    def render(self):
        if self._last is None:
            return None
        st, rg = self._last
        if not self.world.same(getattr(self, "_last_d", {})):  # the block was replaced
            _, rg, _ = self.world.reader.observe(self.robots, self.world.range_max)
        return self._render_rgb(st, self._goals, rg)

    def close(self, **kw):
        if getattr(self, "world", None) is not None:
            self.world.close()
            self.world = None
        self.closed = True


class NavParallelEnv(_NavCore, ParallelEnvBase):
    """PettingZoo's parallel API: one agent per robot in one shared world; agents see
    and can hit each other. A finished agent stops and stays where it is."""

    metadata = {"render_modes": ["rgb_array"], "name": "playarea_nav_v0", "is_parallelizable": True}

    def __init__(self, num_agents=4, host=None, port=None, render_mode=None, bin_dir=None,
                 instance=None, world=None, map_yaml=None, generate_map=None, stack_args=(),
                 shm=False, **kw):
        _check_render_mode(render_mode)
        self._vec = NavVectorEnv(num_agents, host, port, render_mode, bin_dir, instance, world,
                                 map_yaml, generate_map, stack_args, shm=shm, interact=True, **kw)
        self.render_mode = render_mode
        self.possible_agents = ["robot_%d" % i for i in range(num_agents)]
        self.agents = []
        self._idx = {a: i for i, a in enumerate(self.possible_agents)}
        self.observation_spaces = {a: self._vec.single_observation_space for a in self.possible_agents}
        self.action_spaces = {a: self._vec.single_action_space for a in self.possible_agents}
        # state(): every robot's (x, y, theta), then every goal's (x, y), inside the map
        x0, y0, x1, y1 = self._vec.world.bounds
        n = num_agents
        lo = np.array([x0, y0, -math.pi] * n + [x0, y0] * n, np.float32)
        hi = np.array([x1, y1, math.pi] * n + [x1, y1] * n, np.float32)
        self.state_space = Box(lo, hi, (5 * n,), np.float32)

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    @property
    def world(self):
        return self._vec.world

    def _split_obs(self, obs, idx):
        if isinstance(obs, dict):
            return {a: {k: v[self._idx[a]] for k, v in obs.items()} for a in idx}
        return {a: obs[self._idx[a]] for a in idx}

    def reset(self, seed=None, options=None):
        obs, info = self._vec.reset(seed=seed, options=options)
        self.agents = list(self.possible_agents)
        self._active = np.ones(len(self.possible_agents), dtype=bool)
        return self._split_obs(obs, self.agents), {a: {"distance": float(info["distance"][self._idx[a]])}
                                                    for a in self.agents}

    def step(self, actions):
        v = self._vec
        n = v.num_envs
        if v.action_type == "discrete":
            full = np.zeros(n, dtype=np.int64)
        else:
            full = np.zeros((n, 2))
        for a, act in actions.items():
            if a not in self._idx or not self._active[self._idx[a]]:
                raise ValueError("agent %r is not live" % (a,))
            full[self._idx[a]] = act
        cmd = v._commands(full)
        cmd[~self._active] = 0.0
        obs, rew, term, trunc, dist, reached, collided, _ = v._advance(cmd)
        live = list(self.agents)
        out = (self._split_obs(obs, live), {a: float(rew[self._idx[a]]) for a in live},
               {a: bool(term[self._idx[a]]) for a in live}, {a: bool(trunc[self._idx[a]]) for a in live},
               {a: {"distance": float(dist[self._idx[a]]), "is_success": bool(reached[self._idx[a]]),
                    "collision": bool(collided[self._idx[a]])} for a in live})
        for a in live:
            i = self._idx[a]
            if term[i] or trunc[i]:
                self._active[i] = False
        self.agents = [a for a in live if self._active[self._idx[a]]]
        return out

    def render(self):
        return self._vec.render()

    def state(self):
        st = self._vec._last[0]
        return np.concatenate([st[:, :3].reshape(-1), self._vec._goals.reshape(-1)]).astype(np.float32)

    def close(self):
        self._vec.close()
