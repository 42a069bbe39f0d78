"""The launcher's end of issue 39: --viewer without a display is a configuration
error before anything starts; --exit_after_screenshot ends the stack with 0;
a crash inside a --wrap wrapper (gdb exits 0) is seen and counted; `--help`
lists every subcommand; --version everywhere is the one version."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import tomllib
import unittest

from stack import Stack, bin_dir

SRC = os.path.abspath(os.environ.get("PA_SOURCE_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = ("playarea", "pa-sim", "pa-render", "pa-netgw", "pa-map", "pa-shmctl")


def read(*path):
    with open(os.path.join(SRC, *path)) as f:
        return f.read()


def playarea(*args, env=None, timeout=60):
    return subprocess.run([os.path.join(bin_dir(), "playarea")] + list(args),
                          capture_output=True, text=True, timeout=timeout, env=env)


def shm_objects(instance):
    return [n for n in os.listdir("/dev/shm") if n.startswith("playarea.%s." % instance)]


class LauncherCliTest(unittest.TestCase):
    def test_viewer_without_display(self):
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
        inst = "t%d-nodisplay" % os.getpid()
        t0 = time.monotonic()
        r = playarea("--viewer", "--tcp_port", "0", "--instance", inst, env=env)
        self.assertEqual(r.returncode, 78, r.stderr)
        self.assertIn("--viewer: no display", r.stderr)
        self.assertNotIn("starting", r.stderr)  # nothing was started
        self.assertEqual(r.stdout, "")
        self.assertEqual(shm_objects(inst), [])
        self.assertLess(time.monotonic() - t0, 5)

    def test_help_lists_every_subcommand(self):
        r = playarea("--help")
        self.assertEqual(r.returncode, 0)
        main_c = read("launch", "flags.c")
        table = main_c[main_c.index("pa_launch_subcmds[]"):]
        names = re.findall(r'\{"(\w+)", pa_launch_\w+_main', table)
        self.assertEqual(set(names), {"status", "restart", "discover", "replay"})
        for name in names:
            self.assertIn("playarea %s " % name, r.stdout)
            sub = playarea(name, "--help")
            self.assertEqual(sub.returncode, 0, name + sub.stderr)
            self.assertIn("--", sub.stdout)

    def test_setup_and_run_scripts_cli(self):
        def sh(*argv):
            return subprocess.run(list(argv), cwd=SRC, capture_output=True, text=True, timeout=30)
        r = sh("scripts/setup.sh", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        for opt in ("--build-dir", "--sanitize", "--no-build", "--test-deps", "--python-user"):
            self.assertIn(opt, r.stdout)
        r = sh("scripts/setup.sh", "--bogus")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown argument '--bogus'", r.stderr)
        r = sh("tests/run.sh", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--dry-run", r.stdout)
        cases = {("--", "-R", "launch"): "modes: normal\nctest arguments: -R launch",
                 ("--sanitize", "--", "-R", "x"): "modes: sanitize\nctest arguments: -R x",
                 ("--fast", "--tsan"): "modes: normal tsan\n",
                 (): "modes: normal sanitize fuzz tsan\n"}
        for args, want in cases.items():
            r = sh("tests/run.sh", "--dry-run", *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith(want), (args, r.stdout))
        # The run command does not ask for the tests' npm packages.
        self.assertNotIn("--test-deps", read("scripts", "run.sh"))

    def test_version_everywhere(self):
        cm = read("CMakeLists.txt")
        version = re.search(r"project\(playarea VERSION ([0-9.]+)", cm).group(1)
        for prog in PROGRAMS:
            r = subprocess.run([os.path.join(bin_dir(), prog), "--version"], capture_output=True,
                               text=True, timeout=30)
            self.assertEqual((r.returncode, r.stdout), (0, "%s %s\n" % (prog, version)), prog)
        with open(os.path.join(SRC, "clients", "python", "pyproject.toml"), "rb") as f:
            self.assertEqual(tomllib.load(f)["project"]["version"], version)
        import playarea as pkg
        self.assertEqual(pkg.__version__, version)


class LauncherRunTest(unittest.TestCase):
    def test_exit_after_screenshot(self):
        xvfb = shutil.which("xvfb-run")
        if not xvfb:
            self.skipTest("xvfb-run not installed")
        exe = os.path.join(bin_dir(), "playarea")
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "shot.png")
            inst = "t%d-shot" % os.getpid()
            env = dict(os.environ, LIBGL_ALWAYS_SOFTWARE="1")
            try:
                r = subprocess.run([xvfb, "-a", exe, "--tcp_port", "0", "--instance", inst,
                                    "--viewer", "--screenshot", png, "--exit_after_screenshot"],
                                   capture_output=True, text=True, timeout=90, env=env)
            finally:
                for n in shm_objects(inst):
                    os.unlink(os.path.join("/dev/shm", n))
            self.assertEqual(r.returncode, 0, r.stderr[-3000:])
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            self.assertIn("--exit_after_screenshot", r.stderr)
            self.assertNotIn("restarting", r.stderr)
            self.assertEqual(r.stderr.count("screenshot saved"), 1, r.stderr[-3000:])

    def test_crash_inside_gdb_wrapper(self):
        gdb = shutil.which("gdb")
        if not gdb:
            self.skipTest("gdb not installed")
        s = Stack("--no-render", "--wrap", "netgw=%s -q -nx -batch -ex run --args" % gdb)
        self.addCleanup(s.stop)
        wrapper = s.children()["gdb"]
        inner = int(re.search(r"pa-netgw ready: pid (\d+)", s.log_tail(200)).group(1))
        self.assertNotEqual(inner, wrapper)
        os.kill(inner, signal.SIGSEGV)
        deadline = time.monotonic() + 60
        while "crash inside its wrapper" not in s.log_tail(200):
            self.assertLess(time.monotonic(), deadline, s.log_tail())
            time.sleep(0.1)
        log = s.log_tail(200)
        self.assertRegex(log, r"pa-netgw \(pid %d\) never reached its clean exit; the wrapper "
                              r"\(pid %d\) ended with exit code 0; restarting" % (inner, wrapper))
        self.assertNotIn("without the launcher asking", log)
        # Counted as a crash, restarted, and a clean stop is still clean.
        deadline = time.monotonic() + 60
        while "pa-netgw serving again" not in s.log_tail(200):
            self.assertLess(time.monotonic(), deadline, s.log_tail())
            time.sleep(0.1)
        st = playarea("status", "--instance", s.instance)
        row = [l for l in st.stdout.splitlines() if l.startswith("pa-netgw")][0].split()
        self.assertEqual(row[4], "1", st.stdout)  # rst
        self.assertEqual(s.stop(), 0)
        self.assertNotIn("crash inside", s.log_tail(200).split("serving again")[-1])


if __name__ == "__main__":
    unittest.main()
