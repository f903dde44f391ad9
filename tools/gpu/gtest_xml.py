#!/usr/bin/env python3
"""Counts what GoogleTest XML reports say ran: the GPU check's verdict on a test step.

    tools/gpu/gtest_xml.py REPORT.xml...

Prints one line, `ran=N passed=N failed=N skipped=N`, then one line per test that failed
or was skipped (with the skip's message). A report that is missing or cannot be parsed
(the test process crashed before writing it) counts as one failed test named after the
file. The counts come from the <testcase> elements themselves, not from the summary
attributes, so a skipped test is never counted as a pass.
"""
import sys
import xml.etree.ElementTree as ET


def cases(path):
    """(name, outcome, message) for each test case in one report."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as e:
        yield path, "failed", f"no readable report ({e.__class__.__name__}): the process died before writing it"
        return
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        failure = case.find("failure")
        skipped = case.find("skipped")
        if case.get("status") == "notrun":
            continue  # DISABLED_ tests
        if failure is not None or case.find("error") is not None:
            msg = (failure.get("message") if failure is not None else "error") or ""
            yield name, "failed", msg.splitlines()[0] if msg else ""
        elif skipped is not None or case.get("result") == "skipped":
            yield name, "skipped", (skipped.get("message") if skipped is not None else "") or ""
        else:
            yield name, "passed", ""


def main(paths):
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    notes = []
    for path in paths:
        for name, outcome, msg in cases(path):
            counts[outcome] += 1
            if outcome != "passed":
                notes.append(f"{outcome}: {name}: {msg.strip()[:200]}")
    ran = counts["passed"] + counts["failed"]
    print(f"ran={ran} passed={counts['passed']} failed={counts['failed']} skipped={counts['skipped']}")
    for line in notes:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
