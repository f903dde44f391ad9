#!/usr/bin/env python3
"""Build a Gradescope autograder package for one lab.

    tools/gradescope.py --lab 01 OUT.zip        (or ./gradlab gradescope --lab 01 OUT.zip)

The zip holds what Gradescope expects at its top level, and this repository:

  setup.sh         run once when Gradescope builds the image (as root): installs the Debian
                   packages (./gradlab setup), then builds the trusted build of the pristine
                   repository and the base builds (grade.py --prepare), so that
                   grading a submission only compiles the student's files;
  run_autograder   run for each submission: grades /autograder/submission with
                   tools/grade.py, exactly as ./gradlab grade does, into
                   /autograder/results/results.json;
  gradlab/         the repository without solutions/, its history or build folders.

Both scripts take their folders from the environment, so that they can be tried outside
Gradescope: GRADLAB_AUTOGRADER_ROOT (default /autograder; the zip is unpacked in
ROOT/source, the submission is ROOT/submission, results go to ROOT/results, the builds to
ROOT/cache) and GRADLAB_TRUSTED_BUILD (an existing build of the same repository to use
as the trusted build instead of building one).

A setup problem (no sandbox in the image, a full disk) makes run_autograder exit with
status 3 without a results.json: Gradescope then reports that the autograder failed,
which the course staff sees, instead of giving the student a 0.
"""

from __future__ import annotations

import argparse
import stat
import sys
import zipfile
from pathlib import Path

sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade  # noqa: E402
import grade_build  # noqa: E402

SETUP = """\
#!/usr/bin/env bash
# Gradescope image setup for lab {lab}: Debian packages, then the trusted build and the
# base builds (made once here, reused for every submission).
set -euo pipefail
ROOT="${{GRADLAB_AUTOGRADER_ROOT:-/autograder}}"
"$ROOT/source/gradlab/gradlab" setup
python3 "$ROOT/source/gradlab/tools/grade.py" --lab {lab} --prepare --cache "$ROOT/cache" \\
  ${{GRADLAB_TRUSTED_BUILD:+--trusted-build "$GRADLAB_TRUSTED_BUILD"}}
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Grades one Gradescope submission of lab {lab} into results/results.json (see
# tools/gradescope.py). Exit status 3: the grading setup failed, no results written.
set -uo pipefail
ROOT="${{GRADLAB_AUTOGRADER_ROOT:-/autograder}}"
mkdir -p "$ROOT/results"
exec python3 "$ROOT/source/gradlab/tools/grade.py" --lab {lab} "$ROOT/submission" \\
  --out "$ROOT/results/results.json" --cache "$ROOT/cache" \\
  ${{GRADLAB_TRUSTED_BUILD:+--trusted-build "$GRADLAB_TRUSTED_BUILD"}}
"""


def add_script(archive: zipfile.ZipFile, name: str, text: str) -> None:
    info = zipfile.ZipInfo(name)
    info.external_attr = (stat.S_IFREG | 0o755) << 16  # executable once unpacked
    archive.writestr(info, text)


def build_zip(lab: grade.Lab, out: Path) -> int:
    files = grade_build.staged_files({})  # the repository without solutions/, .git, builds
    partial = out.with_name(out.name + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
        add_script(archive, "setup.sh", SETUP.format(lab=lab.number))
        add_script(archive, "run_autograder", RUN_AUTOGRADER.format(lab=lab.number))
        for rel, source in sorted(files.items()):
            info = zipfile.ZipInfo.from_file(source, f"gradlab/{rel}")
            archive.writestr(info, source.read_bytes(), zipfile.ZIP_DEFLATED)
    partial.replace(out)
    return len(files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Gradescope autograder zip of one lab.")
    parser.add_argument("--lab", required=True, help="lab number, e.g. 01")
    parser.add_argument("out", type=Path, metavar="OUT.zip")
    args = parser.parse_args(argv)
    try:
        lab = grade.find_lab(args.lab)
        grade.load_rubric(lab)
    except grade.UsageError as e:
        print(f"gradescope.py: error: {e}", file=sys.stderr)
        return 2
    out = args.out.expanduser().resolve()
    if out.suffix != ".zip" or not out.parent.is_dir():
        print(f"gradescope.py: error: {args.out}: give a .zip path in an existing folder",
              file=sys.stderr)
        return 2
    count = build_zip(lab, out)
    print(f"{out}: Gradescope autograder for lab {lab.number} ({count} repository files); "
          f"upload it as the assignment's autograder")
    return 0


if __name__ == "__main__":
    sys.exit(main())
