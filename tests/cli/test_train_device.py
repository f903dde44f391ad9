"""`gradlab train --device`: SimpleNet trained on the cuda_cpu device (the CUDA kernels on the
CPU runtime) gives the same losses as on the CPU, to float tolerance, and waits for the
device only where it is asked to (--item-every-step). Uses Debian's Fashion-MNIST, 2000
training examples, one epoch (a few seconds).

Run: GRADLAB_EXE=build/tools/gradlab python3 tests/cli/test_train_device.py
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
EPOCH = re.compile(r"train loss (\S+) acc (\S+)  test loss (\S+) acc (\S+)")
SYNCS = re.compile(r"host syncs/step (\S+), copies to device/step (\S+)")


def train(*args, limit=2000):
    run = subprocess.run([str(EXE), "train", "--limit", str(limit), "--epochs", "1", "--seed", "1", *args],
                         capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL)
    if run.returncode != 0:
        raise AssertionError(f"gradlab train {' '.join(args)} failed:\n{run.stdout}\n{run.stderr}")
    return run.stdout


class TrainOnDevice(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cpu = train("--device", "cpu")
        cls.dev = train("--device", "cuda_cpu")

    def test_same_losses_as_the_cpu(self):
        cpu = [float(v) for v in EPOCH.search(self.cpu).groups()]
        dev = [float(v) for v in EPOCH.search(self.dev).groups()]
        for a, b, what in zip(cpu, dev, ["train loss", "train acc", "test loss", "test acc"]):
            self.assertAlmostEqual(a, b, delta=2e-3, msg=f"{what}: cpu {a}, cuda_cpu {b}\n{self.cpu}\n{self.dev}")

    def test_no_host_sync_inside_a_step_and_one_copy_per_tensor_of_the_batch(self):
        syncs, copies = (float(v) for v in SYNCS.search(self.dev).groups())
        self.assertEqual(syncs, 0.0, self.dev)
        self.assertEqual(copies, 2.0, "inputs and targets, once each\n" + self.dev)

    def test_reading_the_loss_every_step_is_one_sync_per_step(self):
        out = train("--device", "cuda_cpu", "--item-every-step", limit=300)
        syncs, _ = (float(v) for v in SYNCS.search(out).groups())
        self.assertEqual(syncs, 1.0, out)


if __name__ == "__main__":
    if not EXE.exists() or not DATA.is_dir():
        print(f"skipped: needs {EXE} and {DATA}")
        sys.exit(77)
    unittest.main()
