#!/usr/bin/env python3
"""Runs one rubric item so that the student's code computes and a process that never
loaded it decides.

    from graded_run import run_item
    run = run_item(student_program=..., student_mounts=..., lab_student=..., checker=...,
                   gtest_filter="Lab01.MatmulBackward*", timeout_s=60, limits=..., run_dir=...)

Two runs per item:

1. **compute**: the student build's test program (tests/labNN_tests, built from the
   student's files) runs the item's tests in the sandbox (tools/sandbox.py) with
   GRADLAB_GRADED_RECORD set. Every call into the student's code in a graded test goes
   through graded::student (tests/labs/graded.hpp), which appends the result, or the
   exception's message, to the record file. The program's own verdict, exit status and
   output are only feedback: whatever the submission does to them (an exit handler that
   rewrites the test report, a fake "PASSED", exit(0) half way) decides nothing.
   The sandbox returns only when every process the run started is gone.
2. **check**: the trusted build's test program (built from the pristine repository) runs
   the same tests with GRADLAB_GRADED_REPLAY pointing at a copy of the record file. It
   never calls the student's code: each graded::student returns the recorded result, and
   the same checks decide. Its GoogleTest JSON report is the verdict. A missing or
   malformed record fails the test that needed it. Timed items run here: the checker
   starts the student build's lab_student through the sandbox's argv prefix
   (GRADLAB_SANDBOX_PREFIX, GRADLAB_LAB_STUDENT) and times it from outside; the reference
   side is the trusted build's lab_reference.

What the checker cannot verify, it can only compare: numbers the student's process
measured about itself (Lab 04's probes, the memory and traffic counters of Labs 03 and 07,
communication counters of Lab 08, the toy network's training summary of Lab 01) are taken
as recorded. See tests/labs/README.md.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sandbox  # noqa: E402

INSIDE_RUN = Path("/grade/run")  # where the compute run sees its run folder (writable)
RECORD_NAME = "record.bin"
# Set for the sanitizer pass, for the student's run and the checker alike: measurements
# (timed or counted in the student's process) mean nothing in a sanitized build, and the
# checker must skip exactly the tests the student's program skipped.
SANITIZED_MARK = "GRADLAB_STUDENT_SANITIZED"
MAX_RECORD_BYTES = 512 << 20  # as graded.hpp's kMaxRecordFileBytes: the checker reads no more
CHECK_MARGIN_S = 60.0  # the checker's time beyond the item's (it replays, and times)


@dataclass
class ItemRun:
    """What the two runs of an item left: the student's run (feedback, crash information)
    and the checker's (the verdict)."""

    compute: sandbox.RunResult
    compute_output: str
    check_returncode: int
    check_timed_out: bool
    check_output: str
    tests: list[dict] | None  # the checker's GoogleTest report, one dict per test; None: none
    record_problem: str  # why no record file could be handed to the checker ("" if fine)
    seconds: float


