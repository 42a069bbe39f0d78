#!/usr/bin/env python3
"""Stage 4.3 against playarea's simulator, side by side in one run (issue 37).

Real-time factor (simulated s per wall s) of a Stage binary built elsewhere
(rtv/Stage; nothing is built or downloaded here) and of build/bin/bench-sim,
alternately (Stage, playarea, Stage, ...) for --rounds rounds:
  1 robot     default map  PA_BENCH_LOOP=1 bench-sim S --rtf1 (the real loop)
  N robots    default map  PA_BENCH_ROBOTS=N bench-sim S --rtf1
  1000 robots 100 m office bench-sim S --phases (ts_office, 0.05 m cells)
Stage gets the same grids as PNGs (`pa-map convert default`; the office drawn
here cell for cell), `resolution` = the cell, interval_sim 5 (200 Hz), 0.18 m
discs with 360-beam 12 m rangers at 10 Hz, each robot driving set_drive's
constant (v, w) (`velocity`; --stage-drive wander: Stage's wander.so), in a
temporary directory. Stage's start-up is taken out with a second run of the
same world to quit_time 0.1 s: RTF = (sim_s - 0.1) / (wall - wall_0.1).
Peak RSS: the child's VmHWM. Every child is killed and the directory removed
on any exit.

  bench/stage_compare.py --stage /tmp/stage-inst/bin/stage [--bin-dir build/bin]
      [--robots 1,100,1000] [--sim-seconds 300,20,4] [--pa-seconds 3]
      [--rounds 2] [--threads 1] [--stage-drive fixed|wander]
"""

import argparse
import collections
import datetime
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "clients", "python"))
from playarea.frames import encode_png  # noqa: E402

RADIUS = 0.18  # playarea's default robot radius [m] (maps/pa_props.h)
RANGE_MIN, RANGE_MAX = 0.15, 12.0  # its default laser (sim/sim_model.c)
MARGIN = 0.05  # clearance a placed robot keeps (sim/sim_place.c, bench)
STARTUP_S = 0.1  # quit_time of the start-up run
M64 = (1 << 64) - 1


