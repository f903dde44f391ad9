"""Setup problems of tools/grade.py are found before anything is built and reported as
setup errors: exit status 3, one line saying what to do, no traceback, nothing scored.

Run: python3 -m unittest discover -s tests/tools -p test_grade_setup.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GRADE = REPO / "tools" / "grade.py"
QUICK_S = 30  # a setup error comes before any build: seconds, not minutes


class SetupErrorTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="gradlab-setup-test-"))
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.submission = self.tmp / "submission"
        self.submission.mkdir()

    def grade(self, *extra: str, env: dict | None = None, prefix: list[str] | None = None,
              python: str = sys.executable):
        command = (prefix or []) + [python, str(GRADE), "--lab", "01", str(self.submission),
                                    "--cache", str(self.tmp / "cache"), *extra]
        start = time.monotonic()
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=dict(os.environ, **(env or {})), timeout=120)
        self.assertLess(time.monotonic() - start, QUICK_S, "the setup error came late")
        self.assertEqual(done.returncode, 3, done.stdout + done.stderr)
        self.assertNotIn("Traceback", done.stderr)
        lines = done.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, done.stderr)
        self.assertTrue(lines[0].startswith("grade.py: setup error"), lines[0])
        self.assertNotIn("updating the trusted build", done.stdout)  # nothing was built
        return lines[0]

    def test_out_is_a_folder(self):
        self.assertIn("is a folder", self.grade("--out", str(self.tmp)))

    def test_out_inside_the_repository(self):
        self.assertIn("inside the repository", self.grade("--out", str(REPO / "results.json")))
        self.assertFalse((REPO / "results.json").exists())

    def test_out_in_a_folder_that_cannot_be_written(self):
        self.assertIn("cannot write", self.grade("--out", "/proc/gradlab-results.json"))

    def test_out_in_a_missing_folder(self):
        self.assertIn("does not exist", self.grade("--out", str(self.tmp / "no/such/results.json")))

    def test_bubblewrap_missing(self):
        line = self.grade("--out", str(self.tmp / "r.json"), env={"GRADLAB_BWRAP": "gradlab-no-bwrap"})
        self.assertIn("apt-get install bubblewrap", line)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root to run the "
                         "grader as an unprivileged user with a process limit")
    @unittest.skipUnless(all(p.stat().st_mode & 0o001 for p in REPO.parents), "the grader runs as "
                         "an unprivileged user here, and a folder above the repository is closed to it")
    def test_no_process_can_start(self):
        os.chmod(self.tmp, 0o777)  # the unprivileged grader writes its results and cache there
        line = self.grade("--out", str(self.tmp / "r.json"),
                          prefix=["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  "prlimit", "--nproc=1", "--"], python="/usr/bin/python3")
        self.assertIn("cannot start a process", line)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root to mount a "
                         "small file system in a private mount namespace")
    def test_disk_full(self):
        script = (f"mount -t tmpfs -o size=1m gradlab-full {self.tmp} && mkdir {self.submission} && "
                  f"exec \"$@\"")
        line = self.grade("--out", str(self.tmp / "r.json"), "--work", str(self.tmp / "work"),
                          prefix=["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh"])
        self.assertIn("free some space", line)


if __name__ == "__main__":
    unittest.main()
