"""The Gradescope package (tools/gradescope.py), tried outside Gradescope: the zip is
unpacked into a stand-in /autograder (GRADLAB_AUTOGRADER_ROOT), its setup.sh run (the
Debian packages are already there, so that part changes nothing), then run_autograder on
the reference (full marks) and on a hostile submission (tests/tools/hostile/01/escape: it
may score only its honest work, and its daemon must not rewrite results.json after
run_autograder exits).

GRADLAB_TRUSTED_BUILD (else build/ when configured) stands in for the trusted build that
setup.sh would make, so the test does not compile the core once more.

Run: python3 -m unittest discover -s tests/tools -p test_gradescope.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.dont_write_bytecode = True
import hostile_cases  # noqa: E402  (the hostile cases and how they are judged)

WALL_S = 1800


class PackageTest(unittest.TestCase):
    def test_the_zip_has_the_scripts_at_its_top_and_no_answer_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "lab01.zip"
            done = subprocess.run([sys.executable, str(REPO / "tools/gradescope.py"), "--lab", "01",
                                   str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.assertEqual(done.returncode, 0, done.stdout)
            with zipfile.ZipFile(out) as archive:
                names = archive.namelist()
                modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
            self.assertIn("setup.sh", names)
            self.assertIn("run_autograder", names)
            self.assertTrue(modes["run_autograder"] & 0o100, "run_autograder must be executable")
            self.assertIn("gradlab/tools/grade.py", names)
            self.assertFalse([n for n in names if n.startswith(("gradlab/solutions/", "gradlab/.git/",
                                                                "gradlab/build"))])

    def test_a_bad_lab_is_refused(self):
        done = subprocess.run([sys.executable, str(REPO / "tools/gradescope.py"), "--lab", "99",
                               "/tmp/x.zip"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.assertEqual(done.returncode, 2)
        self.assertIn("no such lab", done.stdout)


@unittest.skipIf(hostile_cases.PROBLEM, f"no sandbox here: {hostile_cases.PROBLEM}")
class AutograderTest(unittest.TestCase):
    """setup.sh and run_autograder, as Gradescope runs them."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp(prefix="gradlab-gradescope-"))
        os.chmod(cls.tmp, 0o755)
        cls.root = cls.tmp / "autograder"
        (cls.root / "source").mkdir(parents=True)
        zip_path = cls.tmp / "lab01.zip"
        subprocess.run([sys.executable, str(REPO / "tools/gradescope.py"), "--lab", "01", str(zip_path)],
                       check=True, stdout=subprocess.DEVNULL)
        with zipfile.ZipFile(zip_path) as archive:
            for info in archive.infolist():  # extractall drops the file modes
                target = archive.extract(info, cls.root / "source")
                os.chmod(target, info.external_attr >> 16 & 0o777 or 0o644)
        cls.env = dict(os.environ, GRADLAB_AUTOGRADER_ROOT=str(cls.root))
        trusted = hostile_cases.trusted_build()
        if trusted:
            cls.env["GRADLAB_TRUSTED_BUILD"] = str(trusted)
        cls.setup = subprocess.run(["bash", str(cls.root / "source/setup.sh")], env=cls.env,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   timeout=WALL_S)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_autograder(self, files: dict[str, str]) -> tuple[subprocess.CompletedProcess, Path]:
        submission = self.root / "submission"
        shutil.rmtree(submission, ignore_errors=True)
        shutil.rmtree(self.root / "results", ignore_errors=True)
        submission.mkdir()
        for name, text in files.items():  # Gradescope keeps uploads flat
            (submission / name).write_text(text)
        done = subprocess.run([str(self.root / "source/run_autograder")], env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=WALL_S)
        return done, self.root / "results/results.json"

    def setUp(self) -> None:
        self.assertEqual(self.setup.returncode, 0, self.setup.stdout[-4000:])

    def test_the_reference_scores_full_marks(self):
        lab = hostile_cases.grade.find_lab("01")
        done, results = self.run_autograder({Path(p).name: (REPO / p).read_text() for p in lab.files})
        self.assertEqual(done.returncode, 0, done.stdout[-4000:])
        data = json.loads(results.read_text())
        self.assertEqual(data["score"], sum(t["max_score"] for t in data["tests"]), done.stdout[-4000:])

    def test_a_hostile_submission_scores_only_its_honest_work(self):
        case = next(c for c in hostile_cases.cases("01") if c.folder.name == "escape")
        results = self.root / "results/results.json"
        cache = self.root / "cache"
        staged = self.tmp / "hostile"
        case.write_submission(staged, {
            "REPO": str(REPO), "LAB": "01", "LAB_FOLDER": case.lab.folder, "RESULTS": str(results),
            "TRUSTED": self.env.get("GRADLAB_TRUSTED_BUILD", str(cache / "trusted")),
            "CACHE": str(cache), "TEST_TARGET": case.rubric.test_target})
        files = {Path(p).name: (staged / p).read_text() for p in case.lab.files}
        done, results = self.run_autograder(files)
        self.assertEqual(done.returncode, 0, done.stdout[-4000:])
        graded = results.read_bytes()
        self.assertEqual(hostile_cases.hostile_processes(), [])
        time.sleep(hostile_cases.DAEMON_DELAY_S + 2)
        self.assertEqual(results.read_bytes(), graded, "results.json changed after run_autograder")
        self.assertEqual(hostile_cases.score_problems(case, json.loads(graded)), [])


if __name__ == "__main__":
    unittest.main()
