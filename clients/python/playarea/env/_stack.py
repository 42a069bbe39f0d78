"""A playarea stack owned by an environment, and the step_batch transport."""

import atexit
import json
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time

import numpy as np

READY = re.compile(r"^tcp (\S+):(\d+) instance (\S+)$")
BIN_FIELDS = ("x", "y", "theta", "v", "vy", "w", "odom_x", "odom_y", "odom_theta", "head",
              "bumped", "scan_seq", "scan_tick", "angle_min", "angle_increment", "range_max")
F = {name: i for i, name in enumerate(BIN_FIELDS)}


class StackError(RuntimeError):
    pass


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

    def __init__(self, args=(), bin_dir=None, instance=None, timeout=60.0, render=False):
        self.bin_dir = find_bin_dir(bin_dir)
        self.log = tempfile.NamedTemporaryFile(prefix="pa-env-", suffix=".log", delete=False)
        argv = [os.path.join(self.bin_dir, "playarea"), "--tcp_port", "0", "--paused"]
        if instance:
            argv += ["--instance", instance]
        if not render:
            argv.append("--no-render")
        argv += [str(a) for a in args]
        env = dict(os.environ)
        env.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self.instance = instance
        _live.add(self)
        try:
            self.host, self.port, self.instance = self._wait_ready(timeout)
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
        self.proc = None
        _live.discard(self)


class Conn:
    """One JSON-lines connection with the binary step_batch reply."""

    def __init__(self, host, port, timeout=60.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb", buffering=1 << 20)
        self._id = 0

    def close(self):
        if self.sock is not None:
            self.rfile.close()
            self.sock.close()
            self.sock = None

    def _send(self, action, data, type="command"):
        self._id += 1
        line = json.dumps({"type": type, "action": action, "request_id": self._id, "data": data},
                          separators=(",", ":"), allow_nan=False)
        self.sock.sendall(line.encode() + b"\n")

    def _recv(self):
        raw = self.rfile.readline()
        if not raw.endswith(b"\n"):
            raise StackError("the connection to pa-netgw closed")
        resp = json.loads(raw)
        if resp.get("type") == "error":
            err = resp.get("error", {})
            from ..errors import Error
            raise Error(err.get("code", "unknown"), err.get("message", ""), resp)
        return resp

    def request(self, action, data=None, type="command"):
        self._send(action, data or {}, type)
        return self._recv().get("data")

    def batch(self, reqs):
        """[(action, data), ...] in batches of 64; returns the responses (errors not raised)."""
        out = []
        for i in range(0, len(reqs), 64):
            items = []
            for a, d in reqs[i:i + 64]:
                self._id += 1
                items.append({"type": "command", "action": a, "request_id": self._id, "data": d})
            self.sock.sendall(json.dumps({"type": "batch", "requests": items},
                                         separators=(",", ":")).encode() + b"\n")
            out += self._recv()["data"]["responses"]
        return out

    def step_batch(self, robots, actions, steps, observe=True):
        """(states float64 [n, 16], ranges float32 [n, beams], header data) after `steps` ticks;
        observe=False: (None, None, header data), the observations stay in shared memory."""
        data = {"robots": [int(r) for r in robots], "steps": int(steps), "binary": True}
        if actions is not None:
            data["actions"] = np.asarray(actions, dtype=np.float64).tolist()
        if not observe:
            data["observe"] = False
        self._send("step_batch", data)
        d = self._recv()["data"]
        if not observe:
            return None, None, d
        nbytes = d["binary"]["bytes"]
        blk = self.rfile.read(nbytes)
        if len(blk) != nbytes or blk[:4] != b"PAB1":
            raise StackError("bad step_batch block (%d of %d bytes)" % (len(blk), nbytes))
        n, beams, fields = struct.unpack_from("<3I", blk, 4)
        st = np.frombuffer(blk, "<f8", n * fields, 16).reshape(n, fields)
        rg = np.frombuffer(blk, "<f4", n * beams, 16 + 8 * n * fields).reshape(n, beams)
        return st, rg, d
