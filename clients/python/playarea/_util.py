"""Small helpers shared by Robot and Sim."""

import math
import os

DEFAULT_HOST = "localhost"
DEFAULT_PORT = 9000


def default_host():
    """PLAYAREA_HOST if set, else localhost."""
    return os.environ.get("PLAYAREA_HOST") or DEFAULT_HOST


def default_port():
    """PLAYAREA_PORT if set, else 9000."""
    text = os.environ.get("PLAYAREA_PORT")
    if not text:
        return DEFAULT_PORT
    try:
        port = int(text)
    except ValueError:
        raise ValueError("PLAYAREA_PORT=%r is not a port number" % text) from None
    if not 0 < port < 65536:
        raise ValueError("PLAYAREA_PORT=%r is outside 1..65535" % text)
    return port


def finite(name, value):
    """value as a float, or ValueError naming it when it is not a finite number."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ValueError("%s must be a number, got %r" % (name, value)) from None
    if not math.isfinite(f):
        raise ValueError("%s must be finite, got %r" % (name, value))
    return f


def fmt(f):
    """A float as short text that reads back to the same float32-ish value."""
    return "%.9g" % f
