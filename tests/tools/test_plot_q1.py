"""Tests of tools/plot_q1.py's reading of the claims report's JSON (no matplotlib needed).

Run: python3 -m unittest discover -s tests/tools
"""

import json
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import plot_q1  # noqa: E402


def q1_data() -> dict:
    model = {"fp32_accuracy": 0.86, "accuracy": {"PTQ minmax per-tensor": 0.85, "QAT per-channel": 0.858},
             "file_bytes": {"fp32": 400000, "int8_per_channel": 100500},
             "inference_seconds": {"batch": 1000, "fp32": 0.01, "int8": 0.004}}
    return {"models": {"MLP": model}, "gemm": [{"n": 1024, "threads": 2, "int8_kernel": "int8_vnni", "int8_gops": 300,
                                                "onednn_int8_gops": 250, "fp32_gflops": {"threaded": 100}}]}


def report(claims: list[dict]) -> dict:
    return {"machine": "test box", "date": "2026-12-03", "cores": 2, "quick": True, "claims": claims}


class Reading(unittest.TestCase):
    def entry(self, data: dict):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "claims.json"
            path.write_text(json.dumps(data))
            return plot_q1.q1_entry(path)

    def test_points_put_fp32_at_the_float_size_and_int8_at_the_int8_size(self):
        _, claim = self.entry(report([{"id": "FW-1"}, {"id": "Q-1", "data": q1_data()}]))
        self.assertEqual(plot_q1.points(claim["data"])["MLP"],
                         [("FP32", 400000.0, 0.86), ("PTQ minmax per-tensor", 100500.0, 0.85),
                          ("QAT per-channel", 100500.0, 0.858)])

    def test_provenance_names_machine_date_and_load(self):
        rep, claim = self.entry(report([{"id": "Q-1", "data": q1_data(),
                                         "load_average": {"before": 3.25, "after": 4.0}}]))
        line = plot_q1.provenance(rep, claim)
        for part in ("test box", "2026-12-03", "load 3.2 before, 4.0 after on 2 cores", "quick run"):
            self.assertIn(part, line)

    def test_a_report_without_q1_or_its_data_is_refused_by_name(self):
        with self.assertRaisesRegex(ValueError, "no Q-1"):
            self.entry(report([{"id": "FW-1"}]))
        with self.assertRaisesRegex(ValueError, "'models' or 'gemm'"):
            self.entry(report([{"id": "Q-1", "data": {"gemm": []}}]))


if __name__ == "__main__":
    unittest.main()
