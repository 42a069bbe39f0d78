"""clients/python installs offline with pip into a venv and works from there."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


class PackageTest(unittest.TestCase):
    def test_pip_install_offline_into_venv(self):
        with tempfile.TemporaryDirectory() as d:
            # A copy: pip's build leaves build/ and *.egg-info beside the sources.
            pkg = os.path.join(d, "src")
            shutil.copytree(os.path.join(SRC, "clients", "python"), pkg,
                            ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            venv = os.path.join(d, "venv")
            r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0 and "ensurepip" in (r.stdout + r.stderr):
                self.skipTest("python3-venv is not installed")
            self.assertEqual(r.returncode, 0, r.stderr)
            py = os.path.join(venv, "bin", "python")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
            r = subprocess.run([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", pkg],
                               capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = subprocess.run([py, "-c", "import playarea, sys; print(playarea.__file__); "
                                "print(playarea.Robot, playarea.Sim is playarea.Client)"],
                               capture_output=True, text=True, timeout=60, env=env, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.splitlines()[0].startswith(venv), r.stdout)
            self.assertIn("True", r.stdout)
            r = subprocess.run([py, "-m", "pip", "show", "playarea"], capture_output=True, text=True,
                               timeout=60, env=env)
            self.assertIn("Version: 0.1.0", r.stdout)


if __name__ == "__main__":
    unittest.main()
