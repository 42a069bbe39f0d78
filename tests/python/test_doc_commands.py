"""Every shell command in README.md, clients/python/README.md and docs/*.md
(fenced sh/console blocks) is either run here, run by the named test, or not
runnable in a test, with the reason. A command the docs gain without a row
below fails test_every_command_is_classified (issue 39)."""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

from stack import StackTestCase, bin_dir

SRC = os.path.abspath(os.environ.get("PA_SOURCE_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", ".."))
DOCS = ["README.md", os.path.join("clients", "python", "README.md")] + sorted(
    os.path.join("docs", f) for f in os.listdir(os.path.join(SRC, "docs")) if f.endswith(".md"))
# What starts a command line (after VAR=value words); other lines in shell
# blocks are output the docs show (logs, JSON, errors).
PROGRAMS = re.compile(r"^(\(?cd |sudo |scripts/|tests/|build/|\./|~/|/usr/bin/|playarea\b|pa-|nc |"
                      r"cmake |cpack |ctest |python3 |xvfb-run |TSAN_|UBSAN_|PA_|PYTHONPATH=)(?!\S*\[)")

RUN_HERE = "run by test_doc_commands"
# command -> how it is covered or why it is not runnable in a test.
COVERED = {
    # README.md
    "scripts/run.sh": "not runnable in a test: installs packages, builds the tree and runs "
                      "forever in the foreground; CI builds with scripts/setup.sh, and every "
                      "test starts this same playarea",
    "tests/run.sh": "not runnable in a test: it is the whole CI run (.ci/run runs exactly it)",
    "nc localhost 9000": RUN_HERE + " (the session of 'A minute with nc', on an OS-picked port)",
    # clients/python/README.md
    "scripts/setup.sh --no-build --python-user": "run by test_install_readme",
    '/usr/bin/python3 -c "import playarea; print(playarea.__version__)"': "run by test_install_readme",
    "/usr/bin/python3 -m venv --system-site-packages ~/pa-venv": "run by test_install_readme",
    "~/pa-venv/bin/pip install --no-build-isolation --no-index ./clients/python":
        "run by test_install_readme",
    '~/pa-venv/bin/python -c "import playarea.client; print(playarea.client.Robot)"':
        "run by test_install_readme",
    'PYTHONPATH=clients/python /usr/bin/python3 -c "import playarea"': "run by test_install_readme",
    # docs/oceansim.md
    "playarea --dynamics dynamic --data_dir runs":
        "run by python_oceansim_seed (the stack it starts for the seed's examples)",
    # docs/player.md
    "./prog": "not runnable in a test: a libplayerc program, and Debian has no libplayerc; "
              "python_player speaks the same protocol with the test's own client",
    # docs/rl.md
    "python3 examples/rl/es_nav.py --plot docs/img/rl-es.png":
        "run by python_rl_example (the same script, 50 generations)",
    "PYTHONPATH=/path/to/Gymnasium:/path/to/PettingZoo:/path/to/stub:clients/python:tests/python "
    "PA_BIN_DIR=build/bin /usr/bin/python3 -m unittest test_env":
        "not runnable in a test: Gymnasium and PettingZoo are not in Debian; test_env's "
        "Conformance cases hold the same contract without them",
    # docs/operations.md
    "playarea [flags]": "a synopsis; every stack test runs playarea with flags",
    'cmake --install build --prefix "$HOME/.local"': RUN_HERE + " (into a scratch HOME)",
    "(cd build && cpack -G DEB)": "run by test_deb (cpack -G DEB of the build directory)",
    "sudo apt-get install ./build/playarea_0.1.0_amd64.deb":
        "not runnable in a test: installs into the system as root; test_deb unpacks the "
        "same .deb into a scratch root and runs it",
    "playarea restart sim|render|netgw [--instance NAME | --tcp_port PORT]":
        RUN_HERE + " (restart sim --instance)",
    "playarea status [--watch] [--instance NAME | --tcp_port PORT]": RUN_HERE + " (--instance)",
    "playarea --spin_us 0 --wrap sim='perf record -g -o /tmp/sim.data --'":
        "not runnable in a test: perf is not a package of the set-up (linux-perf needs the "
        "kernel's perf_event access)",
    "playarea --wrap render='valgrind --tool=callgrind --callgrind-out-file=/tmp/render.cg'":
        "not runnable in a test: minutes of callgrind; the --wrap path is test_launch_life's",
    "playarea --wrap netgw='strace -f -c -o /tmp/netgw.strace'":
        RUN_HERE + " (the summary into a scratch file)",
    "playarea --wrap netgw='gdb -batch -ex run -ex bt --args'":
        "run by test_launch_life (gdb -q -nx -batch -ex run --args, and a SIGSEGV inside)",
    "scripts/setup.sh --build-dir build-tsan -- -DPA_TSAN=ON":
        "not runnable in a test: a whole ThreadSanitizer build (tests/run.sh --tsan in CI)",
    "TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -j1 -R "
    "'test_sim_proc|test_shm_mp|test_netgw_e2e|test_netgw_robust|test_chaos'":
        "not runnable in a test: needs the TSan build above",
    "tests/fuzz.sh": "not runnable in a test: the bounded fuzz run CI does (tests/run.sh --fuzz)",
    "tests/fuzz.sh --replay": "not runnable in a test: needs the fuzz build (build-fuzz)",
    "tests/fuzz.sh json text": "not runnable in a test: needs the fuzz build (build-fuzz)",
    "PA_FUZZ_SECONDS=300 tests/fuzz.sh": "not runnable in a test: a long fuzz run",
    "PA_FUZZ_SKIP=image tests/fuzz.sh": "not runnable in a test: the fuzz run (CI's)",
    "tests/run.sh --fuzz": "not runnable in a test: the fuzz run (CI's)",
    "tests/fuzz.sh --build-only": "not runnable in a test: a whole clang fuzz build",
    "cd build-fuzz && mkdir -p long/text art": "not runnable in a test: a long fuzz session",
    "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ./bin/fuzz_text -runs=10000000 "
    "-max_len=1100 -dict=../tests/fuzz/text.dict -artifact_prefix=art/ "
    "-print_final_stats=1 long/text ../tests/fuzz/corpus/text":
        "not runnable in a test: ten million fuzz runs",
    # docs/rl.md
    "PA_BIN_DIR=build/bin /usr/bin/python3 bench/rl_bench.py --seconds 3":
        "not runnable in a test: a benchmark that loads both cores for a minute; "
        "test_env and test_env_shm run the same environments",
    "PA_BIN_DIR=build/bin /usr/bin/python3 bench/atlas_bench.py --envs 64 --size 84x84 --seconds 3":
        "not runnable in a test: a benchmark that loads both cores; "
        "test_env_camera_batch runs the same env and camera_batch",
    # docs/benchmarks.md
    "PA_BIN_DIR=build/bin /usr/bin/python3 bench/atlas_bench.py --seconds 2 --rounds 3":
        "not runnable in a test: a benchmark that loads both cores; "
        "test_env_camera_batch runs the same env and camera_batch",
    # docs/world-format.md
    "pa-map check my_world.yaml": RUN_HERE,
    "pa-map ascii my_world.yaml --width 80": RUN_HERE,
    "pa-map dist my_world.yaml clearance.png": RUN_HERE,
    "pa-map convert map.yaml out.yaml --image out.png": RUN_HERE,
}


