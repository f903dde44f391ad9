"""`gradlab train --model mlp-1024`: the GEMM-bound MLP 784-1024-1024-10 (the network
tools/peers/compare_simplenet.py --model mlp-1024 times beside PyTorch) is built with the
layers it names and learns: on 1280 Fashion-MNIST examples, one epoch, the test accuracy
is far above chance (10%). About two seconds.

Run: GRADLAB_EXE=build/tools/gradlab python3 tests/cli/test_train_mlp1024.py
(meson test --suite cli sets GRADLAB_EXE; without the program or the data it exits 77, skipped)
"""

import os
import re
import subprocess
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(os.environ.get("GRADLAB_EXE", ROOT / "build" / "tools" / "gradlab"))
DATA = Path("/usr/share/datasets/fashion-mnist")
MODEL = re.compile(r"^model:\s+(.*) \((\d+) parameters\)", re.M)
TEST_ACC = re.compile(r"test loss \S+ acc (\S+)")


class WideMlp(unittest.TestCase):
    def test_has_the_named_layers_and_learns(self):
        run = subprocess.run([str(EXE), "train", "--model", "mlp-1024", "--limit", "1280", "--epochs", "1",
                              "--threads", "2"], capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        model = MODEL.search(run.stdout)
        self.assertIsNotNone(model, run.stdout)
        widths = [784, 1024, 1024, 10]
        parameters = sum(i * o + o for i, o in zip(widths, widths[1:]))  # weights and biases
        self.assertEqual(int(model.group(2)), parameters, run.stdout)
        accuracy = float(TEST_ACC.search(run.stdout).group(1))
        self.assertGreater(accuracy, 0.5, run.stdout)


if __name__ == "__main__":
    if not EXE.exists() or not DATA.is_dir():
        print(f"skipped: needs {EXE} and {DATA}")
        sys.exit(77)
    unittest.main()
