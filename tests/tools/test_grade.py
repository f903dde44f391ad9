"""Tests of tools/grade.py that need no C++ build: picking the submission's files, checking
rubrics, and judging test runs of a stand-in for a GoogleTest binary (a Python script that
prints and reports like one, then passes, fails, hangs, crashes or skips).

Run: python3 -m unittest discover -s tests/tools
"""

import json
import os
import signal
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import grade  # noqa: E402

# Behaves like a GoogleTest binary run with --gtest_filter=Fake.<Case> --gtest_output=json:F.
FAKE_GTEST = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, signal, subprocess, sys, time
    case = next(a for a in sys.argv if a.startswith("--gtest_filter=")).split(".")[1]
    report = next(a for a in sys.argv if a.startswith("--gtest_output=json:"))[20:]
    def finish(result="COMPLETED", failures=(), code=0, ran=True):
        test = {"name": case, "status": "RUN", "result": result, "classname": "Fake"}
        if failures:
            test["failures"] = [{"failure": f, "type": ""} for f in failures]
        suites = [{"name": "Fake", "testsuite": [test]}] if ran else []
        with open(report, "w") as f:
            json.dump({"tests": len(suites), "testsuites": suites}, f)
        sys.exit(code)
    print("[==========] Running 1 test from 1 test suite.")
    print(f"[ RUN      ] Fake.{case}", flush=True)
    if case == "Pass":
        print(f"[       OK ] Fake.{case} (0 ms)")
        finish()
    if case == "Fail":
        where = os.environ["FAKE_WORK"] + "/src/core/ops/x.cpp:3"
        finish(failures=[where + "\\nExpected 1, got 2"], code=1)
    if case == "NotImplemented":
        message = 'C++ exception with description "lab 01: not implemented: matmul backward" thrown'
        print(message)
        finish(failures=[message], code=1)
    if case == "Hang":
        helper = subprocess.Popen(["sleep", "60"])
        with open(os.environ["FAKE_PIDFILE"], "w") as f:
            f.write(str(helper.pid))
        time.sleep(60)
    if case == "Segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if case == "OutOfMemory":
        message = 'C++ exception with description "std::bad_alloc" thrown in the test body.'
        print(message)
        finish(failures=[message], code=1)
    if case == "Skip":
        print("t.cpp:3: Skipped")
        print("needs a CUDA device")
        print(f"[  SKIPPED ] Fake.{case} (0 ms)")
        finish(result="SKIPPED")
    if case == "NoMatch":
        finish(ran=False)
    if case == "Exit":
        sys.exit(0)  # leaves before writing its report
    """)


class JudgeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.work = Path(cls._tmp.name)
        cls.binary = cls.work / "fake_gtest"
        cls.binary.write_text(FAKE_GTEST)
        cls.binary.chmod(0o755)
        os.environ["FAKE_WORK"] = str(cls.work)
        os.environ["FAKE_PIDFILE"] = str(cls.work / "helper.pid")
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def run_case(self, case, timeout=10.0):
        JudgeTest.runs += 1
        item = grade.Item(f"Fake.{case}", 5, case, timeout)
        return grade.run_item(self.binary, item, timeout, 1024,
                              self.work / "runs" / str(self.runs), self.work, "01")

    def test_pass(self):
        outcome = self.run_case("Pass")
        self.assertEqual((outcome.status, outcome.earned, outcome.message), ("passed", 5, "passed"))

    def test_failure_messages_with_short_paths(self):
        outcome = self.run_case("Fail")
        self.assertEqual((outcome.status, outcome.earned), ("failed", 0))
        self.assertIn("Fake.Fail failed:\ncore/ops/x.cpp:3\nExpected 1, got 2", outcome.message)

    def test_not_implemented(self):
        outcome = self.run_case("NotImplemented")
        self.assertEqual(outcome.status, "not implemented")
        self.assertTrue(outcome.message.startswith("not implemented: matmul backward"))

    def test_timeout_kills_the_process_group(self):
        start = time.monotonic()
        outcome = self.run_case("Hang", timeout=1.0)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual((outcome.status, outcome.earned), ("timed out", 0))
        self.assertEqual(outcome.message, "timed out after 1 s in Fake.Hang "
                                          "(an infinite loop or a deadlock?)")
        helper = int((self.work / "helper.pid").read_text())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and process_alive(helper):
            time.sleep(0.05)
        self.assertFalse(process_alive(helper), "the test's own child must be killed too")

    def test_crash(self):
        outcome = self.run_case("Segfault")
        self.assertEqual(outcome.status, "crashed")
        self.assertIn("crashed with signal SIGSEGV in Fake.Segfault (segmentation fault",
                      outcome.message)
        self.assertNotIn("[==========]", outcome.message)

    def test_out_of_memory(self):
        outcome = self.run_case("OutOfMemory")
        self.assertEqual(outcome.status, "out of memory")
        self.assertIn("ran out of memory (limit 1024 MiB) in Fake.OutOfMemory", outcome.message)

    def test_skipped_earns_nothing(self):
        outcome = self.run_case("Skip")
        self.assertEqual((outcome.status, outcome.earned), ("skipped", 0))
        self.assertIn("Fake.Skip: needs a CUDA device", outcome.message)

    def test_no_matching_test_earns_nothing(self):
        outcome = self.run_case("NoMatch")
        self.assertEqual((outcome.status, outcome.earned), ("no tests", 0))

    def test_exit_before_report(self):
        outcome = self.run_case("Exit")
        self.assertEqual((outcome.status, outcome.earned), ("crashed", 0))
        self.assertIn("before reporting its results in Fake.Exit", outcome.message)


def process_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie waiting to be reaped is dead too
        return f.read().split(")")[-1].split()[0] != "Z"


class SubmissionFilesTest(unittest.TestCase):
    LAB = grade.Lab("01", "01-autograd", ["core/autograd/engine.cpp", "core/ops/matmul.cpp",
                                          "core/ops/x/util.cpp", "core/ops/y/util.cpp"])

    def pick(self, files):
        with tempfile.TemporaryDirectory() as tmp:
            for rel in files:
                (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(tmp) / rel).write_text("//\n")
            return grade.pick_submission_files(Path(tmp), self.LAB)

    def test_repository_handout_and_flat_layouts(self):
        staged = self.pick(["core/autograd/engine.cpp", "labs/01-autograd/core/ops/x/util.cpp",
                            "matmul.cpp", "README.md"])
        self.assertEqual(staged.used, {
            "core/autograd/engine.cpp": "core/autograd/engine.cpp",
            "core/ops/matmul.cpp": "matmul.cpp",
            "core/ops/x/util.cpp": "labs/01-autograd/core/ops/x/util.cpp"})
        self.assertEqual(staged.missing, ["core/ops/y/util.cpp"])
        self.assertEqual(staged.ignored, ["README.md"])

    def test_flat_name_shared_by_two_lab_files_is_not_guessed(self):
        staged = self.pick(["util.cpp"])
        self.assertNotIn("core/ops/x/util.cpp", staged.used)
        self.assertEqual(staged.ignored, ["util.cpp"])

    def test_exact_path_wins_over_other_copies(self):
        staged = self.pick(["core/ops/matmul.cpp", "old/matmul.cpp", "matmul.cpp"])
        self.assertEqual(staged.used, {"core/ops/matmul.cpp": "core/ops/matmul.cpp"})
        self.assertEqual(staged.notes, [])
        self.assertEqual(staged.ignored, ["matmul.cpp", "old/matmul.cpp"])

    def test_nested_folder_and_ambiguous_names(self):
        staged = self.pick(["alice/lab1/engine.cpp", "a/matmul.cpp", "b/matmul.cpp"])
        self.assertEqual(staged.used, {"core/autograd/engine.cpp": "alice/lab1/engine.cpp"})
        self.assertIn("several files are named matmul.cpp", staged.notes[0])


class RubricTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.saved_repo = grade.REPO
        grade.REPO = Path(self._tmp.name)
        (grade.REPO / "labs/01-autograd").mkdir(parents=True)
        self.lab = grade.Lab("01", "01-autograd", [])

    def tearDown(self):
        grade.REPO = self.saved_repo
        self._tmp.cleanup()

    def load(self, rubric):
        text = rubric if isinstance(rubric, str) else json.dumps(rubric)
        (grade.REPO / "labs/01-autograd/rubric.json").write_text(text)
        return grade.load_rubric(self.lab)

    def good(self, **changes):
        rubric = {"lab": "01", "title": "autograd", "test_target": "lab01_tests",
                  "items": [{"name": "Lab01.A*", "points": 10, "title": "a"},
                            {"name": "Lab01.B", "points": 5, "title": "b", "timeout_s": 9}]}
        rubric.update(changes)
        return rubric

    def test_valid_rubric_with_defaults(self):
        rubric = self.load(self.good())
        self.assertEqual(rubric.memory_limit_mb, 4096)
        self.assertEqual([(i.name, i.points, i.timeout_s) for i in rubric.items],
                         [("Lab01.A*", 10, 60), ("Lab01.B", 5, 9)])

    def test_broken_rubrics_are_usage_errors(self):
        def items(*entries):
            return json.dumps(self.good(items=list(entries)))
        cases = {
            "{": "not valid JSON",
            json.dumps(self.good(lab="02")): "expected '01'",
            json.dumps(self.good(timeout=3)): "unknown key(s) ['timeout']",
            json.dumps(self.good(items=[])): "non-empty list",
            items({"name": "A", "points": -1, "title": "a"}): "positive number",
            items({"name": "A B", "points": 1, "title": "a"}): "white space",
            items({"name": "A", "points": 1, "title": "a"},
                  {"name": "B", "points": 1, "title": "a"}): "appears twice",
            json.dumps(self.good(test_target="../x")): "plain executable name",
        }
        for text, message in cases.items():
            with self.subTest(message=message), self.assertRaises(grade.UsageError) as caught:
                self.load(text)
            self.assertIn(message, str(caught.exception))


if __name__ == "__main__":
    unittest.main()
