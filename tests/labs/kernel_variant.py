#!/usr/bin/env python3
"""Write a renamed (and optionally broken) copy of a CUDA kernel header from core/, at build time.

    kernel_variant.py IN OUT --namespace NAME [--include-prefix P] [--replace N OLD NEW]
                      [--allow-missing]

The lab 03 tests need the reference kernels while the student's handout files stand in
for the core ones, and they need the reference tiled kernel with one __syncthreads
removed, to show that the graded check catches it. Both are made from the core files
themselves, never copied by hand:

  --namespace NAME      `namespace gl::kernels::cuda {` becomes
                        `namespace gl::kernels::cuda::NAME {`, so the copy's templates are
                        other symbols than the core's (no clash in one program);
  --include-prefix P    `#include "kernels/cuda/F"` becomes `#include "PF"`: a copy of
                        sgemm.cuh includes the copies of the kernels (written next to it);
  --replace N OLD NEW   the N-th occurrence (from 1) of the text OLD becomes NEW;
  --allow-missing       a --replace that finds too few occurrences leaves the text as it
                        is (said in the output's first line) instead of failing: for a
                        staged submission (meson option submission_tree), whose kernel is
                        the student's and whose variants are never what the grader runs.

Otherwise every rewrite must apply (exit status 1 and a message otherwise), so a change in
the core file cannot silently turn a broken variant into a working one.
"""

import argparse
import re
import sys
from pathlib import Path

NAMESPACE = "namespace gl::kernels::cuda {"


def nth_replace(text: str, n: int, old: str, new: str) -> str:
    at = -1
    for _ in range(n):
        at = text.find(old, at + 1)
        if at < 0:
            raise ValueError(f"fewer than {n} occurrences of {old!r}")
    return text[:at] + new + text[at + len(old):]


def variant(text: str, namespace: str, include_prefix: str | None,
            replacements: list[tuple[int, str, str]], allow_missing: bool = False) -> tuple[str, list[str]]:
    """The rewritten text, and the replacements skipped (only with allow_missing)."""
    if text.count(NAMESPACE) != 1:
        raise ValueError(f"expected exactly one {NAMESPACE!r}")
    text = text.replace(NAMESPACE, f"namespace gl::kernels::cuda::{namespace} {{")
    if include_prefix is not None:
        text, count = re.subn(r'#include "kernels/cuda/([^"/]+)"', rf'#include "{include_prefix}\1"', text)
        if count == 0:
            raise ValueError('no #include "kernels/cuda/..." to redirect')
    skipped: list[str] = []
    for n, old, new in replacements:
        try:
            text = nth_replace(text, n, old, new)
        except ValueError as e:
            if not allow_missing:
                raise
            skipped.append(str(e))
    return text, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("input", type=Path)
    parser.add_argument("output", type=Path)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--include-prefix")
    parser.add_argument("--replace", nargs=3, action="append", default=[], metavar=("N", "OLD", "NEW"))
    parser.add_argument("--allow-missing", action="store_true")
    args = parser.parse_args()
    try:
        replacements = [(int(n), old, new) for n, old, new in args.replace]
        text, skipped = variant(args.input.read_text(encoding="utf-8"), args.namespace,
                                args.include_prefix, replacements, args.allow_missing)
    except ValueError as e:
        print(f"kernel_variant.py: {args.input}: {e}", file=sys.stderr)
        return 1
    header = (f"// Generated at build time by tests/labs/kernel_variant.py from {args.input.name} "
              f"(namespace {args.namespace}); do not edit.\n")
    if skipped:
        header += f"// Not a broken variant: {'; '.join(skipped)} (a staged submission).\n"
    args.output.write_text(header + text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
