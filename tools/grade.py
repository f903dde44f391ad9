#!/usr/bin/env python3
"""Grade one lab submission: build it inside the framework, run the rubric's tests, score it.

    tools/grade.py --lab 01 SUBMISSION [--out results.json] [--work DIR] [--jobs N] [--keep]

SUBMISSION is a folder holding the student's versions of the lab's handout files (the
ones labs/handouts.txt lists for the lab). Each handout file is looked up in the
submission at its repository path (core/ops/matmul.cpp), at its handout path
(labs/01-autograd/core/ops/matmul.cpp), or by its file name alone (matmul.cpp, as
Gradescope stores flat uploads) when that name is unique among the lab's files; a file
the submission lacks is taken from the pristine handout. Everything else in the
submission is ignored, and listed as ignored.

Steps (the work folder is outside the repository: a fresh temporary one unless --work is
given; removed at the end unless --keep). Every setup check comes first: a bad --out (a
folder, inside the repository, not writable), no sandbox (bubblewrap missing or not
permitted), no process can start, a full disk: exit status 3 with one line, before any build.
  1. the trusted build of the pristine repository and the base (release and ASan/UBSan
     builds of the pristine tree, shared by every lab) are brought up to date in the cache
     (tools/grade_build.py: built once, then incremental);
  2. work/src: a copy of the files git tracks in the repository (nothing else lying in
     its folder: other submissions, copies of answers), without solutions/ or build
     folders, in which the lab's core files ARE the submission's files (else the
     handout's): no reference of them exists in it. work/build*: copies of the base builds, pruned to
     the lab's test program's inputs (no other program, which would hold the reference);
  3. in the sandbox (tools/sandbox.py: an unprivileged user, no network, only work/src
     read-only and its own build folder writable, limits on processes, CPU, memory and
     output), ninja recompiles the student's files (a compile error scores 0 on every
     item, with the errors), release and then ASan/UBSan;
  4. each rubric item runs its GoogleTest filter in the sandbox, its whole process tree
     gone before its verdict; correctness items again in the ASan/UBSan build;
  5. a score table on stdout and Gradescope's results.json (--out, or work/results.json),
     written after every process of the submission is gone.

The rubric is labs/NN-name/rubric.json:

    {"lab": "01", "title": "autograd", "test_target": "lab01_tests",
     "default_timeout_s": 60, "memory_limit_mb": 4096,
     "items": [{"name": "Lab01.MatmulBackward*", "points": 10, "title": "matmul backward",
                "timeout_s": 60}, ...]}

`name` is a GoogleTest filter; `test_target` is the test executable the build puts at
tests/<test_target>. An item with `"exclusive": true` (a timed one) runs after the others,
alone, so that its timing does not depend on what else the grader runs beside it. Grading never writes into the repository.

Exit status: 0 graded (whatever the score); 2 bad arguments or a broken rubric; 3 a setup
error (a problem of the grading setup, not of the submission; nothing is scored); 130
interrupted (Ctrl-C or SIGTERM: the running sandboxes are killed at once, the work folder
is removed, nothing is scored).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # importing handout must not leave files in the repository
sys.path.insert(0, str(Path(__file__).resolve().parent))
import handout  # noqa: E402  (the LAB region parser: maps "not implemented: what" to a file)
import grade_build  # noqa: E402  (the trusted build, the staged tree, the sandboxed student build)
import graded_run  # noqa: E402  (an item: the student's build computes, the trusted build checks)
import sandbox  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORK_MARKER = ".gradlab-grade-work"  # marks a folder this tool made, safe to clear and reuse
MAX_ITEM_OUTPUT = 3000  # characters of feedback per rubric item
MAX_BUILD_OUTPUT = 6000  # characters of compiler errors per item
MAX_RUN_OUTPUT = 8 << 20  # bytes of output one item's test process may print
MAX_LISTED_FILES = 30  # ignored submission files named in the output and results.json
MAX_REPORT_LINE = 400  # characters of each line of a quoted sanitizer report
SANITIZER_SLOWDOWN = 3  # the sanitizer build's time limit: this times the item's

SIGNAL_HINTS = {
    "SIGSEGV": "segmentation fault: a null or dangling pointer, or an index out of bounds?",
    "SIGBUS": "bus error: a misaligned or invalid memory access?",
    "SIGFPE": "arithmetic error: an integer division by zero?",
    "SIGABRT": "aborted: an uncaught exception, a failed assert() or a corrupted heap?",
    "SIGKILL": "killed from outside: possibly out of memory",
    "SIGILL": "illegal instruction",
}


class UsageError(Exception):
    """Bad arguments or a broken rubric/lab layout: exit status 2."""


SetupError = grade_build.SetupError  # a problem of the grading setup: exit status 3


# ---------------------------------------------------------------------------------------
# The lab and its rubric


@dataclass
class Lab:
    number: str  # "01"
    folder: str  # "01-autograd"
    files: list[str]  # core paths of the handout files, e.g. core/ops/matmul.cpp

    @property
    def dir(self) -> Path:
        return REPO / "labs" / self.folder


@dataclass
class Item:
    name: str  # GoogleTest filter
    points: float
    title: str
    timeout_s: float
    exclusive: bool = False  # a timed item: runs alone, so no other item steals its cores


@dataclass
class Rubric:
    lab: str
    title: str
    test_target: str
    memory_limit_mb: int
    items: list[Item]


@functools.lru_cache(maxsize=None)  # every message names the lab's files: read the manifest once
def find_lab(number: str) -> Lab:
    """The lab's folder and handout files, from labs/handouts.txt."""
    if not re.fullmatch(r"\d{1,2}", number):
        raise UsageError(f"--lab {number!r}: give the lab's number, e.g. --lab 01")
    number = number.zfill(2)
    manifest = REPO / handout.MANIFEST
    folders: dict[str, str] = {}
    files: dict[str, list[str]] = {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            lab, folder, path = line.split()
            folders[lab] = folder
            files.setdefault(lab, []).append(path)
    if number not in folders:
        known = ", ".join(sorted(folders)) or "none"
        raise UsageError(f"--lab {number}: no such lab in {handout.MANIFEST} "
                         f"(labs with handouts: {known})")
    return Lab(number, folders[number], sorted(files[number]))


def positive_number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UsageError(f"{where} must be a positive number, got {value!r}")
    return float(value)


def nonempty_string(value, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{where} must be a non-empty string, got {value!r}")
    return value


def check_keys(obj: dict, allowed: set[str], required: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    missing = sorted(required - set(obj))
    if unknown:
        raise UsageError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    if missing:
        raise UsageError(f"{where}: missing key(s) {missing}")


def load_rubric(lab: Lab) -> Rubric:
    """Reads and validates labs/NN-name/rubric.json; every problem is a UsageError."""
    path = lab.dir / "rubric.json"
    where = path.relative_to(REPO).as_posix()
    if not path.is_file():
        raise UsageError(f"{where}: no rubric for lab {lab.number}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise UsageError(f"{where}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected a JSON object at the top")
    check_keys(data, {"lab", "title", "test_target", "default_timeout_s", "memory_limit_mb",
                      "items"}, {"lab", "title", "test_target", "items"}, where)
    if data["lab"] != lab.number:
        raise UsageError(f"{where}: \"lab\" is {data['lab']!r}, expected {lab.number!r}")
    target = nonempty_string(data["test_target"], f"{where}: test_target")
    if not re.fullmatch(r"[A-Za-z0-9_]+", target):
        raise UsageError(f"{where}: test_target {target!r} must be a plain executable name")
    default_timeout = positive_number(data.get("default_timeout_s", 60),
                                      f"{where}: default_timeout_s")
    memory = positive_number(data.get("memory_limit_mb", 4096), f"{where}: memory_limit_mb")
    if not isinstance(data["items"], list) or not data["items"]:
        raise UsageError(f"{where}: \"items\" must be a non-empty list")
    items: list[Item] = []
    for i, raw in enumerate(data["items"]):
        at = f"{where}: items[{i}]"
        if not isinstance(raw, dict):
            raise UsageError(f"{at}: expected an object")
        check_keys(raw, {"name", "points", "title", "timeout_s", "exclusive"}, {"name", "points", "title"}, at)
        name = nonempty_string(raw["name"], f"{at}: name")
        if re.search(r"\s", name):
            raise UsageError(f"{at}: name {name!r} (a GoogleTest filter) has white space")
        item = Item(name, positive_number(raw["points"], f"{at}: points"),
                    nonempty_string(raw["title"], f"{at}: title"),
                    positive_number(raw.get("timeout_s", default_timeout), f"{at}: timeout_s"))
        item.exclusive = raw.get("exclusive", False)
        if not isinstance(item.exclusive, bool):
            raise UsageError(f"{at}: exclusive must be true or false")
        if any(other.title == item.title for other in items):
            raise UsageError(f"{at}: title {item.title!r} appears twice")
        items.append(item)
    return Rubric(lab.number, nonempty_string(data["title"], f"{where}: title"), target,
                  int(memory), items)


# ---------------------------------------------------------------------------------------
# The submission


@dataclass
class Staged:
    used: dict[str, str] = field(default_factory=dict)  # core path -> submission path
    missing: list[str] = field(default_factory=list)  # core paths taken from the handout
    ignored: list[str] = field(default_factory=list)  # submission paths not graded
    notes: list[str] = field(default_factory=list)


def pick_submission_files(submission: Path, lab: Lab) -> Staged:
    """Decides which submission file stands for each handout file."""
    present: dict[str, Path] = {}
    links: list[str] = []
    for path in sorted(submission.rglob("*")):
        rel = path.relative_to(submission).as_posix()
        if path.is_symlink():
            links.append(rel)
        elif path.is_file():
            present[rel] = path
    basenames = [Path(p).name for p in lab.files]
    staged = Staged()
    for core_path in lab.files:
        chosen = next((c for c in (core_path, f"labs/{lab.folder}/{core_path}") if c in present),
                      None)
        name = Path(core_path).name
        if chosen is None and basenames.count(name) == 1:  # a flat or re-folded upload
            same_name = [rel for rel in present if Path(rel).name == name]
            if name in present or len(same_name) == 1:
                chosen = name if name in present else same_name[0]
            elif len(same_name) > 1:
                staged.notes.append(f"several files are named {name} ({', '.join(same_name)}); "
                                    f"put yours at {core_path}")
        if chosen:
            staged.used[core_path] = chosen
        else:
            staged.missing.append(core_path)
    used = set(staged.used.values())
    staged.ignored = [rel for rel in present if rel not in used]
    staged.ignored += [f"{rel} (a symbolic link)" for rel in links]
    for core_path, rel in staged.used.items():
        if present[rel].stat().st_size == 0:
            staged.notes.append(f"{rel} is empty: the build will miss everything {Path(core_path).name} "
                                f"should define (an upload that went wrong?)")
    for core_path in staged.missing:  # a file named almost right: say so
        name = Path(core_path).name
        alike = [rel for rel in staged.ignored
                 if Path(rel).name.lower() == name.lower() and Path(rel).name != name]
        if alike:
            staged.notes.append(f"{alike[0]} is not graded: the file must be named exactly {name}")
    if present and not staged.used:
        staged.notes.append(f"none of lab {lab.number}'s files is in your submission (it needs "
                            f"{', '.join(sorted(set(basenames)))}): every item graded the "
                            f"untouched handout")
    return staged


def mark_handout_items(outcomes: list[Outcome], staged: Staged) -> None:
    """Says, on an item that failed in a file the submission did not have, that the handout
    stood in for it: the student may have submitted the file under another name."""
    for outcome in outcomes:
        for core_path in staged.missing:
            if not outcome.passed and core_path in outcome.message:
                note = (f"\n(your submission has no {Path(core_path).name}, so the untouched "
                        f"handout's was graded)")
                outcome.message = outcome.message[:MAX_ITEM_OUTPUT - len(note)] + note


def student_files(submission: Path, lab: Lab, staged: Staged) -> dict[str, Path]:
    """Core path -> the file that stands for it: the submission's, else the handout's."""
    files: dict[str, Path] = {}
    for core_path in lab.files:
        source = submission / staged.used[core_path] if core_path in staged.used \
            else lab.dir / core_path
        if not source.is_file():
            raise UsageError(f"{source}: the handout file is missing; "
                             f"run tools/handout.py generate")
        files[core_path] = source
    return files


# ---------------------------------------------------------------------------------------
# Building


@dataclass
class Build:
    ok: bool
    student: grade_build.StudentBuild | None  # the release build (None: not built)
    errors: str  # trimmed compiler output when not ok
    sanitized: grade_build.StudentBuild | None = None  # the ASan/UBSan build, when made
    checker: Path | None = None  # the trusted build's test program (the same tests, pristine)

    def programs(self, rubric: Rubric, sanitized: bool = False) -> "Programs":
        """What an item runs: the student's test program (release or sanitized) and the
        trusted checker; lab_student for timed items (release only)."""
        student = self.sanitized if sanitized else self.student
        lab_student = student.program("tests/lab_student")
        has_lab_student = (student.build / "tests/lab_student").is_file() and not sanitized
        return Programs(student.program(f"tests/{rubric.test_target}"), student.mounts(),
                        lab_student if has_lab_student else None, self.checker, sanitized)


def prepare_builds(lab: Lab, rubric: Rubric, args: argparse.Namespace) -> tuple[Path, Path]:
    """Brings the trusted build and the base (the lab's test program in it) up to date
    (incrementally); returns (cache, the trusted build's test program). Call with the
    base's lock held."""
    cache = grade_build.make_cache(args.cache)
    targets = [f"tests/{rubric.test_target}"]
    trusted = (args.trusted_build or cache / "trusted").resolve()
    if args.trusted_build and not (trusted / "meson-private").is_dir():
        raise SetupError(f"--trusted-build {args.trusted_build}: not a meson build folder")
    print(f"updating the trusted build ({trusted}) ...", flush=True)
    grade_build.trusted_build(trusted, targets + ["tests/lab_reference"], args.jobs)
    for flavour in flavours(args):
        grade_build.update_base(cache, targets, flavour, args.jobs, lambda line: print(line, flush=True))
    return cache, trusted / targets[0]


def flavours(args: argparse.Namespace) -> list[str]:
    return ["release", "asan"] if args.sanitizer else ["release"]


def build(work: Path, lab: Lab, rubric: Rubric, files: dict[str, Path],
          args: argparse.Namespace) -> Build:
    """The trusted build, the base builds, then the student's build of the rubric's
    test program in the sandbox: release, and (when it compiles) sanitized."""
    cache = grade_build.make_cache(args.cache)
    targets = [f"tests/{rubric.test_target}"]
    with grade_build.locked(grade_build.base_lock(cache)):
        _, checker = prepare_builds(lab, rubric, args)
        base = grade_build.base_dir(cache)
        grade_build.stage_sources(base, work, files)
        for flavour in flavours(args):
            grade_build.copy_build(base, work, flavour, targets)
    print(f"building tests/{rubric.test_target} in the sandbox ...", flush=True)
    release = grade_build.student_build(work, "release", targets, args.jobs)
    result = Build(release.ok, release, "", None, checker)
    if not release.ok:
        result.errors = compiler_errors(release.errors, work, lab.number)
    elif args.sanitizer:
        print("building the sanitizer (ASan + UBSan) build ...", flush=True)
        result.sanitized = grade_build.student_build(work, "asan", targets, args.jobs)
        if not result.sanitized.ok:
            raise SetupError("the sanitizer build failed where the release build did not:\n"
                             + tail(result.sanitized.errors, 40))
    return result


def prepare(args: argparse.Namespace) -> int:
    """--prepare: the builds a grading reuses, made ahead (Gradescope's image setup)."""
    lab = find_lab(args.lab)
    rubric = load_rubric(lab)
    cache = grade_build.make_cache(args.cache)
    grade_build.check_machine(cache)
    with grade_build.locked(grade_build.base_lock(cache)):
        prepare_builds(lab, rubric, args)
    print(f"lab {lab.number}: the trusted build and the base builds are ready in {cache}")
    return 0


def compiler_errors(log: str, work: Path, lab_number: str) -> str:
    """The part of a failed ninja log a student needs: the compiler's (or linker's) first
    errors, without ninja's progress and command lines, with repository paths."""
    lines = log.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("FAILED:")), 0)
    kept: list[str] = []
    skip_command = False
    for line in lines[start:]:
        if line.startswith("FAILED:"):  # names an object file; the compiler names the source
            skip_command = True  # ninja prints the failed command next
            continue
        if skip_command:
            skip_command = False
            continue
        if re.match(r"\[\d+/\d+\] ", line) or line.startswith("ninja: build stopped"):
            continue
        kept.append(line)
    text = shorten_paths("\n".join(kept), work, lab_number)
    if len(text) > MAX_BUILD_OUTPUT:
        text = text[:MAX_BUILD_OUTPUT] + "\n... (more errors follow; fix the first ones first)"
    return text


# A path from a build folder back into a source tree: "../core/x.cpp" from the sandbox's
# build, "../../../../work/main/tests/y.cpp" from the trusted build in the cache.
TOP_FOLDERS = r"(?:core|tests|bench|tools|labs)/"


def shorten_paths(text: str, work: Path, lab_number: str | None = None) -> str:
    """Shows the framework's files as repository paths and, given the lab, the student's
    files as the handout's (labs/NN-name/core/...: where the student edits them, not the
    core file that holds the reference)."""
    def relative(tree: Path) -> str:
        return re.escape(str(tree).lstrip("/") + "/")
    # The student's tree first (the sandbox's build and run, the work folder): there a lab
    # file is the student's.
    student_trees = f"src/|{relative(grade_build.INSIDE_SRC)}|{relative(work / 'src')}"
    text = re.sub(rf"(?<![\w./-])(?:\.\./)+(?:{student_trees})?(?={TOP_FOLDERS})", "", text)
    for prefix in (f"{grade_build.INSIDE_SRC}/", f"{work}/src/"):
        text = text.replace(prefix, "")
    if lab_number:
        lab = find_lab(lab_number)
        for core_path in lab.files:
            text = re.sub(rf"(?<![\w./-]){re.escape(core_path)}\b", f"labs/{lab.folder}/{core_path}", text)
    # Then the repository (the trusted build): its lab files hold the reference, so they
    # keep their core/ path.
    text = re.sub(rf"(?<![\w./-])(?:\.\./)+{relative(REPO)}(?={TOP_FOLDERS})", "", text)
    return text.replace(f"{REPO}/", "")


SANITIZER_REPORT = re.compile(r"ERROR: (AddressSanitizer|LeakSanitizer)|runtime error: ")


def sanitizer_report(output: str, lines: int = 12) -> str:
    """The first sanitizer report in a run's output (ASan's error line and the top of its
    stack, or UBSan's runtime error), or "": it names the line a crash came from."""
    all_lines = output.splitlines()
    start = next((i for i, line in enumerate(all_lines) if SANITIZER_REPORT.search(line)), None)
    if start is None:
        return ""
    kept: list[str] = []
    for line in all_lines[start:]:
        if len(kept) == lines or "testing::" in line:  # GoogleTest's own frames say nothing
            break
        if line.strip():  # a line is the student's output: its length is theirs to choose
            kept.append(line.rstrip()[:MAX_REPORT_LINE])
    return "\n".join(kept)[:MAX_ITEM_OUTPUT // 2]


# ---------------------------------------------------------------------------------------
# Running the tests


@dataclass
class Outcome:
    item: Item
    status: str  # short: passed, failed, not implemented, timed out, crashed, out of memory, ...
    message: str  # what the student reads
    seconds: float = 0.0
    fraction: float = 1.0  # of the points, for a "partial" outcome (a performance band)
    report: str = ""  # the sanitizer's report from the student's run, when it printed one

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def possible(self) -> float:
        """The points at stake. A test the trusted checker skipped (a CPU feature or a
        device this machine lacks) says nothing about the student: its item counts for
        nothing here rather than as a 0, and the summary names it."""
        return 0.0 if self.status == "skipped" else self.item.points

    @property
    def earned(self) -> float:
        if self.status == "partial":
            return round(self.item.points * self.fraction, 2)
        return self.item.points if self.passed else 0.0


@dataclass
class Programs:
    """The programs an item runs: the student's build (as the sandbox sees it) and the
    trusted build's checker."""

    student: Path  # the student's test program, its path inside the sandbox
    mounts: list  # read-only sandbox mounts that make the student's build visible
    lab_student: Path | None  # the student build's lab_student (inside), for timed items
    checker: Path  # the trusted build's test program
    sanitized: bool = False  # the student's ASan/UBSan build

    def memory_mb(self, limit: int) -> int | None:
        """The address-space limit: none for ASan, whose shadow memory reserves terabytes
        (ASAN_OPTIONS caps its memory instead)."""
        return None if self.sanitized else limit

    def env(self, memory_mb: int) -> dict[str, str]:
        if not self.sanitized:
            return {}
        return {"ASAN_OPTIONS": f"detect_leaks=0:hard_rss_limit_mb={memory_mb}:allocator_may_return_null=1",
                "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
                graded_run.SANITIZED_MARK: "1"}


def run_item(programs: Programs, item: Item, timeout_s: float, memory_mb: int, run_dir: Path,
             work: Path, lab: str) -> Outcome:
    """Runs one rubric item (the student's build computes in the sandbox, the trusted
    checker decides: tools/graded_run.py) and judges the result."""
    run_dir.mkdir(parents=True)
    limits = sandbox.Limits(cpu_s=8 * timeout_s + 10, memory_mb=programs.memory_mb(memory_mb),
                            wall_s=timeout_s, output_bytes=MAX_RUN_OUTPUT)
    run = graded_run.run_item(
        student_program=programs.student, student_mounts=programs.mounts,
        lab_student=programs.lab_student, checker=programs.checker, gtest_filter=item.name,
        timeout_s=timeout_s, limits=limits, run_dir=run_dir, env=programs.env(memory_mb))
    outcome = judge(item, run, timeout_s, memory_mb, lab, work)
    outcome.seconds = run.seconds
    report = sanitizer_report(shorten_paths(run.compute_output, work, lab))
    outcome.report = report
    if report and not outcome.passed and report not in outcome.message:
        # The judge quotes the checker; the sanitizer's report is in the student's own run.
        # It goes last and is never the part trimmed: it names the faulty line.
        room = MAX_ITEM_OUTPUT - len(report) - 80
        outcome.message = (outcome.message[:max(room, 0)]
                           + "\nthe sanitizer's report, from your program's output:\n" + report)
    return outcome


def running_test(output: str) -> str:
    """The test that started last and did not finish, from GoogleTest's progress lines."""
    current = ""
    for line in output.splitlines():
        started = re.match(r"\[ RUN      \] (\S+)", line)
        if started:
            current = started.group(1)
        elif re.match(r"\[ +(OK|FAILED|SKIPPED) +\] ", line):
            current = ""
    return f" in {current}" if current else ""


def output_of_running_test(output: str) -> str:
    """What the test that started last printed (its progress, its own diagnosis of a
    hang), without GoogleTest's lines: "" when it printed nothing."""
    lines = output.splitlines()
    start = max((i for i, line in enumerate(lines) if line.startswith("[ RUN      ] ")), default=-1)
    if start < 0:
        return ""
    return "\n".join(line for line in lines[start + 1:] if line.strip() and not line.startswith("["))


def not_implemented(text: str, lab: str) -> list[str]:
    """The distinct `what`s of 'lab NN: not implemented: what' messages, in order. A test
    may carry the message on with text of its own: a known region's name is cut there."""
    known = sorted(region_files(lab), key=len, reverse=True)
    whats = []
    for found in re.findall(rf"lab {lab}: not implemented: ([^\"\n]+)", text):
        found = found.strip()
        whats.append(next((what for what in known if found == what or (
            found.startswith(what) and not (found[len(what)].isalnum() or found[len(what)] == "_"))), found))
    return list(dict.fromkeys(whats))


def judge(item: Item, run: graded_run.ItemRun, timeout_s: float, memory_mb: int, lab: str,
          work: Path) -> Outcome:
    """Turns an item's two runs into a status and a message a student can act on. How the
    student's run ended (a timeout, a crash, running out of memory) is reported from it;
    whether the tests passed comes only from the trusted checker's report."""
    compute = run.compute
    output = shorten_paths(run.compute_output, work, lab)
    check_output = shorten_paths(run.check_output, work, lab)
    tests = run.tests
    for test in tests or []:
        test["failures"] = [shorten_paths(f, work, lab) for f in test["failures"]]
    missing = not_implemented(output + "\n" + check_output, lab)
    if compute.timed_out:
        printed = output_of_running_test(output)
        return Outcome(item, "timed out", f"timed out after {timeout_s:g} s{running_test(output)} "
                                          f"(an infinite loop or a deadlock?)"
                       + (f"\nwhat the test printed before it stopped:\n{tail(printed, 10)}" if printed else ""))
    if compute.output_truncated:
        return Outcome(item, "too much output", f"your program wrote more than the "
                                                f"{MAX_RUN_OUTPUT >> 20} MiB of output the grader "
                                                f"reads{running_test(output)} (printing in a loop?)")
    if compute.returncode != 0 and "bad_alloc" in output:
        return Outcome(item, "out of memory",
                       f"ran out of memory (limit {memory_mb} MiB){running_test(output)}: does the "
                       f"code allocate far more than the tensors need, or grow without end?")
    if missing and (compute.returncode < 0 or tests is None):  # thrown outside a test body
        return Outcome(item, "not implemented",
                       failure_message([], missing, output, compute.returncode, lab))
    if compute.signal:
        hint = SIGNAL_HINTS.get(compute.signal, "")
        message = f"crashed with signal {compute.signal}{running_test(output)}"
        message += f" ({hint})" if hint else ""
        return Outcome(item, "crashed", f"{message}\nlast output:\n{tail(output, 15)}")
    if tests is None and not run.check_timed_out and not run.record_problem:
        # The student's results arrived intact and the trusted checker still broke down: the
        # grading setup's problem, never a 0. (A checker that times out is left to the item:
        # it times the student's program in timed items, so a slow kernel can make it late.)
        raise SetupError(f"the trusted checker could not judge {item.title!r} (exit status "
                         f"{run.check_returncode}); its last output:\n{tail(check_output, 15)}")
    if tests is None or run.check_timed_out:
        return Outcome(item, "not checked",
                       "the grader's checker could not judge your results (it "
                       + ("timed out" if run.check_timed_out else f"exited with status {run.check_returncode}")
                       + f"); tell the course staff\nits last output:\n{tail(check_output, 15)}"
                       + (f"\nyour program's last output:\n{tail(output, 10)}" if output.strip() else ""))
    returncode = run.check_returncode
    ran = [t for t in tests if t.get("status") == "RUN"]
    failed = [t for t in ran if t.get("failures")]
    skipped = [t for t in ran if t.get("result") == "SKIPPED"]
    if not ran:
        return Outcome(item, "no tests", f"no test matches {item.name!r}: a rubric error, "
                                         f"please tell the course staff")
    if failed or returncode != 0:
        message = failure_message(failed, missing, check_output, returncode, lab)
        if compute.returncode != 0 and not failed:
            message += f"\nyour program exited with status {compute.returncode}{running_test(output)}"
        if run.record_problem:
            message += f"\n{run.record_problem}"
        return Outcome(item, "not implemented" if missing else "failed", message)
    if skipped:
        reasons = "; ".join(f"{t['suite']}.{t['name']}: {skip_reason(check_output, t)}" for t in skipped)
        return Outcome(item, "skipped", f"skipped, so not graded here: {reasons}")
    # A test may earn part of its item's points (performance graded as a ratio to the
    # reference) by recording the property score_fraction in [0, 1], and say why in
    # score_note; the lowest fraction among the item's tests counts.
    fractions = [(float(t["score_fraction"]), str(t.get("score_note", ""))) for t in ran
                 if is_number(t.get("score_fraction"))]
    if fractions:
        fraction, note = min(fractions)
        fraction = min(max(fraction, 0.0), 1.0)
        if fraction < 1.0:
            return Outcome(item, "partial", f"{fraction:.0%} of the points: {note}".rstrip(": "),
                           fraction=fraction)
    return Outcome(item, "passed", "passed")


def is_number(value: object) -> bool:
    try:
        float(value)  # type: ignore[arg-type]
        return True
    except (TypeError, ValueError):
        return False


def failure_message(failed: list[dict], missing: list[str], output: str, returncode: int,
                    lab: str) -> str:
    parts: list[str] = []
    if missing:
        places = region_files(lab)
        folder = find_lab(lab).folder
        parts += [f"not implemented: {what}" + (f"; fill in its LAB {lab} region in labs/{folder}/{places[what]}"
                                                 if what in places else "") for what in missing]
    for test in failed:
        # With a part not implemented, results missing after its exception are its echo.
        messages = [f for f in test["failures"] if "not implemented" not in f
                    and not (missing and "your program recorded no result" in f)]
        if messages:
            parts.append(f"{test['suite']}.{test['name']} failed:\n" + "\n".join(messages))
    if not parts:
        parts.append(f"the test program exited with status {returncode}\n{tail(output, 15)}")
    text = "\n".join(parts)
    return text if len(text) <= MAX_ITEM_OUTPUT else text[:MAX_ITEM_OUTPUT] + "\n... (trimmed)"


def skip_reason(output: str, test: dict) -> str:
    """The GTEST_SKIP() message: GoogleTest prints it between the test's RUN and SKIPPED lines."""
    name = f"{test['suite']}.{test['name']}"
    reason: list[str] = []
    inside_test = False
    for line in output.splitlines():
        if line.startswith(f"[ RUN      ] {name}"):
            inside_test, reason = True, []
        elif inside_test and line.startswith(f"[  SKIPPED ] {name}"):
            break
        elif inside_test and not re.search(r":\d+: Skipped$", line):
            reason.append(line.strip())
    return " ".join(r for r in reason if r) or "no reason given"


_REGION_FILES: dict[str, dict[str, str]] = {}


def region_files(lab: str) -> dict[str, str]:
    """Maps each LAB region's `what` to its core file, for 'not implemented' messages."""
    if lab not in _REGION_FILES:
        try:
            _REGION_FILES[lab] = {r.what: m.path for m in handout.scan_core(REPO) if m.lab == lab
                                  for r in m.regions}
        except (handout.MarkerError, OSError):
            _REGION_FILES[lab] = {}
    return _REGION_FILES[lab]


GTEST_CHATTER = re.compile(r"^(\[[=-]{10}\]|Running main\(\) from |Note: Google Test filter = )")


def tail(text: str, lines: int) -> str:
    """The last lines of a program's output, without GoogleTest's banner lines."""
    kept = [line for line in text.rstrip().splitlines() if not GTEST_CHATTER.match(line)]
    return "\n".join(kept[-lines:]) or "(none)"


# ---------------------------------------------------------------------------------------
# Reporting


def summary_text(lab: Lab, rubric: Rubric, staged: Staged, build_result: Build,
                 outcomes: list[Outcome]) -> str:
    total = sum(o.earned for o in outcomes)
    maximum = sum(o.possible for o in outcomes)
    lines = [f"Lab {lab.number} ({rubric.title}): {total:g} / {maximum:g} points."]
    not_here = [o for o in outcomes if o.status == "skipped"]
    if not_here:
        lines.append(f"Not graded on this machine ({sum(o.item.points for o in not_here):g} points, "
                     f"see each item): " + ", ".join(o.item.title for o in not_here))
    if not build_result.ok:
        lines.append("Your code did not compile, so no test could run; the compiler's errors "
                     "are under each item.")
    if staged.used:
        lines.append("Graded from your submission: " + ", ".join(
            core if core == sub else f"{core} (from {sub})" for core, sub in staged.used.items()))
    if staged.missing:
        lines.append("Not in your submission, so the unchanged handout was used: "
                     + ", ".join(staged.missing))
    if staged.ignored:
        shown = staged.ignored[:MAX_LISTED_FILES]
        more = (f" and {len(staged.ignored) - MAX_LISTED_FILES} more"
                if len(staged.ignored) > MAX_LISTED_FILES else "")
        lines.append(f"Ignored (not a lab {lab.number} handout file): {', '.join(shown)}{more}")
    lines += staged.notes
    return "\n".join(lines)


def results_json(lab: Lab, rubric: Rubric, staged: Staged, build_result: Build,
                 outcomes: list[Outcome], seconds: float) -> dict:
    """Gradescope's results.json (https://gradescope-autograders.readthedocs.io/)."""
    return {
        "score": sum(o.earned for o in outcomes),
        "execution_time": round(seconds),
        "output": summary_text(lab, rubric, staged, build_result, outcomes),
        "tests": [{"name": o.item.title, "score": o.earned, "max_score": o.possible,
                   "status": "passed" if o.passed else "failed", "output": o.message,
                   "visibility": "visible",
                   "extra_data": {"gtest_filter": o.item.name, "result": o.status,
                                  "seconds": round(o.seconds, 2)}}
                  for o in outcomes],
        "leaderboard": [],
        "extra_data": {"lab": lab.number, "build": "ok" if build_result.ok else "failed",
                       "graded_files": staged.used, "handout_files_used": staged.missing,
                       "ignored_files": staged.ignored[:MAX_LISTED_FILES],
                       "ignored_count": len(staged.ignored)},
    }


def print_table(lab: Lab, rubric: Rubric, outcomes: list[Outcome]) -> None:
    width = max([len(o.item.title) for o in outcomes] + [len("total")])
    print(f"\nLab {lab.number}: {rubric.title}")
    print(f"  {'item':<{width}}  {'points':>9}  status")
    for o in outcomes:
        points = f"{o.earned:g}/{o.possible:g}"
        print(f"  {o.item.title:<{width}}  {points:>9}  {o.status}")
    total = f"{sum(o.earned for o in outcomes):g}/{sum(o.possible for o in outcomes):g}"
    print(f"  {'total':<{width}}  {total:>9}")


def write_json(path: Path, data: dict) -> None:
    """Writes atomically: a reader never sees a half-written results.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


# ---------------------------------------------------------------------------------------
# The work folder


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def prepare_work(requested: Path | None) -> Path:
    """A work folder outside the repository: fresh, empty, or one this tool made before."""
    if requested is None:
        work = Path(tempfile.mkdtemp(prefix="gradlab-grade-")).resolve()
        work.chmod(0o711)  # mkdtemp's 0700 would keep the sandbox's user from reaching its mounts
    else:
        work = requested.resolve()
        if work.exists() and not work.is_dir():
            raise UsageError(f"--work {requested}: not a folder")
        if inside(work, REPO.resolve()):
            raise UsageError(f"--work {requested} is inside the repository; grading never "
                             f"writes there: give a folder outside {REPO}")
        if work.is_dir() and any(work.iterdir()) and not (work / WORK_MARKER).exists():
            raise UsageError(f"--work {requested}: not empty and not a grader work folder; "
                             f"give an empty or new folder")
        work.mkdir(parents=True, exist_ok=True)
    if inside(work, REPO.resolve()):  # TMPDIR pointing into the repository
        shutil.rmtree(work)
        raise UsageError(f"the temporary work folder {work} is inside the repository; set "
                         f"TMPDIR or --work to a folder outside {REPO}")
    grade_build.make_reachable(work)  # the sandbox user reads the staged tree in it
    (work / WORK_MARKER).write_text("made by tools/grade.py; cleared and reused by it\n")
    shutil.rmtree(work / "runs", ignore_errors=True)
    return work


# ---------------------------------------------------------------------------------------


def grade(args: argparse.Namespace) -> int:
    started = time.monotonic()
    lab = find_lab(args.lab)
    rubric = load_rubric(lab)
    submission = args.submission.resolve()
    if submission.is_file():
        raise UsageError(f"{args.submission} is a file: give the folder that holds the "
                         f"submission's files (here {args.submission.parent})")
    if not submission.is_dir():
        raise UsageError(f"{args.submission}: no such submission folder")
    out = grade_build.check_out(args.out)  # a bad --out is found now, not after the build
    work = prepare_work(args.work)
    try:
        grade_build.check_machine(work, grade_build.make_cache(args.cache))
        print(f"grading lab {lab.number} ({rubric.title}): {args.submission}, work folder {work}")
        staged = pick_submission_files(submission, lab)
        files = student_files(submission, lab, staged)
        for core, sub in staged.used.items():
            print(f"  graded:  {core}" + ("" if core == sub else f" (from {sub})"))
        for core in staged.missing:
            print(f"  handout: {core} (not in the submission)")
        for rel in staged.ignored[:MAX_LISTED_FILES]:
            print(f"  ignored: {rel}")
        if len(staged.ignored) > MAX_LISTED_FILES:
            print(f"  ignored: ... and {len(staged.ignored) - MAX_LISTED_FILES} more")
        for note in staged.notes:
            print(f"  note:    {note}")
        built = build(work, lab, rubric, files, args)
        print(f"built in {time.monotonic() - started:.0f} s", flush=True)
        if built.ok:
            outcomes = run_items(built, lab, rubric, work, args)
        else:
            print(f"the build failed:\n{built.errors}")
            message = f"did not compile:\n{built.errors}"
            outcomes = [Outcome(item, "build failed", message) for item in rubric.items]
        mark_handout_items(outcomes, staged)
        # Every student process is gone here: sandbox.run returns only then.
        data = results_json(lab, rubric, staged, built, outcomes, time.monotonic() - started)
        out = out or work / "results.json"
        write_json(out, data)
        args.written = out if args.out or args.keep else None  # else it goes with the work folder
        if not args.written:  # before the table, so that the table ends the output
            print(f"results.json (pass --out FILE to keep it):\n{json.dumps(data, indent=2)}")
        print_table(lab, rubric, outcomes)
        print(f"graded in {time.monotonic() - started:.0f} s")
        if args.written:
            print(f"results: {out}")
    finally:
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def run_items(built: Build, lab: Lab, rubric: Rubric, work: Path,
              args: argparse.Namespace) -> list[Outcome]:
    """Runs the rubric items, --jobs at a time, and returns their outcomes in rubric order.
    Exclusive (timed) items run afterwards, one at a time with nothing beside them: a
    performance grade must not depend on what else the grader happened to run. The other
    (correctness) items run again in the sanitizer build when there is one."""
    def one(index: int, item: Item) -> Outcome:
        timeout = args.timeout if args.timeout else item.timeout_s
        run = work / "runs" / f"{index:02d}"
        outcome = run_item(built.programs(rubric), item, timeout, rubric.memory_limit_mb, run,
                           work, lab.number)
        # Correctness items run again in the ASan/UBSan build: a pass must hold there too,
        # and a crash or a wrong result may have a memory error behind it that it names.
        rerun = outcome.passed or outcome.status in ("crashed", "failed")
        if rerun and built.sanitized and not item.exclusive:
            checked = run_item(built.programs(rubric, sanitized=True), item,
                               timeout * SANITIZER_SLOWDOWN, rubric.memory_limit_mb, run / "asan",
                               work, lab.number)
            outcome = sanitizer_verdict(outcome, checked) if outcome.passed else located(outcome, checked)
        if sandbox.STOP.is_set():  # interrupted: the outcome is the kill's, not the item's
            return outcome
        with print_lock:  # one whole line at a time from the worker threads
            print(f"  {item.title}: {outcome.status} ({outcome.seconds:.1f} s)", flush=True)
        return outcome

    print_lock = threading.Lock()
    print(f"running {len(rubric.items)} rubric items, {args.jobs} at a time ...", flush=True)
    shared = [i for i, item in enumerate(rubric.items) if not item.exclusive]
    alone = [i for i, item in enumerate(rubric.items) if item.exclusive]
    outcomes: dict[int, Outcome] = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for i, outcome in zip(shared, pool.map(one, shared, [rubric.items[i] for i in shared])):
            outcomes[i] = outcome
    for i in alone:
        outcomes[i] = one(i, rubric.items[i])
    return [outcomes[i] for i in range(len(rubric.items))]


def sanitizer_verdict(release: Outcome, sanitized: Outcome) -> Outcome:
    """An item passes only when its tests also pass in the ASan/UBSan build: a write past a
    buffer's end that the release build survives by luck fails there."""
    seconds = release.seconds + sanitized.seconds
    if sanitized.passed or sanitized.status == "skipped":  # skipped: a measurement, not run sanitized
        return Outcome(release.item, release.status, release.message, seconds, release.fraction)
    report = sanitized.report
    # With a report, the report is the message (the checker's view of the broken run says
    # less); without one (a timeout, say), what the sanitized run's judge said.
    details = report or f"{sanitized.status}\n{sanitized.message}"
    return Outcome(release.item, "sanitizer", f"passes in the release build, but the "
                   f"AddressSanitizer/UBSan build reports:\n{details}"[:MAX_ITEM_OUTPUT], seconds)


def located(crashed: Outcome, sanitized: Outcome) -> Outcome:
    """A crash or a failure in the release build, with the line the ASan/UBSan build's
    report names (when its run reported one): a signal alone does not say where, and a
    write past a buffer's end may show only as wrong numbers."""
    report = sanitized.report
    if not report:
        return Outcome(crashed.item, crashed.status, crashed.message,
                       crashed.seconds + sanitized.seconds)
    room = MAX_ITEM_OUTPUT - len(report) - 80
    return Outcome(crashed.item, crashed.status,
                   crashed.message[:max(room, 0)] + "\nthe same item in the AddressSanitizer/UBSan "
                   "build reports:\n" + report, crashed.seconds + sanitized.seconds)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Grade one lab submission: build it in the framework (student mode), run "
                    "each rubric item's GoogleTest filter with a timeout and a memory limit, "
                    "print a score table and write Gradescope's results.json.",
        epilog="Exit status: 0 graded (whatever the score); 2 bad arguments or rubric; "
               "3 the build could not be set up; 130 interrupted (nothing scored). Example: "
               "tools/grade.py --lab 01 ~/submissions/alice --out alice.json")
    parser.add_argument("submission", type=Path, metavar="SUBMISSION", nargs="?",
                        help="folder with the student's files (repository layout, handout "
                             "layout, or flat file names)")
    parser.add_argument("--lab", required=True, help="lab number, e.g. 01")
    parser.add_argument("--out", type=Path, help="where to write results.json "
                        "(default: WORK/results.json, printed when the work folder is removed)")
    parser.add_argument("--work", type=Path, help="work folder outside the repository, new or "
                        "empty or made by an earlier --keep run (its build is reused); "
                        "default: a fresh temporary folder")
    parser.add_argument("--jobs", type=int, default=2,
                        help="parallel compile jobs and parallel rubric items (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder")
    parser.add_argument("--cache", type=Path, help="folder for the builds the grader reuses "
                        "(trusted build, the base builds); default "
                        "$GRADLAB_GRADE_CACHE, else /var/cache/gradlab-grade/KEY as root, "
                        "~/.cache/gradlab-grade/KEY otherwise")
    parser.add_argument("--trusted-build", type=Path, help="an existing release build of this "
                        "repository to use as the trusted build (e.g. build/); default CACHE/trusted")
    parser.add_argument("--prepare", action="store_true",
                        help="only bring the trusted build and the base builds (the lab's program) up to date "
                             "(no SUBMISSION): what a later grading reuses")
    parser.add_argument("--no-sanitizer", dest="sanitizer", action="store_false",
                        help="skip the ASan/UBSan build and its second run of the correctness items")
    parser.add_argument("--timeout", type=float, metavar="S",
                        help="time limit in seconds for every item, instead of the rubric's "
                             "(for quick self-checks)")
    args = parser.parse_args(argv)
    if (args.submission is None) != args.prepare:
        parser.error("give a SUBMISSION folder, or --prepare without one")
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.timeout is not None and not (math.isfinite(args.timeout) and args.timeout > 0):
        parser.error("--timeout must be a positive number of seconds")
    return args


def interrupted(signum: int, frame) -> None:
    """Ctrl-C or SIGTERM (what `timeout` and job runners send): every running sandbox is
    killed within a second, the work folder is removed, and nothing is scored."""
    sandbox.STOP.set()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sandbox.STOP.clear()
    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    try:
        return prepare(args) if args.prepare else grade(args)
    except KeyboardInterrupt:
        print("grade.py: interrupted" + (f" after the results were written to {args.written}"
                                         if getattr(args, "written", None) else
                                         ": nothing was scored and no results were written"),
              file=sys.stderr)
        return 130
    except UsageError as e:
        print(f"grade.py: error: {e}", file=sys.stderr)
        return 2
    except SetupError as e:
        print(f"grade.py: setup error (not the submission's fault): {e}", file=sys.stderr)
        return 3
    except OSError as e:  # the machine failed the grader (no fork, disk full): not a score
        print(f"grade.py: setup error (not the submission's fault): {e}; no results were written",
              file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
