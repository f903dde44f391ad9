#!/usr/bin/env python3
"""Self-check of the grader for one lab (run by CI): does tools/grade.py grade fairly?

    tools/check_grading.py --lab 01 [--jobs N] [--keep]

Grades three submissions with tools/grade.py and checks each result:

  (a) handout    the untouched handout (the lab folder itself): it builds, scores 0, and
                 every item says why in terms a student can act on (not implemented, or a
                 failed check), never a crash, a timeout or a rubric error;
  (b) reference  the lab's core files as they are in core/ (the answer key): full marks;
  (c) hang       for labs with a hang case (lab 01: the reference with the body of its
                 "matmul backward" region replaced by an infinite loop): the grader still
                 finishes, the items whose test names contain "Matmul" score 0 with a
                 "timed out" message, and an unrelated item (relu) keeps its points. Lab
                 03's case is a CUDA kernel that never ends (its tiled kernel): the items
                 of the tiled kernel time out, the coalesced kernel's keep their points. The
                 time limit for this case is a few times the slowest reference item, so it
                 costs seconds, not the rubric's minutes. Lab 08: the "ring reduce-scatter"
                 region replaced by a ring in which every rank sends before it receives:
                 the "Ring" items score 0 saying "deadlock", a sampler item keeps its points;
  (d) hostile    the lab's hostile submissions (tests/tools/hostile/NN/: attacks on the
                 grader) score only their honest work, change nothing, leave no process;

and finally that the repository's `git status` is the same before and after.

The gradings share one work folder outside the repository and the grader's cache (the
trusted build, the base builds every lab shares), so each compiles only the lab's files.
Prints PASS or FAIL per check; exit status 0 when all pass, 1 when one fails, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.dont_write_bytecode = True  # importing the tools must not leave files in the repository
sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade  # noqa: E402
import handout  # noqa: E402

REPO = grade.REPO
GRADE = Path(__file__).resolve().parent / "grade.py"
SETUP_ALLOWANCE_S = 1800  # configure and build, on top of the items' own time limits


# An endless loop the optimizer must keep: every iteration touches a volatile variable.
ENDLESS_LOOP = "for (volatile unsigned spin = 0;;) spin = spin + 1;  // check_grading.py: a hang"
# Lab 08: a ring in which every rank sends before it receives. Sends are synchronous, so
# nobody ever receives: the communicator must report the deadlock, not hang.
DEADLOCKED_RING = ("for (int s = 0; s < n - 1; ++s) { const Chunk c = ring_chunk(count, n, r); "
                   "comm.send(chunk_ptr(data, c, dtype), c.count * size_of(dtype), mod(r + 1, n)); "
                   "comm.recv(chunk_ptr(data, c, dtype), c.count * size_of(dtype), mod(r - 1, n)); }"
                   "  // check_grading.py: a deadlock")


@dataclass
class HangCase:
    """Replace the body of one LAB region by code that never finishes (an endless loop by
    default); say which items must score 0 and what their output must say."""

    region: str  # the region's `what`
    hanging: str  # items whose gtest filter contains this must score 0
    unrelated: str  # at least one item whose filter contains this must keep its points
    body: str = ENDLESS_LOOP  # the code put in place of the region's body
    says: str = "timed out"  # what the output of each hanging item must contain


HANG_CASES = {
    "01": HangCase(region="matmul backward", hanging="Matmul", unrelated="Relu"),
    "03": HangCase(region="shared-memory tiled kernel", hanging="Tiled", unrelated="Coalesced"),
    "08": HangCase(region="ring reduce-scatter", hanging="Ring", unrelated="Sampler", body=DEADLOCKED_RING,
                   says="deadlock"),
}


class Checks:
    """Collects PASS/FAIL lines."""

    def __init__(self) -> None:
        self.failed = 0
        self.total = 0

    def report(self, name: str, problems: list[str], summary: str, log: str = "") -> None:
        """Prints one PASS/FAIL line; log (the grader's output) is shown with a failure."""
        self.total += 1
        if problems:
            self.failed += 1
            print(f"FAIL  {name}: {summary}")
            for problem in problems:
                print(f"        - {problem}")
            if log:
                print("      grader output (end):\n" + indent(grade.tail(log, 30), "        "))
        else:
            print(f"PASS  {name}: {summary}")
        sys.stdout.flush()


def indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


@dataclass
class Graded:
    returncode: int
    log: str
    results: dict | None  # results.json, when written
    seconds: float

    def items(self) -> list[dict]:
        return self.results["tests"] if self.results else []


GRADER_OPTIONS: list[str] = []  # --cache, --trusted-build, --no-sanitizer: passed on to grade.py


def run_grader(lab: str, submission: Path, work: Path, name: str, jobs: int,
               timeout: float | None, wall_limit: float) -> Graded:
    """Runs tools/grade.py as a student submission would be graded, in a shared work folder."""
    out = work.parent / f"{name}.json"
    command = [sys.executable, str(GRADE), "--lab", lab, str(submission), "--work", str(work),
               "--keep", "--jobs", str(jobs), "--out", str(out), *GRADER_OPTIONS]
    if timeout:
        command += ["--timeout", f"{timeout:g}"]
    start = time.monotonic()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace", timeout=wall_limit)
        returncode, log = done.returncode, done.stdout
    except subprocess.TimeoutExpired as e:
        returncode = -1
        log = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) \
            else (e.stdout or "")
        log += f"\n(check_grading.py: the grader did not finish within {wall_limit:g} s)"
    results = json.loads(out.read_text()) if returncode == 0 and out.is_file() else None
    return Graded(returncode, log, results, time.monotonic() - start)


