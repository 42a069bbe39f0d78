"""The examples' uv metadata (examples/*/pyproject.toml; uv is not in Debian, so
the file is checked here): valid TOML, the client's path source, and every
module the scripts import is the standard library's or a declared dependency
that /usr/bin/python3 has."""

import ast
import glob
import importlib.util
import os
import sys
import tomllib
import unittest

SRC = os.path.abspath(os.environ.get("PA_SOURCE_DIR") or
                      os.path.join(os.path.dirname(__file__), "..", ".."))
IMPORT_NAME = {"playarea": "playarea", "numpy": "numpy", "matplotlib": "matplotlib"}


def top_imports(path):
    tree = ast.parse(open(path).read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module.split(".")[0]


class ExamplesMetaTest(unittest.TestCase):
    def test_pyprojects(self):
        files = sorted(glob.glob(os.path.join(SRC, "examples", "*", "pyproject.toml")))
        self.assertGreaterEqual(len(files), 2, files)
        for path in files:
            with self.subTest(path=path):
                d = os.path.dirname(path)
                with open(path, "rb") as f:
                    meta = tomllib.load(f)
                proj = meta["project"]
                self.assertTrue(proj["name"] and proj["version"] and proj["requires-python"])
                deps = [r.split(";")[0].split("[")[0].split("=")[0].split(">")[0].split("<")[0]
                        .strip() for r in proj["dependencies"]]
                self.assertIn("playarea", deps)
                src = meta["tool"]["uv"]["sources"]["playarea"]
                client = os.path.normpath(os.path.join(d, src["path"]))
                with open(os.path.join(client, "pyproject.toml"), "rb") as f:
                    self.assertEqual(tomllib.load(f)["project"]["name"], "playarea")
                for dep in deps:
                    if dep != "playarea":
                        self.assertIsNotNone(importlib.util.find_spec(IMPORT_NAME.get(dep, dep)),
                                             "%s: %s is not importable" % (path, dep))
                local = {os.path.splitext(os.path.basename(p))[0]
                         for p in glob.glob(os.path.join(d, "*.py"))}
                for script in glob.glob(os.path.join(d, "*.py")):
                    for mod in top_imports(script):
                        self.assertTrue(mod in sys.stdlib_module_names or mod in local
                                        or mod in deps,
                                        "%s imports %s, which pyproject.toml does not declare"
                                        % (script, mod))


if __name__ == "__main__":
    unittest.main()
