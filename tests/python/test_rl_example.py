"""examples/rl/cem_nav.py and es_nav.py run a few generations against their own stacks and
improve."""

import importlib.util
import os
import unittest

SRC = os.environ.get("PA_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")


class CemExample(unittest.TestCase):
    def test_runs_and_plots(self):
        path = os.path.join(SRC, "examples", "rl", "cem_nav.py")
        spec = importlib.util.spec_from_file_location("cem_nav", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "curve.png")
            out = mod.main(["--generations", "8", "--pop", "24", "--elite", "5",
                              "--horizon", "60", "--seconds", "30", "--plot", png])
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        curve = out["curve"]
        self.assertGreaterEqual(len(curve), 4)
        # the mean policy reaches more held-out goals than the initial one
        self.assertGreater(out["after"][1], out["before"][1])
        # it learns: later elites reach goals (+10 each), the first did not
        late = max(c[2] for c in curve[len(curve) // 2:])
        self.assertGreater(late, curve[0][2] + 5.0)
        self.assertGreater(max(c[3] for c in curve), curve[0][3])


class EsExample(unittest.TestCase):
    """examples/rl/es_nav.py: a short run (50 generations, ~15 s) learns (held-out
    success up from the random start), the hand controller reaches goals on the same
    episodes, and it plots."""

    def test_runs_learns_and_plots(self):
        path = os.path.join(SRC, "examples", "rl", "es_nav.py")
        spec = importlib.util.spec_from_file_location("es_nav", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "curve.png")
            out = mod.main(["--generations", "50", "--pop", "64", "--eval", "64",
                            "--eval_every", "25", "--lr", "0.05", "--plot", png])
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        held = out["held"]
        self.assertEqual([h[0] for h in held], [0, 25, 50])
        self.assertGreater(held[-1][1], held[0][1] + 0.25)  # ~0.0 -> ~0.5
        self.assertGreater(out["final"][0], 0.25)
        self.assertGreater(out["hand"][0], 0.3)  # the baseline is a real controller
        self.assertGreater(out["steps"], 30 * 64 * 5)


if __name__ == "__main__":
    unittest.main()