def basic_problems(graded: Graded) -> list[str]:
    """Problems that make a grading run unusable: no exit 0, no results, no build."""
    if graded.returncode != 0:
        return [f"the grader exited with status {graded.returncode}"]
    if graded.results is None:
        return ["the grader wrote no results.json"]
    if graded.results.get("extra_data", {}).get("build") != "ok":
        return ["the submission did not build: " + graded.items()[0]["output"][:2000]]
    return []


def log_if_unusable(graded: Graded) -> str:
    """The grader's output, worth showing only when it did not produce a graded result."""
    return graded.log if basic_problems(graded) else ""


def score_line(graded: Graded) -> str:
    if not graded.results:
        return "no score"
    maximum = sum(t["max_score"] for t in graded.items())
    return f"{graded.results['score']:g}/{maximum:g} in {graded.seconds:.0f} s"


def check_handout(checks: Checks, lab: grade.Lab, work: Path, jobs: int) -> None:
    graded = run_grader(lab.number, lab.dir, work, "handout", jobs, None, wall_limit(lab, None))
    problems = basic_problems(graded)
    if not problems:
        if graded.results["score"] != 0:
            problems.append(f"the untouched handout scores {graded.results['score']:g}, not 0")
        for t in graded.items():
            result = t["extra_data"]["result"]
            if t["score"] != 0:
                problems.append(f"{t['name']!r} gives points to the untouched handout")
            elif result not in ("not implemented", "failed"):
                problems.append(f"{t['name']!r}: {result} instead of a failed check or "
                                f"'not implemented': {t['output'][:300]}")
    checks.report("(a) untouched handout scores 0", problems, score_line(graded),
                  log_if_unusable(graded))


def check_reference(checks: Checks, lab: grade.Lab, work: Path, jobs: int) -> Graded:
    reference = work.parent / "reference"
    for core_path in lab.files:
        (reference / core_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO / core_path, reference / core_path)
    graded = run_grader(lab.number, reference, work, "reference", jobs, None, wall_limit(lab, None))
    note = ""
    # A timed item compares the reference with itself; on a busy machine one measurement
    # can come out slow. Partial points only on such items: measure once more (the build
    # is reused), and say so. Any other shortfall fails at once.
    if not basic_problems(graded) and shortfalls(graded) and \
            all(t["extra_data"]["result"] == "partial" for t in shortfalls(graded)):
        first = score_line(graded)
        graded = run_grader(lab.number, reference, work, "reference-again", jobs, None, wall_limit(lab, None))
        note = f" (timed items measured twice; the first run gave {first})"
    problems = basic_problems(graded)
    if not problems:
        for t in shortfalls(graded):
            problems.append(f"{t['name']!r}: {t['score']:g}/{t['max_score']:g}, "
                            f"{t['extra_data']['result']}: {t['output'][:500]}")
    skipped = [t["name"] for t in graded.items() if t["extra_data"]["result"] == "skipped"]
    if skipped:  # not graded on this machine: says so, never counted as checked
        note += f"; not checked on this machine (skipped): {', '.join(skipped)}"
    checks.report("(b) reference scores full marks", problems, score_line(graded) + note,
                  log_if_unusable(graded))
    return graded


def shortfalls(graded: Graded) -> list[dict]:
    """The items that did not earn all their points."""
    return [t for t in graded.items() if t["score"] != t["max_score"]]


def make_hanging_copy(lab: grade.Lab, case: HangCase, reference: Path, target: Path) -> None:
    """A copy of the reference submission whose `case.region` loops forever."""
    shutil.copytree(reference, target)
    marked = [m for m in handout.scan_core(REPO) if m.lab == lab.number
              and any(r.what == case.region for r in m.regions)]
    if len(marked) != 1:
        raise grade.UsageError(f"lab {lab.number}: expected one LAB region {case.region!r} "
                               f"in core/, found {len(marked)}; update HANG_CASES")
    m = marked[0]
    region = next(r for r in m.regions if r.what == case.region)
    lines = m.lines[:region.begin + 1] + [f"{region.indent}{case.body}\n"] + m.lines[region.end:]
    (target / m.path).write_text("".join(lines), encoding="utf-8")


