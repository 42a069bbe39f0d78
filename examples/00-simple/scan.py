#!/usr/bin/env python3
"""Plot the robot's laser scan live, RViz style: hits around the robot in its own frame."""

import math
import sys
import time

from common import connect, plot_parser, pyplot


def draw(ax, scan, odom, drops):
    """One frame of the plot: free space fan, hits coloured by range, the robot."""
    from matplotlib.patches import Circle, FancyArrow, Polygon

    ax.clear()
    ax.set_facecolor("#1e1e24")
    rmax = scan.range_max
    # Free space: the polygon through every beam's end (hit or max range).
    ends = [(r * math.cos(a), r * math.sin(a))
            for a, r in zip(scan.angles(), scan.ranges) if math.isfinite(r)]
    if ends:
        ax.add_patch(Polygon(ends, closed=True, facecolor="#3a4a5c", edgecolor="none", alpha=0.6))
    pts = scan.points()
    lim = max([abs(v) for p in pts for v in p] + [2.0]) * 1.1 if pts else rmax
    for ring in range(2, int(min(rmax, lim * 1.42)) + 1, 2):
        ax.add_patch(Circle((0, 0), ring, fill=False, color="#555", lw=0.5, ls=":"))
        if ring * 0.707 < lim * 0.95:
            ax.text(ring * 0.707, ring * 0.707, "%d m" % ring, color="#888", fontsize=7)
    if pts:
        xs, ys = zip(*pts)
        rs = [math.hypot(x, y) for x, y in pts]
        sc = ax.scatter(xs, ys, c=rs, cmap="turbo", vmin=0, vmax=rmax, s=6, zorder=3)
        if not getattr(ax, "_pa_cbar", None):
            ax._pa_cbar = ax.figure.colorbar(sc, ax=ax, fraction=0.046, pad=0.04, label="range [m]")
    ax.add_patch(Circle((0, 0), 0.2, color="#e8e8e8", zorder=4))
    ax.add_patch(FancyArrow(0, 0, 0.45, 0, width=0.05, color="#ff5050", zorder=5))
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.grid(True, color="#333", lw=0.5)
    ax.set_xlabel("x forward [m]")
    ax.set_ylabel("y left [m]")
    title = "scan seq %d  t=%.2f s  %d/%d hits  dropped %d" % (
        scan.seq, scan.t, len(pts), len(scan.ranges), drops)
    if odom is not None:
        title += "\nodom x=%.2f y=%.2f theta=%.2f" % (odom.x, odom.y, odom.theta)
    ax.set_title(title, fontsize=10)


def main():
    p = plot_parser(__doc__,
                    "headless: save one plot of a fresh scan to PATH.png and exit",
                    "turn the robot at this rate [rad/s] while plotting (default 0)")
    args = p.parse_args()
    plt = pyplot(args.save)

    with connect(args, timeout=10) as robot:
        robot.subscribe_odom()
        robot.subscribe_scan()
        if args.spin:
            robot.set_speed(0.0, args.spin)
        fig, ax = plt.subplots(figsize=(7, 7), dpi=110)
        try:
            if args.save:
                scan = robot.wait_scan()
                draw(ax, scan, robot.odom, robot.dropped["scan"])
                fig.tight_layout()
                fig.savefig(args.save)
                print("saved %s (scan seq %d, %d hits)" % (args.save, scan.seq, len(scan.points())))
                return 0
            plt.ion()
            plt.show()
            last, shown = None, 0
            end = time.monotonic() + args.duration
            while plt.fignum_exists(fig.number) and (args.duration <= 0 or time.monotonic() < end):
                scan = robot.scan
                if scan is not last:
                    draw(ax, scan, robot.odom, robot.dropped["scan"])
                    fig.canvas.draw_idle()
                    last, shown = scan, shown + 1
                plt.pause(0.05)
            print("shown %d scans, %d dropped" % (shown, robot.dropped["scan"]))
        except KeyboardInterrupt:
            pass
        finally:
            if args.spin and robot.connected:
                robot.stop()
            plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
