"""Tests of the PyTorch peer scripts (tools/peers) that need neither a build nor PyTorch:
parsing IDX files, finding the data, and reading gradlab's epoch lines.

Run: python3 -m unittest discover -s tests/tools
"""

import gzip
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

PEERS = Path(__file__).resolve().parents[2] / "tools" / "peers"
sys.path.insert(0, str(PEERS))
import compare_simplenet  # noqa: E402
import openblas_core  # noqa: E402
import simplenet_torch  # noqa: E402


class ReadIdx(unittest.TestCase):
    def write(self, folder: Path, name: str, data: bytes) -> Path:
        path = folder / name
        if name.endswith(".gz"):
            with gzip.open(path, "wb") as f:
                f.write(data)
        else:
            path.write_bytes(data)
        return path

    def test_reads_raw_and_gzipped_files(self):
        body = bytes(range(6))
        data = b"\x00\x00\x08\x02" + struct.pack(">II", 2, 3) + body
        with tempfile.TemporaryDirectory() as d:
            for name in ("a-idx", "b-idx.gz"):
                shape, values = simplenet_torch.parse_idx(self.write(Path(d), name, data))
                self.assertEqual(shape, (2, 3))
                self.assertEqual(values, body)

    def test_bad_files_are_errors_that_name_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            not_idx = self.write(Path(d), "junk", b"hello world")
            with self.assertRaisesRegex(ValueError, "junk: not an unsigned-byte IDX file"):
                simplenet_torch.parse_idx(not_idx)
            short = self.write(Path(d), "short", b"\x00\x00\x08\x01" + struct.pack(">I", 10) + b"\x01\x02")
            with self.assertRaisesRegex(ValueError, "short: header says"):
                simplenet_torch.parse_idx(short)
            with self.assertRaisesRegex(FileNotFoundError, "pass --data"):
                simplenet_torch.find(Path(d), "train-images-idx3-ubyte")


class EpochLines(unittest.TestCase):
    def test_reads_time_and_accuracy_from_gradlab_train_output(self):
        out = ("setup:  adam lr 0.001 batch 64 seed 0 gemm threaded threads 2 allocator direct\n"
               "epoch 1/2  train loss 0.4614 acc 0.8343  test loss 0.4121 acc 0.8520  0.341 s  176000 samples/s\n"
               "epoch 2/2  train loss 0.3478 acc 0.8729  test loss 0.3978 acc 0.8556  0.332 s  181000 samples/s\n")
        found = compare_simplenet.EPOCH_LINE.findall(out)
        self.assertEqual(found, [("1", "0.8520", "0.341"), ("2", "0.8556", "0.332")])


class CnnModel(unittest.TestCase):
    def test_has_gradlabs_parameter_count_and_shapes(self):
        try:
            import torch
        except ImportError:
            self.skipTest("PyTorch is not installed for this interpreter")
        model = simplenet_torch.make_model(torch, "cnn")
        # gradlab train --model cnn prints "(421642 parameters)" for the same model
        self.assertEqual(sum(p.numel() for p in model.parameters()), 421642)
        self.assertEqual(tuple(model(torch.zeros(3, 784)).shape), (3, 10))
        conv1 = model[1]
        self.assertLessEqual(conv1.weight.abs().max().item(), (6.0 / 9) ** 0.5)
        self.assertEqual(conv1.bias.abs().max().item(), 0.0)


class OpenBlasCore(unittest.TestCase):
    def test_reports_the_kernels_the_environment_asks_for(self):
        # OPENBLAS_CORETYPE decides at load time, in the fresh process the probe starts.
        core = openblas_core.chosen_core({"OPENBLAS_CORETYPE": "Haswell"})
        if core in ("no BLAS", "not OpenBLAS"):
            self.skipTest(f"the system's BLAS: {core}")
        self.assertEqual(core, "Haswell")
        self.assertEqual(openblas_core.chosen_core({"OPENBLAS_CORETYPE": "Prescott"}), "Prescott")


class CompareCnnArguments(unittest.TestCase):
    def test_refuses_a_zero_limit(self):
        p = subprocess.run([sys.executable, str(PEERS / "compare_cnn.py"), "--gradlab", sys.executable, "--limit", "0"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--limit", p.stderr)


class WithoutPyTorch(unittest.TestCase):
    def test_says_how_to_install_it_and_exits_3(self):
        probe = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True)
        if probe.returncode == 0:
            self.skipTest("PyTorch is installed for this interpreter")
        p = subprocess.run([sys.executable, str(PEERS / "simplenet_torch.py")], capture_output=True, text=True)
        self.assertEqual(p.returncode, simplenet_torch.NO_TORCH)
        self.assertIn("apt-get install python3-torch", p.stderr)


if __name__ == "__main__":
    unittest.main()
