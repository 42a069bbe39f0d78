"""Robot: the plain-text TCP control connection plus UDP feedback streams.

One background I/O thread per Robot reads the TCP socket (replies, asynchronous
``err`` lines, end of connection) and every subscribed UDP socket. Public methods
may be called from any thread.
"""

import atexit
import collections
import errno
import logging
import selectors
import socket
import threading
import time
import weakref

from . import frames
from ._util import default_host, default_port, finite, fmt
from .errors import ConnectionLost, Error, FrameError, ProtocolError

log = logging.getLogger("playarea")

CHANNELS = ("odom", "scan", "camera")
_MAX_LINE = 64 * 1024  # a reply longer than this is not from our server
_MAX_DRAIN = 256  # datagrams read per wake-up per socket, so no channel starves the others


# Robots still open at interpreter exit: closed then, so that each stops its robot.
_open_robots = weakref.WeakSet()


@atexit.register
def _close_open_robots():
    for r in list(_open_robots):
        try:
            r.close()
        except Exception:  # exit goes on whatever one robot does
            log.debug("playarea: closing %r at exit failed", r, exc_info=True)


def _parse_err(line):
    parts = line.split(None, 2)
    code = parts[1] if len(parts) > 1 else "unknown"
    return Error(code, parts[2] if len(parts) > 2 else "")


class _Channel:
    """One subscribed stream: its UDP socket, latest frame and loss counters."""

    def __init__(self, name, sock, max_pending):
        self.name = name
        self.sock = sock
        self.port = sock.getsockname()[1]
        self.advertised = self.port  # the port named in `sub`
        self.latest = None
        self.count = 0  # frames delivered since subscribing
        self.invalid = 0  # datagrams that were not valid frames
        if name == "camera":
            self.assembler = frames.CameraAssembler(max_pending=max_pending)
            self.tracker = self.assembler.tracker
        else:
            self.assembler = None
            self.tracker = frames.SeqTracker()