def doc_commands():
    """(doc, command) for every command line of the docs' shell blocks."""
    out = []
    for doc in DOCS:
        with open(os.path.join(SRC, doc)) as f:
            text = f.read()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            if m.group(1) not in ("", "sh", "bash", "console", "shell"):
                continue
            body = m.group(2).replace("\\\n", " ").splitlines()
            prompt = any(l.startswith("$ ") for l in body)
            for line in body:
                if prompt:
                    if not line.startswith("$ "):
                        continue
                    line = line[2:]
                cmd = re.sub(r"\s+#.*$", "", line.strip())
                cmd = re.sub(r"\s+", " ", cmd)
                if cmd and PROGRAMS.match(cmd):
                    out.append((doc, cmd))
    return out


class DocCommandsListTest(unittest.TestCase):
    def test_every_command_is_classified(self):
        found = doc_commands()
        self.assertGreater(len(found), 20)
        missing = ["%s: %s" % dc for dc in found if dc[1] not in COVERED]
        self.assertEqual(missing, [], "commands in the docs with no row in COVERED "
                                      "(run them here, name the test, or say why not)")
        stale = sorted(set(COVERED) - {c for _, c in found})
        self.assertEqual(stale, [], "rows for commands the docs no longer have")
        for doc, cmd in found:
            print("%-26s %s\n    -> %s" % (doc, cmd, COVERED[cmd]))