def copy_record(produced: Path, trusted_copy: Path) -> str:
    """Copies the student's record file for the checker: a regular file only (not a link,
    a FIFO or a device), at most MAX_RECORD_BYTES. Returns what was wrong, or ""."""
    trusted_copy.parent.mkdir(parents=True, exist_ok=True)
    trusted_copy.write_bytes(b"")  # the checker reads an empty file as "nothing recorded"
    try:
        fd = os.open(produced, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return "your program recorded no results (it stopped before its first graded call?)"
    except OSError as e:
        return f"the record file cannot be read ({e.strerror}): was it replaced by a link?"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "the record file is not a regular file"
        with open(trusted_copy, "wb") as out:
            left = MAX_RECORD_BYTES
            while left > 0:
                chunk = os.read(fd, min(1 << 20, left))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
    finally:
        os.close(fd)
    return ""


def checker_limits(memory_mb: int):
    """A preexec_fn for the checker: the item's memory limit, no core dumps."""
    def apply() -> None:
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def read_report(report: Path) -> list[dict] | None:
    """The checker's tests (one dict per test, with its suite), or None without a report."""
    try:
        data = json.loads(report.read_text(encoding="utf-8", errors="replace"))
        tests = [dict(test, suite=suite["name"]) for suite in data.get("testsuites", [])
                 for test in suite.get("testsuite", [])]
        for test in tests:
            test["failures"] = [f["failure"] for f in test.get("failures", [])]
        return tests
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def wait_checker(child: subprocess.Popen, timeout_s: float) -> tuple[int, bool]:
    """(exit status, timed out): the checker's group is killed at its time limit, or at
    once when the grader is interrupted (sandbox.STOP)."""
    deadline = time.monotonic() + timeout_s
    while not sandbox.STOP.is_set() and time.monotonic() < deadline:
        try:
            return child.wait(timeout=max(0.0, min(deadline - time.monotonic(), sandbox.POLL_S))), False
        except subprocess.TimeoutExpired:
            pass
    os.killpg(child.pid, signal.SIGKILL)
    return child.wait(), True


def run_item(*, student_program: Path, student_mounts: list[sandbox.Mount],
             lab_student: Path | None, checker: Path, gtest_filter: str, timeout_s: float,
             limits: sandbox.Limits, run_dir: Path, env: dict[str, str] | None = None) -> ItemRun:
    """Computes the item's tests with the student's build in the sandbox, then checks the
    recorded results with the trusted checker. `student_program` and `lab_student` are
    paths inside the sandbox (where `student_mounts` put the student's build); `env`: more
    variables for the student's run (e.g. ASAN_OPTIONS for a sanitized build)."""
    start = time.monotonic()
    student_env = dict(env or {})
    compute_dir, check_dir = run_dir / "compute", run_dir / "check"
    compute_dir.mkdir(parents=True)
    check_dir.mkdir(parents=True)
    compute_log = run_dir / "compute-output.txt"
    compute = sandbox.run(
        [str(student_program), f"--gtest_filter={gtest_filter}", "--gtest_color=no"],
        read_only=student_mounts, writable=[(compute_dir, INSIDE_RUN)],
        limits=sandbox.Limits(cpu_s=limits.cpu_s, memory_mb=limits.memory_mb,
                              processes=limits.processes, output_bytes=limits.output_bytes,
                              wall_s=timeout_s, file_mb=limits.file_mb),
        log_path=compute_log, cwd=INSIDE_RUN,
        env={**student_env, "GRADLAB_GRADED_RECORD": str(INSIDE_RUN / RECORD_NAME)})
    compute_output = compute_log.read_text(encoding="utf-8", errors="replace")

    record = check_dir / RECORD_NAME
    record_problem = copy_record(compute_dir / RECORD_NAME, record)
    report, check_log = check_dir / "gtest.json", run_dir / "check-output.txt"
    env = {key: value for key, value in os.environ.items() if not key.startswith("GRADLAB_")}
    env["GRADLAB_GRADED_REPLAY"] = str(record)
    if SANITIZED_MARK in student_env:  # so the checker skips the measurements it skipped
        env[SANITIZED_MARK] = student_env[SANITIZED_MARK]
    if lab_student is not None:
        env["GRADLAB_LAB_STUDENT"] = str(lab_student)
        env["GRADLAB_SANDBOX_PREFIX"] = json.dumps(sandbox.prefix(student_mounts, [], limits))
    command = [str(checker), f"--gtest_filter={gtest_filter}", f"--gtest_output=json:{report}",
               "--gtest_color=no"]
    with open(check_log, "wb") as log:
        child = subprocess.Popen(command, cwd=check_dir, env=env, stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                 preexec_fn=checker_limits(limits.memory_mb or 4096))
        try:
            returncode, timed_out = wait_checker(child, timeout_s + CHECK_MARGIN_S)
        except BaseException:  # interrupted: the checker (and a timed run it started) goes too
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
    check_output = check_log.read_text(encoding="utf-8", errors="replace")
    return ItemRun(compute, compute_output, returncode, timed_out, check_output,
                   read_report(report), record_problem, time.monotonic() - start)
