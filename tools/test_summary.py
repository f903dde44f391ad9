#!/usr/bin/env python3
"""Summarise a `./gradlab test` run: count the test cases in the JUnit files Meson wrote
(one per build) and the pass/fail lines of the other checks, and print the closing line
`tests: N passed, N failed, N skipped`. Exits 1 when anything failed or nothing ran."""
import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def count_junit(path: Path):
    passed = failed = skipped = 0
    failures = []
    root = ET.parse(path).getroot()
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
    # Checks that are not test executables: one line each, judged by their last line.
    for check in sorted(logs.glob("*.txt")):
        text = check.read_text().strip().splitlines()
        last = text[-1] if text else ""
        ok = bool(last) and not any(w in last for w in ("FAIL", "OUT OF DATE", "Error"))
        print(f"{check.stem:>16}: {'passed' if ok else 'FAILED'} ({last})")
        if ok:
            passed += 1
        else:
            failed += 1
            failures.append(check.stem)
    for name in failures:
        print(f"FAILED: {name}")
    print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