class DocCommandsRunTest(StackTestCase):
    stack_args = ("--no-render",)

    def sh(self, cmd, cwd, env=None, timeout=120, input=None):
        e = dict(os.environ)
        e["PATH"] = bin_dir() + os.pathsep + e.get("PATH", "")
        e.update(env or {})
        r = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=e, capture_output=True, text=True,
                           timeout=timeout, input=input)
        self.assertEqual(r.returncode, 0, "%s\n%s%s" % (cmd, r.stdout, r.stderr))
        return r.stdout

    def test_nc_minute(self):
        if not shutil.which("nc"):
            self.skipTest("nc not installed")
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        self.addCleanup(udp.close)
        p = udp.getsockname()[1]
        session = "ping\ncmd 0.3 0.5\nsub odom %d\nsub scan %d\npose\n" % (p, p)
        # Interactive, as in the README: nc's half-close at stdin's end would
        # end the streams, so stdin stays open until the frames came.
        nc = subprocess.Popen(["nc", "127.0.0.1", str(self.port)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
        self.addCleanup(nc.stdout.close)
        self.addCleanup(nc.wait, 10)
        self.addCleanup(nc.kill)
        nc.stdin.write(session)
        nc.stdin.flush()
        self.assertEqual(nc.stdout.readline().strip(), "pong")
        self.assertRegex(nc.stdout.readline().strip(), r"^pose -?[0-9.]+ -?[0-9.]+ -?[0-9.]+$")
        udp.settimeout(10)
        magics = {udp.recv(65536)[:4] for _ in range(20)}
        self.assertIn(b"ODM1", magics)
        nc.stdin.write("stop\n")
        nc.stdin.close()  # nc then waits for the server: the cleanups end it

    def test_status_and_restart(self):
        out = self.sh("playarea status --instance %s" % self.stack.instance, SRC)
        self.assertIn("pa-sim", out)
        self.sh("playarea restart sim --instance %s" % self.stack.instance, SRC)

    def test_pa_map_commands(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(os.path.join(SRC, "maps", "example.world.yaml"),
                        os.path.join(d, "my_world.yaml"))
            shutil.copy(os.path.join(SRC, "maps", "default.yaml"), os.path.join(d, "map.yaml"))
            shutil.copy(os.path.join(SRC, "maps", "default.png"), d)
            for cmd in ("pa-map check my_world.yaml", "pa-map ascii my_world.yaml --width 80",
                        "pa-map dist my_world.yaml clearance.png",
                        "pa-map convert map.yaml out.yaml --image out.png"):
                self.sh(cmd, d)
            for f in ("clearance.png", "out.yaml", "out.png"):
                self.assertTrue(os.path.getsize(os.path.join(d, f)) > 0, f)

    def test_cmake_install_into_home(self):
        build = os.path.dirname(bin_dir())
        with tempfile.TemporaryDirectory() as home:
            os.symlink(build, os.path.join(home, "build"))
            self.sh('cmake --install build --prefix "$HOME/.local"', home, env={"HOME": home})
            local = os.path.join(home, ".local")
            for f in ("bin/playarea", "share/playarea/web/index.html", "share/man/man1/playarea.1"):
                self.assertTrue(os.path.exists(os.path.join(local, f)), f)

    def test_strace_wrap(self):
        if not shutil.which("strace"):
            self.skipTest("strace not installed")
        from stack import Stack
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "netgw.strace")
            s = Stack("--no-render", "--wrap", "netgw=strace -f -c -o %s" % out)
            self.assertEqual(s.stop(), 0)
            with open(out) as f:
                self.assertIn("syscall", f.read())
