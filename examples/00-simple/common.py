"""Shared bits of the examples: finding the playarea package and the --host/--port flags."""

import argparse
import os
import sys

try:
    import playarea  # noqa: F401 - installed, or on PYTHONPATH
except ImportError:  # run from the source tree: use the client next door
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "clients", "python"))
    import playarea  # noqa: F401


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--host", default=os.environ.get("PLAYAREA_HOST") or "localhost",
                   help="simulator host (default: $PLAYAREA_HOST or localhost)")
    p.add_argument("--port", type=int, default=int(os.environ.get("PLAYAREA_PORT") or 9000),
                   help="simulator TCP port (default: $PLAYAREA_PORT or 9000)")
    p.add_argument("--robot", default=None, help="robot id or name (default: robot 0)")
    return p


def plot_parser(description, save_help, spin_help):
    """parser() plus the flags of the plotting examples: --save, --duration, --spin."""
    p = parser(description)
    p.add_argument("--save", metavar="PATH.png", help=save_help)
    p.add_argument("--duration", type=float, default=0.0,
                   help="live mode: close after this many seconds (default 0 = when the window closes)")
    p.add_argument("--spin", type=float, default=0.0, help=spin_help)
    return p


def connect(args, **kw):
    """A playarea.Robot for args, or exit with a clear message when nothing listens."""
    try:
        return playarea.Robot(args.host, args.port, robot=args.robot, **kw)
    except ConnectionRefusedError:
        sys.exit("cannot connect to %s:%d: is the simulator running? (scripts/run.sh)"
                 % (args.host, args.port))
    except playarea.Error as e:
        sys.exit("%s:%d refused: %s" % (args.host, args.port, e))


def pyplot(save):
    """matplotlib.pyplot, on the Agg backend when saving to a file (no display needed)."""
    import matplotlib
    if save:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not save and matplotlib.get_backend().lower() == "agg":
        sys.exit("no display for a window: run with --save PATH.png instead")
    return plt
