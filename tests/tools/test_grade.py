"""Tests of tools/grade.py that need no C++ build: picking the submission's files, checking
rubrics, and judging the two runs of an item (tools/graded_run.py) with a stand-in for a lab
test program (a Python script that computes in the sandbox and records, then passes,
fails, hangs, crashes, skips or forges its verdict, and checks by reading the record).
The judging tests skip without a usable sandbox, unless GRADLAB_REQUIRE_SANDBOX=1.

Run: python3 -m unittest discover -s tests/tools
"""

import json
import os
import shutil
import sys
import tempfile
import textwrap
import time
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import grade  # noqa: E402
import grade_build  # noqa: E402

# Behaves like a lab test program. With GRADLAB_GRADED_RECORD (the student's build, run in
# the sandbox) it acts out the case (passes, fails, hangs, crashes, forges its verdict) and
# records what it computed; with GRADLAB_GRADED_REPLAY (the trusted checker) it reports
# only what the record says, like graded::student replaying it.
FAKE_GTEST = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, signal, subprocess, sys, time
    case = next(a for a in sys.argv if a.startswith("--gtest_filter=")).split(".")[1]
    def finish(report, result="COMPLETED", failures=(), code=0, ran=True):
        test = {"name": case, "status": "RUN", "result": result, "classname": "Fake"}
        if failures:
            test["failures"] = [{"failure": f, "type": ""} for f in failures]
        suites = [{"name": "Fake", "testsuite": [test]}] if ran else []
        with open(report, "w") as f:
            json.dump({"tests": len(suites), "testsuites": suites}, f)
        sys.exit(code)
    print("[==========] Running 1 test from 1 test suite.")
    print(f"[ RUN      ] Fake.{case}", flush=True)
    replay = os.environ.get("GRADLAB_GRADED_REPLAY")
    if replay:  # the checker: the record decides
        report = next(a for a in sys.argv if a.startswith("--gtest_output=json:"))[20:]
        recorded = open(replay).read()
        if recorded == "pass":
            print(f"[       OK ] Fake.{case} (0 ms)")
            finish(report)
        if recorded == "fail":
            finish(report, failures=[os.environ["FAKE_WORK"] + "/src/core/ops/x.cpp:3\\nExpected 1, got 2"], code=1)
        if recorded == "notimpl":
            message = 'C++ exception with description "lab 01: not implemented: matmul backward" thrown'
            print(message)
            finish(report, failures=[message], code=1)
        if recorded == "skip":
            print("t.cpp:3: Skipped")
            print("needs a CUDA device")
            print(f"[  SKIPPED ] Fake.{case} (0 ms)")
            finish(report, result="SKIPPED")
        if recorded == "nomatch":
            finish(report, ran=False)
        finish(report, failures=["your program recorded no result for Fake." + case], code=1)
    record = os.environ["GRADLAB_GRADED_RECORD"]
    def save(what):
        with open(record, "w") as f:
            f.write(what)
    if case in ("Pass", "Fail", "Skip", "NoMatch"):
        save({"Pass": "pass", "Fail": "fail", "Skip": "skip", "NoMatch": "nomatch"}[case])
        sys.exit(0)
    if case == "NotImplemented":
        print('C++ exception with description "lab 01: not implemented: matmul backward" thrown')
        save("notimpl")
        sys.exit(1)
    if case == "Hang":
        subprocess.Popen(["sleep", "60.4242"])
        time.sleep(60)
    if case == "Segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if case == "OutOfMemory":
        print('C++ exception with description "std::bad_alloc" thrown in the test body.')
        sys.exit(1)
    if case == "Exit":
        sys.exit(0)  # leaves before recording anything
    if case == "AsanReport":  # what an ASan build prints for a write past a buffer
        print("==42==ERROR: AddressSanitizer: heap-buffer-overflow on address 0x6020 at pc 0x55")
        print("WRITE of size 8 at 0x6020 thread T0")
        print("    #0 0x55 in gl::graph::lifetimes(gl::graph::Graph const&) ../core/graph/memory_plan.cpp:41")
        print("    #1 0x56 in Lab13_LifetimesAreExact_Test::TestBody() ../tests/labs/test_lab13.cpp:147")
        sys.exit(1)
    if case == "ForgeVerdict":
        # A hostile submission: it claims success every way a test program can.
        print(f"[       OK ] Fake.{case} (0 ms)")
        print("[  PASSED  ] 1 test.")
        for a in sys.argv:
            if a.startswith("--gtest_output=json:"):
                finish(a[20:])
        save("forged")
        sys.exit(0)
    """)


class JudgeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not sandbox_works():
            if os.environ.get("GRADLAB_REQUIRE_SANDBOX") == "1":
                raise RuntimeError("GRADLAB_REQUIRE_SANDBOX=1 but the sandbox does not work")
            raise unittest.SkipTest("bubblewrap cannot make a sandbox here")
        cls._tmp = tempfile.TemporaryDirectory()
        cls.work = Path(cls._tmp.name)
        cls.work.chmod(0o755)  # the sandbox's user must reach the stand-in
        cls.binary = cls.work / "fake_gtest"
        cls.binary.write_text(FAKE_GTEST)
        cls.binary.chmod(0o755)
        os.environ["FAKE_WORK"] = str(cls.work)
        cls.runs = 0

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def run_case(self, case, timeout=10.0):
        JudgeTest.runs += 1
        item = grade.Item(f"Fake.{case}", 5, case, timeout)
        programs = grade.Programs(self.binary, [self.work], None, self.binary)
        return grade.run_item(programs, item, timeout, 1024,
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

    def test_timeout_leaves_no_process(self):
        start = time.monotonic()
        outcome = self.run_case("Hang", timeout=2.0)
        self.assertLess(time.monotonic() - start, 15)
        self.assertEqual((outcome.status, outcome.earned), ("timed out", 0))
        self.assertEqual(outcome.message, "timed out after 2 s in Fake.Hang "
                                          "(an infinite loop or a deadlock?)")
        self.assertEqual(sleepers(), [], "the test's own child must be gone too")

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

    def test_skipped_earns_nothing_and_counts_for_nothing(self):
        outcome = self.run_case("Skip")
        self.assertEqual((outcome.status, outcome.earned), ("skipped", 0))
        self.assertEqual(outcome.possible, 0)  # the machine's lack, not the student's 0
        self.assertIn("Fake.Skip: needs a CUDA device", outcome.message)

    def test_no_matching_test_earns_nothing(self):
        outcome = self.run_case("NoMatch")
        self.assertEqual((outcome.status, outcome.earned), ("no tests", 0))

    def test_exit_before_recording_earns_nothing(self):
        outcome = self.run_case("Exit")
        self.assertEqual((outcome.status, outcome.earned), ("failed", 0))
        self.assertIn("recorded no result", outcome.message)

    def test_a_sanitizer_report_reaches_the_student(self):
        # The checker only knows that nothing was recorded; the report in the student's own
        # output names the line, so it is quoted, with the handout's path for the file.
        outcome = self.run_case("AsanReport")
        self.assertEqual((outcome.status, outcome.earned), ("failed", 0))
        self.assertIn("ERROR: AddressSanitizer: heap-buffer-overflow", outcome.message)
        self.assertIn(" core/graph/memory_plan.cpp:41", outcome.message)  # the build's ../ is gone
        self.assertIn(" tests/labs/test_lab13.cpp:147", outcome.message)
        self.assertTrue(outcome.report.startswith("==42==ERROR: AddressSanitizer: heap-buffer-overflow"))

    def test_forged_verdict_earns_nothing(self):
        # The student's program prints PASSED and writes a passing report wherever it can;
        # the checker sees a record that is no result of the test, and fails it.
        outcome = self.run_case("ForgeVerdict")
        self.assertEqual((outcome.status, outcome.earned), ("failed", 0))


class CheckerFailureTest(unittest.TestCase):
    """A trusted checker that fails on intact results is the setup's problem, not a 0."""

    def item_run(self, record_problem):
        import graded_run
        import sandbox
        compute = sandbox.RunResult(returncode=0, signal=None, timed_out=False, output_truncated=False,
                                    seconds=1.0)
        return graded_run.ItemRun(compute, "", check_returncode=-11, check_timed_out=False,
                                  check_output="Segmentation fault", tests=None,
                                  record_problem=record_problem, seconds=1.0)

    def test_intact_record_and_a_crashed_checker_is_a_setup_error(self):
        item = grade.Item("Fake.Pass", 5, "pass", 10.0)
        with self.assertRaises(grade.SetupError) as caught:
            grade.judge(item, self.item_run(""), 10.0, 1024, "01", Path("/tmp"))
        self.assertIn("trusted checker could not judge 'pass'", str(caught.exception))

    def test_a_broken_record_is_the_submissions_problem(self):
        item = grade.Item("Fake.Pass", 5, "pass", 10.0)
        outcome = grade.judge(item, self.item_run("the record file is not a regular file"), 10.0, 1024,
                              "01", Path("/tmp"))
        self.assertEqual((outcome.status, outcome.earned), ("not checked", 0))


