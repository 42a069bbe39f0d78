"""Start and stop the real playarea stack for a test class; it is killed even on failure."""

import atexit
import itertools
import os
import re
import selectors
import signal
import socket
import subprocess
import tempfile
import time
import unittest

READY = re.compile(r"^tcp (\S+):(\d+) instance (\S+)$")
SANITIZER = re.compile(r"ERROR: (Address|Leak|Thread)Sanitizer|runtime error:")
START_TIMEOUT = 60.0  # the ASan build of the whole stack is slow to come up on 2 loaded cores
STOP_TIMEOUT = 20.0
_counter = itertools.count(1)
_live = set()


def bin_dir():
    d = os.environ.get("PA_BIN_DIR")
    if not d:
        here = os.path.dirname(os.path.abspath(__file__))
        d = os.path.join(here, "..", "..", "build", "bin")
    return os.path.abspath(d)


class Stack:
    """One `playarea --tcp_port 0` launcher and its processes, on a fresh instance."""

    def __init__(self, *args, env=None):
        self.instance = "t%d-py-%d" % (os.getpid(), next(_counter))
        exe = os.path.join(bin_dir(), "playarea")
        if not os.access(exe, os.X_OK):
            raise unittest.SkipTest("%s not built (set PA_BIN_DIR)" % exe)
        self.log = tempfile.NamedTemporaryFile(prefix="pa-py-%s-" % self.instance, suffix=".log",
                                               delete=False)
        e = dict(os.environ)
        e.setdefault("LIBGL_ALWAYS_SOFTWARE", "1")
        e.update(env or {})
        # SSL vision goes to a port this test holds, never to a user's 10020.
        self.vision_sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.vision_sink.bind(("127.0.0.1", 0))
        self.argv = [exe, "--tcp_port", "0", "--instance", self.instance,
                     "--ssl_vision_port", str(self.vision_sink.getsockname()[1])] + list(args)
        # A session of its own: if the launcher must be killed, its children go with the group.
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=self.log,
                                     stdin=subprocess.DEVNULL, env=e, start_new_session=True)
        _live.add(self)
        try:
            self.host, self.port = self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self):
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + START_TIMEOUT
        buf = b""
        try:
            while b"\n" not in buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("playarea not ready within %.0f s\n%s"
                                         % (START_TIMEOUT, self.log_tail()))
                if sel.select(left):
                    chunk = os.read(self.proc.stdout.fileno(), 4096)
                    if not chunk:
                        self.proc.wait(5)
                        raise AssertionError("playarea exited (%s) before it was ready\n%s"
                                             % (self.proc.returncode, self.log_tail()))
                    buf += chunk
        finally:
            sel.close()
        line = buf.split(b"\n", 1)[0].decode()
        m = READY.match(line)
        if not m or m.group(3) != self.instance:
            raise AssertionError("unexpected ready line %r" % line)
        return m.group(1), int(m.group(2))

    def log_tail(self, n=40):
        try:
            with open(self.log.name, "rb") as f:
                return b"".join(f.readlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def children(self):
        """{name: pid} of the launcher's live child processes (pa-sim, pa-netgw, ...)."""
        out = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % pid) as f:
                    stat = f.read()
            except OSError:
                continue
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[0] != "Z" and int(fields[1]) == self.proc.pid:
                out[name] = int(pid)
        return out

    def sanitizer_reports(self, limit=60):
        """Lines of ASan/UBSan/LSan reports in the stack's log ('' when none)."""
        try:
            with open(self.log.name, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except OSError:
            return ""
        for i, line in enumerate(lines):
            if SANITIZER.search(line):
                return "\n".join(lines[i:i + limit])
        return ""

    def stop(self):
        """SIGTERM and wait; SIGKILL the whole group if that takes too long; remove leftovers.

        Returns the launcher's exit code; self.report keeps any sanitizer report."""
        if getattr(self, "report", None) is not None:
            return self.proc.returncode  # stopped already
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(STOP_TIMEOUT)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # any straggler child
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.stdout.close()
        self.vision_sink.close()
        self.report = self.sanitizer_reports()
        self.tail = self.log_tail()  # kept for a failure's message: the log goes
        for name in os.listdir("/dev/shm"):
            if name.startswith("playarea.%s." % self.instance):
                try:
                    os.unlink(os.path.join("/dev/shm", name))
                except OSError:
                    pass
        self.log.close()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)
        _live.discard(self)
        return self.proc.returncode


@atexit.register
def _stop_all():
    for s in list(_live):
        s.stop()


class StackTestCase(unittest.TestCase):
    """Starts one stack per test class (setUpClass) and always stops it."""

    stack_args = ()
    stack = None

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.stack = Stack(*cls.stack_args)
        cls.addClassCleanup(cls._stop_stack)
        cls.host, cls.port = cls.stack.host, cls.stack.port

    @classmethod
    def _stop_stack(cls):
        if cls.stack is not None:
            stack, cls.stack = cls.stack, None
            rc = stack.stop()
            if stack.report:
                raise AssertionError("sanitizer report from the stack:\n" + stack.report)
            if rc != 0:
                raise AssertionError("playarea exited with %s after SIGTERM; its log ends:\n%s"
                                     % (rc, stack.tail))

    def kill_child(self, name, restart_within=30.0):
        """SIGKILL this stack's `name` (a pid its own launcher reports, never one
        looked up by name) and, unless restart_within is None, wait until the
        launcher runs a new one; returns the killed pid."""
        pid = self.stack.children().get(name)
        self.assertIsNotNone(pid, self.stack.children())
        os.kill(pid, signal.SIGKILL)
        if restart_within is not None:
            try:
                self.wait_until(lambda: self.stack.children().get(name) not in (None, pid),
                                restart_within, "%s restarted" % name)
            except AssertionError as e:
                raise AssertionError("%s; the stack's log ends:\n%s"
                                     % (e, self.stack.log_tail())) from None
        return pid

    def wait_until(self, pred, timeout=10.0, what="condition"):
        deadline = time.monotonic() + timeout
        while True:
            v = pred()
            if v:
                return v
            if time.monotonic() > deadline:
                self.fail("%s not met within %.0f s" % (what, timeout))
            time.sleep(0.01)
