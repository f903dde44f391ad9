#!/usr/bin/env python3
"""Run each lab's graded tests against plausible wrong implementations (mutants).

A mutant is a small edit of one `// LAB NN BEGIN: what` ... `// LAB NN END` region of the
reference: the kind of mistake a student makes (a leading dimension taken as the width,
a remainder dropped, a write past a thread's range, a NaN payload lost, a statistic left
stale after an unusual sequence of calls). The graded tests are good when every mutant
fails at least one *unit* item of the rubric, not only the end-to-end one.

Each mutant is a JSON file tests/tools/mutants/labNN/<name>.json:

    {"description": "one line: what the student got wrong",
     "file": "core/kernels/cpu/gemm_blocked.cpp",
     "region": "cache blocking of the i-k-j loop",        (the text after BEGIN:)
     "replace": [{"old": "text in the region", "new": "its replacement"}, ...]}

`old` must occur exactly once in the region. The tool never edits the repository: it
copies the lab's core files into a staged student folder, applies the mutant there and
builds in student mode (-Dstudent=NN -Dstudent_dir=STAGED), one build folder per lab that
every mutant of the lab reuses (only the mutated file recompiles). It first checks that the
unmutated reference passes every item it runs, then runs each item for each mutant in a
child process (a crash or a timeout counts as caught) and reports, per lab, caught/total
and the rubric items that caught each mutant. Timed items ("exclusive" in the rubric) are
not run: a mutant must be caught by a correctness item. End-to-end items (training a
network) are run only with --end-to-end, and never count as the unit item that catches.

    tools/check_mutants.py                      every lab (about 30 min on 2 cores)
    tools/check_mutants.py --lab 02 --lab 05    some labs
    tools/check_mutants.py --lab 07 --mutant stale-blocks-cached
    tools/check_mutants.py --check-specs        only check that every mutant applies (CI)

Exit status: 0 every mutant caught by a unit item; 1 some escaped; 2 bad usage or a bad
mutant file; 3 the reference itself fails or does not build.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MUTANTS = REPO / "tests" / "tools" / "mutants"
MANIFEST = REPO / "labs" / "handouts.txt"
CUDA_BIN = Path("/usr/local/cuda/bin")
# Items that train a whole network: they catch many mutants, but a bug must also fail a
# unit item of its own (issue 11), so these never count as the catching item.
END_TO_END = {
    "Lab01.SimpleNetLearnsFashionMnist",
    "Lab01.DataDependentControlFlowTrains",
    "Lab01.TwoLayerNetworkGradients",
    "Lab03.TiledRunsATrainingStep",
    "Lab05.MixedPrecisionTrainingReachesTheFp32Band",
    "Lab08.DdpTrainsWithTheSampler*",
    "Lab12.QatTrainsToTheAccuracyBand",
}
BUILD_TIMEOUT_S = 1200
# Outside the repository: meson refuses a student folder inside the source tree. One folder
# per checkout, kept between runs so that builds are incremental.
DEFAULT_WORK = Path(tempfile.gettempdir()) / f"gradlab-mutants-{hashlib.sha1(str(REPO).encode()).hexdigest()[:8]}"


class UsageError(Exception):
    """Bad arguments or a bad mutant file (exit 2)."""


class SetupError(Exception):
    """The reference does not build or does not pass (exit 3)."""


@dataclass
class Mutant:
    lab: str
    name: str
    description: str
    file: str
    region: str
    replace: list[tuple[str, str]]


@dataclass
class Item:
    name: str  # the rubric's gtest filter
    timeout_s: float


@dataclass
class Lab:
    number: str
    folder: str
    files: list[str]
    target: str
    items: list[Item]
    mutants: list[Mutant] = field(default_factory=list)


# ---------------------------------------------------------------------------------------
# Labs, rubrics and mutant files


def load_labs() -> dict[str, Lab]:
    labs: dict[str, Lab] = {}
    for line in MANIFEST.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        number, folder, path = line.split()
        if number not in labs:
            rubric = json.loads((REPO / "labs" / folder / "rubric.json").read_text())
            default = float(rubric.get("default_timeout_s", 60))
            items = [Item(i["name"], float(i.get("timeout_s", default)))
                     for i in rubric["items"] if not i.get("exclusive")]
            labs[number] = Lab(number, folder, [], rubric["test_target"], items)
        labs[number].files.append(path)
    for lab in labs.values():
        lab.mutants = load_mutants(lab)
    return labs


def load_mutants(lab: Lab) -> list[Mutant]:
    folder = MUTANTS / f"lab{lab.number}"
    mutants = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        try:
            spec = json.loads(path.read_text())
            mutant = Mutant(lab.number, path.stem, spec["description"], spec["file"], spec["region"],
                            [(r["old"], r["new"]) for r in spec["replace"]])
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise UsageError(f"{where}: not a mutant file ({error}); see tools/check_mutants.py")
        if mutant.file not in lab.files:
            raise UsageError(f"{where}: {mutant.file} is not a file of lab {lab.number} "
                             f"(labs/handouts.txt lists them)")
        mutants.append(mutant)
    return mutants


def region_span(lines: list[str], lab: str, what: str) -> tuple[int, int]:
    """Line indices of the BEGIN and END markers of the region `what` of `lab`."""
    begin_re = re.compile(rf"^\s*// LAB {lab} BEGIN: {re.escape(what)}\s*$")
    for begin, line in enumerate(lines):
        if begin_re.match(line):
            for end in range(begin + 1, len(lines)):
                if re.match(rf"^\s*// LAB {lab} END\s*$", lines[end]):
                    return begin, end
    raise UsageError(f"lab {lab}: no region '{what}'")


def apply_mutant(source: str, mutant: Mutant) -> str:
    """The reference file `source` with the mutant's replacements made inside its region."""
    lines = source.splitlines(keepends=True)
    begin, end = region_span(lines, mutant.lab, mutant.region)
    body = "".join(lines[begin + 1:end])
    for old, new in mutant.replace:
        count = body.count(old)
        if count != 1:
            raise UsageError(f"mutant lab{mutant.lab}/{mutant.name}: {old!r} occurs {count} times in "
                             f"region '{mutant.region}' of {mutant.file} (must be once)")
        body = body.replace(old, new)
    return "".join(lines[:begin + 1]) + body + "".join(lines[end:])


