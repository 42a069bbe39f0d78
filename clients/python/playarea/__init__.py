"""playarea: drive the playarea simulator from Python (standard library only).

    from playarea import Robot
    with Robot() as robot:              # connects to localhost:9000
        robot.set_speed(v=0.2, w=0.5)   # linear m/s, angular rad/s
        robot.subscribe_odom()
        print(robot.odom)               # latest Odometry(x, y, theta, v, w, seq, t)

Robot speaks the plain-text protocol and receives UDP odom/scan/camera frames;
Sim (alias Client) speaks the JSON protocol (step, pause, reset, get_state, ...).
"""

from .errors import ConnectionLost, Error, FrameError, PlayareaError, ProtocolError
from .frames import (CameraAssembler, Image, Odometry, Scan, SeqTracker, decode_camera_chunk,
                     decode_odom, decode_scan)
from .robot import CHANNELS, Robot
from .sim import Client, Sim

__version__ = "0.1.0"

__all__ = ["Robot", "Sim", "Client", "Odometry", "Scan", "Image", "Error", "PlayareaError",
           "ProtocolError", "ConnectionLost", "FrameError", "CameraAssembler", "SeqTracker",
           "decode_odom", "decode_scan", "decode_camera_chunk", "CHANNELS"]
