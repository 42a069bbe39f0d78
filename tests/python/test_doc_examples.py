"""Every Python example of the READMEs runs against the real stack, and none
leaves the simulation paused (a copied example must not break the next one)."""

import os
import re
import subprocess
import sys
import unittest

from stack import StackTestCase

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
DOCS = ("README.md", os.path.join("clients", "python", "README.md"))
# Blocks that cannot end by themselves or start their own stacks (tested by
# test_examples / test_env): skipped by a marker they contain, with the reason.
SKIP = {
    "while True": "a streaming loop that never ends",
    "playarea.env": "starts its own stacks (test_env)",
    "dask": "a Dask cluster (test_env_dask)",
}


def python_blocks(path):
    with open(os.path.join(SRC, path)) as f:
        text = f.read()
    for m in re.finditer(r"```python\n(.*?)```", text, re.S):
        line = text.count("\n", 0, m.start()) + 1
        yield line, m.group(1)


class DocExamplesTest(StackTestCase):
    def run_block(self, where, code):
        env = dict(os.environ, PLAYAREA_HOST=self.host, PLAYAREA_PORT=str(self.port))
        p = subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True,
                           text=True, timeout=90)
        self.assertEqual(p.returncode, 0, "%s failed:\n%s\n%s" % (where, p.stdout, p.stderr))

    def paused(self):
        sys.path.insert(0, os.path.join(SRC, "clients", "python"))
        from playarea import Sim
        with Sim(host=self.host, port=self.port) as sim:
            return sim.request("get_status", type="sim_control")["paused"]

    def test_every_example_runs(self):
        ran = 0
        for doc in DOCS:
            for line, code in python_blocks(doc):
                where = "%s:%d" % (doc, line)
                if "from playarea" not in code:
                    continue  # frame decoding snippets that need a live UDP stream
                reason = next((r for k, r in SKIP.items() if k in code), None)
                if reason:
                    print("skip %s: %s" % (where, reason))
                    continue
                with self.subTest(example=where):
                    self.run_block(where, code)
                    self.assertFalse(self.paused(), "%s left the simulation paused" % where)
                    ran += 1
        self.assertGreaterEqual(ran, 4, "the READMEs' examples were found")


if __name__ == "__main__":
    unittest.main()
