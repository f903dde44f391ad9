"""The gradlab program given bad input: every case must end with one line on stderr that
names the problem and says what to do, a nonzero exit, nothing on stdout and no files
written. The data cases use small MNIST-format folders written here.

Run: GRADLAB_EXE=build/tools/gradlab python3 tests/cli/test_bad_input.py
(meson test --suite cli sets GRADLAB_EXE; without the program the test exits 77, skipped)
"""

import gzip
import os
import struct
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXE = Path(os.environ.get("GRADLAB_EXE", ROOT / "build" / "tools" / "gradlab"))


def idx(extents, data=b"", type_byte=0x08):
    """An IDX file: two zero bytes, the type, the dimension count, big-endian extents, data."""
    return bytes([0, 0, type_byte, len(extents)]) + b"".join(struct.pack(">I", e) for e in extents) + data


def mnist_folder(root, name, **replace):
    """A folder with a 4-example train split and a 2-example test split of 2 x 2 images;
    replace maps a file name to other bytes (None: leave the file out)."""
    files = {
        "train-images-idx3-ubyte": idx([4, 2, 2], bytes(range(16))),
        "train-labels-idx1-ubyte": idx([4], bytes([0, 1, 2, 3])),
        "t10k-images-idx3-ubyte.gz": gzip.compress(idx([2, 2, 2], bytes(8))),
        "t10k-labels-idx1-ubyte.gz": gzip.compress(idx([2], bytes([4, 5]))),
    }
    files.update(replace)
    folder = Path(root) / name
    folder.mkdir()
    for file, content in files.items():
        if content is not None:
            (folder / file).write_bytes(content)
    return folder


