#!/usr/bin/env python3
"""Drive the robot in a circle and print its odometry."""

import sys
import time

from common import connect, parser


def main():
    p = parser(__doc__)
    p.add_argument("--v", type=float, default=0.3, help="linear speed [m/s] (default 0.3)")
    p.add_argument("--w", type=float, default=0.5, help="angular speed [rad/s] (default 0.5)")
    p.add_argument("--duration", type=float, default=10.0,
                   help="seconds to drive, 0 = until Ctrl-C (default 10)")
    p.add_argument("--rate", type=float, default=2.0, help="lines printed per second (default 2)")
    args = p.parse_args()
    if args.rate <= 0:
        p.error("--rate must be > 0")

    with connect(args) as robot:
        robot.subscribe_odom()
        robot.set_speed(args.v, args.w)
        print("driving v=%.2f m/s w=%.2f rad/s (circle radius %.2f m)"
              % (args.v, args.w, abs(args.v / args.w) if args.w else float("inf")))
        print("%8s %8s %8s %8s %7s %7s %8s" % ("t [s]", "x [m]", "y [m]", "th [rad]", "v", "w", "seq"))
        end = time.monotonic() + args.duration
        try:
            while args.duration <= 0 or time.monotonic() < end:
                o = robot.wait_odom(timeout=5)
                print("%8.2f %8.3f %8.3f %8.3f %7.3f %7.3f %8d"
                      % (o.t, o.x, o.y, o.theta, o.v, o.w, o.seq), flush=True)
                time.sleep(1.0 / args.rate)
        except KeyboardInterrupt:
            pass
        finally:
            if robot.connected:
                robot.stop()
        print("received %d odometry frames, %d dropped"
              % (robot.received["odom"], robot.dropped["odom"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
