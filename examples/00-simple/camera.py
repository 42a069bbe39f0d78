#!/usr/bin/env python3
"""Show the head-camera stream live, with frames per second and dropped frames."""

import collections
import sys
import time

from common import connect, plot_parser, pyplot


def main():
    p = plot_parser(__doc__,
                    "headless: receive --frames images, save the last one with its fps "
                    "and drop counts to PATH.png and exit",
                    "turn the robot at this rate [rad/s] (default 0)")
    p.add_argument("--frames", type=int, default=10,
                   help="images to receive before saving (default 10)")
    p.add_argument("--head-rate", type=float, default=0.0,
                   help="pan the head at this rate [rad/s] (default 0)")
    args = p.parse_args()
    if args.frames < 1:
        p.error("--frames must be >= 1")
    plt = pyplot(args.save)
    arrivals = collections.deque(maxlen=30)

    def fps():
        if len(arrivals) < 2:
            return 0.0
        return (len(arrivals) - 1) / max(arrivals[-1] - arrivals[0], 1e-9)

    with connect(args, timeout=30) as robot:
        robot.on_camera(lambda img: arrivals.append(time.monotonic()))
        robot.subscribe_camera()
        if args.head_rate or args.spin:
            robot.set_speed(0.0, args.spin, head=args.head_rate)
        fig, ax = plt.subplots(figsize=(8, 6.6), dpi=100)
        ax.set_axis_off()
        view = None
        try:
            n = 0
            end = time.monotonic() + args.duration
            while args.save is None or n < args.frames:
                if args.save is None and (not plt.fignum_exists(fig.number) or
                                          (args.duration > 0 and time.monotonic() > end)):
                    break
                img = robot.wait_camera(timeout=30)
                n += 1
                pixels = img.as_numpy()
                if view is None:
                    view = ax.imshow(pixels)
                else:
                    view.set_data(pixels)
                st = robot.stats("camera")
                ax.set_title("head camera %dx%d  seq %d  %.1f fps  dropped %d (incomplete %d)"
                             % (img.width, img.height, img.seq, fps(), st["dropped"],
                                st["incomplete"]), fontsize=10)
                if args.save is None:
                    if n == 1:
                        plt.ion()
                        plt.show()
                    plt.pause(0.001)
            if args.save is None:
                print("shown %d images, %.1f fps, %d dropped" % (n, fps(), robot.dropped["camera"]))
            else:
                fig.tight_layout()
                fig.savefig(args.save)
                print("saved %s (%d images, %.1f fps, %d dropped)"
                      % (args.save, n, fps(), robot.dropped["camera"]))
        except KeyboardInterrupt:
            pass
        finally:
            if (args.head_rate or args.spin) and robot.connected:
                robot.stop()
            plt.close(fig)
    return 0


if __name__ == "__main__":
    sys.exit(main())
