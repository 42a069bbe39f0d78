"""Exceptions raised by the playarea client."""


class Error(Exception):
    """An error reported by the server (``err <code> <message>`` or a JSON error).

    ``code`` is one of the protocol's error codes (``invalid_message``,
    ``unknown_robot``, ...); ``message`` is the server's human text.
    """

    def __init__(self, code, message, response=None):
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.response = response  # the whole JSON response, when there was one

    def __str__(self):
        return "%s: %s" % (self.code, self.message)


PlayareaError = Error


class ProtocolError(Error):
    """The server sent something this client cannot understand."""

    def __init__(self, message, response=None):
        super().__init__("protocol_error", message, response)


class ConnectionLost(Error, ConnectionError):
    """The TCP control connection closed (the server stopped or restarted)."""

    def __init__(self, message="connection to the playarea server was lost"):
        Error.__init__(self, "connection_lost", message)


class FrameError(ValueError):
    """A UDP datagram is not a valid feedback frame."""
