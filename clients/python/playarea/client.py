"""playarea.client: the names the seed's examples import (``from playarea.client
import Robot``); the same objects as ``playarea.Robot`` and ``playarea.Sim``."""

from .errors import ConnectionLost, Error, PlayareaError, ProtocolError
from .robot import CHANNELS, Robot
from .sim import Client, Sim

__all__ = ["Robot", "Sim", "Client", "Error", "PlayareaError", "ProtocolError", "ConnectionLost",
           "CHANNELS"]