class MessagePathsTest(unittest.TestCase):
    """Feedback names files as the student knows them: repository paths, and the handout's
    path for a file the student edits."""

    def test_paths_from_the_trusted_build_lose_their_climb(self):
        climb = "../" * 5 + str(grade.REPO).lstrip("/")
        text = f"{climb}/tests/labs/test_lab13.cpp:147: Failure"
        self.assertEqual(grade.shorten_paths(text, Path("/tmp/w")), "tests/labs/test_lab13.cpp:147: Failure")

    def test_the_students_file_is_named_as_in_the_handout(self):
        lab = grade.find_lab("13")
        mine, framework = lab.files[0], "core/base/error.hpp"
        text = f"../{mine}:12:5: error: x\nIn file included from ../{framework}:3"
        self.assertEqual(grade.shorten_paths(text, Path("/tmp/w"), "13"),
                         f"labs/{lab.folder}/{mine}:12:5: error: x\nIn file included from {framework}:3")
        handout_path = f"labs/{lab.folder}/{mine}:3"
        self.assertEqual(grade.shorten_paths(handout_path, Path("/tmp/w"), "13"), handout_path)

    def test_reference_files_keep_their_core_path(self):
        # The trusted build compiles the repository, where a lab file is the reference.
        lab = grade.find_lab("13")
        mine = lab.files[0]
        climb = "../" * 4 + str(grade.REPO).lstrip("/")
        text = f"{climb}/{mine}:5 and {grade.REPO}/{mine}:6 and /grade/src/{mine}:7"
        self.assertEqual(grade.shorten_paths(text, Path("/tmp/w"), "13"),
                         f"{mine}:5 and {mine}:6 and labs/{lab.folder}/{mine}:7")

    def test_a_long_sanitizer_report_is_capped(self):
        output = "runtime error: " + "x" * (1 << 20) + "\n" + ("    #0 frame\n" * 50)
        report = grade.sanitizer_report(output)
        self.assertLessEqual(len(report), grade.MAX_ITEM_OUTPUT // 2)
        self.assertTrue(report.startswith("runtime error: xxx"))

    def test_not_implemented_names_the_region_without_what_a_test_adds(self):
        text = ('lab 06: not implemented: hand out the next batch in order (keep the worker\'s '
                'exception in its Result)\nlab 06: not implemented: something new')
        self.assertEqual(grade.not_implemented(text, "06"),
                         ["hand out the next batch in order", "something new"])
        longer = "lab 06: not implemented: hand out the next batch in orderly fashion"
        self.assertEqual(grade.not_implemented(longer, "06"), ["hand out the next batch in orderly fashion"])

    def test_output_of_running_test(self):
        output = ("[ RUN      ] A.First\nfirst\n[       OK ] A.First (1 ms)\n[ RUN      ] A.Hang\n"
                  "epoch 0 done\n\nwaiting for batch 3\n")
        self.assertEqual(grade.output_of_running_test(output), "epoch 0 done\nwaiting for batch 3")
        self.assertEqual(grade.output_of_running_test("[ RUN      ] A.Hang\n"), "")
        self.assertEqual(grade.output_of_running_test("no test started\n"), "")

    def test_sanitizer_report(self):
        output = ("[ RUN      ] A.B\n==7==ERROR: AddressSanitizer: stack-buffer-overflow on address 1\n"
                  "    #0 0x1 in f() core/x.cpp:4\n\n    #1 0x2 in g() core/y.cpp:9\n")
        self.assertEqual(grade.sanitizer_report(output, lines=2),
                         "==7==ERROR: AddressSanitizer: stack-buffer-overflow on address 1\n"
                         "    #0 0x1 in f() core/x.cpp:4")
        self.assertEqual(grade.sanitizer_report("core/x.cpp:4: runtime error: signed integer overflow"),
                         "core/x.cpp:4: runtime error: signed integer overflow")
        self.assertEqual(grade.sanitizer_report("Segmentation fault\n"), "")
        in_gtest = output + "    #2 0x3 in testing::Test::Run() gtest.cc:1\n    #3 0x4 in main\n"
        self.assertTrue(grade.sanitizer_report(in_gtest).endswith("#1 0x2 in g() core/y.cpp:9"))

    def test_a_crash_is_located_by_the_sanitized_run(self):
        item = grade.Item("Fake.Crash", 5, "crash", 10.0)
        crashed = grade.Outcome(item, "crashed", "crashed with signal SIGSEGV in Fake.Crash", 1.0)
        report = "==7==ERROR: AddressSanitizer: SEGV on unknown address 0x0\n    #0 0x1 in f() core/x.cpp:4"
        sanitized = grade.Outcome(item, "failed", f"Fake.Crash failed\n{report}", 2.0, report=report)
        located = grade.located(crashed, sanitized)
        self.assertEqual((located.status, located.earned, located.seconds), ("crashed", 0, 3.0))
        self.assertTrue(located.message.startswith("crashed with signal SIGSEGV in Fake.Crash"))
        self.assertIn(report, located.message)
        no_report = grade.located(crashed, grade.Outcome(item, "crashed", "crashed with signal SIGSEGV", 2.0))
        self.assertEqual(no_report.message, crashed.message)

    def test_a_sanitizer_failure_quotes_its_report(self):
        item = grade.Item("Fake.Pass", 5, "pass", 10.0)
        passed = grade.Outcome(item, "passed", "passed", 1.0)
        report = "==7==ERROR: AddressSanitizer: heap-buffer-overflow on address 1\n    #0 0x1 in f() core/x.cpp:4"
        verdict = grade.sanitizer_verdict(passed, grade.Outcome(item, "failed", "noise\n" + report, 2.0,
                                                                report=report))
        self.assertEqual((verdict.status, verdict.earned), ("sanitizer", 0))
        self.assertIn("reports:\n==7==ERROR: AddressSanitizer: heap-buffer-overflow", verdict.message)
        self.assertIn("core/x.cpp:4", verdict.message)


class StagedTreeTest(unittest.TestCase):
    """What is copied into a student's build (and into the Gradescope package): the files
    git tracks, less the answer key and the builds; nothing else lying in the folder."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.repo = Path(self._tmp.name)
        self._saved = grade_build.REPO
        grade_build.REPO = self.repo

    def tearDown(self):
        grade_build.REPO = self._saved
        self._tmp.cleanup()

    def write(self, *paths):
        for rel in paths:
            (self.repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.repo / rel).write_text(rel)

    def test_only_tracked_files_outside_the_answer_key(self):
        import subprocess
        self.write("core/a.cpp", "solutions/01/README.md", "tests/tools/mutant.cpp", "build-x/y.o")
        git = ["git", "-C", str(self.repo), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-f", "."], check=True)
        self.write("subs/alice/core/a.cpp", "lab01.zip", "core/untracked.cpp")  # never staged
        staged = grade_build.staged_files({"core/b.cpp": self.repo / "core/a.cpp"})
        self.assertEqual(sorted(staged), ["core/a.cpp", "core/b.cpp"])

    def test_a_checkout_git_cannot_list_is_a_setup_error(self):
        # Walking it instead would stage whatever lies in the folder.
        self.write("core/a.cpp", ".git/HEAD")  # a broken checkout
        with self.assertRaises(grade_build.SetupError):
            grade_build.staged_files({})

    def test_without_git_every_file_outside_the_answer_key(self):
        # An unpacked Gradescope package: no checkout, and only what was staged is there.
        self.write("core/a.cpp", "solutions/01/README.md", "build/x.o", "core/build-z/q.o", "tests/x.cpp")
        self.assertEqual(sorted(grade_build.staged_files({})), ["core/a.cpp", "tests/x.cpp"])

    def test_is_staged(self):
        for rel, staged in [("core/x.cpp", True), ("solutions/x.md", False), (".git", False),
                            ("tests/tools/hostile/x.cpp", False), ("tests/toolsx.cpp", True),
                            ("a/build-asan/x.o", False), ("build.sh", True), (".ci/run", False)]:
            self.assertEqual(grade_build.is_staged(rel), staged, rel)


class OrphanCacheTest(unittest.TestCase):
    """The default caches of deleted checkouts (several GiB each) are removed."""

    def test_only_caches_of_checkouts_that_are_gone(self):
        import fcntl
        with tempfile.TemporaryDirectory() as tmp:
            parent = Path(tmp)
            def cache(name, checkout):
                (parent / name).mkdir()
                if checkout is not None:
                    (parent / name / grade_build.CHECKOUT_RECORD).write_text(f"{checkout}\n")
                return parent / name
            gone = cache("gone", parent / "deleted-clone")
            (parent / f"gone.{grade_build.USERS_LOCK}").write_text("")
            alive = cache("alive", parent)
            unknown = cache("unknown", None)
            garbage = cache("garbage", None)
            (garbage / grade_build.CHECKOUT_RECORD).write_bytes(b"\xff\xfe")
            busy = cache("busy", parent / "deleted-too")
            mine = cache("mine", parent / "deleted-as-well")
            leftover = parent / f"{grade_build.REMOVING}old-1"
            leftover.mkdir()
            with open(parent / f"busy.{grade_build.USERS_LOCK}", "a") as held:
                fcntl.flock(held, fcntl.LOCK_SH)  # what hold_cache does for a running grader
                grade_build.remove_orphan_caches(parent, keep=mine)
            self.assertFalse(gone.exists() or leftover.exists())
            self.assertFalse((parent / f"gone.{grade_build.USERS_LOCK}").exists())
            for kept in (alive, unknown, garbage, busy, mine):
                self.assertTrue(kept.exists(), kept.name)


class RecordCopyTest(unittest.TestCase):
    """The student's record file reaches the checker only as a bounded regular file."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self._tmp.name)
        self.copy = self.dir / "check" / "record.bin"

    def tearDown(self):
        self._tmp.cleanup()

    def test_regular_file_is_copied(self):
        (self.dir / "record.bin").write_bytes(b"GRADLAB-RECORD 1\n")
        self.assertEqual(grade.graded_run.copy_record(self.dir / "record.bin", self.copy), "")
        self.assertEqual(self.copy.read_bytes(), b"GRADLAB-RECORD 1\n")

    def test_link_fifo_and_absence_are_refused(self):
        secret = self.dir / "secret"
        secret.write_text("not the student's")
        (self.dir / "link").symlink_to(secret)
        os.mkfifo(self.dir / "fifo")
        for name, problem in [("link", "link"), ("fifo", "not a regular file"),
                              ("missing", "recorded no results")]:
            self.assertIn(problem, grade.graded_run.copy_record(self.dir / name, self.copy))
            self.assertEqual(self.copy.read_bytes(), b"", "the checker gets an empty record")

    def test_size_is_capped(self):
        big = self.dir / "record.bin"
        with open(big, "wb") as f:
            f.truncate(3 << 20)
        cap = grade.graded_run.MAX_RECORD_BYTES
        grade.graded_run.MAX_RECORD_BYTES = 1 << 20  # the real cap, 512 MiB, works the same
        try:
            self.assertEqual(grade.graded_run.copy_record(big, self.copy), "")
        finally:
            grade.graded_run.MAX_RECORD_BYTES = cap
        self.assertEqual(self.copy.stat().st_size, 1 << 20)


def sandbox_works():
    try:
        grade.sandbox.check()
        return True
    except grade.sandbox.SandboxUnavailable:
        return False


def sleepers():
    """The `sleep 60.4242` processes the Hang case starts (none may outlive its item)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == b"sleep\x0060.4242\x00":
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


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
        self.assertFalse(any("named exactly" in note for note in staged.notes), staged.notes)

    def test_an_empty_file_is_pointed_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "matmul.cpp").write_text("")
            staged = grade.pick_submission_files(Path(tmp), self.LAB)
        self.assertEqual(staged.used, {"core/ops/matmul.cpp": "matmul.cpp"})
        self.assertTrue(any(n.startswith("matmul.cpp is empty") for n in staged.notes), staged.notes)

    def test_a_name_in_the_wrong_case_is_pointed_out(self):
        staged = self.pick(["core/autograd/engine.cpp", "Matmul.cpp"])
        self.assertIn("Matmul.cpp is not graded: the file must be named exactly matmul.cpp", staged.notes)

    def test_none_of_the_labs_files_is_said_once(self):
        staged = self.pick(["systolic.cpp"])
        self.assertEqual(staged.used, {})
        self.assertEqual(len(staged.notes), 1)
        self.assertIn("none of lab 01's files is in your submission (it needs engine.cpp, matmul.cpp, "
                      "util.cpp)", staged.notes[0])

    def test_items_failing_in_a_missing_file_say_the_handout_was_graded(self):
        staged = self.pick(["core/autograd/engine.cpp"])
        item = grade.Item("Lab01.X", 5, "x", 10.0)
        failed = grade.Outcome(item, "not implemented", "not implemented: mm; fill in its LAB 01 region in "
                                                        "labs/01-autograd/core/ops/matmul.cpp")
        other = grade.Outcome(item, "failed", "engine.cpp:3: wrong")
        grade.mark_handout_items([failed, other], staged)
        self.assertTrue(failed.message.endswith("(your submission has no matmul.cpp, so the untouched "
                                                "handout's was graded)"))
        self.assertEqual(other.message, "engine.cpp:3: wrong")


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


class PrunedCopyTest(unittest.TestCase):
    """The student's build is a copy of the base shared by every lab, pruned to what the
    lab's test program is made of: another lab's program (linked against this lab's
    reference) and the objects only it uses must not reach the student's build."""

    MANIFEST = textwrap.dedent("""\
        rule cc
          command = touch $out
        rule link
          command = touch $out
        rule REGENERATE_BUILD
          command = true
        build build.ninja: REGENERATE_BUILD ../meson.build
        build core_lab.o: cc ../core/lab.cpp
        build core_other.o: cc ../core/other.cpp
        build libcore.a: link core_lab.o core_other.o
        build tests/t1.o: cc ../tests/t1.cpp
        build tests/lab01_tests: link tests/t1.o libcore.a
        build tests/t2.o: cc ../tests/t2.cpp
        build tests/lab02_tests: link tests/t2.o libcore.a
        build all: phony tests/lab01_tests tests/lab02_tests
        default all
        """)

    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="gradlab-prune-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.build = self.tmp / "base" / "build"
        (self.build / "tests").mkdir(parents=True)
        (self.build / "build.ninja").write_text(self.MANIFEST)
        for name in ["core_lab.o", "core_other.o", "libcore.a", "tests/t1.o", "tests/lab01_tests",
                     "tests/t2.o", "tests/lab02_tests", ".ninja_log", "compile_commands.json"]:
            (self.build / name).write_text(name)

    def test_other_labs_programs_and_their_own_objects_are_left_out(self):
        pruned = grade_build.pruned_outputs(self.build, ["tests/lab01_tests"])
        self.assertEqual(pruned, {"tests/lab02_tests", "tests/t2.o"})

    def test_the_copy_keeps_the_rest_with_its_times(self):
        old = time.time() - 3600
        os.utime(self.build / "core_lab.o", (old, old))
        work = self.tmp / "work"
        work.mkdir()
        grade_build.copy_build(self.tmp / "base", work, "release", ["tests/lab01_tests"])
        copied = sorted(p.relative_to(work / "build").as_posix() for p in (work / "build").rglob("*") if p.is_file())
        self.assertEqual(copied, [".ninja_log", "build.ninja", "compile_commands.json", "core_lab.o",
                                  "core_other.o", "libcore.a", "tests/lab01_tests", "tests/t1.o"])
        self.assertEqual((work / "build/core_lab.o").stat().st_mtime_ns,
                         (self.build / "core_lab.o").stat().st_mtime_ns)
