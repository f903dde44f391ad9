"""The dry run of tools/gpu/run_gpu_checks.sh, the GPU check that must work the first time
it meets a GPU: with a stand-in nvidia-smi (tests/tools/fake_gpu) and the CUDA-on-CPU
runtime where a GPU would be used, every step runs here; a broken step must fail the run.
Also: finding CUDA's libraries where Python wheels keep them (tools/gpu/cuda_locate.sh).

Needs a configured and built build folder (GRADLAB_BUILD, default build/: `./gradlab test`
builds it first); the dry run only builds the three programs it runs there.

Run: python3 -m unittest discover -s tests/tools -p test_gpu_checks.py
"""

import json
import os
import subprocess
import tarfile
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tools" / "gpu" / "run_gpu_checks.sh"
FAKE_GPU = Path(__file__).resolve().parent / "fake_gpu"
BUILD = Path(os.environ.get("GRADLAB_BUILD", ROOT / "build"))


def rows(table: str) -> dict:
    """Step -> result, from the Markdown table the script writes."""
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] not in ("step", "---"):
            out.setdefault(cells[0], cells[1])
    return out


def dry_run(out: Path, env_extra=None, path_first=FAKE_GPU):
    # The prefix (links to CUDA's libraries) goes beside OUT, not into the checkout.
    env = dict(os.environ, PATH=f"{path_first}:{os.environ['PATH']}", GPU_CHECKS_PREFIX=str(out.parent / "prefix"),
               **(env_extra or {}))
    return subprocess.run([str(SCRIPT), "--dry-run", "--reuse-build", str(BUILD), str(out)],
                          env=env, capture_output=True, text=True, timeout=600)


@unittest.skipUnless((BUILD / "build.ninja").exists(),
                     f"needs a configured build in {BUILD} (./gradlab build, or set GRADLAB_BUILD)")