# ---------------------------------------------------------------------------------------
# Staging and building


def env() -> dict[str, str]:
    e = dict(os.environ)
    if CUDA_BIN.is_dir():
        e["PATH"] = f"{CUDA_BIN}{os.pathsep}{e.get('PATH', '')}"
    return e


def stage(lab: Lab, student_dir: Path, mutant: Mutant | None) -> None:
    """Writes the lab's files (the reference, one of them mutated) into student_dir; a file
    whose content is already right is left alone, so ninja recompiles only what changed."""
    for path in lab.files:
        text = (REPO / path).read_text()
        if mutant is not None and mutant.file == path:
            text = apply_mutant(text, mutant)
        target = student_dir / path
        if target.is_file() and target.read_text() == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def build(lab: Lab, build_dir: Path, student_dir: Path, jobs: int) -> tuple[bool, str]:
    if not (build_dir / "build.ninja").is_file():
        setup = ["meson", "setup", str(build_dir), str(REPO), f"-Dstudent={lab.number}",
                 f"-Dstudent_dir={student_dir}", "-Dbuildtype=release", "-Dwith_cuda=disabled"]
        result = subprocess.run(setup, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace")
        if result.returncode != 0:
            raise SetupError(f"lab {lab.number}: meson setup failed:\n{result.stdout[-3000:]}")
    result = subprocess.run(["ninja", "-C", str(build_dir), f"-j{jobs}", f"tests/{lab.target}"], env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                            timeout=BUILD_TIMEOUT_S)
    return result.returncode == 0, result.stdout[-3000:]


# ---------------------------------------------------------------------------------------
# Running the items


@dataclass
class ItemResult:
    item: str
    passed: bool
    why: str  # for a failure: the failed tests, "crashed", "timed out"


def run_item(binary: Path, item: Item, work: Path) -> ItemResult:
    report = work / "report.json"
    report.unlink(missing_ok=True)
    argv = [str(binary), f"--gtest_filter={item.name}", f"--gtest_output=json:{report}", "--gtest_color=no"]
    try:
        result = subprocess.run(argv, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                timeout=item.timeout_s * 2, env=env())
    except subprocess.TimeoutExpired:
        return ItemResult(item.name, False, "timed out")
    failed = []
    ran = 0
    if report.is_file():
        try:
            data = json.loads(report.read_text())
        except json.JSONDecodeError:
            data = {}
        for suite in data.get("testsuites", []):
            for test in suite.get("testsuite", []):
                ran += 1
                if test.get("failures"):
                    failed.append(f"{suite['name']}.{test['name']}")
    if result.returncode != 0 and not failed:
        return ItemResult(item.name, False, f"crashed (exit {result.returncode})")
    if failed:
        return ItemResult(item.name, False, "failed " + ", ".join(failed))
    if ran == 0:
        return ItemResult(item.name, False, "ran no test")
    return ItemResult(item.name, True, "")


def is_end_to_end(item: str) -> bool:
    return any(fnmatch.fnmatchcase(item, pattern) or item == pattern for pattern in END_TO_END)


@dataclass
class Verdict:
    mutant: Mutant
    caught_by: list[ItemResult]
    build_failed: bool = False

    @property
    def unit_catchers(self) -> list[str]:
        return [r.item for r in self.caught_by if not is_end_to_end(r.item)]


def check_lab(lab: Lab, work: Path, jobs: int, only: set[str], end_to_end: bool, log) -> list[Verdict]:
    lab_work = work / f"lab{lab.number}"
    build_dir, student_dir, run_dir = lab_work / "build", lab_work / "student", lab_work / "run"
    run_dir.mkdir(parents=True, exist_ok=True)
    binary = build_dir / "tests" / lab.target
    items = [i for i in lab.items if end_to_end or not is_end_to_end(i.name)]
    mutants = [m for m in lab.mutants if not only or m.name in only]

    stage(lab, student_dir, None)
    ok, output = build(lab, build_dir, student_dir, jobs)
    if not ok:
        raise SetupError(f"lab {lab.number}: the reference does not build:\n{output}")
    for item in items:
        result = run_item(binary, item, run_dir)
        if not result.passed:
            raise SetupError(f"lab {lab.number}: the reference fails {item.name}: {result.why}")
    log(f"lab {lab.number}: reference passes {len(items)} items; {len(mutants)} mutants")

    verdicts = []
    for mutant in mutants:
        start = time.monotonic()
        stage(lab, student_dir, mutant)
        ok, output = build(lab, build_dir, student_dir, jobs)
        if not ok:  # a mutant must compile: a compile error is a broken mutant file
            verdicts.append(Verdict(mutant, [], build_failed=True))
            log(f"  {mutant.name}: DOES NOT BUILD\n{output}")
            continue
        caught = [r for r in (run_item(binary, item, run_dir) for item in items) if not r.passed]
        verdict = Verdict(mutant, caught)
        verdicts.append(verdict)
        state = "caught" if verdict.unit_catchers else ("END-TO-END ONLY" if caught else "ESCAPED")
        log(f"  {mutant.name}: {state} by {', '.join(r.item for r in caught) or 'nothing'} "
            f"({time.monotonic() - start:.0f} s)")
    stage(lab, student_dir, None)
    return verdicts


# ---------------------------------------------------------------------------------------
# Command line


def check_specs(labs: dict[str, Lab]) -> int:
    """Applies every mutant to the reference in memory: each must change its region."""
    count = 0
    for lab in labs.values():
        for mutant in lab.mutants:
            source = (REPO / mutant.file).read_text()
            if apply_mutant(source, mutant) == source:
                raise UsageError(f"mutant lab{lab.number}/{mutant.name} changes nothing")
            count += 1
    print(f"{count} mutants apply to the reference")
    return 0


def report(verdicts: dict[str, list[Verdict]]) -> str:
    lines = ["lab  caught/total  (caught by a unit item)"]
    for number, vs in verdicts.items():
        caught = sum(1 for v in vs if v.unit_catchers)
        lines.append(f"{number}   {caught}/{len(vs)}")
        for v in vs:
            by = "does not build" if v.build_failed else (", ".join(r.item for r in v.caught_by) or "-")
            mark = "ok " if v.unit_catchers else "MISSED"
            lines.append(f"     {mark:6} {v.mutant.name}: {by}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab", action="append", default=[], help="lab number, e.g. 02 (repeatable)")
    parser.add_argument("--mutant", action="append", default=[], help="only this mutant (file stem)")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK,
                        help="folder (outside the repository) for the staged copies and the build "
                             f"folders, kept for incremental rebuilds (default {DEFAULT_WORK})")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--end-to-end", action="store_true", help="also run the training items")
    parser.add_argument("--json", type=Path, help="write the verdicts here")
    parser.add_argument("--check-specs", action="store_true",
                        help="only check that every mutant file applies to the reference")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        labs = load_labs()
        for number in args.lab:
            if number not in labs:
                raise UsageError(f"--lab {number}: no such lab; labs: {', '.join(labs)}")
        if args.check_specs:
            return check_specs(labs)
        if (args.work.resolve() / "x").is_relative_to(REPO):
            raise UsageError(f"--work {args.work}: must be outside the repository")
        chosen = [labs[n] for n in (args.lab or list(labs))]
        verdicts = {}
        for lab in chosen:
            verdicts[lab.number] = check_lab(lab, args.work.resolve(), args.jobs, set(args.mutant),
                                             args.end_to_end, lambda s: print(s, flush=True))
    except UsageError as error:
        print(f"check_mutants: {error}", file=sys.stderr)
        return 2
    except SetupError as error:
        print(f"check_mutants: setup error: {error}", file=sys.stderr)
        return 3
    print(report(verdicts))
    if args.json:
        args.json.write_text(json.dumps({n: [{"mutant": v.mutant.name, "description": v.mutant.description,
                                              "caught_by": [r.item for r in v.caught_by],
                                              "unit": bool(v.unit_catchers), "why": [r.why for r in v.caught_by]}
                                             for v in vs] for n, vs in verdicts.items()}, indent=1) + "\n")
    escaped = sum(1 for vs in verdicts.values() for v in vs if not v.unit_catchers)
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main())
