#!/usr/bin/env python3
"""Holds the includes of core/ to the table of layers in core/LAYERS.md.

Each folder of core/ may include its own headers and those of the folders its row of the
table lists. This reads the table, checks that it is a strict order (every folder a row
may include comes in an earlier row, every folder of core/ has a row), then reads every
#include of every source file in core/ and reports each one that breaks the table as
"file:line: ...", with the rule. Exit status 1 when anything is reported.

Run: python3 tools/check_layers.py [--root REPO]
"""

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCE_SUFFIXES = {".hpp", ".h", ".cpp", ".cc", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


@dataclass
class Layer:
    folder: str
    allowed: list  # folders this one may include, besides itself
    line: int      # the table row's line in LAYERS.md


def read_table(layers_md: Path) -> list:
    """The rows of the first table in @p layers_md whose header starts with "folder"."""
    rows, in_table = [], False
    for number, text in enumerate(layers_md.read_text().splitlines(), start=1):
        cells = [c.strip() for c in text.strip().strip("|").split("|")] if text.lstrip().startswith("|") else None
        if cells is None:
            if in_table:
                break
            continue
        if not in_table:
            in_table = cells[0] == "folder"
            continue
        if set(cells[0]) <= set("-: "):
            continue  # the |---|---| line
        allowed = [f.strip() for f in cells[1].split(",") if f.strip()] if len(cells) > 1 else []
        rows.append(Layer(cells[0], allowed, number))
    return rows


def check_table(rows: list, core: Path, layers_md: Path) -> list:
    """Problems with the table itself: unknown folders, rules that point up, folders without a row."""
    problems, seen = [], set()
    for row in rows:
        where = f"{layers_md}:{row.line}"
        if row.folder in seen:
            problems.append(f"{where}: '{row.folder}' has two rows; give each folder one")
        if not (core / row.folder).is_dir():
            problems.append(f"{where}: '{row.folder}' is not a folder of {core}")
        for dep in row.allowed:
            if dep not in seen:
                problems.append(f"{where}: '{row.folder}' may include '{dep}', which is not in an earlier row; "
                                "the table must list every folder below the folders that include it")
        seen.add(row.folder)
    for folder in sorted(p.name for p in core.iterdir() if p.is_dir()):
        if folder not in seen:
            problems.append(f"{layers_md}: the folder core/{folder} has no row; add one saying what it may include")
    return problems


def included_folder(source: Path, bracket: str, name: str, core: Path):
    """The core folder the included header lives in, None for a header outside core/, or
    "" for a quoted include that names no header of core/."""
    candidates = [core / name] if bracket == "<" else [source.parent / name, core / name]
    for candidate in candidates:
        if candidate.is_file():
            resolved = candidate.resolve()
            if core.resolve() in resolved.parents:
                return resolved.relative_to(core.resolve()).parts[0]
    return None if bracket == "<" else ""


def check_includes(rows: list, core: Path, root: Path) -> list:
    """One "file:line: ..." line per include that breaks the table."""
    allowed = {row.folder: set(row.allowed) for row in rows}
    problems = []
    for source in sorted(core.rglob("*")):
        if source.suffix not in SOURCE_SUFFIXES or not source.is_file():
            continue
        folder = source.relative_to(core).parts[0]
        if folder not in allowed:
            continue  # reported by check_table
        shown = source.relative_to(root)
        for number, text in enumerate(source.read_text(errors="replace").splitlines(), start=1):
            match = INCLUDE.match(text)
            if not match:
                continue
            bracket, name = match.groups()
            target = included_folder(source, bracket, name, core)
            if target is None or target == folder or target in allowed[folder]:
                continue
            include = f'#include {bracket}{name}{">" if bracket == "<" else chr(34)}'
            if target == "":
                problems.append(f"{shown}:{number}: {include} names no header of core/; core includes only "
                                "itself and installed libraries (with <...>)")
            else:
                may = ", ".join(sorted(allowed[folder])) or "nothing outside itself"
                problems.append(f"{shown}:{number}: {include}: {folder} may not include {target} "
                                f"(core/LAYERS.md: {folder} may include {may})")
    return problems


def check(root: Path) -> list:
    """Every problem found under @p root (a repository with core/ and core/LAYERS.md)."""
    core, layers_md = root / "core", root / "core" / "LAYERS.md"
    if not layers_md.is_file():
        return [f"{layers_md}: missing; it holds the table of allowed includes"]
    rows = read_table(layers_md)
    if not rows:
        return [f"{layers_md}: no table with a 'folder' column found"]
    return check_table(rows, core, layers_md) + check_includes(rows, core, root)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1],
                        help="the repository (default: the one this script is in)")
    args = parser.parse_args()
    problems = check(args.root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} include(s) or rule(s) break the layers of core/ (core/LAYERS.md)", file=sys.stderr)
        return 1
    print("core/: every include keeps to core/LAYERS.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