class Robot:
    """Drive one robot over the text protocol and receive its UDP feedback.

    ``Robot(host, port)`` defaults to $PLAYAREA_HOST / $PLAYAREA_PORT, else
    localhost:9000. ``robot`` selects a robot by id or name (default robot 0),
    ``token`` authenticates first, ``udp_host`` overrides the local address the
    UDP sockets bind to (default: the local address of the TCP connection, which
    is where the server sends frames). With ``reconnect=True`` a lost connection
    is re-established in the background and the robot selection, subscriptions
    and last command are replayed. ``close()`` (also at interpreter exit and at
    the end of a ``with`` block) sends ``stop`` when the last command was a
    motion, so a script never leaves its robot driving; ``stop_on_close=False``
    leaves the robot as it was commanded.
    """

    def __init__(self, host=None, port=None, robot=None, timeout=5.0, udp_host=None,
                 token=None, reconnect=False, max_pending=4, rcvbuf=4 * 1024 * 1024,
                 stop_on_close=True):
        self.host = default_host() if host is None else host
        self.port = default_port() if port is None else int(port)
        self.timeout = float(timeout)
        self.reconnect = bool(reconnect)
        self.stop_on_close = bool(stop_on_close)
        self.reconnects = 0  # successful reconnections so far
        self._udp_host = udp_host
        self._token = token
        self._robot = None
        self._max_pending = max_pending
        self._rcvbuf = rcvbuf
        self._cmd = (0.0, 0.0, 0.0)
        self._cmd_sent = False

        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._req_lock = threading.Lock()  # one synchronous request at a time
        self._send_lock = threading.Lock()
        self._channels = {}
        self._callbacks = {c: [] for c in CHANNELS}
        self._listeners = {c: [] for c in CHANNELS}
        self._error_callbacks = []
        self._async_errors = collections.deque(maxlen=32)
        self._replies = collections.deque()
        self._awaiting = False
        self._lost = None  # the exception to raise once the connection is gone
        self._closed = False
        self._stopping = False
        self._ops = collections.deque()

        self._sock = self._connect()
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        try:
            self._wake_r.setblocking(False)
            self._wake_w.setblocking(False)
            self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            self._sel.register(self._sock, selectors.EVENT_READ, "tcp")
            self._thread = threading.Thread(target=self._run, name="playarea-io-%d" % self.port,
                                            daemon=True)
            self._thread.start()
            _open_robots.add(self)
            if token is not None:
                self._request("auth " + str(token), barrier=False)
            if robot is not None:
                self.select_robot(robot)
        except BaseException:
            self.close()
            raise

    # ---- connection ----------------------------------------------------

    def _connect(self):
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._closed else ("lost" if self._lost else "connected")
        return "<playarea.Robot %s:%d %s>" % (self.host, self.port, state)

    @property
    def connected(self):
        return not self._closed and self._lost is None

    def close(self):
        """Stop the robot (unless stop_on_close=False or its last command was a
        stop), unsubscribe, stop the I/O thread and close every socket. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            names = list(self._channels)
            lines = ["stop"] if self.stop_on_close and self._cmd_sent else []
        _open_robots.discard(self)
        lines += ["unsub %s" % name for name in names]
        if self._lost is None and lines:
            try:  # best effort: closing TCP ends the streams on the server anyway
                self._send("\n".join(lines))
            except OSError:
                pass
        with self._lock:
            self._stopping = True
            self._cond.notify_all()
        self._wake()
        t = getattr(self, "_thread", None)
        if t is not None and t is not threading.current_thread() and t.is_alive():
            t.join(max(self.timeout, 1.0))
        with self._lock:
            chans = list(self._channels.values())
            self._channels.clear()
        for ch in chans:
            ch.sock.close()
        for s in (self._sock, getattr(self, "_wake_r", None), getattr(self, "_wake_w", None)):
            if s is not None:
                s.close()
        sel = getattr(self, "_sel", None)
        if sel is not None:
            sel.close()

    def _check(self):
        """Raise if the robot cannot be used, and any pending asynchronous server error."""
        if self._closed:
            raise ValueError("this Robot is closed")
        with self._lock:
            if self._lost is not None and not self.reconnect:
                raise self._lost
            if self._async_errors:
                err = self._async_errors.popleft()
                raise err

    def _send(self, line):
        data = (line + "\n").encode()
        with self._send_lock:
            sock = self._sock
            try:
                sock.sendall(data)
            except socket.timeout:
                raise TimeoutError("%s:%d does not read its control connection (send blocked "
                                   "%.1f s)" % (self.host, self.port, self.timeout)) from None
            except OSError as e:
                lost = ConnectionLost("connection to %s:%d lost: %s" % (self.host, self.port, e))
                self._lose(lost, sock)  # the I/O thread reconnects (reconnect=True)
                raise lost from e

    def _wake(self):
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # already woken, or shutting down

    def _request(self, line, timeout=None, barrier=True):
        """Send one line that gets exactly one reply line; return it or raise Error.

        A ``ping`` goes first: every line before its ``pong`` belongs to earlier
        commands (e.g. the ``err`` of a bad ``cmd``), the line after it is ours.
        """
        self._check()
        timeout = self.timeout if timeout is None else timeout
        with self._req_lock:
            with self._lock:
                if self._lost is not None:
                    raise self._lost
                self._replies.clear()
                self._awaiting = True
            try:
                self._send(("ping\n" + line) if barrier else line)
                deadline = time.monotonic() + timeout
                seen_pong = not barrier
                while True:
                    reply = self._next_reply(deadline, line)
                    if seen_pong:
                        break
                    if reply == "pong" or reply.startswith("err not_authorized"):
                        seen_pong = True  # an unauthenticated ping fails: that is its answer
                    elif reply.startswith("err"):
                        self._async_error(_parse_err(reply))
            finally:
                with self._lock:
                    self._awaiting = False
                    self._replies.clear()
        if reply.startswith("err"):
            raise _parse_err(reply)
        return reply

    def _next_reply(self, deadline, what):
        with self._lock:
            while not self._replies:
                if self._lost is not None:
                    raise self._lost
                if self._closed:
                    raise ValueError("this Robot is closed")
                left = deadline - time.monotonic()
                if left <= 0:
                    # The reply may still come; it would be taken for the next one's.
                    self._lose(TimeoutError("no reply to %r from %s:%d within %.1f s; connection closed"
                                            % (what.split()[0], self.host, self.port, self.timeout)))
                    raise self._lost
                self._cond.wait(left)
            return self._replies.popleft()

    def _lose(self, exc, sock=None):
        """Mark the connection lost (sock: the one that failed; a socket already
        replaced by a reconnection is no news) and wake every waiter."""
        with self._lock:
            if sock is not None and sock is not self._sock:
                return
            sock = self._sock
            if self._lost is None:
                self._lost = exc
            self._cond.notify_all()
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _async_error(self, err):
        log.warning("playarea server: %s", err)
        with self._lock:
            self._async_errors.append(err)
            cbs = list(self._error_callbacks)
        for fn in cbs:
            try:
                fn(err)
            except Exception:
                log.exception("playarea on_error callback failed")

    def on_error(self, fn):
        """Call fn(Error) for each ``err`` line that answers a no-reply command."""
        with self._lock:
            self._error_callbacks.append(fn)
        return fn

    @property
    def errors(self):
        """Server errors not yet raised (they are raised by the next call)."""
        with self._lock:
            return list(self._async_errors)

    # ---- commands --------------------------------------------------------

    def set_speed(self, v, w, head=None):
        """Command linear v [m/s], angular w [rad/s] and optionally head pan rate [rad/s]."""
        v, w = finite("v", v), finite("w", w)
        h = self._cmd[2] if head is None else finite("head", head)
        self._check()
        with self._lock:
            self._cmd, self._cmd_sent = (v, w, h), True  # replayed after a reconnect
        self._send("cmd %s %s %s" % (fmt(v), fmt(w), fmt(h)) if h != 0.0 or head is not None
                   else "cmd %s %s" % (fmt(v), fmt(w)))

    def set_head_rate(self, rate):
        """Command the head pan rate [rad/s], keeping the current v and w."""
        v, w, _ = self._cmd
        self.set_speed(v, w, head=rate)

    def stop(self):
        """Zero every command of this robot."""
        self._check()
        self._send("stop")
        with self._lock:
            self._cmd, self._cmd_sent = (0.0, 0.0, 0.0), False

    def ping(self):
        """Round trip to the server; returns the time it took [s]."""
        t0 = time.monotonic()
        reply = self._request("ping", barrier=False)
        if reply != "pong":
            raise ProtocolError("ping answered %r" % reply)
        return time.monotonic() - t0

    def _ok(self, line, timeout=None):
        reply = self._request(line, timeout)
        if reply != "ok":
            raise ProtocolError("%r answered %r, expected ok" % (line.split()[0], reply))

    def select_robot(self, robot):
        """Drive robot (id or name) on this connection from now on."""
        robot = str(robot)
        if not robot or any(c.isspace() for c in robot):
            raise ValueError("robot must be an id or a name without spaces, got %r" % robot)
        self._ok("robot " + robot)
        self._robot = robot

    def pose(self):
        """Ground-truth pose (x [m], y [m], theta [rad])."""
        reply = self._request("pose")
        parts = reply.split()
        try:
            if parts[0] != "pose" or len(parts) != 4:
                raise ValueError
            return tuple(float(p) for p in parts[1:])
        except (ValueError, IndexError):
            raise ProtocolError("pose answered %r" % reply) from None

    def teleport(self, x, y, theta):
        """Move the robot to a ground-truth pose [m, m, rad]."""
        self._ok("teleport %s %s %s" % (fmt(finite("x", x)), fmt(finite("y", y)),
                                          fmt(finite("theta", theta))))

    def pause(self):
        self._ok("pause")

    def resume(self):
        self._ok("resume")

    def step(self, n=1, timeout=None):
        """Advance a paused simulation by n ticks."""
        n = int(n)
        if n < 1:
            raise ValueError("n must be >= 1, got %d" % n)
        self._ok("step %d" % n, timeout)

    def reset(self):
        self._ok("reset")

    def set_sim_speed(self, factor):
        """Simulation speed factor (1 = real time, 0 = as fast as possible)."""
        self._ok("speed " + fmt(finite("factor", factor)))

    # ---- streams -----------------------------------------------------------

    def subscribe(self, channel, wait=True, timeout=None, advertise_port=None):
        """Stream channel ('odom', 'scan' or 'camera') to a new ephemeral UDP port.

        With wait=True, return only once the first frame arrived (TimeoutError
        after timeout, default self.timeout). advertise_port is the port named in
        the ``sub`` command when a relay or port forward sits in between
        (default: the UDP socket's own port).
        """
        if channel not in CHANNELS:
            raise ValueError("unknown channel %r (expected one of %s)" % (channel, ", ".join(CHANNELS)))
        self._check()
        with self._lock:
            ch = self._channels.get(channel)
        if ch is None:
            local = self._udp_host or self._sock.getsockname()[0]
            sock = socket.socket(self._sock.family, socket.SOCK_DGRAM)
            try:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._rcvbuf)
                except OSError:
                    pass  # a smaller buffer only means more loss under bursts
                sock.bind((local, 0))
                sock.setblocking(False)
                ch = _Channel(channel, sock, self._max_pending)
                ch.advertised = advertise_port or ch.port
            except BaseException:
                sock.close()
                raise
            with self._lock:
                self._channels[channel] = ch
                self._ops.append(("add", ch))
            self._wake()
            try:
                self._send("sub %s %d" % (channel, ch.advertised))
            except BaseException:
                self._drop_channel(channel)
                raise
        if wait:
            with self._lock:
                have = ch.latest
            if have is None:
                self._wait(channel, timeout, 0, "subscribe_%s()" % channel)
        return self

    def subscribe_odom(self, wait=True, timeout=None):
        return self.subscribe("odom", wait, timeout)

    def subscribe_scan(self, wait=True, timeout=None):
        return self.subscribe("scan", wait, timeout)

    def subscribe_camera(self, wait=True, timeout=None):
        return self.subscribe("camera", wait, timeout)

    def unsubscribe(self, channel):
        """Stop streaming channel and close its UDP socket."""
        if channel not in CHANNELS:
            raise ValueError("unknown channel %r (expected one of %s)" % (channel, ", ".join(CHANNELS)))
        self._check()
        with self._lock:
            if channel not in self._channels:
                return
        try:
            self._send("unsub " + channel)
        finally:
            self._drop_channel(channel)

    def _drop_channel(self, channel):
        done = threading.Event()
        with self._lock:
            ch = self._channels.pop(channel, None)
            if ch is None:
                return
            self._ops.append(("remove", ch, done))
            for q in self._listeners[channel]:
                q.closed = True
            self._cond.notify_all()
        self._wake()
        if not done.wait(max(self.timeout, 1.0)):
            ch.sock.close()  # the I/O thread is gone; close it here

    @property
    def subscriptions(self):
        with self._lock:
            return {name: ch.port for name, ch in self._channels.items()}

    @property
    def odom(self):
        """The latest Odometry, or None before the first frame."""
        return self._latest("odom")

    @property
    def scan(self):
        """The latest Scan, or None before the first frame."""
        return self._latest("scan")

    @property
    def camera(self):
        """The latest camera Image, or None before the first complete one."""
        return self._latest("camera")

    def _latest(self, channel):
        with self._lock:
            ch = self._channels.get(channel)
            return None if ch is None else ch.latest

    @property
    def dropped(self):
        """Frames lost per channel, from gaps in seq (camera: incomplete images too)."""
        with self._lock:
            return {name: (ch.tracker.dropped if (ch := self._channels.get(name)) else 0)
                    for name in CHANNELS}

    @property
    def received(self):
        """Frames delivered per channel since it was subscribed."""
        with self._lock:
            return {name: (ch.tracker.received if (ch := self._channels.get(name)) else 0)
                    for name in CHANNELS}

    def stats(self, channel):
        """Counters of one channel: received, dropped, late, invalid (and camera details)."""
        with self._lock:
            ch = self._channels.get(channel)
            if ch is None:
                raise ValueError("%s is not subscribed" % channel)
            out = {"received": ch.tracker.received, "dropped": ch.tracker.dropped,
                   "late": ch.tracker.late, "invalid": ch.invalid, "port": ch.port}
            if ch.assembler is not None:
                a = ch.assembler
                out.update(incomplete=a.incomplete, duplicates=a.duplicates,
                           late_chunks=a.late_chunks, invalid=ch.invalid + a.invalid,
                           pending=len(a.pending))
            return out

    def _wait(self, channel, timeout, after, what):
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                ch = self._channels.get(channel)
                if ch is None:
                    raise RuntimeError("%s: %s is not subscribed (call subscribe_%s() first)"
                                       % (what, channel, channel))
                if ch.count > after:
                    return ch.latest
                if self._lost is not None and not self.reconnect:
                    raise self._lost
                if self._closed:
                    raise ValueError("this Robot is closed")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("%s: no %s frame from %s:%d within %.1f s"
                                       % (what, channel, self.host, self.port, timeout))
                self._cond.wait(left)

    def wait(self, channel, timeout=None):
        """Block until a frame newer than the current one arrives; return it."""
        with self._lock:
            ch = self._channels.get(channel)
            after = ch.count if ch is not None else 0
        return self._wait(channel, timeout, after, "wait_%s()" % channel)

    def wait_odom(self, timeout=None):
        return self.wait("odom", timeout)

    def wait_scan(self, timeout=None):
        return self.wait("scan", timeout)

    def wait_camera(self, timeout=None):
        return self.wait("camera", timeout)

    def on(self, channel, fn):
        """Call fn(frame) from the I/O thread for every new frame of channel (keep it short)."""
        if channel not in CHANNELS:
            raise ValueError("unknown channel %r" % channel)
        with self._lock:
            self._callbacks[channel].append(fn)
        return fn

    def on_odom(self, fn):
        return self.on("odom", fn)

    def on_scan(self, fn):
        return self.on("scan", fn)

    def on_camera(self, fn):
        return self.on("camera", fn)

    def remove_callback(self, channel, fn):
        with self._lock:
            self._callbacks[channel].remove(fn)

    def stream(self, channel, timeout=None, maxlen=64):
        """Iterate over every new frame of channel (up to maxlen are buffered; older
        ones are skipped if the consumer is slower). Ends on unsubscribe or close;
        raises TimeoutError if no frame comes within timeout (None: wait forever)."""
        if channel not in CHANNELS:
            raise ValueError("unknown channel %r" % channel)
        q = _Listener(maxlen)
        with self._lock:  # now, not at the first next(): frames from here on are kept
            self._listeners[channel].append(q)
        return self._stream(channel, timeout, q)

    def _stream(self, channel, timeout, q):
        try:
            while True:
                with self._lock:
                    deadline = None if timeout is None else time.monotonic() + timeout
                    while not q.items:
                        if q.closed or self._closed:
                            return
                        if self._lost is not None and not self.reconnect:
                            raise self._lost
                        left = None if deadline is None else deadline - time.monotonic()
                        if left is not None and left <= 0:
                            raise TimeoutError("%s_stream(): no %s frame within %.1f s"
                                               % (channel, channel, timeout))
                        self._cond.wait(left if left is not None else 1.0)
                    frame = q.items.popleft()
                yield frame
        finally:
            with self._lock:
                if q in self._listeners[channel]:
                    self._listeners[channel].remove(q)

    def odom_stream(self, timeout=None, maxlen=64):
        return self.stream("odom", timeout, maxlen)

    def scan_stream(self, timeout=None, maxlen=64):
        return self.stream("scan", timeout, maxlen)

    def camera_stream(self, timeout=None, maxlen=4):
        return self.stream("camera", timeout, maxlen)

    # ---- the I/O thread ----------------------------------------------------

    def _run(self):
        tcp_buf = bytearray()
        udp_buf = bytearray(65536)
        udp_view = memoryview(udp_buf)
        try:
            while not self._stopping:
                for key, _ in self._sel.select(0.5):
                    what = key.data
                    if what == "wake":
                        self._drain_wake()
                    elif what == "tcp":
                        tcp_buf = self._read_tcp(key.fileobj, tcp_buf)
                    else:
                        self._read_udp(what, udp_buf, udp_view)
                if self._lost is not None and self.reconnect and not self._stopping:
                    self._try_reconnect()
        except Exception as e:  # never die silently: waiters must hear about it
            log.exception("playarea I/O thread failed")
            self._lose(ConnectionLost("playarea I/O thread failed: %r" % e))
        finally:
            udp_view.release()

    def _drain_wake(self):
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, InterruptedError):
            pass
        while True:
            with self._lock:
                if not self._ops:
                    return
                op = self._ops.popleft()
            if op[0] == "add":
                self._sel.register(op[1].sock, selectors.EVENT_READ, op[1])
            else:
                ch, done = op[1], op[2]
                try:
                    self._sel.unregister(ch.sock)
                except (KeyError, ValueError):
                    pass
                ch.sock.close()
                done.set()

    def _read_tcp(self, sock, buf):
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError, socket.timeout):
            return buf
        except OSError as e:
            data = b""
            reason = str(e)
        else:
            reason = "the server closed the connection"
        if not data:
            self._unregister(sock)
            self._lose(ConnectionLost("connection to %s:%d lost: %s" % (self.host, self.port, reason)),
                       sock)
            return bytearray()
        buf += data
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line = bytes(buf[:nl]).decode("utf-8", "replace").strip()
            del buf[:nl + 1]
            if line:
                self._on_line(line)
        if len(buf) > _MAX_LINE:
            self._lose(ProtocolError("the server sent a line longer than %d bytes" % _MAX_LINE), sock)
            return bytearray()
        return buf

    def _on_line(self, line):
        with self._lock:
            if self._awaiting:
                self._replies.append(line)
                self._cond.notify_all()
                return
        if line.startswith("err"):
            self._async_error(_parse_err(line))
        # Anything else is a late reply to a command nobody waits for any more.

    def _read_udp(self, ch, buf, view):
        delivered = None
        for _ in range(_MAX_DRAIN):
            try:
                n = ch.sock.recv_into(buf)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                if e.errno in (errno.EBADF, errno.ECONNREFUSED):
                    break
                raise
            try:
                if ch.assembler is not None:
                    frame = ch.assembler.feed_chunk(
                        frames.decode_camera_chunk(view[:n], ch.assembler.max_image_bytes, copy=False))
                elif ch.name == "odom":
                    frame = frames.decode_odom(view[:n])
                    if not ch.tracker.accept(frame.seq):
                        frame = None
                else:
                    frame = frames.decode_scan(view[:n])
                    if not ch.tracker.accept(frame.seq):
                        frame = None
            except FrameError as e:
                ch.invalid += 1
                if ch.invalid <= 3:
                    log.warning("playarea: dropped an invalid %s datagram: %s", ch.name, e)
                continue
            if frame is not None:
                delivered = frame
                self._deliver(ch, frame)
        return delivered

    def _deliver(self, ch, frame):
        with self._lock:
            if self._channels.get(ch.name) is not ch:
                return
            ch.latest = frame
            ch.count += 1
            for q in self._listeners[ch.name]:
                q.items.append(frame)
            cbs = list(self._callbacks[ch.name])
            self._cond.notify_all()
        for fn in cbs:
            try:
                fn(frame)
            except Exception:
                log.exception("playarea %s callback failed", ch.name)

    def _unregister(self, sock):
        """Take sock out of the selector (before it is closed: a new socket may get
        its fd number, and the selector keys by fd)."""
        try:
            self._sel.unregister(sock)
        except (KeyError, ValueError):
            pass  # the read that saw the end took it out already

    def _try_reconnect(self):
        """Re-open the control connection with backoff; replay robot, subs and command."""
        delay = 0.1
        while not self._stopping:
            try:
                sock = self._connect()
            except OSError:
                with self._lock:
                    self._cond.wait(delay)
                delay = min(delay * 2, 1.0)
                continue
            old = self._sock
            with self._lock:
                self._sock = sock
                self._lost = None
                for ch in self._channels.values():
                    ch.tracker.reset()  # a restarted stack starts its seq again
                    if ch.assembler is not None:
                        ch.assembler.reset()
                subs = [(ch.name, ch.advertised) for ch in self._channels.values()]
            # A call of the user's may have seen the loss first (its _lose only
            # shuts the socket down): the old socket is then still registered.
            self._unregister(old)
            old.close()
            self._sel.register(sock, selectors.EVENT_READ, "tcp")
            try:
                lines = []
                if self._token is not None:
                    lines.append("auth " + str(self._token))
                if self._robot is not None:
                    lines.append("robot " + self._robot)
                lines += ["sub %s %d" % s for s in subs]
                if self._cmd_sent:
                    v, w, h = self._cmd
                    lines.append("cmd %s %s %s" % (fmt(v), fmt(w), fmt(h)))
                if lines:
                    self._send("\n".join(lines))
            except OSError:
                continue  # lost again: the next select sees it
            self.reconnects += 1
            log.info("playarea: reconnected to %s:%d", self.host, self.port)
            return


class _Listener:
    __slots__ = ("items", "closed")

    def __init__(self, maxlen):
        self.items = collections.deque(maxlen=maxlen)
        self.closed = False
