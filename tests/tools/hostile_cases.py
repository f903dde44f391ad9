"""Hostile submissions, graded by tools/grade.py as a student's would be.

Each case is a folder tests/tools/hostile/<lab>/<case>/ with a case.json that says how to
make the submission from the lab's reference files (or its untouched handout) and the
attack snippets (hostile/generic/*.inc, or the case's own): code put before a LAB region's
body, in place of it, or at the top or end of a file. Placeholders in the snippets:
@REPO@ (this repository), @CORE_PATH@ (the file being changed), @LAB@, @LAB_FOLDER@,
@WHAT@ (the region), @RESULTS@ (the --out file), @TRUSTED@ (the trusted build),
@CACHE@ (the grader's cache), @TEST_TARGET@.

Each case must:
- score what the honest part of the work deserves: the items in expect.full earn their
  points, the ones in expect.zero none, or the total is expect.total;
- leave the repository untouched (`git status --porcelain --ignored`), and the files the
  attacks try to edit (the grader's base builds, the trusted build, the results file);
- leave no process behind (the attacks name theirs gl-hostile), and no daemon may rewrite
  the results after the grader exits.

Cases with "needs_verdict": true attack the test program's own verdict (the GoogleTest
report): they pass only because the verdict comes from a process that never loaded the
student's code (tests/labs/graded.hpp, record and replay).

These grade whole submissions (a build and every item): a few minutes. The trusted build is
GRADLAB_TRUSTED_BUILD, else build/ when it holds a configured build, else the grader's cache.

Run: python3 -m unittest discover -s tests/tools -p hostile_cases.py
(./gradlab test runs them lab by lab through tools/check_grading.py, check (d).)
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOSTILE = Path(__file__).resolve().parent / "hostile"
sys.path.insert(0, str(REPO / "tools"))
sys.dont_write_bytecode = True
import grade  # noqa: E402
import grade_build  # noqa: E402
import handout  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_sandbox import PROBLEM  # noqa: E402  (why there is no sandbox here, or None)

DAEMON_DELAY_S = 8  # tamper_and_linger.inc's daemon waits this long before it writes
GRADE_WALL_S = 1800


def trusted_build() -> Path | None:
    if os.environ.get("GRADLAB_TRUSTED_BUILD"):
        return Path(os.environ["GRADLAB_TRUSTED_BUILD"])
    build = REPO / "build"
    return build if (build / "build.ninja").is_file() else None


def hostile_processes() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip() == "gl-hostile":
                found.append(entry.name)
        except OSError:
            pass
    return found


def git_status() -> str:
    return subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--ignored"],
                          stdout=subprocess.PIPE, text=True, check=True).stdout


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


class Case:
    """One hostile submission: where it comes from and what it must score."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.spec = json.loads((folder / "case.json").read_text())
        self.lab = grade.find_lab(folder.parent.name)
        self.rubric = grade.load_rubric(self.lab)

    def snippet(self, name: str, values: dict[str, str]) -> str:
        own = self.folder / f"{name}.inc"
        text = (own if own.is_file() else HOSTILE / "generic" / f"{name}.inc").read_text()
        for key, value in values.items():
            text = text.replace(f"@{key}@", value)
        return text

    def write_submission(self, target: Path, values: dict[str, str]) -> None:
        """The lab's files, reference or handout, with the attacks put in."""
        marked = {m.path: m for m in handout.scan_core(REPO) if m.lab == self.lab.number}
        for core_path in self.lab.files:
            source = REPO / core_path if self.spec["base"] == "reference" else self.lab.dir / core_path
            lines = source.read_text().splitlines(keepends=True)
            mine = dict(values, CORE_PATH=core_path)
            if self.spec["base"] == "reference" and core_path in marked:
                lines = self.change_regions(marked[core_path], mine)
            text = "".join(self.snippet(n, mine) for n in self.spec.get("prepend", {}).get(core_path, []))
            text += "".join(lines)
            text += "".join(self.snippet(n, mine) for n in self.spec.get("append", {}).get(core_path, []))
            (target / core_path).parent.mkdir(parents=True, exist_ok=True)
            (target / core_path).write_text(text)

    def change_regions(self, marked, values: dict[str, str]) -> list[str]:
        lines = list(marked.lines)
        for region in sorted(marked.regions, key=lambda r: r.begin, reverse=True):
            mine = dict(values, WHAT=region.what)
            before = "".join(self.snippet(n, mine) for n in self.spec.get("before", {}).get(region.what, []))
            replace = self.spec.get("replace", {}).get(region.what)
            body = lines[region.begin + 1:region.end]
            if replace:
                body = [self.snippet(n, mine) for n in replace]
            lines[region.begin + 1:region.end] = [before] + body
        return lines