class BadInput(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gradlab-cli-")
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def fails(self, args, *expected):
        """Runs gradlab with args; checks the one-line error, the exit code, the silence."""
        run = subprocess.run([str(EXE), *map(str, args)], capture_output=True, text=True, timeout=60,
                             cwd=self.dir, stdin=subprocess.DEVNULL)
        lines = run.stderr.splitlines()
        where = f"gradlab {' '.join(map(str, args))}:\nstdout: {run.stdout!r}\nstderr: {run.stderr!r}"
        self.assertNotEqual(run.returncode, 0, where)
        self.assertEqual(len(lines), 1, "one line of error\n" + where)
        self.assertTrue(lines[0].startswith("gradlab: error: "), where)
        self.assertEqual(run.stdout, "", "nothing printed before the error\n" + where)
        for text in expected:
            self.assertIn(text, lines[0], where)
        return lines[0]

    # The command line --------------------------------------------------------------------

    def test_unknown_command_is_named(self):
        self.fails(["trian"], "unknown command 'trian'", "info, train, claims")

    def test_option_before_any_command(self):
        self.fails(["--epochs", "3"], "'--epochs' comes before any command", "info, train, claims")

    def test_unknown_device_lists_the_devices(self):
        self.fails(["train", "--device", "gpu"], "unknown device 'gpu'", "cuda_cpu")

    def test_cuda_without_a_gpu_stops_at_once_with_the_hint(self):
        run = subprocess.run([str(EXE), "train", "--device", "cuda", "--data", self.dir / "missing"],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        if "not available" not in run.stderr:
            self.skipTest("a GPU is present: --device cuda is available")
        # Before the (missing) data is looked at: the device is the only complaint.
        self.fails(["train", "--device", "cuda", "--data", self.dir / "missing"], "cuda:0 is not available",
                   "--device cuda_cpu")

    def test_unknown_option(self):
        self.fails(["train", "--epoch", "3"], "--epoch", "gradlab train --help")

    def test_counts_must_be_at_least_one(self):
        for option in ["--limit", "--epochs", "--batch-size", "--threads", "--workers"]:
            for value in ["0", "-1"]:
                with self.subTest(option=option, value=value):
                    self.fails(["train", option, value], option, value, "gradlab train --help")

    def test_learning_rate_must_be_positive_and_finite(self):
        for value in ["nan", "inf", "-inf", "0", "-0.1", "fast"]:
            with self.subTest(value=value):
                self.fails(["train", "--lr", value], "--lr", f"'{value}' is not a positive finite number")

    def test_seed_must_be_a_64_bit_unsigned_number(self):
        for value in ["-1", "18446744073709551616", "1.5"]:
            with self.subTest(value=value):
                self.fails(["train", "--seed", value], "--seed", value, "from 0 to 2^64-1")
        self.fails(["claims", "--seed", "-1"], "--seed", "from 0 to 2^64-1")

    def test_a_count_too_large_is_not_clamped(self):
        self.fails(["train", "--limit", "99999999999999999999"], "--limit", "from 1 to 2^63-1")

    def test_choices_are_listed(self):
        self.fails(["train", "--optimizer", "adamw"], "--optimizer", "adamw", "sgd")
        self.fails(["train", "--precision", "fp8"], "--precision", "fp16")

    def test_combinations_that_cannot_work(self):
        self.fails(["train", "--backend", "nccl"], "nccl backend", "use --backend threads or mpi")
        self.fails(["train", "--workers", "2", "--batch-size", "63"], "--batch-size 63 is not a multiple of --workers 2")
        self.fails(["train", "--workers", "4", "--parallel", "dp", "--batch-size", "2"],
                   "--batch-size 2 is smaller than --workers 4")
        self.fails(["train", "--workers", "2", "--precision", "fp16"], "--precision and --memory are for one worker")
        self.fails(["train", "--workers", "2", "--allocator", "direct"], "--allocator is for one worker")

    def test_unknown_gemm_kernel(self):
        self.fails(["train", "--gemm", "fastest", "--data", mnist_folder(self.dir, "ok")],
                   "unknown GEMM kernel 'fastest'", "naive")

    # The data ----------------------------------------------------------------------------

    def train(self, folder, *expected):
        return self.fails(["train", "--epochs", "1", "--data", folder], *expected)

    def test_missing_folder(self):
        self.train(self.dir / "nowhere", "does not exist", "--data DIR", "dataset-fashion-mnist")

    def test_missing_file(self):
        folder = mnist_folder(self.dir, "d", **{"t10k-labels-idx1-ubyte.gz": None})
        self.train(folder, "neither t10k-labels-idx1-ubyte nor t10k-labels-idx1-ubyte.gz")

    def test_truncated_file(self):
        folder = mnist_folder(self.dir, "d", **{"train-images-idx3-ubyte": idx([4, 2, 2], bytes(10))})
        self.train(folder, "train-images-idx3-ubyte", "truncated", "4 x 2 x 2 = 16 bytes", "holds 10")

    def test_cut_short_gzip(self):
        whole = gzip.compress(idx([2, 2, 2], bytes(8)))
        folder = mnist_folder(self.dir, "d", **{"t10k-images-idx3-ubyte.gz": whole[: len(whole) // 2]})
        self.train(folder, "t10k-images-idx3-ubyte.gz", "download it again")

    def test_huge_extents_with_no_images(self):
        # (2^32 - 1)^2 pixels per image overflows int64; once this made a nonsense model.
        folder = mnist_folder(self.dir, "d", **{"train-images-idx3-ubyte": idx([0, 0xFFFFFFFF, 0xFFFFFFFF]),
                                                "train-labels-idx1-ubyte": idx([0])})
        self.train(folder, "train-images-idx3-ubyte", "holds 0 images")

    def test_huge_extents_beyond_the_size_limit(self):
        folder = mnist_folder(self.dir, "d", **{"train-images-idx3-ubyte": idx([0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF])})
        self.train(folder, "train-images-idx3-ubyte", "header is corrupt")

    def test_empty_test_set(self):
        folder = mnist_folder(self.dir, "d", **{"t10k-images-idx3-ubyte.gz": gzip.compress(idx([0, 2, 2])),
                                                "t10k-labels-idx1-ubyte.gz": gzip.compress(idx([0]))})
        self.train(folder, "t10k-images-idx3-ubyte.gz", "holds 0 images")

    def test_test_images_of_another_size(self):
        folder = mnist_folder(self.dir, "d", **{"t10k-images-idx3-ubyte.gz": gzip.compress(idx([2, 3, 3], bytes(18)))})
        self.train(folder, "test examples have shape [9], training examples [4]")

    def test_label_out_of_range(self):
        folder = mnist_folder(self.dir, "d", **{"train-labels-idx1-ubyte": idx([4], bytes([0, 1, 10, 3]))})
        self.train(folder, "label 10 at index 2 is out of range 0..9")

    def test_counts_that_disagree(self):
        folder = mnist_folder(self.dir, "d", **{"train-labels-idx1-ubyte": idx([3], bytes([0, 1, 2]))})
        self.train(folder, "3 labels", "holds 4 images")

    # Image folders (data export-images, data throughput) ------------------------------------

    def test_export_images_into_a_folder_that_holds_files(self):
        (self.dir / "full").mkdir()
        (self.dir / "full" / "keep.txt").write_text("x")
        self.fails(["data", "export-images", self.dir / "full", "--data", mnist_folder(self.dir, "ok")],
                   "full", "exists and is not an empty folder", "give a new folder")
        self.assertEqual([p.name for p in (self.dir / "full").iterdir()], ["keep.txt"], "nothing written")

    def test_export_images_in_an_unknown_format(self):
        self.fails(["data", "export-images", self.dir / "out", "--format", "gif"], "--format", "gif")
        self.assertFalse((self.dir / "out").exists(), "nothing written")

    def test_throughput_of_a_folder_that_is_not_there(self):
        self.fails(["data", "throughput", self.dir / "nowhere"], "nowhere", "is not a folder", "export-images")

    def test_throughput_of_a_folder_whose_first_image_is_broken(self):
        (self.dir / "imgs" / "0").mkdir(parents=True)
        (self.dir / "imgs" / "0" / "a.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
        self.fails(["data", "throughput", self.dir / "imgs"], "a.jpg", "first file sets the image size")

    # The claims report -------------------------------------------------------------------

    def test_unknown_claim(self):
        self.fails(["claims", "--only", "FW-9", "--out", self.dir / "out"], "--only", "FW-9", "FW-1")
        self.assertFalse((self.dir / "out").exists(), "nothing written")

    def test_claims_data_folder_that_is_not_there(self):
        self.fails(["claims", "--only", "FW-1", "--data", self.dir / "nowhere", "--out", self.dir / "out"],
                   "--data", "nowhere", "is not a folder")

    def test_output_folder_that_cannot_be_written(self):
        blocker = self.dir / "a-file"
        blocker.write_text("")
        self.fails(["claims", "--only", "FW-1", "--out", blocker / "out"], str(blocker / "out"), "--out")

    # ONNX files (infer, export-onnx) ------------------------------------------------------------

    def test_infer_model_that_is_not_there(self):
        self.fails(["infer", self.dir / "none.onnx"], "none.onnx", "cannot open")

    def test_infer_model_that_is_not_onnx(self):
        (self.dir / "junk.onnx").write_bytes(b"\x08\x07\x12\xff\xff\xff\x0f not onnx")
        self.fails(["infer", self.dir / "junk.onnx"], "junk.onnx", "not an ONNX model", "export the model again")
        (self.dir / "empty.onnx").write_bytes(b"")
        self.fails(["infer", self.dir / "empty.onnx"], "empty.onnx", "truncated")

    def test_export_onnx_needs_a_model_and_an_out(self):
        self.fails(["export-onnx", "--out", "m.onnx"], "--model")
        self.fails(["export-onnx", "--model", self.dir / "none.glm", "--out", self.dir / "m.onnx"], "none.glm")

    # Model files (quantize, train --save) ----------------------------------------------------

    def test_quantize_needs_a_model(self):
        self.fails(["quantize"], "--model")

    def test_quantize_model_that_is_not_there(self):
        self.fails(["quantize", "--model", self.dir / "none.glm"], "none.glm", "no such file")

    def test_quantize_model_that_is_not_a_model(self):
        (self.dir / "junk.glm").write_bytes(b"GLMODEL\0" + bytes(5))
        self.fails(["quantize", "--model", self.dir / "junk.glm"], "junk.glm", "truncated")
        (self.dir / "text.glm").write_text("hello")
        self.fails(["quantize", "--model", self.dir / "text.glm"], "not a gradlab model")

    def test_quantize_unknown_observer(self):
        self.fails(["quantize", "--model", "m.glm", "--observer", "median"], "--observer", "median")

    def test_qat_options_need_qat(self):
        self.fails(["train", "--qat-epochs", "2"], "--qat")

    def test_qat_and_save_are_for_the_mlp_and_the_cnn(self):
        # The model file holds Linear and Conv2d layers; the ResNet's batch norm and
        # residual adds have no INT8 form here.
        self.fails(["train", "--model", "resnet", "--qat"], "--model mlp or cnn")
        self.fails(["train", "--model", "resnet", "--save", "r.glm"], "--model mlp or cnn")


if __name__ == "__main__":
    if not EXE.exists():
        # 77: meson's "skipped" (the sanitizer build, for one, does not build the program).
        print(f"skipped: {EXE} is not built; build it (ninja -C build tools/gradlab) or set GRADLAB_EXE")
        sys.exit(77)
    unittest.main(verbosity=1)