def check_hang(checks: Checks, lab: grade.Lab, case: HangCase, reference: Graded, work: Path,
               jobs: int) -> None:
    slowest = max([t["extra_data"]["seconds"] for t in reference.items()] + [0.0])
    timeout = max(5.0, math.ceil(3 * slowest))
    hanging = work.parent / "hang"
    make_hanging_copy(lab, case, work.parent / "reference", hanging)
    graded = run_grader(lab.number, hanging, work, "hang", jobs, timeout, wall_limit(lab, timeout))
    problems = basic_problems(graded)
    if not problems:
        stuck = [t for t in graded.items() if case.hanging in t["extra_data"]["gtest_filter"]]
        others = [t for t in graded.items() if case.unrelated in t["extra_data"]["gtest_filter"]]
        if not stuck:
            problems.append(f"no rubric item's test filter contains {case.hanging!r}")
        for t in stuck:
            if t["score"] != 0 or case.says not in t["output"]:
                problems.append(f"{t['name']!r}: {t['score']:g} points, output "
                                f"{t['output'][:200]!r}; expected 0 and {case.says!r}")
        if not any(t["score"] == t["max_score"] for t in others):
            problems.append(f"no item whose filter contains {case.unrelated!r} kept its points")
    what = "loops forever" if case.body == ENDLESS_LOOP else "never finishes (" + case.says + ")"
    summary = f"{case.region!r} {what}: {score_line(graded)}, item time limit {timeout:g} s"
    checks.report(f"(c) a hang in {case.region} is reported", problems, summary,
                  log_if_unusable(graded))


def check_hostile(checks: Checks, lab: grade.Lab, trusted: Path | None) -> None:
    """(d) each hostile submission of tests/tools/hostile/NN/ scores only its honest work,
    changes nothing and leaves no process (see tests/tools/hostile_cases.py)."""
    sys.path.insert(0, str(REPO / "tests" / "tools"))
    import hostile_cases  # noqa: E402  (the cases and how each is judged)
    for case in hostile_cases.cases(lab.number):
        name = f"(d) hostile: {case.folder.name}"
        problems, summary = hostile_cases.grade_case(case, trusted, GRADER_OPTIONS)
        checks.report(name, problems, summary)


def wall_limit(lab: grade.Lab, timeout: float | None) -> float:
    """How long one grading may take before the check calls the grader hung."""
    rubric = grade.load_rubric(lab)
    items = sum(timeout or item.timeout_s for item in rubric.items)
    return SETUP_ALLOWANCE_S + items + 60


def git_status() -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--ignored"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Check that tools/grade.py gives the untouched handout 0, the reference "
                    "full marks, and survives an endless loop (labs 01 and 03), without touching the "
                    "repository.",
        epilog="Exit status: 0 all checks pass; 1 a check failed; 2 bad arguments.")
    parser.add_argument("--lab", required=True, help="lab number, e.g. 01")
    parser.add_argument("--jobs", type=int, default=2,
                        help="parallel compile jobs and rubric items (default 2)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the work folder (submissions, build, results)")
    parser.add_argument("--cache", type=Path, help="the grader's cache (see grade.py --cache)")
    parser.add_argument("--trusted-build", type=Path,
                        help="an existing build of this repository to use as the trusted build")
    parser.add_argument("--no-sanitizer", action="store_true",
                        help="skip the grader's ASan/UBSan build (see grade.py)")
    parser.add_argument("--no-hostile", action="store_true",
                        help="skip the hostile submissions of tests/tools/hostile/NN/")
    args = parser.parse_args(argv)
    GRADER_OPTIONS.extend(["--cache", str(args.cache)] if args.cache else [])
    GRADER_OPTIONS.extend(["--trusted-build", str(args.trusted_build)] if args.trusted_build else [])
    GRADER_OPTIONS.extend(["--no-sanitizer"] if args.no_sanitizer else [])
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    try:
        lab = grade.find_lab(args.lab)
        grade.load_rubric(lab)
    except grade.UsageError as e:
        print(f"check_grading.py: error: {e}", file=sys.stderr)
        return 2

    before = git_status()
    root = Path(tempfile.mkdtemp(prefix="gradlab-check-grading-"))
    root.chmod(0o755)  # the sandbox user must pass it to reach the staged tree in work/
    work = root / "work"  # shared by the three gradings: later builds are incremental
    checks = Checks()
    print(f"checking the grader on lab {lab.number} (work folder {root})", flush=True)
    try:
        check_handout(checks, lab, work, args.jobs)
        reference = check_reference(checks, lab, work, args.jobs)
        case = HANG_CASES.get(lab.number)
        if case and reference.results:
            check_hang(checks, lab, case, reference, work, args.jobs)
        elif case:
            checks.report(f"(c) a hang in {case.region} times out", ["skipped: the reference "
                          "could not be graded"], "not run")
        if not args.no_hostile:
            check_hostile(checks, lab, args.trusted_build)
    except grade.UsageError as e:
        print(f"check_grading.py: error: {e}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            print(f"work folder kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    after = git_status()
    if before is None:
        print("SKIP  repository untouched: not a git checkout")
    else:
        changes = ["git status failed"] if after is None else \
            sorted(set(after.splitlines()) ^ set(before.splitlines()))
        checks.report("repository untouched", [f"git status changed: {c}" for c in changes],
                      "git status is the same before and after")
    print(f"{checks.total - checks.failed}/{checks.total} checks passed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