def unit(state):
    """splitmix64 in [0, 1) (common/pa_rng.h); state is a 1-element list."""
    state[0] = z = (state[0] + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return ((z ^ (z >> 31)) >> 11) / 9007199254740992.0


# cells[y * w + x] = 1 where robots and beams are blocked; row 0 at y = oy
Grid = collections.namedtuple("Grid", "w h res ox oy cells")


def office_grid(w=2000, h=2000):
    """bench-sim's ts_office (tests/sim_office.h): 8 m rooms, 1.2 m doors,
    w * h / 2000 seeded furniture boxes, 0.05 m cells, origin (0, 0)."""
    col = bytes(1 if x % 160 < 3 else 0 for x in range(w))
    row = bytes(1 if (x % 160) // 24 != 4 else 0 for x in range(w))
    both = bytes(a | b for a, b in zip(col, row))
    edge = lambda r: bytes([1, 1]) + r[2:w - 2] + bytes([1, 1])
    variants = {(c, r): edge(both if c and r else col if c else row if r
                             else bytes(w)) for c in (0, 1) for r in (0, 1)}
    cells = bytearray(b"\x01" * w * h)  # rows 0, 1, h - 2, h - 1: wall
    for y in range(2, h - 2):
        cells[y * w:(y + 1) * w] = variants[((y % 160) // 24 != 3, y % 160 < 3)]
    rng = [99]
    for _ in range(w * h // 2000):  # left to right: x, y, bw, bh as in C
        x, y = int(unit(rng) * (w - 20)), int(unit(rng) * (h - 20))
        bw, bh = 2 + int(unit(rng) * 14), 2 + int(unit(rng) * 14)
        for j in range(y, y + bh):
            cells[j * w + x:j * w + x + bw] = b"\x01" * bw
    return Grid(w, h, 0.05, 0.0, 0.0, cells)


def default_grid(bin_dir, tmp):
    """The built-in default map as playarea loads it, through its own tool
    (pa-map convert default ... --image .pgm); unknown cells block."""
    yaml, pgm = os.path.join(tmp, "default.yaml"), os.path.join(tmp, "default.pgm")
    conv = subprocess.run([os.path.join(bin_dir, "pa-map"), "convert", "default",
                           yaml, "--image", pgm], capture_output=True, text=True)
    if conv.returncode != 0:
        sys.exit("stage_compare: pa-map convert default failed: " + conv.stderr)
    meta = {k.strip(): v.strip() for k, _, v in (l.partition(":") for l in open(yaml))}
    res = float(meta["resolution"])
    ox, oy = (float(t) for t in meta["origin"].strip("[]").split(",")[:2])
    neg = int(meta.get("negate", "0"))
    free_t = float(meta.get("free_thresh", "0.196"))
    data = open(pgm, "rb").read()
    head = data.split(maxsplit=4)  # P5 w h maxval pixels
    if head[0] != b"P5" or int(head[3]) != 255:
        sys.exit("stage_compare: %s: not an 8-bit P5 PGM" % pgm)
    w, h = int(head[1]), int(head[2])
    pix = data[len(data) - w * h:]
    block = bytes(((v if neg else 255 - v) / 255.0) >= free_t for v in range(256))
    cells = bytearray(w * h)
    for r in range(h):  # image row 0 is the top
        cells[(h - 1 - r) * w:(h - r) * w] = pix[r * w:(r + 1) * w].translate(block)
    return Grid(w, h, res, ox, oy, cells)


def write_png(path, g):
    """The grid as a PNG for Stage (playarea.frames.encode_png, grey as RGB):
    black = blocking, top row first (Stage flips y)."""
    grey = bytes([255] + [0] * 255)
    rows = b"".join(bytes(g.cells[y * g.w:(y + 1) * g.w]).translate(grey)
                    for y in range(g.h - 1, -1, -1))
    rgb = bytearray(3 * len(rows))
    rgb[0::3] = rgb[1::3] = rgb[2::3] = rows
    with open(path, "wb") as f:
        f.write(encode_png(g.w, g.h, rgb))


def blocked_bbox(g):
    """(x0, y0, x1, y1) in cells of the blocking cells: Stage scales a
    bitmap's dark pixels, not the image, to the model's size."""
    ys = [y for y in range(g.h) if any(g.cells[y * g.w:(y + 1) * g.w])]
    x0 = min(g.cells.index(1, y * g.w, (y + 1) * g.w) - y * g.w for y in ys)
    x1 = max(g.cells.rindex(1, y * g.w, (y + 1) * g.w) - y * g.w for y in ys)
    return x0, ys[0], x1 + 1, ys[-1] + 1


def fits(g, placed, x, y):
    """Whether a disc of RADIUS at (x, y) keeps MARGIN from every blocking
    cell (as a square) and every robot already placed."""
    need = RADIUS + MARGIN
    cx0, cx1 = (math.floor((x + d - g.ox) / g.res) for d in (-need, need))
    cy0, cy1 = (math.floor((y + d - g.oy) / g.res) for d in (-need, need))
    if cx0 < 0 or cy0 < 0 or cx1 >= g.w or cy1 >= g.h:
        return False
    for cy in range(cy0, cy1 + 1):
        base = cy * g.w
        if not any(g.cells[base + cx0:base + cx1 + 1]):
            continue
        dy = max(g.oy + cy * g.res - y, 0.0, y - g.oy - (cy + 1) * g.res)
        for cx in range(cx0, cx1 + 1):
            if g.cells[base + cx]:
                dx = max(g.ox + cx * g.res - x, 0.0, x - g.ox - (cx + 1) * g.res)
                if dx * dx + dy * dy < need * need:
                    return False
    lim = (2 * RADIUS + MARGIN) ** 2  # robots: in 1 m buckets
    return not any((px - x) ** 2 + (py - y) ** 2 < lim
                   for bx in (-1, 0, 1) for by in (-1, 0, 1)
                   for px, py in placed.get((int(x // 1) + bx, int(y // 1) + by), ()))


def place(g, n):
    """Robot 0 on the fitting cell centre nearest (0, 0) (sim_place.c's
    rule), the others as bench-sim's scatter: seeded (11) random cell
    centres with MARGIN clearance. Returns [(x, y, theta)]."""
    placed, poses = {}, []

    def put(x, y, t):
        poses.append((x, y, t))
        placed.setdefault((int(x // 1), int(y // 1)), []).append((x, y))

    centre = lambda cx, cy: (g.ox + (cx + 0.5) * g.res, g.oy + (cy + 0.5) * g.res)
    fx, fy = -g.ox / g.res, -g.oy / g.res  # (0, 0) in cells
    for reach in (16, 64, 256, 1024, 4096):
        near = sorted((math.hypot(cx + 0.5 - fx, cy + 0.5 - fy), cx, cy)
                      for cy in range(max(int(fy) - reach, 0), min(int(fy) + reach, g.h))
                      for cx in range(max(int(fx) - reach, 0), min(int(fx) + reach, g.w))
                      if not g.cells[cy * g.w + cx])
        best = next((c for d, *c in near if d <= reach and fits(g, placed, *centre(*c))),
                    None)
        if best:
            put(*centre(*best), 0.0)
            break
    else:
        sys.exit("stage_compare: no free pose for robot 0")
    rng = [11]
    for i in range(1, n):
        for _ in range(100000):
            x, y = centre(int(unit(rng) * g.w), int(unit(rng) * g.h))
            if fits(g, placed, x, y):
                put(x, y, (unit(rng) * 2 - 1) * math.pi)
                break
        else:
            sys.exit("stage_compare: no free pose for robot %d" % i)
    return poses


def drives(n):
    """bench-sim's set_drive from rng 3: v in [0.3, 0.8) m/s, w in [-1, 1)."""
    rng = [3]
    return [(0.3 + 0.5 * unit(rng), 2 * unit(rng) - 1) for _ in range(n)]


WORLD = """# written by bench/stage_compare.py
interval_sim 5
quit_time {quit:g}
resolution {res:.9g}
threads {threads}
speedup -1
show_clock 0

model( name "map" bitmap "{png}" size [{sx:.9g} {sy:.9g} 0.5]
       pose [{px:.9g} {py:.9g} 0 0] obstacle_return 1 ranger_return 1 gui_move 0 )

define pa_laser ranger( update_interval 100 alwayson 1 pose [0 0 -0.15 0]
  sensor( range [{rmin:g} {rmax:g}] fov 359 samples 360 pose [0 0 0 -0.5] ) )
define pa_robot position( size [{d:g} {d:g} 0.25] drive "diff" {drive}
  block( points 16 {disc} z [0 1] )
  pa_laser() )
"""


def stage_world(path, g, png, poses, drv, quit_time, threads, wander=False):
    """A Stage world file: the map as one bitmap model sized and placed on
    its dark pixels' box; each robot a 16-gon of RADIUS, 0.25 m tall, with a
    ranger whose rays run at z ~0.1 m (they meet walls and robots) and whose
    360 beams start at -180 deg, 1 deg apart, as playarea's. fixed: Update
    never runs (it would zero the `velocity` of a robot no controller
    drives); wander: Stage's example controller, commands applied at 200 Hz."""
    x0, y0, x1, y1 = blocked_bbox(g)
    disc = " ".join("point[%d] [%.6f %.6f]" % (k, math.cos(k * math.pi / 8),
                                                math.sin(k * math.pi / 8)) for k in range(16))
    text = WORLD.format(
        quit=quit_time, res=g.res, threads=threads, png=png, sx=(x1 - x0) * g.res,
        sy=(y1 - y0) * g.res, px=g.ox + (x0 + x1) / 2 * g.res,
        py=g.oy + (y0 + y1) / 2 * g.res, rmin=RANGE_MIN, rmax=RANGE_MAX, d=2 * RADIUS,
        disc=disc, drive='ctrl "wander" update_interval 5' if wander else
        "update_interval 2000000 alwayson 1")
    for i, ((x, y, t), (v, w)) in enumerate(zip(poses, drv)):
        vel = "" if wander else " velocity [%.6f 0 0 %.4f]" % (v, math.degrees(w))
        text += 'pa_robot( name "r%d" pose [%.6f %.6f 0 %.4f]%s )\n' % (
            i, x, y, math.degrees(t), vel)
    with open(path, "w") as f:
        f.write(text)


def vm_hwm(pid):
    """Peak RSS [kB] of pid's image (VmHWM; ru_maxrss counts the fork's)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return next((int(l.split()[1]) for l in f if l.startswith("VmHWM")), 0)
    except OSError:
        return 0


def run(cmd, env, log, timeout):
    """Runs cmd (its own process group, output to log); returns (wall s,
    CPU s, peak RSS kB, output). Killed on timeout or on the way out."""
    with open(log, "w+") as out:
        t0, peak, k = time.monotonic(), 0, 0  # wall to 2 ms, VmHWM each 10 ms
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                             cwd=os.path.dirname(log), start_new_session=True)
        try:
            while True:
                pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() > t0 + timeout:
                    raise SystemExit("stage_compare: %s: no end after %.0f s"
                                     % (cmd[0], timeout))
                k += 1
                peak = max(peak, vm_hwm(p.pid)) if k % 5 == 1 else peak
                time.sleep(0.002)
        except BaseException:
            stop(p)
            raise
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if p.returncode != 0:
        sys.exit("stage_compare: %s exited %d:\n%s" % (" ".join(cmd), p.returncode,
                                                      text[-2000:]))
    return wall, ru.ru_utime + ru.ru_stime, peak, text


def stop(p):
    """SIGTERM to the child's group (bench-sim unlinks its shm on it), SIGKILL
    if it lingers; then what bench-sim's own instances ("bench-*-PID") left
    in /dev/shm, and nothing else."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(p.pid, sig)
            p.wait(timeout=3)
            break
        except (ProcessLookupError, ChildProcessError):
            break
        except subprocess.TimeoutExpired:
            continue
    for name in os.listdir("/dev/shm"):
        parts = name.split(".")
        if (len(parts) > 2 and parts[0] == "playarea" and parts[1].startswith("bench-")
                and parts[1].endswith("-%d" % p.pid)):
            os.unlink(os.path.join("/dev/shm", name))
            print("stage_compare: removed /dev/shm/" + name, file=sys.stderr)


def pa_command(bin_dir, n, seconds, threads):
    """bench-sim's matching run: (argv, env, map name, pattern)."""
    env = dict(os.environ, PA_BENCH_THREADS=str(threads))
    cmd = [os.path.join(bin_dir, "bench-sim"), "%g" % seconds]
    if n == 1000:
        return (cmd + ["--phases"], env, "office 100x100 m",
                r"phases 1000 robots[^:]*: ([0-9.]+)x real time")
    if n == 1:
        env["PA_BENCH_LOOP"] = "1"
        return (cmd + ["--rtf1"], env, "default",
                r"rtf\s+1 robot, [^:]*: ([0-9.]+)x real time")
    env["PA_BENCH_ROBOTS"] = str(n)
    return (cmd + ["--rtf1"], env, "default",
            r"rtf\s+%d robots[^:]*: ([0-9.]+)x real time" % n)


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stage", required=True, help="the stage binary")
    ap.add_argument("--bin-dir", default="build/bin", help="playarea's programs")
    ap.add_argument("--robots", default="1,100,1000", help="1000 = the office")
    ap.add_argument("--sim-seconds", default="300,20,4",
                    help="Stage's simulated seconds a run: one, or one per --robots")
    ap.add_argument("--pa-seconds", type=float, default=3,
                    help="bench-sim's wall seconds a run (its first argument)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1,
                    help="Stage's `threads` and bench-sim's PA_BENCH_THREADS")
    ap.add_argument("--stage-drive", choices=("fixed", "wander"), default="fixed",
                    help="Stage robots: set_drive's (v, w) as `velocity` "
                    "(default) or Stage's wander controller")
    a = ap.parse_args()
    a.bin_dir = os.path.abspath(a.bin_dir)
    if not (os.path.isfile(a.stage) and os.access(a.stage, os.X_OK)):
        ap.exit(2, "stage_compare: --stage %s: not an executable file\n" % a.stage)
    for prog in ("bench-sim", "pa-map"):
        if not os.access(os.path.join(a.bin_dir, prog), os.X_OK):
            ap.exit(2, "stage_compare: %s/%s missing (build playarea or pass "
                    "--bin-dir)\n" % (a.bin_dir, prog))
    try:
        a.robots = [int(n) for n in a.robots.split(",")]
        a.secs = [float(s) for s in a.sim_seconds.split(",")]
    except ValueError:
        ap.exit(2, "stage_compare: --robots and --sim-seconds want comma lists\n")
    if len(a.secs) == 1:
        a.secs *= len(a.robots)
    if (len(a.secs) != len(a.robots) or min(a.secs) <= STARTUP_S or
            not all(math.isfinite(v) for v in a.secs + [a.pa_seconds]) or
            min(a.rounds, a.threads) < 1 or a.pa_seconds <= 0 or
            not all(1 <= n <= 10000 for n in a.robots)):
        ap.exit(2, "stage_compare: want robots in 1..10000, finite --sim-seconds "
                "> %g (one, or one per count), --rounds, --threads > 0, finite "
                "--pa-seconds > 0\n" % STARTUP_S)
    return a


def main():
    a = parse_args()
    env = dict(os.environ)  # libstage beside the binary, if installed so
    lib = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(a.stage)),
                                        "..", "lib"))
    if os.path.isdir(lib) and any(f.startswith("libstage.so") for f in os.listdir(lib)):
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, (lib, env.get("LD_LIBRARY_PATH"))))
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                if l.startswith("model name")), "unknown")
    print("date %s" % datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    print("cpu  %s, %d cores" % (cpu, os.cpu_count()))
    wander = a.stage_drive == "wander"
    with tempfile.TemporaryDirectory(prefix="stage-compare-") as tmp:
        grids, cases = {}, []
        for n, secs in zip(a.robots, a.secs):
            kind = "office" if n == 1000 else "default"
            if kind not in grids:
                grids[kind] = office_grid() if n == 1000 else default_grid(a.bin_dir, tmp)
                write_png(os.path.join(tmp, kind + ".png"), grids[kind])
            c = dict(n=n, s=secs, pa=pa_command(a.bin_dir, n, a.pa_seconds, a.threads),
                     stage=[], pa_rtf=[], cpu=[], stage_rss=0, pa_rss=0)
            poses, drv = place(grids[kind], n), drives(n)
            for key, quit in (("world", secs), ("boot", STARTUP_S)):
                c[key] = os.path.join(tmp, "r%d-%s.world" % (n, key))
                stage_world(c[key], grids[kind], kind + ".png", poses, drv, quit,
                            a.threads, wander)
            cases.append(c)
        for c in cases:  # Stage's start-up (and exit): the same world for 0.1 s
            c["boot_wall"] = run([a.stage, "-g", c["boot"]], env,
                                 os.path.join(tmp, "boot.log"), 120)[0]
            print("stage %4d robots: start-up run (quit_time %g s) %.2f s wall"
                  % (c["n"], STARTUP_S, c["boot_wall"]), flush=True)
        for rnd in range(1, a.rounds + 1):
            for c in cases:
                measure(a, c, env, tmp, rnd)
    report(a, cases)


def measure(a, c, env, tmp, rnd):
    """One round of case c: Stage, then the matching bench-sim run."""
    wall, cpu_s, rss, text = run([a.stage, "-g", c["world"]], env,
                                 os.path.join(tmp, "stage.log"), 120 + 60 * c["s"])
    if "[Stage: done]" not in text:
        sys.exit("stage_compare: stage did not finish:\n" + text[-2000:])
    net = wall - c["boot_wall"]
    c["stage"].append((c["s"] - STARTUP_S) / net if net > 0 else math.nan)
    c["cpu"].append(cpu_s / wall)
    c["stage_rss"] = max(c["stage_rss"], rss)
    print("round %d stage    %4d robots: %g sim s in %.2f s wall (%.2f s net of "
          "start-up): %.2fx real time (raw %.2fx), CPU %.2f cores, peak RSS %d MB"
          % (rnd, c["n"], c["s"], wall, net, c["stage"][-1], c["s"] / wall,
             cpu_s / wall, rss // 1024), flush=True)
    cmd, penv, _, pat = c["pa"]
    _, _, rss, text = run(cmd, penv, os.path.join(tmp, "pa.log"),
                          120 + 20 * a.pa_seconds)
    m = re.search(pat, text)
    if not m:
        sys.exit("stage_compare: no real-time factor in bench-sim's output:\n"
                 + text[-2000:])
    c["pa_rtf"].append(float(m.group(1)))
    c["pa_rss"] = max(c["pa_rss"], rss)
    print("round %d playarea %4d robots: %s" % (rnd, c["n"], m.group(0)), flush=True)


def report(a, cases):
    print("\nStage threads %d, robots %s; bench-sim PA_BENCH_THREADS=%d; RTF per "
          "round; pa/Stage = median / median" % (a.threads, a.stage_drive, a.threads))
    fmt = lambda xs: " ".join("%.2f" % x for x in xs)
    rows = [("robots", "map", "Stage RTF", "playarea RTF", "pa/Stage",
             "Stage CPU", "Stage RSS", "bench-sim RSS")]
    for c in cases:
        rows.append((str(c["n"]), c["pa"][2], fmt(c["stage"]), fmt(c["pa_rtf"]),
                     "%.1fx" % (statistics.median(c["pa_rtf"]) /
                                statistics.median(c["stage"])),
                     "%.2f cores" % statistics.median(c["cpu"]),
                     "%d MB" % (c["stage_rss"] // 1024), "%d MB" % (c["pa_rss"] // 1024)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(v.ljust(wd) for v, wd in zip(r, widths)).rstrip())


if __name__ == "__main__":
    for signum in (signal.SIGTERM, signal.SIGHUP):  # unwind: children, tmp dir
        signal.signal(signum, lambda sig, _: sys.exit("stage_compare: signal %d" % sig))
    main()
