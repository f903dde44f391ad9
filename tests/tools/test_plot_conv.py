"""Tests of tools/plot_conv.py's reading of bench_conv's JSON (no matplotlib needed).

Run: python3 -m unittest discover -s tests/tools
"""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import plot_conv  # noqa: E402


def bench(runs: list[dict]) -> dict:
    return {"context": {}, "benchmarks": runs}


def run(name: str, ms: float, **extra) -> dict:
    return {"name": name, "run_type": "iteration", "real_time": ms, "time_unit": "ms", **extra}


class Times(unittest.TestCase):
    def read(self, data: dict) -> dict:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "conv.json"
            path.write_text(json.dumps(data))
            return plot_conv.times(path)

    def test_one_entry_per_layer_and_algorithm(self):
        table = self.read(bench([run("Conv/cnn.conv1/im2col/real_time", 0.5),
                                 run("Conv/cnn.conv1/onednn_blocked/real_time", 0.3),
                                 run("Conv/cnn.conv2/fft/real_time", 70.0)]))
        self.assertEqual(table, {"cnn.conv1": {"im2col": 0.5, "onednn_blocked": 0.3}, "cnn.conv2": {"fft": 70.0}})

    def test_failed_runs_are_left_out_and_repetitions_give_their_median(self):
        table = self.read(bench([run("Conv/a/im2col/real_time", 9.0, error_occurred=True),
                                 run("Conv/a/fft/real_time", 1.0),
                                 {**run("Conv/a/fft/real_time_median", 2.0), "run_type": "aggregate",
                                  "aggregate_name": "median"},
                                 {**run("Conv/a/fft/real_time_mean", 3.0), "run_type": "aggregate",
                                  "aggregate_name": "mean"}]))
        self.assertEqual(table, {"a": {"fft": 2.0}})

    def test_other_json_is_refused_with_what_it_expected(self):
        with self.assertRaisesRegex(ValueError, "bench_conv"):
            self.read(bench([run("gemm/threaded/square/64x64x64", 0.1)]))
        with self.assertRaisesRegex(ValueError, "expected ms"):
            self.read(bench([{**run("Conv/a/fft/real_time", 1.0), "time_unit": "us"}]))


class Order(unittest.TestCase):
    def test_algorithms_keep_the_registry_order_whatever_the_json_order(self):
        names = ["onednn", "implicit_gemm", "newest", "direct", "im2col"]
        self.assertEqual(plot_conv.ordered(names, plot_conv.ALGORITHM_ORDER),
                         ["direct", "im2col", "implicit_gemm", "onednn", "newest"])


class Provenance(unittest.TestCase):
    def read(self, context: dict) -> str:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "conv.json"
            path.write_text(json.dumps({"context": context, "benchmarks": []}))
            return plot_conv.provenance(path)

    def test_machine_date_and_load_come_from_the_json_context(self):
        text = self.read({"host_name": "box", "num_cpus": 2, "mhz_per_cpu": 3000,
                          "date": "2026-12-01T11:30:00+00:00", "load_avg": [1.5, 1.25, 1.0]})
        self.assertEqual(text, "box, 2 CPUs at 3000 MHz, 2026-12-01T11:30:00+00:00, load average 1.50 1.25 1.00")

    def test_a_json_without_context_says_so(self):
        self.assertIn("not recorded", self.read({}))


if __name__ == "__main__":
    unittest.main()
