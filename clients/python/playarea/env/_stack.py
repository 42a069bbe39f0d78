"""A playarea stack owned by an environment, and the step_batch transport."""

import atexit
import base64
import json
import math
import os
import re
import selectors
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import time

import numpy as np

READY = re.compile(r"^tcp (\S+):(\d+) instance (\S+)$")
BIN_FIELDS = ("x", "y", "theta", "v", "vy", "w", "odom_x", "odom_y", "odom_theta", "head",
              "bumped", "scan_seq", "scan_tick", "angle_min", "angle_increment", "range_max")
F = {name: i for i, name in enumerate(BIN_FIELDS)}
STATE_FIELDS = BIN_FIELDS[:10]  # the ones pa_robot_state holds under the same names
_PACK2D = struct.Struct("<2d").pack
_HEAD = struct.Struct("<4s3I")  # a step_batch block's magic, robots, beams, fields
_BLOCK_TRIES = 20  # non-blocking reads of a step_batch block before a blocking one


class StackError(RuntimeError):
    pass


def open_regular(path, flags, error, what="cannot open %s: %s"):
    """An fd of the regular file at path (no symlink followed), or error(...).

    O_NONBLOCK: a FIFO planted under the name must not hang us."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise error(what % (path, e)) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise error("%s: not a regular file" % path)
    return fd


def find_bin_dir(bin_dir=None):
    """The directory holding `playarea`: the argument, $PA_BIN_DIR, the source tree's
    build/bin (when the package runs from clients/python), or the PATH."""
    cands = [bin_dir, os.environ.get("PA_BIN_DIR")]
    here = os.path.dirname(os.path.abspath(__file__))
    cands.append(os.path.join(here, "..", "..", "..", "..", "build", "bin"))
    exe = shutil.which("playarea")
    if exe:
        cands.append(os.path.dirname(exe))
    for d in cands:
        if d and os.access(os.path.join(d, "playarea"), os.X_OK):
            return os.path.abspath(d)
    raise StackError("cannot find the playarea launcher: pass bin_dir=, set PA_BIN_DIR, or build "
                     "the project (scripts/setup.sh) so that build/bin/playarea exists")


_live = set()


@atexit.register
def _stop_all():
    for s in list(_live):
        s.stop()


class LocalStack:
    """`playarea --tcp_port 0 --paused` started in its own session; stop() leaves nothing
    (and every stack still running when the interpreter exits is stopped then)."""

    def __init__(self, args=(), bin_dir=None, instance=None, timeout=60.0, render=False,
                 unix=False):
        self.bin_dir = find_bin_dir(bin_dir)
        self.log = tempfile.NamedTemporaryFile(prefix="pa-env-", suffix=".log", delete=False)
        argv = [os.path.join(self.bin_dir, "playarea"), "--tcp_port", "0", "--paused"]
        # unix: pa-netgw serves the control protocol on a socket in a private
        # directory too (--unix_socket), which stop() removes
        self.unix_dir = self.unix_path = None
        if unix:
            self.unix_dir = tempfile.mkdtemp(prefix="pa-env-")
            path = os.path.join(self.unix_dir, "ctl.sock")
            if len(path.encode()) < 100:  # sun_path holds 107 bytes
                self.unix_path = path
                argv += ["--unix_socket", path]
        if instance:
            argv += ["--instance", instance]
        if not render:
            argv.append("--no-render")
        argv += [str(a) for a in args]
        env = dict(os.environ)
        env.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
        self.argv = argv
        try:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                         stdin=subprocess.DEVNULL, env=env,
                                         start_new_session=True)
        except BaseException:
            if self.unix_dir:
                shutil.rmtree(self.unix_dir, ignore_errors=True)
            raise
        # Only a launcher that said ready owns its instance: one refused because the
        # name is taken must not have stop() remove another stack's shm objects.
        self.instance = None
        _live.add(self)
        try:
            self.host, self.port, self.instance = self._wait_ready(timeout)
            if instance and self.instance != instance:
                raise StackError("ready on instance %r, asked %r" % (self.instance, instance))
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, timeout):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        buf = b""
        try:
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StackError("playarea not ready within %.0f s:\n%s" % (timeout, self.log_tail()))
                if sel.select(left):
                    chunk = os.read(self.proc.stdout.fileno(), 4096)
                    if not chunk:
                        self.proc.wait(10)
                        raise StackError("playarea exited (%s) before it was ready:\n%s"
                                         % (self.proc.returncode, self.log_tail()))
                    buf += chunk
        finally:
            sel.close()
        m = READY.match(buf.split(b"\n", 1)[0].decode())
        if not m:
            raise StackError("unexpected ready line %r" % buf[:200])
        return m.group(1), int(m.group(2)), m.group(3)

    def log_tail(self, n=30):
        try:
            with open(self.log.name, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self, timeout=20.0):
        """SIGTERM, then SIGKILL of its session; removes the instance's shm objects."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # a straggler child of its session
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.stdout.close()
        if self.instance:
            prefix = "playarea.%s." % self.instance
            for name in os.listdir("/dev/shm"):
                if name.startswith(prefix):
                    try:
                        os.unlink(os.path.join("/dev/shm", name))
                    except OSError:
                        pass
        self.log.close()
        try:
            os.unlink(self.log.name)
        except OSError:
            pass
        if self.unix_dir:
            shutil.rmtree(self.unix_dir, ignore_errors=True)
            self.unix_dir = None
        self.proc = None
        _live.discard(self)


