#!/usr/bin/env python3
"""Real-time factor of an 11 vs 11 SSL match world (--world ssl-a) with
vision at 60 Hz: all 22 robots driving circles through their team ports,
the ball rolling, SSL_WrapperPacket frames received and counted.

    PA_BIN_DIR=build/bin python3 bench/ssl_bench.py [--seconds 5]

Prints the free-running RTF (--speed 0: simulated seconds per wall second),
the lockstep RTF (step_n 1000 at a time, as an RL loop steps), and the
vision frames received per wall second. Target: RTF >= 200.
Needs a quiet machine for figures worth keeping.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))
from playarea import Sim  # noqa: E402
from stack import Stack  # noqa: E402

PROTO_DIR = os.path.join(HERE, "..", "netgw", "ssl", "proto")


def protos(out):
    names = ["ssl_gc_common", "ssl_simulation_error", "ssl_simulation_robot_control",
             "ssl_simulation_config", "ssl_simulation_control", "ssl_vision_detection",
             "ssl_vision_geometry", "ssl_vision_wrapper"]
    subprocess.run(["protoc", "--python_out=" + out, "-I" + PROTO_DIR] +
                   [os.path.join(PROTO_DIR, n + ".proto") for n in names], check=True)
    sys.path.insert(0, out)
    import ssl_simulation_control_pb2 as ctl
    import ssl_simulation_robot_control_pb2 as rc
    import ssl_vision_wrapper_pb2 as vis
    return ctl, rc, vis


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="pa-ssl-bench-")
    stack = None
    try:
        ctl, rc, vis = protos(tmp)
        stack = Stack("--world", "ssl-a", "--speed", "0", "--no-render", "--ssl_control_port", "0",
                      "--ssl_blue_port", "0", "--ssl_yellow_port", "0", "--ssl_vision_hz", "60")
        sim = Sim(stack.host, stack.port, timeout=30)
        info = sim.request("get_ssl_info")
        v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        v.bind(("127.0.0.1", 0))
        v.setblocking(False)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.settimeout(5)
        cmd = ctl.SimulatorCommand()
        cmd.config.vision_port = v.getsockname()[1]
        cmd.control.teleport_ball.x, cmd.control.teleport_ball.vx = -4.0, 3.0
        u.sendto(cmd.SerializeToString(), ("127.0.0.1", info["control_port"]))
        u.recv(65536)
        for port in (info["blue_port"], info["yellow_port"]):
            m = rc.RobotControl()
            for i in range(11):
                c = m.robot_commands.add(id=i)
                c.move_command.local_velocity.forward = 1.0
                c.move_command.local_velocity.left = 0.0
                c.move_command.local_velocity.angular = 1.5
            u.sendto(m.SerializeToString(), ("127.0.0.1", port))
            u.recv(65536)

        def drain():
            n = 0
            while True:
                try:
                    v.recv(65536)
                    n += 1
                except BlockingIOError:
                    return n

        drain()
        t0, s0 = time.perf_counter(), sim.get_status()["sim_time"]
        frames = 0
        while time.perf_counter() - t0 < a.seconds:
            time.sleep(0.01)
            frames += drain()
        wall = time.perf_counter() - t0
        sim_t = sim.get_status()["sim_time"] - s0
        frames += drain()
        w = vis.SSL_WrapperPacket()
        sim.pause()
        sim.step_n(1)
        time.sleep(0.1)
        last = None
        while True:
            try:
                last = v.recv(65536)
            except BlockingIOError:
                break
        w.ParseFromString(last)
        seen = (len(w.detection.robots_blue), len(w.detection.robots_yellow), len(w.detection.balls))
        n_step, l0 = 0, time.perf_counter()
        st0 = sim.get_status()["sim_time"]
        while time.perf_counter() - l0 < a.seconds:
            sim.step_n(1000)
            n_step += 1
        lwall = time.perf_counter() - l0
        lsim = sim.get_status()["sim_time"] - st0
        print("cpu: %s, load: %s" % (os.cpu_count(), open("/proc/loadavg").read().split()[:3]))
        print("ssl-a 11 vs 11, vision 60 Hz; last frame: %d blue, %d yellow, %d ball" % seen)
        print("free-running RTF  %8.1f  (%.1f s simulated in %.2f s)" % (sim_t / wall, sim_t, wall))
        print("lockstep RTF      %8.1f  (step_n 1000 x %d)" % (lsim / lwall, n_step))
        print("vision frames/s   %8.1f" % (frames / wall))
        sim.close()
    finally:
        if stack:
            stack.stop()
        shutil.rmtree(tmp, True)


if __name__ == "__main__":
    main()
