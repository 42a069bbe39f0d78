"""A scripted stand-in for pa-netgw's text protocol, for testing the client's own logic
(reply matching, async errors, loss counting, reassembly) with exact control over
which datagrams arrive. Tests against the real stack live in test_stack_*.py."""

import socket
import struct
import threading

from playarea.frames import CAM_HEAD, ODOM, SCAN_HEAD


def odom_frame(seq, t=0.0, x=0.0, y=0.0, theta=0.0, v=0.0, w=0.0):
    return ODOM.pack(b"ODM1", seq, t, x, y, theta, v, w)


def scan_frame(seq, ranges, t=0.0, amin=-3.14159265, ainc=None, rmin=0.15, rmax=12.0):
    n = len(ranges)
    if ainc is None:
        ainc = 2 * 3.14159265 / n
    return SCAN_HEAD.pack(b"SCN1", seq, t, amin, ainc, rmin, rmax, n) + struct.pack("<%df" % n, *ranges)


def camera_chunks(seq, w, h, rgb, chunk=1400):
    size = w * h * 3
    assert len(rgb) == size
    offs = list(range(0, size, chunk))
    return [CAM_HEAD.pack(b"CAM1", seq, w, h, size, off, i, len(offs)) + rgb[off:off + chunk]
            for i, off in enumerate(offs)]


class FakeServer:
    """Accepts connections on 127.0.0.1:<os port>, answers like the text protocol."""

    def __init__(self, token=None):
        self.token = token
        self.lines = []  # every line received, in order
        self.subs = {}  # channel -> (ip, port) of the latest connection's subscription
        self.cond = threading.Condition()
        self.conns = []
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.port = self.lsock.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.threads = []
        self._stop = False
        t = threading.Thread(target=self._accept, daemon=True)
        t.start()
        self.threads.append(t)

    def _accept(self):
        while not self._stop:
            try:
                conn, _ = self.lsock.accept()
            except OSError:
                return
            with self.cond:
                self.conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn):
        f = conn.makefile("rb")
        authed = self.token is None
        peer = conn.getpeername()[0]
        try:
            for raw in f:
                line = raw.decode().strip()
                with self.cond:
                    self.lines.append(line)
                    self.cond.notify_all()
                words = line.split()
                if not words:
                    continue
                reply = None
                if words[0] == "auth":
                    authed = len(words) == 2 and words[1] == self.token
                    reply = "ok" if authed else "err not_authorized bad token"
                elif not authed:
                    reply = "err not_authorized send auth <token> first"
                elif words[0] == "ping":
                    reply = "pong"
                elif words[0] == "pose":
                    reply = "pose 1.5 -2 0.25"
                elif words[0] == "robot":
                    reply = "ok" if words[1] in ("0", "1", "bob") else "err unknown_robot no robot %s" % words[1]
                elif words[0] in ("pause", "resume", "reset", "step", "teleport", "speed"):
                    reply = "ok"
                elif words[0] == "cmd":
                    try:
                        vals = [float(x) for x in words[1:]]
                        if not 3 <= len(words) <= 4:
                            raise ValueError
                    except ValueError:
                        reply = "err invalid_message cmd needs <v> <w> [head]"
                    else:
                        if abs(vals[0]) > 100:
                            reply = "err invalid_action_shape v %s is out of range" % words[1]
                elif words[0] == "sub":
                    if words[1] not in ("odom", "scan", "camera"):
                        reply = "err invalid_message unknown channel '%s'" % words[1]
                    else:
                        with self.cond:
                            self.subs[words[1]] = (peer, int(words[2]))
                            self.cond.notify_all()
                elif words[0] == "unsub":
                    with self.cond:
                        self.subs.pop(words[1], None)
                        self.cond.notify_all()
                elif words[0] == "slow":
                    pass  # never answers: for timeout tests
                elif words[0] not in ("stop",):
                    reply = "err unknown_action unknown command '%s'" % words[0]
                if reply is not None:
                    conn.sendall((reply + "\n").encode())
        except OSError:
            pass
        finally:
            f.close()
            conn.close()

    def wait_for(self, pred, timeout=10.0):
        with self.cond:
            if not self.cond.wait_for(pred, timeout):
                raise AssertionError("fake server: condition not met within %.0f s" % timeout)

    def wait_sub(self, channel, timeout=10.0):
        self.wait_for(lambda: channel in self.subs, timeout)
        return self.subs[channel]

    def send(self, channel, datagram):
        self.udp.sendto(datagram, self.subs[channel])

    def drop_connections(self):
        """Close every client connection (as a restarted server would)."""
        with self.cond:
            conns, self.conns = self.conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def close(self):
        self._stop = True
        try:
            self.lsock.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() (close does not)
        except OSError:
            pass
        self.lsock.close()
        self.drop_connections()
        self.udp.close()
        for t in self.threads:
            t.join(5)