class Conn:
    """One JSON-lines connection with the binary step_batch reply.

    Replies are read with recv_into into buffers the connection keeps (no
    file object, no per-reply allocation): lines into a line buffer, a
    step_batch block straight into a block buffer, which step_batch's arrays
    are views of (valid until the next step_batch on this connection)."""

    def __init__(self, host, port, timeout=60.0, unix_path=None):
        if unix_path:  # pa-netgw's --unix_socket: the same protocol, same host
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.sock.settimeout(timeout)
                self.sock.connect(unix_path)
            except OSError as e:
                self.sock.close()
                raise StackError("cannot connect to pa-netgw's unix socket %s: %s"
                                 % (unix_path, e)) from None
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # A blocking socket with the kernel's timeouts: Python's own timeout
        # polls before every recv and send, one more syscall per step.
        self.sock.settimeout(None)
        tv = struct.pack("ll", int(timeout), int((timeout % 1) * 1e6))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, tv)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, tv)
        self.timeout = timeout
        self._buf = bytearray(1 << 16)
        self._mv = memoryview(self._buf)
        self._lo = self._hi = 0
        self._blk = bytearray(1 << 12)
        self.block_waits = 0  # blocks that the non-blocking tries did not finish
        self._id = 0
        self._robots_key = None
        self._robots_json = b""
        self._s1_key = None
        self._s1_tmpl = b""
        self._asked = False  # an ask()'s reply is still in the stream
        self._kept = None  # (its reply's data, its Error or None), read before a later one

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _keep(self):
        """Reads the reply of the outstanding ask() (it comes before the replies of
        requests sent after it) and keeps it for answer(): an Error is kept too."""
        self._asked = False
        try:
            self._kept = (self._recv().get("data"), None)
        except Exception as e:  # noqa: BLE001 (raised by answer())
            if not hasattr(e, "code"):
                raise
            self._kept = (None, e)

    def _sendall(self, b):
        """Sends one request; an outstanding ask()'s reply, which comes before
        this request's, is read and kept first."""
        self.sock.sendall(b)
        if self._asked:
            self._keep()

    def _send(self, action, data, type="command"):
        self._id += 1
        line = json.dumps({"type": type, "action": action, "request_id": self._id, "data": data},
                          separators=(",", ":"), allow_nan=False)
        self._sendall(line.encode() + b"\n")

    def _fill(self):
        """Reads more bytes into the line buffer (compacting or growing it first)."""
        if self._lo == self._hi:
            self._lo = self._hi = 0
        elif self._hi == len(self._buf):
            keep = self._hi - self._lo
            if self._lo == 0:  # one line longer than the buffer: a bigger one
                nb = bytearray(2 * len(self._buf))
                nb[:keep] = self._mv[:keep]
                self._mv.release()
                self._buf, self._mv = nb, memoryview(nb)
            else:
                self._buf[:keep] = self._buf[self._lo:self._hi]
            self._lo, self._hi = 0, keep
        try:
            k = self.sock.recv_into(self._mv[self._hi:])
        except BlockingIOError:  # SO_RCVTIMEO
            raise StackError("pa-netgw sent no reply within %g s" % self.timeout) from None
        if k == 0:
            raise StackError("the connection to pa-netgw closed")
        self._hi += k

    def _line(self):
        while True:
            i = self._buf.find(b"\n", self._lo, self._hi)
            if i >= 0:
                line = self._buf[self._lo:i]
                self._lo = i + 1
                return line
            self._fill()

    def _recv(self):
        resp = json.loads(self._line())
        if resp.get("type") == "error":
            err = resp.get("error", {})
            from ..errors import Error
            raise Error(err.get("code", "unknown"), err.get("message", ""), resp)
        return resp

    def request(self, action, data=None, type="command"):
        self._send(action, data or {}, type)
        return self._recv().get("data")

    def ask(self, action, data=None, type="command"):
        """request() in two halves: sends it, and answer() gives its reply later, so
        that the caller's work (other requests and steps on this connection too)
        overlaps pa-netgw's and its wake-ups. One ask at a time: an ask drops the
        reply of one before it that nobody took."""
        self._send(action, data or {}, type)
        self._kept = None  # an earlier ask's reply, read by _send
        self._asked = True

    def answer(self):
        """The data of the reply to the last ask() (its error raised)."""
        if self._asked:
            self._keep()
        r, self._kept = self._kept, None
        if r is None:
            raise StackError("answer() without an ask() before it")
        if r[1] is not None:
            raise r[1]
        return r[0]

    def batch(self, reqs):
        """[(action, data), ...] in batches of 64; returns the responses (errors not raised)."""
        out = []
        for i in range(0, len(reqs), 64):
            items = []
            for a, d in reqs[i:i + 64]:
                self._id += 1
                items.append({"type": "command", "action": a, "request_id": self._id, "data": d})
            self._sendall(json.dumps({"type": "batch", "requests": items},
                                     separators=(",", ":")).encode() + b"\n")
            out += self._recv()["data"]["responses"]
        return out

    def _block(self, nbytes):
        """The next nbytes of the stream in the block buffer (a new one when it is
        too small: views of the old one stay valid)."""
        if len(self._blk) < nbytes:
            self._blk = bytearray(max(nbytes, 2 * len(self._blk)))
        blk = self._blk
        have = min(nbytes, self._hi - self._lo)
        blk[:have] = self._mv[self._lo:self._lo + have]
        self._lo += have
        if have < nbytes:
            mv = memoryview(blk)
            recv_into = self.sock.recv_into
            # pa-netgw sends the block right after the header line: a few
            # non-blocking tries usually find it there and save a sleep
            for _ in range(_BLOCK_TRIES):
                try:
                    have += recv_into(mv[have:nbytes], 0, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    continue
                if have >= nbytes:
                    break
            self.block_waits += have < nbytes
            while have < nbytes:
                try:
                    k = recv_into(mv[have:nbytes])
                except BlockingIOError:  # SO_RCVTIMEO
                    mv.release()
                    raise StackError("pa-netgw sent no reply within %g s" % self.timeout) from None
                if k == 0:
                    mv.release()
                    raise StackError("the connection to pa-netgw closed in a step_batch block")
                have += k
            mv.release()
        return blk

    def step1(self, robot, v, w, steps, observe=True, beams=0):
        """One robot's step_batch by the shortest road (NavEnv's step): the
        request from a template (only the id and the actions change), the reply
        read by one recv_into into the line buffer and its header picked apart
        by position (a JSON parse only for an unusual reply). Returns (buffer,
        offset of the robot's 16 doubles, beams, offset of its float32 ranges,
        tick); observe=False: (None, 0, 0, 0, tick). The buffer's bytes stay
        until the next request on this connection. beams: its scan as that many
        sectors (step_batch's data.beams); 0: as cast."""
        key = (robot, steps, observe, beams)
        if key != self._s1_key:
            self._s1_key = key
            self._s1_tmpl = (b'{"type":"command","action":"step_batch","request_id":%%d,'
                             b'"data":{"robots":[%d],"steps":%d,"binary":true,%s%s'
                             b'"actions_b64":"%%s"}}\n'
                             % (int(robot), int(steps), b"" if observe else b'"observe":false,',
                                b'"beams":%d,' % int(beams) if beams else b""))
        if not (math.isfinite(v) and math.isfinite(w)):
            raise ValueError("actions must be finite")
        self._id += 1
        try:
            self._sendall(self._s1_tmpl % (self._id, base64.b64encode(_PACK2D(v, w))))
        except (BrokenPipeError, ConnectionResetError) as e:  # pa-netgw gone
            raise StackError("the connection to pa-netgw closed (%s)" % e) from None
        if self._lo != self._hi:  # bytes of another line wait: the general road
            return self._step1_slow(observe)
        buf = self._buf
        try:
            k = self.sock.recv_into(self._mv)
        except BlockingIOError:  # SO_RCVTIMEO
            raise StackError("pa-netgw sent no reply within %g s" % self.timeout) from None
        except ConnectionResetError as e:  # pa-netgw killed with the request unread
            raise StackError("the connection to pa-netgw closed (%s)" % e) from None
        if k == 0:
            raise StackError("the connection to pa-netgw closed")
        self._lo, self._hi = 0, k
        nl = buf.find(b"\n", 0, k)
        if nl < 0 or not buf.startswith(b'{"type":"state"'):
            return self._step1_slow(observe)
        j = buf.find(b'"data":{"tick":', 0, nl)
        e = buf.find(b",", j + 15, nl)
        if j < 0 or e < 0:
            return self._step1_slow(observe)
        tick = int(buf[j + 15:e])
        if not observe:
            self._lo = nl + 1
            return None, 0, 0, 0, tick
        j = buf.find(b'"bytes":', e, nl)
        e = buf.find(b",", j + 8, nl)
        if j < 0 or e < 0:
            return self._step1_slow(observe)
        nbytes = int(buf[j + 8:e])
        end = nl + 1 + nbytes
        if end > len(buf):
            return self._step1_slow(observe)
        while self._hi < end:  # the rest of the block (pa-netgw sends it with the line)
            try:
                k = self.sock.recv_into(self._mv[self._hi:])
            except BlockingIOError:
                raise StackError("pa-netgw sent no reply within %g s" % self.timeout) from None
            if k == 0:
                raise StackError("the connection to pa-netgw closed in a step_batch block")
            self._hi += k
        self._lo = end
        magic, n, beams, fields = _HEAD.unpack_from(buf, nl + 1)
        if magic != b"PAB1" or n != 1 or fields != len(BIN_FIELDS) \
                or 16 + 8 * fields + 4 * beams != nbytes:
            raise StackError("bad step_batch block (%r, %d robots, %d beams, %d fields, %d bytes)"
                             % (magic, n, beams, fields, nbytes))
        return buf, nl + 17, beams, nl + 17 + 8 * fields, tick

    def _step1_slow(self, observe):
        """step1's reply read the general way (an error raises here)."""
        d = self._recv()["data"]
        if not observe:
            return None, 0, 0, 0, d["tick"]
        nbytes = d["binary"]["bytes"]
        blk = self._block(nbytes)
        magic, n, beams, fields = _HEAD.unpack_from(blk, 0)
        if magic != b"PAB1" or n != 1 or fields != len(BIN_FIELDS) \
                or 16 + 8 * fields + 4 * beams != nbytes:
            raise StackError("bad step_batch block (%r, %d robots, %d beams, %d fields, %d bytes)"
                             % (magic, n, beams, fields, nbytes))
        return blk, 16, beams, 16 + 8 * fields, d["tick"]

    def robots_range(self, robots):
        """Whether these ids are one run first, first + 1, ... (what step_batch sent last
        for them: robots_range; observe="shm" needs it)."""
        robots = np.asarray(robots, dtype=np.int64)
        if robots.tobytes() != self._robots_key:
            return len(robots) > 0 and np.array_equal(robots, np.arange(robots[0], robots[0] + len(robots)))
        return self._robots_json.startswith(b'"robots_range"')

    def step_batch(self, robots, actions, steps, observe=True, beams=0):
        """(states float64 [n, 16], ranges float32 [n, beams], header data) after `steps` ticks;
        observe=False: (None, None, header data), the observations stay in shared memory;
        observe="shm": the same, and pa-sim writes them into the observation segment as one
        block (header data["obs_seq"] names it; the ids must be one run). beams: each scan
        as that many sectors, the least range of each (data.beams); 0: as cast.

        The arrays are views of the connection's block buffer: the next step_batch
        overwrites them (copy what you keep). One sendall per call: the request
        line with the actions in base64 (`actions_b64`): little-endian float32 when that
        holds every value exactly, else float64."""
        robots = np.asarray(robots, dtype=np.int64)
        key = robots.tobytes()
        if key != self._robots_key:  # no 1,000 JSON numbers for pa-netgw to parse:
            if len(robots) and (robots.min() < 0 or robots.max() > 0xFFFFFFFF):
                raise ValueError("robot ids must be 0..2^32-1, got %r" % (robots,))
            self._robots_key = key
            if len(robots) and np.array_equal(robots, np.arange(robots[0], robots[0] + len(robots))):
                self._robots_json = b'"robots_range":[%d,%d]' % (int(robots[0]), len(robots))
            else:  # the ids as uint32 in base64
                self._robots_json = b'"robots_b64":"%s"' % base64.b64encode(robots.astype("<u4").tobytes())
        self._id += 1
        parts = [b'{"type":"command","action":"step_batch","request_id":%d,"data":{'
                 % self._id, self._robots_json, b',"steps":%d,"binary":true' % int(steps)]
        if actions is not None:
            a = np.asarray(actions, dtype="<f8")
            if a.ndim != 2 or a.shape[0] != len(robots) or a.shape[1] not in (2, 3):
                raise ValueError("actions must be [n, 2] or [n, 3] for %d robots, got shape %s"
                                 % (len(robots), a.shape))
            if not np.isfinite(a).all():
                raise ValueError("actions must be finite")
            a32 = a.astype("<f4")
            if np.array_equal(a32, a):  # float32 holds them exactly (Box actions): half the bytes
                a = a32
            parts += [b',"actions_b64":"', base64.b64encode(np.ascontiguousarray(a).data), b'"']
        if beams:
            parts.append(b',"beams":%d' % int(beams))
        if observe == "shm":
            parts.append(b',"observe":"shm"')
            observe = False
        elif not observe:
            parts.append(b',"observe":false')
        parts.append(b"}}\n")
        self._sendall(b"".join(parts))
        d = self._recv()["data"]
        if not observe:
            return None, None, d
        nbytes = d["binary"]["bytes"]
        blk = self._block(nbytes)
        if blk[:4] != b"PAB1":
            raise StackError("bad step_batch block (magic %r)" % bytes(blk[:4]))
        n, beams, fields = struct.unpack_from("<3I", blk, 4)
        if 16 + n * (8 * fields + 4 * beams) != nbytes:
            raise StackError("bad step_batch block (%d bytes for %d x %d, %d)" % (nbytes, n, fields, beams))
        st = np.frombuffer(blk, "<f8", n * fields, 16).reshape(n, fields)
        rg = np.frombuffer(blk, "<f4", n * beams, 16 + 8 * n * fields).reshape(n, beams)
        return st, rg, d
