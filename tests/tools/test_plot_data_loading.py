"""Tests of tools/plot_data_loading.py's reading of a claims report (no matplotlib needed).

Run: python3 -m unittest discover -s tests/tools
"""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import plot_data_loading  # noqa: E402


def step(workers, step_s, predicted_s, wait, **extra):
    return {"workers": workers, "step_seconds": step_s, "predicted_seconds": predicted_s, "wait_fraction": wait, **extra}


def report(*claims, **extra):
    return {"machine": "box", "date": "2026-12-03T16:00:00Z", "cores": 2, "claims": list(claims), **extra}


DATA1 = {"id": "DATA-1", "verdict": "reproduced", "load_average": {"before": 3.5, "after": 4.25},
         "data": {"load_seconds": 0.010, "compute_seconds": 0.012, "cores": 2,
                  "steps": [step(1, 0.0125, 0.012, 0.02), step(0, 0.0225, 0.022, 0.45),
                            step(2, 0.0121, 0.012, 0.01, ideal_seconds=0.012)]}}
DATA2 = {"id": "DATA-2", "verdict": "reproduced",
         "data": {"cores": 2, "throughput": [{"workers": w, "batches_per_second": r}
                                             for w, r in [(0, 10), (1, 18), (2, 30), (3, 29), (4, 27)]]}}


class Steps(unittest.TestCase):
    def test_readings_in_worker_order_in_milliseconds(self):
        s = plot_data_loading.steps(report(DATA1))
        self.assertEqual(s["workers"], [0, 1, 2])
        self.assertEqual([round(x, 6) for x in s["step_ms"]], [22.5, 12.5, 12.1])
        self.assertEqual(s["wait"], [0.45, 0.02, 0.01])
        self.assertAlmostEqual(s["load_ms"], 10.0)

    def test_the_model_without_a_recorded_ideal_is_max_of_load_over_workers_and_compute(self):
        s = plot_data_loading.steps(report(DATA1))
        self.assertEqual([round(x, 6) for x in s["ideal_ms"]], [22.0, 12.0, 12.0])

    def test_a_report_without_data1_is_refused_saying_how_to_make_one(self):
        with self.assertRaisesRegex(ValueError, "--only DATA-1"):
            plot_data_loading.steps(report(DATA2))


class Throughput(unittest.TestCase):
    def test_data2_is_optional(self):
        self.assertIsNone(plot_data_loading.throughput(report(DATA1)))
        t = plot_data_loading.throughput(report(DATA1, DATA2))
        self.assertEqual(t["workers"], [0, 1, 2, 3, 4])
        self.assertEqual(t["batches_per_second"][2], 30)


class Provenance(unittest.TestCase):
    def test_machine_date_and_load_come_from_the_report(self):
        text = plot_data_loading.provenance(report(DATA1, quick=True))
        self.assertEqual(text, "box, 2026-12-03T16:00:00Z, DATA-1 load 3.50 before, 4.25 after, quick run")

    def test_a_report_without_them_says_so(self):
        self.assertIn("not recorded", plot_data_loading.provenance({"claims": []}))


if __name__ == "__main__":
    unittest.main()