def grade_case(case: Case, trusted: Path | None = None,
               options: list[str] = ()) -> tuple[list[str], str]:
    """Grades the case's submission (options: more grade.py options, e.g. --cache DIR);
    returns (problems, summary). No problems: it held."""
    tmp = Path(tempfile.mkdtemp(prefix="gradlab-hostile-"))
    try:
        return _grade_case(case, tmp, trusted, list(options))
    finally:
        subprocess.run(["rm", "-rf", str(tmp)])


def _grade_case(case: Case, tmp: Path, trusted: Path | None,
                options: list[str]) -> tuple[list[str], str]:
    os.chmod(tmp, 0o755)
    results = tmp / "results.json"
    cache = grade_build.make_cache(Path(options[options.index("--cache") + 1])
                                   if "--cache" in options else None)
    trusted_dir = trusted or cache / "trusted"
    values = {"REPO": str(REPO), "LAB": case.lab.number, "LAB_FOLDER": case.lab.folder,
              "RESULTS": str(results), "TRUSTED": str(trusted_dir), "CACHE": str(cache),
              "TEST_TARGET": case.rubric.test_target}
    case.write_submission(tmp / "submission", values)
    watched = [trusted_dir / "tests" / case.rubric.test_target] + \
        [grade_build.base_dir(cache) / "src" / p for p in case.lab.files]
    status, digests = git_status(), {p: digest(p) for p in watched}
    command = [sys.executable, str(REPO / "tools/grade.py"), "--lab", case.lab.number,
               str(tmp / "submission"), "--out", str(results), *options]
    if trusted:
        command += ["--trusted-build", str(trusted)]
    started = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace", timeout=GRADE_WALL_S)
    seconds = time.monotonic() - started
    if done.returncode != 0 or not results.is_file():
        return [f"the grader exited with status {done.returncode}:\n{done.stdout[-4000:]}"], "no score"
    graded = results.read_bytes()
    problems = []
    if hostile_processes():
        problems.append("a process of the submission outlived grading")
    time.sleep(DAEMON_DELAY_S + 2)  # what a surviving daemon would have waited for
    if results.read_bytes() != graded:
        problems.append("results.json changed after grading")
    if git_status() != status:
        problems.append("grading changed the repository (git status)")
    changed = [str(p) for p in watched if digest(p) != digests[p]]
    if changed:
        problems.append(f"changed: {', '.join(changed)}")
    data = json.loads(graded)
    problems += score_problems(case, data)
    maximum = sum(t["max_score"] for t in data["tests"])
    return problems, f"{data['score']:g}/{maximum:g} in {seconds:.0f} s"


def score_problems(case: Case, data: dict) -> list[str]:
    expect = case.spec["expect"]
    problems = []
    if data["extra_data"]["build"] != expect["build"]:
        problems.append(f"build {data['extra_data']['build']}, expected {expect['build']}")
    items = {t["extra_data"]["gtest_filter"]: t for t in data["tests"]}
    for name in expect.get("full", []):
        if items[name]["score"] != items[name]["max_score"]:
            problems.append(f"{name} should keep its points: {items[name]['output'][:600]}")
    for name in expect.get("zero", []):
        if items[name]["score"] != 0:
            problems.append(f"{name} earned points it did not earn: {items[name]['output'][:600]}")
    if "total" in expect and data["score"] != expect["total"]:
        problems.append(f"total {data['score']:g}, expected {expect['total']:g}")
    return problems


def cases(lab: str | None = None) -> list[Case]:
    return [Case(f.parent) for f in sorted(HOSTILE.glob(f"{lab or '*'}/*/case.json"))]


@unittest.skipIf(PROBLEM, f"no sandbox here: {PROBLEM}")
class HostileTest(unittest.TestCase):
    pass


def add_cases() -> None:
    """One test method per case folder."""
    for case in cases():
        def test(self, case=case):
            problems, summary = grade_case(case, trusted_build())
            self.assertEqual(problems, [], summary)

        name = f"test_lab{case.lab.number}_{case.folder.name}"
        test.__doc__ = f"lab {case.lab.number}, {case.folder.name}: {case.spec['what']}"
        setattr(HostileTest, name, test)


add_cases()

if __name__ == "__main__":
    unittest.main()
