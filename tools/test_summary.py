#!/usr/bin/env python3
"""Summarise a `./gradlab test` run: count the test cases in the JUnit files Meson wrote
(one per build) and the verdicts of the other checks (checks.txt), and print the closing line
`tests: N passed, N failed, N skipped`. Exits 1 when anything failed or nothing ran."""
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def count_junit(path: Path):
    passed = failed = skipped = 0
    failures = []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return 0, 1, 0, [f"{path.name}: unreadable JUnit XML ({e}); see meson-logs/testlog.txt"]
    for suite in root.iter("testsuite"):
        for case in suite.findall("testcase"):
            # Meson adds one testcase per test executable on top of gtest's own cases;
            # keep only gtest's (they carry a classname of the form Suite or Suite/Param).
            if case.get("classname") is None:
                continue
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
                failures.append(f"{path.stem}: {case.get('classname')}.{case.get('name')}")
            elif case.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
    return passed, failed, skipped, failures


def main() -> int:
    logs = Path(sys.argv[1])
    passed = failed = skipped = 0
    failures = []
    for junit in sorted(logs.glob("*.junit.xml")):
        p, f, s, names = count_junit(junit)
        print(f"{junit.stem:>16}: {p} passed, {f} failed, {s} skipped")
        passed, failed, skipped = passed + p, failed + f, skipped + s
        failures += names
    # Checks that are not test executables: `NAME passed` or `NAME FAILED`, decided by
    # the check's exit code (see `check` in ./gradlab).
    checks = logs / "checks.txt"
    for line in checks.read_text().splitlines() if checks.exists() else []:
        name, _, verdict = line.rpartition(" ")
        print(f"{name:>16}: {verdict}")
        if verdict == "passed":
            passed += 1
        else:
            failed += 1
            failures.append(f"{name} (output in {logs / (name + '.log')})")
    for name in failures:
        print(f"FAILED: {name}")
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
