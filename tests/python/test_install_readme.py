"""clients/python/README.md's install lines, run as written on a fresh copy of
the tree with an empty HOME: the system interpreter then imports playarea from
that copy (issue 39: PEP 668 refused the old pip line)."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

SRC = os.path.abspath(os.environ.get("PA_SOURCE_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", ".."))


def install_lines():
    with open(os.path.join(SRC, "clients", "python", "README.md")) as f:
        text = f.read()
    section = text[text.index("## Install"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [l.strip() for l in block.splitlines() if l.strip() and not l.strip().startswith("#")]


class InstallReadmeTest(unittest.TestCase):
    def test_readme_install_lines(self):
        lines = install_lines()
        self.assertTrue(any("--python-user" in l for l in lines), lines)
        with tempfile.TemporaryDirectory() as d:
            tree, home = os.path.join(d, "playarea"), os.path.join(d, "home")
            os.makedirs(home)
            ignore = shutil.ignore_patterns("__pycache__", "build", "*.egg-info", "node_modules")
            for part in ("scripts", os.path.join("clients", "python")):
                shutil.copytree(os.path.join(SRC, part), os.path.join(tree, part), ignore=ignore)
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
            env.update(HOME=home, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONDONTWRITEBYTECODE="1")
            for line in lines:
                r = subprocess.run(["bash", "-c", line], cwd=tree, env=env, capture_output=True,
                                   text=True, timeout=300)
                if r.returncode != 0 and "ensurepip" in r.stderr:
                    self.skipTest("python3-venv is not installed")
                self.assertEqual(r.returncode, 0, "%s\n%s%s" % (line, r.stdout, r.stderr))
            # The system interpreter, anywhere, finds the copy through the .pth file.
            r = subprocess.run(["/usr/bin/python3", "-c",
                                "import playarea.client, playarea; print(playarea.__file__)"],
                               cwd=home, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.strip().startswith(os.path.join(tree, "clients", "python")),
                            r.stdout)


if __name__ == "__main__":
    unittest.main()