class DryRun(unittest.TestCase):
    def test_every_step_runs_and_passes_on_the_cpu_runtime(self):
        with tempfile.TemporaryDirectory() as d:
            out, scratch = Path(d) / "out", Path(d) / "tmp"
            scratch.mkdir()
            r = dry_run(out, {"TMPDIR": str(scratch)})
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            # Two files come back, whatever the run wrote: the table and one archive.
            self.assertEqual(sorted(p.name for p in out.iterdir()),
                             ["gpu_checks.md", "gpu_checks_logs.tar.gz"])
            self.assertEqual(list(scratch.iterdir()), [], "the logs folder outlived the run")
            table = (out / "gpu_checks.md").read_text()
            self.assertIn("DRY RUN", table)
            result = rows(table)
            for step in ("machine", "cuda", "build", "runtime", "device tests", "sgemm", "hgemm", "igemm"):
                self.assertEqual(result.get(step), "passed", f"{step}: {result}")
            # SimpleNet on the CPU runtime and the CPU, one epoch each, the same accuracy.
            self.assertEqual(result.get("device tensor"), "passed", result)
            self.assertRegex(table, r"cuda_cpu epoch [0-9.]+ s, test acc 0\.[0-9]+; cpu epoch [0-9.]+ s, test acc 0\.[0-9]+")
            self.assertEqual(result.get("streams claims"), "passed", result)
            self.assertIn("## CUDA SGEMM family vs cuBLAS", table)
            self.assertIn("## Tensor-core GEMM (WMMA) vs cuBLAS", table)
            self.assertIn("## INT8 GEMM (DP4A, WMMA) vs cuBLASLt", table)
            with tarfile.open(out / "gpu_checks_logs.tar.gz") as tar:
                names = tar.getnames()
                for bench in ("sgemm_vs_cublas", "hgemm_vs_cublas", "igemm_vs_cublaslt"):
                    runs = json.load(tar.extractfile(f"./{bench}.json"))["benchmarks"]
                    self.assertTrue(runs)
                    for run in runs:  # GFLOP/s in GFLOP/s, from batches of launches
                        self.assertGreater(run["GFLOP/s"], 0)
                        self.assertLess(run["GFLOP/s"], 1e4, "GFLOP/s written in FLOP/s?")
                        self.assertGreaterEqual(run["launches_per_batch"], 1)
            # The device tests ran one process each, and each left its XML report.
            xml = [n for n in names if n.startswith("./device_tests/") and n.endswith(".xml")]
            self.assertGreater(len(xml), 1)

    def test_broken_steps_fail_the_run(self):
        # Two breakages at once, each of which alone must fail the run: the real device
        # tests skip here (no GPU), which is "did not run"; and a size the WMMA kernels
        # refuse makes the HGEMM and IGEMM benchmarks exit non-zero.
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "out"
            r = dry_run(out, {"GPU_CHECKS_DEVICE_TESTS": "*Device*:*MatchesGpu*-*WithoutAGpu*",
                                  "GPU_CHECKS_SIZES": "24"})
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            table = (out / "gpu_checks.md").read_text()
            result = rows(table)
            self.assertEqual(result.get("device tests"), "did not run", table)
            self.assertEqual(result.get("hgemm"), "FAILED", table)
            self.assertEqual(result.get("igemm"), "FAILED", table)
            self.assertEqual(result.get("sgemm"), "passed", table)
            self.assertIn("FAILED: 3 step(s) did not pass", table)

    def test_without_a_gpu_it_refuses_to_report_success(self):
        with tempfile.TemporaryDirectory() as d:
            no_gpu = Path(d) / "bin"
            no_gpu.mkdir()
            smi = no_gpu / "nvidia-smi"
            smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: no devices were found' >&2\nexit 9\n")
            smi.chmod(0o755)
            out = Path(d) / "out"
            env = dict(os.environ, PATH=f"{no_gpu}:{os.environ['PATH']}")
            r = subprocess.run([str(SCRIPT), str(out)], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
            self.assertEqual(rows((out / "gpu_checks.md").read_text()).get("machine"), "did not run")


class CudaLocate(unittest.TestCase):
    """CUDA 13's wheels keep cuBLAS in site-packages/nvidia/cu13/lib (versioned names only)
    and NCCL in nvidia/nccl/lib: the script must find them and give meson a toolkit root."""

    def test_finds_libraries_in_a_wheel_layout(self):
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            toolkit, site, prefix = d / "toolkit", d / "site", d / "prefix"
            files = [toolkit / "include/cuda_runtime.h", toolkit / "lib64/libcudart.so.13",
                     toolkit / "lib64/libcudart_static.a",
                     site / "nvidia/cu13/lib/libcublas.so.13", site / "nvidia/cu13/lib/libcublasLt.so.13",
                     site / "nvidia/cu13/include/cublas_v2.h",
                     site / "nvidia/nccl/lib/libnccl.so.2", site / "nvidia/nccl/include/nccl.h"]
            for f in files:
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text("")
            nvcc = toolkit / "bin/nvcc"
            nvcc.parent.mkdir()
            nvcc.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.88'\n")
            nvcc.chmod(0o755)
            script = (f"source {ROOT}/tools/gpu/cuda_locate.sh && cuda_locate {prefix} {d}/report && "
                      'echo "CUDA_PATH=$CUDA_PATH" && echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"')
            env = dict(os.environ, PATH=f"{toolkit}/bin:/usr/bin:/bin", GPU_CHECKS_PYTHON_SITES=str(site),
                       LD_LIBRARY_PATH="")
            r = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            report = (d / "report").read_text()
            self.assertIn(f"libcublas: {site}/nvidia/cu13/lib", report)
            self.assertIn(f"libnccl: {site}/nvidia/nccl/lib", report)
            self.assertIn(f"cublas_v2.h: {site}/nvidia/cu13/include", report)
            self.assertIn(f"CUDA_PATH={prefix}/cuda", r.stdout)
            # The toolkit root of links holds all of it, and the linker finds unversioned names.
            for name in ("include/cublas_v2.h", "include/cuda_runtime.h", "lib64/libcublas.so.13",
                         "lib64/libcudart_static.a", "bin/nvcc"):
                self.assertTrue((prefix / "cuda" / name).exists(), name)
            self.assertEqual(os.readlink(prefix / "cuda-links/libnccl.so"), str(prefix / "cuda/lib64/libnccl.so.2"))
            ld = r.stdout.split("LD_LIBRARY_PATH=")[1].strip().split(":")
            self.assertIn(f"{site}/nvidia/cu13/lib", ld)
            self.assertIn(f"{site}/nvidia/nccl/lib", ld)


if __name__ == "__main__":
    unittest.main()
