"""The .deb (issue 39): `cpack -G DEB` in the build directory, unpacked into a
scratch root (a clean, container-like prefix: dpkg-deb -x, no dpkg database
touched), then the packaged stack starts from there, answers an nc ping, the
packaged web pages and Python client, and stops with exit 0."""

import glob
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

BIN = os.path.abspath(os.environ.get("PA_BIN_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
BUILD = os.path.dirname(BIN)
PROGRAMS = ("playarea", "pa-sim", "pa-render", "pa-netgw", "pa-map", "pa-shmctl")
READY = re.compile(r"^tcp (\S+):(\d+) instance (\S+)$")


class DebTest(unittest.TestCase):
    def setUp(self):
        for tool in ("cpack", "dpkg-deb"):
            if not shutil.which(tool):
                self.skipTest("%s not installed" % tool)
        if not os.path.exists(os.path.join(BUILD, "CPackConfig.cmake")):
            self.skipTest("no CPackConfig.cmake in %s" % BUILD)
        self.tmp = tempfile.mkdtemp(prefix="pa-deb-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def field(self, deb, name):
        return subprocess.run(["dpkg-deb", "-f", deb, name], capture_output=True, text=True,
                              check=True).stdout.strip()

    def test_deb_installs_starts_and_stops(self):
        t0 = time.monotonic()
        out = os.path.join(self.tmp, "out")
        r = subprocess.run(["cpack", "-G", "DEB", "-B", out, "--config",
                            os.path.join(BUILD, "CPackConfig.cmake")],
                           cwd=BUILD, capture_output=True, text=True, timeout=240)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
        debs = glob.glob(os.path.join(out, "playarea_*.deb"))
        self.assertEqual(len(debs), 1, os.listdir(out))
        deb = debs[0]
        t_pack = time.monotonic() - t0
        version = subprocess.run([os.path.join(BIN, "playarea"), "--version"], capture_output=True,
                                 text=True).stdout.split()[-1]
        self.assertEqual(self.field(deb, "Package"), "playarea")
        self.assertEqual(self.field(deb, "Version"), version)
        self.assertIn("libevent", self.field(deb, "Depends"))

        root = os.path.join(self.tmp, "root")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True, timeout=60)
        usr = os.path.join(root, "usr")
        pyver = "python%d.%d" % sys.version_info[:2]
        for path in (["bin/%s" % p for p in PROGRAMS] +
                     ["share/man/man1/%s.1" % p for p in PROGRAMS] +
                     ["share/playarea/web/index.html", "share/doc/playarea/README.md",
                      "share/doc/playarea/docs/PROTOCOL.md",
                      "lib/%s/dist-packages/playarea/client.py" % pyver]):
            self.assertTrue(os.path.exists(os.path.join(usr, path)), path)
        for p in PROGRAMS:
            r = subprocess.run([os.path.join(usr, "bin", p), "--version"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual(r.stdout, "%s %s\n" % (p, version))

        # Start the packaged stack: it finds pa-* beside itself, the pages in
        # ../share/playarea/web.
        inst = "t%d-deb" % os.getpid()
        env = {k: v for k, v in os.environ.items() if k not in ("PA_BIN_DIR", "PYTHONPATH")}
        env["LIBGL_ALWAYS_SOFTWARE"] = "1"
        log = open(os.path.join(self.tmp, "stack.log"), "w+")
        self.addCleanup(log.close)
        proc = subprocess.Popen([os.path.join(usr, "bin", "playarea"), "--tcp_port", "0",
                                 "--instance", inst],
                                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, cwd=self.tmp)
        self.addCleanup(self.kill_stack, proc, inst)
        lines = self.read_lines(proc, 3, 60, log)
        m = READY.match(lines[0])
        self.assertIsNotNone(m, lines)
        port = int(m.group(2))
        http = int(re.match(r"http \S+:(\d+)$", lines[1]).group(1))

        # nc: the README's first minute.
        if shutil.which("nc"):
            r = subprocess.run(["nc", "-q", "1", "127.0.0.1", str(port)], input="ping\n",
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.stdout.split(), ["pong"], r.stderr)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(b"ping\n")
            self.assertEqual(s.makefile().readline().strip(), "pong")
        page = urllib.request.urlopen("http://127.0.0.1:%d/" % http, timeout=10).read()
        self.assertIn(b"<html", page.lower())
        log.flush()
        self.assertIn(os.path.join(usr, "share", "playarea", "web"), open(log.name).read())
        # The packaged client, as Debian's python finds it under /usr.
        r = subprocess.run(["/usr/bin/python3", "-c",
                            "from playarea.client import Robot\n"
                            "import playarea, sys\n"
                            "print(playarea.__file__)\n"
                            "with Robot('127.0.0.1', %d) as r: print('pong', r.ping() < 5)" % port],
                           capture_output=True, text=True, timeout=60, cwd=self.tmp,
                           env=dict(env, PYTHONPATH=os.path.join(usr, "lib", pyver,
                                                                 "dist-packages")))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("pong True", r.stdout)
        self.assertTrue(r.stdout.startswith(usr), r.stdout)

        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0)
        self.assertEqual([n for n in os.listdir("/dev/shm") if n.startswith("playarea.%s." % inst)],
                         [])
        print("cpack %.1f s, whole test %.1f s" % (t_pack, time.monotonic() - t0))

    def read_lines(self, proc, n, timeout, log):
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf, end = b"", time.monotonic() + timeout
        try:
            while buf.count(b"\n") < n:
                left = end - time.monotonic()
                if left <= 0 or not sel.select(left):
                    log.seek(0)
                    self.fail("packaged stack not ready: %r\n%s" % (buf, log.read()[-3000:]))
                chunk = os.read(proc.stdout.fileno(), 4096)
                if not chunk:
                    log.seek(0)
                    self.fail("packaged playarea exited (%s)\n%s" % (proc.wait(5), log.read()[-3000:]))
                buf += chunk
        finally:
            sel.close()
        return buf.decode().splitlines()

    @staticmethod
    def kill_stack(proc, inst):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if proc.poll() is None:
            proc.wait(10)
        proc.stdout.close()
        for n in os.listdir("/dev/shm"):
            if n.startswith("playarea.%s." % inst):
                os.unlink(os.path.join("/dev/shm", n))


if __name__ == "__main__":
    unittest.main()
